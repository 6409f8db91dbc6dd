// Probe (forty-ninth session): kernels-dsl/block_sparse_topk_tokens.mlir
// with its radix select's per-digit phases fused: the four warps'
// histograms are summed, scanned (a warp scan plus the warps' totals) and
// the threshold bin found and cleared in two parallels, three barriers a
// digit instead of six (walk, merge, scan in and out, threshold, and a
// redundant one before it), and the histograms' clearing and the state's
// setting in one parallel. A/B against the built-in:
//
//   PYTHONPATH=python python3 python/bench/probes/stage2_source_ab.py \
//       --kernel block_sparse_topk_tokens_ws -:kt=128 \
//       python/bench/probes/stage2_fused_scan.mlir:kt=128 --sizes=32768,131072
//
// Measured (H100, docs/performance.md, forty-ninth session): exact
// (probes/stage2_fused_scan_check.py, racecheck clean), 0-0.5% faster,
// within the run's drift. Not in the kernel.
//
// HISA fused stage 2 (KERNELS.md "Fused indexer stages"): block-sparse MQA
// logits (2.1), exact top-k of the slots (2.2) and the conversion of the
// chosen slots to offsets in the query's window (2.3), in one kernel. The
// [M, T*kb] logits never reach global memory.
//
// One block of threads per query. The logits loop is
// block_sparse_mqa_logits.mlir's, in tiles of kt rows (kt divides kb; the
// operator takes 128 where three blocks per SM still fit beside the keys,
// else 64): for each tile of the T selected key blocks, a
// [kt, dim] x [heads, dim]^T fp8 gemm, the scaled ReLU weighted by head, and
// the sum over heads in registers. Instead of being stored, each slot's
// logit becomes an unsigned key that orders like the float (0 for -inf, NaN
// and the slots outside the window or past N: "not selectable") and is kept
// in shared memory, T*kb keys (32 KiB for T*kb = 8192).
//
// Then the exact radix select of topk_f32.mlir on those keys, 8 bits a
// pass from the top (each key loop takes four keys a step, their loads
// issued together, `tile.unroll = 4`: 1-2.5% faster than one dependent
// load a step, thirty-eighth session); ties at the threshold go to the lower slot (ballot per
// warp, scan over the warps), and since the blocks are sorted first (-1
// last), to the lower token; slot s of block t = s / kb, row i = s % kb
// becomes the offset topk_block_index[m, t]*kb + i - ks[m]; -1 fills the
// slots past the selectable keys. Every written offset is in [0, ke - ks)
// because only in-window slots have keys. Missing blocks (negative
// indices, sorted last) cost nothing: the logits loop and the select run
// over the blocks present only.

// block_sparse_topk_tokens_ws is this kernel with a warp-specialized logits
// loop: a producer warpgroup issues the key tiles (reading the block
// indices from %index_tile itself), so the consumers' iterations wait on a
// stage's mbarrier instead of two block barriers and a TMA issue. 3.6-3.8%
// faster at three blocks per SM (docs/performance.md, twelfth session); the
// producer's registers leave too few for more blocks per SM.
// hisa-variant block_sparse_topk_tokens_ws replaces "@block_sparse_topk_tokens(" with "@block_sparse_topk_tokens_ws("
// hisa-variant block_sparse_topk_tokens_ws replaces "num_stages = 2 {" with "num_stages = 2 warp_specialized {"

// block_sparse_topk_tokens_overlap also issues each key tile's gemm while
// the consumers run the previous tile's epilogue (overlap_gemm, three
// stages). Exact (the operator's selections) but not faster: 8.34 vs 8.38
// ms at M = N = 32768, 33.52 vs 33.36 at 131072 (docs/performance.md,
// thirteenth session), so the operator keeps the _ws kernel.
// hisa-variant block_sparse_topk_tokens_overlap replaces "@block_sparse_topk_tokens(" with "@block_sparse_topk_tokens_overlap("
// hisa-variant block_sparse_topk_tokens_overlap replaces "num_stages = 2 {" with "num_stages = 3 warp_specialized overlap_gemm {"

// From hisa's device library (kernels-dsl/lib/select_key.mlir).
func.func private @select_key(f32) -> i32

tile.kernel @block_sparse_topk_tokens(
    %q: !tile.global<[?, heads, dim], f8E4M3FN>,
    %k: !tile.global<[?, dim], f8E4M3FN>,
    %k_scale: !tile.global<[?], f32>,
    %topk_block_index: !tile.global<[?, topk], i32>,
    %weights: !tile.global<[?, heads], f32>,
    %ks: !tile.global<[?], i32>,
    %ke: !tile.global<[?], i32>,
    %out: !tile.global<[?, ?], i32>)
    params {heads = 64, dim = 128, kb = 128, kt = 64, topk = 64, min_blocks = 3} {
  %m = tile.dim %q, 0 : !tile.global<[?, heads, dim], f8E4M3FN>
  tile.launch (%launch_index) in (%m) threads 128 blocks_per_sm "min_blocks" {
    // The last queries first: with causal windows they have the most
    // blocks, and ending on the shortest keeps the last wave short.
    %c1_launch = arith.constant 1 : index
    %last_query = arith.subi %m, %c1_launch : index
    %bx = arith.subi %last_query, %launch_index : index
    %q_tile = tile.alloc : !tile.shared<[heads, dim], f8E4M3FN>
    %weight_tile = tile.alloc : !tile.shared<[heads], f32>
    %index_tile = tile.alloc : !tile.shared<[topk], i32>
    %given_index = tile.alloc : !tile.shared<[topk], i32>
    %block_count = tile.alloc : !tile.shared<[1], i32>
    %k_tile = tile.alloc : !tile.shared<[kt, dim], f8E4M3FN>
    %scale_tile = tile.alloc : !tile.shared<[kt], f32>
    %scores = tile.alloc : !tile.frag<[kt, heads], f32>
    %row_logits = tile.alloc : !tile.frag<[kt], f32>
    // The head weights in registers, in the accumulator's layout (a [heads]
    // fragment would need the layout of a column statistic, which the [kt]
    // row logits of the same shape at kt = heads cannot share): rows repeat
    // the same values, which LLVM loads once. 3% faster than re-reading
    // them from shared memory every key tile.
    %weight_frag = tile.alloc : !tile.frag<[kt, heads], f32>
    %keys = tile.alloc : !tile.shared<[topk*kb], i32>
    // One histogram per warp: the top bits of real logits fall in a few
    // bins, and one block-wide histogram would serialize the atomics.
    %hist = tile.alloc : !tile.shared<[4, 256], i32>
    %counts = tile.alloc : !tile.shared<[256], i32>
    %at_least = tile.alloc : !tile.shared<[256], i32>
    %warp_ties = tile.alloc : !tile.shared<[4], i32>
    %warp_offsets = tile.alloc : !tile.shared<[4], i32>
    // [p, 0] threshold prefix, [p, 1] keys still needed at the threshold,
    // [p, 2] done (the whole threshold bin is needed); [0, 3] slot counter.
    // A pass reads the p of its parity and writes the other.
    %state = tile.alloc : !tile.shared<[2, 4], i32>
    %selectable_cell = tile.alloc : !tile.shared<[1], i32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %none = arith.constant -1 : i32
    %true = arith.constant true
    %zero_f = arith.constant 0.0 : f32
    %inf = arith.constant 0x7F800000 : f32
    %kb = tile.param "kb" : index
    %n = tile.dim %k, 0 : !tile.global<[?, dim], f8E4M3FN>
    %num_slots = tile.param "topk" : index
    %k_out = tile.dim %out, 1 : !tile.global<[?, ?], i32>
    %k_i32 = arith.index_cast %k_out : index to i32

    tile.copy %q[%bx, %c0, %c0] to %q_tile
        : !tile.global<[?, heads, dim], f8E4M3FN> to !tile.shared<[heads, dim], f8E4M3FN>
    tile.copy %weights[%bx, %c0] to %weight_tile
        : !tile.global<[?, heads], f32> to !tile.shared<[heads], f32>
    // The blocks in ascending order (-1 last; a stable rank sort, T x T
    // compares, one element a thread: a [topk] parallel would share the
    // [kt] fragments' layout at T = kt and repeat each element in 4
    // threads): slot order is then column order, so ties at the threshold
    // go to the lower token whatever order the blocks came in. Stage 1
    // writes them in the order its slot atomics ran, which differs from run
    // to run: without the sort two calls of hisa_indexer could select
    // different sets (a tie across the cut, ~2 rows per call at M = 32768).
    tile.copy %topk_block_index[%bx, %c0] to %given_index
        : !tile.global<[?, topk], i32> to !tile.shared<[topk], i32>
    %last_key = arith.constant 2147483647 : i32
    tile.parallel (%warp, %lane) in [4, 32] {
      %warp_first = arith.muli %warp, %c32 : index
      %t = arith.addi %warp_first, %lane : index
      scf.for %i = %t to %num_slots step %c128 {
        %b = tile.load %given_index[%i] : !tile.shared<[topk], i32>
        %b_missing = arith.cmpi slt, %b, %zero : i32
        %b_key = arith.select %b_missing, %last_key, %b : i32
        %rank, %present = scf.for %j = %c0 to %num_slots step %c1
            iter_args(%r = %c0, %p = %zero) -> (index, i32) {
          %u = tile.load %given_index[%j] : !tile.shared<[topk], i32>
          %u_missing = arith.cmpi slt, %u, %zero : i32
          %u_key = arith.select %u_missing, %last_key, %u : i32
          %less = arith.cmpi slt, %u_key, %b_key : i32
          %same = arith.cmpi eq, %u_key, %b_key : i32
          %earlier = arith.cmpi ult, %j, %i : index
          %same_earlier = arith.andi %same, %earlier : i1
          %before = arith.ori %less, %same_earlier : i1
          %step = arith.select %before, %c1, %c0 : index
          %next = arith.addi %r, %step : index
          %u_present = arith.select %u_missing, %zero, %one : i32
          %next_present = arith.addi %p, %u_present : i32
          scf.yield %next, %next_present : index, i32
        }
        tile.store %b, %index_tile[%rank] : !tile.shared<[topk], i32>
        // The blocks before the first -1: the logits loop and the select
        // run over those only (a causal query near its sequence's start has
        // fewer than T; their empty slots were 12.5% of the gemms at
        // M = N = 32768). Read back from shared memory, so the producer
        // warpgroup can read the trip count too.
        %first_slot = arith.cmpi eq, %i, %c0 : index
        scf.if %first_slot {
          tile.store %present, %block_count[%c0] : !tile.shared<[1], i32>
        }
      }
    }
    %valid_blocks_i32 = tile.load %block_count[%c0] : !tile.shared<[1], i32>
    %valid_blocks = arith.index_cast %valid_blocks_i32 : i32 to index
    %length = arith.muli %valid_blocks, %kb : index
    %start_i32 = tile.load %ks[%bx] : !tile.global<[?], i32>
    %end_i32 = tile.load %ke[%bx] : !tile.global<[?], i32>
    %start = arith.index_cast %start_i32 : i32 to index
    %end_window = arith.index_cast %end_i32 : i32 to index
    %end = arith.minsi %end_window, %n : index

    // 1. The logits of every slot, as keys, and the histogram of their top
    //    8 bits.
    %kt = tile.param "kt" : index
    %tiles_per_block = arith.divui %kb, %kt : index
    %num_tiles = arith.muli %valid_blocks, %tiles_per_block : index
    tile.parallel (%i, %h) in [kt, heads] {
      %w = tile.load %weight_tile[%h] : !tile.shared<[heads], f32>
      tile.store %w, %weight_frag[%i, %h] : !tile.frag<[kt, heads], f32>
    }
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
      // ReLU(x * s) = s * ReLU(x) when s is finite and >= 0 (dequantization
      // scales are): a tile whose scales all are multiplies once per slot
      // after the head sum instead of once per slot and head. Tested before
      // the gemm, whose wait would otherwise delay these loads.
      %plain_scales = tile.all_of %scale_tile : !tile.shared<[kt], f32> {
      ^bb0(%s: f32):
        %nonnegative = arith.cmpf oge, %s, %zero_f : f32
        %finite = arith.cmpf olt, %s, %inf : f32
        %plain = arith.andi %nonnegative, %finite : i1
        tile.yield %plain : i1
      }
      tile.gemm %k_tile, %q_tile, %scores transpose_b clear_accum
          : !tile.shared<[kt, dim], f8E4M3FN>, !tile.shared<[heads, dim], f8E4M3FN>
            -> !tile.frag<[kt, heads], f32>
      scf.if %plain_scales {
        tile.parallel (%i, %h) in [kt, heads] {
          %x = tile.load %scores[%i, %h] : !tile.frag<[kt, heads], f32>
          %wt = tile.load %weight_frag[%i, %h] : !tile.frag<[kt, heads], f32>
          %relu = arith.maximumf %x, %zero_f : f32
          %weighted = arith.mulf %relu, %wt : f32
          tile.store %weighted, %scores[%i, %h] : !tile.frag<[kt, heads], f32>
        }
        tile.reduce sum %scores to %row_logits dim = 1
            : !tile.frag<[kt, heads], f32> to !tile.frag<[kt], f32>
        tile.parallel (%i) in [kt] {
          %sum = tile.load %row_logits[%i] : !tile.frag<[kt], f32>
          %s = tile.load %scale_tile[%i] : !tile.shared<[kt], f32>
          %scaled = arith.mulf %sum, %s : f32
          tile.store %scaled, %row_logits[%i] : !tile.frag<[kt], f32>
        }
      } else {
        tile.parallel (%i, %h) in [kt, heads] {
          %x = tile.load %scores[%i, %h] : !tile.frag<[kt, heads], f32>
          %s = tile.load %scale_tile[%i] : !tile.shared<[kt], f32>
          %wt = tile.load %weight_frag[%i, %h] : !tile.frag<[kt, heads], f32>
          %scaled = arith.mulf %x, %s : f32
          %relu = arith.maximumf %scaled, %zero_f : f32
          %weighted = arith.mulf %relu, %wt : f32
          tile.store %weighted, %scores[%i, %h] : !tile.frag<[kt, heads], f32>
        }
        tile.reduce sum %scores to %row_logits dim = 1
            : !tile.frag<[kt, heads], f32> to !tile.frag<[kt], f32>
      }
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
      }
    }
    // (Cleared only now: the histograms then share bytes with the key-tile
    // stages, which lets 128-row tiles fit three blocks per SM.)
    // The histograms cleared and the select's state set in one parallel
    // (prefix 0, k needed, not done, no slot taken).
    tile.parallel (%w, %b) in [4, 256] {
      tile.store %zero, %hist[%w, %b] : !tile.shared<[4, 256], i32>
      %c8_s = arith.constant 8 : index
      %state_cell = arith.cmpi ult, %b, %c8_s : index
      %w_first = arith.cmpi eq, %w, %c0 : index
      %writes_state = arith.andi %state_cell, %w_first : i1
      scf.if %writes_state {
        %c4_s = arith.constant 4 : index
        %p = arith.divui %b, %c4_s : index
        %i = arith.remui %b, %c4_s : index
        %is_needed = arith.cmpi eq, %i, %c1 : index
        %init = arith.select %is_needed, %k_i32, %zero : i32
        tile.store %init, %state[%p, %i] : !tile.shared<[2, 4], i32>
      }
    }
    tile.parallel (%warp, %lane) in [4, 32] {
      %warp_first = arith.muli %warp, %c32 : index
      %t = arith.addi %warp_first, %lane : index
      scf.for %c = %t to %length step %c128 {
        %key = tile.load %keys[%c] : !tile.shared<[topk*kb], i32>
        %selectable = arith.cmpi ne, %key, %zero : i32
        scf.if %selectable {
          %c24 = arith.constant 24 : i32
          %digit = arith.shrui %key, %c24 : i32
          %bin = arith.index_cast %digit : i32 to index
          %old = tile.atomic add %one, %hist[%warp, %bin] : !tile.shared<[4, 256], i32>
        }
      } {tile.unroll = 4}
    }

    // 2. Radix select: per digit, two parallels and three barriers. Thread
    //    t owns bins 255 - 2t and 254 - 2t (the lower threads the higher
    //    bins): it sums the four warps' counts of its bins, a warp scan
    //    gives the counts above them within its warp, and after one barrier
    //    the warps' totals make them block-wide; the thread then tests its
    //    two bins for the threshold and clears them. The first digit's
    //    total is the number of selectable keys: when it is at most k,
    //    every one is taken and no further digit is counted.
    %c24_i32 = arith.constant 24 : i32
    %final:3 = scf.while (%shift = %c24_i32, %parity = %c0, %go = %true)
        : (i32, index, i1) -> (i32, index, i1) {
      scf.condition(%go) %shift, %parity, %go : i32, index, i1
    } do {
    ^bb0(%shift: i32, %parity: index, %unused: i1):
      %prefix = tile.load %state[%parity, %c0] : !tile.shared<[2, 4], i32>
      %still_needed = tile.load %state[%parity, %c1] : !tile.shared<[2, 4], i32>
      %other = arith.subi %c1, %parity : index
      %first_pass = arith.cmpi eq, %shift, %c24_i32 : i32
      %c255 = arith.constant 255 : index
      %c254 = arith.constant 254 : index
      %c2_b = arith.constant 2 : index
      %c4_w = arith.constant 4 : index
      tile.parallel (%warp, %lane) in [4, 32] {
        %warp_first = arith.muli %warp, %c32 : index
        %t = arith.addi %warp_first, %lane : index
        %two_t = arith.muli %t, %c2_b : index
        %b_hi = arith.subi %c255, %two_t : index
        %b_lo = arith.subi %c254, %two_t : index
        %c_hi, %c_lo = scf.for %w = %c0 to %c4_w step %c1
            iter_args(%sum_hi = %zero, %sum_lo = %zero) -> (i32, i32) {
          %part_hi = tile.load %hist[%w, %b_hi] : !tile.shared<[4, 256], i32>
          %part_lo = tile.load %hist[%w, %b_lo] : !tile.shared<[4, 256], i32>
          %more_hi = arith.addi %sum_hi, %part_hi : i32
          %more_lo = arith.addi %sum_lo, %part_lo : i32
          scf.yield %more_hi, %more_lo : i32, i32
        }
        %mine = arith.addi %c_hi, %c_lo : i32
        %higher, %warp_total = tile.warp_scan sum %mine exclusive : i32
        // Within the warp: keys at least each bin, and each bin's count.
        %ge_hi = arith.addi %higher, %c_hi : i32
        %ge_lo = arith.addi %ge_hi, %c_lo : i32
        tile.store %ge_hi, %at_least[%b_hi] : !tile.shared<[256], i32>
        tile.store %ge_lo, %at_least[%b_lo] : !tile.shared<[256], i32>
        tile.store %c_hi, %counts[%b_hi] : !tile.shared<[256], i32>
        tile.store %c_lo, %counts[%b_lo] : !tile.shared<[256], i32>
        %first_lane = arith.cmpi eq, %lane, %c0 : index
        scf.if %first_lane {
          tile.store %warp_total, %warp_ties[%warp] : !tile.shared<[4], i32>
        }
      }
      tile.parallel (%warp, %lane) in [4, 32] {
        %warp_first = arith.muli %warp, %c32 : index
        %t = arith.addi %warp_first, %lane : index
        %two_t = arith.muli %t, %c2_b : index
        %b_hi = arith.subi %c255, %two_t : index
        %b_lo = arith.subi %c254, %two_t : index
        // The keys in the warps before this one (their bins are higher).
        %offset, %grand = scf.for %w = %c0 to %c4_w step %c1
            iter_args(%before = %zero, %all = %zero) -> (i32, i32) {
          %total = tile.load %warp_ties[%w] : !tile.shared<[4], i32>
          %earlier = arith.cmpi ult, %w, %warp : index
          %add = arith.select %earlier, %total, %zero : i32
          %next_before = arith.addi %before, %add : i32
          %next_all = arith.addi %all, %total : i32
          scf.yield %next_before, %next_all : i32, i32
        }
        scf.for %j = %c0 to %c2_b step %c1 {
          %b = arith.subi %b_hi, %j : index
          %ge_warp = tile.load %at_least[%b] : !tile.shared<[256], i32>
          %in_bin = tile.load %counts[%b] : !tile.shared<[256], i32>
          %ge = arith.addi %ge_warp, %offset : i32
          %gt = arith.subi %ge, %in_bin : i32
          %reaches = arith.cmpi sge, %ge, %still_needed : i32
          %short = arith.cmpi slt, %gt, %still_needed : i32
          %threshold_bin = arith.andi %reaches, %short : i1
          scf.if %threshold_bin {
            %digit = arith.index_cast %b : index to i32
            %placed = arith.shli %digit, %shift : i32
            %new_prefix = arith.ori %prefix, %placed : i32
            %need = arith.subi %still_needed, %gt : i32
            %whole_bin = arith.cmpi eq, %in_bin, %need : i32
            %done = arith.extui %whole_bin : i1 to i32
            %c2 = arith.constant 2 : index
            tile.store %new_prefix, %state[%other, %c0] : !tile.shared<[2, 4], i32>
            tile.store %need, %state[%other, %c1] : !tile.shared<[2, 4], i32>
            tile.store %done, %state[%other, %c2] : !tile.shared<[2, 4], i32>
          }
          // The next digit counts into cleared histograms.
          scf.for %w = %c0 to %c4_w step %c1 {
            tile.store %zero, %hist[%w, %b] : !tile.shared<[4, 256], i32>
          }
        }
        %first_thread = arith.cmpi eq, %t, %c0 : index
        %record = arith.andi %first_pass, %first_thread : i1
        scf.if %record {
          tile.store %grand, %selectable_cell[%c0] : !tile.shared<[1], i32>
        }
      }
      %selectable_so_far = tile.load %selectable_cell[%c0] : !tile.shared<[1], i32>
      %all_fit = arith.cmpi sle, %selectable_so_far, %k_i32 : i32
      %c2_s = arith.constant 2 : index
      %done_next = tile.load %state[%other, %c2_s] : !tile.shared<[2, 4], i32>
      %c8_i32 = arith.constant 8 : i32
      %next_shift = arith.subi %shift, %c8_i32 : i32
      %more_bits = arith.cmpi sge, %next_shift, %zero : i32
      %open = arith.cmpi eq, %done_next, %zero : i32
      %search = arith.xori %all_fit, %true : i1
      %bits_open = arith.andi %more_bits, %open : i1
      %again = arith.andi %bits_open, %search : i1
      scf.if %again {
        // The next digit's histograms among the keys that share the prefix
        // found so far.
        %next_prefix = tile.load %state[%other, %c0] : !tile.shared<[2, 4], i32>
        %above = arith.addi %next_shift, %c8_i32 : i32
        %prefix_high = arith.shrui %next_prefix, %above : i32
        tile.parallel (%warp, %lane) in [4, 32] {
          %warp_first = arith.muli %warp, %c32 : index
          %t = arith.addi %warp_first, %lane : index
          scf.for %c = %t to %length step %c128 {
            %key = tile.load %keys[%c] : !tile.shared<[topk*kb], i32>
            %key_high = arith.shrui %key, %above : i32
            %same_prefix = arith.cmpi eq, %key_high, %prefix_high : i32
            %selectable = arith.cmpi ne, %key, %zero : i32
            %counted = arith.andi %same_prefix, %selectable : i1
            scf.if %counted {
              %shifted = arith.shrui %key, %next_shift : i32
              %mask = arith.constant 255 : i32
              %digit = arith.andi %shifted, %mask : i32
              %bin = arith.index_cast %digit : i32 to index
              %old = tile.atomic add %one, %hist[%warp, %bin] : !tile.shared<[4, 256], i32>
            }
          } {tile.unroll = 4}
        }
      }
      scf.yield %next_shift, %other, %again : i32, index, i1
    }
    %selectable_count = tile.load %selectable_cell[%c0] : !tile.shared<[1], i32>
    %take_all = arith.cmpi sle, %selectable_count, %k_i32 : i32

    // 3. Keys above the threshold, or at least the threshold when all of
    //    those equal to it are needed (always so when every selectable key
    //    is taken: the threshold is then 1, the least selectable key).
    %found = tile.load %state[%final#1, %c0] : !tile.shared<[2, 4], i32>
    %need = tile.load %state[%final#1, %c1] : !tile.shared<[2, 4], i32>
    %c2 = arith.constant 2 : index
    %done_i32 = tile.load %state[%final#1, %c2] : !tile.shared<[2, 4], i32>
    %done = arith.cmpi ne, %done_i32, %zero : i32
    %threshold = arith.select %take_all, %one, %found : i32
    %all_at_threshold = arith.ori %take_all, %done : i1
    tile.parallel (%warp, %lane) in [4, 32] {
      %warp_first = arith.muli %warp, %c32 : index
      %t = arith.addi %warp_first, %lane : index
      scf.for %c = %t to %length step %c128 {
        %key = tile.load %keys[%c] : !tile.shared<[topk*kb], i32>
        %above = arith.cmpi ugt, %key, %threshold : i32
        %at_threshold = arith.cmpi eq, %key, %threshold : i32
        %equal_taken = arith.andi %at_threshold, %all_at_threshold : i1
        %take = arith.ori %above, %equal_taken : i1
        scf.if %take {
          %c3 = arith.constant 3 : index
          %slot_i32 = tile.atomic add %one, %state[%c0, %c3] : !tile.shared<[2, 4], i32>
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
      } {tile.unroll = 4}
    }

    // 4. Ties at the threshold, in slot order, 128 slots at a time: a
    //    ballot per warp, a scan over the warps, until enough are taken.
    %ties_needed = arith.xori %all_at_threshold, %true : i1
    scf.if %ties_needed {
      %c3 = arith.constant 3 : index
      %base = tile.load %state[%c0, %c3] : !tile.shared<[2, 4], i32>
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
