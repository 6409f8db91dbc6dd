// Reads of an element's partner (the element at `index xor mask`) inside a
// tile.parallel: each thread of a wgmma accumulator holds column pairs
// (2c, 2c + 1), so a RoPE-style rotation of pairs needs no shared memory.
// out[i, j] = the pair (x, y) of acc row i rotated by 90 degrees: (-y, x).
tile.kernel @rotate_pairs(%a: !tile.global<[64, 64], bf16>, %b: !tile.global<[64, 64], bf16>,
                          %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %b_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %rotated = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %b[%c0, %c0] to %b_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.gemm %a_s, %b_s, %acc transpose_b clear_accum
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.parallel (%i, %j) in [64, 64] {
      %j_partner = arith.xori %j, %c1 : index
      %partner = tile.load %acc[%i, %j_partner] : !tile.frag<[64, 64], f32>
      %own = tile.load %acc[%i, %j] : !tile.frag<[64, 64], f32>
      %parity = arith.remui %j, %c2 : index
      %odd = arith.cmpi ne, %parity, %c0 : index
      %minus = arith.negf %partner : f32
      %value = arith.select %odd, %partner, %minus : f32
      tile.store %value, %rotated[%i, %j] : !tile.frag<[64, 64], f32>
    }
    tile.copy %rotated to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}
