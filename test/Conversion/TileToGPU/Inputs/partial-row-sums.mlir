// Per-warpgroup partial row sums: the scores S = A A^T [64, 64] are split
// over two warpgroups by columns; viewed as [64, 2, 32], their sum along the
// last dimension stays inside each warpgroup ([64 rows, 2 warpgroups], a
// layout that repeats each value in the 4 lanes of a quad), is scaled by
// the row maximum (a row statistic read at the row index), and summed over
// the warpgroups once: a reduction over a layout with replicated thread
// bits. out_parts = rowmax * partial sums, out_total = their sum.
tile.kernel @partial_row_sums(%a: !tile.global<[64, 512], bf16>,
                              %out_parts: !tile.global<[64, 2], f32>,
                              %out_total: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %a_s = tile.alloc : !tile.shared<[64, 512], bf16>
    %scores = tile.alloc : !tile.frag<[64, 64], f32>
    %row_max = tile.alloc : !tile.frag<[64], f32>
    %parts = tile.alloc : !tile.frag<[64, 2], f32>
    %total = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 512], bf16> to !tile.shared<[64, 512], bf16>
    tile.gemm %a_s, %a_s, %scores transpose_b clear_accum policy(full_col)
        : !tile.shared<[64, 512], bf16>, !tile.shared<[64, 512], bf16> -> !tile.frag<[64, 64], f32>
    tile.reduce max %scores to %row_max dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
    %columns = tile.view %scores : !tile.frag<[64, 64], f32> to !tile.frag<[64, 2, 32], f32>
    tile.reduce sum %columns to %parts dim = 2 : !tile.frag<[64, 2, 32], f32> to !tile.frag<[64, 2], f32>
    tile.parallel (%i, %w) in [64, 2] {
      %p = tile.load %parts[%i, %w] : !tile.frag<[64, 2], f32>
      %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
      %scaled = arith.mulf %p, %m : f32
      tile.store %scaled, %parts[%i, %w] : !tile.frag<[64, 2], f32>
    }
    tile.reduce sum %parts to %total dim = 1 : !tile.frag<[64, 2], f32> to !tile.frag<[64], f32>
    tile.copy %parts to %out_parts[%c0, %c0] : !tile.frag<[64, 2], f32> to !tile.global<[64, 2], f32>
    tile.copy %total to %out_total[%c0] : !tile.frag<[64], f32> to !tile.global<[64], f32>
  }
}
