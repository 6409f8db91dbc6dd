// tile.all_of over a 64-element f32 tile (two elements a lane: one vector
// load) and a 40-element i32 tile (lanes past the end hold).
tile.kernel @all_of_lowering(%f: !tile.global<[64], f32>,
                             %g: !tile.global<[40], i32>,
                             %out: !tile.global<[2], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %scales = tile.alloc : !tile.shared<[64], f32>
    %counts = tile.alloc : !tile.shared<[40], i32>
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %zero_i = arith.constant 0 : i32
    %one = arith.constant 1.0 : f32
    tile.copy %f[%c0] to %scales : !tile.global<[64], f32> to !tile.shared<[64], f32>
    tile.copy %g[%c0] to %counts : !tile.global<[40], i32> to !tile.shared<[40], i32>
    %nonnegative = tile.all_of %scales : !tile.shared<[64], f32> {
    ^bb0(%s: f32):
      %p = arith.cmpf oge, %s, %zero : f32
      tile.yield %p : i1
    }
    %positive = tile.all_of %counts : !tile.shared<[40], i32> {
    ^bb0(%n: i32):
      %p = arith.cmpi sgt, %n, %zero_i : i32
      tile.yield %p : i1
    }
    %a = arith.select %nonnegative, %one, %zero : f32
    %b = arith.select %positive, %one, %zero : f32
    tile.store %a, %out[%c0] : !tile.global<[2], f32>
    tile.store %b, %out[%c1] : !tile.global<[2], f32>
  }
}
