// Probe (twenty-eighth session; docs/proposals/sparse-attn-critical-chains.md,
// "Decode: the serial per-tile chain"): sparse attention's decode path with
// S split over the two consumer warpgroups by the head dimension instead of
// by keys. Warpgroup w computes the partial scores of its half of D
// (S_w = Q[:, 256 w:+256] K[:, 256 w:+256]^T, [64 heads, 64 keys], an
// m64n64k16 chain whose operands are balanced: 2 KiB of each per 32 clocks
// of math), writes them to shared memory (f32), and after one named barrier
// adds the other's: both then hold the whole S, compute the same row
// statistics and P themselves and keep P in registers as the A operand of
// their own P V (output columns [256 w, +256)). Against sparse_attn_ws
// (S split by keys, policy full_col: each warpgroup rereads all of Q, 3 KiB
// a 16-clock k-step; the row maxima and P through shared memory, two block
// barriers a tile): S reads 128 instead of 192 KiB of shared memory a tile,
// P V reads V only, one exchange (2 x 16 KiB written, read once) and one
// rendezvous a tile. Each stage is gathered as two column halves ([64, 256]
// each). Decode only (splits = 1, no cluster, RoPE or q_norm); same
// arguments as sparse_attn. Measured (twenty-eighth session, GPU run 120):
// 1.42x (H = 64) to 1.50x (H = 128) slower than the operator at decode;
// dropped. Run it with
//   probes/sparse_attn_wg_ab.py --kernel sparse_attn_ws - THIS_FILE
// hisa-variant sparse_attn_ws replaces "@sparse_attn_sd(" with "@sparse_attn_ws("

tile.kernel @sparse_attn_sd(%q: !tile.global<[?, ?, 512], bf16>,
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
    // Each warpgroup's partial scores, read by the other.
    %part0 = tile.alloc : !tile.shared<[64, 64], f32>
    %part1 = tile.alloc : !tile.shared<[64, 64], f32>
    %rows = tile.alloc : !tile.shared<[topk_pad], i32>
    // Each warpgroup's own (tile.per_warpgroup): scores, P, output columns,
    // row statistics.
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
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %neg_inf = arith.constant 0xFF800000 : f32
    %log2e = arith.constant 1.44269504 : f32
    %ln2 = arith.constant 0.693147182 : f32
    %true = arith.constant true
    // A maximum moves only when it would grow by more than this (log2
    // units; FlashAttention-4's lazy rescaling): P stays at most 2^8 and most
    // iterations rescale neither O nor P0.
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
    }

    %pad = tile.param "topk_pad" : index
    %tiles = arith.divui %pad, %c64 : index
    // Warpgroup w overwrites its partial only after the other has read the
    // previous one (barrier 2 + w: the reader arrives, the writer waits);
    // the first write waits for an arrival made here, and the last one is
    // consumed after the loop, so every barrier phase completes.
    tile.per_warpgroup (%wg) unsynchronized {
      %is_first = arith.cmpi eq, %wg, %c0 : index
      scf.if %is_first {
        tile.barrier id = 3 arrive_only
      } else {
        tile.barrier id = 2 arrive_only
      }
    }
    tile.pipelined %t = %c0 to %tiles step %c1 num_stages = 2 warp_specialized {
      %first = arith.muli %t, %c64 : index
      tile.copy %kv[%c0, %c0] rows(%rows[%first] : !tile.shared<[topk_pad], i32>) to %kv_lo
          : !tile.global<[?, 512], bf16> to !tile.shared<[64, 256], bf16>
      tile.copy %kv[%c0, %c256] rows(%rows[%first] : !tile.shared<[topk_pad], i32>) to %kv_hi
          : !tile.global<[?, 512], bf16> to !tile.shared<[64, 256], bf16>
      tile.per_warpgroup (%wg) unsynchronized {
        %is_first = arith.cmpi eq, %wg, %c0 : index
        scf.if %is_first {
          tile.gemm %q_lo, %kv_lo, %s transpose_b clear_accum
              : !tile.shared<[64, 256], bf16>, !tile.shared<[64, 256], bf16>
                -> !tile.frag<[64, 64], f32>
          tile.release %kv_hi : !tile.shared<[64, 256], bf16>
          tile.barrier id = 2
          tile.copy %s to %part0 : !tile.frag<[64, 64], f32> to !tile.shared<[64, 64], f32>
        } else {
          tile.gemm %q_hi, %kv_hi, %s transpose_b clear_accum
              : !tile.shared<[64, 256], bf16>, !tile.shared<[64, 256], bf16>
                -> !tile.frag<[64, 64], f32>
          tile.release %kv_lo : !tile.shared<[64, 256], bf16>
          tile.barrier id = 3
          tile.copy %s to %part1 : !tile.frag<[64, 64], f32> to !tile.shared<[64, 64], f32>
        }
        tile.barrier id = 1
        // The other half of D; scores in log2 units; -inf for invalid
        // indices.
        %other = tile.pick %wg [%part1, %part0] : !tile.shared<[64, 64], f32>
        tile.parallel (%i, %j) in [64, 64] {
          %mine = tile.load %s[%i, %j] : !tile.frag<[64, 64], f32>
          %theirs = tile.load %other[%i, %j] : !tile.shared<[64, 64], f32>
          %v = arith.addf %mine, %theirs : f32
          %at = arith.addi %first, %j : index
          %row = tile.load %rows[%at] : !tile.shared<[topk_pad], i32>
          %valid = arith.cmpi sge, %row, %c0_i32 : i32
          %scaled = arith.mulf %v, %scale_log2 : f32
          %masked = arith.select %valid, %scaled, %neg_inf : f32
          tile.store %masked, %s[%i, %j] : !tile.frag<[64, 64], f32>
        }
        // The other may overwrite its partial now.
        scf.if %is_first {
          tile.barrier id = 3 arrive_only
        } else {
          tile.barrier id = 2 arrive_only
        }
        tile.reduce max %s to %stat dim = 1
            : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
        // The maximum moves only by more than %max_headroom (from -inf:
        // any finite value); alpha rescales O and l (0 while nothing was
        // valid).
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
        // (Only the warps one of whose rows' maximum moved.)
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
        tile.cast %s to %p : !tile.frag<[64, 64], f32> to !tile.frag<[64, 64], bf16>
        scf.if %is_first {
          tile.gemm %p, %kv_lo, %acc
              : !tile.frag<[64, 64], bf16>, !tile.shared<[64, 256], bf16>
                -> !tile.frag<[64, 256], f32>
        } else {
          tile.gemm %p, %kv_hi, %acc
              : !tile.frag<[64, 64], bf16>, !tile.shared<[64, 256], bf16>
                -> !tile.frag<[64, 256], f32>
        }
      }
    }

    // The last arrivals.
    tile.per_warpgroup (%wg) unsynchronized {
      %is_first = arith.cmpi eq, %wg, %c0 : index
      scf.if %is_first {
        tile.barrier id = 2
      } else {
        tile.barrier id = 3
      }
    }

    // Each warpgroup has the whole row sums: its own output columns, lse
    // (wg 0).
    tile.per_warpgroup (%wg) {
      tile.parallel (%i) in [64] {
        %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
        %l = tile.load %row_sum[%i] : !tile.frag<[64], f32>
        %none = arith.cmpf oeq, %m, %neg_inf : f32
        %m_safe = arith.select %none, %zero, %m : f32
        %h = arith.addi %first_head, %i : index
        %real = arith.cmpi ult, %h, %heads : index
        %h_safe = arith.select %real, %h, %c0 : index
        %sink = tile.load %attn_sink[%h_safe] : !tile.global<[?], f32>
        %sink_log2 = arith.mulf %sink, %log2e : f32
        %sink_shifted = arith.subf %sink_log2, %m_safe : f32
        %sink_term = math.exp2 %sink_shifted : f32
        %denominator = arith.addf %l, %sink_term : f32
        %positive = arith.cmpf ogt, %denominator, %zero : f32
        %inverse_raw = arith.divf %one, %denominator : f32
        %inverse = arith.select %positive, %inverse_raw, %zero : f32
        tile.store %inverse, %factor[%i] : !tile.frag<[64], f32>
        %want_lse = tile.param "lse" : index
        %lse_on = arith.cmpi ne, %want_lse, %c0 : index
        %first_wg = arith.cmpi eq, %wg, %c0 : index
        %write_lse_any = arith.andi %lse_on, %real : i1
        %write_lse = arith.andi %write_lse_any, %first_wg : i1
        scf.if %write_lse {
          %log2_sum = math.log2 %denominator : f32
          %total_log2 = arith.addf %m_safe, %log2_sum : f32
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
