// One prefetch per lane of a byte tensor, and one per block of a bf16 row.
tile.kernel @prefetch(%bytes: !tile.global<[?], i8>, %w: !tile.global<[?, 64], bf16>) {
  %c4 = arith.constant 4 : index
  tile.launch (%bx) in (%c4) threads 32 {
    %c0 = arith.constant 0 : index
    %chunk = arith.constant 4096 : index
    tile.parallel (%i) in [32] {
      %at = arith.muli %i, %chunk : index
      tile.prefetch %bytes[%at], %chunk : !tile.global<[?], i8>
    }
    %row_bytes = arith.constant 128 : index
    tile.prefetch %w[%bx, %c0], %row_bytes : !tile.global<[?, 64], bf16>
  }
}
