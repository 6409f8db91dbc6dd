// HISA fused stage 2 (KERNELS.md "Fused indexer stages"): block-sparse MQA
// logits (2.1), exact top-k of the slots (2.2) and the conversion of the
// chosen slots to offsets in the query's window (2.3), in one kernel. The
// [M, T*kb] logits never reach global memory.
//
// One block of threads per query. The logits loop is
// block_sparse_mqa_logits.mlir's, in tiles of kt rows (kt divides kb; 64
// keeps the key tiles small enough for three blocks per SM next to the
// keys): for each tile of the T selected key blocks, a
// [kt, dim] x [heads, dim]^T fp8 gemm, the scaled ReLU weighted by head, and
// the sum over heads in registers. Instead of being stored, each slot's
// logit becomes an unsigned key that orders like the float (0 for -inf, NaN
// and the slots outside the window or past N: "not selectable") and is kept
// in shared memory, T*kb keys (32 KiB for T*kb = 8192).
//
// Then the exact radix select of topk_f32.mlir on those keys (its steps
// from hisa's device library, kernels-dsl/lib/radix_select.mlir), 8 bits a
// pass from the top. The first pass's histogram is counted as the logits
// loop stores the keys; after the second pass, the keys of the 16-bit
// threshold bin move to a candidate list when the count says they fit, the
// keys above it are taken in the same walk, and the last two passes and
// the selection read only the candidates: two walks over the T*kb keys
// instead of five. Ties at the threshold go to the lower slot. Slot s of
// block t = s / kb, row i = s % kb becomes the offset
// topk_block_index[m, t]*kb + i - ks[m]; -1 fills the slots past the
// selectable keys. Every written offset is in [0, ke - ks) because only
// in-window slots have keys.

// From hisa's device library (kernels-dsl/lib/select_key.mlir,
// kernels-dsl/lib/radix_select.mlir; the shape symbols of the tile.call'ed
// ones are bound at each call).
func.func private @select_key(f32) -> i32
func.func private @radix_keys4(!tile.shared<[n], i32>, i32, i32, i32) -> (i32, i32, i32, i32)
func.func private @radix_count_top(i32, index, !tile.shared<[warps, 256], i32>)
func.func private @radix_count_digit(i32, i32, i32, i32, index, !tile.shared<[warps, 256], i32>)
func.func private @radix_claim4(i1, i1, i1, i1, i32, !tile.shared<[2, 5], i32>) -> (i32, i32, i32, i32)
func.func private @radix_compact_test(i32, i32) -> (i1, i1)
func.func private @radix_add_candidate(i1, i32, i32, !tile.shared<[2, 5], i32>, !tile.shared<[capacity], i32>, !tile.shared<[capacity], i32>)
func.func private @radix_take_test(i32, i32, i1) -> i1
func.func private @radix_merge(!tile.shared<[warps, 256], i32>, !tile.shared<[256], i32>, index)
func.func private @radix_threshold_bin(!tile.shared<[256], i32>, !tile.shared<[warps, 256], i32>, !tile.shared<[2, 5], i32>, i32, i32, i32, index, index)

// A taken slot's key position (slot of the T*kb) written to out[m, at] as
// its offset in the query's window.
func.func private @store_offset(%taken: i1, %at: i32, %slot: i32, %m: index,
                                %start: i32, %kb: i32,
                                %index_tile: !tile.shared<[topk], i32>,
                                %out: !tile.global<[?, ?], i32>) {
  scf.if %taken {
    %block_slot_i32 = arith.divui %slot, %kb : i32
    %row_in_block = arith.remui %slot, %kb : i32
    %block_slot = arith.index_castui %block_slot_i32 : i32 to index
    %block = tile.load %index_tile[%block_slot] : !tile.shared<[topk], i32>
    %first_row = arith.muli %block, %kb : i32
    %row = arith.addi %first_row, %row_in_block : i32
    %offset = arith.subi %row, %start : i32
    %at_index = arith.index_castui %at : i32 to index
    tile.store %offset, %out[%m, %at_index] : !tile.global<[?, ?], i32>
  }
  return
}

tile.kernel @block_sparse_topk_tokens(
    %q: !tile.global<[?, heads, dim], f8E4M3FN>,
    %k: !tile.global<[?, dim], f8E4M3FN>,
    %k_scale: !tile.global<[?], f32>,
    %topk_block_index: !tile.global<[?, topk], i32>,
    %weights: !tile.global<[?, heads], f32>,
    %ks: !tile.global<[?], i32>,
    %ke: !tile.global<[?], i32>,
    %out: !tile.global<[?, ?], i32>)
    params {heads = 64, dim = 128, kb = 128, kt = 64, topk = 64, min_blocks = 3,
            candidates = 128} {
  %m = tile.dim %q, 0 : !tile.global<[?, heads, dim], f8E4M3FN>
  tile.launch (%bx) in (%m) threads 128 blocks_per_sm "min_blocks" {
    %q_tile = tile.alloc : !tile.shared<[heads, dim], f8E4M3FN>
    %weight_tile = tile.alloc : !tile.shared<[heads], f32>
    %index_tile = tile.alloc : !tile.shared<[topk], i32>
    %k_tile = tile.alloc : !tile.shared<[kt, dim], f8E4M3FN>
    %scale_tile = tile.alloc : !tile.shared<[kt], f32>
    %scores = tile.alloc : !tile.frag<[kt, heads], f32>
    %row_logits = tile.alloc : !tile.frag<[kt], f32>
    %keys = tile.alloc : !tile.shared<[topk*kb], i32>
    // One histogram per warp: the top bits of real logits fall in a few
    // bins, and one block-wide histogram would serialize the atomics.
    %hist = tile.alloc : !tile.shared<[4, 256], i32>
    %counts = tile.alloc : !tile.shared<[256], i32>
    %at_least = tile.alloc : !tile.shared<[256], i32>
    %warp_ties = tile.alloc : !tile.shared<[4], i32>
    %warp_offsets = tile.alloc : !tile.shared<[4], i32>
    // The select's state (kernels-dsl/lib/radix_select.mlir).
    %state = tile.alloc : !tile.shared<[2, 5], i32>
    // The keys (and slots) of the 16-bit threshold bin, once few enough.
    %candidate_keys = tile.alloc : !tile.shared<[candidates], i32>
    %candidate_slots = tile.alloc : !tile.shared<[candidates], i32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %c31_i32 = arith.constant 31 : i32
    %c128_i32 = arith.constant 128 : i32
    %c512_i32 = arith.constant 512 : i32
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %none = arith.constant -1 : i32
    %true = arith.constant true
    %zero_f = arith.constant 0.0 : f32
    %kb = tile.param "kb" : index
    %kb_i32 = arith.index_cast %kb : index to i32
    %n = tile.dim %k, 0 : !tile.global<[?, dim], f8E4M3FN>
    %num_slots = tile.param "topk" : index
    %length = arith.muli %num_slots, %kb : index
    %k_out = tile.dim %out, 1 : !tile.global<[?, ?], i32>
    %k_i32 = arith.index_cast %k_out : index to i32
    // T*kb <= 32768 (the operator's bound): the walks count in i32.
    %length_i32 = arith.index_cast %length : index to i32
    %capacity_index = tile.param "candidates" : index
    %capacity = arith.index_cast %capacity_index : index to i32

    tile.copy %q[%bx, %c0, %c0] to %q_tile
        : !tile.global<[?, heads, dim], f8E4M3FN> to !tile.shared<[heads, dim], f8E4M3FN>
    tile.copy %weights[%bx, %c0] to %weight_tile
        : !tile.global<[?, heads], f32> to !tile.shared<[heads], f32>
    tile.copy %topk_block_index[%bx, %c0] to %index_tile
        : !tile.global<[?, topk], i32> to !tile.shared<[topk], i32>
    %start_i32 = tile.load %ks[%bx] : !tile.global<[?], i32>
    %end_i32 = tile.load %ke[%bx] : !tile.global<[?], i32>
    %start = arith.index_cast %start_i32 : i32 to index
    %end_window = arith.index_cast %end_i32 : i32 to index
    %end = arith.minsi %end_window, %n : index
    tile.fill %hist, %zero : !tile.shared<[4, 256], i32>, i32

    // 1. The logits of every slot, as keys, and the histogram of their top
    //    8 bits (the first pass of the select).
    %kt = tile.param "kt" : index
    %tiles_per_block = arith.divui %kb, %kt : index
    %num_tiles = arith.muli %num_slots, %tiles_per_block : index
    tile.pipelined %t = %c0 to %num_tiles step %c1 num_stages = 2 {
      %block_slot = arith.divui %t, %tiles_per_block : index
      %part = arith.remui %t, %tiles_per_block : index
      %block_i32 = tile.load %index_tile[%block_slot] : !tile.shared<[topk], i32>
      %block = arith.index_cast %block_i32 : i32 to index
      %block_row0 = arith.muli %block, %kb : index
      %part_rows = arith.muli %part, %kt : index
      %row0 = arith.addi %block_row0, %part_rows : index
      tile.copy %k[%row0, %c0] to %k_tile
          : !tile.global<[?, dim], f8E4M3FN> to !tile.shared<[kt, dim], f8E4M3FN>
      tile.copy %k_scale[%row0] to %scale_tile
          : !tile.global<[?], f32> to !tile.shared<[kt], f32>
      tile.gemm %k_tile, %q_tile, %scores transpose_b clear_accum
          : !tile.shared<[kt, dim], f8E4M3FN>, !tile.shared<[heads, dim], f8E4M3FN>
            -> !tile.frag<[kt, heads], f32>
      tile.parallel (%i, %h) in [kt, heads] {
        %x = tile.load %scores[%i, %h] : !tile.frag<[kt, heads], f32>
        %s = tile.load %scale_tile[%i] : !tile.shared<[kt], f32>
        %wt = tile.load %weight_tile[%h] : !tile.shared<[heads], f32>
        %scaled = arith.mulf %x, %s : f32
        %relu = arith.maximumf %scaled, %zero_f : f32
        %weighted = arith.mulf %relu, %wt : f32
        tile.store %weighted, %scores[%i, %h] : !tile.frag<[kt, heads], f32>
      }
      tile.reduce sum %scores to %row_logits dim = 1
          : !tile.frag<[kt, heads], f32> to !tile.frag<[kt], f32>
      %slot0 = arith.muli %t, %kt : index
      tile.parallel (%i) in [kt] {
        %j = arith.addi %row0, %i : index
        %valid_block = arith.cmpi sge, %block_i32, %zero : i32
        %after_start = arith.cmpi sge, %j, %start : index
        %before_end = arith.cmpi slt, %j, %end : index
        %in_window = arith.andi %after_start, %before_end : i1
        %valid = arith.andi %in_window, %valid_block : i1
        %v = tile.load %row_logits[%i] : !tile.frag<[kt], f32>
        // The device library's order-preserving key (0: -inf, NaN).
        %value_key = func.call @select_key(%v) : (f32) -> i32
        %key = arith.select %valid, %value_key, %zero : i32
        %slot = arith.addi %slot0, %i : index
        tile.store %key, %keys[%slot] : !tile.shared<[topk*kb], i32>
        // The first pass's histogram, as the keys are made (four copies:
        // real logits put their top 8 bits in a few bins).
        %copy = arith.remui %i, %c4 : index
        tile.call @radix_count_top(%key, %copy, %hist) : (i32, index, !tile.shared<[4, 256], i32>) -> ()
      }
    }
    tile.call @radix_merge(%hist, %counts, %c4) : (!tile.shared<[4, 256], i32>, !tile.shared<[256], i32>, index) -> ()
    %selectable_count = tile.scan sum %counts to %at_least reverse
        : !tile.shared<[256], i32> to !tile.shared<[256], i32>
    %take_all = arith.cmpi sle, %selectable_count, %k_i32 : i32
    tile.parallel (%p, %i) in [2, 5] {
      // prefix 0, k needed, not done, no slot taken, no candidate.
      %is_needed = arith.cmpi eq, %i, %c1 : index
      %init = arith.select %is_needed, %k_i32, %zero : i32
      tile.store %init, %state[%p, %i] : !tile.shared<[2, 5], i32>
    }

    // 2. Radix select, unless every selectable key is taken. Walks read
    //    four keys a thread per step (slots t + 128 j): the keys of a warp's
    //    step are 4 x 32 consecutive slots, which @radix_claim4 ranks with
    //    ballots.
    %c24_i32 = arith.constant 24 : i32
    %false_init = arith.constant false
    %final:4 = scf.while (%shift = %c24_i32, %first_pass = %true, %parity = %c0,
                          %compacted = %false_init)
        : (i32, i1, index, i1) -> (i32, i1, index, i1) {
      %c2_index = arith.constant 2 : index
      %done_i32 = tile.load %state[%parity, %c2_index] : !tile.shared<[2, 5], i32>
      %more_bits = arith.cmpi sge, %shift, %zero : i32
      %not_done = arith.cmpi eq, %done_i32, %zero : i32
      %needed = arith.xori %take_all, %true : i1
      %go_on = arith.andi %more_bits, %not_done : i1
      %go = arith.andi %go_on, %needed : i1
      scf.condition(%go) %shift, %first_pass, %parity, %compacted : i32, i1, index, i1
    } do {
    ^bb0(%shift: i32, %first_pass: i1, %parity: index, %compacted: i1):
      %prefix = tile.load %state[%parity, %c0] : !tile.shared<[2, 5], i32>
      %still_needed = tile.load %state[%parity, %c1] : !tile.shared<[2, 5], i32>
      %other = arith.subi %c1, %parity : index
      %later_pass = arith.xori %first_pass, %true : i1
      // Before the third pass: compact the 16-bit threshold bin's keys if
      // they fit (the second pass counted them, so this is exact).
      %c8_third = arith.constant 8 : i32
      %third_pass = arith.cmpi eq, %shift, %c8_third : i32
      %c4_bin = arith.constant 4 : index
      %bin_keys = tile.load %state[%parity, %c4_bin] : !tile.shared<[2, 5], i32>
      %fits = arith.cmpi sle, %bin_keys, %capacity : i32
      %compact_now = arith.andi %third_pass, %fits : i1
      %use_candidates = arith.ori %compact_now, %compacted : i1
      scf.if %compact_now {
        // Keys above the 16-bit prefix are taken now; keys with it become
        // candidates.
        %c16_i32 = arith.constant 16 : i32
        %prefix16 = arith.shrui %prefix, %c16_i32 : i32
        tile.parallel (%t) in [128] {
          %t_i32 = arith.index_castui %t : index to i32
          %lane = arith.andi %t_i32, %c31_i32 : i32
          %warp_t = arith.subi %t_i32, %lane : i32
          scf.for %cw = %warp_t to %length_i32 step %c512_i32 : i32 {
            %c = arith.addi %cw, %lane : i32
            %k0, %k1, %k2, %k3 = tile.call @radix_keys4(%keys, %c, %c128_i32, %length_i32)
                : (!tile.shared<[topk*kb], i32>, i32, i32, i32) -> (i32, i32, i32, i32)
            %c_1 = arith.addi %c, %c128_i32 : i32
            %c_2 = arith.addi %c_1, %c128_i32 : i32
            %c_3 = arith.addi %c_2, %c128_i32 : i32
            %t0, %a0 = func.call @radix_compact_test(%k0, %prefix16) : (i32, i32) -> (i1, i1)
            %t1, %a1 = func.call @radix_compact_test(%k1, %prefix16) : (i32, i32) -> (i1, i1)
            %t2, %a2 = func.call @radix_compact_test(%k2, %prefix16) : (i32, i32) -> (i1, i1)
            %t3, %a3 = func.call @radix_compact_test(%k3, %prefix16) : (i32, i32) -> (i1, i1)
            %s0, %s1, %s2, %s3 = func.call @radix_claim4(%t0, %t1, %t2, %t3, %lane, %state)
                : (i1, i1, i1, i1, i32, !tile.shared<[2, 5], i32>) -> (i32, i32, i32, i32)
            func.call @store_offset(%t0, %s0, %c, %bx, %start_i32, %kb_i32, %index_tile, %out) : (i1, i32, i32, index, i32, i32, !tile.shared<[topk], i32>, !tile.global<[?, ?], i32>) -> ()
            func.call @store_offset(%t1, %s1, %c_1, %bx, %start_i32, %kb_i32, %index_tile, %out) : (i1, i32, i32, index, i32, i32, !tile.shared<[topk], i32>, !tile.global<[?, ?], i32>) -> ()
            func.call @store_offset(%t2, %s2, %c_2, %bx, %start_i32, %kb_i32, %index_tile, %out) : (i1, i32, i32, index, i32, i32, !tile.shared<[topk], i32>, !tile.global<[?, ?], i32>) -> ()
            func.call @store_offset(%t3, %s3, %c_3, %bx, %start_i32, %kb_i32, %index_tile, %out) : (i1, i32, i32, index, i32, i32, !tile.shared<[topk], i32>, !tile.global<[?, ?], i32>) -> ()
            tile.call @radix_add_candidate(%a0, %k0, %c, %state, %candidate_keys, %candidate_slots) : (i1, i32, i32, !tile.shared<[2, 5], i32>, !tile.shared<[candidates], i32>, !tile.shared<[candidates], i32>) -> ()
            tile.call @radix_add_candidate(%a1, %k1, %c_1, %state, %candidate_keys, %candidate_slots) : (i1, i32, i32, !tile.shared<[2, 5], i32>, !tile.shared<[candidates], i32>, !tile.shared<[candidates], i32>) -> ()
            tile.call @radix_add_candidate(%a2, %k2, %c_2, %state, %candidate_keys, %candidate_slots) : (i1, i32, i32, !tile.shared<[2, 5], i32>, !tile.shared<[candidates], i32>, !tile.shared<[candidates], i32>) -> ()
            tile.call @radix_add_candidate(%a3, %k3, %c_3, %state, %candidate_keys, %candidate_slots) : (i1, i32, i32, !tile.shared<[2, 5], i32>, !tile.shared<[candidates], i32>, !tile.shared<[candidates], i32>) -> ()
          }
        }
      }
      %c8_i32 = arith.constant 8 : i32
      %above = arith.addi %shift, %c8_i32 : i32
      %prefix_high = arith.shrui %prefix, %above : i32
      scf.if %use_candidates {
        // This digit's histograms among the candidates (all of them have
        // the 16-bit prefix; the last pass counts those with 24 bits).
        %c3_count = arith.constant 3 : index
        %candidates_i32 = tile.load %state[%c1, %c3_count] : !tile.shared<[2, 5], i32>
        %num_candidates = arith.index_cast %candidates_i32 : i32 to index
        tile.parallel (%t) in [128] {
          %warp = arith.divui %t, %c32 : index
          scf.for %i = %t to %num_candidates step %c128 {
            %key = tile.load %candidate_keys[%i] : !tile.shared<[candidates], i32>
            tile.call @radix_count_digit(%key, %shift, %above, %prefix_high, %warp, %hist)
                : (i32, i32, i32, i32, index, !tile.shared<[4, 256], i32>) -> ()
          }
        }
      }
      %full_pass = arith.xori %use_candidates, %true : i1
      %count_all = arith.andi %later_pass, %full_pass : i1
      scf.if %count_all {
        // This digit's histograms among the keys with the prefix found so
        // far.
        tile.parallel (%t) in [128] {
          %t_i32 = arith.index_castui %t : index to i32
          %warp = arith.divui %t, %c32 : index
          scf.for %c = %t_i32 to %length_i32 step %c512_i32 : i32 {
            %k0, %k1, %k2, %k3 = tile.call @radix_keys4(%keys, %c, %c128_i32, %length_i32)
                : (!tile.shared<[topk*kb], i32>, i32, i32, i32) -> (i32, i32, i32, i32)
            tile.call @radix_count_digit(%k0, %shift, %above, %prefix_high, %warp, %hist) : (i32, i32, i32, i32, index, !tile.shared<[4, 256], i32>) -> ()
            tile.call @radix_count_digit(%k1, %shift, %above, %prefix_high, %warp, %hist) : (i32, i32, i32, i32, index, !tile.shared<[4, 256], i32>) -> ()
            tile.call @radix_count_digit(%k2, %shift, %above, %prefix_high, %warp, %hist) : (i32, i32, i32, i32, index, !tile.shared<[4, 256], i32>) -> ()
            tile.call @radix_count_digit(%k3, %shift, %above, %prefix_high, %warp, %hist) : (i32, i32, i32, i32, index, !tile.shared<[4, 256], i32>) -> ()
          }
        }
      }
      scf.if %later_pass {
        tile.call @radix_merge(%hist, %counts, %c4) : (!tile.shared<[4, 256], i32>, !tile.shared<[256], i32>, index) -> ()
        %counted_total = tile.scan sum %counts to %at_least reverse
            : !tile.shared<[256], i32> to !tile.shared<[256], i32>
      }
      tile.call @radix_threshold_bin(%at_least, %hist, %state, %prefix, %still_needed, %shift, %other, %c4)
          : (!tile.shared<[256], i32>, !tile.shared<[4, 256], i32>, !tile.shared<[2, 5], i32>, i32, i32, i32, index, index) -> ()
      %next_shift = arith.subi %shift, %c8_i32 : i32
      %false = arith.constant false
      scf.yield %next_shift, %false, %other, %use_candidates : i32, i1, index, i1
    }

    // 3. Keys above the threshold, or at least the threshold when all of
    //    those equal to it are needed (always so when every selectable key
    //    is taken: the threshold is then 1, the least selectable key).
    %found = tile.load %state[%final#2, %c0] : !tile.shared<[2, 5], i32>
    %need = tile.load %state[%final#2, %c1] : !tile.shared<[2, 5], i32>
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %done_i32 = tile.load %state[%final#2, %c2] : !tile.shared<[2, 5], i32>
    %done = arith.cmpi ne, %done_i32, %zero : i32
    %threshold = arith.select %take_all, %one, %found : i32
    %all_at_threshold = arith.ori %take_all, %done : i1
    scf.if %final#3 {
      // Compacted: the keys above the 16-bit prefix are written; the rest
      // of the selection is among the candidates.
      %candidates_i32 = tile.load %state[%c1, %c3] : !tile.shared<[2, 5], i32>
      %num_candidates = arith.index_cast %candidates_i32 : i32 to index
      tile.parallel (%t) in [128] {
        scf.for %i = %t to %num_candidates step %c128 {
          %key = tile.load %candidate_keys[%i] : !tile.shared<[candidates], i32>
          %take = func.call @radix_take_test(%key, %threshold, %all_at_threshold) : (i32, i32, i1) -> i1
          scf.if %take {
            %slot = tile.atomic add %one, %state[%c0, %c3] : !tile.shared<[2, 5], i32>
            %c_slot = tile.load %candidate_slots[%i] : !tile.shared<[candidates], i32>
            func.call @store_offset(%true, %slot, %c_slot, %bx, %start_i32, %kb_i32, %index_tile, %out) : (i1, i32, i32, index, i32, i32, !tile.shared<[topk], i32>, !tile.global<[?, ?], i32>) -> ()
          }
        }
      }
      // Ties among the candidates (every key equal to the threshold is
      // one), in slot order: a tie's rank is the number of ties in lower
      // slots (candidates are few: at most `candidates`).
      %ties_left = arith.xori %all_at_threshold, %true : i1
      scf.if %ties_left {
        %base = tile.load %state[%c0, %c3] : !tile.shared<[2, 5], i32>
        tile.parallel (%t) in [128] {
          scf.for %i = %t to %num_candidates step %c128 {
            %key = tile.load %candidate_keys[%i] : !tile.shared<[candidates], i32>
            %is_tie = arith.cmpi eq, %key, %threshold : i32
            scf.if %is_tie {
              %slot_i = tile.load %candidate_slots[%i] : !tile.shared<[candidates], i32>
              %rank = scf.for %j = %c0 to %num_candidates step %c1
                  iter_args(%lower = %zero) -> (i32) {
                %other_key = tile.load %candidate_keys[%j] : !tile.shared<[candidates], i32>
                %other_slot = tile.load %candidate_slots[%j] : !tile.shared<[candidates], i32>
                %other_tie = arith.cmpi eq, %other_key, %threshold : i32
                %before = arith.cmpi slt, %other_slot, %slot_i : i32
                %is_lower = arith.andi %other_tie, %before : i1
                %add = arith.extui %is_lower : i1 to i32
                %next = arith.addi %lower, %add : i32
                scf.yield %next : i32
              }
              %wanted = arith.cmpi slt, %rank, %need : i32
              %out_slot = arith.addi %base, %rank : i32
              func.call @store_offset(%wanted, %out_slot, %slot_i, %bx, %start_i32, %kb_i32, %index_tile, %out) : (i1, i32, i32, index, i32, i32, !tile.shared<[topk], i32>, !tile.global<[?, ?], i32>) -> ()
            }
          }
        }
      }
    } else {
      tile.parallel (%t) in [128] {
        // A warp steps over its 4 x 32 slots together (@radix_claim4).
        %t_i32 = arith.index_castui %t : index to i32
        %lane = arith.andi %t_i32, %c31_i32 : i32
        %warp_t = arith.subi %t_i32, %lane : i32
        scf.for %cw = %warp_t to %length_i32 step %c512_i32 : i32 {
          %c = arith.addi %cw, %lane : i32
          %k0, %k1, %k2, %k3 = tile.call @radix_keys4(%keys, %c, %c128_i32, %length_i32)
              : (!tile.shared<[topk*kb], i32>, i32, i32, i32) -> (i32, i32, i32, i32)
          %c_1 = arith.addi %c, %c128_i32 : i32
          %c_2 = arith.addi %c_1, %c128_i32 : i32
          %c_3 = arith.addi %c_2, %c128_i32 : i32
          %t0 = func.call @radix_take_test(%k0, %threshold, %all_at_threshold) : (i32, i32, i1) -> i1
          %t1 = func.call @radix_take_test(%k1, %threshold, %all_at_threshold) : (i32, i32, i1) -> i1
          %t2 = func.call @radix_take_test(%k2, %threshold, %all_at_threshold) : (i32, i32, i1) -> i1
          %t3 = func.call @radix_take_test(%k3, %threshold, %all_at_threshold) : (i32, i32, i1) -> i1
          %s0, %s1, %s2, %s3 = func.call @radix_claim4(%t0, %t1, %t2, %t3, %lane, %state)
              : (i1, i1, i1, i1, i32, !tile.shared<[2, 5], i32>) -> (i32, i32, i32, i32)
          func.call @store_offset(%t0, %s0, %c, %bx, %start_i32, %kb_i32, %index_tile, %out) : (i1, i32, i32, index, i32, i32, !tile.shared<[topk], i32>, !tile.global<[?, ?], i32>) -> ()
          func.call @store_offset(%t1, %s1, %c_1, %bx, %start_i32, %kb_i32, %index_tile, %out) : (i1, i32, i32, index, i32, i32, !tile.shared<[topk], i32>, !tile.global<[?, ?], i32>) -> ()
          func.call @store_offset(%t2, %s2, %c_2, %bx, %start_i32, %kb_i32, %index_tile, %out) : (i1, i32, i32, index, i32, i32, !tile.shared<[topk], i32>, !tile.global<[?, ?], i32>) -> ()
          func.call @store_offset(%t3, %s3, %c_3, %bx, %start_i32, %kb_i32, %index_tile, %out) : (i1, i32, i32, index, i32, i32, !tile.shared<[topk], i32>, !tile.global<[?, ?], i32>) -> ()
        }
      }
    }

    // 4. Ties at the threshold, in slot order, 128 slots at a time: a
    //    ballot per warp, a scan over the warps, until enough are taken.
    //    (Compacted selections ranked theirs among the candidates above.)
    %some_ties = arith.xori %all_at_threshold, %true : i1
    %not_compacted = arith.xori %final#3, %true : i1
    %ties_needed = arith.andi %some_ties, %not_compacted : i1
    scf.if %ties_needed {
      %base = tile.load %state[%c0, %c3] : !tile.shared<[2, 5], i32>
      %left:2 = scf.while (%chunk = %c0, %taken = %zero) : (index, i32) -> (index, i32) {
        %slots_left = arith.cmpi ult, %chunk, %length : index
        %short = arith.cmpi slt, %taken, %need : i32
        %go = arith.andi %slots_left, %short : i1
        scf.condition(%go) %chunk, %taken : index, i32
      } do {
      ^bb0(%chunk: index, %taken: i32):
        tile.parallel (%warp, %lane) in [4, 32] {
          %warp_first = arith.muli %warp, %c32 : index
          %t = arith.addi %warp_first, %lane : index
          %c = arith.addi %chunk, %t : index
          %inside = arith.cmpi ult, %c, %length : index
          %c_safe = arith.select %inside, %c, %c0 : index
          %key = tile.load %keys[%c_safe] : !tile.shared<[topk*kb], i32>
          %equal = arith.cmpi eq, %key, %threshold : i32
          %tie = arith.andi %equal, %inside : i1
          %ties = tile.vote ballot %tie : i32
          %first_lane = arith.cmpi eq, %lane, %c0 : index
          scf.if %first_lane {
            %count = math.ctpop %ties : i32
            tile.store %count, %warp_ties[%warp] : !tile.shared<[4], i32>
          }
        }
        %chunk_ties = tile.scan sum %warp_ties to %warp_offsets exclusive
            : !tile.shared<[4], i32> to !tile.shared<[4], i32>
        tile.parallel (%warp, %lane) in [4, 32] {
          %warp_first = arith.muli %warp, %c32 : index
          %t = arith.addi %warp_first, %lane : index
          %c = arith.addi %chunk, %t : index
          %inside = arith.cmpi ult, %c, %length : index
          %c_safe = arith.select %inside, %c, %c0 : index
          %key = tile.load %keys[%c_safe] : !tile.shared<[topk*kb], i32>
          %equal = arith.cmpi eq, %key, %threshold : i32
          %tie = arith.andi %equal, %inside : i1
          %ties = tile.vote ballot %tie : i32
          %lane_i32 = arith.index_cast %lane : index to i32
          %lane_bit = arith.shli %one, %lane_i32 : i32
          %lanes_below = arith.subi %lane_bit, %one : i32
          %ties_below = arith.andi %ties, %lanes_below : i32
          %rank_in_warp = math.ctpop %ties_below : i32
          %warp_offset = tile.load %warp_offsets[%warp] : !tile.shared<[4], i32>
          %rank_in_chunk = arith.addi %warp_offset, %rank_in_warp : i32
          %rank = arith.addi %taken, %rank_in_chunk : i32
          %wanted = arith.cmpi slt, %rank, %need : i32
          %take = arith.andi %tie, %wanted : i1
          scf.if %take {
            %slot_i32 = arith.addi %base, %rank : i32
            %slot = arith.index_cast %slot_i32 : i32 to index
            %t_block = arith.divui %c, %kb : index
            %i_row = arith.remui %c, %kb : index
            %block_i32 = tile.load %index_tile[%t_block] : !tile.shared<[topk], i32>
            %block = arith.index_cast %block_i32 : i32 to index
            %first_row = arith.muli %block, %kb : index
            %row = arith.addi %first_row, %i_row : index
            %offset = arith.subi %row, %start : index
            %offset_i32 = arith.index_cast %offset : index to i32
            tile.store %offset_i32, %out[%bx, %slot] : !tile.global<[?, ?], i32>
          }
        }
        %next_chunk = arith.addi %chunk, %c128 : index
        %next_taken = arith.addi %taken, %chunk_ties : i32
        scf.yield %next_chunk, %next_taken : index, i32
      }
    }

    // 5. -1 in the slots past the selectable keys.
    %filled_i32 = arith.minsi %selectable_count, %k_i32 : i32
    %filled = arith.index_cast %filled_i32 : i32 to index
    tile.parallel (%warp, %lane) in [4, 32] {
      %warp_first = arith.muli %warp, %c32 : index
      %t = arith.addi %warp_first, %lane : index
      %first = arith.addi %filled, %t : index
      scf.for %slot = %first to %k_out step %c128 {
        tile.store %none, %out[%bx, %slot] : !tile.global<[?, ?], i32>
      }
    }
  }
}
