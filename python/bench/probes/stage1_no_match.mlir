// PROBE (python/bench/probes/stage1_source_ab.py): pool_topk_blocks.mlir
// with one histogram atomic per key instead of one per distinct bin of a
// warp (tile.warp_match). Faster (2.18 vs 2.45 ms at M = N = 131072, H100):
// it became the kernel (thirty-eighth session).
//
// HISA fused stage 1 (KERNELS.md "Fused indexer stages"): pooled-key MQA
// logits (1.2), cleaning (1.3) and the exact top-k of the key blocks (1.4),
// in one kernel. The [M, Nb] logits never reach global memory.
//
// A block of threads takes block_q queries. The logits loop is
// pool_mqa_logits.mlir's: the union of the queries' block windows in tiles
// of block_n pooled keys, each an fp8 gemm against all block_q*heads query
// rows, the scaled ReLU weighted by head, the sum over heads in registers.
// Each query keeps the logits of its own window [bks, bke) in shared memory
// as unsigned keys that order like the floats, cleaned on the way: the
// first and last block of the window become +inf (they always survive), a
// -inf or NaN logit becomes 0 ("not selectable"). A window may span up to
// nb_cache pooled keys (the operator picks nb_cache, and block_q so that
// block_q * nb_cache keys fit).
//
// The windows are token windows [ks, ke) of keys pooled kb to a block
// (kb = 1: block windows bks, bke as the anchor's stage takes them).
//
// Then the exact radix select of topk_f32.mlir on those keys, a warp per
// query and four queries at a time: 8 bits a pass from the top, ties to the
// lower block; the chosen positions become block indices bks + position,
// and -1 fills the slots past the window's blocks. (One query at a time
// over the whole block cost ~25 block barriers a query: 39% of the kernel
// at M = N = 32768, 32% at 131072.)

// From hisa's device library (kernels-dsl/lib/select_key.mlir).
func.func private @select_key(f32) -> i32

tile.kernel @pool_topk_blocks(
    %q: !tile.global<[?, dim], f8E4M3FN>,
    %blocked_k: !tile.global<[?, dim], f8E4M3FN>,
    %blocked_scale: !tile.global<[?], f32>,
    %weights: !tile.global<[?, heads], f32>,
    %ks: !tile.global<[?], i32>,
    %ke: !tile.global<[?], i32>,
    %out: !tile.global<[?, ?], i32>)
    params {heads = 64, dim = 128, block_q = 4, block_n = 64, nb_cache = 1024, kb = 1} {
  %m = tile.dim %ks, 0 : !tile.global<[?], i32>
  %block_q = tile.param "block_q" : index
  %num_q_blocks = arith.ceildivui %m, %block_q : index
  tile.launch (%launch_index) in (%num_q_blocks) threads 128 {
    // The last query blocks first: with causal windows they walk the most
    // keys, and starting the longest work first keeps the last wave short.
    %c1_blocks = arith.constant 1 : index
    %last_block = arith.subi %num_q_blocks, %c1_blocks : index
    %bx = arith.subi %last_block, %launch_index : index
    %starts = tile.alloc : !tile.shared<[block_q], i32>
    %ends = tile.alloc : !tile.shared<[block_q], i32>
    %q_rows = tile.alloc : !tile.shared<[block_q*heads, dim], f8E4M3FN>
    %weight_tile = tile.alloc : !tile.shared<[block_q, heads], f32>
    %k_tile = tile.alloc : !tile.shared<[block_n, dim], f8E4M3FN>
    %scale_tile = tile.alloc : !tile.shared<[block_n], f32>
    %scores = tile.alloc : !tile.frag<[block_n, block_q*heads], f32>
    %logits = tile.alloc : !tile.frag<[block_n, block_q], f32>
    %keys = tile.alloc : !tile.shared<[block_q, nb_cache], i32>
    // The histogram of each warp's query.
    %hist = tile.alloc : !tile.shared<[4, 256], i32>
    %state = tile.alloc : !tile.shared<[2, 4, 4], i32>
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
    %block_n = tile.param "block_n" : index
    %num_blocks = tile.dim %blocked_k, 0 : !tile.global<[?, dim], f8E4M3FN>
    %num_blocks_i32 = arith.index_cast %num_blocks : index to i32
    %k_out = tile.dim %out, 1 : !tile.global<[?, ?], i32>
    %k_i32 = arith.index_cast %k_out : index to i32

    %heads = tile.param "heads" : index
    %q0 = arith.muli %bx, %block_q : index
    %q_row0 = arith.muli %q0, %heads : index
    tile.copy %ks[%q0] to %starts : !tile.global<[?], i32> to !tile.shared<[block_q], i32>
    tile.copy %ke[%q0] to %ends : !tile.global<[?], i32> to !tile.shared<[block_q], i32>
    tile.copy %q[%q_row0, %c0] to %q_rows
        : !tile.global<[?, dim], f8E4M3FN> to !tile.shared<[block_q*heads, dim], f8E4M3FN>
    tile.copy %weights[%q0, %c0] to %weight_tile
        : !tile.global<[?, heads], f32> to !tile.shared<[block_q, heads], f32>
    // Token windows [ks, ke) become block windows [ks / kb, ceil(ke / kb))
    // (kb = 1: bks and bke were given).
    %kb = tile.param "kb" : index
    %kb_i32 = arith.index_cast %kb : index to i32
    tile.parallel (%i) in [block_q] {
      %s_token = tile.load %starts[%i] : !tile.shared<[block_q], i32>
      %e_token = tile.load %ends[%i] : !tile.shared<[block_q], i32>
      %s_pos = arith.maxsi %s_token, %zero : i32
      %e_pos = arith.maxsi %e_token, %zero : i32
      %s_block = arith.divui %s_pos, %kb_i32 : i32
      %e_block = arith.ceildivui %e_pos, %kb_i32 : i32
      tile.store %s_block, %starts[%i] : !tile.shared<[block_q], i32>
      tile.store %e_block, %ends[%i] : !tile.shared<[block_q], i32>
    }
    // Union of the windows of this block's queries (queries past M are
    // skipped); the walk starts at a multiple of 4 (16-byte scale pieces).
    %max_i32 = arith.constant 2147483647 : i32
    %lo, %hi = scf.for %i = %c0 to %block_q step %c1
        iter_args(%lo_acc = %max_i32, %hi_acc = %zero) -> (i32, i32) {
      %query = arith.addi %q0, %i : index
      %valid = arith.cmpi ult, %query, %m : index
      %s = tile.load %starts[%i] : !tile.shared<[block_q], i32>
      %e = tile.load %ends[%i] : !tile.shared<[block_q], i32>
      %lo_min = arith.minsi %lo_acc, %s : i32
      %hi_max = arith.maxsi %hi_acc, %e : i32
      %lo_next = arith.select %valid, %lo_min, %lo_acc : i32
      %hi_next = arith.select %valid, %hi_max, %hi_acc : i32
      scf.yield %lo_next, %hi_next : i32, i32
    }
    %c4 = arith.constant 4 : index
    %lo_raw = arith.index_cast %lo : i32 to index
    %lo_quads = arith.divsi %lo_raw, %c4 : index
    %lo_index = arith.muli %lo_quads, %c4 : index
    %hi_index = arith.index_cast %hi : i32 to index
    %hi_clamped = arith.minsi %hi_index, %num_blocks : index
    %span = arith.subi %hi_clamped, %lo_index : index
    %span_pos = arith.maxsi %span, %c0 : index
    %num_tiles = arith.ceildivui %span_pos, %block_n : index

    // 1. Logits of each query's window, cleaned, as keys.
    tile.pipelined %t = %c0 to %num_tiles step %c1 num_stages = 2 {
      %tile_offset = arith.muli %t, %block_n : index
      %n0 = arith.addi %lo_index, %tile_offset : index
      tile.copy %blocked_k[%n0, %c0] to %k_tile
          : !tile.global<[?, dim], f8E4M3FN> to !tile.shared<[block_n, dim], f8E4M3FN>
      tile.copy %blocked_scale[%n0] to %scale_tile
          : !tile.global<[?], f32> to !tile.shared<[block_n], f32>
      tile.gemm %k_tile, %q_rows, %scores transpose_b clear_accum
          : !tile.shared<[block_n, dim], f8E4M3FN>, !tile.shared<[block_q*heads, dim], f8E4M3FN>
            -> !tile.frag<[block_n, block_q*heads], f32>
      %per_query = tile.view %scores
          : !tile.frag<[block_n, block_q*heads], f32> to !tile.frag<[block_n, block_q, heads], f32>
      // ReLU(x * s) = s * ReLU(x) when s is finite and >= 0 (dequantization
      // scales are): a tile whose scales all are multiplies once after the
      // head sum instead of once per head.
      %plain_scales = tile.all_of %scale_tile : !tile.shared<[block_n], f32> {
      ^bb0(%s: f32):
        %nonnegative = arith.cmpf oge, %s, %zero_f : f32
        %finite = arith.cmpf olt, %s, %inf : f32
        %plain = arith.andi %nonnegative, %finite : i1
        tile.yield %plain : i1
      }
      scf.if %plain_scales {
        tile.parallel (%n, %qi, %h) in [block_n, block_q, heads] {
          %x = tile.load %per_query[%n, %qi, %h] : !tile.frag<[block_n, block_q, heads], f32>
          %wt = tile.load %weight_tile[%qi, %h] : !tile.shared<[block_q, heads], f32>
          %relu = arith.maximumf %x, %zero_f : f32
          %weighted = arith.mulf %relu, %wt : f32
          tile.store %weighted, %per_query[%n, %qi, %h] : !tile.frag<[block_n, block_q, heads], f32>
        }
        tile.reduce sum %per_query to %logits dim = 2
            : !tile.frag<[block_n, block_q, heads], f32> to !tile.frag<[block_n, block_q], f32>
        tile.parallel (%n, %qi) in [block_n, block_q] {
          %sum = tile.load %logits[%n, %qi] : !tile.frag<[block_n, block_q], f32>
          %s = tile.load %scale_tile[%n] : !tile.shared<[block_n], f32>
          %scaled = arith.mulf %sum, %s : f32
          tile.store %scaled, %logits[%n, %qi] : !tile.frag<[block_n, block_q], f32>
        }
      } else {
        tile.parallel (%n, %qi, %h) in [block_n, block_q, heads] {
          %x = tile.load %per_query[%n, %qi, %h] : !tile.frag<[block_n, block_q, heads], f32>
          %s = tile.load %scale_tile[%n] : !tile.shared<[block_n], f32>
          %wt = tile.load %weight_tile[%qi, %h] : !tile.shared<[block_q, heads], f32>
          %scaled = arith.mulf %x, %s : f32
          %relu = arith.maximumf %scaled, %zero_f : f32
          %weighted = arith.mulf %relu, %wt : f32
          tile.store %weighted, %per_query[%n, %qi, %h] : !tile.frag<[block_n, block_q, heads], f32>
        }
        tile.reduce sum %per_query to %logits dim = 2
            : !tile.frag<[block_n, block_q, heads], f32> to !tile.frag<[block_n, block_q], f32>
      }
      tile.parallel (%n, %qi) in [block_n, block_q] {
        %v = tile.load %logits[%n, %qi] : !tile.frag<[block_n, block_q], f32>
        %key_block = arith.addi %n0, %n : index
        %block_i32 = arith.index_cast %key_block : index to i32
        %s = tile.load %starts[%qi] : !tile.shared<[block_q], i32>
        %e_raw = tile.load %ends[%qi] : !tile.shared<[block_q], i32>
        %e = arith.minsi %e_raw, %num_blocks_i32 : i32
        %query = arith.addi %q0, %qi : index
        %valid_query = arith.cmpi ult, %query, %m : index
        %after_start = arith.cmpi sge, %block_i32, %s : i32
        %before_end = arith.cmpi slt, %block_i32, %e : i32
        %in_window = arith.andi %after_start, %before_end : i1
        %stored = arith.andi %in_window, %valid_query : i1
        scf.if %stored {
          // The device library's order-preserving key (0: -inf, NaN).
          %key = func.call @select_key(%v) : (f32) -> i32
          // The sink (first) and local (last) block: +inf.
          %last = arith.subi %e, %one : i32
          %is_first = arith.cmpi eq, %block_i32, %s : i32
          %is_last = arith.cmpi eq, %block_i32, %last : i32
          %kept = arith.ori %is_first, %is_last : i1
          %inf_key = arith.constant -8388608 : i32
          %cleaned = arith.select %kept, %inf_key, %key : i32
          %position_i32 = arith.subi %block_i32, %s : i32
          %position = arith.index_cast %position_i32 : i32 to index
          tile.store %cleaned, %keys[%qi, %position] : !tile.shared<[block_q, nb_cache], i32>
        }
      }
    }

    // 2. The exact top-k of each query's window keys, a warp per query (four
    //    at a time): 8-bit radix passes from the top. All four warps run a
    //    pass together, so a pass costs two block barriers whatever the
    //    number of queries (one warp's histogram, then the warp's scan of
    //    its 256 bins).
    %c4_warps = arith.constant 4 : index
    %num_groups = arith.ceildivui %block_q, %c4_warps : index
    tile.fill %hist, %zero : !tile.shared<[4, 256], i32>, i32
    scf.for %group = %c0 to %num_groups step %c1 {
      %group_q0 = arith.muli %group, %c4_warps : index
      // [p, w, 0] threshold prefix, [p, w, 1] keys still needed at the
      // threshold, [p, w, 2] done (the whole threshold bin is needed, or
      // every selectable key is), [p, w, 3] selectable keys. A pass reads
      // the p of its parity and writes the other. A warp without a query
      // starts done.
      tile.parallel (%p, %w, %i) in [2, 4, 4] {
        %qi = arith.addi %group_q0, %w : index
        %query = arith.addi %q0, %qi : index
        %in_block = arith.cmpi ult, %qi, %block_q : index
        %in_m = arith.cmpi ult, %query, %m : index
        %valid = arith.andi %in_block, %in_m : i1
        %is_needed = arith.cmpi eq, %i, %c1 : index
        %c2_i = arith.constant 2 : index
        %is_done = arith.cmpi eq, %i, %c2_i : index
        %no_query = arith.xori %valid, %true : i1
        %done_init = arith.extui %no_query : i1 to i32
        %other_init = arith.select %is_needed, %k_i32, %zero : i32
        %init = arith.select %is_done, %done_init, %other_init : i32
        tile.store %init, %state[%p, %w, %i] : !tile.shared<[2, 4, 4], i32>
      }

      %c24_i32 = arith.constant 24 : i32
      %final:2 = scf.while (%shift = %c24_i32, %parity = %c0)
          : (i32, index) -> (i32, index) {
        %more_bits = arith.cmpi sge, %shift, %zero : i32
        %false_open = arith.constant false
        %open = scf.for %w = %c0 to %c4_warps step %c1
            iter_args(%any = %false_open) -> (i1) {
          %c2_d = arith.constant 2 : index
          %done_w = tile.load %state[%parity, %w, %c2_d] : !tile.shared<[2, 4, 4], i32>
          %open_w = arith.cmpi eq, %done_w, %zero : i32
          %any_open = arith.ori %any, %open_w : i1
          scf.yield %any_open : i1
        }
        %go = arith.andi %more_bits, %open : i1
        scf.condition(%go) %shift, %parity : i32, index
      } do {
      ^bb0(%shift: i32, %parity: index):
        %other = arith.subi %c1, %parity : index
        %first_pass = arith.cmpi eq, %shift, %c24_i32 : i32
        %c8_i32 = arith.constant 8 : i32
        %c31_i32 = arith.constant 31 : i32
        %c255_i32 = arith.constant 255 : i32
        %c256_i32 = arith.constant 256 : i32
        // (The first pass has no prefix; 32 would be an undefined shift.)
        %above_raw = arith.addi %shift, %c8_i32 : i32
        %above = arith.minui %above_raw, %c31_i32 : i32
        %c2_s = arith.constant 2 : index
        %c3_s = arith.constant 3 : index
        // The histogram of this digit among the keys that share the prefix
        // found so far; a warp's lanes with the same bin add once.
        tile.parallel (%w, %lane) in [4, 32] {
          %done_w = tile.load %state[%parity, %w, %c2_s] : !tile.shared<[2, 4, 4], i32>
          %open_w = arith.cmpi eq, %done_w, %zero : i32
          scf.if %open_w {
            %qi = arith.addi %group_q0, %w : index
            %prefix = tile.load %state[%parity, %w, %c0] : !tile.shared<[2, 4, 4], i32>
            %prefix_high = arith.shrui %prefix, %above : i32
            %s_i32 = tile.load %starts[%qi] : !tile.shared<[block_q], i32>
            %e_raw = tile.load %ends[%qi] : !tile.shared<[block_q], i32>
            %e_i32 = arith.minsi %e_raw, %num_blocks_i32 : i32
            %e_above = arith.maxsi %e_i32, %s_i32 : i32
            %length_i32 = arith.subi %e_above, %s_i32 : i32
            %length = arith.index_cast %length_i32 : i32 to index
            scf.for %chunk = %c0 to %length step %c32 {
              %c = arith.addi %chunk, %lane : index
              %inside = arith.cmpi ult, %c, %length : index
              %c_safe = arith.select %inside, %c, %c0 : index
              %key = tile.load %keys[%qi, %c_safe] : !tile.shared<[block_q, nb_cache], i32>
              %key_high = arith.shrui %key, %above : i32
              %same_prefix = arith.cmpi eq, %key_high, %prefix_high : i32
              %in_prefix = arith.ori %first_pass, %same_prefix : i1
              %selectable = arith.cmpi ne, %key, %zero : i32
              %counted_key = arith.andi %in_prefix, %selectable : i1
              %counted = arith.andi %counted_key, %inside : i1
              %shifted = arith.shrui %key, %shift : i32
              %digit = arith.andi %shifted, %c255_i32 : i32
              scf.if %counted {
                %bin = arith.index_cast %digit : i32 to index
                %old = tile.atomic add %one, %hist[%w, %bin] : !tile.shared<[4, 256], i32>
              }
            }
          }
        }
        // The threshold bin: where "keys at least this bin" reaches the
        // number still needed. Lane l sums bins 8 * (31 - l) .. + 7, so the
        // lanes below it hold the bins above: a warp scan gives the count
        // above its bins. Then it walks its bins down (clearing them for
        // the next pass). The first pass also counts the selectable keys;
        // when they are at most k, all are taken (threshold 1, the least
        // selectable key, and done).
        tile.parallel (%w, %lane) in [4, 32] {
          %done_w = tile.load %state[%parity, %w, %c2_s] : !tile.shared<[2, 4, 4], i32>
          %open_w = arith.cmpi eq, %done_w, %zero : i32
          %first_lane = arith.cmpi eq, %lane, %c0 : index
          scf.if %open_w {
            %prefix = tile.load %state[%parity, %w, %c0] : !tile.shared<[2, 4, 4], i32>
            %still_needed = tile.load %state[%parity, %w, %c1] : !tile.shared<[2, 4, 4], i32>
            %c8 = arith.constant 8 : index
            %c31 = arith.constant 31 : index
            %lane_from_top = arith.subi %c31, %lane : index
            %first_bin = arith.muli %lane_from_top, %c8 : index
            %mine = scf.for %j = %c0 to %c8 step %c1 iter_args(%sum = %zero) -> (i32) {
              %b = arith.addi %first_bin, %j : index
              %part = tile.load %hist[%w, %b] : !tile.shared<[4, 256], i32>
              %more = arith.addi %sum, %part : i32
              scf.yield %more : i32
            }
            %higher, %total = tile.warp_scan sum %mine exclusive : i32
            %known = tile.load %state[%parity, %w, %c3_s] : !tile.shared<[2, 4, 4], i32>
            %selectable_count = arith.select %first_pass, %total, %known : i32
            %fits = arith.cmpi sle, %total, %still_needed : i32
            %take_all = arith.andi %first_pass, %fits : i1
            scf.if %first_lane {
              tile.store %selectable_count, %state[%other, %w, %c3_s] : !tile.shared<[2, 4, 4], i32>
              scf.if %take_all {
                tile.store %one, %state[%other, %w, %c0] : !tile.shared<[2, 4, 4], i32>
                tile.store %total, %state[%other, %w, %c1] : !tile.shared<[2, 4, 4], i32>
                tile.store %one, %state[%other, %w, %c2_s] : !tile.shared<[2, 4, 4], i32>
              }
            }
            %search = arith.xori %take_all, %true : i1
            %c7 = arith.constant 7 : index
            %last_bin = arith.addi %first_bin, %c7 : index
            %walked = scf.for %j = %c0 to %c8 step %c1 iter_args(%gt = %higher) -> (i32) {
              %b = arith.subi %last_bin, %j : index
              %in_bin = tile.load %hist[%w, %b] : !tile.shared<[4, 256], i32>
              tile.store %zero, %hist[%w, %b] : !tile.shared<[4, 256], i32>
              %ge = arith.addi %gt, %in_bin : i32
              %reaches = arith.cmpi sge, %ge, %still_needed : i32
              %short = arith.cmpi slt, %gt, %still_needed : i32
              %is_threshold = arith.andi %reaches, %short : i1
              %found = arith.andi %is_threshold, %search : i1
              scf.if %found {
                %digit = arith.index_cast %b : index to i32
                %placed = arith.shli %digit, %shift : i32
                %new_prefix = arith.ori %prefix, %placed : i32
                %need = arith.subi %still_needed, %gt : i32
                %whole_bin = arith.cmpi eq, %in_bin, %need : i32
                %done = arith.extui %whole_bin : i1 to i32
                tile.store %new_prefix, %state[%other, %w, %c0] : !tile.shared<[2, 4, 4], i32>
                tile.store %need, %state[%other, %w, %c1] : !tile.shared<[2, 4, 4], i32>
                tile.store %done, %state[%other, %w, %c2_s] : !tile.shared<[2, 4, 4], i32>
              }
              scf.yield %ge : i32
            }
          } else {
            // Done: the state goes on to the next parity unchanged.
            scf.if %first_lane {
              scf.for %i = %c0 to %c4_warps step %c1 {
                %v = tile.load %state[%parity, %w, %i] : !tile.shared<[2, 4, 4], i32>
                tile.store %v, %state[%other, %w, %i] : !tile.shared<[2, 4, 4], i32>
              }
            }
          }
        }
        %next_shift = arith.subi %shift, %c8_i32 : i32
        scf.yield %next_shift, %other : i32, index
      }

      // 3. Per warp's query, in column order 32 keys at a time: the keys
      //    above the threshold (and those equal to it when all of them are
      //    needed), slots by ballot; then the ties at the threshold until
      //    enough are taken; then -1 in the slots past the selectable keys.
      tile.parallel (%w, %lane) in [4, 32] {
        %qi = arith.addi %group_q0, %w : index
        %query = arith.addi %q0, %qi : index
        %in_block = arith.cmpi ult, %qi, %block_q : index
        %in_m = arith.cmpi ult, %query, %m : index
        %valid = arith.andi %in_block, %in_m : i1
        scf.if %valid {
          %c2_f = arith.constant 2 : index
          %c3_f = arith.constant 3 : index
          %threshold = tile.load %state[%final#1, %w, %c0] : !tile.shared<[2, 4, 4], i32>
          %need = tile.load %state[%final#1, %w, %c1] : !tile.shared<[2, 4, 4], i32>
          %done_i32 = tile.load %state[%final#1, %w, %c2_f] : !tile.shared<[2, 4, 4], i32>
          %selectable_count = tile.load %state[%final#1, %w, %c3_f] : !tile.shared<[2, 4, 4], i32>
          %all_at_threshold = arith.cmpi ne, %done_i32, %zero : i32
          %s_i32 = tile.load %starts[%qi] : !tile.shared<[block_q], i32>
          %e_raw = tile.load %ends[%qi] : !tile.shared<[block_q], i32>
          %e_i32 = arith.minsi %e_raw, %num_blocks_i32 : i32
          %e_above = arith.maxsi %e_i32, %s_i32 : i32
          %length_i32 = arith.subi %e_above, %s_i32 : i32
          %length = arith.index_cast %length_i32 : i32 to index
          %lane_i32 = arith.index_cast %lane : index to i32
          %lane_bit = arith.shli %one, %lane_i32 : i32
          %lanes_below = arith.subi %lane_bit, %one : i32
          %taken = scf.for %chunk = %c0 to %length step %c32
              iter_args(%count = %zero) -> (i32) {
            %c = arith.addi %chunk, %lane : index
            %inside = arith.cmpi ult, %c, %length : index
            %c_safe = arith.select %inside, %c, %c0 : index
            %key = tile.load %keys[%qi, %c_safe] : !tile.shared<[block_q, nb_cache], i32>
            %above = arith.cmpi ugt, %key, %threshold : i32
            %at_threshold = arith.cmpi eq, %key, %threshold : i32
            %equal_taken = arith.andi %at_threshold, %all_at_threshold : i1
            %wanted = arith.ori %above, %equal_taken : i1
            %take = arith.andi %wanted, %inside : i1
            %bits = tile.vote ballot %take : i32
            scf.if %take {
              %below = arith.andi %bits, %lanes_below : i32
              %rank = math.ctpop %below : i32
              %slot_i32 = arith.addi %count, %rank : i32
              %slot = arith.index_cast %slot_i32 : i32 to index
              %c_i32 = arith.index_cast %c : index to i32
              %block_i32 = arith.addi %s_i32, %c_i32 : i32
              tile.store %block_i32, %out[%query, %slot] : !tile.global<[?, ?], i32>
            }
            %chunk_taken = math.ctpop %bits : i32
            %next = arith.addi %count, %chunk_taken : i32
            scf.yield %next : i32
          }
          %ties_needed = arith.xori %all_at_threshold, %true : i1
          scf.if %ties_needed {
            %left:2 = scf.while (%chunk = %c0, %ties = %zero) : (index, i32) -> (index, i32) {
              %slots_left = arith.cmpi ult, %chunk, %length : index
              %short = arith.cmpi slt, %ties, %need : i32
              %go = arith.andi %slots_left, %short : i1
              scf.condition(%go) %chunk, %ties : index, i32
            } do {
            ^bb0(%chunk: index, %ties: i32):
              %c = arith.addi %chunk, %lane : index
              %inside = arith.cmpi ult, %c, %length : index
              %c_safe = arith.select %inside, %c, %c0 : index
              %key = tile.load %keys[%qi, %c_safe] : !tile.shared<[block_q, nb_cache], i32>
              %equal = arith.cmpi eq, %key, %threshold : i32
              %tie = arith.andi %equal, %inside : i1
              %bits = tile.vote ballot %tie : i32
              %below = arith.andi %bits, %lanes_below : i32
              %rank_in_chunk = math.ctpop %below : i32
              %rank = arith.addi %ties, %rank_in_chunk : i32
              %wanted = arith.cmpi slt, %rank, %need : i32
              %take = arith.andi %tie, %wanted : i1
              scf.if %take {
                %slot_i32 = arith.addi %taken, %rank : i32
                %slot = arith.index_cast %slot_i32 : i32 to index
                %c_i32 = arith.index_cast %c : index to i32
                %block_i32 = arith.addi %s_i32, %c_i32 : i32
                tile.store %block_i32, %out[%query, %slot] : !tile.global<[?, ?], i32>
              }
              %chunk_ties = math.ctpop %bits : i32
              %next_chunk = arith.addi %chunk, %c32 : index
              %next_ties = arith.addi %ties, %chunk_ties : i32
              scf.yield %next_chunk, %next_ties : index, i32
            }
          }
          %filled_i32 = arith.minsi %selectable_count, %k_i32 : i32
          %filled = arith.index_cast %filled_i32 : i32 to index
          %first = arith.addi %filled, %lane : index
          scf.for %slot = %first to %k_out step %c32 {
            tile.store %none, %out[%query, %slot] : !tile.global<[?, ?], i32>
          }
        }
      }
    }
  }
}
