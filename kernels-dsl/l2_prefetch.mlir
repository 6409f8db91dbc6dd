// Warms the L2 cache with a byte range of device memory (tile.prefetch):
// launched on a side stream while the memory system idles, for instance
// during a decode step's chain of small launches, so that a later launch
// that streams the range (the next projection's weights) finds part of it
// in L2. Nothing waits for the prefetches; the kernel only issues them:
// one warp per block, one `chunk`-byte prefetch per lane.

tile.kernel @l2_prefetch(%data: !tile.global<[?], i8>)
    params {chunk = 16384} {
  %bytes = tile.dim %data, 0 : !tile.global<[?], i8>
  %chunk = tile.param "chunk" : index
  %c32 = arith.constant 32 : index
  %per_block = arith.muli %chunk, %c32 : index
  %blocks = arith.ceildivui %bytes, %per_block : index
  tile.launch (%block) in (%blocks) threads 32 {
    %first = arith.muli %block, %c32 : index
    tile.parallel (%lane) in [32] {
      %piece = arith.addi %first, %lane : index
      %at = arith.muli %piece, %chunk : index
      tile.prefetch %data[%at], %chunk : !tile.global<[?], i8>
    }
  }
}
