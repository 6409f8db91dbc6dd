// RUN: hisa-opt %s --tile-assign-layouts --convert-tile-to-gpu -verify-diagnostics

// The lowering checks a cross-warp reduction's scratch against the plan on
// the launch (here written by hand, 16 bytes where 64 outputs x 4 warps x 4
// bytes are needed) instead of writing past it.
tile.kernel @scratch_smaller_than_planned(%g: !tile.global<[?], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 attributes {tile.scratch_offset = 0 : i64, tile.shared_bytes = 16 : i64} {
    %f = tile.alloc : !tile.frag<[64, 64], f32>
    %r = tile.alloc : !tile.frag<[64], f32>
    %zero = arith.constant 0.0 : f32
    tile.fill %f, %zero : !tile.frag<[64, 64], f32>, f32
    // expected-error @+1 {{'tile.reduce' op needs 1024 bytes of reduction scratch, the plan left 16}}
    tile.reduce sum %f to %r dim = 0 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
  }
}
