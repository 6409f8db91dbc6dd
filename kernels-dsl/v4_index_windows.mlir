// The CSA indexer's key windows (KERNELS.md "The V4 attention layer"): the
// compressed keys of sequence b are rows [b * capacity, b * capacity +
// count) of one packed key tensor; token t (sequence b = t / seq) sees the
// entries completed by its position i, (i + 1) / ratio of them: ks[t] = b * capacity, ke[t] = ks[t] + (i + 1) / ratio (int32),
// i = base[b] + t % seq (prefill: base = 0, seq = the prompt length;
// decode: seq = 1, base the positions in device memory).

tile.kernel @v4_index_windows(%ks: !tile.global<[?], i32>,
                              %ke: !tile.global<[?], i32>,
                              %base: !tile.global<[?], i32>,
                              %seq: index, %capacity: index)
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
        %base_i32 = tile.load %base[%b] : !tile.global<[?], i32>
        %base_index = arith.index_cast %base_i32 : i32 to index
        %position = arith.addi %base_index, %in_sequence : index
        %next = arith.addi %position, %c1 : index
        %visible_raw = arith.divui %next, %ratio : index
        // Never past the sequence's keys (a position past max_seq).
        %c0 = arith.constant 0 : index
        %packed = arith.cmpi ugt, %capacity, %c0 : index
        %limit = arith.select %packed, %capacity, %visible_raw : index
        %visible = arith.minui %visible_raw, %limit : index
        %first_key = arith.muli %b, %capacity : index
        %end = arith.addi %first_key, %visible : index
        %first_key_i32 = arith.index_cast %first_key : index to i32
        %end_i32 = arith.index_cast %end : index to i32
        tile.store %first_key_i32, %ks[%t] : !tile.global<[?], i32>
        tile.store %end_i32, %ke[%t] : !tile.global<[?], i32>
      }
    }
  }
}
