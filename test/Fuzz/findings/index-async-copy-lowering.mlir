tile.kernel @mbarriers(%g: !tile.global<[?, 64], index>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %s = tile.alloc : !tile.shared<[32, 64], index>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 {
      tile.copy %g[%t, %c0] to %s : !tile.global<[?, 64], index> to !tile.shared<[32, 64], index>
    }
  }
}
