// PROBE (python/bench/probes/stage1_source_ab.py): pool_topk_blocks.mlir
// without its selection, to time the logits loop alone.
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
// Then, query by query, the exact radix select of topk_f32.mlir on those
// keys, 8 bits a pass from the top, ties to the lower block; the chosen
// positions become block indices bks + position, and -1 fills the slots
// past the window's blocks.

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

    // Ablation: no selection; every slot gets -1 (the logits loop alone).
    scf.for %qi = %c0 to %block_q step %c1 {
      %query = arith.addi %q0, %qi : index
      %valid_query = arith.cmpi ult, %query, %m : index
      scf.if %valid_query {
        tile.parallel (%warp, %lane) in [4, 32] {
          %warp_first = arith.muli %warp, %c32 : index
          %t = arith.addi %warp_first, %lane : index
          scf.for %slot = %t to %k_out step %c128 {
            tile.store %none, %out[%query, %slot] : !tile.global<[?, ?], i32>
          }
        }
      }
    }
  }
}
