// Row slices may be read, not written, inside a parallel over their source
// (each row is held by several of the parallel's iterations), and only a
// fragment in the reduced layout is one.
tile.kernel @write_row_slice(%a: !tile.global<[64, 32], f16>, %b: !tile.global<[64, 32], f16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_tile = tile.alloc : !tile.shared<[64, 32], f16>
    %b_tile = tile.alloc : !tile.shared<[64, 32], f16>
    %scores = tile.alloc : !tile.frag<[64, 64], f32>
    %row_max = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    tile.copy %a[%c0, %c0] to %a_tile : !tile.global<[64, 32], f16> to !tile.shared<[64, 32], f16>
    tile.copy %b[%c0, %c0] to %b_tile : !tile.global<[64, 32], f16> to !tile.shared<[64, 32], f16>
    tile.gemm %a_tile, %b_tile, %scores transpose_b clear_accum
        : !tile.shared<[64, 32], f16>, !tile.shared<[64, 32], f16> -> !tile.frag<[64, 64], f32>
    tile.reduce max %scores to %row_max dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
    tile.parallel (%i, %j) in [64, 64] {
      %x = tile.load %scores[%i, %j] : !tile.frag<[64, 64], f32>
      // expected-error @+1 {{accesses fragment [64] at indices other than the induction variables}}
      tile.store %x, %row_max[%i] : !tile.frag<[64], f32>
    }
  }
}

// -----

tile.kernel @not_a_reduction(%out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %values = tile.alloc : !tile.frag<[64, 64], f32>
    %rows = tile.alloc : !tile.frag<[64], f32>
    %one = arith.constant 1.0 : f32
    tile.fill %values, %one : !tile.frag<[64, 64], f32>, f32
    tile.fill %rows, %one : !tile.frag<[64], f32>, f32
    tile.parallel (%i, %j) in [64, 64] {
      %x = tile.load %values[%i, %j] : !tile.frag<[64, 64], f32>
      // expected-error @+1 {{accesses fragment [64] at indices other than the induction variables}}
      %m = tile.load %rows[%i] : !tile.frag<[64], f32>
      %s = arith.subf %x, %m : f32
      tile.store %s, %out[%i, %j] : !tile.global<[64, 64], f32>
    }
  }
}
