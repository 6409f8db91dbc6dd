// Gathered row copies: out[r, :] = kv[idx[q, r], :] (zeros for -1 and rows
// past the end), once with a plain copy and once through a two-stage
// pipeline over 64-row tiles (cp.async with zero fill), reading all of a
// query's row numbers from a shared tile filled before the loop. A GPU test
// of tile.copy rows(...) (python/tests/test_gather.py).
tile.kernel @gather_rows(%kv: !tile.global<[?, 512], bf16>,
                         %idx: !tile.global<[?, 256], i32>,
                         %out: !tile.global<[?, 256, 512], bf16>)
    params {stages = 2} {
  %q = tile.dim %idx, 0 : !tile.global<[?, 256], i32>
  tile.launch (%bx) in (%q) threads 128 {
    %rows = tile.alloc : !tile.shared<[256], i32>
    %tile_s = tile.alloc : !tile.shared<[64, 512], bf16>
    %first_s = tile.alloc : !tile.shared<[64, 512], bf16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    tile.copy %idx[%bx, %c0] to %rows : !tile.global<[?, 256], i32> to !tile.shared<[256], i32>
    // Plain: the first 64 rows.
    tile.copy %kv rows(%rows[%c0] : !tile.shared<[256], i32>) to %first_s
        : !tile.global<[?, 512], bf16> to !tile.shared<[64, 512], bf16>
    tile.copy %first_s to %out[%bx, %c0, %c0]
        : !tile.shared<[64, 512], bf16> to !tile.global<[?, 256, 512], bf16>
    // Pipelined: rows 64.. in tiles of 64 (the last tile reads past the
    // index tile's end for nothing: 4 tiles cover 256 rows exactly).
    tile.pipelined %t = %c1 to %c4 step %c1 num_stages = 2 {
      %first = arith.muli %t, %c64 : index
      tile.copy %kv rows(%rows[%first] : !tile.shared<[256], i32>) to %tile_s
          : !tile.global<[?, 512], bf16> to !tile.shared<[64, 512], bf16>
      tile.copy %tile_s to %out[%bx, %first, %c0]
          : !tile.shared<[64, 512], bf16> to !tile.global<[?, 256, 512], bf16>
    }
  }
}
