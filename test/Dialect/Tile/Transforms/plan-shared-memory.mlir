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

// -----

// A warp-specialized loop's producer reads the trip count from
// %trip_tile again after the roles' rendezvous: the tile stays live to the
// launch's end, so %u (written by the consumers after their own read) gets
// other bytes (it was planned over %trip_tile: the producer read 1000000).
// CHECK-LABEL: tile.kernel @producer_rereads_a_tile
// CHECK: tile.alloc {tile.offset = 0 : i64} : !tile.shared<[1], i32>
// CHECK-NOT: tile.offset = 0 :
// CHECK: tile.alloc {tile.offset = 128 : i64} : !tile.shared<[32], i32>
tile.kernel @producer_rereads_a_tile(%count: !tile.global<[1], i32>,
                                     %a: !tile.global<[64, 64], bf16>,
                                     %k: !tile.global<[?, 64], bf16>,
                                     %out: !tile.global<[64, 64], f32>,
                                     %uo: !tile.global<[32], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %trip_tile = tile.alloc : !tile.shared<[1], i32>
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %u = tile.alloc : !tile.shared<[32], i32>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %big = arith.constant 1000000 : i32
    tile.parallel (%i) in [1] {
      %n = tile.load %count[%i] : !tile.global<[1], i32>
      tile.store %n, %trip_tile[%i] : !tile.shared<[1], i32>
    }
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.fill %acc, %zero : !tile.frag<[64, 64], f32>, f32
    %trips_i32 = tile.load %trip_tile[%c0] : !tile.shared<[1], i32>
    %trips = arith.index_cast %trips_i32 : i32 to index
    tile.fill %u, %big : !tile.shared<[32], i32>, i32
    tile.pipelined %t = %c0 to %trips step %c1 num_stages = 2 warp_specialized {
      %first = arith.muli %t, %c64 : index
      tile.copy %k[%first, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %a_s, %k_s, %acc transpose_b
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    }
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
    tile.copy %u to %uo[%c0] : !tile.shared<[32], i32> to !tile.global<[32], i32>
  }
}

// -----

// An async gemm's tensor cores read %a and %b until tile.wait_gemms: %x,
// written in between, gets other bytes (it was planned over %a).
// CHECK-LABEL: tile.kernel @async_gemm_operands_live_to_the_wait
// CHECK: tile.offset = 0 : i64
// CHECK: tile.offset = 8192 : i64
// CHECK: tile.offset = 16384 : i64
tile.kernel @async_gemm_operands_live_to_the_wait(%g: !tile.global<[?, 64], bf16>,
                                                  %o: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %c0 = arith.constant 0 : index
    %a = tile.alloc : !tile.shared<[64, 64], bf16>
    %b = tile.alloc : !tile.shared<[64, 64], bf16>
    %x = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    tile.copy %g[%c0, %c0] to %a : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %g[%c0, %c0] to %b : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.gemm %a, %b, %acc transpose_b clear_accum async
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.copy %g[%c1, %c0] to %x : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %x to %g[%c0, %c0] : !tile.shared<[64, 64], bf16> to !tile.global<[?, 64], bf16>
    tile.wait_gemms
    tile.copy %acc to %o[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}

// -----

// Consecutive unsynchronized per_warpgroup bodies run out of step between
// the warpgroups: one may still read %s in the first while the other fills
// %x0 in the second, so they share no bytes (%x0 was planned over %s).
// CHECK-LABEL: tile.kernel @unsynchronized_bodies_are_one_position
// CHECK: tile.offset = 0 : i64
// CHECK: tile.offset = 16384 : i64
// CHECK: tile.offset = 32768 : i64
tile.kernel @unsynchronized_bodies_are_one_position(%g: !tile.global<[?, 64], f32>,
                                                    %o: !tile.global<[2, 64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %c0 = arith.constant 0 : index
    %s = tile.alloc : !tile.shared<[64, 64], f32>
    %x0 = tile.alloc : !tile.shared<[64, 64], f32>
    %x1 = tile.alloc : !tile.shared<[64, 64], f32>
    tile.copy %g[%c0, %c0] to %s : !tile.global<[?, 64], f32> to !tile.shared<[64, 64], f32>
    tile.per_warpgroup (%wg) unsynchronized {
      tile.copy %s to %o[%wg, %c0, %c0] : !tile.shared<[64, 64], f32> to !tile.global<[2, 64, 64], f32>
    }
    tile.per_warpgroup (%wg) unsynchronized {
      %mine = tile.pick %wg [%x0, %x1] : !tile.shared<[64, 64], f32>
      tile.copy %g[%wg, %c0] to %mine : !tile.global<[?, 64], f32> to !tile.shared<[64, 64], f32>
      tile.copy %mine to %o[%wg, %c0, %c0] : !tile.shared<[64, 64], f32> to !tile.global<[2, 64, 64], f32>
    }
  }
}

// -----

// The same with the second body's tiles allocated between the bodies:
// allocations run no code and do not end the run.
// CHECK-LABEL: tile.kernel @allocations_between_unsynchronized_bodies
// CHECK: tile.offset = 0 : i64
// CHECK: tile.offset = 16384 : i64
// CHECK: tile.offset = 32768 : i64
tile.kernel @allocations_between_unsynchronized_bodies(%g: !tile.global<[?, 64], f32>,
                                                       %o: !tile.global<[2, 64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %c0 = arith.constant 0 : index
    %s = tile.alloc : !tile.shared<[64, 64], f32>
    tile.copy %g[%c0, %c0] to %s : !tile.global<[?, 64], f32> to !tile.shared<[64, 64], f32>
    tile.per_warpgroup (%wg) unsynchronized {
      tile.copy %s to %o[%wg, %c0, %c0] : !tile.shared<[64, 64], f32> to !tile.global<[2, 64, 64], f32>
    }
    %x0 = tile.alloc : !tile.shared<[64, 64], f32>
    %x1 = tile.alloc : !tile.shared<[64, 64], f32>
    tile.per_warpgroup (%wg) unsynchronized {
      %mine = tile.pick %wg [%x0, %x1] : !tile.shared<[64, 64], f32>
      tile.copy %g[%wg, %c0] to %mine : !tile.global<[?, 64], f32> to !tile.shared<[64, 64], f32>
      tile.copy %mine to %o[%wg, %c0, %c0] : !tile.shared<[64, 64], f32> to !tile.global<[2, 64, 64], f32>
    }
  }
}
