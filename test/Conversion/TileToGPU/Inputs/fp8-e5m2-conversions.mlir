// e5m2 conversions in one launch: a tile.cast each way, element-wise
// truncf, and fp8 to fp8 (through f32).
tile.kernel @e5m2_conversions(%x8: !tile.global<[64], f8E5M2>,
                              %x4: !tile.global<[64], f8E4M3FN>,
                              %xf: !tile.global<[64], f32>,
                              %yf: !tile.global<[64], f32>,
                              %y8: !tile.global<[64], f8E5M2>,
                              %z8: !tile.global<[64], f8E5M2>,
                              %w8: !tile.global<[64], f8E5M2>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.frag<[64], f8E5M2>
    %b = tile.alloc : !tile.frag<[64], f32>
    %c = tile.alloc : !tile.frag<[64], f32>
    %d = tile.alloc : !tile.frag<[64], f8E5M2>
    %e = tile.alloc : !tile.frag<[64], f8E4M3FN>
    %g = tile.alloc : !tile.frag<[64], f8E5M2>
    tile.copy %x8 to %a : !tile.global<[64], f8E5M2> to !tile.frag<[64], f8E5M2>
    tile.cast %a to %b : !tile.frag<[64], f8E5M2> to !tile.frag<[64], f32>
    tile.copy %b to %yf : !tile.frag<[64], f32> to !tile.global<[64], f32>
    tile.copy %xf to %c : !tile.global<[64], f32> to !tile.frag<[64], f32>
    tile.cast %c to %d : !tile.frag<[64], f32> to !tile.frag<[64], f8E5M2>
    tile.copy %d to %y8 : !tile.frag<[64], f8E5M2> to !tile.global<[64], f8E5M2>
    tile.parallel (%i) in [64] {
      %v = tile.load %xf[%i] : !tile.global<[64], f32>
      %w = arith.truncf %v : f32 to f8E5M2
      tile.store %w, %z8[%i] : !tile.global<[64], f8E5M2>
    }
    tile.copy %x4 to %e : !tile.global<[64], f8E4M3FN> to !tile.frag<[64], f8E4M3FN>
    tile.cast %e to %g : !tile.frag<[64], f8E4M3FN> to !tile.frag<[64], f8E5M2>
    tile.copy %g to %w8 : !tile.frag<[64], f8E5M2> to !tile.global<[64], f8E5M2>
  }
}
