// Two blocks of a cluster swap their rows through distributed shared
// memory: each stages its row, meets the other at the cluster barrier,
// reads the other's row and writes it doubled.
tile.kernel @exchange(%in: !tile.global<[?, 128], f32>,
                      %out: !tile.global<[?, 128], f32>) {
  %rows = tile.dim %in, 0 : !tile.global<[?, 128], f32>
  tile.launch (%bx) in (%rows) threads 128 cluster 2 {
    %mine = tile.alloc : !tile.shared<[128], f32>
    %after = tile.alloc : !tile.shared<[128], f32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rank = tile.cluster_rank : index
    %other = arith.subi %c1, %rank : index
    tile.copy %in[%bx, %c0] to %mine
        : !tile.global<[?, 128], f32> to !tile.shared<[128], f32>
    tile.cluster_barrier
    %swapped = tile.alloc : !tile.frag<[128], f32>
    tile.parallel (%i) in [128] {
      %v = tile.load %mine[%i] peer %other : !tile.shared<[128], f32>
      tile.store %v, %swapped[%i] : !tile.frag<[128], f32>
    }
    // First used after the peer's last read of %mine: it may not take
    // %mine's bytes, which the peer reads until the last cluster barrier.
    tile.copy %swapped to %after : !tile.frag<[128], f32> to !tile.shared<[128], f32>
    tile.parallel (%i) in [128] {
      %v = tile.load %after[%i] : !tile.shared<[128], f32>
      %two = arith.constant 2.0 : f32
      %d = arith.mulf %v, %two : f32
      tile.store %d, %out[%bx, %i] : !tile.global<[?, 128], f32>
    }
    tile.cluster_barrier
  }
}
