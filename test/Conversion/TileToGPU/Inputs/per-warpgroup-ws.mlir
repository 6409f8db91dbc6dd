// tile.per_warpgroup in the consumers' part of a warp-specialized key
// loop: the producer warpgroup fills two-stage buffers (each step: 64 rows
// of a for each warpgroup, 64 rows of b), and in every iteration each
// consumer warpgroup accumulates its own rows of a (picked by %wg among
// the stage buffers) times b^T into its own [64, 64] accumulator:
// out[wg] = sum over t of a[128 t + 64 wg, +64] b[64 t, +64]^T.
// A GPU test of tile.per_warpgroup with warp specialization
// (python/tests/test_per_warpgroup.py).
tile.kernel @per_warpgroup_ws(%a: !tile.global<[?, 64], bf16>,
                              %b: !tile.global<[?, 64], bf16>,
                              %out: !tile.global<[2, 64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %rows = tile.dim %b, 0 : !tile.global<[?, 64], bf16>
    %steps = arith.divui %rows, %c64 : index
    %a0 = tile.alloc : !tile.shared<[64, 64], bf16>
    %a1 = tile.alloc : !tile.shared<[64, 64], bf16>
    %b_tile = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    tile.per_warpgroup (%wg) {
      tile.clear %acc : !tile.frag<[64, 64], f32>
    }
    tile.pipelined %t = %c0 to %steps step %c1 num_stages = 2 warp_specialized {
      %row0 = arith.muli %t, %c128 : index
      %row1 = arith.addi %row0, %c64 : index
      %brow = arith.muli %t, %c64 : index
      tile.copy %a[%row0, %c0] to %a0
          : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.copy %a[%row1, %c0] to %a1
          : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.copy %b[%brow, %c0] to %b_tile
          : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.per_warpgroup (%wg) {
        %a_own = tile.pick %wg [%a0, %a1] : !tile.shared<[64, 64], bf16>
        tile.gemm %a_own, %b_tile, %acc transpose_b
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
