// A named barrier in a write-free tile.per_warpgroup body of a
// warp-specialized loop, after a block-level write of a shared tile (x) in
// the same iteration that the other warpgroup's gemm reads after the
// barrier: the barrier keeps its async-proxy fence (the consumers' fence
// before the loop does not cover this write).
tile.kernel @named_barrier_fence(%b: !tile.global<[?, 64], bf16>,
                                 %out: !tile.global<[2, 64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %one = arith.constant 1.0 : bf16
    %rows = tile.dim %b, 0 : !tile.global<[?, 64], bf16>
    %steps = arith.divui %rows, %c64 : index
    %b_tile = tile.alloc : !tile.shared<[64, 64], bf16>
    %x = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    tile.per_warpgroup (%wg) {
      tile.clear %acc : !tile.frag<[64, 64], f32>
    }
    tile.pipelined %t = %c0 to %steps step %c1 num_stages = 2 warp_specialized {
      %row = arith.muli %t, %c64 : index
      tile.copy %b[%row, %c0] to %b_tile
          : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.fill %x, %one : !tile.shared<[64, 64], bf16>, bf16
      tile.per_warpgroup (%wg) unsynchronized {
        %is_first = arith.cmpi eq, %wg, %c0 : index
        scf.if %is_first {
          tile.barrier id = 0 arrive_only
        } else {
          tile.barrier id = 0
        }
        tile.gemm %x, %b_tile, %acc transpose_b
            : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16>
              -> !tile.frag<[64, 64], f32>
      }
    }
    tile.per_warpgroup (%wg) {
      tile.copy %acc to %out[%wg, %c0, %c0]
          : !tile.frag<[64, 64], f32> to !tile.global<[2, 64, 64], f32>
    }
  }
}
