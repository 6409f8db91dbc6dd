// Probe (forty-eighth session; issue 11's decode): sparse_attn_ws in
// FlashAttention-3's order. overlap_gemm issues tile t + 1's scores
// (S = Q K^T) before tile t's softmax, row statistics and P V run, so the
// tensor cores work through the softmax chain that decode's tiles wait on
// (docs/performance.md, forty-seventh section: H = 128 is bound by that
// chain, and the H200's H = 64 likely too). Tile t's rows stay until its
// P V is done while tile t + 1's are read and tile t + 2's are gathered:
// three stages, which fit beside Q's 64 KiB only as 32-row tiles
// (key_half = 16; 48 rows would make P's rows 96 bytes, no wgmma layout).
// Measured by probes/sparse_attn_wg_ab.py --kernel sparse_attn_ws --decode.
// DeepSeek-V4 sparse attention, prefill and decode (KERNELS.md "DeepSeek-V4
// sparse attention"): for each token t = (b, s) and head h,
//   s_j = softmax_scale * dot(q[t, h], kv[b, idx[t, j]])   over its K indices,
//   o[t, h] = sum_j exp(s_j - m) kv[b, idx_j] / (sum_j exp(s_j - m)
//                                                 + exp(attn_sink[h] - m)),
// one shared KV head serving as key and value (D = 512); index -1 (and any
// index outside [0, Nkv)) contributes nothing; a token whose indices are all
// invalid gets o = 0 (never NaN). With `lse`, lse[t, h] = log of the
// denominator's full sum (sink included) in natural units, so a caller can
// merge this attention with another.
//
// One block per (token, 64 heads): H = 128 takes two blocks, H < 64 leaves
// rows of the tile past H (they read zeros and are not written). Two
// warpgroups split every accumulator's columns (policy full_col): the
// [64, 512] f32 output accumulator is 128 registers a thread.
//
//   1. The token's K indices, made absolute rows of kv [B*Nkv, 512]
//      (b*Nkv + idx; -1 for padding past K and for indices outside
//      [0, Nkv)), and the 64 heads' queries, in shared memory.
//   2. Per tile of 2 * key_half indices (64 by default; topk_pad must be a
//      multiple; pipelined: the next tiles' rows are gathered while this one
//      computes; -1 rows read zeros). (32-row tiles in 4 stages measured
//      1.05-1.25x slower at decode, 16-row tiles in 8 stages 1.3-1.8x: more
//      rows in flight do not pay; docs/performance.md, forty-sixth session.)
//      S = Q K^T (wgmma, [64 heads, 2 * key_half keys]), in log2 units, -inf
//      where the index is invalid; online softmax with the row maximum and
//      row sum in registers; P = exp2(S - m) in bf16 through shared memory
//      (each warpgroup computes half of S's columns but needs all of P);
//      O = O * exp2(m_old - m) + P V.
//   3. O / (l + exp2(sink*log2(e) - m)) in bf16; lse if asked. With rope
//      = 1 (the V4 layer), the stored output's last 64 dims are then
//      rotated back by RoPE at the token's position, in registers before
//      the store (lib/rope.mlir: rope_inverse_column on each element; a
//      thread holds both of a pair; tables rope_cos / rope_sin [positions, 32],
//      rope_base [B]: the bits of a separate v4_rope with inverse = 1).
//      Split blocks leave that to sparse_attn_combine.
//   4. With cluster_blocks = 2 (and splits = 2), the two halves of a token's
//      tiles run as one thread-block cluster and merge without a second
//      kernel: each block puts its row maxima and sums and its [64, 512]
//      f32 accumulator in its own shared memory, the blocks meet at a
//      cluster barrier, and block r finishes output columns [256r, 256r +
//      256) (and rank 0 the lse) from its values and the peer's, read
//      through distributed shared memory (tile.load ... peer); a second
//      cluster barrier keeps each block's shared memory until its peer has
//      read it.

// sparse_attn_ws: the same kernel with a producer warpgroup issuing the
// gathers (tile.pipelined warp_specialized); GPU-tested, and what the
// operator runs when the indices are not split over blocks (measured
// faster; split decode keeps the plain kernel):
// hisa-variant sparse_attn_ws replaces "@sparse_attn(" with "@sparse_attn_ws("
// hisa-variant sparse_attn_ws replaces "num_stages = 2 {" with "num_stages = 3 warp_specialized overlap_gemm {"

func.func private @norm_rope_query_heads(!tile.shared<[64, 512], bf16>,
                                         !tile.frag<[64, 256], bf16>,
                                         !tile.frag<[64, 256], f32>,
                                         !tile.shared<[64], f32>,
                                         !tile.shared<[32], f32>,
                                         !tile.shared<[32], f32>, f32)
func.func private @rope_position(!tile.global<[?], i32>, !tile.global<[?, 32], f32>,
                                 index, index) -> index
func.func private @rope_inverse_column(bf16, bf16, index, i1, !tile.shared<[32], f32>,
                                       !tile.shared<[32], f32>) -> bf16

tile.kernel @sparse_attn(%q: !tile.global<[?, ?, 512], bf16>,
                         %kv: !tile.global<[?, 512], bf16>,
                         %attn_sink: !tile.global<[?], f32>,
                         %topk_idxs: !tile.global<[?, ?], i32>,
                         %o: !tile.global<[?, ?, 512], bf16>,
                         %lse_out: !tile.global<[?, ?], f32>,
                         %o_part: !tile.global<[?, ?, ?, 512], f32>,
                         %lse_part: !tile.global<[?, ?, ?], f32>,
                         %rope_cos: !tile.global<[?, 32], f32>,
                         %rope_sin: !tile.global<[?, 32], f32>,
                         %rope_base: !tile.global<[?], i32>,
                         %tokens_per_batch: index,
                         %nkv: index,
                         %softmax_scale: f32,
                         %q_eps: f32)
    params {topk_pad = 640, head_blocks = 1, lse = 0, splits = 1,
            partial_sums = 0, rope = 0, q_norm = 0, cluster_blocks = 1,
            key_half = 16} {
  %tokens = tile.dim %q, 0 : !tile.global<[?, ?, 512], bf16>
  %head_blocks = tile.param "head_blocks" : index
  %splits = tile.param "splits" : index
  %token_blocks = arith.muli %tokens, %head_blocks : index
  %blocks = arith.muli %token_blocks, %splits : index
  tile.launch (%block) in (%blocks) threads 256 cluster "cluster_blocks" {
    %q_s = tile.alloc : !tile.shared<[64, 512], bf16>
    %kv_s = tile.alloc : !tile.shared<[2*key_half, 512], bf16>
    %staging = tile.alloc : !tile.shared<[64, 512], bf16>
    %p_s = tile.alloc : !tile.shared<[64, 2*key_half], bf16>
    %rows = tile.alloc : !tile.shared<[topk_pad], i32>
    // The token's indices as given: converted into %rows, not in place (a
    // [64] loop may run on the row statistics' layout, which gives each
    // element to several threads; copies of an in-place update would race).
    %given_rows = tile.alloc : !tile.shared<[topk_pad], i32>
    %scores = tile.alloc : !tile.frag<[64, 2*key_half], f32>
    %p = tile.alloc : !tile.frag<[64, 2*key_half], bf16>
    %acc = tile.alloc : !tile.frag<[64, 512], f32>
    %out = tile.alloc : !tile.frag<[64, 512], bf16>
    // Row statistics (log2 units): running maximum, the previous one, the
    // running sum of exponentials.
    %row_max = tile.alloc : !tile.frag<[64], f32>
    %prev_max = tile.alloc : !tile.frag<[64], f32>
    %row_sum = tile.alloc : !tile.frag<[64], f32>
    %tile_sum = tile.alloc : !tile.frag<[64], f32>
    %tile_max = tile.alloc : !tile.frag<[64], f32>
    // With `partial_sums`: each warpgroup's running sum over its own score
    // columns ([64 heads, 2 warpgroups]), combined once after the loop
    // instead of through shared memory at every tile.
    %row_sum_parts = tile.alloc : !tile.frag<[64, 2], f32>
    %tile_parts = tile.alloc : !tile.frag<[64, 2], f32>
    // With `q_norm`: the queries' norm and RoPE pass through these, half a
    // head at a time, before the loop.
    %q_half = tile.alloc : !tile.frag<[64, 256], bf16>
    %q_squares = tile.alloc : !tile.frag<[64, 256], f32>
    %q_sums = tile.alloc : !tile.shared<[64], f32>
    // With rope: the token's cos and sin rows, read once (a global load per
    // element would wait behind its own bounds check).
    %cos_s = tile.alloc : !tile.shared<[32], f32>
    %sin_s = tile.alloc : !tile.shared<[32], f32>
    // With `cluster_blocks = 2`: the pair's exchange (step 4).
    %max_s = tile.alloc : !tile.shared<[64], f32>
    %sum_s = tile.alloc : !tile.shared<[64], f32>
    // (Rows padded to 520 floats: the accumulator's 8 rows per warp store
    // to different banks.)
    %stage_s = tile.alloc : !tile.shared<[64, 520], f32>
    %own_scale_s = tile.alloc : !tile.shared<[64], f32>
    %peer_scale_s = tile.alloc : !tile.shared<[64], f32>
    %merged = tile.alloc : !tile.frag<[64, 256], f32>
    %out_half = tile.alloc : !tile.frag<[64, 256], bf16>

    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %neg_inf = arith.constant 0xFF800000 : f32
    %log2e = arith.constant 1.44269504 : f32
    %one = arith.constant 1.0 : f32
    %true = arith.constant true
    // The running maximum moves only when a tile's exceeds it by more than
    // this (log2 units): P stays at most 2^8 (exact in bf16's exponent range,
    // far from f32's overflow) and most tiles need no rescale of O
    // (FlashAttention-4's lazy rescaling).
    %max_headroom = arith.constant 8.0 : f32
    %invalid = arith.constant -1 : i32
    %c0_i32 = arith.constant 0 : i32
    %head_blocks_in = tile.param "head_blocks" : index
    %splits_in = tile.param "splits" : index
    %split = arith.remui %block, %splits_in : index
    %token_block = arith.divui %block, %splits_in : index
    %token = arith.divui %token_block, %head_blocks_in : index
    %head_block = arith.remui %token_block, %head_blocks_in : index
    %first_head = arith.muli %head_block, %c64 : index
    %heads = tile.dim %q, 1 : !tile.global<[?, ?, 512], bf16>
    %k = tile.dim %topk_idxs, 1 : !tile.global<[?, ?], i32>
    %batch = arith.divui %token, %tokens_per_batch : index
    %row_base = arith.muli %batch, %nkv : index
    %row_base_i32 = arith.index_cast %row_base : index to i32
    %nkv_i32 = arith.index_cast %nkv : index to i32
    %k_i32 = arith.index_cast %k : index to i32
    %scale_log2 = arith.mulf %softmax_scale, %log2e : f32
    // The token's RoPE position, read first: its loads then overlap the
    // prologue's instead of delaying the query's rotation and the epilogue.
    %rope_param = tile.param "rope" : index
    %rope_on = arith.cmpi ne, %rope_param, %c0 : index
    %q_norm_param = tile.param "q_norm" : index
    %q_norm_on = arith.cmpi ne, %q_norm_param, %c0 : index
    %uses_rope = arith.ori %rope_on, %q_norm_on : i1
    %position = scf.if %uses_rope -> (index) {
      %at = func.call @rope_position(%rope_base, %rope_cos, %token, %tokens_per_batch)
          : (!tile.global<[?], i32>, !tile.global<[?, 32], f32>, index, index) -> index
      scf.yield %at : index
    } else {
      scf.yield %c0 : index
    }

    // 1. Indices (absolute kv rows, -1 where invalid) and queries.
    tile.copy %topk_idxs[%token, %c0] to %given_rows
        : !tile.global<[?, ?], i32> to !tile.shared<[topk_pad], i32>
    tile.parallel (%j) in [topk_pad] {
      %index = tile.load %given_rows[%j] : !tile.shared<[topk_pad], i32>
      %j_i32 = arith.index_cast %j : index to i32
      %given = arith.cmpi slt, %j_i32, %k_i32 : i32
      %non_negative = arith.cmpi sge, %index, %c0_i32 : i32
      %in_cache = arith.cmpi slt, %index, %nkv_i32 : i32
      %valid_range = arith.andi %non_negative, %in_cache : i1
      %valid = arith.andi %valid_range, %given : i1
      %absolute = arith.addi %index, %row_base_i32 : i32
      %row = arith.select %valid, %absolute, %invalid : i32
      tile.store %row, %rows[%j] : !tile.shared<[topk_pad], i32>
    }
    tile.copy %q[%token, %first_head, %c0] to %q_s
        : !tile.global<[?, ?, 512], bf16> to !tile.shared<[64, 512], bf16>
    scf.if %uses_rope {
      tile.copy %rope_cos[%position, %c0] to %cos_s
          : !tile.global<[?, 32], f32> to !tile.shared<[32], f32>
      tile.copy %rope_sin[%position, %c0] to %sin_s
          : !tile.global<[?, 32], f32> to !tile.shared<[32], f32>
    }
    scf.if %q_norm_on {
      func.call @norm_rope_query_heads(%q_s, %q_half, %q_squares, %q_sums, %cos_s,
                                       %sin_s, %q_eps)
          : (!tile.shared<[64, 512], bf16>, !tile.frag<[64, 256], bf16>,
             !tile.frag<[64, 256], f32>, !tile.shared<[64], f32>, !tile.shared<[32], f32>,
             !tile.shared<[32], f32>, f32) -> ()
    }
    tile.fill %acc, %zero : !tile.frag<[64, 512], f32>, f32
    tile.fill %row_max, %neg_inf : !tile.frag<[64], f32>, f32
    tile.fill %row_sum, %zero : !tile.frag<[64], f32>, f32
    tile.fill %row_sum_parts, %zero : !tile.frag<[64, 2], f32>, f32
    %partial_sums_param = tile.param "partial_sums" : index
    %per_warpgroup = arith.cmpi ne, %partial_sums_param, %c0 : index

    // 2. Tiles of 2 * key_half indices (64 by default; each warpgroup
    //    scores key_half of them).
    %pad = tile.param "topk_pad" : index
    %key_half = tile.param "key_half" : index
    %c2 = arith.constant 2 : index
    %key_rows = arith.muli %key_half, %c2 : index
    %tiles = arith.divui %pad, %key_rows : index
    // This block's share of the tiles: all of them, or (split decode) the
    // split's contiguous range.
    %tiles_round = arith.addi %tiles, %splits_in : index
    %tiles_round_down = arith.subi %tiles_round, %c1 : index
    %per_split = arith.divui %tiles_round_down, %splits_in : index
    %tile_begin_raw = arith.muli %split, %per_split : index
    %tile_begin = arith.minui %tile_begin_raw, %tiles : index
    %tile_end_raw = arith.addi %tile_begin, %per_split : index
    %tile_end = arith.minui %tile_end_raw, %tiles : index
    tile.pipelined %t = %tile_begin to %tile_end step %c1 num_stages = 2 {
      %first = arith.muli %t, %key_rows : index
      tile.copy %kv rows(%rows[%first] : !tile.shared<[topk_pad], i32>) to %kv_s
          : !tile.global<[?, 512], bf16> to !tile.shared<[2*key_half, 512], bf16>
      tile.gemm %q_s, %kv_s, %scores transpose_b clear_accum policy(full_col)
          : !tile.shared<[64, 512], bf16>, !tile.shared<[2*key_half, 512], bf16>
            -> !tile.frag<[64, 2*key_half], f32>
      // Scores in log2 units; -inf for invalid indices.
      tile.parallel (%i, %j) in [64, 2*key_half] {
        %s = tile.load %scores[%i, %j] : !tile.frag<[64, 2*key_half], f32>
        %at = arith.addi %first, %j : index
        %row = tile.load %rows[%at] : !tile.shared<[topk_pad], i32>
        %valid = arith.cmpi sge, %row, %c0_i32 : i32
        %scaled = arith.mulf %s, %scale_log2 : f32
        %masked = arith.select %valid, %scaled, %neg_inf : f32
        tile.store %masked, %scores[%i, %j] : !tile.frag<[64, 2*key_half], f32>
      }
      tile.reduce max %scores to %tile_max dim = 1
          : !tile.frag<[64, 2*key_half], f32> to !tile.frag<[64], f32>
      // The maximum grows only by more than %max_headroom (from -inf: any
      // finite value); otherwise the factor below is exactly 1.
      tile.parallel (%i) in [64] {
        %old = tile.load %row_max[%i] : !tile.frag<[64], f32>
        %mine = tile.load %tile_max[%i] : !tile.frag<[64], f32>
        %candidate = arith.maximumf %old, %mine : f32
        %gap = arith.subf %candidate, %old : f32
        %grow = arith.cmpf ogt, %gap, %max_headroom : f32
        %new = arith.select %grow, %candidate, %old : f32
        tile.store %new, %row_max[%i] : !tile.frag<[64], f32>
        tile.store %old, %prev_max[%i] : !tile.frag<[64], f32>
      }
      // P = exp2(S - m); a maximum of -inf (nothing valid yet) counts as 0.
      tile.parallel (%i, %j) in [64, 2*key_half] {
        %s = tile.load %scores[%i, %j] : !tile.frag<[64, 2*key_half], f32>
        %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
        %none = arith.cmpf oeq, %m, %neg_inf : f32
        %m_safe = arith.select %none, %zero, %m : f32
        %shifted = arith.subf %s, %m_safe : f32
        %e = math.exp2 %shifted : f32
        tile.store %e, %scores[%i, %j] : !tile.frag<[64, 2*key_half], f32>
      }
      scf.if %per_warpgroup {
        // Each warpgroup sums its own 32 columns (no cross-warp step).
        %columns = tile.view %scores
            : !tile.frag<[64, 2*key_half], f32> to !tile.frag<[64, 2, key_half], f32>
        tile.reduce sum %columns to %tile_parts dim = 2
            : !tile.frag<[64, 2, key_half], f32> to !tile.frag<[64, 2], f32>
        tile.parallel (%i) in [64] {
          %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
          %m_old = tile.load %prev_max[%i] : !tile.frag<[64], f32>
          %none = arith.cmpf oeq, %m, %neg_inf : f32
          %m_safe = arith.select %none, %zero, %m : f32
          %delta = arith.subf %m_old, %m_safe : f32
          %alpha = math.exp2 %delta : f32
          // prev_max now holds the factor that rescales the output.
          tile.store %alpha, %prev_max[%i] : !tile.frag<[64], f32>
        }
        tile.parallel (%i, %w) in [64, 2] {
          %l = tile.load %row_sum_parts[%i, %w] : !tile.frag<[64, 2], f32>
          %add = tile.load %tile_parts[%i, %w] : !tile.frag<[64, 2], f32>
          %alpha = tile.load %prev_max[%i] : !tile.frag<[64], f32>
          %rescaled = arith.mulf %l, %alpha : f32
          %l_new = arith.addf %rescaled, %add : f32
          tile.store %l_new, %row_sum_parts[%i, %w] : !tile.frag<[64, 2], f32>
        }
      } else {
        tile.reduce sum %scores to %tile_sum dim = 1
            : !tile.frag<[64, 2*key_half], f32> to !tile.frag<[64], f32>
        tile.parallel (%i) in [64] {
          %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
          %m_old = tile.load %prev_max[%i] : !tile.frag<[64], f32>
          %l = tile.load %row_sum[%i] : !tile.frag<[64], f32>
          %add = tile.load %tile_sum[%i] : !tile.frag<[64], f32>
          %none = arith.cmpf oeq, %m, %neg_inf : f32
          %m_safe = arith.select %none, %zero, %m : f32
          %delta = arith.subf %m_old, %m_safe : f32
          %alpha = math.exp2 %delta : f32
          %rescaled = arith.mulf %l, %alpha : f32
          %l_new = arith.addf %rescaled, %add : f32
          tile.store %l_new, %row_sum[%i] : !tile.frag<[64], f32>
          // prev_max now holds the factor that rescales the output.
          tile.store %alpha, %prev_max[%i] : !tile.frag<[64], f32>
        }
      }
      // O is rescaled only by the warps one of whose rows' maximum moved
      // (128 multiplies a thread saved on most tiles).
      %kept = tile.all_of %prev_max : !tile.frag<[64], f32> {
      ^bb0(%alpha: f32):
        %unit = arith.cmpf oeq, %alpha, %one : f32
        tile.yield %unit : i1
      }
      %moved = arith.xori %kept, %true : i1
      scf.if %moved {
        tile.parallel (%i, %j) in [64, 512] {
          %a = tile.load %acc[%i, %j] : !tile.frag<[64, 512], f32>
          %alpha = tile.load %prev_max[%i] : !tile.frag<[64], f32>
          %scaled = arith.mulf %a, %alpha : f32
          tile.store %scaled, %acc[%i, %j] : !tile.frag<[64, 512], f32>
        }
      }
      tile.cast %scores to %p : !tile.frag<[64, 2*key_half], f32> to !tile.frag<[64, 2*key_half], bf16>
      tile.copy %p to %p_s : !tile.frag<[64, 2*key_half], bf16> to !tile.shared<[64, 2*key_half], bf16>
      tile.gemm %p_s, %kv_s, %acc policy(full_col)
          : !tile.shared<[64, 2*key_half], bf16>, !tile.shared<[2*key_half, 512], bf16>
            -> !tile.frag<[64, 512], f32>
    }

    // The heads' sinks (log2 units) into registers first: the global load
    // is then in flight during the sums' reduction (or the cluster
    // barrier) instead of waiting behind it. (prev_max is free now.)
    tile.parallel (%i) in [64] {
      %h = arith.addi %first_head, %i : index
      %real = arith.cmpi ult, %h, %heads : index
      %h_safe = arith.select %real, %h, %c0 : index
      %sink = tile.load %attn_sink[%h_safe] : !tile.global<[?], f32>
      %sink_log2 = arith.mulf %sink, %log2e : f32
      tile.store %sink_log2, %prev_max[%i] : !tile.frag<[64], f32>
    }
    scf.if %per_warpgroup {
      tile.reduce sum %row_sum_parts to %row_sum dim = 1
          : !tile.frag<[64, 2], f32> to !tile.frag<[64], f32>
    }

    // 3. One block per token and heads: normalize by the sum and the sink
    //    (a zero denominator, no valid index and a sink of -inf, gives 0);
    //    lse. Split decode: the split's output normalized by its own sum,
    //    and its lse without the sink; sparse_attn_combine merges them.
    %splits_param = tile.param "splits" : index
    %whole = arith.cmpi eq, %splits_param, %c1 : index
    scf.if %whole {
      tile.parallel (%i) in [64] {
        %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
        %l = tile.load %row_sum[%i] : !tile.frag<[64], f32>
        %none = arith.cmpf oeq, %m, %neg_inf : f32
        %m_safe = arith.select %none, %zero, %m : f32
        %h = arith.addi %first_head, %i : index
        %real = arith.cmpi ult, %h, %heads : index
        %sink_log2 = tile.load %prev_max[%i] : !tile.frag<[64], f32>
        // Terms relative to the larger of the maximum and the sink: a sink
        // far above every score (exp2 of the gap past f32's range) gives o
        // = 0 and lse = the sink, not +inf. Where the maximum is the larger
        // (scale 1), the same operations as without the sink's reference.
        %reference = arith.maximumf %m_safe, %sink_log2 : f32
        %m_shift = arith.subf %m_safe, %reference : f32
        %scale = math.exp2 %m_shift : f32
        %l_scaled = arith.mulf %l, %scale : f32
        // (0 where the sink is the reference: also for a sink of +inf.)
        %sink_is_reference = arith.cmpf oeq, %sink_log2, %reference : f32
        %sink_gap = arith.subf %sink_log2, %reference : f32
        %sink_shifted = arith.select %sink_is_reference, %zero, %sink_gap : f32
        %sink_term = math.exp2 %sink_shifted : f32
        %denominator = arith.addf %l_scaled, %sink_term : f32
        %positive = arith.cmpf ogt, %denominator, %zero : f32
        %inverse_raw = arith.divf %scale, %denominator : f32
        %inverse = arith.select %positive, %inverse_raw, %zero : f32
        tile.store %inverse, %tile_sum[%i] : !tile.frag<[64], f32>
        %want_lse = tile.param "lse" : index
        %lse_on = arith.cmpi ne, %want_lse, %c0 : index
        %write_lse = arith.andi %lse_on, %real : i1
        scf.if %write_lse {
          %log2_sum = math.log2 %denominator : f32
          %total_log2 = arith.addf %reference, %log2_sum : f32
          %ln2 = arith.constant 0.693147182 : f32
          %lse = arith.mulf %total_log2, %ln2 : f32
          tile.store %lse, %lse_out[%token, %h] : !tile.global<[?, ?], f32>
        }
      }
      // With rope, the last 64 dims are rotated back in registers: each
      // thread holds both elements of a pair (columns 2p, 2p + 1).
      tile.parallel (%i, %j) in [64, 512] {
        %a = tile.load %acc[%i, %j] : !tile.frag<[64, 512], f32>
        %inverse = tile.load %tile_sum[%i] : !tile.frag<[64], f32>
        %normalized = arith.mulf %a, %inverse : f32
        %rounded = arith.truncf %normalized : f32 to bf16
        %j_partner = arith.xori %j, %c1 : index
        %b = tile.load %acc[%i, %j_partner] : !tile.frag<[64, 512], f32>
        %partner_normalized = arith.mulf %b, %inverse : f32
        %partner = arith.truncf %partner_normalized : f32 to bf16
        %result = func.call @rope_inverse_column(%rounded, %partner, %j, %rope_on, %cos_s,
                                                 %sin_s)
            : (bf16, bf16, index, i1, !tile.shared<[32], f32>, !tile.shared<[32], f32>) -> bf16
        tile.store %result, %out[%i, %j] : !tile.frag<[64, 512], bf16>
      }
      // Through shared memory (the plan puts the staging tile where the
      // loop's buffers were): 16-byte global stores instead of 4-byte ones,
      // whose address registers ptxas reused store after store (each waited
      // for the previous one): decode 12-14% faster (twenty-fourth session).
      tile.copy %out to %staging
          : !tile.frag<[64, 512], bf16> to !tile.shared<[64, 512], bf16>
      tile.copy %staging to %o[%token, %first_head, %c0]
          : !tile.shared<[64, 512], bf16> to !tile.global<[?, ?, 512], bf16>
    } else {
      %cluster_param = tile.param "cluster_blocks" : index
      %c2_blocks = arith.constant 2 : index
      %in_pair = arith.cmpi eq, %cluster_param, %c2_blocks : index
      scf.if %in_pair {
        // The two halves of the token's tiles ran in one cluster: each block
        // publishes its row statistics and unnormalized output in its own
        // shared memory, then finishes half of the output columns (rank r:
        // [256r, 256r + 256)) from its own values and the peer's.
        %rank = tile.cluster_rank : index
        %other = arith.subi %c1, %rank : index
        tile.copy %row_max to %max_s : !tile.frag<[64], f32> to !tile.shared<[64], f32>
        tile.copy %row_sum to %sum_s : !tile.frag<[64], f32> to !tile.shared<[64], f32>
        tile.copy %acc to %stage_s[%c0, %c0] : !tile.frag<[64, 512], f32> to !tile.shared<[64, 520], f32>
        tile.cluster_barrier
        %want_lse = tile.param "lse" : index
        %lse_on = arith.cmpi ne, %want_lse, %c0 : index
        %first_rank = arith.cmpi eq, %rank, %c0 : index
        %rank_writes_lse = arith.andi %lse_on, %first_rank : i1
        tile.parallel (%i) in [64] {
          %m_own = tile.load %row_max[%i] : !tile.frag<[64], f32>
          %l_own = tile.load %row_sum[%i] : !tile.frag<[64], f32>
          %m_peer = tile.load %max_s[%i] peer %other : !tile.shared<[64], f32>
          %l_peer = tile.load %sum_s[%i] peer %other : !tile.shared<[64], f32>
          %m = arith.maximumf %m_own, %m_peer : f32
          %none = arith.cmpf oeq, %m, %neg_inf : f32
          %m_safe = arith.select %none, %zero, %m : f32
          %sink_log2 = tile.load %prev_max[%i] : !tile.frag<[64], f32>
          // Relative to the larger of the maximum and the sink (as the
          // whole path: a sink far above the scores gives lse = the sink).
          %reference = arith.maximumf %m_safe, %sink_log2 : f32
          // A half with nothing valid has m = -inf: weight exp2(-inf) = 0.
          %own_shift = arith.subf %m_own, %reference : f32
          %w_own = math.exp2 %own_shift : f32
          %peer_shift = arith.subf %m_peer, %reference : f32
          %w_peer = math.exp2 %peer_shift : f32
          %h = arith.addi %first_head, %i : index
          %real = arith.cmpi ult, %h, %heads : index
          %sink_is_reference = arith.cmpf oeq, %sink_log2, %reference : f32
          %sink_gap = arith.subf %sink_log2, %reference : f32
          %sink_shifted = arith.select %sink_is_reference, %zero, %sink_gap : f32
          %sink_term = math.exp2 %sink_shifted : f32
          %l_own_w = arith.mulf %l_own, %w_own : f32
          %l_peer_w = arith.mulf %l_peer, %w_peer : f32
          %l = arith.addf %l_own_w, %l_peer_w : f32
          %denominator = arith.addf %l, %sink_term : f32
          %positive = arith.cmpf ogt, %denominator, %zero : f32
          %inverse_raw = arith.divf %one, %denominator : f32
          %inverse = arith.select %positive, %inverse_raw, %zero : f32
          // (0, not NaN * 0, where nothing counts: a NaN sink.)
          %own_scale_raw = arith.mulf %w_own, %inverse : f32
          %peer_scale_raw = arith.mulf %w_peer, %inverse : f32
          %own_scale = arith.select %positive, %own_scale_raw, %zero : f32
          %peer_scale = arith.select %positive, %peer_scale_raw, %zero : f32
          tile.store %own_scale, %own_scale_s[%i] : !tile.shared<[64], f32>
          tile.store %peer_scale, %peer_scale_s[%i] : !tile.shared<[64], f32>
          %write_lse = arith.andi %rank_writes_lse, %real : i1
          scf.if %write_lse {
            %log2_sum = math.log2 %denominator : f32
            %total_log2 = arith.addf %reference, %log2_sum : f32
            %ln2 = arith.constant 0.693147182 : f32
            %lse = arith.mulf %total_log2, %ln2 : f32
            tile.store %lse, %lse_out[%token, %h] : !tile.global<[?, ?], f32>
          }
        }
        %c256 = arith.constant 256 : index
        %first_column = arith.muli %rank, %c256 : index
        tile.parallel (%i, %c) in [64, 256] {
          %j = arith.addi %first_column, %c : index
          %a_own = tile.load %stage_s[%i, %j] : !tile.shared<[64, 520], f32>
          %a_peer = tile.load %stage_s[%i, %j] peer %other : !tile.shared<[64, 520], f32>
          %s_own = tile.load %own_scale_s[%i] : !tile.shared<[64], f32>
          %s_peer = tile.load %peer_scale_s[%i] : !tile.shared<[64], f32>
          %own_part = arith.mulf %a_own, %s_own : f32
          %peer_part = arith.mulf %a_peer, %s_peer : f32
          %sum = arith.addf %own_part, %peer_part : f32
          tile.store %sum, %merged[%i, %c] : !tile.frag<[64, 256], f32>
        }
        // With rope, the last 64 dims (rank 1's columns [192, 256)) are
        // rotated back: both elements of a pair are in one thread.
        tile.parallel (%i, %c) in [64, 256] {
          %x = tile.load %merged[%i, %c] : !tile.frag<[64, 256], f32>
          %c_partner = arith.xori %c, %c1 : index
          %y = tile.load %merged[%i, %c_partner] : !tile.frag<[64, 256], f32>
          %rounded = arith.truncf %x : f32 to bf16
          %partner = arith.truncf %y : f32 to bf16
          %j = arith.addi %first_column, %c : index
          %result = func.call @rope_inverse_column(%rounded, %partner, %j, %rope_on, %cos_s,
                                                   %sin_s)
              : (bf16, bf16, index, i1, !tile.shared<[32], f32>, !tile.shared<[32], f32>) -> bf16
          tile.store %result, %out_half[%i, %c] : !tile.frag<[64, 256], bf16>
        }
        tile.copy %out_half to %o[%token, %first_head, %first_column]
            : !tile.frag<[64, 256], bf16> to !tile.global<[?, ?, 512], bf16>
        // The peer reads this block's tiles until here.
        tile.cluster_barrier
      } else {
        tile.parallel (%i) in [64] {
          %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
          %l = tile.load %row_sum[%i] : !tile.frag<[64], f32>
          %positive = arith.cmpf ogt, %l, %zero : f32
          %inverse_raw = arith.divf %one, %l : f32
          %inverse = arith.select %positive, %inverse_raw, %zero : f32
          tile.store %inverse, %tile_sum[%i] : !tile.frag<[64], f32>
          %h = arith.addi %first_head, %i : index
          %log2_sum = math.log2 %l : f32
          %total_log2 = arith.addf %m, %log2_sum : f32
          %ln2 = arith.constant 0.693147182 : f32
          %lse_raw = arith.mulf %total_log2, %ln2 : f32
          // Nothing valid in this split: lse -inf (weight 0 in the combine).
          %lse = arith.select %positive, %lse_raw, %neg_inf : f32
          %real = arith.cmpi ult, %h, %heads : index
          scf.if %real {
            tile.store %lse, %lse_part[%token, %split, %h] : !tile.global<[?, ?, ?], f32>
          }
        }
        tile.parallel (%i, %j) in [64, 512] {
          %a = tile.load %acc[%i, %j] : !tile.frag<[64, 512], f32>
          %inverse = tile.load %tile_sum[%i] : !tile.frag<[64], f32>
          %normalized = arith.mulf %a, %inverse : f32
          tile.store %normalized, %acc[%i, %j] : !tile.frag<[64, 512], f32>
        }
        tile.copy %acc to %o_part[%token, %split, %first_head, %c0]
            : !tile.frag<[64, 512], f32> to !tile.global<[?, ?, ?, 512], f32>
      }
    }
  }
}
