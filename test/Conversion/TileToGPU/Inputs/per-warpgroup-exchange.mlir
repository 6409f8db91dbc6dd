// The warpgroups exchange row statistics through shared memory: each
// writes the row max of its own scores (its own rows of a, scaled by
// wg + 1) into its own shared tile, all meet at tile.barrier, then each
// combines both: out[wg] is the max over both warpgroups, the same in each.
// A GPU test of tile.pick and tile.barrier in tile.per_warpgroup
// (python/tests/test_per_warpgroup.py).
tile.kernel @per_warpgroup_exchange(%a: !tile.global<[128, 64], bf16>,
                                    %b: !tile.global<[64, 64], bf16>,
                                    %out: !tile.global<[2, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %a0_tile = tile.alloc : !tile.shared<[64, 64], bf16>
    %a1_tile = tile.alloc : !tile.shared<[64, 64], bf16>
    %b_tile = tile.alloc : !tile.shared<[64, 64], bf16>
    %max0 = tile.alloc : !tile.shared<[64], f32>
    %max1 = tile.alloc : !tile.shared<[64], f32>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %m = tile.alloc : !tile.frag<[64], f32>
    %both = tile.alloc : !tile.frag<[64], f32>
    tile.copy %a[%c0, %c0] to %a0_tile
        : !tile.global<[128, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %a[%c64, %c0] to %a1_tile
        : !tile.global<[128, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %b[%c0, %c0] to %b_tile
        : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.per_warpgroup (%wg) {
      %a_tile = tile.pick %wg [%a0_tile, %a1_tile] : !tile.shared<[64, 64], bf16>
      tile.gemm %a_tile, %b_tile, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16>
            -> !tile.frag<[64, 64], f32>
      %wg_i32 = arith.index_cast %wg : index to i32
      %wg_f = arith.sitofp %wg_i32 : i32 to f32
      %one = arith.constant 1.0 : f32
      %scale = arith.addf %wg_f, %one : f32
      tile.parallel (%i, %j) in [64, 64] {
        %x = tile.load %acc[%i, %j] : !tile.frag<[64, 64], f32>
        %y = arith.mulf %x, %scale : f32
        tile.store %y, %acc[%i, %j] : !tile.frag<[64, 64], f32>
      }
      tile.reduce max %acc to %m dim = 1
          : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      %mine = tile.pick %wg [%max0, %max1] : !tile.shared<[64], f32>
      tile.copy %m to %mine : !tile.frag<[64], f32> to !tile.shared<[64], f32>
      tile.barrier
      tile.parallel (%r) in [64] {
        %x0 = tile.load %max0[%r] : !tile.shared<[64], f32>
        %x1 = tile.load %max1[%r] : !tile.shared<[64], f32>
        %x = arith.maximumf %x0, %x1 : f32
        tile.store %x, %both[%r] : !tile.frag<[64], f32>
      }
      tile.copy %both to %out[%wg, %c0]
          : !tile.frag<[64], f32> to !tile.global<[2, 64], f32>
    }
  }
}
