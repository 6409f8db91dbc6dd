// The key windows of a context-parallel rank's queries over the gathered
// keys of one causal sequence (python/hisa/distributed.py, lib/ContextParallel):
// the rank's tokens are positions [start0, start0 + count0) then
// [start1, start1 + count - count0); query t at position p sees keys
// [0, p + 1): ks[t] = 0, ke[t] = p + 1 (int32).

tile.kernel @cp_windows(%ks: !tile.global<[?], i32>, %ke: !tile.global<[?], i32>,
                        %start0: index, %count0: index, %start1: index) {
  %tokens = tile.dim %ks, 0 : !tile.global<[?], i32>
  %c256 = arith.constant 256 : index
  %blocks = arith.ceildivui %tokens, %c256 : index
  tile.launch (%block) in (%blocks) threads 256 {
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0 : i32
    %first = arith.muli %block, %c256 : index
    tile.parallel (%l) in [256] {
      %t = arith.addi %first, %l : index
      %real = arith.cmpi ult, %t, %tokens : index
      scf.if %real {
        %in_first = arith.cmpi ult, %t, %count0 : index
        %early = arith.addi %start0, %t : index
        %late_offset = arith.subi %t, %count0 : index
        %late = arith.addi %start1, %late_offset : index
        %position = arith.select %in_first, %early, %late : index
        %end = arith.addi %position, %c1 : index
        %end_i32 = arith.index_cast %end : index to i32
        tile.store %zero, %ks[%t] : !tile.global<[?], i32>
        tile.store %end_i32, %ke[%t] : !tile.global<[?], i32>
      }
    }
  }
}
