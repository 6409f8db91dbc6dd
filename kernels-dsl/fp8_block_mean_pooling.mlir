// HISA step 1.1: block mean pooling of fp8 keys (docs: ../../shared/docs/KERNELS.md).
//
//   blocked_k[b], blocked_scale[b] = quantize(mean_{i in block b} k[i] * k_scale[i])
//
// Block b covers rows [b*kb, min((b+1)*kb, N)); rows past N read as zero, so
// the sum only needs dividing by the number of rows actually in the block.
// One block of threads per pooled block.

tile.kernel @fp8_block_mean_pooling(
    %k: !tile.global<[?, dim], f8E4M3FN>,
    %k_scale: !tile.global<[?], f32>,
    %blocked_k: !tile.global<[?, dim], f8E4M3FN>,
    %blocked_scale: !tile.global<[?], f32>)
    params {dim = 128, kb = 128} {
  %n = tile.dim %k, 0 : !tile.global<[?, dim], f8E4M3FN>
  %kb = tile.param "kb" : index
  %num_blocks = arith.ceildivui %n, %kb : index
  tile.launch (%bx) in (%num_blocks) threads 128 {
    %k_frag = tile.alloc : !tile.frag<[kb, dim], f8E4M3FN>
    %values = tile.alloc : !tile.frag<[kb, dim], f32>
    %mean = tile.alloc : !tile.frag<[dim], f32>
    %amax = tile.alloc : !tile.local<[1], f32>
    %quantized = tile.alloc : !tile.frag<[dim], f8E4M3FN>
    %c0 = arith.constant 0 : index

    %row0 = arith.muli %bx, %kb : index
    tile.copy %k[%row0, %c0] to %k_frag
        : !tile.global<[?, dim], f8E4M3FN> to !tile.frag<[kb, dim], f8E4M3FN>
    tile.cast %k_frag to %values
        : !tile.frag<[kb, dim], f8E4M3FN> to !tile.frag<[kb, dim], f32>
    tile.parallel (%i, %d) in [kb, dim] {
      %x = tile.load %values[%i, %d] : !tile.frag<[kb, dim], f32>
      // Each thread's rows: the scale is read from global (L1-cached); rows
      // past N read 0.
      %row = arith.addi %row0, %i : index
      %s = tile.load %k_scale[%row] : !tile.global<[?], f32>
      %xs = arith.mulf %x, %s : f32
      tile.store %xs, %values[%i, %d] : !tile.frag<[kb, dim], f32>
    }
    tile.reduce sum %values to %mean dim = 0
        : !tile.frag<[kb, dim], f32> to !tile.frag<[dim], f32>

    // Rows in this block: kb, or fewer for the last one.
    %rows_left = arith.subi %n, %row0 : index
    %count = arith.minui %rows_left, %kb : index
    %count_i64 = arith.index_cast %count : index to i64
    %count_f32 = arith.uitofp %count_i64 : i64 to f32
    tile.parallel (%d) in [dim] {
      %sum = tile.load %mean[%d] : !tile.frag<[dim], f32>
      %m = arith.divf %sum, %count_f32 : f32
      tile.store %m, %mean[%d] : !tile.frag<[dim], f32>
    }

    // scale = max(max|mean| / 448, 1e-10); blocked_k = fp8(mean / scale).
    tile.reduce absmax %mean to %amax dim = 0
        : !tile.frag<[dim], f32> to !tile.local<[1], f32>
    %amax_value = tile.load %amax[%c0] : !tile.local<[1], f32>
    %fp8_max = arith.constant 448.0 : f32
    %min_scale = arith.constant 1.0e-10 : f32
    %ratio = arith.divf %amax_value, %fp8_max : f32
    %scale = arith.maximumf %ratio, %min_scale : f32
    tile.parallel (%d) in [dim] {
      %m = tile.load %mean[%d] : !tile.frag<[dim], f32>
      %q = arith.divf %m, %scale : f32
      tile.store %q, %mean[%d] : !tile.frag<[dim], f32>
    }
    tile.cast %mean to %quantized
        : !tile.frag<[dim], f32> to !tile.frag<[dim], f8E4M3FN>
    tile.copy %quantized to %blocked_k[%bx, %c0]
        : !tile.frag<[dim], f8E4M3FN> to !tile.global<[?, dim], f8E4M3FN>
    tile.store %scale, %blocked_scale[%bx] : !tile.global<[?], f32>
  }
}
