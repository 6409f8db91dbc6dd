// tile.all_of over a fragment of 200 elements on 128 threads: each thread
// holds two values, the second past the tile's end for threads 72..127,
// which count as holding the predicate.
tile.kernel @fragment_all_of_past_end(%g: !tile.global<[200], f32>,
                                      %out: !tile.global<[128], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %values = tile.alloc : !tile.frag<[200], f32>
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    tile.copy %g[%c0] to %values : !tile.global<[200], f32> to !tile.frag<[200], f32>
    %positive = tile.all_of %values : !tile.frag<[200], f32> {
    ^bb0(%v: f32):
      %p = arith.cmpf ogt, %v, %zero : f32
      tile.yield %p : i1
    }
    %bit = arith.extui %positive : i1 to i32
    tile.parallel (%t) in [128] {
      tile.store %bit, %out[%t] : !tile.global<[128], i32>
    }
  }
}
