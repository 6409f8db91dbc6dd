// A shared tile read just before a cp.async pipelined loop whose stage
// buffers tile-plan-shared-memory places on the same bytes.
tile.kernel @staged_reuse(
    %w: !tile.global<[64], f32>,
    %k: !tile.global<[?, 64], f32>,
    %out: !tile.global<[?, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 64 {
    %weights = tile.alloc : !tile.shared<[64], f32>
    %rows = tile.alloc : !tile.shared<[4, 64], f32>
    %acc = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    tile.copy %w[%c0] to %weights : !tile.global<[64], f32> to !tile.shared<[64], f32>
    tile.parallel (%i) in [64] {
      %x = tile.load %weights[%i] : !tile.shared<[64], f32>
      tile.store %x, %acc[%i] : !tile.frag<[64], f32>
    }
    tile.pipelined %t = %c0 to %c16 step %c1 num_stages = 2 {
      %row = arith.muli %t, %c4 : index
      tile.copy %k[%row, %c0] to %rows : !tile.global<[?, 64], f32> to !tile.shared<[4, 64], f32>
      tile.parallel (%i) in [64] {
        %a = tile.load %acc[%i] : !tile.frag<[64], f32>
        %y = tile.load %rows[%c0, %i] : !tile.shared<[4, 64], f32>
        %s = arith.addf %a, %y : f32
        tile.store %s, %acc[%i] : !tile.frag<[64], f32>
      }
    }
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64], f32> to !tile.global<[?, 64], f32>
  }
}

// A parallel writing a tile that reuses the bytes of one the parallel
// before it read.
tile.kernel @parallel_reuse(
    %w: !tile.global<[64], f32>,
    %out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 64 {
    %first = tile.alloc : !tile.shared<[64], f32>
    %second = tile.alloc : !tile.shared<[64], f32>
    %acc = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    %c63 = arith.constant 63 : index
    tile.copy %w[%c0] to %first : !tile.global<[64], f32> to !tile.shared<[64], f32>
    tile.parallel (%i) in [64] {
      %j = arith.subi %c63, %i : index
      %x = tile.load %first[%j] : !tile.shared<[64], f32>
      tile.store %x, %acc[%i] : !tile.frag<[64], f32>
    }
    tile.parallel (%i) in [64] {
      %x = tile.load %acc[%i] : !tile.frag<[64], f32>
      tile.store %x, %second[%i] : !tile.shared<[64], f32>
    }
    tile.copy %second to %out[%c0] : !tile.shared<[64], f32> to !tile.global<[64], f32>
  }
}
