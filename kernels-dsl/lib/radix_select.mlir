// hisa's device library: the steps of an exact radix select over unsigned
// keys (@select_key's order; key 0 is "not selectable"), shared by the
// kernels that select (block_sparse_topk_tokens; topk_f32 carries its own
// copies with its x/cache reads folded in). Shapes are symbols: call them
// with tile.call, which binds `n`, `warps` and `capacity` to the caller's
// tiles.
//
// The select's state is a [2, 5] tile: [p, 0] threshold prefix, [p, 1] keys
// still needed at the threshold, [p, 2] done (the whole threshold bin is
// needed), [p, 4] keys in the threshold bin; [0, 3] slot counter, [1, 3]
// candidate counter. A pass reads the p of its parity and writes the other.

// The keys at positions c, c + stride, c + 2 stride, c + 3 stride of a
// cached key array, all read before any is used; key 0 past `length`.
func.func private @radix_keys4(%keys: !tile.shared<[n], i32>, %c: i32,
                               %stride: i32, %length: i32)
    -> (i32, i32, i32, i32) {
  %zero = arith.constant 0 : i32
  %c_1 = arith.addi %c, %stride : i32
  %c_2 = arith.addi %c_1, %stride : i32
  %c_3 = arith.addi %c_2, %stride : i32
  %inside_0 = arith.cmpi ult, %c, %length : i32
  %inside_1 = arith.cmpi ult, %c_1, %length : i32
  %inside_2 = arith.cmpi ult, %c_2, %length : i32
  %inside_3 = arith.cmpi ult, %c_3, %length : i32
  %at_0 = arith.select %inside_0, %c, %zero : i32
  %at_1 = arith.select %inside_1, %c_1, %zero : i32
  %at_2 = arith.select %inside_2, %c_2, %zero : i32
  %at_3 = arith.select %inside_3, %c_3, %zero : i32
  %i0 = arith.index_castui %at_0 : i32 to index
  %i1 = arith.index_castui %at_1 : i32 to index
  %i2 = arith.index_castui %at_2 : i32 to index
  %i3 = arith.index_castui %at_3 : i32 to index
  %k0 = tile.load %keys[%i0] : !tile.shared<[n], i32>
  %k1 = tile.load %keys[%i1] : !tile.shared<[n], i32>
  %k2 = tile.load %keys[%i2] : !tile.shared<[n], i32>
  %k3 = tile.load %keys[%i3] : !tile.shared<[n], i32>
  %key0 = arith.select %inside_0, %k0, %zero : i32
  %key1 = arith.select %inside_1, %k1, %zero : i32
  %key2 = arith.select %inside_2, %k2, %zero : i32
  %key3 = arith.select %inside_3, %k3, %zero : i32
  return %key0, %key1, %key2, %key3 : i32, i32, i32, i32
}

// The key's top 8 bits into the warp's histogram (a selectable key).
func.func private @radix_count_top(%key: i32, %warp: index,
                                   %hist: !tile.shared<[warps, 256], i32>) {
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %selectable = arith.cmpi ne, %key, %zero : i32
  scf.if %selectable {
    %c24 = arith.constant 24 : i32
    %digit = arith.shrui %key, %c24 : i32
    %bin = arith.index_cast %digit : i32 to index
    %old = tile.atomic add %one, %hist[%warp, %bin] : !tile.shared<[warps, 256], i32>
  }
  return
}

// A later pass for one key: the digit at `shift` into the warp's histogram
// when the key has the threshold's prefix (the bits above shift + 8).
func.func private @radix_count_digit(%key: i32, %shift: i32, %above: i32,
                                     %prefix_high: i32, %warp: index,
                                     %hist: !tile.shared<[warps, 256], i32>) {
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %key_high = arith.shrui %key, %above : i32
  %same_prefix = arith.cmpi eq, %key_high, %prefix_high : i32
  %selectable = arith.cmpi ne, %key, %zero : i32
  %counted = arith.andi %same_prefix, %selectable : i1
  scf.if %counted {
    %shifted = arith.shrui %key, %shift : i32
    %mask = arith.constant 255 : i32
    %digit = arith.andi %shifted, %mask : i32
    %bin = arith.index_cast %digit : i32 to index
    %old = tile.atomic add %one, %hist[%warp, %bin] : !tile.shared<[warps, 256], i32>
  }
  return
}

// Slots for four keys that are taken (t0..t3), with one shared atomic per
// warp and step: ballots rank each lane's keys within the warp, the warp's
// first lane claims the warp's total and the others read the base it got.
// Every lane of the warp must call it.
func.func private @radix_claim4(%t0: i1, %t1: i1, %t2: i1, %t3: i1,
                                %lane: i32, %state: !tile.shared<[2, 5], i32>)
    -> (i32, i32, i32, i32) {
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %b0 = tile.vote ballot %t0 : i32
  %b1 = tile.vote ballot %t1 : i32
  %b2 = tile.vote ballot %t2 : i32
  %b3 = tile.vote ballot %t3 : i32
  %lane_bit = arith.shli %one, %lane : i32
  %below = arith.subi %lane_bit, %one : i32
  %m0 = arith.andi %b0, %below : i32
  %m1 = arith.andi %b1, %below : i32
  %m2 = arith.andi %b2, %below : i32
  %m3 = arith.andi %b3, %below : i32
  %r0 = math.ctpop %m0 : i32
  %r1 = math.ctpop %m1 : i32
  %r2 = math.ctpop %m2 : i32
  %r3 = math.ctpop %m3 : i32
  %n0 = math.ctpop %b0 : i32
  %n1 = math.ctpop %b1 : i32
  %n2 = math.ctpop %b2 : i32
  %n3 = math.ctpop %b3 : i32
  %n01 = arith.addi %n0, %n1 : i32
  %n012 = arith.addi %n01, %n2 : i32
  %total = arith.addi %n012, %n3 : i32
  %first_lane = arith.cmpi eq, %lane, %zero : i32
  %some = arith.cmpi ne, %total, %zero : i32
  %claim = arith.andi %first_lane, %some : i1
  %claimed = scf.if %claim -> (i32) {
    %old = tile.atomic add %total, %state[%c0, %c3] : !tile.shared<[2, 5], i32>
    scf.yield %old : i32
  } else {
    scf.yield %zero : i32
  }
  %base = tile.warp_broadcast %claimed, %zero : i32
  %base1 = arith.addi %base, %n0 : i32
  %base2 = arith.addi %base, %n01 : i32
  %base3 = arith.addi %base, %n012 : i32
  %s0 = arith.addi %base, %r0 : i32
  %s1 = arith.addi %base1, %r1 : i32
  %s2 = arith.addi %base2, %r2 : i32
  %s3 = arith.addi %base3, %r3 : i32
  return %s0, %s1, %s2, %s3 : i32, i32, i32, i32
}

// Compaction for one key: above the 16-bit prefix it is taken now, with
// the prefix it becomes a candidate.
func.func private @radix_compact_test(%key: i32, %prefix16: i32) -> (i1, i1) {
  %zero = arith.constant 0 : i32
  %c16_i32 = arith.constant 16 : i32
  %key16 = arith.shrui %key, %c16_i32 : i32
  %selectable = arith.cmpi ne, %key, %zero : i32
  %higher = arith.cmpi ugt, %key16, %prefix16 : i32
  %same = arith.cmpi eq, %key16, %prefix16 : i32
  %taken = arith.andi %selectable, %higher : i1
  %candidate = arith.andi %selectable, %same : i1
  return %taken, %candidate : i1, i1
}

// A candidate key and its position into the candidate list.
func.func private @radix_add_candidate(
    %candidate: i1, %key: i32, %position: i32,
    %state: !tile.shared<[2, 5], i32>,
    %candidate_keys: !tile.shared<[capacity], i32>,
    %candidate_positions: !tile.shared<[capacity], i32>) {
  scf.if %candidate {
    %one = arith.constant 1 : i32
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %at_i32 = tile.atomic add %one, %state[%c1, %c3] : !tile.shared<[2, 5], i32>
    %at = arith.index_castui %at_i32 : i32 to index
    tile.store %key, %candidate_keys[%at] : !tile.shared<[capacity], i32>
    tile.store %position, %candidate_positions[%at] : !tile.shared<[capacity], i32>
  }
  return
}

// Selection for one key: above the threshold, or equal to it when every key
// at the threshold is needed, it is taken.
func.func private @radix_take_test(%key: i32, %threshold: i32,
                                   %all_at_threshold: i1) -> i1 {
  %above = arith.cmpi ugt, %key, %threshold : i32
  %at_threshold = arith.cmpi eq, %key, %threshold : i32
  %equal_taken = arith.andi %at_threshold, %all_at_threshold : i1
  %take = arith.ori %above, %equal_taken : i1
  return %take : i1
}

// The warps' histograms (the first `warps` rows of `hist`) summed into
// `counts`.
func.func private @radix_merge(%hist: !tile.shared<[warps, 256], i32>,
                               %counts: !tile.shared<[256], i32>,
                               %warps: index) {
  %zero = arith.constant 0 : i32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.parallel (%b) in [256] {
    %total = scf.for %w = %c0 to %warps step %c1 iter_args(%sum = %zero) -> (i32) {
      %part = tile.load %hist[%w, %b] : !tile.shared<[warps, 256], i32>
      %more = arith.addi %sum, %part : i32
      scf.yield %more : i32
    }
    tile.store %total, %counts[%b] : !tile.shared<[256], i32>
  }
  return
}

// The threshold bin of a pass: the bin where "keys at least this bin" (the
// reverse scan of the merged counts) reaches the number still needed.
// Clears the histograms for the next pass (their counts were merged) and
// writes the next state (prefix, needed, done, keys in the bin) at `other`.
func.func private @radix_threshold_bin(
    %at_least: !tile.shared<[256], i32>, %hist: !tile.shared<[warps, 256], i32>,
    %state: !tile.shared<[2, 5], i32>, %prefix: i32, %still_needed: i32,
    %shift: i32, %other: index, %warps: index) {
  %zero = arith.constant 0 : i32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.parallel (%b) in [256] {
    scf.for %w = %c0 to %warps step %c1 {
      tile.store %zero, %hist[%w, %b] : !tile.shared<[warps, 256], i32>
    }
    %c255 = arith.constant 255 : index
    %ge = tile.load %at_least[%b] : !tile.shared<[256], i32>
    %is_last = arith.cmpi eq, %b, %c255 : index
    %next_bin = arith.addi %b, %c1 : index
    %next = arith.select %is_last, %b, %next_bin : index
    %ge_next = tile.load %at_least[%next] : !tile.shared<[256], i32>
    %gt = arith.select %is_last, %zero, %ge_next : i32
    %reaches = arith.cmpi sge, %ge, %still_needed : i32
    %short = arith.cmpi slt, %gt, %still_needed : i32
    %threshold_bin = arith.andi %reaches, %short : i1
    scf.if %threshold_bin {
      %digit = arith.index_cast %b : index to i32
      %placed = arith.shli %digit, %shift : i32
      %new_prefix = arith.ori %prefix, %placed : i32
      %need = arith.subi %still_needed, %gt : i32
      %in_bin = arith.subi %ge, %gt : i32
      %whole_bin = arith.cmpi eq, %in_bin, %need : i32
      %done = arith.extui %whole_bin : i1 to i32
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      tile.store %new_prefix, %state[%other, %c0] : !tile.shared<[2, 5], i32>
      tile.store %need, %state[%other, %c1] : !tile.shared<[2, 5], i32>
      tile.store %done, %state[%other, %c2] : !tile.shared<[2, 5], i32>
      tile.store %in_bin, %state[%other, %c4] : !tile.shared<[2, 5], i32>
    }
  }
  return
}
