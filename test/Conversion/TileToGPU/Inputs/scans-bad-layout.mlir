// Warp collectives need one element per thread per step and whole warps.

tile.kernel @vector_layout(%g: !tile.global<[256], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 64 {
    %f = tile.alloc : !tile.frag<[256], f32>
    tile.parallel (%i) in [256] {
      %v = tile.load %f[%i] : !tile.frag<[256], f32>
      %zero = arith.constant 0.0 : f32
      %positive = arith.cmpf ogt, %v, %zero : f32
      // expected-error @+1 {{'tile.vote' op needs the enclosing tile.parallel to give each thread one element per step}}
      %bits = tile.vote ballot %positive : i32
    }
  }
}

// -----

tile.kernel @partial_warp(%g: !tile.global<[?], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 64 {
    tile.parallel (%i) in [48] {
      %v = tile.load %g[%i] : !tile.global<[?], i32>
      // expected-error @+1 {{'tile.warp_scan' op needs the enclosing tile.parallel's domain to fill whole warps, but it has 48 elements}}
      %p, %t = tile.warp_scan sum %v : i32
    }
  }
}

// -----

tile.kernel @match_partial_warp(%g: !tile.global<[?], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 64 {
    tile.parallel (%i) in [48] {
      %v = tile.load %g[%i] : !tile.global<[?], i32>
      // expected-error @+1 {{'tile.warp_match' op needs the enclosing tile.parallel's domain to fill whole warps, but it has 48 elements}}
      %m = tile.warp_match %v : i32
    }
  }
}
