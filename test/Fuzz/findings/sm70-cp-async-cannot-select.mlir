tile.kernel @stream_sum_1d(%x: !tile.global<[?], f32>, %out: !tile.global<[rows], f32>)
    params {rows = 128} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %staged = tile.alloc : !tile.shared<[rows], f32>
    %c0 = arith.constant 0 : index
    %rows = tile.param "rows" : index
    %n = tile.dim %x, 0 : !tile.global<[?], f32>
    %tiles = arith.ceildivui %n, %rows : index
    tile.pipelined %t = %c0 to %tiles step %c1 num_stages = 2 {
      %start = arith.muli %t, %rows : index
      tile.copy %x[%start] to %staged : !tile.global<[?], f32> to !tile.shared<[rows], f32>
      tile.parallel (%i) in [rows] {
      }
    }
  }
}
