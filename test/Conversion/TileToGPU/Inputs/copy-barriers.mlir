// Consecutive copies of global memory into shared tiles share their
// barriers (all their loads in flight at once): @joined's two copies, with
// only index arithmetic between them, lower to one leading and one trailing
// barrier. @kept's second copy follows a load from the first tile, so each
// copy keeps its own.
tile.kernel @joined(%a: !tile.global<[?, 64], f32>, %b: !tile.global<[?, 64], f32>,
                    %out: !tile.global<[?, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[16, 64], f32>
    %b_s = tile.alloc : !tile.shared<[16, 64], f32>
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[?, 64], f32> to !tile.shared<[16, 64], f32>
    %row = arith.muli %bx, %c16 : index
    tile.copy %b[%row, %c0] to %b_s : !tile.global<[?, 64], f32> to !tile.shared<[16, 64], f32>
    tile.parallel (%i, %j) in [16, 64] {
      %x = tile.load %a_s[%i, %j] : !tile.shared<[16, 64], f32>
      %y = tile.load %b_s[%i, %j] : !tile.shared<[16, 64], f32>
      %z = arith.addf %x, %y : f32
      tile.store %z, %out[%i, %j] : !tile.global<[?, 64], f32>
    }
  }
}

tile.kernel @kept(%a: !tile.global<[?, 64], f32>, %b: !tile.global<[?, 64], f32>,
                  %out: !tile.global<[?, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[16, 64], f32>
    %b_s = tile.alloc : !tile.shared<[16, 64], f32>
    %c0 = arith.constant 0 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[?, 64], f32> to !tile.shared<[16, 64], f32>
    %first = tile.load %a_s[%c0, %c0] : !tile.shared<[16, 64], f32>
    tile.copy %b[%c0, %c0] to %b_s : !tile.global<[?, 64], f32> to !tile.shared<[16, 64], f32>
    tile.parallel (%i, %j) in [16, 64] {
      %x = tile.load %a_s[%i, %j] : !tile.shared<[16, 64], f32>
      %y = tile.load %b_s[%i, %j] : !tile.shared<[16, 64], f32>
      %sum = arith.addf %x, %y : f32
      %z = arith.addf %first, %sum : f32
      tile.store %z, %out[%i, %j] : !tile.global<[?, 64], f32>
    }
  }
}

// @chain: the third copy writes the first one's bytes (through a view), so
// it is not joined to the second (a chain's destinations must all be
// disjoint): a barrier between the second and the third.
tile.kernel @chain(%a: !tile.global<[?, 64], f32>, %out: !tile.global<[?, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %s = tile.alloc : !tile.shared<[16, 64], f32>
    %t = tile.alloc : !tile.shared<[16, 64], f32>
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    tile.copy %a[%c0, %c0] to %s : !tile.global<[?, 64], f32> to !tile.shared<[16, 64], f32>
    tile.copy %a[%c16, %c0] to %t : !tile.global<[?, 64], f32> to !tile.shared<[16, 64], f32>
    %sv = tile.view %s : !tile.shared<[16, 64], f32> to !tile.shared<[64, 16], f32>
    tile.copy %a[%c32, %c0] to %sv : !tile.global<[?, 64], f32> to !tile.shared<[64, 16], f32>
    tile.parallel (%i, %j) in [16, 64] {
      %x = tile.load %s[%i, %j] : !tile.shared<[16, 64], f32>
      %y = tile.load %t[%i, %j] : !tile.shared<[16, 64], f32>
      %z = arith.addf %x, %y : f32
      tile.store %z, %out[%i, %j] : !tile.global<[?, 64], f32>
    }
  }
}
