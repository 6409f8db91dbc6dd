// Two consumer warpgroups out of step (tile.per_warpgroup unsynchronized)
// in a warp-specialized loop that also writes shared memory: each computes
// S = Q K^T from the queries (copied before the loop) and the staged keys,
// hands its P to the other warpgroup through shared memory and a named
// barrier, and adds the other's P K to its output. The first gemm reads only
// tiles nothing in the loop writes but the staged copy; the second reads
// the P that the other warpgroup writes. @own_p is the same loop with each
// warpgroup's second gemm reading its own P.
tile.kernel @settled_gemm_operands(%q: !tile.global<[64, 64], bf16>,
                                   %k: !tile.global<[?, 64], bf16>,
                                   %out: !tile.global<[2, 64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %q_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %p0_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %p1_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %s = tile.alloc : !tile.frag<[64, 64], f32>
    %p = tile.alloc : !tile.frag<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    tile.copy %q[%c0, %c0] to %q_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.per_warpgroup (%wg) {
      tile.fill %acc, %zero : !tile.frag<[64, 64], f32>, f32
    }
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %row = arith.muli %t, %c64 : index
      tile.copy %k[%row, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.per_warpgroup (%wg) unsynchronized {
        tile.gemm %q_s, %k_s, %s transpose_b clear_accum
            : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
        tile.cast %s to %p : !tile.frag<[64, 64], f32> to !tile.frag<[64, 64], bf16>
        %mine = tile.pick %wg [%p0_s, %p1_s] : !tile.shared<[64, 64], bf16>
        tile.copy %p to %mine : !tile.frag<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
        tile.barrier id = 0
        %c1_wg = arith.constant 1 : index
        %partner = arith.subi %c1_wg, %wg : index
        %theirs = tile.pick %partner [%p0_s, %p1_s] : !tile.shared<[64, 64], bf16>
        tile.gemm %theirs, %k_s, %acc
            : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
        tile.barrier id = 1
      }
    }
    tile.per_warpgroup (%wg) {
      tile.copy %acc to %out[%wg, %c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[2, 64, 64], f32>
    }
  }
}

// -----
tile.kernel @own_p(%q: !tile.global<[64, 64], bf16>,
                                   %k: !tile.global<[?, 64], bf16>,
                                   %out: !tile.global<[2, 64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %q_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %p0_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %p1_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %s = tile.alloc : !tile.frag<[64, 64], f32>
    %p = tile.alloc : !tile.frag<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    tile.copy %q[%c0, %c0] to %q_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.per_warpgroup (%wg) {
      tile.fill %acc, %zero : !tile.frag<[64, 64], f32>, f32
    }
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %row = arith.muli %t, %c64 : index
      tile.copy %k[%row, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.per_warpgroup (%wg) unsynchronized {
        tile.gemm %q_s, %k_s, %s transpose_b clear_accum
            : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
        tile.cast %s to %p : !tile.frag<[64, 64], f32> to !tile.frag<[64, 64], bf16>
        %mine = tile.pick %wg [%p0_s, %p1_s] : !tile.shared<[64, 64], bf16>
        tile.copy %p to %mine : !tile.frag<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
        tile.barrier id = 0
        %c1_wg = arith.constant 1 : index
        %partner = arith.subi %c1_wg, %wg : index
        %theirs = tile.pick %wg [%p0_s, %p1_s] : !tile.shared<[64, 64], bf16>
        tile.gemm %theirs, %k_s, %acc
            : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
        tile.barrier id = 1
      }
    }
    tile.per_warpgroup (%wg) {
      tile.copy %acc to %out[%wg, %c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[2, 64, 64], f32>
    }
  }
}

// -----
// (hisa-fuzz seed 20261254: a pick index that folds to a negative number
// for a warpgroup crashed the per-warpgroup analysis; as the lowering does,
// it takes the last tile.)
tile.kernel @negative_pick(%k: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %p0_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %p1_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %p = tile.alloc : !tile.frag<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %row = arith.muli %t, %c64 : index
      tile.copy %k[%row, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.per_warpgroup (%wg) unsynchronized {
        %mine = tile.pick %wg [%p0_s, %p1_s] : !tile.shared<[64, 64], bf16>
        tile.copy %p to %mine : !tile.frag<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
        %low = arith.constant -2147483648 : index
        %partner = arith.subi %low, %wg : index
        %theirs = tile.pick %partner [%p0_s, %p1_s] : !tile.shared<[64, 64], bf16>
        tile.gemm %theirs, %k_s, %acc
            : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      }
    }
  }
}
