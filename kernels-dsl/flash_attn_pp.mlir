// Dense attention forward, flash_attn.mlir's operation (q, k, v, o
// [B, H, S, D] bf16, D in {64, 128}, causal or not) with FlashAttention-3's
// schedule: one block per (b, h, 128 queries), a producer warpgroup issuing
// the K and V tiles (TMA, tile.pipelined warp_specialized) and two consumer
// warpgroups, each owning 64 query rows (its own Q tile, scores, P, output
// and row statistics: a tile.per_warpgroup body).
//
// Ping-pong: the consumers take turns on the tensor cores through two
// named barriers. In iteration t warpgroup w waits at barrier w, issues
// S(t) = Q K(t)^T and O += P(t-1) V(t-1) (tile.gemm async), signals barrier
// 1 - w, and only then waits for its gemms, so the tensor cores run
// warpgroup 0's pair, warpgroup 1's pair, ... back to back while each
// warpgroup's softmax runs during the other's pair. Intra-warpgroup
// overlap: the softmax of S(t) waits for S(t) alone (tile.wait_gemms
// pending = 1) and runs while P(t-1) V(t-1) finishes; only O's rescale and
// the new P wait for that. P(t) is consumed in the next iteration's turn,
// so ptxas cannot sink the softmax past the turn's barrier (it did when the
// turn held P(t) V(t)). Warpgroup 1 signals barrier 0 once before the loop
// (warpgroup 0 starts) and warpgroup 0 waits at it once after the loop (the
// last signal is consumed), so every barrier phase completes before the
// block exits.
//
// Masking, scale folding and the heaviest-first block order are
// flash_attn's (see there). kt keys per tile: 128 (the operator's; 64
// measured 17-21% slower); one block per SM either way (the consumers keep
// [64, kt] scores, P and the [64, D] output in 216 registers a thread).
// docs/performance.md, twenty-third session: 0.99-1.00x torch SDPA causal,
// 0.92-0.94x non-causal at [1, 32, 8192, 128] (flash_attn: 0.95x / 0.89x);
// below S = 4096 (D = 128) / 8192 (D = 64) the plain kernel is faster (two
// blocks per SM hide each block's start and end) and the operator runs it.

tile.kernel @flash_attn_pp(%q: !tile.global<[?, ?, ?, dim], bf16>,
                           %k: !tile.global<[?, ?, ?, dim], bf16>,
                           %v: !tile.global<[?, ?, ?, dim], bf16>,
                           %o: !tile.global<[?, ?, ?, dim], bf16>,
                           %softmax_scale: f32)
    params {dim = 128, causal = 0, kt = 128, fold_scale = 0} {
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
    %q0 = tile.alloc : !tile.shared<[64, dim], bf16>
    %q1 = tile.alloc : !tile.shared<[64, dim], bf16>
    %k_s = tile.alloc : !tile.shared<[kt, dim], bf16>
    %v_s = tile.alloc : !tile.shared<[kt, dim], bf16>
    // Each warpgroup's own (tile.per_warpgroup).
    %scores = tile.alloc : !tile.frag<[64, kt], f32>
    %p = tile.alloc : !tile.frag<[64, kt], bf16>
    %acc = tile.alloc : !tile.frag<[64, dim], f32>
    %out = tile.alloc : !tile.frag<[64, dim], bf16>
    %row_max = tile.alloc : !tile.frag<[64], f32>
    %prev_max = tile.alloc : !tile.frag<[64], f32>
    %row_sum = tile.alloc : !tile.frag<[64], f32>
    %tile_sum = tile.alloc : !tile.frag<[64], f32>
    %tile_max = tile.alloc : !tile.frag<[64], f32>

    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %kt = tile.param "kt" : index
    %c128_in = arith.constant 128 : index
    %c127_in = arith.constant 127 : index
    %zero = arith.constant 0.0 : f32
    %one_f = arith.constant 1.0 : f32
    %true = arith.constant true
    %neg_inf = arith.constant 0xFF800000 : f32
    %log2e = arith.constant 1.44269504 : f32
    %seq_in = tile.dim %q, 2 : !tile.global<[?, ?, ?, dim], bf16>
    %heads_in = tile.dim %q, 1 : !tile.global<[?, ?, ?, dim], bf16>
    %seq_round_in = arith.addi %seq_in, %c127_in : index
    %query_tiles_in = arith.divui %seq_round_in, %c128_in : index
    // Heaviest (last) query tiles first, as in flash_attn.
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
    %fold_param = tile.param "fold_scale" : index
    %fold = arith.cmpi ne, %fold_param, %c0 : index
    %score_scale = arith.select %fold, %one_f, %scale_log2 : f32
    %exp_scale = arith.select %fold, %scale_log2, %one_f : f32
    // A row maximum moves only when a tile's exceeds it by more than 8 in
    // the exponent (FlashAttention-4's lazy rescaling; in the scores' units
    // 8 / exp_scale): P stays at most 2^8 and most tiles leave O as it is.
    %c8_f = arith.constant 8.0 : f32
    %max_headroom = arith.divf %c8_f, %exp_scale : f32

    // Key tiles: all of them, or (causal) those up to the block's last query.
    %kt_minus_1 = arith.subi %kt, %c1 : index
    %all_keys = arith.addi %seq_in, %kt_minus_1 : index
    %all_tiles = arith.divui %all_keys, %kt : index
    %last_query = arith.addi %first_query, %c127_in : index
    %causal_keys = arith.addi %last_query, %kt : index
    %causal_tiles_raw = arith.divui %causal_keys, %kt : index
    %causal_tiles = arith.minui %causal_tiles_raw, %all_tiles : index
    %key_tiles = arith.select %is_causal, %causal_tiles, %all_tiles : index

    // Each warpgroup loads its own 64 query rows (both in one round trip).
    tile.per_warpgroup (%wg) {
      %q_own = tile.pick %wg [%q0, %q1] : !tile.shared<[64, dim], bf16>
      %wg_rows = arith.muli %wg, %c64 : index
      %own_first_query = arith.addi %first_query, %wg_rows : index
      tile.copy %q[%b, %h, %own_first_query, %c0] to %q_own
          : !tile.global<[?, ?, ?, dim], bf16> to !tile.shared<[64, dim], bf16>
      tile.fill %acc, %zero : !tile.frag<[64, dim], f32>, f32
      tile.fill %row_max, %neg_inf : !tile.frag<[64], f32>, f32
      tile.fill %row_sum, %zero : !tile.frag<[64], f32>, f32
      %zero_bf16 = arith.constant 0.0 : bf16
      tile.fill %p, %zero_bf16 : !tile.frag<[64, kt], bf16>, bf16
    }
    // Warpgroup 0 takes the first turn.
    tile.per_warpgroup (%wg) unsynchronized {
      %is_second = arith.cmpi ne, %wg, %c0 : index
      scf.if %is_second {
        tile.barrier id = 0 arrive_only
      }
    }

    // Iteration t (0 <= t <= T, T key tiles) issues S(t) = Q K(t)^T and
    // O += P(t-1) V(t-1) in one turn, so its stage holds K(t) and V(t-1).
    // The first iteration multiplies P = 0 by V(0): a wgmma must define O
    // on every path (with O += P V skipped on one, ptxas serializes every
    // wgmma: C7515); the last has no S (its stage loads K(T-1) again,
    // unread).
    %iterations = arith.addi %key_tiles, %c1 : index
    tile.pipelined %t = %c0 to %iterations step %c1 num_stages = 2 warp_specialized {
      %last_key_tile = arith.subi %key_tiles, %c1 : index
      %k_tile = arith.minui %t, %last_key_tile : index
      %is_start = arith.cmpi eq, %t, %c0 : index
      %t_before = arith.subi %t, %c1 : index
      %v_tile = arith.select %is_start, %c0, %t_before : index
      %first_key = arith.muli %k_tile, %kt : index
      %v_first_key = arith.muli %v_tile, %kt : index
      tile.copy %k[%b, %h, %first_key, %c0] to %k_s
          : !tile.global<[?, ?, ?, dim], bf16> to !tile.shared<[kt, dim], bf16>
      tile.copy %v[%b, %h, %v_first_key, %c0] to %v_s
          : !tile.global<[?, ?, ?, dim], bf16> to !tile.shared<[kt, dim], bf16>
      tile.per_warpgroup (%wg) unsynchronized {
        %is_first = arith.cmpi eq, %wg, %c0 : index
        %q_own = tile.pick %wg [%q0, %q1] : !tile.shared<[64, dim], bf16>
        %wg_rows = arith.muli %wg, %c64 : index
        %own_first_query = arith.addi %first_query, %wg_rows : index
        // This warpgroup's turn on the tensor cores: both gemms issued,
        // the turn handed over, then the wait.
        scf.if %is_first {
          tile.barrier id = 0
        } else {
          tile.barrier id = 1
        }
        %has_scores = arith.cmpi ult, %t, %key_tiles : index
        scf.if %has_scores {
          tile.gemm %q_own, %k_s, %scores transpose_b clear_accum async
              : !tile.shared<[64, dim], bf16>, !tile.shared<[kt, dim], bf16>
                -> !tile.frag<[64, kt], f32>
          tile.gemm %p, %v_s, %acc async
              : !tile.frag<[64, kt], bf16>, !tile.shared<[kt, dim], bf16>
                -> !tile.frag<[64, dim], f32>
          scf.if %is_first {
            tile.barrier id = 1 arrive_only
          } else {
            tile.barrier id = 0 arrive_only
          }
          tile.wait_gemms pending = 1
        } else {
          tile.gemm %p, %v_s, %acc async
              : !tile.frag<[64, kt], bf16>, !tile.shared<[kt, dim], bf16>
                -> !tile.frag<[64, dim], f32>
          scf.if %is_first {
            tile.barrier id = 1 arrive_only
          } else {
            tile.barrier id = 0 arrive_only
          }
        }
        scf.if %has_scores {
          // Scores in log2 units (unscaled with fold_scale); -inf past S and
          // (causal) above the diagonal, tested only on the tiles that reach
          // past S or past this warpgroup's first query.
          %end_key = arith.addi %first_key, %kt : index
          %past_seq = arith.cmpi ugt, %end_key, %seq_in : index
          %past_first_query = arith.cmpi ugt, %end_key, %own_first_query : index
          %on_diagonal = arith.andi %past_first_query, %is_causal : i1
          %needs_mask = arith.ori %past_seq, %on_diagonal : i1
          scf.if %needs_mask {
            tile.parallel (%i, %j) in [64, kt] {
              %s = tile.load %scores[%i, %j] : !tile.frag<[64, kt], f32>
              %key = arith.addi %first_key, %j : index
              %query = arith.addi %own_first_query, %i : index
              %in_seq = arith.cmpi ult, %key, %seq_in : index
              %future = arith.cmpi ugt, %key, %query : index
              %masked_future = arith.andi %future, %is_causal : i1
              %visible_future = arith.xori %masked_future, %true : i1
              %visible = arith.andi %in_seq, %visible_future : i1
              %scaled = arith.mulf %s, %score_scale : f32
              %masked = arith.select %visible, %scaled, %neg_inf : f32
              tile.store %masked, %scores[%i, %j] : !tile.frag<[64, kt], f32>
            }
          } else {
            tile.parallel (%i, %j) in [64, kt] {
              %s = tile.load %scores[%i, %j] : !tile.frag<[64, kt], f32>
              %scaled = arith.mulf %s, %score_scale : f32
              tile.store %scaled, %scores[%i, %j] : !tile.frag<[64, kt], f32>
            }
          }
          tile.reduce max %scores to %tile_max dim = 1 chains = 1
              : !tile.frag<[64, kt], f32> to !tile.frag<[64], f32>
          tile.parallel (%i) in [64] {
            %old = tile.load %row_max[%i] : !tile.frag<[64], f32>
            %mine = tile.load %tile_max[%i] : !tile.frag<[64], f32>
            %candidate = arith.maximumf %old, %mine : f32
            %gap = arith.subf %candidate, %old : f32
            %far = arith.cmpf ogt, %gap, %max_headroom : f32
            %first = arith.cmpf oeq, %old, %neg_inf : f32
            %grow = arith.ori %far, %first : i1
            %new = arith.select %grow, %candidate, %old : f32
            tile.store %new, %row_max[%i] : !tile.frag<[64], f32>
            tile.store %old, %prev_max[%i] : !tile.frag<[64], f32>
          }
          tile.parallel (%i, %j) in [64, kt] {
            %s = tile.load %scores[%i, %j] : !tile.frag<[64, kt], f32>
            %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
            %none = arith.cmpf oeq, %m, %neg_inf : f32
            %m_safe = arith.select %none, %zero, %m : f32
            %s_scaled = arith.mulf %s, %exp_scale : f32
            %m_scaled = arith.mulf %m_safe, %exp_scale : f32
            %shifted = arith.subf %s_scaled, %m_scaled : f32
            %e = math.exp2 %shifted : f32
            tile.store %e, %scores[%i, %j] : !tile.frag<[64, kt], f32>
          }
          tile.reduce sum %scores to %tile_sum dim = 1 chains = 1
              : !tile.frag<[64, kt], f32> to !tile.frag<[64], f32>
          tile.parallel (%i) in [64] {
            %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
            %m_old = tile.load %prev_max[%i] : !tile.frag<[64], f32>
            %l = tile.load %row_sum[%i] : !tile.frag<[64], f32>
            %add = tile.load %tile_sum[%i] : !tile.frag<[64], f32>
            %none = arith.cmpf oeq, %m, %neg_inf : f32
            %m_safe = arith.select %none, %zero, %m : f32
            %delta_raw = arith.subf %m_old, %m_safe : f32
            %delta = arith.mulf %delta_raw, %exp_scale : f32
            %alpha = math.exp2 %delta : f32
            %rescaled = arith.mulf %l, %alpha : f32
            %l_new = arith.addf %rescaled, %add : f32
            tile.store %l_new, %row_sum[%i] : !tile.frag<[64], f32>
            tile.store %alpha, %prev_max[%i] : !tile.frag<[64], f32>
          }
        }
        tile.wait_gemms
        scf.if %has_scores {
          // (Only the warps one of whose rows' maximum moved.)
          %kept = tile.all_of %prev_max : !tile.frag<[64], f32> {
          ^bb0(%alpha: f32):
            %unit = arith.cmpf oeq, %alpha, %one_f : f32
            tile.yield %unit : i1
          }
          %moved = arith.xori %kept, %true : i1
          scf.if %moved {
            tile.parallel (%i, %j) in [64, dim] {
              %a = tile.load %acc[%i, %j] : !tile.frag<[64, dim], f32>
              %alpha = tile.load %prev_max[%i] : !tile.frag<[64], f32>
              %scaled = arith.mulf %a, %alpha : f32
              tile.store %scaled, %acc[%i, %j] : !tile.frag<[64, dim], f32>
            }
          }
          tile.cast %scores to %p : !tile.frag<[64, kt], f32> to !tile.frag<[64, kt], bf16>
        }
      }
    }

    // Warpgroup 1's last signal.
    tile.per_warpgroup (%wg) unsynchronized {
      %is_first = arith.cmpi eq, %wg, %c0 : index
      scf.if %is_first {
        tile.barrier id = 0
      }
    }
    tile.per_warpgroup (%wg) {
      %wg_rows = arith.muli %wg, %c64 : index
      %own_first_query = arith.addi %first_query, %wg_rows : index
      tile.parallel (%i) in [64] {
        %l = tile.load %row_sum[%i] : !tile.frag<[64], f32>
        // Every query row sees at least key 0, so l > 0 for real rows; rows
        // past S (not written) may have l = 0.
        %positive = arith.cmpf ogt, %l, %zero : f32
        %inverse_raw = arith.divf %one_f, %l : f32
        %inverse = arith.select %positive, %inverse_raw, %zero : f32
        tile.store %inverse, %tile_sum[%i] : !tile.frag<[64], f32>
      }
      tile.parallel (%i, %j) in [64, dim] {
        %a = tile.load %acc[%i, %j] : !tile.frag<[64, dim], f32>
        %inverse = tile.load %tile_sum[%i] : !tile.frag<[64], f32>
        %normalized = arith.mulf %a, %inverse : f32
        %rounded = arith.truncf %normalized : f32 to bf16
        tile.store %rounded, %out[%i, %j] : !tile.frag<[64, dim], bf16>
      }
      tile.copy %out to %o[%b, %h, %own_first_query, %c0]
          : !tile.frag<[64, dim], bf16> to !tile.global<[?, ?, ?, dim], bf16>
    }
  }
}
