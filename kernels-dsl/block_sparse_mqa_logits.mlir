// HISA step 2.1: block-sparse MQA logits (KERNELS.md 2.1).
//
// For query m, slot t*kb + i reads key row j = topk_block_index[m, t]*kb + i:
//   out[m, t*kb + i] = sum_h ReLU(dot(q[m, h], k[j]) * k_scale[j]) * weights[m, h]
// and -inf when j is outside [ks[m], ke[m]) or past N, or the block index
// is -1 (its rows are then out of range: they read as zero and are masked).
// One block of threads per query; each key block is read in tiles of kt
// rows (kt divides kb), and the gemm is [kt, dim] x [heads, dim]^T so that
// the heads lie along the accumulator's columns, which a thread and its lane
// neighbours hold: the reduction over heads needs no shared memory. The
// loop is block_sparse_topk_tokens.mlir's, tile for tile, so both compute
// every logit with the same operations in the same order.
// The query's weights and block indices are staged in shared memory once,
// each block's key scales with its keys (cp.async), so the epilogue reads
// shared memory only: no bounds checks, no branches, fused multiply-adds.
// `topk` is the number of block slots T (the JIT checks it); `min_blocks`
// blocks share an SM (5 for the [64, heads <= 64] accumulators; the
// operator picks fewer for H = 128).

tile.kernel @block_sparse_mqa_logits(
    %q: !tile.global<[?, heads, dim], f8E4M3FN>,
    %k: !tile.global<[?, dim], f8E4M3FN>,
    %k_scale: !tile.global<[?], f32>,
    %topk_block_index: !tile.global<[?, topk], i32>,
    %weights: !tile.global<[?, heads], f32>,
    %ks: !tile.global<[?], i32>,
    %ke: !tile.global<[?], i32>,
    %out: !tile.global<[?, ?], f32>)
    params {heads = 64, dim = 128, kb = 128, kt = 64, topk = 64, min_blocks = 5} {
  %m = tile.dim %q, 0 : !tile.global<[?, heads, dim], f8E4M3FN>
  tile.launch (%bx) in (%m) threads 128 blocks_per_sm "min_blocks" {
    %q_tile = tile.alloc : !tile.shared<[heads, dim], f8E4M3FN>
    %weight_tile = tile.alloc : !tile.shared<[heads], f32>
    %index_tile = tile.alloc : !tile.shared<[topk], i32>
    %k_tile = tile.alloc : !tile.shared<[kt, dim], f8E4M3FN>
    %scale_tile = tile.alloc : !tile.shared<[kt], f32>
    %scores = tile.alloc : !tile.frag<[kt, heads], f32>
    %row_logits = tile.alloc : !tile.frag<[kt], f32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %neg_inf = arith.constant 0xFF800000 : f32
    %inf = arith.constant 0x7F800000 : f32
    %c0_i32 = arith.constant 0 : i32
    %kb = tile.param "kb" : index
    %n = tile.dim %k, 0 : !tile.global<[?, dim], f8E4M3FN>
    %num_slots = tile.param "topk" : index

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
      // ReLU(x * s) = s * ReLU(x) when s is finite and >= 0 (dequantization
      // scales are): then one multiply per key after the head sum, as in
      // block_sparse_topk_tokens.mlir (same rounding, same selections).
      %plain_scales = tile.all_of %scale_tile : !tile.shared<[kt], f32> {
      ^bb0(%s: f32):
        %nonnegative = arith.cmpf oge, %s, %zero : f32
        %finite = arith.cmpf olt, %s, %inf : f32
        %plain = arith.andi %nonnegative, %finite : i1
        tile.yield %plain : i1
      }
      scf.if %plain_scales {
        tile.parallel (%i, %h) in [kt, heads] {
          %x = tile.load %scores[%i, %h] : !tile.frag<[kt, heads], f32>
          %wt = tile.load %weight_tile[%h] : !tile.shared<[heads], f32>
          %relu = arith.maximumf %x, %zero : f32
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
          %wt = tile.load %weight_tile[%h] : !tile.shared<[heads], f32>
          %scaled = arith.mulf %x, %s : f32
          %relu = arith.maximumf %scaled, %zero : f32
          %weighted = arith.mulf %relu, %wt : f32
          tile.store %weighted, %scores[%i, %h] : !tile.frag<[kt, heads], f32>
        }
        tile.reduce sum %scores to %row_logits dim = 1
            : !tile.frag<[kt, heads], f32> to !tile.frag<[kt], f32>
      }
      tile.parallel (%i) in [kt] {
        %j = arith.addi %row0, %i : index
        %valid_block = arith.cmpi sge, %block_i32, %c0_i32 : i32
        %after_start = arith.cmpi sge, %j, %start : index
        %before_end = arith.cmpi slt, %j, %end : index
        %in_window = arith.andi %after_start, %before_end : i1
        %valid = arith.andi %in_window, %valid_block : i1
        %x = tile.load %row_logits[%i] : !tile.frag<[kt], f32>
        %masked = arith.select %valid, %x, %neg_inf : f32
        tile.store %masked, %row_logits[%i] : !tile.frag<[kt], f32>
      }
      %slot0 = arith.muli %t, %kt : index
      tile.copy %row_logits to %out[%bx, %slot0]
          : !tile.frag<[kt], f32> to !tile.global<[?, ?], f32>
    }
  }
}
