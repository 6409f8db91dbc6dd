// Sums the tiles of a 1-D x: out[i] = sum_t x[t * rows + i], staging the
// tiles through shared memory with cp.async (a GPU test of 1-D pipelined
// copies: the last 16-byte piece may straddle the end of x, which then
// copies only the elements before the end). NUM_STAGES is substituted.
tile.kernel @stream_sum_1d(%x: !tile.global<[?], f32>, %out: !tile.global<[rows], f32>)
    params {rows = 128} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %staged = tile.alloc : !tile.shared<[rows], f32>
    %sum = tile.alloc : !tile.frag<[rows], f32>
    %c0 = arith.constant 0 : index
    %rows = tile.param "rows" : index
    %n = tile.dim %x, 0 : !tile.global<[?], f32>
    %tiles = arith.ceildivui %n, %rows : index
    tile.clear %sum : !tile.frag<[rows], f32>
    tile.pipelined %t = %c0 to %tiles step %c1 num_stages = NUM_STAGES {
      %start = arith.muli %t, %rows : index
      tile.copy %x[%start] to %staged : !tile.global<[?], f32> to !tile.shared<[rows], f32>
      tile.parallel (%i) in [rows] {
        %a = tile.load %sum[%i] : !tile.frag<[rows], f32>
        %b = tile.load %staged[%i] : !tile.shared<[rows], f32>
        %c = arith.addf %a, %b : f32
        tile.store %c, %sum[%i] : !tile.frag<[rows], f32>
      }
    }
    tile.copy %sum to %out[%c0] : !tile.frag<[rows], f32> to !tile.global<[rows], f32>
  }
}
