tile.kernel @shared_layout() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %b = tile.alloc : !tile.frag<[64, 128], index>
    tile.parallel (%i, %j) in [64, 128] {
    }
  }
}
