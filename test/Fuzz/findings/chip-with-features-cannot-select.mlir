tile.kernel @remarked(%x: !tile.global<[?, 32], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %s = tile.alloc : !tile.shared<[16, 32], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 31 : index
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 {
      tile.copy %x[%t, %c0] to %s : !tile.global<[?, 32], f32> to !tile.shared<[16, 32], f32>
    }
  }
}
