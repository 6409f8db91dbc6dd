// C[M, N] (f32) = A[M, K] * B[N, K]^T in fp8 e4m3 on tensor cores: the
// gemm micro-benchmark of the compiler (and the shape of the MQA logits
// inner loop). Two warpgroups (one 64-row half of the tile each) per
// block_m x block_n tile walk K in steps of block_k with a num_stages-deep
// cp.async pipeline into 128-byte-swizzled shared tiles, one wgmma group in
// flight across iterations; K is a parameter (rows of 128 bytes need a
// static stride). Tuning record: docs/performance.md.

tile.kernel @fp8_gemm(%a: !tile.global<[?, k], f8E4M3FN>,
                      %b: !tile.global<[?, k], f8E4M3FN>,
                      %c: !tile.global<[?, ?], f32>)
    params {k = 4096, block_m = 128, block_n = 256, block_k = 128} {
  %m = tile.dim %a, 0 : !tile.global<[?, k], f8E4M3FN>
  %n = tile.dim %b, 0 : !tile.global<[?, k], f8E4M3FN>
  %block_m = tile.param "block_m" : index
  %block_n = tile.param "block_n" : index
  %grid_m = arith.ceildivui %m, %block_m : index
  %grid_n = arith.ceildivui %n, %block_n : index
  tile.launch (%bx, %by) in (%grid_n, %grid_m) threads 256 {
    %a_tile = tile.alloc : !tile.shared<[block_m, block_k], f8E4M3FN>
    %b_tile = tile.alloc : !tile.shared<[block_n, block_k], f8E4M3FN>
    %acc = tile.alloc : !tile.frag<[block_m, block_n], f32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %k = tile.param "k" : index
    %block_k = tile.param "block_k" : index
    %steps = arith.ceildivui %k, %block_k : index
    %row0 = arith.muli %by, %block_m : index
    %col0 = arith.muli %bx, %block_n : index
    tile.clear %acc : !tile.frag<[block_m, block_n], f32>
    tile.pipelined %t = %c0 to %steps step %c1 num_stages = 4 {
      %k0 = arith.muli %t, %block_k : index
      tile.copy %a[%row0, %k0] to %a_tile
          : !tile.global<[?, k], f8E4M3FN> to !tile.shared<[block_m, block_k], f8E4M3FN>
      tile.copy %b[%col0, %k0] to %b_tile
          : !tile.global<[?, k], f8E4M3FN> to !tile.shared<[block_n, block_k], f8E4M3FN>
      tile.gemm %a_tile, %b_tile, %acc transpose_b
          : !tile.shared<[block_m, block_k], f8E4M3FN>, !tile.shared<[block_n, block_k], f8E4M3FN>
            -> !tile.frag<[block_m, block_n], f32>
    }
    tile.copy %acc to %c[%row0, %col0]
        : !tile.frag<[block_m, block_n], f32> to !tile.global<[?, ?], f32>
  }
}
