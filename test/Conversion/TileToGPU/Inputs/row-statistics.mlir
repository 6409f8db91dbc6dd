// Row statistics in registers: the maximum of each row of a wgmma
// accumulator (tile.reduce max along dim 1) is read inside a tile.parallel
// over the accumulator at its row index, as online softmax reads it; every
// thread holds the rows of its accumulator values, so no shared memory is
// involved. out[i, j] = (A B^T)[i, j] - max_j' (A B^T)[i, j'].
tile.kernel @row_max_shift(%a: !tile.global<[64, 32], f16>,
                           %b: !tile.global<[64, 32], f16>,
                           %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_tile = tile.alloc : !tile.shared<[64, 32], f16>
    %b_tile = tile.alloc : !tile.shared<[64, 32], f16>
    %scores = tile.alloc : !tile.frag<[64, 64], f32>
    %row_max = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    tile.copy %a[%c0, %c0] to %a_tile : !tile.global<[64, 32], f16> to !tile.shared<[64, 32], f16>
    tile.copy %b[%c0, %c0] to %b_tile : !tile.global<[64, 32], f16> to !tile.shared<[64, 32], f16>
    tile.gemm %a_tile, %b_tile, %scores transpose_b clear_accum
        : !tile.shared<[64, 32], f16>, !tile.shared<[64, 32], f16> -> !tile.frag<[64, 64], f32>
    tile.reduce max %scores to %row_max dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
    tile.parallel (%i, %j) in [64, 64] {
      %x = tile.load %scores[%i, %j] : !tile.frag<[64, 64], f32>
      %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
      %shifted = arith.subf %x, %m : f32
      tile.store %shifted, %out[%i, %j] : !tile.global<[64, 64], f32>
    }
  }
}
