tile.kernel @remarked(%x: !tile.global<[?, 32], index>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %s = tile.alloc : !tile.shared<[16, 32], index>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    tile.copy %x[%c0, %c0] to %s {tile.tma} : !tile.global<[?, 32], index> to !tile.shared<[16, 32], index>
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 {
    }
  }
}
