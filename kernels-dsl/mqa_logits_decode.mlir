// MQA logits of decode: one query per sequence, each over its own keys
// (the V4 layer's CSA indexer in a decode step; KERNELS.md 1.2's formula):
//
//   logits[m, j] = sum_h ReLU(dot(q[m, h], k[m*W + j]) * k_scale[m*W + j]) * weights[m, h]
//
// for j in [starts[m], ends[m]), W = logits' row length (the keys of a
// sequence are rows m*W .. m*W + W - 1 of k). Other entries of a row are
// left as they are: the top-k that follows reads the window only.
//
// pool_mqa_logits walks the union of a block of queries' windows, which in
// decode (every query its own sequence) is block_q times the work of one
// query and leaves most SMs idle (one block per block_q sequences). Here
// the grid is (key chunks of split_n, queries): a chunk takes up to
// split_n / block_n key tiles of one query, and each block's [block_n,
// dim] x [heads, dim]^T gemm has the heads along the accumulator's columns
// as in pool_mqa_logits, so the reduction over heads stays in registers
// and lanes. Chunks past a query's window do nothing. A tile starts at a
// multiple of 4 keys (16-byte aligned scale pieces: W must be a multiple
// of 4) and stores only the keys of its own chunk that lie in the window.
// `min_blocks` bounds the registers for that many blocks per SM (the
// operator asks for 8 up to 64 heads: the decode grid in one wave).

tile.kernel @mqa_logits_decode(
    %q: !tile.global<[?, dim], f8E4M3FN>,
    %k: !tile.global<[?, dim], f8E4M3FN>,
    %k_scale: !tile.global<[?], f32>,
    %weights: !tile.global<[?, heads], f32>,
    %starts: !tile.global<[?], i32>,
    %ends: !tile.global<[?], i32>,
    %logits: !tile.global<[?, ?], f32>)
    params {heads = 64, dim = 128, block_n = 64, split_n = 1024, min_blocks = 4} {
  %m = tile.dim %starts, 0 : !tile.global<[?], i32>
  %row_length = tile.dim %logits, 1 : !tile.global<[?, ?], f32>
  %split_n = tile.param "split_n" : index
  %num_chunks = arith.ceildivui %row_length, %split_n : index
  tile.launch (%chunk, %query) in (%num_chunks, %m) threads 128 blocks_per_sm "min_blocks" {
    %q_rows = tile.alloc : !tile.shared<[heads, dim], f8E4M3FN>
    %weight_tile = tile.alloc : !tile.shared<[heads], f32>
    %k_tile = tile.alloc : !tile.shared<[block_n, dim], f8E4M3FN>
    %scale_tile = tile.alloc : !tile.shared<[block_n], f32>
    %scores = tile.alloc : !tile.frag<[block_n, heads], f32>
    %row_logits = tile.alloc : !tile.frag<[block_n], f32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0.0 : f32
    %inf = arith.constant 0x7F800000 : f32
    %block_n = tile.param "block_n" : index
    %heads = tile.param "heads" : index

    // This block's keys: the window clipped to the chunk, its start rounded
    // down to 4 (still inside the chunk: chunks start at multiples of 4).
    %start_i32 = tile.load %starts[%query] : !tile.global<[?], i32>
    %end_i32 = tile.load %ends[%query] : !tile.global<[?], i32>
    %start = arith.index_cast %start_i32 : i32 to index
    %end_window = arith.index_cast %end_i32 : i32 to index
    %end = arith.minsi %end_window, %row_length : index
    %chunk_first = arith.muli %chunk, %split_n : index
    %chunk_end = arith.addi %chunk_first, %split_n : index
    %lo = arith.maxsi %start, %chunk_first : index
    %lo_quads = arith.divsi %lo, %c4 : index
    %lo4 = arith.muli %lo_quads, %c4 : index
    %hi = arith.minsi %end, %chunk_end : index
    %span = arith.subi %hi, %lo4 : index
    %span_pos = arith.maxsi %span, %c0 : index
    %num_tiles = arith.ceildivui %span_pos, %block_n : index
    %key_row0 = arith.muli %query, %row_length : index
    %q_row0 = arith.muli %query, %heads : index

    tile.copy %q[%q_row0, %c0] to %q_rows
        : !tile.global<[?, dim], f8E4M3FN> to !tile.shared<[heads, dim], f8E4M3FN>
    tile.copy %weights[%query, %c0] to %weight_tile
        : !tile.global<[?, heads], f32> to !tile.shared<[heads], f32>

    tile.pipelined %t = %c0 to %num_tiles step %c1 num_stages = 2 {
      %tile_offset = arith.muli %t, %block_n : index
      %j0 = arith.addi %lo4, %tile_offset : index
      %row0 = arith.addi %key_row0, %j0 : index
      tile.copy %k[%row0, %c0] to %k_tile
          : !tile.global<[?, dim], f8E4M3FN> to !tile.shared<[block_n, dim], f8E4M3FN>
      tile.copy %k_scale[%row0] to %scale_tile
          : !tile.global<[?], f32> to !tile.shared<[block_n], f32>
      tile.gemm %k_tile, %q_rows, %scores transpose_b clear_accum
          : !tile.shared<[block_n, dim], f8E4M3FN>, !tile.shared<[heads, dim], f8E4M3FN>
            -> !tile.frag<[block_n, heads], f32>
      // ReLU(x * s) = s * ReLU(x) when s is finite and >= 0 (dequantization
      // scales are): a tile whose scales all are multiplies once after the
      // head sum instead of once per head.
      %plain_scales = tile.all_of %scale_tile : !tile.shared<[block_n], f32> {
      ^bb0(%s: f32):
        %nonnegative = arith.cmpf oge, %s, %zero : f32
        %finite = arith.cmpf olt, %s, %inf : f32
        %plain = arith.andi %nonnegative, %finite : i1
        tile.yield %plain : i1
      }
      scf.if %plain_scales {
        tile.parallel (%i, %h) in [block_n, heads] {
          %x = tile.load %scores[%i, %h] : !tile.frag<[block_n, heads], f32>
          %wt = tile.load %weight_tile[%h] : !tile.shared<[heads], f32>
          %relu = arith.maximumf %x, %zero : f32
          %weighted = arith.mulf %relu, %wt : f32
          tile.store %weighted, %scores[%i, %h] : !tile.frag<[block_n, heads], f32>
        }
        tile.reduce sum %scores to %row_logits dim = 1
            : !tile.frag<[block_n, heads], f32> to !tile.frag<[block_n], f32>
        tile.parallel (%i) in [block_n] {
          %sum = tile.load %row_logits[%i] : !tile.frag<[block_n], f32>
          %s = tile.load %scale_tile[%i] : !tile.shared<[block_n], f32>
          %scaled = arith.mulf %sum, %s : f32
          tile.store %scaled, %row_logits[%i] : !tile.frag<[block_n], f32>
        }
      } else {
        tile.parallel (%i, %h) in [block_n, heads] {
          %x = tile.load %scores[%i, %h] : !tile.frag<[block_n, heads], f32>
          %s = tile.load %scale_tile[%i] : !tile.shared<[block_n], f32>
          %wt = tile.load %weight_tile[%h] : !tile.shared<[heads], f32>
          %scaled = arith.mulf %x, %s : f32
          %relu = arith.maximumf %scaled, %zero : f32
          %weighted = arith.mulf %relu, %wt : f32
          tile.store %weighted, %scores[%i, %h] : !tile.frag<[block_n, heads], f32>
        }
        tile.reduce sum %scores to %row_logits dim = 1
            : !tile.frag<[block_n, heads], f32> to !tile.frag<[block_n], f32>
      }
      tile.parallel (%i) in [block_n] {
        %v = tile.load %row_logits[%i] : !tile.frag<[block_n], f32>
        %j = arith.addi %j0, %i : index
        %after_start = arith.cmpi sge, %j, %start : index
        %before_end = arith.cmpi slt, %j, %hi : index
        %mine = arith.andi %after_start, %before_end : i1
        scf.if %mine {
          tile.store %v, %logits[%query, %j] : !tile.global<[?, ?], f32>
        }
      }
    }
  }
}
