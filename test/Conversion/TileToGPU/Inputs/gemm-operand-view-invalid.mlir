// An element of a swizzled tile.gemm operand read through a view: only the
// whole tile knows its swizzled panels.
tile.kernel @element_through_view(%a: !tile.global<[64, 64], bf16>,
                                  %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.gemm %a_s, %a_s, %acc transpose_b clear_accum
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    %flat = tile.view %a_s : !tile.shared<[64, 64], bf16> to !tile.shared<[4096], bf16>
    tile.parallel (%i, %j) in [64, 64] {
      %x = tile.load %acc[%i, %j] : !tile.frag<[64, 64], f32>
      // expected-error @+1 {{'tile.load' op cannot address an element through a view of a swizzled (tile.gemm operand) tile}}
      %y = tile.load %flat[%j] : !tile.shared<[4096], bf16>
      %z = arith.extf %y : bf16 to f32
      %s = arith.addf %x, %z : f32
      tile.store %s, %acc[%i, %j] : !tile.frag<[64, 64], f32>
    }
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}

// -----

// A whole-tile copy through a view of a swizzled gemm operand would take
// the elements in storage (swizzled) order.
tile.kernel @copy_through_view(%a: !tile.global<[64, 64], bf16>,
                               %y: !tile.global<[4096], bf16>,
                               %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.gemm %a_s, %a_s, %acc transpose_b clear_accum
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    %flat = tile.view %a_s : !tile.shared<[64, 64], bf16> to !tile.shared<[4096], bf16>
    // expected-error @+1 {{'tile.copy' op copies through a view of a swizzled (tile.gemm operand) tile, whose elements the view would take in storage order; copy the whole tile}}
    tile.copy %flat to %y : !tile.shared<[4096], bf16> to !tile.global<[4096], bf16>
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}
