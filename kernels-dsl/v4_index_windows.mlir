// The CSA indexer's key windows (KERNELS.md "The V4 attention layer"): the
// compressed keys of sequence b are rows [b * capacity, b * capacity +
// count) of one packed key tensor; token t (sequence b = t / seq, position
// i = start + t % seq) sees the entries completed by then, (i + 1) / ratio
// of them: ks[t] = b * capacity, ke[t] = ks[t] + (i + 1) / ratio (int32).
// Prefill: start = 0, seq = the prompt length; decode: seq = 1.

tile.kernel @v4_index_windows(%ks: !tile.global<[?], i32>,
                              %ke: !tile.global<[?], i32>,
                              %seq: index, %start: index, %capacity: index)
    params {ratio = 4} {
  %tokens = tile.dim %ks, 0 : !tile.global<[?], i32>
  %c256 = arith.constant 256 : index
  %blocks = arith.ceildivui %tokens, %c256 : index
  tile.launch (%block) in (%blocks) threads 256 {
    %c1 = arith.constant 1 : index
    %ratio = tile.param "ratio" : index
    %first = arith.muli %block, %c256 : index
    tile.parallel (%l) in [256] {
      %t = arith.addi %first, %l : index
      %real = arith.cmpi ult, %t, %tokens : index
      scf.if %real {
        %b = arith.divui %t, %seq : index
        %in_sequence = arith.remui %t, %seq : index
        %position = arith.addi %start, %in_sequence : index
        %next = arith.addi %position, %c1 : index
        %visible = arith.divui %next, %ratio : index
        %base = arith.muli %b, %capacity : index
        %end = arith.addi %base, %visible : index
        %base_i32 = arith.index_cast %base : index to i32
        %end_i32 = arith.index_cast %end : index to i32
        tile.store %base_i32, %ks[%t] : !tile.global<[?], i32>
        tile.store %end_i32, %ke[%t] : !tile.global<[?], i32>
      }
    }
  }
}
