// The combine of split sparse attention (decode with few tokens:
// sparse_attn with `splits` > 1 leaves, per token t, split i and head h, the
// split's output o_i normalized by its own sum and lse_i = log of that sum
// (natural units, -inf when the split saw no valid index), without the sink):
//   M = max(max_i lse_i, sink_h),  w_i = exp(lse_i - M),
//   D = sum_i w_i + exp(sink_h - M),
//   o[t, h] = sum_i w_i o_i / D,   lse[t, h] = M + log D,
// which is what one block over all the indices computes (KERNELS.md
// "DeepSeek-V4 sparse attention"). D = 0 (nothing valid and a sink of -inf)
// gives o = 0. One block per (token, head), each thread 4 of the 512
// columns: the splits are the outer loop (each split's weight computed once
// a block, its row read with 16-byte loads), accumulated in split order as
// before, so the results are the same bits as the per-column loop's.

//
// rope = 1 (the V4 layer): the output then rotates back by RoPE on the last
// 64 dims (v4_rope with inverse = 1, the same arithmetic on the rounded
// bf16 values, so the same bits as the two launches): token t of sequence
// t / seq at position base[t / seq] + t % seq, cos / sin tables
// [positions, 32] f32 (positions past them read the last row). With rope =
// 0 those arguments are not read. The rotation happens in registers (a
// thread holds its columns in runs of 4, so both halves of each pair), and
// the position and the tables are read first, beside the sink and the
// splits' lse: a block waits for one round of loads before its rows, not
// one after another (GPU run 70: 9.2 us for 64 tokens x 64 heads x 2
// splits, most of it latency).
//
// `splits` (a parameter; 0: o_part's dimension 1) makes the loops over the
// splits static, so that their loads are issued together; with a nonzero
// value the loops run over min(splits, o_part's dimension 1).

func.func private @rope_position(!tile.global<[?], i32>, !tile.global<[?, 32], f32>,
                                 index, index) -> index
func.func private @rope_rotate_element(bf16, bf16, i1, f32, f32) -> bf16

tile.kernel @sparse_attn_combine(%o_part: !tile.global<[?, ?, ?, 512], f32>,
                                 %lse_part: !tile.global<[?, ?, ?], f32>,
                                 %attn_sink: !tile.global<[?], f32>,
                                 %o: !tile.global<[?, ?, 512], bf16>,
                                 %lse_out: !tile.global<[?, ?], f32>,
                                 %cos: !tile.global<[?, 32], f32>,
                                 %sin: !tile.global<[?, 32], f32>,
                                 %base: !tile.global<[?], i32>,
                                 %seq: index)
    params {lse = 0, rope = 0, splits = 0} {
  %tokens = tile.dim %o_part, 0 : !tile.global<[?, ?, ?, 512], f32>
  %heads = tile.dim %o_part, 2 : !tile.global<[?, ?, ?, 512], f32>
  %blocks = arith.muli %tokens, %heads : index
  tile.launch (%block) in (%blocks) threads 128 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c31 = arith.constant 31 : index
    %c448 = arith.constant 448 : index
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %neg_inf = arith.constant 0xFF800000 : f32
    %log2e = arith.constant 1.44269504 : f32
    %ln2 = arith.constant 0.693147182 : f32
    %heads_in = tile.dim %o_part, 2 : !tile.global<[?, ?, ?, 512], f32>
    %splits_given = tile.dim %o_part, 1 : !tile.global<[?, ?, ?, 512], f32>
    %splits_param = tile.param "splits" : index
    %static = arith.cmpi ne, %splits_param, %c0 : index
    %splits_static = arith.minui %splits_param, %splits_given : index
    %splits = arith.select %static, %splits_static, %splits_given : index
    %token = arith.divui %block, %heads_in : index
    %h = arith.remui %block, %heads_in : index
    %rope_param = tile.param "rope" : index
    %rope_on = arith.cmpi ne, %rope_param, %c0 : index
    %position = scf.if %rope_on -> (index) {
      %at = func.call @rope_position(%base, %cos, %token, %seq)
          : (!tile.global<[?], i32>, !tile.global<[?, 32], f32>, index, index) -> index
      scf.yield %at : index
    } else {
      scf.yield %c0 : index
    }
    %sink = tile.load %attn_sink[%h] : !tile.global<[?], f32>
    %sink_log2 = arith.mulf %sink, %log2e : f32
    // M and D in log2 units (block-uniform scalar loads).
    %max = scf.for %i = %c0 to %splits step %c1 iter_args(%m = %sink_log2) -> (f32) {
      %lse_i = tile.load %lse_part[%token, %i, %h] : !tile.global<[?, ?, ?], f32>
      %lse_log2 = arith.mulf %lse_i, %log2e : f32
      %next = arith.maximumf %m, %lse_log2 : f32
      scf.yield %next : f32
    }
    %none = arith.cmpf oeq, %max, %neg_inf : f32
    %max_safe = arith.select %none, %zero, %max : f32
    %sink_shifted = arith.subf %sink_log2, %max_safe : f32
    %sink_weight = math.exp2 %sink_shifted : f32
    %sum = scf.for %i = %c0 to %splits step %c1 iter_args(%s = %sink_weight) -> (f32) {
      %lse_i = tile.load %lse_part[%token, %i, %h] : !tile.global<[?, ?, ?], f32>
      %lse_log2 = arith.mulf %lse_i, %log2e : f32
      %shifted = arith.subf %lse_log2, %max_safe : f32
      %w = math.exp2 %shifted : f32
      %next = arith.addf %s, %w : f32
      scf.yield %next : f32
    }
    %positive = arith.cmpf ogt, %sum, %zero : f32
    %inverse_raw = arith.divf %one, %sum : f32
    %inverse = arith.select %positive, %inverse_raw, %zero : f32
    %acc = tile.alloc : !tile.frag<[512], f32>
    %part = tile.alloc : !tile.frag<[512], f32>
    %result = tile.alloc : !tile.frag<[512], bf16>
    tile.fill %acc, %zero : !tile.frag<[512], f32>, f32
    scf.for %i = %c0 to %splits step %c1 {
      %lse_i = tile.load %lse_part[%token, %i, %h] : !tile.global<[?, ?, ?], f32>
      %lse_log2 = arith.mulf %lse_i, %log2e : f32
      %shifted = arith.subf %lse_log2, %max_safe : f32
      %w = math.exp2 %shifted : f32
      tile.copy %o_part[%token, %i, %h, %c0] to %part
          : !tile.global<[?, ?, ?, 512], f32> to !tile.frag<[512], f32>
      tile.parallel (%j) in [512] {
        %a = tile.load %acc[%j] : !tile.frag<[512], f32>
        %p = tile.load %part[%j] : !tile.frag<[512], f32>
        // A split without a valid index has w = 0 and o_i = 0.
        %term = arith.mulf %w, %p : f32
        %next = arith.addf %a, %term : f32
        tile.store %next, %acc[%j] : !tile.frag<[512], f32>
      }
    }
    tile.parallel (%j) in [512] {
      %total = tile.load %acc[%j] : !tile.frag<[512], f32>
      %normalized = arith.mulf %total, %inverse : f32
      %rounded = arith.truncf %normalized : f32 to bf16
      %value = scf.if %rope_on -> (bf16) {
        // The tables are read for every column (4 loads each a thread, all
        // in flight together); the last 64 use them.
        %half_j = arith.shrui %j, %c1 : index
        %pair = arith.andi %half_j, %c31 : index
        %c = tile.load %cos[%position, %pair] : !tile.global<[?, 32], f32>
        %s_forward = tile.load %sin[%position, %pair] : !tile.global<[?, 32], f32>
        %rotated_dim = arith.cmpi uge, %j, %c448 : index
        %rotated = scf.if %rotated_dim -> (bf16) {
          %j_partner = arith.xori %j, %c1 : index
          %b = tile.load %acc[%j_partner] : !tile.frag<[512], f32>
          %partner_normalized = arith.mulf %b, %inverse : f32
          %partner = arith.truncf %partner_normalized : f32 to bf16
          %parity = arith.andi %j, %c1 : index
          %odd = arith.cmpi ne, %parity, %c0 : index
          %s = arith.negf %s_forward : f32
          %out = func.call @rope_rotate_element(%rounded, %partner, %odd, %c, %s)
              : (bf16, bf16, i1, f32, f32) -> bf16
          scf.yield %out : bf16
        } else {
          scf.yield %rounded : bf16
        }
        scf.yield %rotated : bf16
      } else {
        scf.yield %rounded : bf16
      }
      tile.store %value, %result[%j] : !tile.frag<[512], bf16>
    }
    tile.copy %result to %o[%token, %h, %c0] : !tile.frag<[512], bf16> to !tile.global<[?, ?, 512], bf16>
    %want_lse = tile.param "lse" : index
    %lse_on = arith.cmpi ne, %want_lse, %c0 : index
    scf.if %lse_on {
      %log2_sum = math.log2 %sum : f32
      %total_log2 = arith.addf %max_safe, %log2_sum : f32
      %lse = arith.mulf %total_log2, %ln2 : f32
      tile.store %lse, %lse_out[%token, %h] : !tile.global<[?, ?], f32>
    }
  }
}
