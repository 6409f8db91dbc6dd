// hisa's device library (tile-inline-functions links these into the kernels
// that call them; kernels-dsl/*.mlir are the kernels).

// The key of an f32 that the radix selects order by: unsigned keys compare
// like the floats (positive floats get the sign bit, negative ones are
// inverted), -0.0 and 0.0 share a key, and -inf and NaN map to 0, the key of
// "not selectable" (no selectable value has it).
func.func private @select_key(%v: f32) -> i32 {
  %zero = arith.constant 0 : i32
  %zero_f = arith.constant 0.0 : f32
  %raw_bits = arith.bitcast %v : f32 to i32
  %is_zero = arith.cmpf oeq, %v, %zero_f : f32
  %bits = arith.select %is_zero, %zero, %raw_bits : i32
  %negative = arith.cmpi slt, %bits, %zero : i32
  %all_ones = arith.constant -1 : i32
  %sign = arith.constant -2147483648 : i32
  %flipped = arith.xori %bits, %all_ones : i32
  %signed = arith.ori %bits, %sign : i32
  %ordered = arith.select %negative, %flipped, %signed : i32
  %neg_inf = arith.constant 0xFF800000 : f32
  %selectable = arith.cmpf ogt, %v, %neg_inf : f32
  %key = arith.select %selectable, %ordered, %zero : i32
  return %key : i32
}

// The key of a bf16: that of the f32 it widens to exactly, so bf16 and f32
// rows order (and tie) the same way.
func.func private @select_key_bf16(%v: bf16) -> i32 {
  %wide = arith.extf %v : bf16 to f32
  %key = func.call @select_key(%wide) : (f32) -> i32
  return %key : i32
}
