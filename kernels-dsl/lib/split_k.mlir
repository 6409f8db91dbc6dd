// hisa's device library: the end of a split-k product in one launch (the
// variant linear_split_k of kernels-dsl/linear.mlir). Each of the `splits`
// blocks of an output tile writes its f32 partial sum, fences it at gpu
// scope and draws a ticket from the tile's counter; the block that draws
// the last ticket adds the partial sums up in split order from 0.0 (what
// linear_reduce does, so the bits are the same), rounds them to bf16 into
// y, and puts the counter back to 0 for the next launch. This saves
// linear_reduce's launch and its wait on the whole grid: the tiles finish
// independently.
//
// acc holds the block's partial sum on entry and is reused for the total;
// part and rounded are scratch of acc's shape, tickets a shared word.
func.func private @finish_split_k(%acc: !tile.frag<[rows, cols], f32>,
                                  %part: !tile.frag<[rows, cols], f32>,
                                  %rounded: !tile.frag<[rows, cols], bf16>,
                                  %tickets: !tile.shared<[1], i32>,
                                  %partial: !tile.global<[?, ?, width], f32>,
                                  %counters: !tile.global<[?], i32>,
                                  %y: !tile.global<[?, width], bf16>,
                                  %split: index, %splits: index,
                                  %counter: index, %row0: index,
                                  %col0: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  %zero_i = arith.constant 0 : i32
  %zero = arith.constant 0.0 : f32
  tile.copy %acc to %partial[%split, %row0, %col0]
      : !tile.frag<[rows, cols], f32> to !tile.global<[?, ?, width], f32>
  // Every thread's stores are performed before any thread goes on, then
  // one thread announces the block's part.
  tile.fence gpu
  tile.barrier
  tile.parallel (%i) in [1] {
    %ticket = tile.atomic add %one, %counters[%counter] : !tile.global<[?], i32>
    tile.store %ticket, %tickets[%i] : !tile.shared<[1], i32>
  }
  %mine = tile.load %tickets[%c0] : !tile.shared<[1], i32>
  %splits_i = arith.index_cast %splits : index to i32
  %last_ticket = arith.subi %splits_i, %one : i32
  %last = arith.cmpi eq, %mine, %last_ticket : i32
  scf.if %last {
    tile.fence gpu
    tile.fill %acc, %zero : !tile.frag<[rows, cols], f32>, f32
    scf.for %s = %c0 to %splits step %c1 {
      tile.copy %partial[%s, %row0, %col0] to %part
          : !tile.global<[?, ?, width], f32> to !tile.frag<[rows, cols], f32>
      tile.parallel (%i, %j) in [rows, cols] {
        %a = tile.load %acc[%i, %j] : !tile.frag<[rows, cols], f32>
        %v = tile.load %part[%i, %j] : !tile.frag<[rows, cols], f32>
        %sum = arith.addf %a, %v : f32
        tile.store %sum, %acc[%i, %j] : !tile.frag<[rows, cols], f32>
      }
    }
    tile.cast %acc to %rounded : !tile.frag<[rows, cols], f32> to !tile.frag<[rows, cols], bf16>
    tile.copy %rounded to %y[%row0, %col0]
        : !tile.frag<[rows, cols], bf16> to !tile.global<[?, width], bf16>
    tile.parallel (%i) in [1] {
      tile.store %zero_i, %counters[%counter] : !tile.global<[?], i32>
    }
  }
  return
}
