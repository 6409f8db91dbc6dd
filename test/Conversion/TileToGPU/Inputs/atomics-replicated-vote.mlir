// Atomics and a warp collective in one parallel over a layout that gives
// each element to several threads: refused (the atomics must run once per
// element, the ballot in every lane).
tile.kernel @replicated_vote(%a: !tile.global<[64, 32], f16>, %b: !tile.global<[64, 32], f16>, %total: !tile.global<[1], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_tile = tile.alloc : !tile.shared<[64, 32], f16>
    %b_tile = tile.alloc : !tile.shared<[64, 32], f16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %rows = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    %one = arith.constant 1 : i32
    %true = arith.constant true
    tile.copy %a[%c0, %c0] to %a_tile : !tile.global<[64, 32], f16> to !tile.shared<[64, 32], f16>
    tile.copy %b[%c0, %c0] to %b_tile : !tile.global<[64, 32], f16> to !tile.shared<[64, 32], f16>
    tile.gemm %a_tile, %b_tile, %acc transpose_b clear_accum : !tile.shared<[64, 32], f16>, !tile.shared<[64, 32], f16> -> !tile.frag<[64, 64], f32>
    tile.reduce sum %acc to %rows dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
    tile.parallel (%i) in [64] {
    // expected-error@-1 {{has atomics and warp collectives over a layout that gives each element to several threads}}
      %mask = tile.vote ballot %true : i32
      %old = tile.atomic add %mask, %total[%c0] : !tile.global<[1], i32>
    }
  }
}
