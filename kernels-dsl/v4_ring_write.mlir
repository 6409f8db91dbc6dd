// A decode step's kv row into the V4 layer's ring (KERNELS.md "The V4
// attention layer"): sequence b's token at position base[b] (device memory,
// so that a captured CUDA graph writes the current slot) goes to
// cache[b, base[b] % window]. kv [batch, 512] bf16, cache [batch, rows,
// 512] bf16 (the ring is its first `window` rows). One block per sequence.

tile.kernel @v4_ring_write(%kv: !tile.global<[?, 512], bf16>,
                           %cache: !tile.global<[?, ?, 512], bf16>,
                           %base: !tile.global<[?], i32>)
    params {window = 128} {
  %batch = tile.dim %kv, 0 : !tile.global<[?, 512], bf16>
  tile.launch (%b) in (%batch) threads 128 {
    %row = tile.alloc : !tile.frag<[512], bf16>
    %c0 = arith.constant 0 : index
    %window = tile.param "window" : index
    %position_i32 = tile.load %base[%b] : !tile.global<[?], i32>
    %position = arith.index_cast %position_i32 : i32 to index
    %slot = arith.remui %position, %window : index
    tile.copy %kv[%b, %c0] to %row : !tile.global<[?, 512], bf16> to !tile.frag<[512], bf16>
    tile.copy %row to %cache[%b, %slot, %c0]
        : !tile.frag<[512], bf16> to !tile.global<[?, ?, 512], bf16>
  }
}
