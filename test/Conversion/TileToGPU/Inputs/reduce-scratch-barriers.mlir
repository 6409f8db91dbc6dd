// The reduction scratch's write-after-read barrier (ReduceOp.cpp): a
// cross-warpgroup reduction (policy full_col) first in the kernel needs
// none; one alone in a loop keeps it (its own previous iteration read the
// scratch last); one followed in its loop by a copy into shared memory
// (which ends with a barrier) needs none; one in a branch inside a loop
// keeps it.
tile.kernel @first_reduce(%a: !tile.global<[64, 64], bf16>, %b: !tile.global<[64, 64], bf16>,
                  %out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %b_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %m_s = tile.alloc : !tile.shared<[64], f32>
    %scores = tile.alloc : !tile.frag<[64, 64], f32>
    %row_max = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %b[%c0, %c0] to %b_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.gemm %a_s, %b_s, %scores transpose_b clear_accum policy(full_col)
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.reduce max %scores to %row_max dim = 1 accumulate : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
    tile.copy %row_max to %out[%c0] : !tile.frag<[64], f32> to !tile.global<[64], f32>
  }
}

// -----

tile.kernel @reduce_alone_in_loop(%a: !tile.global<[64, 64], bf16>, %b: !tile.global<[64, 64], bf16>,
                  %out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %b_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %m_s = tile.alloc : !tile.shared<[64], f32>
    %scores = tile.alloc : !tile.frag<[64, 64], f32>
    %row_max = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %b[%c0, %c0] to %b_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.gemm %a_s, %b_s, %scores transpose_b clear_accum policy(full_col)
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    scf.for %t = %c0 to %c4 step %c1 {
      tile.reduce max %scores to %row_max dim = 1 accumulate : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
    }
    tile.copy %row_max to %out[%c0] : !tile.frag<[64], f32> to !tile.global<[64], f32>
  }
}

// -----

tile.kernel @reduce_then_shared_write(%a: !tile.global<[64, 64], bf16>, %b: !tile.global<[64, 64], bf16>,
                  %out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %b_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %m_s = tile.alloc : !tile.shared<[64], f32>
    %scores = tile.alloc : !tile.frag<[64, 64], f32>
    %row_max = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %b[%c0, %c0] to %b_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.gemm %a_s, %b_s, %scores transpose_b clear_accum policy(full_col)
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    scf.for %t = %c0 to %c4 step %c1 {
      tile.reduce max %scores to %row_max dim = 1 accumulate : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      tile.copy %row_max to %m_s : !tile.frag<[64], f32> to !tile.shared<[64], f32>
    }
    tile.copy %row_max to %out[%c0] : !tile.frag<[64], f32> to !tile.global<[64], f32>
  }
}

// -----

// (Review of the twenty-fifth session.) A reduction in a branch inside a
// loop: the scan would not see the previous iteration's ops after it in the
// branch (nor the reduction itself), so the barrier stays.
tile.kernel @reduce_in_branch_in_loop(%a: !tile.global<[64, 64], bf16>, %b: !tile.global<[64, 64], bf16>,
                  %out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %b_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %m_s = tile.alloc : !tile.shared<[64], f32>
    %scores = tile.alloc : !tile.frag<[64, 64], f32>
    %row_max = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %b[%c0, %c0] to %b_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.gemm %a_s, %b_s, %scores transpose_b clear_accum policy(full_col)
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    scf.for %t = %c0 to %c4 step %c1 {
      %odd = arith.cmpi ne, %t, %c0 : index
      scf.if %odd {
        tile.reduce max %scores to %row_max dim = 1 accumulate : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      }
    }
    tile.copy %row_max to %out[%c0] : !tile.frag<[64], f32> to !tile.global<[64], f32>
  }
}
