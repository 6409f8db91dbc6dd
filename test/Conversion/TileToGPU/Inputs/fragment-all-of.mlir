// tile.all_of over a fragment: each thread tests the row maxima it holds
// (two rows of the wgmma accumulator), one warp vote decides whether the
// warp halves its scores; no shared memory and no barrier are involved.
// out[i, j] = s[i, j] / 2 if any row of the warp holding row i has a
// maximum above 1, else s[i, j]; s = A B^T.
tile.kernel @fragment_all_of(%a: !tile.global<[64, 32], f16>,
                             %b: !tile.global<[64, 32], f16>,
                             %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_tile = tile.alloc : !tile.shared<[64, 32], f16>
    %b_tile = tile.alloc : !tile.shared<[64, 32], f16>
    %scores = tile.alloc : !tile.frag<[64, 64], f32>
    %row_max = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    %half = arith.constant 0.5 : f32
    %true = arith.constant true
    tile.copy %a[%c0, %c0] to %a_tile : !tile.global<[64, 32], f16> to !tile.shared<[64, 32], f16>
    tile.copy %b[%c0, %c0] to %b_tile : !tile.global<[64, 32], f16> to !tile.shared<[64, 32], f16>
    tile.gemm %a_tile, %b_tile, %scores transpose_b clear_accum
        : !tile.shared<[64, 32], f16>, !tile.shared<[64, 32], f16> -> !tile.frag<[64, 64], f32>
    tile.reduce max %scores to %row_max dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
    %small = tile.all_of %row_max : !tile.frag<[64], f32> {
    ^bb0(%m: f32):
      %p = arith.cmpf ole, %m, %one : f32
      tile.yield %p : i1
    }
    %large = arith.xori %small, %true : i1
    scf.if %large {
      tile.parallel (%i, %j) in [64, 64] {
        %x = tile.load %scores[%i, %j] : !tile.frag<[64, 64], f32>
        %y = arith.mulf %x, %half : f32
        tile.store %y, %scores[%i, %j] : !tile.frag<[64, 64], f32>
      }
    }
    tile.parallel (%i, %j) in [64, 64] {
      %x = tile.load %scores[%i, %j] : !tile.frag<[64, 64], f32>
      tile.store %x, %out[%i, %j] : !tile.global<[64, 64], f32>
    }
  }
}
