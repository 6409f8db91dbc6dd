// RUN: hisa-opt %s -split-input-file --tile-assign-layouts --tile-plan-shared-memory -verify-diagnostics | FileCheck %s
// RUN: hisa-opt %s -split-input-file --tile-assign-layouts="chip=sm_89" --tile-plan-shared-memory -verify-diagnostics | FileCheck %s --check-prefix=MMA

// %a is dead once %b is written, so %c reuses its bytes; %b stays live.
// Reductions get scratch after the tiles: 64 outputs x 4 warps x 4 bytes.
// CHECK-LABEL: tile.kernel @reuse
// CHECK: tile.launch {{.*}} attributes {tile.scratch_offset = 8192 : i64, tile.shared_bytes = 9216 : i64}
// CHECK: %[[A:.*]] = tile.alloc {tile.offset = 0 : i64} : !tile.shared<[64, 64], f8E4M3FN>
// CHECK: %[[B:.*]] = tile.alloc {tile.offset = 4096 : i64} : !tile.shared<[64, 64], f8E4M3FN>
// CHECK: %[[C:.*]] = tile.alloc {tile.offset = 0 : i64} : !tile.shared<[64, 64], f8E4M3FN>
tile.kernel @reuse(%g: !tile.global<[?, 64], f8E4M3FN>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 64], f8E4M3FN>
    %b = tile.alloc : !tile.shared<[64, 64], f8E4M3FN>
    %c = tile.alloc : !tile.shared<[64, 64], f8E4M3FN>
    %f = tile.alloc : !tile.frag<[64, 64], f32>
    %r = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    tile.copy %g[%c0, %c0] to %a : !tile.global<[?, 64], f8E4M3FN> to !tile.shared<[64, 64], f8E4M3FN>
    tile.copy %a to %b : !tile.shared<[64, 64], f8E4M3FN> to !tile.shared<[64, 64], f8E4M3FN>
    tile.copy %g[%c0, %c0] to %c : !tile.global<[?, 64], f8E4M3FN> to !tile.shared<[64, 64], f8E4M3FN>
    tile.copy %b to %g[%c0, %c0] : !tile.shared<[64, 64], f8E4M3FN> to !tile.global<[?, 64], f8E4M3FN>
    tile.copy %c to %g[%c0, %c0] : !tile.shared<[64, 64], f8E4M3FN> to !tile.global<[?, 64], f8E4M3FN>
    tile.reduce sum %f to %r dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
  }
}

// -----

// Each tile fits, both together (live at once) do not.
tile.kernel @too_large() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[128, 256], f32>
    // expected-error @+1 {{'tile.alloc' op needs shared memory up to byte 262144 (131072 bytes at offset 131072); a block may use at most 232448}}
    %b = tile.alloc : !tile.shared<[128, 256], f32>
    %zero = arith.constant 0.0 : f32
    tile.fill %a, %zero : !tile.shared<[128, 256], f32>, f32
    tile.fill %b, %zero : !tile.shared<[128, 256], f32>, f32
    tile.copy %a to %b : !tile.shared<[128, 256], f32> to !tile.shared<[128, 256], f32>
  }
}

// -----

// Tiles fit, the reduction scratch after them does not.
tile.kernel @too_large_with_scratch() {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'tile.launch' op needs 233472 bytes of shared memory (229376 for tiles and mbarriers, 4096 for reductions); a block may use at most 232448}}
  tile.launch (%bx) in (%c1) threads 1024 {
    %a = tile.alloc : !tile.shared<[229376], i8>
    %f = tile.alloc : !tile.frag<[32, 32], f32>
    %r = tile.alloc : !tile.frag<[32], f32>
    %zero = arith.constant 0 : i8
    tile.fill %a, %zero : !tile.shared<[229376], i8>, i8
    tile.reduce sum %f to %r dim = 1 : !tile.frag<[32, 32], f32> to !tile.frag<[32], f32>
  }
}

// -----

// A loop with TMA copies gets two 8-byte mbarriers per stage ("full" and
// "empty") after its tiles (2 stages x 8 KiB), a loop without none.
// CHECK-LABEL: tile.kernel @mbarriers
// CHECK: tile.launch {{.*}}tile.shared_bytes = 16416 : i64
// CHECK: tile.pipelined {{.*}} num_stages = 2 attributes {tile.mbarrier_offset = 16384 : i64}
// CHECK: tile.pipelined {{.*}} num_stages = 2 {
tile.kernel @mbarriers(%g: !tile.global<[?, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %s = tile.alloc : !tile.shared<[32, 64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 {
      tile.copy %g[%t, %c0] to %s {tile.tma} : !tile.global<[?, 64], f32> to !tile.shared<[32, 64], f32>
    }
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 {
      tile.copy %g[%t, %c0] to %s : !tile.global<[?, 64], f32> to !tile.shared<[32, 64], f32>
    }
  }
}

// -----

// The stages of a warp_specialized loop are live from the launch's start
// (its producer may fill them during the consumers' prologue): %scratch,
// dead before the loop, does not reuse their bytes as it would before a
// plain pipelined loop (@stages_after_prologue_plain).
// CHECK-LABEL: tile.kernel @stages_after_prologue_ws
// CHECK: tile.alloc {tile.offset = 0 : i64, tile.stage_bytes = 8192 : i64, tile.stages = 2 : i64} : !tile.shared<[64, 64], bf16>
// CHECK: tile.alloc {tile.offset = 16384 : i64} : !tile.shared<[64], f32>
// CHECK-LABEL: tile.kernel @stages_after_prologue_plain
// CHECK: tile.alloc {tile.offset = 0 : i64, tile.stage_bytes = 8192 : i64, tile.stages = 2 : i64} : !tile.shared<[64, 64], bf16>
// CHECK: tile.alloc {tile.offset = 0 : i64} : !tile.shared<[64], f32>
tile.kernel @stages_after_prologue_ws(%g: !tile.global<[?, 64], bf16>, %out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %scratch = tile.alloc : !tile.shared<[64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    tile.fill %scratch, %zero : !tile.shared<[64], f32>, f32
    tile.copy %scratch to %out[%c0] : !tile.shared<[64], f32> to !tile.global<[64], f32>
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 warp_specialized {
      %first = arith.muli %t, %c64 : index
      tile.copy %g[%first, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    }
  }
}
tile.kernel @stages_after_prologue_plain(%g: !tile.global<[?, 64], bf16>, %out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %scratch = tile.alloc : !tile.shared<[64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    tile.fill %scratch, %zero : !tile.shared<[64], f32>, f32
    tile.copy %scratch to %out[%c0] : !tile.shared<[64], f32> to !tile.global<[64], f32>
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 {
      %first = arith.muli %t, %c64 : index
      tile.copy %g[%first, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    }
  }
}

// -----

// A row statistic of a wgmma accumulator combines within warps (each row's
// columns are in one quad of lanes) and stays in the reduced layout: no
// scratch. Along dim 0 the rows' warps combine through scratch: 64 outputs
// x 4 warps x 4 bytes after the two 8 KiB operands.
// CHECK-LABEL: tile.kernel @row_statistic_needs_no_scratch
// CHECK: tile.launch {{.*}} attributes {tile.scratch_offset = 16384 : i64, tile.shared_bytes = 16384 : i64}
// CHECK-LABEL: tile.kernel @column_statistic_needs_scratch
// CHECK: tile.launch {{.*}} attributes {tile.scratch_offset = 16384 : i64, tile.shared_bytes = 17408 : i64}
tile.kernel @row_statistic_needs_no_scratch(%g: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 64], bf16>
    %b = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %r = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    tile.copy %g[%c0, %c0] to %a : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %g[%c0, %c0] to %b : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.gemm %a, %b, %acc transpose_b clear_accum
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.reduce max %acc to %r dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
  }
}
tile.kernel @column_statistic_needs_scratch(%g: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 64], bf16>
    %b = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %r = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    tile.copy %g[%c0, %c0] to %a : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %g[%c0, %c0] to %b : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.gemm %a, %b, %acc transpose_b clear_accum
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.reduce max %acc to %r dim = 0 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
  }
}

// -----

// mma.sync (sm_89) accumulators: with the warps along M (full_row) a row's
// columns stay in one warp, no scratch; with the warps along N (full_col)
// a row's maximum combines four warps' partial maxima: scratch.
// MMA-LABEL: tile.kernel @mma_rows_in_one_warp
// MMA: tile.launch {{.*}} attributes {tile.scratch_offset = 16384 : i64, tile.shared_bytes = 16384 : i64}
// MMA-LABEL: tile.kernel @mma_rows_across_warps
// MMA: tile.launch {{.*}} attributes {tile.scratch_offset = 16384 : i64, tile.shared_bytes = 17408 : i64}
tile.kernel @mma_rows_in_one_warp(%g: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 64], bf16>
    %b = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %r = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    tile.copy %g[%c0, %c0] to %a : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %g[%c0, %c0] to %b : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.gemm %a, %b, %acc transpose_b clear_accum policy(full_row)
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.reduce max %acc to %r dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
  }
}
tile.kernel @mma_rows_across_warps(%g: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 64], bf16>
    %b = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %r = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    tile.copy %g[%c0, %c0] to %a : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %g[%c0, %c0] to %b : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.gemm %a, %b, %acc transpose_b clear_accum policy(full_col)
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.reduce max %acc to %r dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
  }
}
