// HISA step 1.3: clean and maintain logits, in place (KERNELS.md 1.3).
//
// For row m with window [s, e): columns outside it become -inf, columns s and
// e-1 become +inf (the sink and the local block always survive top-k); an
// empty window leaves the row all -inf. Logits are never read, and columns
// that keep their value are not written.

tile.kernel @clean_and_maintain_logits(
    %logits: !tile.global<[?, ?], f32>,
    %s: !tile.global<[?], i32>,
    %e: !tile.global<[?], i32>)
    params {block_m = 4, block_n = 1024} {
  %m = tile.dim %logits, 0 : !tile.global<[?, ?], f32>
  %n = tile.dim %logits, 1 : !tile.global<[?, ?], f32>
  %block_m = tile.param "block_m" : index
  %block_n = tile.param "block_n" : index
  %grid_m = arith.ceildivui %m, %block_m : index
  %grid_n = arith.ceildivui %n, %block_n : index
  tile.launch (%bx, %by) in (%grid_m, %grid_n) threads 256 {
    %row0 = arith.muli %bx, %block_m : index
    %col0 = arith.muli %by, %block_n : index
    %neg_inf = arith.constant 0xFF800000 : f32
    %pos_inf = arith.constant 0x7F800000 : f32
    %c1 = arith.constant 1 : i32
    tile.parallel (%r, %c) in [block_m, block_n] {
      %row = arith.addi %row0, %r : index
      %col = arith.addi %col0, %c : index
      %col_i32 = arith.index_cast %col : index to i32
      %start = tile.load %s[%row] : !tile.global<[?], i32>
      %end = tile.load %e[%row] : !tile.global<[?], i32>
      %last = arith.subi %end, %c1 : i32
      %before = arith.cmpi slt, %col_i32, %start : i32
      %after = arith.cmpi sge, %col_i32, %end : i32
      %outside = arith.ori %before, %after : i1
      %is_first = arith.cmpi eq, %col_i32, %start : i32
      %is_last = arith.cmpi eq, %col_i32, %last : i32
      %is_edge = arith.ori %is_first, %is_last : i1
      scf.if %outside {
        tile.store %neg_inf, %logits[%row, %col] : !tile.global<[?, ?], f32>
      } else {
        scf.if %is_edge {
          tile.store %pos_inf, %logits[%row, %col] : !tile.global<[?, ?], f32>
        }
      }
    }
  }
}
