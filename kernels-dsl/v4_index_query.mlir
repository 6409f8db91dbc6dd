// The CSA indexer's query in one launch: what v4_rope (dim 128), then
// v4_hadamard_fp4, then v4_to_fp8 (weights = 1) compute, bit for bit,
// without the two bf16 round trips through memory between them
// (python/hisa/v4/reference.py: the indexer's q, KERNELS.md "The V4
// attention layer around the kernel"). Each row of 128 (one head of one
// token) is
//
//   1. rotated on its last 64 dims by RoPE at the token's position (token
//      t of sequence t / seq at base[t / seq] + t % seq) and rounded to
//      bf16, as v4_rope stores it;
//   2. Walsh-Hadamard transformed (butterflies in the reference's order,
//      / sqrt(128)), fp4 quantize-dequantized in blocks of 32 and rounded to
//      bf16, as v4_hadamard_fp4 stores it;
//   3. split into fp8 e4m3 codes times its power-of-two scale, the smallest
//      2^e >= amax / 448; the head's weight w_in (bf16) becomes w_in *
//      scale * factor (f32), as v4_to_fp8 with weights = 1 computes it.
//
// q [tokens, heads, 128] bf16 (read only); q8 [tokens, heads, 128] fp8,
// scale and w_out [tokens, heads] f32. 8 rows per block of 128 threads.

// From hisa's device library (kernels-dsl/lib/rope.mlir, quantize.mlir).
func.func private @rope_rotate(f32, f32, f32, f32) -> (f32, f32)
func.func private @rope_position(!tile.global<[?], i32>, !tile.global<[?, 32], f32>,
                                 index, index) -> index
func.func private @fp4_qdq(f32, f32) -> f32
func.func private @pow2_at_least(f32) -> f32
func.func private @hadamard_butterflies_8x128(!tile.shared<[8, 128], f32>)

tile.kernel @v4_index_query(%q: !tile.global<[?, ?, 128], bf16>,
                            %cos: !tile.global<[?, 32], f32>,
                            %sin: !tile.global<[?, 32], f32>,
                            %base: !tile.global<[?], i32>,
                            %w_in: !tile.global<[?, ?], bf16>,
                            %q8: !tile.global<[?, ?, 128], f8E4M3FN>,
                            %scale: !tile.global<[?, ?], f32>,
                            %w_out: !tile.global<[?, ?], f32>,
                            %seq: index, %factor: f32) {
  %tokens = tile.dim %q, 0 : !tile.global<[?, ?, 128], bf16>
  %heads = tile.dim %q, 1 : !tile.global<[?, ?, 128], bf16>
  %rows = arith.muli %tokens, %heads : index
  %c8_host = arith.constant 8 : index
  %blocks = arith.ceildivui %rows, %c8_host : index
  tile.launch (%block) in (%blocks) threads 128 {
    %work = tile.alloc : !tile.shared<[8, 128], f32>
    %values = tile.alloc : !tile.frag<[8, 4, 32], f32>
    %block_amax = tile.alloc : !tile.shared<[8, 4], f32>
    %row_values = tile.alloc : !tile.frag<[8, 128], f32>
    %row_amax = tile.alloc : !tile.shared<[8], f32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %first_row = arith.muli %block, %c8 : index

    // The rows (zeros past the last): rows past it stay zero throughout
    // and are never stored.
    tile.parallel (%r, %i) in [8, 128] {
      %row = arith.addi %first_row, %r : index
      %real = arith.cmpi ult, %row, %rows : index
      %v = scf.if %real -> (f32) {
        %t = arith.divui %row, %heads : index
        %h = arith.remui %row, %heads : index
        %b = tile.load %q[%t, %h, %i] : !tile.global<[?, ?, 128], bf16>
        %f = arith.extf %b : bf16 to f32
        scf.yield %f : f32
      } else {
        scf.yield %zero : f32
      }
      tile.store %v, %work[%r, %i] : !tile.shared<[8, 128], f32>
    }
    // 1. RoPE on the interleaved pairs of dims 64..127, rounded to bf16.
    tile.parallel (%r, %p) in [8, 32] {
      %row = arith.addi %first_row, %r : index
      %real = arith.cmpi ult, %row, %rows : index
      scf.if %real {
        %t = arith.divui %row, %heads : index
        %position = func.call @rope_position(%base, %cos, %t, %seq)
            : (!tile.global<[?], i32>, !tile.global<[?, 32], f32>, index, index) -> index
        %pair = arith.muli %p, %c2 : index
        %even = arith.addi %c64, %pair : index
        %odd = arith.addi %even, %c1 : index
        %re = tile.load %work[%r, %even] : !tile.shared<[8, 128], f32>
        %im = tile.load %work[%r, %odd] : !tile.shared<[8, 128], f32>
        %c = tile.load %cos[%position, %p] : !tile.global<[?, 32], f32>
        %s = tile.load %sin[%position, %p] : !tile.global<[?, 32], f32>
        %re_out, %im_out = func.call @rope_rotate(%re, %im, %c, %s)
            : (f32, f32, f32, f32) -> (f32, f32)
        %re_b = arith.truncf %re_out : f32 to bf16
        %im_b = arith.truncf %im_out : f32 to bf16
        %re_r = arith.extf %re_b : bf16 to f32
        %im_r = arith.extf %im_b : bf16 to f32
        tile.store %re_r, %work[%r, %even] : !tile.shared<[8, 128], f32>
        tile.store %im_r, %work[%r, %odd] : !tile.shared<[8, 128], f32>
      }
    }
    // 2. The Walsh-Hadamard butterflies (kernels-dsl/lib/quantize.mlir).
    func.call @hadamard_butterflies_8x128(%work) : (!tile.shared<[8, 128], f32>) -> ()
    %sqrt_n = arith.constant 11.3137084989847603904 : f32
    tile.parallel (%r, %blk, %lane) in [8, 4, 32] {
      %in_block = arith.muli %blk, %c32 : index
      %i = arith.addi %in_block, %lane : index
      %v = tile.load %work[%r, %i] : !tile.shared<[8, 128], f32>
      %normalized = arith.divf %v, %sqrt_n : f32
      tile.store %normalized, %values[%r, %blk, %lane] : !tile.frag<[8, 4, 32], f32>
    }
    tile.reduce absmax %values to %block_amax dim = 2
        : !tile.frag<[8, 4, 32], f32> to !tile.shared<[8, 4], f32>
    tile.parallel (%r, %blk, %lane) in [8, 4, 32] {
      %v = tile.load %values[%r, %blk, %lane] : !tile.frag<[8, 4, 32], f32>
      %m = tile.load %block_amax[%r, %blk] : !tile.shared<[8, 4], f32>
      %restored = func.call @fp4_qdq(%v, %m) : (f32, f32) -> f32
      %rounded_b = arith.truncf %restored : f32 to bf16
      %rounded = arith.extf %rounded_b : bf16 to f32
      %in_block = arith.muli %blk, %c32 : index
      %i = arith.addi %in_block, %lane : index
      tile.store %rounded, %work[%r, %i] : !tile.shared<[8, 128], f32>
    }
    // 3. fp8 codes under the row's power-of-two scale.
    tile.parallel (%r, %i) in [8, 128] {
      %v = tile.load %work[%r, %i] : !tile.shared<[8, 128], f32>
      tile.store %v, %row_values[%r, %i] : !tile.frag<[8, 128], f32>
    }
    tile.reduce absmax %row_values to %row_amax dim = 1
        : !tile.frag<[8, 128], f32> to !tile.shared<[8], f32>
    tile.parallel (%r, %i) in [8, 128] {
      %row = arith.addi %first_row, %r : index
      %real = arith.cmpi ult, %row, %rows : index
      scf.if %real {
        %t = arith.divui %row, %heads : index
        %h = arith.remui %row, %heads : index
        %v = tile.load %row_values[%r, %i] : !tile.frag<[8, 128], f32>
        %m = tile.load %row_amax[%r] : !tile.shared<[8], f32>
        %fp8_max = arith.constant 448.0 : f32
        %ratio = arith.divf %m, %fp8_max : f32
        %row_scale = func.call @pow2_at_least(%ratio) : (f32) -> f32
        %scaled = arith.divf %v, %row_scale : f32
        %code = arith.truncf %scaled : f32 to f8E4M3FN
        tile.store %code, %q8[%t, %h, %i] : !tile.global<[?, ?, 128], f8E4M3FN>
        %first_lane = arith.cmpi eq, %i, %c0 : index
        scf.if %first_lane {
          tile.store %row_scale, %scale[%t, %h] : !tile.global<[?, ?], f32>
          %w_b = tile.load %w_in[%t, %h] : !tile.global<[?, ?], bf16>
          %w = arith.extf %w_b : bf16 to f32
          %w_scaled = arith.mulf %w, %row_scale : f32
          %w_final = arith.mulf %w_scaled, %factor : f32
          tile.store %w_final, %w_out[%t, %h] : !tile.global<[?, ?], f32>
        }
      }
    }
  }
}
