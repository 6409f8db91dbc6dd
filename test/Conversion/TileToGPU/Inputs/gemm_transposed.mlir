// C = op(A) * op(B) with either operand transposed (a GPU test of the
// MN-major wgmma and mma.sync paths; ELEMENT, K, THREADS, POLICY, A_TILE,
// B_TILE, A_ROW and B_ROW and FLAGS are substituted by the tests): A is
// [m, K] or, with transpose_a, [K, m]; B is [K, n] or, with transpose_b,
// [n, K]. The globals are row-major with static rows of A_ROW / B_ROW.
tile.kernel @gemm_t(%a: !tile.global<[?, A_ROW], ELEMENT>, %b: !tile.global<[?, B_ROW], ELEMENT>,
                    %c: !tile.global<[?, ?], f32>)
    params {m = 64, n = 64} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads THREADS {
    %a_tile = tile.alloc : !tile.shared<A_TILE, ELEMENT>
    %b_tile = tile.alloc : !tile.shared<B_TILE, ELEMENT>
    %acc = tile.alloc : !tile.frag<[m, n], f32>
    %c0 = arith.constant 0 : index
    tile.copy %a[%c0, %c0] to %a_tile : !tile.global<[?, A_ROW], ELEMENT> to !tile.shared<A_TILE, ELEMENT>
    tile.copy %b[%c0, %c0] to %b_tile : !tile.global<[?, B_ROW], ELEMENT> to !tile.shared<B_TILE, ELEMENT>
    tile.gemm %a_tile, %b_tile, %acc FLAGS clear_accum policy(POLICY)
        : !tile.shared<A_TILE, ELEMENT>, !tile.shared<B_TILE, ELEMENT> -> !tile.frag<[m, n], f32>
    tile.copy %acc to %c[%c0, %c0] : !tile.frag<[m, n], f32> to !tile.global<[?, ?], f32>
  }
}
