// HISA step 1.2: pooled-key MQA logits (KERNELS.md 1.2).
//
//   logits[m, n] = sum_h ReLU(dot(q[m, h], blocked_k[n]) * blocked_scale[n]) * weights[m, h]
//
// for n in [bks[m], bke[m]). A block of threads takes block_q queries and
// walks the union of their windows in tiles of block_n pooled keys; values
// outside a query's own window are left for step 1.3 to mask. With
// blocked_k = k and blocked_scale = k_scale this is the flat (V3.2) indexer.
// The gemm computes a key tile against all block_q*heads query rows at once:
// [block_n, dim] x [block_q*heads, dim]^T on fp8 tensor cores (K-major), so
// the heads lie along the accumulator's columns and their reduction stays in
// registers and lanes. q is passed as [M*heads, dim] (the contiguous
// [M, heads, dim] tensor, flattened). The block's weights are staged in
// shared memory once and each key tile's scales with its keys (cp.async),
// so the epilogue reads shared memory only. The walk starts at the union
// window's first key rounded down to a multiple of 4 (16-byte aligned scale
// pieces); the extra keys fall outside the windows, whose logits step 1.3
// overwrites.

tile.kernel @pool_mqa_logits(
    %q: !tile.global<[?, dim], f8E4M3FN>,
    %blocked_k: !tile.global<[?, dim], f8E4M3FN>,
    %blocked_scale: !tile.global<[?], f32>,
    %weights: !tile.global<[?, heads], f32>,
    %bks: !tile.global<[?], i32>,
    %bke: !tile.global<[?], i32>,
    %logits: !tile.global<[?, ?], f32>)
    params {heads = 64, dim = 128, block_q = 4, block_n = 64} {
  %m = tile.dim %bks, 0 : !tile.global<[?], i32>
  %block_q = tile.param "block_q" : index
  %num_q_blocks = arith.ceildivui %m, %block_q : index
  tile.launch (%launch_index) in (%num_q_blocks) threads 128 blocks_per_sm 3 {
    // The last query blocks first: with causal windows they walk the most
    // keys, and starting the longest work first keeps the last wave short.
    %c1_blocks = arith.constant 1 : index
    %last_block = arith.subi %num_q_blocks, %c1_blocks : index
    %bx = arith.subi %last_block, %launch_index : index
    %starts = tile.alloc : !tile.local<[block_q], i32>
    %ends = tile.alloc : !tile.local<[block_q], i32>
    %q_rows = tile.alloc : !tile.shared<[block_q*heads, dim], f8E4M3FN>
    %weight_tile = tile.alloc : !tile.shared<[block_q, heads], f32>
    %k_tile = tile.alloc : !tile.shared<[block_n, dim], f8E4M3FN>
    %scale_tile = tile.alloc : !tile.shared<[block_n], f32>
    %scores = tile.alloc : !tile.frag<[block_n, block_q*heads], f32>
    %out = tile.alloc : !tile.frag<[block_n, block_q], f32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %inf = arith.constant 0x7F800000 : f32
    %block_n = tile.param "block_n" : index
    %num_blocks = tile.dim %blocked_k, 0 : !tile.global<[?, dim], f8E4M3FN>

    %heads = tile.param "heads" : index
    %q0 = arith.muli %bx, %block_q : index
    %q_row0 = arith.muli %q0, %heads : index
    // Union of the windows of this block's queries (queries past M are
    // skipped). The window bounds of all block_q queries are read at once,
    // in flight while the queries are copied.
    tile.copy %bks[%q0] to %starts : !tile.global<[?], i32> to !tile.local<[block_q], i32>
    tile.copy %bke[%q0] to %ends : !tile.global<[?], i32> to !tile.local<[block_q], i32>
    tile.copy %q[%q_row0, %c0] to %q_rows
        : !tile.global<[?, dim], f8E4M3FN> to !tile.shared<[block_q*heads, dim], f8E4M3FN>
    tile.copy %weights[%q0, %c0] to %weight_tile
        : !tile.global<[?, heads], f32> to !tile.shared<[block_q, heads], f32>
    %max_i32 = arith.constant 2147483647 : i32
    %zero_i32 = arith.constant 0 : i32
    %lo, %hi = scf.for %i = %c0 to %block_q step %c1
        iter_args(%lo_acc = %max_i32, %hi_acc = %zero_i32) -> (i32, i32) {
      %query = arith.addi %q0, %i : index
      %valid = arith.cmpi ult, %query, %m : index
      // A negative start counts as 0: the walk would otherwise begin up to
      // 2^31 rows before the keys (a launch that never ends).
      %s_given = tile.load %starts[%i] : !tile.local<[block_q], i32>
      %s = arith.maxsi %s_given, %zero_i32 : i32
      %e = tile.load %ends[%i] : !tile.local<[block_q], i32>
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
      // scales are): a tile whose scales all are multiplies once per (key,
      // query) after the head sum instead of once per head too.
      %plain_scales = tile.all_of %scale_tile : !tile.shared<[block_n], f32> {
      ^bb0(%s: f32):
        %nonnegative = arith.cmpf oge, %s, %zero : f32
        %finite = arith.cmpf olt, %s, %inf : f32
        %plain = arith.andi %nonnegative, %finite : i1
        tile.yield %plain : i1
      }
      scf.if %plain_scales {
        tile.parallel (%n, %qi, %h) in [block_n, block_q, heads] {
          %x = tile.load %per_query[%n, %qi, %h] : !tile.frag<[block_n, block_q, heads], f32>
          %wt = tile.load %weight_tile[%qi, %h] : !tile.shared<[block_q, heads], f32>
          %relu = arith.maximumf %x, %zero : f32
          %weighted = arith.mulf %relu, %wt : f32
          tile.store %weighted, %per_query[%n, %qi, %h] : !tile.frag<[block_n, block_q, heads], f32>
        }
        tile.reduce sum %per_query to %out dim = 2
            : !tile.frag<[block_n, block_q, heads], f32> to !tile.frag<[block_n, block_q], f32>
        tile.parallel (%n, %qi) in [block_n, block_q] {
          %sum = tile.load %out[%n, %qi] : !tile.frag<[block_n, block_q], f32>
          %s = tile.load %scale_tile[%n] : !tile.shared<[block_n], f32>
          %scaled = arith.mulf %sum, %s : f32
          tile.store %scaled, %out[%n, %qi] : !tile.frag<[block_n, block_q], f32>
        }
      } else {
        tile.parallel (%n, %qi, %h) in [block_n, block_q, heads] {
          %x = tile.load %per_query[%n, %qi, %h] : !tile.frag<[block_n, block_q, heads], f32>
          %s = tile.load %scale_tile[%n] : !tile.shared<[block_n], f32>
          %wt = tile.load %weight_tile[%qi, %h] : !tile.shared<[block_q, heads], f32>
          %scaled = arith.mulf %x, %s : f32
          %relu = arith.maximumf %scaled, %zero : f32
          %weighted = arith.mulf %relu, %wt : f32
          tile.store %weighted, %per_query[%n, %qi, %h] : !tile.frag<[block_n, block_q, heads], f32>
        }
        tile.reduce sum %per_query to %out dim = 2
            : !tile.frag<[block_n, block_q, heads], f32> to !tile.frag<[block_n, block_q], f32>
      }
      // out is [key, query]; logits is [query, key].
      tile.parallel (%n, %qi) in [block_n, block_q] {
        %v = tile.load %out[%n, %qi] : !tile.frag<[block_n, block_q], f32>
        %key = arith.addi %n0, %n : index
        %query = arith.addi %q0, %qi : index
        tile.store %v, %logits[%query, %key] : !tile.global<[?, ?], f32>
      }
    }
  }
}
