// HISA step 1.3: clean and maintain logits, in place (KERNELS.md 1.3).
//
// For row m with window [s, e): columns outside it become -inf, columns s and
// e-1 become +inf (the sink and the local block always survive top-k); an
// empty window leaves the row all -inf. Logits are never read, and only the
// columns that change are visited: each row belongs to one warp, whose 32
// lanes walk [0, s) and [e, N) together, 32 consecutive columns (128 bytes)
// per step, aligned to 32 columns; lane 0 writes the two +inf edges.

tile.kernel @clean_and_maintain_logits(
    %logits: !tile.global<[?, ?], f32>,
    %s: !tile.global<[?], i32>,
    %e: !tile.global<[?], i32>)
    params {block_m = 8} {
  %m = tile.dim %logits, 0 : !tile.global<[?, ?], f32>
  %block_m = tile.param "block_m" : index
  %grid = arith.ceildivui %m, %block_m : index
  tile.launch (%bx) in (%grid) threads 256 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %neg_inf = arith.constant 0xFF800000 : f32
    %pos_inf = arith.constant 0x7F800000 : f32
    %n = tile.dim %logits, 1 : !tile.global<[?, ?], f32>
    %row0 = arith.muli %bx, %block_m : index
    tile.parallel (%r, %lane) in [block_m, 32] {
      %row = arith.addi %row0, %r : index
      %in_rows = arith.cmpi ult, %row, %m : index
      scf.if %in_rows {
        %start_i32 = tile.load %s[%row] : !tile.global<[?], i32>
        %end_i32 = tile.load %e[%row] : !tile.global<[?], i32>
        %start_raw = arith.index_cast %start_i32 : i32 to index
        %end_raw = arith.index_cast %end_i32 : i32 to index
        // Windows are clamped to the row: [0, n].
        %start_low = arith.maxsi %start_raw, %c0 : index
        %start = arith.minsi %start_low, %n : index
        %end_low = arith.maxsi %end_raw, %c0 : index
        %end = arith.minsi %end_low, %n : index

        // [0, s): -inf.
        scf.for %col = %lane to %start step %c32 {
          tile.store %neg_inf, %logits[%row, %col] : !tile.global<[?, ?], f32>
        }
        // [e, n): -inf, from the 32-column boundary at or below e. An empty
        // window (e <= s) is covered by the two ranges together.
        %end_lanes = arith.remui %end, %c32 : index
        %aligned_end = arith.subi %end, %end_lanes : index
        %first = arith.addi %aligned_end, %lane : index
        scf.for %col = %first to %n step %c32 {
          %after = arith.cmpi uge, %col, %end : index
          scf.if %after {
            tile.store %neg_inf, %logits[%row, %col] : !tile.global<[?, ?], f32>
          }
        }
        // The sink (first) and local (last) columns of a non-empty window.
        %non_empty = arith.cmpi slt, %start, %end : index
        %lane0 = arith.cmpi eq, %lane, %c0 : index
        %edges = arith.andi %non_empty, %lane0 : i1
        scf.if %edges {
          %last = arith.subi %end, %c1 : index
          tile.store %pos_inf, %logits[%row, %start] : !tile.global<[?, ?], f32>
          tile.store %pos_inf, %logits[%row, %last] : !tile.global<[?, ?], f32>
        }
      }
    }
  }
}
