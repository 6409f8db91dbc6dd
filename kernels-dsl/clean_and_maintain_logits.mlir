// HISA step 1.3: clean and maintain logits, in place (KERNELS.md 1.3).
//
// For row m with window [s, e): columns outside it become -inf, columns s and
// e-1 become +inf (the sink and the local block always survive top-k); an
// empty window leaves the row all -inf. A window may reach past either end
// of the row (an edge outside the row is simply not written). Each warp cleans rows_per_warp rows.
//
// DRAM is written in whole 32-byte sectors (8 floats): a sector that a kernel
// writes only in part is read back and merged by the memory system, which on
// the H200 costs more than the write itself (a causal pattern whose rows end
// mid-sector runs at 60% of the rate of the same bytes in whole sectors). So
// every sector written here is written whole: the two sectors that hold
// both kept values and new ones (those of s and of e-1) are read by lanes
// 0-15 first, then written back merged at the end. A warp first issues
// these reads for all of its rows (their latencies overlap), then streams
// -inf over the whole sectors before s's sector and after e-1's, then
// writes the merged sectors. Sectors are counted from the tensor's first
// element, so rows need not start on a sector boundary.

tile.kernel @clean_and_maintain_logits(
    %logits: !tile.global<[?, ?], f32>,
    %s: !tile.global<[?], i32>,
    %e: !tile.global<[?], i32>)
    params {block_m = 4, rows_per_warp = 8} {
  %m = tile.dim %logits, 0 : !tile.global<[?, ?], f32>
  %block_m = tile.param "block_m" : index
  %rows_per_warp = tile.param "rows_per_warp" : index
  %rows_per_block = arith.muli %block_m, %rows_per_warp : index
  %grid = arith.ceildivui %m, %rows_per_block : index
  tile.launch (%bx) in (%grid) threads 128 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %zero = arith.constant 0.0 : f32
    %neg_inf = arith.constant 0xFF800000 : f32
    %pos_inf = arith.constant 0x7F800000 : f32
    %n = tile.dim %logits, 1 : !tile.global<[?, ?], f32>
    %warp_rows = tile.param "rows_per_warp" : index
    %warps = tile.param "block_m" : index
    %block_rows = arith.muli %warps, %warp_rows : index
    %row0 = arith.muli %bx, %block_rows : index
    // The values read from the merged sectors, one per row of the warp.
    %kept = tile.alloc : !tile.local<[rows_per_warp], f32>
    tile.parallel (%r, %lane) in [block_m, 32] {
      %warp_row0 = arith.muli %r, %warp_rows : index
      %row_base_1 = arith.addi %row0, %warp_row0 : index
      %row_base_2 = arith.addi %row0, %warp_row0 : index
      %group = arith.divui %lane, %c8 : index
      %offset = arith.remui %lane, %c8 : index
      %first_group = arith.cmpi eq, %group, %c0 : index
      %second_group = arith.cmpi eq, %group, %c1 : index
      // Phase 1: the reads of every row's merged sectors, all in flight
      // together.
      scf.for %i = %c0 to %warp_rows step %c1 {
        %row = arith.addi %row_base_1, %i : index
        %in_rows = arith.cmpi ult, %row, %m : index
        %row_safe = arith.select %in_rows, %row, %c0 : index
        %start_i32 = tile.load %s[%row_safe] : !tile.global<[?], i32>
        %end_i32 = tile.load %e[%row_safe] : !tile.global<[?], i32>
        %start_raw = arith.index_cast %start_i32 : i32 to index
        %end_raw = arith.index_cast %end_i32 : i32 to index
        // Windows are clamped to the row: [0, n].
        %start_low = arith.maxsi %start_raw, %c0 : index
        %start = arith.minsi %start_low, %n : index
        %end_low = arith.maxsi %end_raw, %c0 : index
        %end = arith.minsi %end_low, %n : index
        %non_empty = arith.cmpi slt, %start, %end : index
        %end_minus_one = arith.subi %end, %c1 : index
        %last = arith.select %non_empty, %end_minus_one, %start : index
        // The sector of column c starts at c - (row * n + c) % 8 (>= -7).
        %row_offset = arith.muli %row, %n : index
        %start_abs = arith.addi %row_offset, %start : index
        %start_phase = arith.remui %start_abs, %c8 : index
        %start_sector = arith.subi %start, %start_phase : index
        %last_abs = arith.addi %row_offset, %last : index
        %last_phase = arith.remui %last_abs, %c8 : index
        %last_sector = arith.subi %last, %last_phase : index
        // Lanes 0-7 merge the sector of s, lanes 8-15 that of e - 1 (when it
        // is another one), within the row's own columns.
        %two_sectors = arith.cmpi ne, %last_sector, %start_sector : index
        %second = arith.andi %second_group, %two_sectors : i1
        %merging = arith.ori %first_group, %second : i1
        %sector = arith.select %first_group, %start_sector, %last_sector : index
        %col = arith.addi %sector, %offset : index
        %col_from = arith.cmpi sge, %col, %c0 : index
        %col_below = arith.cmpi slt, %col, %n : index
        %col_in_row = arith.andi %col_from, %col_below : i1
        %merge_in_row = arith.andi %merging, %col_in_row : i1
        %merge_in_window = arith.andi %merge_in_row, %non_empty : i1
        %merge = arith.andi %merge_in_window, %in_rows : i1
        %old = scf.if %merge -> (f32) {
          %v = tile.load %logits[%row, %col] : !tile.global<[?, ?], f32>
          scf.yield %v : f32
        } else {
          scf.yield %zero : f32
        }
        tile.store %old, %kept[%i] : !tile.local<[rows_per_warp], f32>
      }
      // Phase 2: per row, -inf over the whole sectors before s's sector and
      // after e-1's (the whole row for an empty window), then the merged
      // sectors: +inf at s and e - 1, -inf outside [s, e), the kept value
      // elsewhere.
      scf.for %i = %c0 to %warp_rows step %c1 {
        %row = arith.addi %row_base_2, %i : index
        %in_rows = arith.cmpi ult, %row, %m : index
        %row_safe = arith.select %in_rows, %row, %c0 : index
        %start_i32 = tile.load %s[%row_safe] : !tile.global<[?], i32>
        %end_i32 = tile.load %e[%row_safe] : !tile.global<[?], i32>
        %start_raw = arith.index_cast %start_i32 : i32 to index
        %end_raw = arith.index_cast %end_i32 : i32 to index
        // Windows are clamped to the row: [0, n].
        %start_low = arith.maxsi %start_raw, %c0 : index
        %start = arith.minsi %start_low, %n : index
        %end_low = arith.maxsi %end_raw, %c0 : index
        %end = arith.minsi %end_low, %n : index
        %non_empty = arith.cmpi slt, %start, %end : index
        %end_minus_one = arith.subi %end, %c1 : index
        %last = arith.select %non_empty, %end_minus_one, %start : index
        // The sector of column c starts at c - (row * n + c) % 8 (>= -7).
        %row_offset = arith.muli %row, %n : index
        %start_abs = arith.addi %row_offset, %start : index
        %start_phase = arith.remui %start_abs, %c8 : index
        %start_sector = arith.subi %start, %start_phase : index
        %last_abs = arith.addi %row_offset, %last : index
        %last_phase = arith.remui %last_abs, %c8 : index
        %last_sector = arith.subi %last, %last_phase : index
        // Lanes 0-7 merge the sector of s, lanes 8-15 that of e - 1 (when it
        // is another one), within the row's own columns.
        %two_sectors = arith.cmpi ne, %last_sector, %start_sector : index
        %second = arith.andi %second_group, %two_sectors : i1
        %merging = arith.ori %first_group, %second : i1
        %sector = arith.select %first_group, %start_sector, %last_sector : index
        %col = arith.addi %sector, %offset : index
        %col_from = arith.cmpi sge, %col, %c0 : index
        %col_below = arith.cmpi slt, %col, %n : index
        %col_in_row = arith.andi %col_from, %col_below : i1
        %merge_in_row = arith.andi %merging, %col_in_row : i1
        %merge_in_window = arith.andi %merge_in_row, %non_empty : i1
        %merge = arith.andi %merge_in_window, %in_rows : i1
        %low_sector = arith.maxsi %start_sector, %c0 : index
        %after_last = arith.addi %last_sector, %c8 : index
        %high_sector = arith.minsi %after_last, %n : index
        %low_window = arith.select %non_empty, %low_sector, %n : index
        %high_window = arith.select %non_empty, %high_sector, %n : index
        %low_end = arith.select %in_rows, %low_window, %c0 : index
        %high_start = arith.select %in_rows, %high_window, %n : index
        scf.for %c = %lane to %low_end step %c32 {
          tile.store %neg_inf, %logits[%row, %c] : !tile.global<[?, ?], f32>
        }
        %high_first = arith.addi %high_start, %lane : index
        scf.for %c = %high_first to %n step %c32 {
          tile.store %neg_inf, %logits[%row, %c] : !tile.global<[?, ?], f32>
        }
        scf.if %merge {
          %old = tile.load %kept[%i] : !tile.local<[rows_per_warp], f32>
          // The edges are the window's own s and e - 1: a window reaching
          // past the row has no edge there.
          %raw_last = arith.subi %end_raw, %c1 : index
          %raw_non_empty = arith.cmpi slt, %start_raw, %end_raw : index
          %is_start = arith.cmpi eq, %col, %start_raw : index
          %is_last = arith.cmpi eq, %col, %raw_last : index
          %is_either = arith.ori %is_start, %is_last : i1
          %is_edge = arith.andi %is_either, %raw_non_empty : i1
          %before = arith.cmpi slt, %col, %start : index
          %after = arith.cmpi sge, %col, %end : index
          %outside = arith.ori %before, %after : i1
          %cleaned = arith.select %outside, %neg_inf, %old : f32
          %value = arith.select %is_edge, %pos_inf, %cleaned : f32
          tile.store %value, %logits[%row, %col] : !tile.global<[?, ?], f32>
        }
      }
    }
  }
}
