// C = A * B^T with A in registers (wgmma's A-operand layout, filled by a
// copy from global) and B in shared memory (a GPU test of register-A wgmma;
// ELEMENT, K, THREADS and POLICY are substituted by the tests).
tile.kernel @gemm_ra(%a: !tile.global<[?, K], ELEMENT>, %b: !tile.global<[?, K], ELEMENT>,
                  %c: !tile.global<[?, ?], f32>)
    params {m = 64, n = 64} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads THREADS {
    %a_frag = tile.alloc : !tile.frag<[m, K], ELEMENT>
    %b_tile = tile.alloc : !tile.shared<[n, K], ELEMENT>
    %acc = tile.alloc : !tile.frag<[m, n], f32>
    %c0 = arith.constant 0 : index
    tile.copy %a[%c0, %c0] to %a_frag : !tile.global<[?, K], ELEMENT> to !tile.frag<[m, K], ELEMENT>
    tile.copy %b[%c0, %c0] to %b_tile : !tile.global<[?, K], ELEMENT> to !tile.shared<[n, K], ELEMENT>
    tile.gemm %a_frag, %b_tile, %acc transpose_b clear_accum policy(POLICY)
        : !tile.frag<[m, K], ELEMENT>, !tile.shared<[n, K], ELEMENT> -> !tile.frag<[m, n], f32>
    tile.copy %acc to %c[%c0, %c0] : !tile.frag<[m, n], f32> to !tile.global<[?, ?], f32>
  }
}
