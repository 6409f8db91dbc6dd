// Dense attention forward (flash attention), bf16, the layout of torch's
// scaled_dot_product_attention: q, k, v, o [B, H, S, D], D in {64, 128};
// o = softmax(q k^T * D^-0.5 [+ causal mask]) v per (b, h). The second
// consumer of sparse_attn's DSL features: row statistics in registers, the
// bf16 probabilities as the register A operand of the next wgmma.
//
// One block per (b, h, 128 queries), two warpgroups splitting the query
// rows (policy full_row: each holds 64 rows of every accumulator, so its
// row statistics and P stay in its registers). Key/value tiles of kt rows
// (64; 128 measured slower here, faster in flash_attn_ws) are pipelined
// (TMA). Causal blocks stop at their last query's key tile and the
// heaviest blocks start first. Only the tiles that reach past S or
// (causal) past the block's first query mask their scores; queries past S
// are not written. With fold_scale = 1 (the operator's choice for a
// positive softmax_scale) the scale enters the exponent as one fma.
// What the operator runs, causal or not: this plain kernel, kt = 64,
// fold_scale for positive scales (0.93-0.95x / 0.86-0.89x torch SDPA causal /
// non-causal at [1, 32, 8192, 128]; docs/performance.md, twenty-second
// session).

// flash_attn_ws: the same kernel with a producer warpgroup issuing the TMA
// boxes (tile.pipelined warp_specialized); GPU-tested, 20-25% slower than
// the plain kernel since the masking and exp2 changes:
// hisa-variant flash_attn_ws replaces "@flash_attn(" with "@flash_attn_ws("
// hisa-variant flash_attn_ws replaces "num_stages = 2 {" with "num_stages = 2 warp_specialized {"
// Its row max and sum combine each thread's values in four register
// chains: they sit on every key tile's critical path there (causal S =
// 8192: 1.687 -> 1.484 ms with the uniform wgmma descriptors); the plain
// kernel is fastest with one (non-causal: 2.96 ms, 2.99 with two, 3.04 with
// four; docs/performance.md, fourteenth session).
// hisa-variant flash_attn_ws replaces "chains = 1" with "chains = 4"

tile.kernel @flash_attn(%q: !tile.global<[?, ?, ?, dim], bf16>,
                        %k: !tile.global<[?, ?, ?, dim], bf16>,
                        %v: !tile.global<[?, ?, ?, dim], bf16>,
                        %o: !tile.global<[?, ?, ?, dim], bf16>,
                        %softmax_scale: f32)
    params {dim = 128, causal = 0, kt = 64, fold_scale = 0} {
  %batch = tile.dim %q, 0 : !tile.global<[?, ?, ?, dim], bf16>
  %heads = tile.dim %q, 1 : !tile.global<[?, ?, ?, dim], bf16>
  %seq = tile.dim %q, 2 : !tile.global<[?, ?, ?, dim], bf16>
  %c127 = arith.constant 127 : index
  %c128 = arith.constant 128 : index
  %seq_round = arith.addi %seq, %c127 : index
  %query_tiles = arith.divui %seq_round, %c128 : index
  %planes = arith.muli %batch, %heads : index
  %blocks = arith.muli %planes, %query_tiles : index
  tile.launch (%block) in (%blocks) threads 256 {
    %q_s = tile.alloc : !tile.shared<[128, dim], bf16>
    %k_s = tile.alloc : !tile.shared<[kt, dim], bf16>
    %v_s = tile.alloc : !tile.shared<[kt, dim], bf16>
    %scores = tile.alloc : !tile.frag<[128, kt], f32>
    %p = tile.alloc : !tile.frag<[128, kt], bf16>
    %acc = tile.alloc : !tile.frag<[128, dim], f32>
    %out = tile.alloc : !tile.frag<[128, dim], bf16>
    %row_max = tile.alloc : !tile.frag<[128], f32>
    %prev_max = tile.alloc : !tile.frag<[128], f32>
    %row_sum = tile.alloc : !tile.frag<[128], f32>
    %tile_sum = tile.alloc : !tile.frag<[128], f32>

    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %kt = tile.param "kt" : index
    %c128_in = arith.constant 128 : index
    %c127_in = arith.constant 127 : index
    %zero = arith.constant 0.0 : f32
    %true = arith.constant true
    %neg_inf = arith.constant 0xFF800000 : f32
    %log2e = arith.constant 1.44269504 : f32
    %seq_in = tile.dim %q, 2 : !tile.global<[?, ?, ?, dim], bf16>
    %heads_in = tile.dim %q, 1 : !tile.global<[?, ?, ?, dim], bf16>
    %seq_round_in = arith.addi %seq_in, %c127_in : index
    %query_tiles_in = arith.divui %seq_round_in, %c128_in : index
    // Heaviest (last) query tiles first: causal blocks do more work there.
    %h = arith.remui %block, %heads_in : index
    %rest = arith.divui %block, %heads_in : index
    %b_count = tile.dim %q, 0 : !tile.global<[?, ?, ?, dim], bf16>
    %b = arith.remui %rest, %b_count : index
    %reversed = arith.divui %rest, %b_count : index
    %last_tile = arith.subi %query_tiles_in, %c1 : index
    %query_tile = arith.subi %last_tile, %reversed : index
    %first_query = arith.muli %query_tile, %c128_in : index
    %causal_param = tile.param "causal" : index
    %is_causal = arith.cmpi ne, %causal_param, %c0 : index
    %scale_log2 = arith.mulf %softmax_scale, %log2e : f32
    // fold_scale = 1 (only for softmax_scale > 0, which keeps the row
    // maximum where it is): scores and row maxima stay unscaled and the
    // scale enters the exponent, exp2(s * c - m * c), one fma a score
    // instead of a multiply and a subtraction (flash attention's form).
    %fold_param = tile.param "fold_scale" : index
    %fold = arith.cmpi ne, %fold_param, %c0 : index
    %one_f = arith.constant 1.0 : f32
    %score_scale = arith.select %fold, %one_f, %scale_log2 : f32
    %exp_scale = arith.select %fold, %scale_log2, %one_f : f32

    // Key tiles: all of them, or (causal) those up to the block's last query.
    %kt_minus_1 = arith.subi %kt, %c1 : index
    %all_keys = arith.addi %seq_in, %kt_minus_1 : index
    %all_tiles = arith.divui %all_keys, %kt : index
    %last_query = arith.addi %first_query, %c127_in : index
    %causal_keys = arith.addi %last_query, %kt : index
    %causal_tiles_raw = arith.divui %causal_keys, %kt : index
    %causal_tiles = arith.minui %causal_tiles_raw, %all_tiles : index
    %key_tiles = arith.select %is_causal, %causal_tiles, %all_tiles : index

    tile.copy %q[%b, %h, %first_query, %c0] to %q_s
        : !tile.global<[?, ?, ?, dim], bf16> to !tile.shared<[128, dim], bf16>
    tile.fill %acc, %zero : !tile.frag<[128, dim], f32>, f32
    tile.fill %row_max, %neg_inf : !tile.frag<[128], f32>, f32
    tile.fill %row_sum, %zero : !tile.frag<[128], f32>, f32

    tile.pipelined %t = %c0 to %key_tiles step %c1 num_stages = 2 {
      %first_key = arith.muli %t, %kt : index
      tile.copy %k[%b, %h, %first_key, %c0] to %k_s
          : !tile.global<[?, ?, ?, dim], bf16> to !tile.shared<[kt, dim], bf16>
      tile.copy %v[%b, %h, %first_key, %c0] to %v_s
          : !tile.global<[?, ?, ?, dim], bf16> to !tile.shared<[kt, dim], bf16>
      tile.gemm %q_s, %k_s, %scores transpose_b clear_accum policy(full_row)
          : !tile.shared<[128, dim], bf16>, !tile.shared<[kt, dim], bf16>
            -> !tile.frag<[128, kt], f32>
      // Scores in log2 units (unscaled with fold_scale); -inf past S and
      // (causal) above the diagonal.
      // Only the tiles that reach past S or (causal) past the block's first
      // query test each score: the others are most of a long sequence's.
      %end_key = arith.addi %first_key, %kt : index
      %past_seq = arith.cmpi ugt, %end_key, %seq_in : index
      %past_first_query = arith.cmpi ugt, %end_key, %first_query : index
      %on_diagonal = arith.andi %past_first_query, %is_causal : i1
      %needs_mask = arith.ori %past_seq, %on_diagonal : i1
      scf.if %needs_mask {
        tile.parallel (%i, %j) in [128, kt] {
          %s = tile.load %scores[%i, %j] : !tile.frag<[128, kt], f32>
          %key = arith.addi %first_key, %j : index
          %query = arith.addi %first_query, %i : index
          %in_seq = arith.cmpi ult, %key, %seq_in : index
          %future = arith.cmpi ugt, %key, %query : index
          %masked_future = arith.andi %future, %is_causal : i1
          %visible_future = arith.xori %masked_future, %true : i1
          %visible = arith.andi %in_seq, %visible_future : i1
          %scaled = arith.mulf %s, %score_scale : f32
          %masked = arith.select %visible, %scaled, %neg_inf : f32
          tile.store %masked, %scores[%i, %j] : !tile.frag<[128, kt], f32>
        }
      } else {
        // (A multiply by 1.0 with fold_scale, which LLVM drops.)
        tile.parallel (%i, %j) in [128, kt] {
          %s = tile.load %scores[%i, %j] : !tile.frag<[128, kt], f32>
          %scaled = arith.mulf %s, %score_scale : f32
          tile.store %scaled, %scores[%i, %j] : !tile.frag<[128, kt], f32>
        }
      }
      tile.parallel (%i) in [128] {
        %m = tile.load %row_max[%i] : !tile.frag<[128], f32>
        tile.store %m, %prev_max[%i] : !tile.frag<[128], f32>
      }
      // One register chain here, four in flash_attn_ws (see the top).
      tile.reduce max %scores to %row_max dim = 1 accumulate chains = 1
          : !tile.frag<[128, kt], f32> to !tile.frag<[128], f32>
      tile.parallel (%i, %j) in [128, kt] {
        %s = tile.load %scores[%i, %j] : !tile.frag<[128, kt], f32>
        %m = tile.load %row_max[%i] : !tile.frag<[128], f32>
        %none = arith.cmpf oeq, %m, %neg_inf : f32
        %m_safe = arith.select %none, %zero, %m : f32
        %s_scaled = arith.mulf %s, %exp_scale : f32
        %m_scaled = arith.mulf %m_safe, %exp_scale : f32
        %shifted = arith.subf %s_scaled, %m_scaled : f32
        %e = math.exp2 %shifted : f32
        tile.store %e, %scores[%i, %j] : !tile.frag<[128, kt], f32>
      }
      tile.reduce sum %scores to %tile_sum dim = 1 chains = 1
          : !tile.frag<[128, kt], f32> to !tile.frag<[128], f32>
      tile.parallel (%i) in [128] {
        %m = tile.load %row_max[%i] : !tile.frag<[128], f32>
        %m_old = tile.load %prev_max[%i] : !tile.frag<[128], f32>
        %l = tile.load %row_sum[%i] : !tile.frag<[128], f32>
        %add = tile.load %tile_sum[%i] : !tile.frag<[128], f32>
        %none = arith.cmpf oeq, %m, %neg_inf : f32
        %m_safe = arith.select %none, %zero, %m : f32
        %delta_raw = arith.subf %m_old, %m_safe : f32
        %delta = arith.mulf %delta_raw, %exp_scale : f32
        %alpha = math.exp2 %delta : f32
        %rescaled = arith.mulf %l, %alpha : f32
        %l_new = arith.addf %rescaled, %add : f32
        tile.store %l_new, %row_sum[%i] : !tile.frag<[128], f32>
        tile.store %alpha, %prev_max[%i] : !tile.frag<[128], f32>
      }
      tile.parallel (%i, %j) in [128, dim] {
        %a = tile.load %acc[%i, %j] : !tile.frag<[128, dim], f32>
        %alpha = tile.load %prev_max[%i] : !tile.frag<[128], f32>
        %scaled = arith.mulf %a, %alpha : f32
        tile.store %scaled, %acc[%i, %j] : !tile.frag<[128, dim], f32>
      }
      // P in registers: the bf16 probabilities are the A operand of O += P V.
      tile.cast %scores to %p : !tile.frag<[128, kt], f32> to !tile.frag<[128, kt], bf16>
      tile.gemm %p, %v_s, %acc policy(full_row)
          : !tile.frag<[128, kt], bf16>, !tile.shared<[kt, dim], bf16>
            -> !tile.frag<[128, dim], f32>
    }

    tile.parallel (%i) in [128] {
      %l = tile.load %row_sum[%i] : !tile.frag<[128], f32>
      %one = arith.constant 1.0 : f32
      // Every query row sees at least key 0, so l > 0 for real rows; rows
      // past S (not written) may have l = 0.
      %positive = arith.cmpf ogt, %l, %zero : f32
      %inverse_raw = arith.divf %one, %l : f32
      %inverse = arith.select %positive, %inverse_raw, %zero : f32
      tile.store %inverse, %tile_sum[%i] : !tile.frag<[128], f32>
    }
    tile.parallel (%i, %j) in [128, dim] {
      %a = tile.load %acc[%i, %j] : !tile.frag<[128, dim], f32>
      %inverse = tile.load %tile_sum[%i] : !tile.frag<[128], f32>
      %normalized = arith.mulf %a, %inverse : f32
      %rounded = arith.truncf %normalized : f32 to bf16
      tile.store %rounded, %out[%i, %j] : !tile.frag<[128, dim], bf16>
    }
    tile.copy %out to %o[%b, %h, %first_query, %c0]
        : !tile.frag<[128, dim], bf16> to !tile.global<[?, ?, ?, dim], bf16>
  }
}
