// Histogram bins counted with a constant add whose old value is unused, under
// divergent control flow: the lanes of a warp that name the same bin combine
// into one atomic (match.any over the active lanes, the lowest lane adds the
// group's size). A used old value keeps one atomic per lane.
tile.kernel @count_bins(%x: !tile.global<[?], i32>, %ranks: !tile.global<[?], i32>) {
  %n = tile.dim %x, 0 : !tile.global<[?], i32>
  tile.launch (%bx) in (%n) threads 128 {
    %bins = tile.alloc : !tile.shared<[4, 64], i32>
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %c32 = arith.constant 32 : index
    tile.fill %bins, %zero : !tile.shared<[4, 64], i32>, i32
    tile.parallel (%t) in [128] {
      %v = tile.load %x[%t] : !tile.global<[?], i32>
      %positive = arith.cmpi sgt, %v, %zero : i32
      scf.if %positive {
        %mask = arith.constant 63 : i32
        %b = arith.andi %v, %mask : i32
        %bin = arith.index_cast %b : i32 to index
        %warp = arith.divui %t, %c32 : index
        %unused = tile.atomic add %one, %bins[%warp, %bin] : !tile.shared<[4, 64], i32>
      }
      %c0 = arith.constant 0 : index
      %rank = tile.atomic add %one, %bins[%c0, %c0] : !tile.shared<[4, 64], i32>
      tile.store %rank, %ranks[%t] : !tile.global<[?], i32>
    }
  }
}
