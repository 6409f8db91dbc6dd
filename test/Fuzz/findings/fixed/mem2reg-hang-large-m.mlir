tile.kernel @gemm_ra(%a: !tile.global<[?, 128], f8E4M3FN>, %b: !tile.global<[?, 128], f8E4M3FN>,
                  %c: !tile.global<[?, ?], f32>)
    params {m = 64, n = 64} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_frag = tile.alloc : !tile.frag<[m, 128], f8E4M3FN>
    %b_tile = tile.alloc : !tile.shared<[n, 128], f8E4M3FN>
    %acc = tile.alloc : !tile.frag<[m, n], f32>
    tile.gemm %a_frag, %b_tile, %acc transpose_b clear_accum policy(square)
        : !tile.frag<[m, 128], f8E4M3FN>, !tile.shared<[n, 128], f8E4M3FN> -> !tile.frag<[m, n], f32>
  }
}
