// RUN: hisa-opt %s -split-input-file --tile-assign-layouts --tile-use-tma=report -verify-diagnostics | FileCheck %s
// RUN: hisa-opt %s --tile-assign-layouts --tile-use-tma="chip=sm_80" | FileCheck %s --check-prefix=SM80
// RUN: hisa-opt %s --tile-assign-layouts --tile-use-tma="enable=false" | FileCheck %s --check-prefix=OFF
// RUN: hisa-opt %s --tile-assign-layouts --tile-use-tma="chip=sm_80 report" 2>&1 >/dev/null | FileCheck %s --check-prefix=SM80-REMARK

// SM80-NOT: tile.tma
// OFF-NOT: tile.tma
// SM80-REMARK: stays on cp.async: target sm_80 has no TMA

// Staged boxes of kernel arguments go through TMA: a swizzled gemm operand
// (one 128-byte atom per row), a plain 2-D tile and a 1-D tile. Unstaged
// copies (num_stages = 1, or outside the loop) are left alone, and so are
// staged copies TMA cannot express, with a remark that says why.
// CHECK-LABEL: tile.kernel @staged
// CHECK: tile.copy %{{.*}} to %{{.*}} : !tile.global<[?, 128], f8E4M3FN> to !tile.shared<[64, 128], f8E4M3FN>
// CHECK: tile.pipelined
// CHECK: tile.copy {{.*}} {tile.tma} : !tile.global<[?, 128], f8E4M3FN> to !tile.shared<[64, 128], f8E4M3FN>
// CHECK: tile.copy {{.*}} {tile.tma} : !tile.global<[?], f32> to !tile.shared<[64], f32>
// CHECK: tile.copy {{.*}} {tile.tma} : !tile.global<[?, 32], f32> to !tile.shared<[16, 32], f32>
// CHECK: tile.copy
// CHECK-NOT: tile.tma
// CHECK-SAME: !tile.global<[?, ?], f32> to !tile.shared<[16, 32], f32>
// CHECK: tile.copy
// CHECK-NOT: tile.tma
// CHECK-SAME: !tile.global<[?, 4], f32> to !tile.shared<[16, 2], f32>
// CHECK: tile.pipelined
// CHECK-NOT: tile.tma
// CHECK: tile.copy %{{.*}} to %{{.*}} : !tile.frag
tile.kernel @staged(%q: !tile.global<[?, 128], f8E4M3FN>,
                    %k: !tile.global<[?, 128], f8E4M3FN>,
                    %scale: !tile.global<[?], f32>,
                    %rows: !tile.global<[?, 32], f32>,
                    %ragged: !tile.global<[?, ?], f32>,
                    %narrow: !tile.global<[?, 4], f32>,
                    %out: !tile.global<[?, ?], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q_s = tile.alloc : !tile.shared<[64, 128], f8E4M3FN>
    %k_s = tile.alloc : !tile.shared<[64, 128], f8E4M3FN>
    %scale_s = tile.alloc : !tile.shared<[64], f32>
    %rows_s = tile.alloc : !tile.shared<[16, 32], f32>
    %ragged_s = tile.alloc : !tile.shared<[16, 32], f32>
    %narrow_s = tile.alloc : !tile.shared<[16, 2], f32>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    tile.copy %q[%c0, %c0] to %q_s
        : !tile.global<[?, 128], f8E4M3FN> to !tile.shared<[64, 128], f8E4M3FN>
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 {
      tile.copy %k[%t, %c0] to %k_s
          : !tile.global<[?, 128], f8E4M3FN> to !tile.shared<[64, 128], f8E4M3FN>
      tile.copy %scale[%t] to %scale_s : !tile.global<[?], f32> to !tile.shared<[64], f32>
      tile.copy %rows[%t, %c0] to %rows_s
          : !tile.global<[?, 32], f32> to !tile.shared<[16, 32], f32>
      // expected-remark @+1 {{stays on cp.async: its rows are not of a static size that is a multiple of 16 bytes}}
      tile.copy %ragged[%t, %c0] to %ragged_s
          : !tile.global<[?, ?], f32> to !tile.shared<[16, 32], f32>
      // expected-remark @+1 {{stays on cp.async: the innermost box is not a multiple of 16 bytes}}
      tile.copy %narrow[%t, %c0] to %narrow_s
          : !tile.global<[?, 4], f32> to !tile.shared<[16, 2], f32>
      tile.gemm %k_s, %q_s, %acc transpose_b clear_accum
          : !tile.shared<[64, 128], f8E4M3FN>, !tile.shared<[64, 128], f8E4M3FN>
            -> !tile.frag<[64, 64], f32>
    }
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 1 {
      tile.copy %rows[%t, %c0] to %rows_s
          : !tile.global<[?, 32], f32> to !tile.shared<[16, 32], f32>
    }
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[?, ?], f32>
  }
}

// -----

// Marks from the input are decided again (a copy that is not staged loses
// its mark), and a source the kernel also writes stays on cp.async.
// CHECK-LABEL: tile.kernel @remarked
// CHECK-NOT: tile.tma
tile.kernel @remarked(%x: !tile.global<[?, 32], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %s = tile.alloc : !tile.shared<[16, 32], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    tile.copy %x[%c0, %c0] to %s {tile.tma} : !tile.global<[?, 32], f32> to !tile.shared<[16, 32], f32>
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 {
      // expected-remark @+1 {{stays on cp.async: the kernel also writes its source (TMA reads through the async proxy)}}
      tile.copy %x[%t, %c0] to %s : !tile.global<[?, 32], f32> to !tile.shared<[16, 32], f32>
      tile.copy %s to %x[%t, %c0] : !tile.shared<[16, 32], f32> to !tile.global<[?, 32], f32>
    }
  }
}
