// A 256-bin histogram of the low byte of x (block-local counts with shared
// atomics, merged with global atomics) and the maximum of fx (a global f32
// atomic max): a GPU test of tile.atomic (python/tests/test_atomics.py).
tile.kernel @histogram(%x: !tile.global<[?], i32>, %hist: !tile.global<[256], i32>,
                       %fmax: !tile.global<[1], f32>, %fx: !tile.global<[?], f32>) {
  %n = tile.dim %x, 0 : !tile.global<[?], i32>
  %c1024 = arith.constant 1024 : index
  %grid = arith.ceildivui %n, %c1024 : index
  tile.launch (%bx) in (%grid) threads 256 {
    %local = tile.alloc : !tile.shared<[256], i32>
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %c0 = arith.constant 0 : index
    tile.fill %local, %zero : !tile.shared<[256], i32>, i32
    %base = arith.muli %bx, %c1024 : index
    tile.parallel (%i) in [1024] {
      %row = arith.addi %base, %i : index
      %v = tile.load %x[%row] : !tile.global<[?], i32>
      %inside = arith.cmpi ult, %row, %n : index
      %w = arith.select %inside, %one, %zero : i32
      %mask = arith.constant 255 : i32
      %b = arith.andi %v, %mask : i32
      %bin = arith.index_cast %b : i32 to index
      %old = tile.atomic add %w, %local[%bin] : !tile.shared<[256], i32>
      // Rows past the end read 0: they must not take part in the maximum.
      %f = tile.load %fx[%row] : !tile.global<[?], f32>
      %lowest = arith.constant 0xFF800000 : f32
      %candidate = arith.select %inside, %f, %lowest : f32
      %m = tile.atomic max %candidate, %fmax[%c0] : !tile.global<[1], f32>
    }
    tile.parallel (%j) in [256] {
      %count = tile.load %local[%j] : !tile.shared<[256], i32>
      %prev = tile.atomic add %count, %hist[%j] : !tile.global<[256], i32>
    }
  }
}
