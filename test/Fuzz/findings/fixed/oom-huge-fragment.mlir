tile.kernel @shared_layout() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.frag<[2147483647], f8E4M3FN>
    %b = tile.alloc : !tile.frag<[2147483647], f32>
    tile.parallel (%i) in [2147483647] {
      %x = tile.load %b[%i] : !tile.frag<[2147483647], f32>
      tile.store %x, %b[%i] : !tile.frag<[2147483647], f32>
    }
  }
}
