// The CSA indexer's activation quantization in the DeepSeek-V4 attention
// layer (KERNELS.md "The V4 attention layer around the kernel";
// python/hisa/v4/reference.py: fp4_qdq(hadamard(x))), in place on rows of
// 128 (the indexer's q heads and compressed keys):
//
//   1. the orthonormal Walsh-Hadamard transform: butterflies (a + b, a - b)
//      of elements i and i + h for h = 1, 2, ..., 64, in the reference's
//      order (so the f32 sums agree bit for bit), then / sqrt(128);
//   2. the fp4 (e2m1) quantize-dequantize in blocks of 32: a power-of-two
//      scale 2^e per block, the smallest with amax / 2^e <= 6 (e from the
//      bits of max(amax / 6, 2^-126): no log2 rounding), each value rounded
//      to the nearest e2m1 magnitude {0, 0.5, 1, 1.5, 2, 3, 4, 6} with ties
//      to the even code, then scaled back.
//
// x [rows, 128] bf16. 8 rows per block of 128 threads; the butterflies run
// in shared memory (a barrier between stages).

// From hisa's device library (kernels-dsl/lib/quantize.mlir).
func.func private @fp4_qdq(f32, f32) -> f32
func.func private @hadamard_butterflies_8x128(!tile.shared<[8, 128], f32>)

tile.kernel @v4_hadamard_fp4(%x: !tile.global<[?, 128], bf16>) {
  %rows = tile.dim %x, 0 : !tile.global<[?, 128], bf16>
  %c8_host = arith.constant 8 : index
  %blocks = arith.ceildivui %rows, %c8_host : index
  tile.launch (%block) in (%blocks) threads 128 {
    %work = tile.alloc : !tile.shared<[8, 128], f32>
    %values = tile.alloc : !tile.frag<[8, 4, 32], f32>
    %amax = tile.alloc : !tile.shared<[8, 4], f32>
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %zero = arith.constant 0.0 : f32
    %first_row = arith.muli %block, %c8 : index

    tile.parallel (%r, %i) in [8, 128] {
      %row = arith.addi %first_row, %r : index
      %real = arith.cmpi ult, %row, %rows : index
      %v = scf.if %real -> (f32) {
        %b = tile.load %x[%row, %i] : !tile.global<[?, 128], bf16>
        %f = arith.extf %b : bf16 to f32
        scf.yield %f : f32
      } else {
        scf.yield %zero : f32
      }
      tile.store %v, %work[%r, %i] : !tile.shared<[8, 128], f32>
    }
    // The butterflies (kernels-dsl/lib/quantize.mlir).
    func.call @hadamard_butterflies_8x128(%work) : (!tile.shared<[8, 128], f32>) -> ()
    %sqrt_n = arith.constant 11.3137084989847603904 : f32
    tile.parallel (%r, %blk, %lane) in [8, 4, 32] {
      %in_block = arith.muli %blk, %c32 : index
      %i = arith.addi %in_block, %lane : index
      %v = tile.load %work[%r, %i] : !tile.shared<[8, 128], f32>
      %normalized = arith.divf %v, %sqrt_n : f32
      tile.store %normalized, %values[%r, %blk, %lane] : !tile.frag<[8, 4, 32], f32>
    }
    tile.reduce absmax %values to %amax dim = 2
        : !tile.frag<[8, 4, 32], f32> to !tile.shared<[8, 4], f32>
    tile.parallel (%r, %blk, %lane) in [8, 4, 32] {
      %row = arith.addi %first_row, %r : index
      %real = arith.cmpi ult, %row, %rows : index
      scf.if %real {
        %v = tile.load %values[%r, %blk, %lane] : !tile.frag<[8, 4, 32], f32>
        %m = tile.load %amax[%r, %blk] : !tile.shared<[8, 4], f32>
        // The device library's fp4 step (kernels-dsl/lib/quantize.mlir).
        %restored = func.call @fp4_qdq(%v, %m) : (f32, f32) -> f32
        %bf = arith.truncf %restored : f32 to bf16
        %in_block = arith.muli %blk, %c32 : index
        %i = arith.addi %in_block, %lane : index
        tile.store %bf, %x[%row, %i] : !tile.global<[?, 128], bf16>
      }
    }
  }
}
