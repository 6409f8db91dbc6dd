// y = x * w^T in bf16 (f32 accumulation), the projections of the V4
// attention layer: x [M, x_cols = groups * k] bf16, w [groups * n, k] bf16 (a
// torch Linear's weight, [out, in]), y [M, y_cols = groups * n] bf16 (static
// row lengths: the epilogue stores each thread's column pairs as one 32-bit
// word). Group g
// multiplies x's columns [g k, (g + 1) k) by w's rows [g n, (g + 1) n) into
// y's columns [g n, (g + 1) n): the grouped wo_a projection is one launch
// (groups = 1: a plain linear layer). The main loop is bf16_gemm's (two
// warpgroups, 128 x 256 tiles, a 4-stage pipeline, k-major operands); the
// accumulator is rounded to bf16 in registers before the store.
// n is a multiple of block_n when groups > 1 (a partial tile would spill
// into the next group's columns; the operator refuses it), and k of block_k.
//
// splits > 1 (the variant linear_partial, for decode-sized m): the k steps
// are split over `splits` blocks per output tile, each writing its f32
// partial sum to y [splits, M, y_cols]; linear_reduce adds them up. The k
// steps must divide evenly (the operator checks).
// linear_staged: the epilogue through shared memory — the bf16 tile into a
// staging tile (swizzled by tile-assign-layouts: conflict-free 4-byte
// stores), then to y in 16-byte pieces, one row segment per warp — instead
// of each thread's 4-byte pair stores straight to global memory (wq_b's
// 4.3 GB output: 61% of cuBLAS, staged 70%; the other projections 89-93%
// -> 95-97%, H200). The staging tile reuses the pipeline's buffers (live
// after the loop only). The operator uses it for prefill-sized m.
// hisa-variant linear_staged replaces "@linear(" with "@linear_staged("
// hisa-variant linear_staged replaces "    tile.copy %rounded to %y[%row0, %y_col0] : !tile.frag<[block_m, block_n], bf16> to !tile.global<[?, y_cols], bf16>" with "    %staging = tile.alloc : !tile.shared<[block_m, block_n], bf16> tile.copy %rounded to %staging : !tile.frag<[block_m, block_n], bf16> to !tile.shared<[block_m, block_n], bf16> tile.copy %staging to %y[%row0, %y_col0] : !tile.shared<[block_m, block_n], bf16> to !tile.global<[?, y_cols], bf16>"
// linear_split_k: the split-k product in one launch. Each block writes its
// f32 partial sum to partial [splits, M, y_cols] and the last of a tile's
// splits (a ticket from counters [grid_m * groups * grid_n], zero before
// the first launch and left zero) adds them up in split order and stores
// the bf16 tile (kernels-dsl/lib/split_k.mlir): linear_partial then
// linear_reduce, bit for bit, without the second launch. Measured slower
// at decode's m = 64 (H200, probes/split_k_one_launch_ab.py: wq_a 7.4 ->
// 13.1 us, wo_b 24.5 -> 26.8): the reduction runs in one block per tile
// (8-32 blocks) instead of linear_reduce's 64+, so the operator keeps two
// launches; the variant stays for that measurement.
// hisa-variant linear_split_k replaces "tile.kernel @linear(" with "func.func private @finish_split_k(!tile.frag<[rows, cols], f32>, !tile.frag<[rows, cols], f32>, !tile.frag<[rows, cols], bf16>, !tile.shared<[1], i32>, !tile.global<[?, ?, width], f32>, !tile.global<[?], i32>, !tile.global<[?, width], bf16>, index, index, index, index, index) tile.kernel @linear_split_k("
// hisa-variant linear_split_k replaces "%y: !tile.global<[?, y_cols], bf16>)" with "%partial: !tile.global<[?, ?, y_cols], f32>, %counters: !tile.global<[?], i32>, %y: !tile.global<[?, y_cols], bf16>)"
// hisa-variant linear_split_k replaces "    tile.cast %acc to %rounded : !tile.frag<[block_m, block_n], f32> to !tile.frag<[block_m, block_n], bf16>" with "    // The partial sum leaves as f32; the last split rounds the total."
// hisa-variant linear_split_k replaces "    tile.copy %rounded to %y[%row0, %y_col0] : !tile.frag<[block_m, block_n], bf16> to !tile.global<[?, y_cols], bf16>" with "    %part = tile.alloc : !tile.frag<[block_m, block_n], f32> %tickets = tile.alloc : !tile.shared<[1], i32> %tile_row = arith.muli %by, %groups : index %tile_group = arith.addi %tile_row, %bg : index %tile_first = arith.muli %tile_group, %grid_n : index %counter = arith.addi %tile_first, %bx : index tile.call @finish_split_k(%acc, %part, %rounded, %tickets, %partial, %counters, %y, %split, %splits, %counter, %row0, %y_col0) : (!tile.frag<[block_m, block_n], f32>, !tile.frag<[block_m, block_n], f32>, !tile.frag<[block_m, block_n], bf16>, !tile.shared<[1], i32>, !tile.global<[?, ?, y_cols], f32>, !tile.global<[?], i32>, !tile.global<[?, y_cols], bf16>, index, index, index, index, index) -> ()"
// hisa-variant linear_partial replaces "@linear(" with "@linear_partial("
// hisa-variant linear_partial replaces "%y: !tile.global<[?, y_cols], bf16>)" with "%y: !tile.global<[?, ?, y_cols], f32>)"
// hisa-variant linear_partial replaces "    tile.cast %acc to %rounded : !tile.frag<[block_m, block_n], f32> to !tile.frag<[block_m, block_n], bf16>" with "    // The f32 partial sum leaves as it is."
// hisa-variant linear_partial replaces "tile.copy %rounded to %y[%row0, %y_col0] : !tile.frag<[block_m, block_n], bf16> to !tile.global<[?, y_cols], bf16>" with "tile.copy %acc to %y[%split, %row0, %y_col0] : !tile.frag<[block_m, block_n], f32> to !tile.global<[?, ?, y_cols], f32>"

tile.kernel @linear(%x: !tile.global<[?, x_cols], bf16>,
                    %w: !tile.global<[?, k], bf16>,
                    %y: !tile.global<[?, y_cols], bf16>)
    params {k = 4096, n = 4096, groups = 1, x_cols = 4096, y_cols = 4096,
            block_m = 128, block_n = 256, block_k = 64, splits = 1} {
  %m = tile.dim %x, 0 : !tile.global<[?, x_cols], bf16>
  %groups = tile.param "groups" : index
  %n = tile.param "n" : index
  %block_m = tile.param "block_m" : index
  %block_n = tile.param "block_n" : index
  %grid_m = arith.ceildivui %m, %block_m : index
  %grid_n = arith.ceildivui %n, %block_n : index
  %splits_host = tile.param "splits" : index
  %grid_z = arith.muli %groups, %splits_host : index
  tile.launch (%bx, %by, %bz) in (%grid_n, %grid_m, %grid_z) threads 256 {
    %a_tile = tile.alloc : !tile.shared<[block_m, block_k], bf16>
    %b_tile = tile.alloc : !tile.shared<[block_n, block_k], bf16>
    %acc = tile.alloc : !tile.frag<[block_m, block_n], f32>
    %rounded = tile.alloc : !tile.frag<[block_m, block_n], bf16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %k = tile.param "k" : index
    %block_k = tile.param "block_k" : index
    %n_in = tile.param "n" : index
    %steps = arith.ceildivui %k, %block_k : index
    %splits = tile.param "splits" : index
    %bg = arith.divui %bz, %splits : index
    %split = arith.remui %bz, %splits : index
    %steps_per_split = arith.divui %steps, %splits : index
    %first_step = arith.muli %split, %steps_per_split : index
    %end_step = arith.addi %first_step, %steps_per_split : index
    %row0 = arith.muli %by, %block_m : index
    %col_in_group = arith.muli %bx, %block_n : index
    %group_x = arith.muli %bg, %k : index
    %group_w = arith.muli %bg, %n_in : index
    %w_row0 = arith.addi %group_w, %col_in_group : index
    %y_col0 = arith.addi %group_w, %col_in_group : index
    tile.clear %acc : !tile.frag<[block_m, block_n], f32>
    tile.pipelined %t = %first_step to %end_step step %c1 num_stages = 4 {
      %k0 = arith.muli %t, %block_k : index
      %x_col = arith.addi %group_x, %k0 : index
      tile.copy %x[%row0, %x_col] to %a_tile
          : !tile.global<[?, x_cols], bf16> to !tile.shared<[block_m, block_k], bf16>
      tile.copy %w[%w_row0, %k0] to %b_tile
          : !tile.global<[?, k], bf16> to !tile.shared<[block_n, block_k], bf16>
      tile.gemm %a_tile, %b_tile, %acc transpose_b
          : !tile.shared<[block_m, block_k], bf16>, !tile.shared<[block_n, block_k], bf16>
            -> !tile.frag<[block_m, block_n], f32>
    }
    tile.cast %acc to %rounded : !tile.frag<[block_m, block_n], f32> to !tile.frag<[block_m, block_n], bf16>
    tile.copy %rounded to %y[%row0, %y_col0] : !tile.frag<[block_m, block_n], bf16> to !tile.global<[?, y_cols], bf16>
  }
}
