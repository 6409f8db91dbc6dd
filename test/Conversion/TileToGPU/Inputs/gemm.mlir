// C = A * B^T on THREADS / 128 warpgroups split by POLICY (a GPU test of the
// wgmma lowering; ELEMENT, K, THREADS, POLICY and EPILOGUE are substituted
// by the tests). The epilogue checks that the accumulator layout flows into
// a tile.parallel.
tile.kernel @gemm(%a: !tile.global<[?, K], ELEMENT>, %b: !tile.global<[?, K], ELEMENT>,
                  %c: !tile.global<[?, ?], f32>)
    params {m = 64, n = 64} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads THREADS {
    %a_tile = tile.alloc : !tile.shared<[m, K], ELEMENT>
    %b_tile = tile.alloc : !tile.shared<[n, K], ELEMENT>
    %acc = tile.alloc : !tile.frag<[m, n], f32>
    %c0 = arith.constant 0 : index
    tile.copy %a[%c0, %c0] to %a_tile : !tile.global<[?, K], ELEMENT> to !tile.shared<[m, K], ELEMENT>
    tile.copy %b[%c0, %c0] to %b_tile : !tile.global<[?, K], ELEMENT> to !tile.shared<[n, K], ELEMENT>
    tile.gemm %a_tile, %b_tile, %acc transpose_b clear_accum policy(POLICY)
        : !tile.shared<[m, K], ELEMENT>, !tile.shared<[n, K], ELEMENT> -> !tile.frag<[m, n], f32>
    tile.parallel (%i, %j) in [m, n] {
      %x = tile.load %acc[%i, %j] : !tile.frag<[m, n], f32>
      %y = EPILOGUE
      tile.store %y, %acc[%i, %j] : !tile.frag<[m, n], f32>
    }
    tile.copy %acc to %c[%c0, %c0] : !tile.frag<[m, n], f32> to !tile.global<[?, ?], f32>
  }
}
