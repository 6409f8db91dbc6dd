// One output whose 512 values are spread over 32 threads: 16 per thread,
// combined in CHAINS independent chains (the test substitutes it).
tile.kernel @row_sum(%out: !tile.global<[?, 1], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.frag<[1, 512], f32>
    %d = tile.alloc : !tile.frag<[1], f32>
    %one = arith.constant 1.0 : f32
    tile.fill %s, %one : !tile.frag<[1, 512], f32>, f32
    tile.reduce sum %s to %d dim = 1 chains = CHAINS
        : !tile.frag<[1, 512], f32> to !tile.frag<[1], f32>
    %c0 = arith.constant 0 : index
    tile.copy %d to %out[%bx, %c0] : !tile.frag<[1], f32> to !tile.global<[?, 1], f32>
  }
}
