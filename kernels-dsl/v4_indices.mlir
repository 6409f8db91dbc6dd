// Index rows of the DeepSeek-V4 attention layer's sparse attention
// (KERNELS.md "The V4 attention layer"; the conventions of
// python/hisa/v4/reference.py and docs/design.md): out [tokens, window +
// slots] int32, the window part then the compressed part, -1 padded.
//
// prefill (decode = 0): token t is position i = t % seq of its sequence;
//   window entry w is position i - window + 1 + w (-1 before 0);
//   compressed entry e is seq + e while e < (i + 1) / ratio (HCA: every
//   visible entry; CSA (csa = 1): the indexer's selection selected[t, e]
//   (entry numbers, -1 padded) instead, plus the same offset).
// decode (decode = 1): the token of sequence t is at position p = base[t];
//   window entry w is the ring slot (p - window + 1 + w) % window of that
//   token (-1 before 0); compressed entry e is window + e while visible.
// ratio 0: no compressed part (slots = 0 is not allowed by shapes: pass
// slots = 1 and read only the window part). One block per token.

tile.kernel @v4_indices(%out: !tile.global<[?, ?], i32>,
                        %selected: !tile.global<[?, ?], i32>,
                        %base: !tile.global<[?], i32>,
                        %seq: index)
    params {window = 128, ratio = 128, decode = 0, csa = 0} {
  %tokens = tile.dim %out, 0 : !tile.global<[?, ?], i32>
  tile.launch (%t) in (%tokens) threads 128 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %none = arith.constant -1 : i32
    %true = arith.constant true
    %window = tile.param "window" : index
    %ratio = tile.param "ratio" : index
    %decode_param = tile.param "decode" : index
    %csa_param = tile.param "csa" : index
    %is_decode = arith.cmpi ne, %decode_param, %c0 : index
    %is_csa = arith.cmpi ne, %csa_param, %c0 : index
    %width = tile.dim %out, 1 : !tile.global<[?, ?], i32>
    %in_sequence = arith.remui %t, %seq : index
    // Decode: sequence t's token at base[t] (device memory, so that a
    // captured CUDA graph replays at the current positions).
    %i = scf.if %is_decode -> (index) {
      %position_i32 = tile.load %base[%t] : !tile.global<[?], i32>
      %position = arith.index_cast %position_i32 : i32 to index
      scf.yield %position : index
    } else {
      scf.yield %in_sequence : index
    }
    %i_i64 = arith.index_cast %i : index to i64
    %window_i64 = arith.index_cast %window : index to i64
    %one_i64 = arith.constant 1 : i64
    %zero_i64 = arith.constant 0 : i64
    // Positions i - window + 1 + w.
    %first_raw = arith.subi %i_i64, %window_i64 : i64
    %first = arith.addi %first_raw, %one_i64 : i64
    %ratio_safe = arith.maxui %ratio, %c1 : index
    %next = arith.addi %i, %c1 : index
    %visible = arith.divui %next, %ratio_safe : index
    %has_ratio = arith.cmpi ne, %ratio, %c0 : index
    %offset = arith.select %is_decode, %window, %seq : index
    %c128 = arith.constant 128 : index
    scf.for %j0 = %c0 to %width step %c128 {
      tile.parallel (%l) in [128] {
        %j = arith.addi %j0, %l : index
        %in_row = arith.cmpi ult, %j, %width : index
        scf.if %in_row {
          %in_window = arith.cmpi ult, %j, %window : index
          %value = scf.if %in_window -> (i32) {
            %w_i64 = arith.index_cast %j : index to i64
            %position = arith.addi %first, %w_i64 : i64
            %before = arith.cmpi slt, %position, %zero_i64 : i64
            %slot = arith.remsi %position, %window_i64 : i64
            %entry_i64 = arith.select %is_decode, %slot, %position : i64
            %entry = arith.trunci %entry_i64 : i64 to i32
            %result = arith.select %before, %none, %entry : i32
            scf.yield %result : i32
          } else {
            %e = arith.subi %j, %window : index
            %result = scf.if %is_csa -> (i32) {
              %chosen = tile.load %selected[%t, %e] : !tile.global<[?, ?], i32>
              %zero_i32 = arith.constant 0 : i32
              %valid = arith.cmpi sge, %chosen, %zero_i32 : i32
              %offset_i32 = arith.index_cast %offset : index to i32
              %shifted = arith.addi %chosen, %offset_i32 : i32
              %picked = arith.select %valid, %shifted, %none : i32
              scf.yield %picked : i32
            } else {
              %seen = arith.cmpi ult, %e, %visible : index
              %shown = arith.andi %seen, %has_ratio : i1
              %entry_index = arith.addi %offset, %e : index
              %entry = arith.index_cast %entry_index : index to i32
              %all = arith.select %shown, %entry, %none : i32
              scf.yield %all : i32
            }
            scf.yield %result : i32
          }
          tile.store %value, %out[%t, %j] : !tile.global<[?, ?], i32>
        }
      }
    }
  }
}
