// The fp8 quantize-dequantize of the DeepSeek-V4 kv row (and of compressed
// entries), in place: the first 448 of its 512 dims, in blocks of 64, each
// scaled by amax / 448 (a zero block stays zero), rounded to fp8 e4m3
// (saturating) and back; the last 64 (RoPE) dims are untouched
// (python/hisa/v4/reference.py: fp8_qdq). x [rows, 8, 64] bf16 (a [rows,
// 512] row seen as 8 blocks). One block of 128 threads per row: the block
// maxima go through shared memory.

tile.kernel @v4_fp8_qdq(%x: !tile.global<[?, 8, 64], bf16>) {
  %rows = tile.dim %x, 0 : !tile.global<[?, 8, 64], bf16>
  tile.launch (%row) in (%rows) threads 128 {
    %values = tile.alloc : !tile.frag<[8, 64], bf16>
    %wide = tile.alloc : !tile.frag<[8, 64], f32>
    %amax = tile.alloc : !tile.shared<[8], f32>
    %c0 = arith.constant 0 : index
    %c7 = arith.constant 7 : index
    tile.copy %x[%row, %c0, %c0] to %values
        : !tile.global<[?, 8, 64], bf16> to !tile.frag<[8, 64], bf16>
    tile.cast %values to %wide : !tile.frag<[8, 64], bf16> to !tile.frag<[8, 64], f32>
    tile.reduce absmax %wide to %amax dim = 1
        : !tile.frag<[8, 64], f32> to !tile.shared<[8], f32>
    tile.parallel (%b, %j) in [8, 64] {
      %v = tile.load %wide[%b, %j] : !tile.frag<[8, 64], f32>
      %m = tile.load %amax[%b] : !tile.shared<[8], f32>
      %fp8_max = arith.constant 448.0 : f32
      %zero = arith.constant 0.0 : f32
      %one = arith.constant 1.0 : f32
      %ratio = arith.divf %m, %fp8_max : f32
      %nonzero = arith.cmpf ogt, %ratio, %zero : f32
      %scale = arith.select %nonzero, %ratio, %one : f32
      %scaled = arith.divf %v, %scale : f32
      %code = arith.truncf %scaled : f32 to f8E4M3FN
      %back = arith.extf %code : f8E4M3FN to f32
      %restored = arith.mulf %back, %scale : f32
      // The RoPE block (7) keeps its values.
      %rope = arith.cmpi eq, %b, %c7 : index
      %kept = arith.select %rope, %v, %restored : f32
      %rounded = arith.truncf %kept : f32 to bf16
      tile.store %rounded, %values[%b, %j] : !tile.frag<[8, 64], bf16>
    }
    tile.copy %values to %x[%row, %c0, %c0]
        : !tile.frag<[8, 64], bf16> to !tile.global<[?, 8, 64], bf16>
  }
}
