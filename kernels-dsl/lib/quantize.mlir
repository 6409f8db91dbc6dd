// hisa's device library: the scale and rounding steps of the DeepSeek-V4
// layer's quantize-dequantize kernels (python/hisa/v4/reference.py), exact
// as the reference computes them.

// The smallest power of two >= max(ratio, 2^-126) (ratio >= 0), from the
// float's bits: the exponent field, plus one unless the mantissa is zero
// (no log2 rounding near powers of two).
func.func private @pow2_at_least(%ratio: f32) -> f32 {
  %smallest = arith.constant 1.17549435e-38 : f32
  %floor = arith.maximumf %ratio, %smallest : f32
  %bits = arith.bitcast %floor : f32 to i32
  %c23 = arith.constant 23 : i32
  %mantissa_mask = arith.constant 8388607 : i32
  %zero_i = arith.constant 0 : i32
  %one_i = arith.constant 1 : i32
  %biased = arith.shrui %bits, %c23 : i32
  %mantissa = arith.andi %bits, %mantissa_mask : i32
  %inexact = arith.cmpi ne, %mantissa, %zero_i : i32
  %round_up = arith.select %inexact, %one_i, %zero_i : i32
  %scale_biased = arith.addi %biased, %round_up : i32
  %scale_bits = arith.shli %scale_biased, %c23 : i32
  %scale = arith.bitcast %scale_bits : i32 to f32
  return %scale : f32
}

// The nearest fp4 (e2m1) magnitude {0, 0.5, 1, 1.5, 2, 3, 4, 6} of a
// magnitude <= 6, ties to the even code (at the midpoints 0.25, 0.75,
// 1.25, 1.75, 2.5, 3.5 and 5: 0, 1, 1, 2, 2, 4, 4).
func.func private @e2m1_round(%magnitude: f32) -> f32 {
  %zero = arith.constant 0.0 : f32
  %t0 = arith.constant 0.25 : f32
  %t1 = arith.constant 0.75 : f32
  %t2 = arith.constant 1.25 : f32
  %t3 = arith.constant 1.75 : f32
  %t4 = arith.constant 2.5 : f32
  %t5 = arith.constant 3.5 : f32
  %t6 = arith.constant 5.0 : f32
  %q1 = arith.constant 0.5 : f32
  %q2 = arith.constant 1.0 : f32
  %q3 = arith.constant 1.5 : f32
  %q4 = arith.constant 2.0 : f32
  %q5 = arith.constant 3.0 : f32
  %q6 = arith.constant 4.0 : f32
  %q7 = arith.constant 6.0 : f32
  %above0 = arith.cmpf ogt, %magnitude, %t0 : f32
  %above1 = arith.cmpf oge, %magnitude, %t1 : f32
  %above2 = arith.cmpf ogt, %magnitude, %t2 : f32
  %above3 = arith.cmpf oge, %magnitude, %t3 : f32
  %above4 = arith.cmpf ogt, %magnitude, %t4 : f32
  %above5 = arith.cmpf oge, %magnitude, %t5 : f32
  %above6 = arith.cmpf ogt, %magnitude, %t6 : f32
  %s1 = arith.select %above0, %q1, %zero : f32
  %s2 = arith.select %above1, %q2, %s1 : f32
  %s3 = arith.select %above2, %q3, %s2 : f32
  %s4 = arith.select %above3, %q4, %s3 : f32
  %s5 = arith.select %above4, %q5, %s4 : f32
  %s6 = arith.select %above5, %q6, %s5 : f32
  %code = arith.select %above6, %q7, %s6 : f32
  return %code : f32
}

// fp4 quantize-dequantize of v in a block whose largest magnitude is amax:
// scale = pow2_at_least(amax / 6), the e2m1 code of v / scale with v's
// sign, times the scale.
func.func private @fp4_qdq(%v: f32, %amax: f32) -> f32 {
  %six = arith.constant 6.0 : f32
  %ratio = arith.divf %amax, %six : f32
  %scale = func.call @pow2_at_least(%ratio) : (f32) -> f32
  %scaled = arith.divf %v, %scale : f32
  // |scaled| and copysign through the sign bit (arith only: library
  // functions inline in every context, with or without the math dialect's
  // inliner interface).
  %bits = arith.bitcast %scaled : f32 to i32
  %magnitude_mask = arith.constant 2147483647 : i32
  %sign_mask = arith.constant -2147483648 : i32
  %magnitude_bits = arith.andi %bits, %magnitude_mask : i32
  %magnitude = arith.bitcast %magnitude_bits : i32 to f32
  %code = func.call @e2m1_round(%magnitude) : (f32) -> f32
  %code_bits = arith.bitcast %code : f32 to i32
  %sign = arith.andi %bits, %sign_mask : i32
  %signed_bits = arith.ori %code_bits, %sign : i32
  %signed = arith.bitcast %signed_bits : i32 to f32
  %restored = arith.mulf %signed, %scale : f32
  return %restored : f32
}

// The Walsh-Hadamard transform's butterflies, in place on 8 rows of 128
// f32 in shared memory (not yet divided by sqrt(128)): stage h = 1, 2, ...,
// 64 pairs element i = (p / h) * 2h + p % h with i + h into (a + b, a - b),
// in the reference's order, so the f32 sums agree bit for bit
// (v4_hadamard_fp4, v4_index_query; v4_compress runs the same stages on
// its one row).
func.func private @hadamard_butterflies_8x128(%work: !tile.shared<[8, 128], f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %h_last = arith.constant 64 : index
  scf.for %stage = %c0 to %c8 step %c1 {
    %stage_i = arith.index_cast %stage : index to i64
    %one_i = arith.constant 1 : i64
    %h_i = arith.shli %one_i, %stage_i : i64
    %h = arith.index_cast %h_i : i64 to index
    %active = arith.cmpi ule, %h, %h_last : index
    scf.if %active {
      tile.parallel (%r, %p) in [8, 64] {
        %group = arith.divui %p, %h : index
        %offset = arith.remui %p, %h : index
        %two_h = arith.muli %h, %c2 : index
        %base = arith.muli %group, %two_h : index
        %i = arith.addi %base, %offset : index
        %k = arith.addi %i, %h : index
        %a = tile.load %work[%r, %i] : !tile.shared<[8, 128], f32>
        %b = tile.load %work[%r, %k] : !tile.shared<[8, 128], f32>
        %sum = arith.addf %a, %b : f32
        %difference = arith.subf %a, %b : f32
        tile.store %sum, %work[%r, %i] : !tile.shared<[8, 128], f32>
        tile.store %difference, %work[%r, %k] : !tile.shared<[8, 128], f32>
      }
    }
  }
  return
}
