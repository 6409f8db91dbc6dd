// Probe (thirty-seventh session; docs/proposals/sparse-attn-critical-chains.md):
// sparse attention's decode path with one warpgroup computing all of S.
//
// The operator's decode kernel (sparse_attn_ws, policy full_col) splits every
// 64-key tile's S = Q K^T between its two consumer warpgroups by key
// columns: two m64n32k16 chains that each re-read all of Q from shared
// memory (3 KiB per 16 tensor clocks: shared-memory bound, ~1536 clocks a
// tile for both), then exchange row maxima (a block barrier) and P. The
// twenty-eighth session's probes showed the tile's time following the
// tensor and shared-memory work (both warpgroups computing all of S: 1.5x
// the work, 1.15-1.2x the time).
//
// Here warpgroup 0 (the scorer) computes the whole [64 heads, 64 keys] S as
// two m64n64k16 chains (2 KiB of Q and 2 KiB of keys per 32 clocks: both
// units balanced, ~1024 clocks), the softmax and the statistics alone (no
// exchange), publishes P (bf16) and the rescale factor in shared memory
// (named barrier 2), and runs O_lo += P V_lo with P from registers.
// Warpgroup 1 waits for P, rescales O_hi with the same factor, runs O_hi
// += P V_hi with P from shared memory and signals that P's buffer is free
// (named barrier 1). Tensor work per tile: S 1024 + P V 1024 clocks
// against 1536 + 1024. The stages are gathered as two column halves
// ([64, 256] each); warpgroup 1 releases the low half at once, warpgroup 0
// the high half after S.
//
// Decode-shaped only (splits = 1, no cluster, RoPE or q_norm); the same
// arguments as sparse_attn (partial_sums accepted, unused). Run it with
//   probes/sparse_attn_wg_ab.py --kernel sparse_attn_ws - THIS_FILE
// hisa-variant sparse_attn_ws replaces "@sparse_attn_os(" with "@sparse_attn_ws("
tile.kernel @sparse_attn_os(%q: !tile.global<[?, ?, 512], bf16>,
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
            partial_sums = 1} {
  %tokens = tile.dim %q, 0 : !tile.global<[?, ?, 512], bf16>
  %head_blocks = tile.param "head_blocks" : index
  %blocks = arith.muli %tokens, %head_blocks : index
  tile.launch (%block) in (%blocks) threads 256 {
    %q_lo = tile.alloc : !tile.shared<[64, 256], bf16>
    %q_hi = tile.alloc : !tile.shared<[64, 256], bf16>
    %out_lo_s = tile.alloc : !tile.shared<[64, 256], bf16>
    %out_hi_s = tile.alloc : !tile.shared<[64, 256], bf16>
    %kv_lo = tile.alloc : !tile.shared<[64, 256], bf16>
    %kv_hi = tile.alloc : !tile.shared<[64, 256], bf16>
    %p_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %factor_s = tile.alloc : !tile.shared<[64], f32>
    %max_s = tile.alloc : !tile.shared<[64], f32>
    %sum_s = tile.alloc : !tile.shared<[64], f32>
    %rows = tile.alloc : !tile.shared<[topk_pad], i32>
    // Each warpgroup's own (tile.per_warpgroup).
    %s = tile.alloc : !tile.frag<[64, 64], f32>
    %p = tile.alloc : !tile.frag<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 256], f32>
    %out = tile.alloc : !tile.frag<[64, 256], bf16>
    %row_max = tile.alloc : !tile.frag<[64], f32>
    %row_sum = tile.alloc : !tile.frag<[64], f32>
    %stat = tile.alloc : !tile.frag<[64], f32>
    %factor = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %neg_inf = arith.constant 0xFF800000 : f32
    %log2e = arith.constant 1.44269504 : f32
    %ln2 = arith.constant 0.693147182 : f32
    %true = arith.constant true
    // Lazy rescaling, as sparse_attn: the maximum moves only when it would
    // grow by more than this (log2 units).
    %max_headroom = arith.constant 8.0 : f32
    %invalid = arith.constant -1 : i32
    %c0_i32 = arith.constant 0 : i32
    %head_blocks_in = tile.param "head_blocks" : index
    %token = arith.divui %block, %head_blocks_in : index
    %head_block = arith.remui %block, %head_blocks_in : index
    %first_head = arith.muli %head_block, %c64 : index
    %heads = tile.dim %q, 1 : !tile.global<[?, ?, 512], bf16>
    %k = tile.dim %topk_idxs, 1 : !tile.global<[?, ?], i32>
    %batch = arith.divui %token, %tokens_per_batch : index
    %row_base = arith.muli %batch, %nkv : index
    %row_base_i32 = arith.index_cast %row_base : index to i32
    %nkv_i32 = arith.index_cast %nkv : index to i32
    %k_i32 = arith.index_cast %k : index to i32
    %scale_log2 = arith.mulf %softmax_scale, %log2e : f32
    // Indices (absolute kv rows, -1 where invalid) and queries.
    tile.copy %topk_idxs[%token, %c0] to %rows
        : !tile.global<[?, ?], i32> to !tile.shared<[topk_pad], i32>
    tile.parallel (%j) in [topk_pad] {
      %index = tile.load %rows[%j] : !tile.shared<[topk_pad], i32>
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
    tile.copy %q[%token, %first_head, %c0] to %q_lo
        : !tile.global<[?, ?, 512], bf16> to !tile.shared<[64, 256], bf16>
    tile.copy %q[%token, %first_head, %c256] to %q_hi
        : !tile.global<[?, ?, 512], bf16> to !tile.shared<[64, 256], bf16>
    tile.per_warpgroup (%wg) {
      tile.fill %acc, %zero : !tile.frag<[64, 256], f32>, f32
      tile.fill %row_max, %neg_inf : !tile.frag<[64], f32>, f32
      tile.fill %row_sum, %zero : !tile.frag<[64], f32>, f32
      // P's buffer starts free (named barrier 1: one arrive per tile but
      // the last, one wait per tile).
      %is_scorer = arith.cmpi eq, %wg, %c0 : index
      scf.if %is_scorer {
      } else {
        tile.barrier id = 1 arrive_only
      }
    }
    %pad = tile.param "topk_pad" : index
    %tiles = arith.divui %pad, %c64 : index
    tile.pipelined %t = %c0 to %tiles step %c1 num_stages = 2 warp_specialized {
      %first = arith.muli %t, %c64 : index
      tile.copy %kv[%c0, %c0] rows(%rows[%first] : !tile.shared<[topk_pad], i32>) to %kv_lo
          : !tile.global<[?, 512], bf16> to !tile.shared<[64, 256], bf16>
      tile.copy %kv[%c0, %c256] rows(%rows[%first] : !tile.shared<[topk_pad], i32>) to %kv_hi
          : !tile.global<[?, 512], bf16> to !tile.shared<[64, 256], bf16>
      tile.per_warpgroup (%wg) unsynchronized {
        %is_scorer = arith.cmpi eq, %wg, %c0 : index
        scf.if %is_scorer {
          tile.gemm %q_lo, %kv_lo, %s transpose_b clear_accum async
              : !tile.shared<[64, 256], bf16>, !tile.shared<[64, 256], bf16>
                -> !tile.frag<[64, 64], f32>
          tile.gemm %q_hi, %kv_hi, %s transpose_b async
              : !tile.shared<[64, 256], bf16>, !tile.shared<[64, 256], bf16>
                -> !tile.frag<[64, 64], f32>
          tile.wait_gemms
          tile.release %kv_hi : !tile.shared<[64, 256], bf16>
          // Scores in log2 units; -inf for invalid indices.
          tile.parallel (%i, %j) in [64, 64] {
            %v = tile.load %s[%i, %j] : !tile.frag<[64, 64], f32>
            %at = arith.addi %first, %j : index
            %row = tile.load %rows[%at] : !tile.shared<[topk_pad], i32>
            %valid = arith.cmpi sge, %row, %c0_i32 : i32
            %scaled = arith.mulf %v, %scale_log2 : f32
            %masked = arith.select %valid, %scaled, %neg_inf : f32
            tile.store %masked, %s[%i, %j] : !tile.frag<[64, 64], f32>
          }
          tile.reduce max %s to %stat dim = 1
              : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
          // alpha rescales O and l (0 while nothing was valid).
          tile.parallel (%i) in [64] {
            %mine = tile.load %stat[%i] : !tile.frag<[64], f32>
            %old = tile.load %row_max[%i] : !tile.frag<[64], f32>
            %candidate = arith.maximumf %old, %mine : f32
            %gap = arith.subf %candidate, %old : f32
            %grow = arith.cmpf ogt, %gap, %max_headroom : f32
            %new = arith.select %grow, %candidate, %old : f32
            %none = arith.cmpf oeq, %old, %neg_inf : f32
            %delta = arith.subf %old, %new : f32
            %e = math.exp2 %delta : f32
            %alpha = arith.select %none, %zero, %e : f32
            tile.store %alpha, %factor[%i] : !tile.frag<[64], f32>
            tile.store %new, %row_max[%i] : !tile.frag<[64], f32>
          }
          tile.parallel (%i, %j) in [64, 64] {
            %v = tile.load %s[%i, %j] : !tile.frag<[64, 64], f32>
            %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
            %none = arith.cmpf oeq, %m, %neg_inf : f32
            %m_safe = arith.select %none, %zero, %m : f32
            %shifted = arith.subf %v, %m_safe : f32
            %e = math.exp2 %shifted : f32
            tile.store %e, %s[%i, %j] : !tile.frag<[64, 64], f32>
          }
          tile.cast %s to %p : !tile.frag<[64, 64], f32> to !tile.frag<[64, 64], bf16>
          // P and the factor to warpgroup 1, once it has read the last ones.
          tile.barrier id = 1
          tile.copy %p to %p_s : !tile.frag<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
          tile.copy %factor to %factor_s : !tile.frag<[64], f32> to !tile.shared<[64], f32>
          tile.barrier id = 2 arrive_only
          tile.reduce sum %s to %stat dim = 1
              : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
          tile.parallel (%i) in [64] {
            %l = tile.load %row_sum[%i] : !tile.frag<[64], f32>
            %alpha = tile.load %factor[%i] : !tile.frag<[64], f32>
            %add = tile.load %stat[%i] : !tile.frag<[64], f32>
            %rescaled = arith.mulf %l, %alpha : f32
            %l_new = arith.addf %rescaled, %add : f32
            tile.store %l_new, %row_sum[%i] : !tile.frag<[64], f32>
          }
          %kept = tile.all_of %factor : !tile.frag<[64], f32> {
          ^bb0(%alpha: f32):
            %unit = arith.cmpf oeq, %alpha, %one : f32
            tile.yield %unit : i1
          }
          %moved = arith.xori %kept, %true : i1
          scf.if %moved {
            tile.parallel (%i, %j) in [64, 256] {
              %a = tile.load %acc[%i, %j] : !tile.frag<[64, 256], f32>
              %alpha = tile.load %factor[%i] : !tile.frag<[64], f32>
              %scaled = arith.mulf %a, %alpha : f32
              tile.store %scaled, %acc[%i, %j] : !tile.frag<[64, 256], f32>
            }
          }
          tile.gemm %p, %kv_lo, %acc
              : !tile.frag<[64, 64], bf16>, !tile.shared<[64, 256], bf16>
                -> !tile.frag<[64, 256], f32>
        } else {
          // This warpgroup never reads the low half.
          tile.release %kv_lo : !tile.shared<[64, 256], bf16>
          tile.barrier id = 2
          tile.parallel (%i) in [64] {
            %alpha = tile.load %factor_s[%i] : !tile.shared<[64], f32>
            tile.store %alpha, %factor[%i] : !tile.frag<[64], f32>
          }
          %kept = tile.all_of %factor : !tile.frag<[64], f32> {
          ^bb0(%alpha: f32):
            %unit = arith.cmpf oeq, %alpha, %one : f32
            tile.yield %unit : i1
          }
          %moved = arith.xori %kept, %true : i1
          scf.if %moved {
            tile.parallel (%i, %j) in [64, 256] {
              %a = tile.load %acc[%i, %j] : !tile.frag<[64, 256], f32>
              %alpha = tile.load %factor[%i] : !tile.frag<[64], f32>
              %scaled = arith.mulf %a, %alpha : f32
              tile.store %scaled, %acc[%i, %j] : !tile.frag<[64, 256], f32>
            }
          }
          tile.gemm %p_s, %kv_hi, %acc
              : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 256], bf16>
                -> !tile.frag<[64, 256], f32>
          // P's buffer and the factor are free for the next tile.
          %next = arith.addi %t, %c1 : index
          %more = arith.cmpi ult, %next, %tiles : index
          scf.if %more {
            tile.barrier id = 1 arrive_only
          }
        }
      }
    }
    // Warpgroup 0's statistics to both; each warpgroup's output columns;
    // lse (warpgroup 0). The sink relative to the larger of it and the
    // maximum, as sparse_attn.mlir.
    tile.per_warpgroup (%wg) {
      %is_scorer = arith.cmpi eq, %wg, %c0 : index
      scf.if %is_scorer {
        tile.copy %row_max to %max_s : !tile.frag<[64], f32> to !tile.shared<[64], f32>
        tile.copy %row_sum to %sum_s : !tile.frag<[64], f32> to !tile.shared<[64], f32>
      }
      tile.barrier
      tile.parallel (%i) in [64] {
        %m = tile.load %max_s[%i] : !tile.shared<[64], f32>
        %l = tile.load %sum_s[%i] : !tile.shared<[64], f32>
        %none = arith.cmpf oeq, %m, %neg_inf : f32
        %m_safe = arith.select %none, %zero, %m : f32
        %h = arith.addi %first_head, %i : index
        %real = arith.cmpi ult, %h, %heads : index
        %h_safe = arith.select %real, %h, %c0 : index
        %sink = tile.load %attn_sink[%h_safe] : !tile.global<[?], f32>
        %sink_log2 = arith.mulf %sink, %log2e : f32
        %reference = arith.maximumf %m_safe, %sink_log2 : f32
        %m_shift = arith.subf %m_safe, %reference : f32
        %scale = math.exp2 %m_shift : f32
        %l_scaled = arith.mulf %l, %scale : f32
        %sink_is_reference = arith.cmpf oeq, %sink_log2, %reference : f32
        %sink_gap = arith.subf %sink_log2, %reference : f32
        %sink_shifted = arith.select %sink_is_reference, %zero, %sink_gap : f32
        %sink_term = math.exp2 %sink_shifted : f32
        %denominator = arith.addf %l_scaled, %sink_term : f32
        %positive = arith.cmpf ogt, %denominator, %zero : f32
        %inverse_raw = arith.divf %scale, %denominator : f32
        %inverse = arith.select %positive, %inverse_raw, %zero : f32
        tile.store %inverse, %factor[%i] : !tile.frag<[64], f32>
        %want_lse = tile.param "lse" : index
        %lse_on = arith.cmpi ne, %want_lse, %c0 : index
        %write_lse_any = arith.andi %lse_on, %real : i1
        %write_lse = arith.andi %write_lse_any, %is_scorer : i1
        scf.if %write_lse {
          %log2_sum = math.log2 %denominator : f32
          %total_log2 = arith.addf %reference, %log2_sum : f32
          %lse = arith.mulf %total_log2, %ln2 : f32
          tile.store %lse, %lse_out[%token, %h] : !tile.global<[?, ?], f32>
        }
      }
      tile.parallel (%i, %j) in [64, 256] {
        %a = tile.load %acc[%i, %j] : !tile.frag<[64, 256], f32>
        %inverse = tile.load %factor[%i] : !tile.frag<[64], f32>
        %normalized = arith.mulf %a, %inverse : f32
        %rounded = arith.truncf %normalized : f32 to bf16
        tile.store %rounded, %out[%i, %j] : !tile.frag<[64, 256], bf16>
      }
      %column = arith.muli %wg, %c256 : index
      %staging = tile.pick %wg [%out_lo_s, %out_hi_s] : !tile.shared<[64, 256], bf16>
      tile.copy %out to %staging
          : !tile.frag<[64, 256], bf16> to !tile.shared<[64, 256], bf16>
      tile.copy %staging to %o[%token, %first_head, %column]
          : !tile.shared<[64, 256], bf16> to !tile.global<[?, ?, 512], bf16>
    }
  }
}
