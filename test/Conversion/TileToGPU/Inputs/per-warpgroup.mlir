// Each consumer warpgroup runs the tile.per_warpgroup body with its own
// index: a [64, 64] gemm of its own rows of a (picked among two shared
// tiles by the warpgroup index; one m64n64 wgmma chain over its 128
// threads), scaled by wg + 1, the row max in registers, both stored at
// [wg], and the column sums (a reduction across the warpgroup's 4 warps,
// through its own slice of the reduction scratch while the other
// warpgroup uses its own). A GPU test of tile.per_warpgroup
// (python/tests/test_per_warpgroup.py).
tile.kernel @per_warpgroup_gemm(%a: !tile.global<[128, 64], bf16>,
                                %b: !tile.global<[64, 64], bf16>,
                                %out: !tile.global<[2, 64, 64], f32>,
                                %row_max: !tile.global<[2, 64], f32>,
                                %col_sum: !tile.global<[2, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %a0_tile = tile.alloc : !tile.shared<[64, 64], bf16>
    %a1_tile = tile.alloc : !tile.shared<[64, 64], bf16>
    %b_tile = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %m = tile.alloc : !tile.frag<[64], f32>
    %s = tile.alloc : !tile.frag<[64], f32>
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
      tile.copy %acc to %out[%wg, %c0, %c0]
          : !tile.frag<[64, 64], f32> to !tile.global<[2, 64, 64], f32>
      tile.copy %m to %row_max[%wg, %c0]
          : !tile.frag<[64], f32> to !tile.global<[2, 64], f32>
      tile.reduce sum %acc to %s dim = 0
          : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      tile.copy %s to %col_sum[%wg, %c0]
          : !tile.frag<[64], f32> to !tile.global<[2, 64], f32>
    }
  }
}
