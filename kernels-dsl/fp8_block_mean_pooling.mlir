// HISA step 1.1: block mean pooling of fp8 keys (KERNELS.md 1.1).
//
//   blocked_k[b], blocked_scale[b] = quantize(mean_{i in block b} k[i] * k_scale[i])
//
// Block b covers rows [b*kb, min((b+1)*kb, N)); rows past N read as zero, so
// the sum only needs dividing by the number of rows actually in the block.
// A block of threads pools `blocks` consecutive blocks, loading all their
// rows at once so that more bytes are in flight per reduction.

tile.kernel @fp8_block_mean_pooling(
    %k: !tile.global<[?, dim], f8E4M3FN>,
    %k_scale: !tile.global<[?], f32>,
    %blocked_k: !tile.global<[?, dim], f8E4M3FN>,
    %blocked_scale: !tile.global<[?], f32>)
    params {dim = 128, kb = 128, blocks = 2} {
  %n = tile.dim %k, 0 : !tile.global<[?, dim], f8E4M3FN>
  %kb = tile.param "kb" : index
  %blocks = tile.param "blocks" : index
  %num_blocks = arith.ceildivui %n, %kb : index
  %grid = arith.ceildivui %num_blocks, %blocks : index
  tile.launch (%bx) in (%grid) threads 128 {
    %k_rows = tile.alloc : !tile.frag<[blocks*kb, dim], f8E4M3FN>
    %values = tile.alloc : !tile.frag<[blocks*kb, dim], f32>
    %mean = tile.alloc : !tile.frag<[blocks, dim], f32>
    %amax = tile.alloc : !tile.local<[blocks], f32>
    %quantized = tile.alloc : !tile.frag<[blocks, dim], f8E4M3FN>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %fp8_max = arith.constant 448.0 : f32
    %min_scale = arith.constant 1.0e-10 : f32

    %block0 = arith.muli %bx, %blocks : index
    %row0 = arith.muli %block0, %kb : index
    tile.copy %k[%row0, %c0] to %k_rows
        : !tile.global<[?, dim], f8E4M3FN> to !tile.frag<[blocks*kb, dim], f8E4M3FN>
    tile.cast %k_rows to %values
        : !tile.frag<[blocks*kb, dim], f8E4M3FN> to !tile.frag<[blocks*kb, dim], f32>
    tile.parallel (%i, %d) in [blocks*kb, dim] {
      // The scale of each thread's rows comes from global (L1-cached); rows
      // past N read 0.
      %row = arith.addi %row0, %i : index
      %s = tile.load %k_scale[%row] : !tile.global<[?], f32>
      %x = tile.load %values[%i, %d] : !tile.frag<[blocks*kb, dim], f32>
      %xs = arith.mulf %x, %s : f32
      tile.store %xs, %values[%i, %d] : !tile.frag<[blocks*kb, dim], f32>
    }
    %per_block = tile.view %values
        : !tile.frag<[blocks*kb, dim], f32> to !tile.frag<[blocks, kb, dim], f32>
    tile.reduce sum %per_block to %mean dim = 1
        : !tile.frag<[blocks, kb, dim], f32> to !tile.frag<[blocks, dim], f32>

    // Rows in block b: kb, fewer for the last, none past the end.
    tile.parallel (%b, %d) in [blocks, dim] {
      %block = arith.addi %block0, %b : index
      %first = arith.muli %block, %kb : index
      %rows_left = arith.subi %n, %first : index
      %count = arith.minsi %rows_left, %kb : index
      %count_pos = arith.maxsi %count, %c1 : index
      %count_i64 = arith.index_cast %count_pos : index to i64
      %count_f32 = arith.sitofp %count_i64 : i64 to f32
      %sum = tile.load %mean[%b, %d] : !tile.frag<[blocks, dim], f32>
      %m = arith.divf %sum, %count_f32 : f32
      tile.store %m, %mean[%b, %d] : !tile.frag<[blocks, dim], f32>
    }

    // scale = max(max|mean| / 448, 1e-10); blocked_k = fp8(mean / scale).
    tile.reduce absmax %mean to %amax dim = 1
        : !tile.frag<[blocks, dim], f32> to !tile.local<[blocks], f32>
    tile.parallel (%b, %d) in [blocks, dim] {
      %a = tile.load %amax[%b] : !tile.local<[blocks], f32>
      %ratio = arith.divf %a, %fp8_max : f32
      %scale = arith.maximumf %ratio, %min_scale : f32
      %m = tile.load %mean[%b, %d] : !tile.frag<[blocks, dim], f32>
      %q = arith.divf %m, %scale : f32
      tile.store %q, %mean[%b, %d] : !tile.frag<[blocks, dim], f32>
    }
    tile.cast %mean to %quantized
        : !tile.frag<[blocks, dim], f32> to !tile.frag<[blocks, dim], f8E4M3FN>
    tile.copy %quantized to %blocked_k[%block0, %c0]
        : !tile.frag<[blocks, dim], f8E4M3FN> to !tile.global<[?, dim], f8E4M3FN>
    scf.for %b = %c0 to %blocks step %c1 {
      %a = tile.load %amax[%b] : !tile.local<[blocks], f32>
      %ratio = arith.divf %a, %fp8_max : f32
      %scale = arith.maximumf %ratio, %min_scale : f32
      %block = arith.addi %block0, %b : index
      tile.store %scale, %blocked_scale[%block] : !tile.global<[?], f32>
    }
  }
}
