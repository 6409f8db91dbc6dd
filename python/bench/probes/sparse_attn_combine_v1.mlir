// The sixteenth session's sparse_attn_combine (weights recomputed per column
// and split), kept for probes/combine_ab.py.
// The combine of split sparse attention (decode with few tokens:
// sparse_attn with `splits` > 1 leaves, per token t, split i and head h, the
// split's output o_i normalized by its own sum and lse_i = log of that sum
// (natural units, -inf when the split saw no valid index), without the sink):
//   M = max(max_i lse_i, sink_h),  w_i = exp(lse_i - M),
//   D = sum_i w_i + exp(sink_h - M),
//   o[t, h] = sum_i w_i o_i / D,   lse[t, h] = M + log D,
// which is what one block over all the indices computes (KERNELS.md
// "DeepSeek-V4 sparse attention"). D = 0 (nothing valid and a sink of -inf)
// gives o = 0. One block per (token, head); the weights are recomputed by
// every thread (a few splits) and each thread sums 4 of the 512 columns.

tile.kernel @sparse_attn_combine(%o_part: !tile.global<[?, ?, ?, 512], f32>,
                                 %lse_part: !tile.global<[?, ?, ?], f32>,
                                 %attn_sink: !tile.global<[?], f32>,
                                 %o: !tile.global<[?, ?, 512], bf16>,
                                 %lse_out: !tile.global<[?, ?], f32>)
    params {lse = 0} {
  %tokens = tile.dim %o_part, 0 : !tile.global<[?, ?, ?, 512], f32>
  %heads = tile.dim %o_part, 2 : !tile.global<[?, ?, ?, 512], f32>
  %blocks = arith.muli %tokens, %heads : index
  tile.launch (%block) in (%blocks) threads 128 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %neg_inf = arith.constant 0xFF800000 : f32
    %log2e = arith.constant 1.44269504 : f32
    %ln2 = arith.constant 0.693147182 : f32
    %heads_in = tile.dim %o_part, 2 : !tile.global<[?, ?, ?, 512], f32>
    %splits = tile.dim %o_part, 1 : !tile.global<[?, ?, ?, 512], f32>
    %token = arith.divui %block, %heads_in : index
    %h = arith.remui %block, %heads_in : index
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
    tile.parallel (%j) in [512] {
      %total = scf.for %i = %c0 to %splits step %c1 iter_args(%acc = %zero) -> (f32) {
        %lse_i = tile.load %lse_part[%token, %i, %h] : !tile.global<[?, ?, ?], f32>
        %lse_log2 = arith.mulf %lse_i, %log2e : f32
        %shifted = arith.subf %lse_log2, %max_safe : f32
        %w = math.exp2 %shifted : f32
        %part = tile.load %o_part[%token, %i, %h, %j] : !tile.global<[?, ?, ?, 512], f32>
        // A split without a valid index has w = 0 and o_i = 0.
        %term = arith.mulf %w, %part : f32
        %next = arith.addf %acc, %term : f32
        scf.yield %next : f32
      }
      %normalized = arith.mulf %total, %inverse : f32
      %rounded = arith.truncf %normalized : f32 to bf16
      tile.store %rounded, %o[%token, %h, %j] : !tile.global<[?, ?, 512], bf16>
    }
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
