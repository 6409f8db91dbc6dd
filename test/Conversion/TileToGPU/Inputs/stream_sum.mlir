// Sums the row tiles of x: out[i, j] = sum_t x[t * rows + i, j], streaming
// the tiles through shared memory in a pipelined loop (a GPU test of
// tile.pipelined; NUM_STAGES is substituted by the tests).
tile.kernel @stream_sum(%x: !tile.global<[?, 128], f32>, %out: !tile.global<[rows, 128], f32>)
    params {rows = 32} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %staged = tile.alloc : !tile.shared<[rows, 128], f32>
    %current = tile.alloc : !tile.frag<[rows, 128], f32>
    %sum = tile.alloc : !tile.frag<[rows, 128], f32>
    %c0 = arith.constant 0 : index
    %rows = tile.param "rows" : index
    %n = tile.dim %x, 0 : !tile.global<[?, 128], f32>
    %tiles = arith.ceildivui %n, %rows : index
    tile.clear %sum : !tile.frag<[rows, 128], f32>
    tile.pipelined %t = %c0 to %tiles step %c1 num_stages = NUM_STAGES {
      %row = arith.muli %t, %rows : index
      tile.copy %x[%row, %c0] to %staged
          : !tile.global<[?, 128], f32> to !tile.shared<[rows, 128], f32>
      tile.copy %staged to %current
          : !tile.shared<[rows, 128], f32> to !tile.frag<[rows, 128], f32>
      tile.parallel (%i, %j) in [rows, 128] {
        %a = tile.load %sum[%i, %j] : !tile.frag<[rows, 128], f32>
        %b = tile.load %current[%i, %j] : !tile.frag<[rows, 128], f32>
        %c = arith.addf %a, %b : f32
        tile.store %c, %sum[%i, %j] : !tile.frag<[rows, 128], f32>
      }
    }
    tile.copy %sum to %out[%c0, %c0]
        : !tile.frag<[rows, 128], f32> to !tile.global<[rows, 128], f32>
  }
}
