// Partner reads that tile-assign-layouts refuses.
tile.kernel @partner_in_another_thread(%a: !tile.global<[64, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %out = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.gemm %a_s, %a_s, %acc transpose_b clear_accum
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.parallel (%i, %j) in [64, 64] {
      // Columns 2 apart belong to the next lane.
      %j_far = arith.xori %j, %c2 : index
      // expected-error @+1 {{'tile.load' op reads the partner of its element (index 1 xor 2) of fragment [64, 64], but its layout puts some partners in other threads or past the tile (read the pair from shared memory instead)}}
      %far = tile.load %acc[%i, %j_far] : !tile.frag<[64, 64], f32>
      tile.store %far, %out[%i, %j] : !tile.frag<[64, 64], f32>
    }
  }
}

// -----

tile.kernel @partner_of_written_fragment() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    tile.parallel (%i, %j) in [64, 64] {
      %j_partner = arith.xori %j, %c1 : index
      // expected-error @+1 {{'tile.load' op reads the partner of its element (index 1 xor 1) of fragment [64, 64], which the same tile.parallel writes: the partner may already hold its new value}}
      %partner = tile.load %acc[%i, %j_partner] : !tile.frag<[64, 64], f32>
      tile.store %partner, %acc[%i, %j] : !tile.frag<[64, 64], f32>
    }
  }
}

// -----

tile.kernel @partner_written() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %zero = arith.constant 0.0 : f32
    tile.parallel (%i, %j) in [64, 64] {
      %j_partner = arith.xori %j, %c1 : index
      // expected-error @+1 {{'tile.store' op writes the partner of its element (index 1 xor 1); a tile.parallel writes its own elements only}}
      tile.store %zero, %acc[%i, %j_partner] : !tile.frag<[64, 64], f32>
    }
  }
}

// -----

tile.kernel @partner_past_the_tile() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %x = tile.alloc : !tile.frag<[32, 3], f32>
    %y = tile.alloc : !tile.frag<[32, 3], f32>
    tile.parallel (%i, %j) in [32, 3] {
      %j_partner = arith.xori %j, %c1 : index
      // expected-error @+1 {{'tile.load' op reads the partner of its element (index 1 xor 1) of fragment [32, 3], but its layout puts some partners in other threads or past the tile (read the pair from shared memory instead)}}
      %v = tile.load %x[%i, %j_partner] : !tile.frag<[32, 3], f32>
      tile.store %v, %y[%i, %j] : !tile.frag<[32, 3], f32>
    }
  }
}
