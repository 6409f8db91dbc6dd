// "The last block finishes": each block writes its index to parts[b],
// fences at gpu scope and takes a ticket; the block with the last ticket
// fences again and sums every part into total (= blocks * (blocks - 1) / 2).
// A third fence of each scope kind is only lowered (block, system).
tile.kernel @last_block_sums(%parts: !tile.global<[?], f32>, %counter: !tile.global<[1], i32>, %total: !tile.global<[1], f32>) {
  %blocks = tile.dim %parts, 0 : !tile.global<[?], f32>
  tile.launch (%b) in (%blocks) threads 32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %one = arith.constant 1 : i32
    %zero = arith.constant 0.0 : f32
    %bi = arith.index_cast %b : index to i32
    %value = arith.sitofp %bi : i32 to f32
    tile.store %value, %parts[%b] : !tile.global<[?], f32>
    tile.fence gpu
    %tickets = tile.alloc : !tile.shared<[1], i32>
    tile.parallel (%i) in [1] {
      %ticket = tile.atomic add %one, %counter[%c0] : !tile.global<[1], i32>
      tile.store %ticket, %tickets[%i] : !tile.shared<[1], i32>
    }
    %mine = tile.load %tickets[%c0] : !tile.shared<[1], i32>
    %blocks_i = arith.index_cast %blocks : index to i32
    %last_i = arith.subi %blocks_i, %one : i32
    %last = arith.cmpi eq, %mine, %last_i : i32
    scf.if %last {
      tile.fence gpu
      %sum = scf.for %j = %c0 to %blocks step %c1 iter_args(%acc = %zero) -> (f32) {
        %v = tile.load %parts[%j] : !tile.global<[?], f32>
        %n = arith.addf %acc, %v : f32
        scf.yield %n : f32
      }
      tile.store %sum, %total[%c0] : !tile.global<[1], f32>
    }
    tile.fence block
    tile.fence system
  }
}
