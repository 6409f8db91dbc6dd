// DeepSeek-V4 sparse attention (KERNELS.md "DeepSeek-V4 sparse attention"),
// the same operation as sparse_attn.mlir, with a schedule in which the two
// consumer warpgroups run different code out of step (FlashMLA's sm90
// sparse prefill schedule, written in the tile dialect):
//
// One block per (token, 64 heads); a producer warpgroup gathers 128 keys per
// iteration as four [64, 256] column halves (key block 0 = keys [128 t,
// +64), block 1 = the next 64; 1 KiB rows split as 2 x 512 B), each handed
// over on its own mbarriers and released as soon as its last reader is done
// (tile.release), so that one set of buffers (128 KiB beside the 64 KiB of
// queries) still lets the producer refill during the iteration.
//
// Warpgroup w owns key block w for the scores and output columns
// [256 w, +256) for P V (its [64, 256] f32 accumulator is 128 registers a
// thread). Per iteration:
//   wg 0: S0 = Q K0^T (m64n64, two k-halves); m0 = max(m, rowmax S0),
//         publish m0 (named barrier 0); P0 = exp2(S0 - m0); O_lo *= alpha;
//         O_lo += P0 V0_lo (P0 from registers); wait for wg 1's maximum m1
//         (barrier 1); rescale P0, O_lo and l by exp2(m0 - m1); publish P0
//         in shared memory (barrier 2); wait for P1 (barrier 3);
//         O_lo += P1 V1_lo.
//   wg 1: S1 = Q K1^T; wait for m0 (barrier 0); m1 = max(m0, rowmax S1),
//         publish m1 (barrier 1); P1 = exp2(S1 - m1); O_hi *= alpha;
//         O_hi += P1 V1_hi; publish P1 (barrier 3); wait for P0 (barrier 2);
//         O_hi += P0 V0_hi.
// While one warpgroup runs its softmax the other's wgmma keep the tensor
// cores busy. The gemms are asynchronous where work can follow them (tile.gemm
// async): S's two k-halves wait once, wg 0's O_lo += P0 V0_lo runs while it
// waits for m1 and updates its statistics, wg 1's O_hi += P1 V1_hi while it
// stores and publishes P1 (1-2% at H = 128, twenty-third session; the
// operator's prefill kernel at H = 64 and 128 from 1024 tokens on). Each
// warpgroup's row sum covers its own keys; the two are
// added after the loop. Row maxima and sums in log2 units; a maximum of
// -inf (no valid key yet) contributes factors of 0.
//
// Same arguments as sparse_attn (splits must be 1: no split decode here;
// rope = 1 rotates the output back as sparse_attn does, after both
// warpgroups stored their halves; q_eps is not read: there is no q_norm
// here, and the operator uses sparse_attn_ws when it is asked for);
// topk_pad must be a multiple of 128.
//
// sparse_attn_wg_handover (fifty-third session; not yet GPU-run, so not the
// operator's): warpgroup 0 does not load max0 only to select it away, so
// that its copy into max0 is read by warpgroup 1 alone, a hand-over that
// needs no warpgroup barriers with the +elide-sync target feature (static
// barriers 32 -> 19 beside +elide-sync's other rules).
// hisa-variant sparse_attn_wg_handover replaces "@sparse_attn_wg(" with "@sparse_attn_wg_handover("
// hisa-variant sparse_attn_wg_handover replaces "          %other = tile.load %max0[%i] : !tile.shared<[64], f32>" with ""
// hisa-variant sparse_attn_wg_handover replaces "%base = arith.select %is_first, %old, %other : f32" with "%base = scf.if %is_first -> (f32) { scf.yield %old : f32 } else { %other = tile.load %max0[%i] : !tile.shared<[64], f32> scf.yield %other : f32 }"

func.func private @rope_inverse_64_heads(!tile.global<[?, ?, 512], bf16>,
                                         !tile.global<[?, 32], f32>,
                                         !tile.global<[?, 32], f32>,
                                         !tile.global<[?], i32>,
                                         index, index, index, index)

tile.kernel @sparse_attn_wg(%q: !tile.global<[?, ?, 512], bf16>,
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
            partial_sums = 0, rope = 0} {
  %tokens = tile.dim %q, 0 : !tile.global<[?, ?, 512], bf16>
  %head_blocks = tile.param "head_blocks" : index
  %blocks = arith.muli %tokens, %head_blocks : index
  tile.launch (%block) in (%blocks) threads 256 {
    %q_lo = tile.alloc : !tile.shared<[64, 256], bf16>
    %q_hi = tile.alloc : !tile.shared<[64, 256], bf16>
    %out_lo_s = tile.alloc : !tile.shared<[64, 256], bf16>
    %out_hi_s = tile.alloc : !tile.shared<[64, 256], bf16>
    %kv0_lo = tile.alloc : !tile.shared<[64, 256], bf16>
    %kv0_hi = tile.alloc : !tile.shared<[64, 256], bf16>
    %kv1_lo = tile.alloc : !tile.shared<[64, 256], bf16>
    %kv1_hi = tile.alloc : !tile.shared<[64, 256], bf16>
    %p0_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %p1_s = tile.alloc : !tile.shared<[64, 64], bf16>
    // Row maxima handed from one warpgroup to the other; row sums after
    // the loop.
    %max0 = tile.alloc : !tile.shared<[64], f32>
    %max1 = tile.alloc : !tile.shared<[64], f32>
    %sum0 = tile.alloc : !tile.shared<[64], f32>
    %sum1 = tile.alloc : !tile.shared<[64], f32>
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
    %iterations = arith.divui %pad, %c128 : index
    tile.pipelined %t = %c0 to %iterations step %c1 num_stages = 1 warp_specialized {
      %first0 = arith.muli %t, %c128 : index
      %first1 = arith.addi %first0, %c64 : index
      // In the order they come free: the first halves of S's operands
      // early in the previous iteration, then kv1_lo (warpgroup 0's last
      // P V) before kv0_hi (warpgroup 1's, which waits for P0); a late
      // buffer's refill is the next iteration's critical path, and this
      // order measured 1-1.5% faster than kv0_hi first.
      tile.copy %kv[%c0, %c0] rows(%rows[%first0] : !tile.shared<[topk_pad], i32>) to %kv0_lo
          : !tile.global<[?, 512], bf16> to !tile.shared<[64, 256], bf16>
      tile.copy %kv[%c0, %c256] rows(%rows[%first1] : !tile.shared<[topk_pad], i32>) to %kv1_hi
          : !tile.global<[?, 512], bf16> to !tile.shared<[64, 256], bf16>
      tile.copy %kv[%c0, %c0] rows(%rows[%first1] : !tile.shared<[topk_pad], i32>) to %kv1_lo
          : !tile.global<[?, 512], bf16> to !tile.shared<[64, 256], bf16>
      tile.copy %kv[%c0, %c256] rows(%rows[%first0] : !tile.shared<[topk_pad], i32>) to %kv0_hi
          : !tile.global<[?, 512], bf16> to !tile.shared<[64, 256], bf16>
      tile.per_warpgroup (%wg) unsynchronized {
        %is_first = arith.cmpi eq, %wg, %c0 : index
        %first = arith.select %is_first, %first0, %first1 : index
        // (The two k-halves of S back to back, one wait.)
        scf.if %is_first {
          tile.gemm %q_lo, %kv0_lo, %s transpose_b clear_accum async
              : !tile.shared<[64, 256], bf16>, !tile.shared<[64, 256], bf16>
                -> !tile.frag<[64, 64], f32>
          tile.gemm %q_hi, %kv0_hi, %s transpose_b async
              : !tile.shared<[64, 256], bf16>, !tile.shared<[64, 256], bf16>
                -> !tile.frag<[64, 64], f32>
          tile.wait_gemms
          tile.release %kv0_hi : !tile.shared<[64, 256], bf16>
          tile.release %kv1_hi : !tile.shared<[64, 256], bf16>
        } else {
          tile.gemm %q_hi, %kv1_hi, %s transpose_b clear_accum async
              : !tile.shared<[64, 256], bf16>, !tile.shared<[64, 256], bf16>
                -> !tile.frag<[64, 64], f32>
          tile.gemm %q_lo, %kv1_lo, %s transpose_b async
              : !tile.shared<[64, 256], bf16>, !tile.shared<[64, 256], bf16>
                -> !tile.frag<[64, 64], f32>
          tile.wait_gemms
          tile.release %kv1_lo : !tile.shared<[64, 256], bf16>
          tile.release %kv0_lo : !tile.shared<[64, 256], bf16>
        }
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
        // The new maximum: wg 0 from its own scores and the running one;
        // wg 1 from its own and wg 0's (which includes the running one).
        scf.if %is_first {
        } else {
          tile.barrier id = 0
        }
        tile.parallel (%i) in [64] {
          %mine = tile.load %stat[%i] : !tile.frag<[64], f32>
          %old = tile.load %row_max[%i] : !tile.frag<[64], f32>
          %other = tile.load %max0[%i] : !tile.shared<[64], f32>
          %base = arith.select %is_first, %old, %other : f32
          %candidate = arith.maximumf %base, %mine : f32
          %gap = arith.subf %candidate, %base : f32
          %grow = arith.cmpf ogt, %gap, %max_headroom : f32
          %new = arith.select %grow, %candidate, %base : f32
          %none = arith.cmpf oeq, %old, %neg_inf : f32
          %delta = arith.subf %old, %new : f32
          %e = math.exp2 %delta : f32
          %alpha = arith.select %none, %zero, %e : f32
          tile.store %alpha, %factor[%i] : !tile.frag<[64], f32>
          tile.store %new, %row_max[%i] : !tile.frag<[64], f32>
        }
        %my_max = tile.pick %wg [%max0, %max1] : !tile.shared<[64], f32>
        tile.copy %row_max to %my_max
            : !tile.frag<[64], f32> to !tile.shared<[64], f32>
        scf.if %is_first {
          tile.barrier id = 0 arrive_only
        } else {
          tile.barrier id = 1 arrive_only
        }
        // P = exp2(S - m); the warpgroup's own sum; the output rescaled.
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
          // O_lo += P0 V0_lo runs while this warpgroup waits for wg 1's
          // maximum and updates its statistics.
          tile.gemm %p, %kv0_lo, %acc async
              : !tile.frag<[64, 64], bf16>, !tile.shared<[64, 256], bf16>
                -> !tile.frag<[64, 256], f32>
          tile.barrier id = 1
          tile.parallel (%i) in [64] {
            %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
            %m1 = tile.load %max1[%i] : !tile.shared<[64], f32>
            %none = arith.cmpf oeq, %m, %neg_inf : f32
            %delta = arith.subf %m, %m1 : f32
            %e = math.exp2 %delta : f32
            %rescale = arith.select %none, %zero, %e : f32
            tile.store %rescale, %factor[%i] : !tile.frag<[64], f32>
            tile.store %m1, %row_max[%i] : !tile.frag<[64], f32>
            %l = tile.load %row_sum[%i] : !tile.frag<[64], f32>
            %l_new = arith.mulf %l, %rescale : f32
            tile.store %l_new, %row_sum[%i] : !tile.frag<[64], f32>
          }
          tile.wait_gemms
          tile.release %kv0_lo : !tile.shared<[64, 256], bf16>
          // Where wg 1 did not move the warp's maxima (the common case),
          // P0 and O_lo stay as they are.
          %same = tile.all_of %factor : !tile.frag<[64], f32> {
          ^bb0(%rescale: f32):
            %unit = arith.cmpf oeq, %rescale, %one : f32
            tile.yield %unit : i1
          }
          %changed = arith.xori %same, %true : i1
          scf.if %changed {
            tile.parallel (%i, %j) in [64, 64] {
              %v = tile.load %s[%i, %j] : !tile.frag<[64, 64], f32>
              %rescale = tile.load %factor[%i] : !tile.frag<[64], f32>
              %scaled = arith.mulf %v, %rescale : f32
              %rounded = arith.truncf %scaled : f32 to bf16
              tile.store %rounded, %p[%i, %j] : !tile.frag<[64, 64], bf16>
            }
          }
          tile.copy %p to %p0_s : !tile.frag<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
          tile.barrier id = 2 arrive_only
          scf.if %changed {
            tile.parallel (%i, %j) in [64, 256] {
              %a = tile.load %acc[%i, %j] : !tile.frag<[64, 256], f32>
              %rescale = tile.load %factor[%i] : !tile.frag<[64], f32>
              %scaled = arith.mulf %a, %rescale : f32
              tile.store %scaled, %acc[%i, %j] : !tile.frag<[64, 256], f32>
            }
          }
          tile.barrier id = 3
          tile.gemm %p1_s, %kv1_lo, %acc
              : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 256], bf16>
                -> !tile.frag<[64, 256], f32>
        } else {
          // O_hi += P1 V1_hi, P1 handed over while it runs; O_hi += P0
          // V0_hi.
          tile.gemm %p, %kv1_hi, %acc async
              : !tile.frag<[64, 64], bf16>, !tile.shared<[64, 256], bf16>
                -> !tile.frag<[64, 256], f32>
          tile.copy %p to %p1_s : !tile.frag<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
          tile.barrier id = 3 arrive_only
          tile.wait_gemms
          tile.release %kv1_hi : !tile.shared<[64, 256], bf16>
          tile.barrier id = 2
          tile.gemm %p0_s, %kv0_hi, %acc
              : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 256], bf16>
                -> !tile.frag<[64, 256], f32>
        }
      }
    }

    // Both warpgroups' sums (their maxima agree: wg 0 took wg 1's); the
    // sink; the output columns of each warpgroup; lse (wg 0).
    tile.per_warpgroup (%wg) {
      // The sink first: its global load is then in flight during the sums'
      // exchange instead of waiting behind it.
      tile.parallel (%i) in [64] {
        %h = arith.addi %first_head, %i : index
        %real = arith.cmpi ult, %h, %heads : index
        %h_safe = arith.select %real, %h, %c0 : index
        %sink = tile.load %attn_sink[%h_safe] : !tile.global<[?], f32>
        %sink_log2 = arith.mulf %sink, %log2e : f32
        tile.store %sink_log2, %factor[%i] : !tile.frag<[64], f32>
      }
      %my_sum = tile.pick %wg [%sum0, %sum1] : !tile.shared<[64], f32>
      tile.copy %row_sum to %my_sum
          : !tile.frag<[64], f32> to !tile.shared<[64], f32>
      tile.barrier
      tile.parallel (%i) in [64] {
        %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
        %l0 = tile.load %sum0[%i] : !tile.shared<[64], f32>
        %l1 = tile.load %sum1[%i] : !tile.shared<[64], f32>
        %l = arith.addf %l0, %l1 : f32
        %none = arith.cmpf oeq, %m, %neg_inf : f32
        %m_safe = arith.select %none, %zero, %m : f32
        %h = arith.addi %first_head, %i : index
        %real = arith.cmpi ult, %h, %heads : index
        %sink_log2 = tile.load %factor[%i] : !tile.frag<[64], f32>
        // Terms relative to the larger of the maximum and the sink: a sink
        // far above every score gives o = 0 and lse = the sink, not +inf
        // (the same operations as before where the maximum is the larger).
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
        tile.store %inverse, %factor[%i] : !tile.frag<[64], f32>
        %want_lse = tile.param "lse" : index
        %lse_on = arith.cmpi ne, %want_lse, %c0 : index
        %first_wg = arith.cmpi eq, %wg, %c0 : index
        %write_lse_any = arith.andi %lse_on, %real : i1
        %write_lse = arith.andi %write_lse_any, %first_wg : i1
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
      // Through shared memory (the plan puts the staging tiles where the
      // loop's buffers were): 16-byte global stores instead of 4-byte ones,
      // 2-3% of prefill (twenty-fourth session).
      %staging = tile.pick %wg [%out_lo_s, %out_hi_s] : !tile.shared<[64, 256], bf16>
      tile.copy %out to %staging
          : !tile.frag<[64, 256], bf16> to !tile.shared<[64, 256], bf16>
      tile.copy %staging to %o[%token, %first_head, %column]
          : !tile.shared<[64, 256], bf16> to !tile.global<[?, ?, 512], bf16>
    }
    %rope_param = tile.param "rope" : index
    %rope_on = arith.cmpi ne, %rope_param, %c0 : index
    scf.if %rope_on {
      func.call @rope_inverse_64_heads(%o, %rope_cos, %rope_sin, %rope_base, %token, %tokens_per_batch,
                                       %first_head, %heads)
          : (!tile.global<[?, ?, 512], bf16>, !tile.global<[?, 32], f32>,
             !tile.global<[?, 32], f32>, !tile.global<[?], i32>, index, index, index,
             index) -> ()
    }
  }
}
