// Probe (twenty-sixth session; docs/proposals/sparse-attn-critical-chains.md,
// "decode's shared-memory traffic per key tile"): sparse_attn's decode path
// (no split, cluster, RoPE, q_norm or lse: splits = 1, lse = 0,
// partial_sums = 1 only) with the first 128
// of Q's 512 columns held in registers as the S gemm's A operand (wgmma RS),
// so that S rereads 2 KiB of Q from shared memory per k-step only for the
// other 384 columns. Each 64-key stage is gathered as three column tiles
// ([64, 128], [64, 128], [64, 256]: tile.view cannot window columns, and a
// row statistic cannot be read in a parallel over a [64, 384] accumulator
// split over two warpgroups), so P V is three gemms into three accumulator
// fragments. ptxas (sm_90a, topk_pad = 640): 40 bytes of spills, values
// computed before the key loop and reloaded in the epilogue. With 256
// columns in registers it spills 232 bytes. Same arguments as sparse_attn;
// Measured (twenty-eighth session, GPU run 118): 1.11-1.14x slower than the
// operator at decode; dropped (docs/performance.md). Run it with
//   probes/sparse_attn_wg_ab.py --kernel sparse_attn_ws - THIS_FILE
// hisa-variant sparse_attn_ws replaces "@sparse_attn_qr(" with "@sparse_attn_ws("
// hisa-variant sparse_attn_ws replaces "num_stages = 2 {" with "num_stages = 2 warp_specialized {"

tile.kernel @sparse_attn_qr(%q: !tile.global<[?, ?, 512], bf16>,
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
    %q_mid = tile.alloc : !tile.shared<[64, 128], bf16>
    %q_hi = tile.alloc : !tile.shared<[64, 256], bf16>
    %kv_lo = tile.alloc : !tile.shared<[64, 128], bf16>
    %kv_mid = tile.alloc : !tile.shared<[64, 128], bf16>
    %kv_hi = tile.alloc : !tile.shared<[64, 256], bf16>
    %staging_lo = tile.alloc : !tile.shared<[64, 128], bf16>
    %staging_mid = tile.alloc : !tile.shared<[64, 128], bf16>
    %staging_hi = tile.alloc : !tile.shared<[64, 256], bf16>
    %p_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %rows = tile.alloc : !tile.shared<[topk_pad], i32>
    %q_lo = tile.alloc : !tile.frag<[64, 128], bf16>
    %scores = tile.alloc : !tile.frag<[64, 64], f32>
    %p = tile.alloc : !tile.frag<[64, 64], bf16>
    %acc_lo = tile.alloc : !tile.frag<[64, 128], f32>
    %acc_mid = tile.alloc : !tile.frag<[64, 128], f32>
    %acc_hi = tile.alloc : !tile.frag<[64, 256], f32>
    %out_lo = tile.alloc : !tile.frag<[64, 128], bf16>
    %out_mid = tile.alloc : !tile.frag<[64, 128], bf16>
    %out_hi = tile.alloc : !tile.frag<[64, 256], bf16>
    %row_max = tile.alloc : !tile.frag<[64], f32>
    %prev_max = tile.alloc : !tile.frag<[64], f32>
    %row_sum = tile.alloc : !tile.frag<[64], f32>
    %tile_max = tile.alloc : !tile.frag<[64], f32>
    %row_sum_parts = tile.alloc : !tile.frag<[64, 2], f32>
    %tile_parts = tile.alloc : !tile.frag<[64, 2], f32>

    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    %zero = arith.constant 0.0 : f32
    %neg_inf = arith.constant 0xFF800000 : f32
    %log2e = arith.constant 1.44269504 : f32
    %one = arith.constant 1.0 : f32
    %true = arith.constant true
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

    // Indices (absolute kv rows, -1 where invalid) and queries: columns
    // [0, 128) into registers, [128, 512) into shared memory.
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
    tile.copy %q[%token, %first_head, %c128] to %q_mid
        : !tile.global<[?, ?, 512], bf16> to !tile.shared<[64, 128], bf16>
    tile.copy %q[%token, %first_head, %c256] to %q_hi
        : !tile.global<[?, ?, 512], bf16> to !tile.shared<[64, 256], bf16>
    tile.copy %q[%token, %first_head, %c0] to %q_lo
        : !tile.global<[?, ?, 512], bf16> to !tile.frag<[64, 128], bf16>
    tile.fill %acc_lo, %zero : !tile.frag<[64, 128], f32>, f32
    tile.fill %acc_mid, %zero : !tile.frag<[64, 128], f32>, f32
    tile.fill %acc_hi, %zero : !tile.frag<[64, 256], f32>, f32
    tile.fill %row_max, %neg_inf : !tile.frag<[64], f32>, f32
    tile.fill %row_sum_parts, %zero : !tile.frag<[64, 2], f32>, f32

    %pad = tile.param "topk_pad" : index
    %tiles = arith.divui %pad, %c64 : index
    tile.pipelined %t = %c0 to %tiles step %c1 num_stages = 2 {
      %first = arith.muli %t, %c64 : index
      tile.copy %kv[%c0, %c0] rows(%rows[%first] : !tile.shared<[topk_pad], i32>) to %kv_lo
          : !tile.global<[?, 512], bf16> to !tile.shared<[64, 128], bf16>
      tile.copy %kv[%c0, %c128] rows(%rows[%first] : !tile.shared<[topk_pad], i32>) to %kv_mid
          : !tile.global<[?, 512], bf16> to !tile.shared<[64, 128], bf16>
      tile.copy %kv[%c0, %c256] rows(%rows[%first] : !tile.shared<[topk_pad], i32>) to %kv_hi
          : !tile.global<[?, 512], bf16> to !tile.shared<[64, 256], bf16>
      tile.gemm %q_lo, %kv_lo, %scores transpose_b clear_accum policy(full_col)
          : !tile.frag<[64, 128], bf16>, !tile.shared<[64, 128], bf16>
            -> !tile.frag<[64, 64], f32>
      tile.gemm %q_mid, %kv_mid, %scores transpose_b policy(full_col)
          : !tile.shared<[64, 128], bf16>, !tile.shared<[64, 128], bf16>
            -> !tile.frag<[64, 64], f32>
      tile.gemm %q_hi, %kv_hi, %scores transpose_b policy(full_col)
          : !tile.shared<[64, 256], bf16>, !tile.shared<[64, 256], bf16>
            -> !tile.frag<[64, 64], f32>
      tile.parallel (%i, %j) in [64, 64] {
        %s = tile.load %scores[%i, %j] : !tile.frag<[64, 64], f32>
        %at = arith.addi %first, %j : index
        %row = tile.load %rows[%at] : !tile.shared<[topk_pad], i32>
        %valid = arith.cmpi sge, %row, %c0_i32 : i32
        %scaled = arith.mulf %s, %scale_log2 : f32
        %masked = arith.select %valid, %scaled, %neg_inf : f32
        tile.store %masked, %scores[%i, %j] : !tile.frag<[64, 64], f32>
      }
      tile.reduce max %scores to %tile_max dim = 1
          : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
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
      tile.parallel (%i, %j) in [64, 64] {
        %s = tile.load %scores[%i, %j] : !tile.frag<[64, 64], f32>
        %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
        %none = arith.cmpf oeq, %m, %neg_inf : f32
        %m_safe = arith.select %none, %zero, %m : f32
        %shifted = arith.subf %s, %m_safe : f32
        %e = math.exp2 %shifted : f32
        tile.store %e, %scores[%i, %j] : !tile.frag<[64, 64], f32>
      }
      %columns = tile.view %scores
          : !tile.frag<[64, 64], f32> to !tile.frag<[64, 2, 32], f32>
      tile.reduce sum %columns to %tile_parts dim = 2
          : !tile.frag<[64, 2, 32], f32> to !tile.frag<[64, 2], f32>
      tile.parallel (%i) in [64] {
        %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
        %m_old = tile.load %prev_max[%i] : !tile.frag<[64], f32>
        %none = arith.cmpf oeq, %m, %neg_inf : f32
        %m_safe = arith.select %none, %zero, %m : f32
        %delta = arith.subf %m_old, %m_safe : f32
        %alpha = math.exp2 %delta : f32
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
      %kept = tile.all_of %prev_max : !tile.frag<[64], f32> {
      ^bb0(%alpha: f32):
        %unit = arith.cmpf oeq, %alpha, %one : f32
        tile.yield %unit : i1
      }
      %moved = arith.xori %kept, %true : i1
      scf.if %moved {
        tile.parallel (%i, %j) in [64, 128] {
          %a = tile.load %acc_lo[%i, %j] : !tile.frag<[64, 128], f32>
          %alpha = tile.load %prev_max[%i] : !tile.frag<[64], f32>
          %scaled = arith.mulf %a, %alpha : f32
          tile.store %scaled, %acc_lo[%i, %j] : !tile.frag<[64, 128], f32>
        }
        tile.parallel (%i, %j) in [64, 128] {
          %a = tile.load %acc_mid[%i, %j] : !tile.frag<[64, 128], f32>
          %alpha = tile.load %prev_max[%i] : !tile.frag<[64], f32>
          %scaled = arith.mulf %a, %alpha : f32
          tile.store %scaled, %acc_mid[%i, %j] : !tile.frag<[64, 128], f32>
        }
        tile.parallel (%i, %j) in [64, 256] {
          %a = tile.load %acc_hi[%i, %j] : !tile.frag<[64, 256], f32>
          %alpha = tile.load %prev_max[%i] : !tile.frag<[64], f32>
          %scaled = arith.mulf %a, %alpha : f32
          tile.store %scaled, %acc_hi[%i, %j] : !tile.frag<[64, 256], f32>
        }
      }
      tile.cast %scores to %p : !tile.frag<[64, 64], f32> to !tile.frag<[64, 64], bf16>
      tile.copy %p to %p_s : !tile.frag<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %p_s, %kv_lo, %acc_lo policy(full_col)
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 128], bf16>
            -> !tile.frag<[64, 128], f32>
      tile.gemm %p_s, %kv_mid, %acc_mid policy(full_col)
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 128], bf16>
            -> !tile.frag<[64, 128], f32>
      tile.gemm %p_s, %kv_hi, %acc_hi policy(full_col)
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 256], bf16>
            -> !tile.frag<[64, 256], f32>
    }

    // The heads' sinks (log2 units) first, then the sums.
    tile.parallel (%i) in [64] {
      %h = arith.addi %first_head, %i : index
      %real = arith.cmpi ult, %h, %heads : index
      %h_safe = arith.select %real, %h, %c0 : index
      %sink = tile.load %attn_sink[%h_safe] : !tile.global<[?], f32>
      %sink_log2 = arith.mulf %sink, %log2e : f32
      tile.store %sink_log2, %prev_max[%i] : !tile.frag<[64], f32>
    }
    tile.reduce sum %row_sum_parts to %row_sum dim = 1
        : !tile.frag<[64, 2], f32> to !tile.frag<[64], f32>
    tile.parallel (%i) in [64] {
      %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
      %l = tile.load %row_sum[%i] : !tile.frag<[64], f32>
      %none = arith.cmpf oeq, %m, %neg_inf : f32
      %m_safe = arith.select %none, %zero, %m : f32
      %sink_log2 = tile.load %prev_max[%i] : !tile.frag<[64], f32>
      %sink_shifted = arith.subf %sink_log2, %m_safe : f32
      %sink_term = math.exp2 %sink_shifted : f32
      %denominator = arith.addf %l, %sink_term : f32
      %positive = arith.cmpf ogt, %denominator, %zero : f32
      %inverse_raw = arith.divf %one, %denominator : f32
      %inverse = arith.select %positive, %inverse_raw, %zero : f32
      tile.store %inverse, %tile_max[%i] : !tile.frag<[64], f32>
    }
    tile.parallel (%i, %j) in [64, 128] {
      %a = tile.load %acc_lo[%i, %j] : !tile.frag<[64, 128], f32>
      %inverse = tile.load %tile_max[%i] : !tile.frag<[64], f32>
      %normalized = arith.mulf %a, %inverse : f32
      %rounded = arith.truncf %normalized : f32 to bf16
      tile.store %rounded, %out_lo[%i, %j] : !tile.frag<[64, 128], bf16>
    }
    tile.parallel (%i, %j) in [64, 128] {
      %a = tile.load %acc_mid[%i, %j] : !tile.frag<[64, 128], f32>
      %inverse = tile.load %tile_max[%i] : !tile.frag<[64], f32>
      %normalized = arith.mulf %a, %inverse : f32
      %rounded = arith.truncf %normalized : f32 to bf16
      tile.store %rounded, %out_mid[%i, %j] : !tile.frag<[64, 128], bf16>
    }
    tile.parallel (%i, %j) in [64, 256] {
      %a = tile.load %acc_hi[%i, %j] : !tile.frag<[64, 256], f32>
      %inverse = tile.load %tile_max[%i] : !tile.frag<[64], f32>
      %normalized = arith.mulf %a, %inverse : f32
      %rounded = arith.truncf %normalized : f32 to bf16
      tile.store %rounded, %out_hi[%i, %j] : !tile.frag<[64, 256], bf16>
    }
    tile.copy %out_lo to %staging_lo
        : !tile.frag<[64, 128], bf16> to !tile.shared<[64, 128], bf16>
    tile.copy %out_mid to %staging_mid
        : !tile.frag<[64, 128], bf16> to !tile.shared<[64, 128], bf16>
    tile.copy %out_hi to %staging_hi
        : !tile.frag<[64, 256], bf16> to !tile.shared<[64, 256], bf16>
    tile.copy %staging_lo to %o[%token, %first_head, %c0]
        : !tile.shared<[64, 128], bf16> to !tile.global<[?, ?, 512], bf16>
    tile.copy %staging_mid to %o[%token, %first_head, %c128]
        : !tile.shared<[64, 128], bf16> to !tile.global<[?, ?, 512], bf16>
    tile.copy %staging_hi to %o[%token, %first_head, %c256]
        : !tile.shared<[64, 256], bf16> to !tile.global<[?, ?, 512], bf16>
  }
}
