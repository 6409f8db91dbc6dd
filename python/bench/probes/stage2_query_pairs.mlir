// Probe (docs/proposals/stage2-shared-gathers.md, measured in the sixteenth
// session): HISA fused stage 2 with one block of threads per pair of
// consecutive queries, gathering each key block that both selected once.
// Run it against the built-in kernel with
//   python/bench/probes/stage2_source_ab.py \
//       python/bench/probes/stage2_query_pairs.mlir:min_blocks=2
// (same arguments as kernels-dsl/block_sparse_topk_tokens.mlir; the grid is
// ceil(M / 2)). Its selections equal the built-in's (and it passed
// test_hisa_indexer.py as the operator's kernel), but it is not faster:
// 7.60 vs 7.60 ms at M = N = 32768, 30.95 vs 31.06 at 131072 (H200), with
// ~23% fewer key bytes gathered on these random inputs. With one consumer
// warpgroup for both queries it was 1.21x / 1.33x slower. The gathers do
// not bound stage 2 (docs/performance.md, sixteenth session).
//
// The union: the first query's blocks, then the second's that the first did
// not select; -1 blocks are skipped and their slots get "not selectable"
// keys up front. A producer warpgroup issues the union's key tiles (the trip
// count, computed in the kernel, is read from shared memory by both roles);
// consumer warpgroup w runs query w's gemm and epilogue on the tiles its
// query selected, out of step with the other (tile.per_warpgroup
// unsynchronized), into its own T*kb keys. Then the built-in kernel's radix
// select and output, once per query with all 256 consumer threads. Two
// blocks per SM (two queries' keys: 2 x 32 KiB at T*kb = 8192); T <= 128.

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
    params {heads = 64, dim = 128, kb = 128, kt = 64, topk = 64, min_blocks = 2} {
  %m = tile.dim %q, 0 : !tile.global<[?, heads, dim], f8E4M3FN>
  %c2_grid = arith.constant 2 : index
  %pairs = arith.ceildivui %m, %c2_grid : index
  tile.launch (%bx) in (%pairs) threads 256 blocks_per_sm "min_blocks" {
    %qa_tile = tile.alloc : !tile.shared<[heads, dim], f8E4M3FN>
    %qb_tile = tile.alloc : !tile.shared<[heads, dim], f8E4M3FN>
    %weight_tile = tile.alloc : !tile.shared<[2, heads], f32>
    %index_tile = tile.alloc : !tile.shared<[2, topk], i32>
    // The union: block, and its slot in each query's list (-1: not wanted).
    %union_block = tile.alloc : !tile.shared<[2*topk], i32>
    %union_slot = tile.alloc : !tile.shared<[2, 2*topk], i32>
    %emit_counts = tile.alloc : !tile.shared<[8], i32>
    %emit_offsets = tile.alloc : !tile.shared<[8], i32>
    %union_size = tile.alloc : !tile.shared<[1], i32>
    %k_tile = tile.alloc : !tile.shared<[kt, dim], f8E4M3FN>
    %scale_tile = tile.alloc : !tile.shared<[kt], f32>
    %scores = tile.alloc : !tile.frag<[kt, heads], f32>
    %row_logits = tile.alloc : !tile.frag<[kt], f32>
    // Each consumer warpgroup's query's head weights, in the accumulator's
    // layout (the single-query kernel's %weight_frag).
    %weight_frag = tile.alloc : !tile.frag<[kt, heads], f32>
    %keys = tile.alloc : !tile.shared<[2, topk*kb], i32>
    %hist = tile.alloc : !tile.shared<[8, 256], i32>
    %counts = tile.alloc : !tile.shared<[256], i32>
    %at_least = tile.alloc : !tile.shared<[256], i32>
    %warp_ties = tile.alloc : !tile.shared<[8], i32>
    %warp_offsets = tile.alloc : !tile.shared<[8], i32>
    %state = tile.alloc : !tile.shared<[2, 4], i32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %none = arith.constant -1 : i32
    %true = arith.constant true
    %zero_f = arith.constant 0.0 : f32
    %inf = arith.constant 0x7F800000 : f32
    %kb = tile.param "kb" : index
    %n = tile.dim %k, 0 : !tile.global<[?, dim], f8E4M3FN>
    %num_slots = tile.param "topk" : index
    %length = arith.muli %num_slots, %kb : index
    %k_out = tile.dim %out, 1 : !tile.global<[?, ?], i32>
    %k_i32 = arith.index_cast %k_out : index to i32
    %m_in = tile.dim %q, 0 : !tile.global<[?, heads, dim], f8E4M3FN>

    %candidates = arith.muli %num_slots, %c2 : index
    // The pair: queries 2 bx and 2 bx + 1 (the latter absent at odd M).
    %qa = arith.muli %bx, %c2 : index
    %qb_wanted = arith.addi %qa, %c1 : index
    %has_b = arith.cmpi ult, %qb_wanted, %m_in : index
    %qb = arith.select %has_b, %qb_wanted, %qa : index
    %queries = arith.select %has_b, %c2, %c1 : index

    tile.copy %q[%qa, %c0, %c0] to %qa_tile
        : !tile.global<[?, heads, dim], f8E4M3FN> to !tile.shared<[heads, dim], f8E4M3FN>
    tile.copy %q[%qb, %c0, %c0] to %qb_tile
        : !tile.global<[?, heads, dim], f8E4M3FN> to !tile.shared<[heads, dim], f8E4M3FN>
    tile.parallel (%p, %i) in [2, topk] {
      %is_b = arith.cmpi eq, %p, %c1 : index
      %query = arith.select %is_b, %qb, %qa : index
      %block = tile.load %topk_block_index[%query, %i] : !tile.global<[?, topk], i32>
      %not_b = arith.xori %is_b, %true : i1
      %present = arith.ori %not_b, %has_b : i1
      %kept = arith.select %present, %block, %none : i32
      tile.store %kept, %index_tile[%p, %i] : !tile.shared<[2, topk], i32>
    }
    tile.parallel (%p, %h) in [2, heads] {
      %is_b = arith.cmpi eq, %p, %c1 : index
      %query = arith.select %is_b, %qb, %qa : index
      %w = tile.load %weights[%query, %h] : !tile.global<[?, heads], f32>
      tile.store %w, %weight_tile[%p, %h] : !tile.shared<[2, heads], f32>
    }
    %start_a_i32 = tile.load %ks[%qa] : !tile.global<[?], i32>
    %end_a_i32 = tile.load %ke[%qa] : !tile.global<[?], i32>
    %start_b_i32 = tile.load %ks[%qb] : !tile.global<[?], i32>
    %end_b_i32 = tile.load %ke[%qb] : !tile.global<[?], i32>
    %start_a = arith.index_cast %start_a_i32 : i32 to index
    %start_b = arith.index_cast %start_b_i32 : i32 to index
    %end_a_w = arith.index_cast %end_a_i32 : i32 to index
    %end_b_w = arith.index_cast %end_b_i32 : i32 to index
    %end_a = arith.minsi %end_a_w, %n : index
    %end_b = arith.minsi %end_b_w, %n : index

    // The union. Candidate c < topk is the first query's slot c; c >= topk
    // the second's slot c - topk, kept only when the first did not select
    // its block. A candidate is emitted when its block is not -1; -1 slots
    // get "not selectable" keys here (the loop never visits them).
    tile.parallel (%warp, %lane) in [8, 32] {
      %warp_first = arith.muli %warp, %c32 : index
      %c_any = arith.addi %warp_first, %lane : index
      // (2 T candidates: at most the block's 256 threads, T <= 128.)
      %candidate = arith.cmpi ult, %c_any, %candidates : index
      %c = arith.select %candidate, %c_any, %c0 : index
      %is_b = arith.cmpi uge, %c, %num_slots : index
      %slot_b = arith.subi %c, %num_slots : index
      %slot = arith.select %is_b, %slot_b, %c : index
      %p = arith.select %is_b, %c1, %c0 : index
      %other = arith.subi %c1, %p : index
      %block = tile.load %index_tile[%p, %slot] : !tile.shared<[2, topk], i32>
      %real_block = arith.cmpi sge, %block, %zero : i32
      %valid = arith.andi %real_block, %candidate : i1
      // The other query's slot of the same block, or -1.
      %match = scf.for %j = %c0 to %num_slots step %c1 iter_args(%found = %none) -> (i32) {
        %b2 = tile.load %index_tile[%other, %j] : !tile.shared<[2, topk], i32>
        %same = arith.cmpi eq, %b2, %block : i32
        %j_i32 = arith.index_cast %j : index to i32
        %next = arith.select %same, %j_i32, %found : i32
        scf.yield %next : i32
      }
      %in_other = arith.cmpi sge, %match, %zero : i32
      %taken_by_a = arith.andi %is_b, %in_other : i1
      %not_taken = arith.xori %taken_by_a, %true : i1
      %emit = arith.andi %valid, %not_taken : i1
      %emitted = tile.vote ballot %emit : i32
      %first_lane = arith.cmpi eq, %lane, %c0 : index
      scf.if %first_lane {
        %count = math.ctpop %emitted : i32
        tile.store %count, %emit_counts[%warp] : !tile.shared<[8], i32>
      }
      %no_block = arith.xori %real_block, %true : i1
      %invalid = arith.andi %no_block, %candidate : i1
      scf.if %invalid {
        %first_key = arith.muli %slot, %kb : index
        %last_key = arith.addi %first_key, %kb : index
        scf.for %s = %first_key to %last_key step %c1 {
          tile.store %zero, %keys[%p, %s] : !tile.shared<[2, topk*kb], i32>
        }
      }
    }
    %union_total = tile.scan sum %emit_counts to %emit_offsets exclusive
        : !tile.shared<[8], i32> to !tile.shared<[8], i32>
    // Through shared memory: the producer warpgroup reads the trip count.
    tile.parallel (%i) in [1] {
      tile.store %union_total, %union_size[%i] : !tile.shared<[1], i32>
    }
    tile.parallel (%warp, %lane) in [8, 32] {
      %warp_first = arith.muli %warp, %c32 : index
      %c_any = arith.addi %warp_first, %lane : index
      // (2 T candidates: at most the block's 256 threads, T <= 128.)
      %candidate = arith.cmpi ult, %c_any, %candidates : index
      %c = arith.select %candidate, %c_any, %c0 : index
      %is_b = arith.cmpi uge, %c, %num_slots : index
      %slot_b = arith.subi %c, %num_slots : index
      %slot = arith.select %is_b, %slot_b, %c : index
      %p = arith.select %is_b, %c1, %c0 : index
      %other = arith.subi %c1, %p : index
      %block = tile.load %index_tile[%p, %slot] : !tile.shared<[2, topk], i32>
      %real_block = arith.cmpi sge, %block, %zero : i32
      %valid = arith.andi %real_block, %candidate : i1
      %match = scf.for %j = %c0 to %num_slots step %c1 iter_args(%found = %none) -> (i32) {
        %b2 = tile.load %index_tile[%other, %j] : !tile.shared<[2, topk], i32>
        %same = arith.cmpi eq, %b2, %block : i32
        %j_i32 = arith.index_cast %j : index to i32
        %next = arith.select %same, %j_i32, %found : i32
        scf.yield %next : i32
      }
      %in_other = arith.cmpi sge, %match, %zero : i32
      %taken_by_a = arith.andi %is_b, %in_other : i1
      %not_taken = arith.xori %taken_by_a, %true : i1
      %emit = arith.andi %valid, %not_taken : i1
      %emitted = tile.vote ballot %emit : i32
      %lane_i32 = arith.index_cast %lane : index to i32
      %lane_bit = arith.shli %one, %lane_i32 : i32
      %lanes_below = arith.subi %lane_bit, %one : i32
      %emitted_below = arith.andi %emitted, %lanes_below : i32
      %rank_in_warp = math.ctpop %emitted_below : i32
      %warp_offset = tile.load %emit_offsets[%warp] : !tile.shared<[8], i32>
      %rank_i32 = arith.addi %warp_offset, %rank_in_warp : i32
      %rank = arith.index_cast %rank_i32 : i32 to index
      scf.if %emit {
        %slot_i32 = arith.index_cast %slot : index to i32
        // A's candidates: A's slot, and B's slot of the block if any. B's
        // (not in A): B's slot only.
        %a_slot = arith.select %is_b, %none, %slot_i32 : i32
        %b_slot = arith.select %is_b, %slot_i32, %match : i32
        tile.store %block, %union_block[%rank] : !tile.shared<[2*topk], i32>
        tile.store %a_slot, %union_slot[%c0, %rank] : !tile.shared<[2, 2*topk], i32>
        tile.store %b_slot, %union_slot[%c1, %rank] : !tile.shared<[2, 2*topk], i32>
      }
    }

    // 1. The logits of every slot each query wants, as keys.
    %kt = tile.param "kt" : index
    %tiles_per_block = arith.divui %kb, %kt : index
    %union_count_i32 = tile.load %union_size[%c0] : !tile.shared<[1], i32>
    %union_count = arith.index_cast %union_count_i32 : i32 to index
    %num_tiles = arith.muli %union_count, %tiles_per_block : index
    tile.per_warpgroup (%wg) {
      tile.parallel (%i, %h) in [kt, heads] {
        %w = tile.load %weight_tile[%wg, %h] : !tile.shared<[2, heads], f32>
        tile.store %w, %weight_frag[%i, %h] : !tile.frag<[kt, heads], f32>
      }
    }
    tile.pipelined %t = %c0 to %num_tiles step %c1 num_stages = 2 warp_specialized {
      %u = arith.divui %t, %tiles_per_block : index
      %part = arith.remui %t, %tiles_per_block : index
      %block_i32 = tile.load %union_block[%u] : !tile.shared<[2*topk], i32>
      %block = arith.index_cast %block_i32 : i32 to index
      %block_row0 = arith.muli %block, %kb : index
      %part_rows = arith.muli %part, %kt : index
      %row0 = arith.addi %block_row0, %part_rows : index
      tile.copy %k[%row0, %c0] to %k_tile
          : !tile.global<[?, dim], f8E4M3FN> to !tile.shared<[kt, dim], f8E4M3FN>
      tile.copy %k_scale[%row0] to %scale_tile
          : !tile.global<[?], f32> to !tile.shared<[kt], f32>
      %plain_scales = tile.all_of %scale_tile : !tile.shared<[kt], f32> {
      ^bb0(%s: f32):
        %nonnegative = arith.cmpf oge, %s, %zero_f : f32
        %finite = arith.cmpf olt, %s, %inf : f32
        %plain = arith.andi %nonnegative, %finite : i1
        tile.yield %plain : i1
      }
      // Each consumer warpgroup runs its own query's gemm and epilogue on
      // the tiles that query selected, out of step with the other (the
      // stage's mbarriers order them against the producer).
      tile.per_warpgroup (%wg) unsynchronized {
        %q_own = tile.pick %wg [%qa_tile, %qb_tile] : !tile.shared<[heads, dim], f8E4M3FN>
        %own_slot_i32 = tile.load %union_slot[%wg, %u] : !tile.shared<[2, 2*topk], i32>
        %wants = arith.cmpi sge, %own_slot_i32, %zero : i32
        scf.if %wants {
          tile.gemm %k_tile, %q_own, %scores transpose_b clear_accum
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
          %is_b = arith.cmpi eq, %wg, %c1 : index
          %start = arith.select %is_b, %start_b, %start_a : index
          %end = arith.select %is_b, %end_b, %end_a : index
          %own_slot = arith.index_cast %own_slot_i32 : i32 to index
          %first_key = arith.muli %own_slot, %kb : index
          %slot0 = arith.addi %first_key, %part_rows : index
          tile.parallel (%i) in [kt] {
            %j = arith.addi %row0, %i : index
            %after_start = arith.cmpi sge, %j, %start : index
            %before_end = arith.cmpi slt, %j, %end : index
            %valid = arith.andi %after_start, %before_end : i1
            %v = tile.load %row_logits[%i] : !tile.frag<[kt], f32>
            %value_key = func.call @select_key(%v) : (f32) -> i32
            %key = arith.select %valid, %value_key, %zero : i32
            %slot = arith.addi %slot0, %i : index
            tile.store %key, %keys[%wg, %slot] : !tile.shared<[2, topk*kb], i32>
          }
        }
      }
    }

    // 2. Per query: the histogram of the keys' top 8 bits, the radix select
    //    and the output (the built-in kernel's, on this query's keys).
    scf.for %qi = %c0 to %queries step %c1 {
      %query = arith.addi %qa, %qi : index
      %is_b_query = arith.cmpi eq, %qi, %c1 : index
      %start = arith.select %is_b_query, %start_b, %start_a : index
      tile.fill %hist, %zero : !tile.shared<[8, 256], i32>, i32
      tile.parallel (%warp, %lane) in [8, 32] {
        %warp_first = arith.muli %warp, %c32 : index
        %t = arith.addi %warp_first, %lane : index
        scf.for %c = %t to %length step %c256 {
          %key = tile.load %keys[%qi, %c] : !tile.shared<[2, topk*kb], i32>
          %selectable = arith.cmpi ne, %key, %zero : i32
          scf.if %selectable {
            %c24 = arith.constant 24 : i32
            %digit = arith.shrui %key, %c24 : i32
            %bin = arith.index_cast %digit : i32 to index
            %old = tile.atomic add %one, %hist[%warp, %bin] : !tile.shared<[8, 256], i32>
          }
        }
      }
      tile.parallel (%b) in [256] {
        %c4_w = arith.constant 8 : index
        %total = scf.for %w = %c0 to %c4_w step %c1 iter_args(%sum = %zero) -> (i32) {
          %part = tile.load %hist[%w, %b] : !tile.shared<[8, 256], i32>
          %more = arith.addi %sum, %part : i32
          scf.yield %more : i32
        }
        tile.store %total, %counts[%b] : !tile.shared<[256], i32>
      }
      %selectable_count = tile.scan sum %counts to %at_least reverse
          : !tile.shared<[256], i32> to !tile.shared<[256], i32>
      %take_all = arith.cmpi sle, %selectable_count, %k_i32 : i32
      tile.parallel (%p, %i) in [2, 4] {
        // prefix 0, k needed, not done, no slot taken.
        %is_needed = arith.cmpi eq, %i, %c1 : index
        %init = arith.select %is_needed, %k_i32, %zero : i32
        tile.store %init, %state[%p, %i] : !tile.shared<[2, 4], i32>
      }

      // 2. Radix select, unless every selectable key is taken.
      %c24_i32 = arith.constant 24 : i32
      %final:3 = scf.while (%shift = %c24_i32, %first_pass = %true, %parity = %c0)
          : (i32, i1, index) -> (i32, i1, index) {
        %c2_index = arith.constant 2 : index
        %done_i32 = tile.load %state[%parity, %c2_index] : !tile.shared<[2, 4], i32>
        %more_bits = arith.cmpi sge, %shift, %zero : i32
        %not_done = arith.cmpi eq, %done_i32, %zero : i32
        %needed = arith.xori %take_all, %true : i1
        %go_on = arith.andi %more_bits, %not_done : i1
        %go = arith.andi %go_on, %needed : i1
        scf.condition(%go) %shift, %first_pass, %parity : i32, i1, index
      } do {
      ^bb0(%shift: i32, %first_pass: i1, %parity: index):
        %prefix = tile.load %state[%parity, %c0] : !tile.shared<[2, 4], i32>
        %still_needed = tile.load %state[%parity, %c1] : !tile.shared<[2, 4], i32>
        %other = arith.subi %c1, %parity : index
        %later_pass = arith.xori %first_pass, %true : i1
        scf.if %later_pass {
          // The histograms of this digit among the keys that share the
          // prefix found so far.
          %c8_i32 = arith.constant 8 : i32
          %above = arith.addi %shift, %c8_i32 : i32
          %prefix_high = arith.shrui %prefix, %above : i32
          tile.parallel (%warp, %lane) in [8, 32] {
            %warp_first = arith.muli %warp, %c32 : index
            %t = arith.addi %warp_first, %lane : index
            scf.for %c = %t to %length step %c256 {
              %key = tile.load %keys[%qi, %c] : !tile.shared<[2, topk*kb], i32>
              %key_high = arith.shrui %key, %above : i32
              %same_prefix = arith.cmpi eq, %key_high, %prefix_high : i32
              %selectable = arith.cmpi ne, %key, %zero : i32
              %counted = arith.andi %same_prefix, %selectable : i1
              scf.if %counted {
                %shifted = arith.shrui %key, %shift : i32
                %mask = arith.constant 255 : i32
                %digit = arith.andi %shifted, %mask : i32
                %bin = arith.index_cast %digit : i32 to index
                %old = tile.atomic add %one, %hist[%warp, %bin] : !tile.shared<[8, 256], i32>
              }
            }
          }
          tile.parallel (%b) in [256] {
            %c4_w = arith.constant 8 : index
            %total = scf.for %w = %c0 to %c4_w step %c1 iter_args(%sum = %zero) -> (i32) {
              %part = tile.load %hist[%w, %b] : !tile.shared<[8, 256], i32>
              %more = arith.addi %sum, %part : i32
              scf.yield %more : i32
            }
            tile.store %total, %counts[%b] : !tile.shared<[256], i32>
          }
          %counted_total = tile.scan sum %counts to %at_least reverse
              : !tile.shared<[256], i32> to !tile.shared<[256], i32>
        }
        // The bin where "keys at least this bin" reaches the number needed.
        tile.parallel (%b) in [256] {
          // The next pass counts into cleared histograms.
          %c4_z = arith.constant 8 : index
          scf.for %w = %c0 to %c4_z step %c1 {
            tile.store %zero, %hist[%w, %b] : !tile.shared<[8, 256], i32>
          }
          %c255 = arith.constant 255 : index
          %ge = tile.load %at_least[%b] : !tile.shared<[256], i32>
          %is_last = arith.cmpi eq, %b, %c255 : index
          %next_bin = arith.addi %b, %c1 : index
          %next = arith.select %is_last, %b, %next_bin : index
          %ge_next = tile.load %at_least[%next] : !tile.shared<[256], i32>
          %gt = arith.select %is_last, %zero, %ge_next : i32
          %reaches = arith.cmpi sge, %ge, %still_needed : i32
          %short = arith.cmpi slt, %gt, %still_needed : i32
          %threshold_bin = arith.andi %reaches, %short : i1
          scf.if %threshold_bin {
            %digit = arith.index_cast %b : index to i32
            %placed = arith.shli %digit, %shift : i32
            %new_prefix = arith.ori %prefix, %placed : i32
            %need = arith.subi %still_needed, %gt : i32
            %in_bin = arith.subi %ge, %gt : i32
            %whole_bin = arith.cmpi eq, %in_bin, %need : i32
            %done = arith.extui %whole_bin : i1 to i32
            %c2_state = arith.constant 2 : index
            tile.store %new_prefix, %state[%other, %c0] : !tile.shared<[2, 4], i32>
            tile.store %need, %state[%other, %c1] : !tile.shared<[2, 4], i32>
            tile.store %done, %state[%other, %c2] : !tile.shared<[2, 4], i32>
          }
        }
        %c8 = arith.constant 8 : i32
        %next_shift = arith.subi %shift, %c8 : i32
        %false = arith.constant false
        scf.yield %next_shift, %false, %other : i32, i1, index
      }

      // 3. Keys above the threshold, or at least the threshold when all of
      //    those equal to it are needed (always so when every selectable key
      //    is taken: the threshold is then 1, the least selectable key).
      %found = tile.load %state[%final#2, %c0] : !tile.shared<[2, 4], i32>
      %need = tile.load %state[%final#2, %c1] : !tile.shared<[2, 4], i32>
      %c2_state = arith.constant 2 : index
      %done_i32 = tile.load %state[%final#2, %c2_state] : !tile.shared<[2, 4], i32>
      %done = arith.cmpi ne, %done_i32, %zero : i32
      %threshold = arith.select %take_all, %one, %found : i32
      %all_at_threshold = arith.ori %take_all, %done : i1
      tile.parallel (%warp, %lane) in [8, 32] {
        %warp_first = arith.muli %warp, %c32 : index
        %t = arith.addi %warp_first, %lane : index
        scf.for %c = %t to %length step %c256 {
          %key = tile.load %keys[%qi, %c] : !tile.shared<[2, topk*kb], i32>
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
            %block_i32 = tile.load %index_tile[%qi, %t_block] : !tile.shared<[2, topk], i32>
            %block = arith.index_cast %block_i32 : i32 to index
            %first_row = arith.muli %block, %kb : index
            %row = arith.addi %first_row, %i_row : index
            %offset = arith.subi %row, %start : index
            %offset_i32 = arith.index_cast %offset : index to i32
            tile.store %offset_i32, %out[%query, %slot] : !tile.global<[?, ?], i32>
          }
        }
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
          tile.parallel (%warp, %lane) in [8, 32] {
            %warp_first = arith.muli %warp, %c32 : index
            %t = arith.addi %warp_first, %lane : index
            %c = arith.addi %chunk, %t : index
            %inside = arith.cmpi ult, %c, %length : index
            %c_safe = arith.select %inside, %c, %c0 : index
            %key = tile.load %keys[%qi, %c_safe] : !tile.shared<[2, topk*kb], i32>
            %equal = arith.cmpi eq, %key, %threshold : i32
            %tie = arith.andi %equal, %inside : i1
            %ties = tile.vote ballot %tie : i32
            %first_lane = arith.cmpi eq, %lane, %c0 : index
            scf.if %first_lane {
              %count = math.ctpop %ties : i32
              tile.store %count, %warp_ties[%warp] : !tile.shared<[8], i32>
            }
          }
          %chunk_ties = tile.scan sum %warp_ties to %warp_offsets exclusive
              : !tile.shared<[8], i32> to !tile.shared<[8], i32>
          tile.parallel (%warp, %lane) in [8, 32] {
            %warp_first = arith.muli %warp, %c32 : index
            %t = arith.addi %warp_first, %lane : index
            %c = arith.addi %chunk, %t : index
            %inside = arith.cmpi ult, %c, %length : index
            %c_safe = arith.select %inside, %c, %c0 : index
            %key = tile.load %keys[%qi, %c_safe] : !tile.shared<[2, topk*kb], i32>
            %equal = arith.cmpi eq, %key, %threshold : i32
            %tie = arith.andi %equal, %inside : i1
            %ties = tile.vote ballot %tie : i32
            %lane_i32 = arith.index_cast %lane : index to i32
            %lane_bit = arith.shli %one, %lane_i32 : i32
            %lanes_below = arith.subi %lane_bit, %one : i32
            %ties_below = arith.andi %ties, %lanes_below : i32
            %rank_in_warp = math.ctpop %ties_below : i32
            %warp_offset = tile.load %warp_offsets[%warp] : !tile.shared<[8], i32>
            %rank_in_chunk = arith.addi %warp_offset, %rank_in_warp : i32
            %rank = arith.addi %taken, %rank_in_chunk : i32
            %wanted = arith.cmpi slt, %rank, %need : i32
            %take = arith.andi %tie, %wanted : i1
            scf.if %take {
              %slot_i32 = arith.addi %base, %rank : i32
              %slot = arith.index_cast %slot_i32 : i32 to index
              %t_block = arith.divui %c, %kb : index
              %i_row = arith.remui %c, %kb : index
              %block_i32 = tile.load %index_tile[%qi, %t_block] : !tile.shared<[2, topk], i32>
              %block = arith.index_cast %block_i32 : i32 to index
              %first_row = arith.muli %block, %kb : index
              %row = arith.addi %first_row, %i_row : index
              %offset = arith.subi %row, %start : index
              %offset_i32 = arith.index_cast %offset : index to i32
              tile.store %offset_i32, %out[%query, %slot] : !tile.global<[?, ?], i32>
            }
          }
          %next_chunk = arith.addi %chunk, %c256 : index
          %next_taken = arith.addi %taken, %chunk_ties : i32
          scf.yield %next_chunk, %next_taken : index, i32
        }
      }

      // 5. -1 in the slots past the selectable keys.
      %filled_i32 = arith.minsi %selectable_count, %k_i32 : i32
      %filled = arith.index_cast %filled_i32 : i32 to index
      tile.parallel (%warp, %lane) in [8, 32] {
        %warp_first = arith.muli %warp, %c32 : index
        %t = arith.addi %warp_first, %lane : index
        %first = arith.addi %filled, %t : index
        scf.for %slot = %first to %k_out step %c256 {
          tile.store %none, %out[%query, %slot] : !tile.global<[?, ?], i32>
        }
      }
    }
  }
}
