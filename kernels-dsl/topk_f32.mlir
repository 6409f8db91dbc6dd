// Exact top-k of each row of x [R, C] f32 by radix select (KERNELS.md "Top-k,
// exactly"): out[r, :] holds the columns of the k largest values of row r
// (within its window [starts[r], ends[r]) when `windowed`), in no particular
// order; ties at the threshold go to the lower columns; -inf and NaN are
// never selected and the slots they would take hold -1. With `relative`
// (and `windowed`) the columns are written relative to starts[r].
//
// One block per row (or, with `splits`, a cluster of blocks per row: below,
// at the launch). Values become unsigned keys that order like the floats
// (@select_key of hisa's device library: sign bit set for positives, all
// bits flipped for negatives), with -inf and NaN mapped to 0, the key of
// "not selectable". A row of at most `cache` columns keeps its keys in
// shared memory; a longer one re-reads x at every pass until its threshold
// bin is small enough to compact (below; the passes and the selection then
// read the candidates, cached or not).
//
//   1. Keys, and the histogram of their top 8 bits.
//   2. Radix select, 8 bits a pass from the top: the suffix sums of the
//      histogram say how many keys are at least each bin; the bin where
//      that count reaches the number still needed holds the threshold.
//      A pass narrows the threshold's prefix by 8 bits and stops early when
//      the whole bin is needed. No candidate buffer that can overflow:
//      every pass counts the keys that share the prefix found so far, and
//      a row moves its 16-bit threshold bin to a candidate list (where the
//      specialization compacts) only when the count says it fits, so any
//      input is exact.
//   3. Every key above the threshold (or at least the threshold, when all
//      keys equal to it are needed) claims a slot with a shared atomic.
//   4. When more keys equal the threshold than are needed, the first ones
//      in column order take the remaining slots: each warp counts the ties
//      of its segment of the row with ballots, a scan over the warps ranks
//      the segments, and a second walk ranks the ties within each segment
//      (loops whose trip counts are computed in the kernel).
//   5. Slots past the number of selectable keys get -1.

// The bf16 variant, topk_bf16, is this kernel with x's element type and its
// key function renamed (cmake/KernelVariants.cmake writes it to the build's
// kernels-dsl/ and the runtime embeds it beside this one):
// hisa-variant topk_bf16 replaces "@topk_f32(" with "@topk_bf16("
// hisa-variant topk_bf16 replaces "f32>" with "bf16>"
// hisa-variant topk_bf16 replaces "@select_key(" with "@select_key_bf16("
// hisa-variant topk_bf16 replaces "(f32) -> i32" with "(bf16) -> i32"
// A bf16 key's low 16 bits follow from its sign (0 for positive values, all
// ones for negative ones: the key inverts a negative float's bits), so its
// radix select ends after the pass at bit 8, the one that compacts.
// hisa-variant topk_bf16 replaces "%last_shift = arith.constant 0 : i32" with "%last_shift = arith.constant 8 : i32"
// hisa-variant topk_bf16 replaces "%last_pass_shift = arith.constant 0 : i32" with "%last_pass_shift = arith.constant 8 : i32"

// From hisa's device library (kernels-dsl/lib/select_key.mlir).
func.func private @select_key(f32) -> i32

// The keys of four columns of a row, c + 256 j for j = 0..3, from the cache
// or from x; key 0 ("not selectable") for a column past the window's end,
// which every pass below skips (`safe`, a column inside the window, is read
// in its place). Columns are i32 (the operator bounds rows to 2^30 columns): 64-bit
// index arithmetic doubled the compares, selects and adds of every walk. The four reads are issued before any key is
// used: with one read in flight per thread, the passes over x waited on
// memory latency (a cached row of 32768 columns leaves one block per SM).
func.func private @topk_keys4(%x: !tile.global<[?, ?], f32>,
                              %keys: !tile.shared<[cache], i32>,
                              %row: index, %c: i32, %safe: i32, %start: i32,
                              %end: i32, %from_cache: i1)
    -> (i32, i32, i32, i32) {
  %zero = arith.constant 0 : i32
  %c256 = arith.constant 256 : i32
  %c512 = arith.constant 512 : i32
  %c768 = arith.constant 768 : i32
  %c_1 = arith.addi %c, %c256 : i32
  %c_2 = arith.addi %c, %c512 : i32
  %c_3 = arith.addi %c, %c768 : i32
  %inside_0 = arith.cmpi ult, %c, %end : i32
  %inside_1 = arith.cmpi ult, %c_1, %end : i32
  %inside_2 = arith.cmpi ult, %c_2, %end : i32
  %inside_3 = arith.cmpi ult, %c_3, %end : i32
  %at_0 = arith.select %inside_0, %c, %safe : i32
  %at_1 = arith.select %inside_1, %c_1, %safe : i32
  %at_2 = arith.select %inside_2, %c_2, %safe : i32
  %at_3 = arith.select %inside_3, %c_3, %safe : i32
  %k0, %k1, %k2, %k3 = scf.if %from_cache -> (i32, i32, i32, i32) {
    %s0_i32 = arith.subi %at_0, %start : i32
    %s1_i32 = arith.subi %at_1, %start : i32
    %s2_i32 = arith.subi %at_2, %start : i32
    %s3_i32 = arith.subi %at_3, %start : i32
    %s0 = arith.index_castui %s0_i32 : i32 to index
    %s1 = arith.index_castui %s1_i32 : i32 to index
    %s2 = arith.index_castui %s2_i32 : i32 to index
    %s3 = arith.index_castui %s3_i32 : i32 to index
    %h0 = tile.load %keys[%s0] : !tile.shared<[cache], i32>
    %h1 = tile.load %keys[%s1] : !tile.shared<[cache], i32>
    %h2 = tile.load %keys[%s2] : !tile.shared<[cache], i32>
    %h3 = tile.load %keys[%s3] : !tile.shared<[cache], i32>
    scf.yield %h0, %h1, %h2, %h3 : i32, i32, i32, i32
  } else {
    %x0 = arith.index_castui %at_0 : i32 to index
    %x1 = arith.index_castui %at_1 : i32 to index
    %x2 = arith.index_castui %at_2 : i32 to index
    %x3 = arith.index_castui %at_3 : i32 to index
    %v0 = tile.load %x[%row, %x0] : !tile.global<[?, ?], f32>
    %v1 = tile.load %x[%row, %x1] : !tile.global<[?, ?], f32>
    %v2 = tile.load %x[%row, %x2] : !tile.global<[?, ?], f32>
    %v3 = tile.load %x[%row, %x3] : !tile.global<[?, ?], f32>
    %g0 = func.call @select_key(%v0) : (f32) -> i32
    %g1 = func.call @select_key(%v1) : (f32) -> i32
    %g2 = func.call @select_key(%v2) : (f32) -> i32
    %g3 = func.call @select_key(%v3) : (f32) -> i32
    scf.yield %g0, %g1, %g2, %g3 : i32, i32, i32, i32
  }
  %key0 = arith.select %inside_0, %k0, %zero : i32
  %key1 = arith.select %inside_1, %k1, %zero : i32
  %key2 = arith.select %inside_2, %k2, %zero : i32
  %key3 = arith.select %inside_3, %k3, %zero : i32
  return %key0, %key1, %key2, %key3 : i32, i32, i32, i32
}

// Pass 1 for one column: its key into the cache (a cached row inside the
// window) and the key's top 8 bits into the warp's histogram.
func.func private @topk_count_first(%key: i32, %column: i32, %start: i32,
                                    %end: i32, %cached: i1, %warp: index,
                                    %keys: !tile.shared<[cache], i32>,
                                    %hist: !tile.shared<[8, 256], i32>) {
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %inside = arith.cmpi ult, %column, %end : i32
  %store = arith.andi %cached, %inside : i1
  scf.if %store {
    %at_i32 = arith.subi %column, %start : i32
    %at = arith.index_castui %at_i32 : i32 to index
    tile.store %key, %keys[%at] : !tile.shared<[cache], i32>
  }
  %selectable = arith.cmpi ne, %key, %zero : i32
  scf.if %selectable {
    %c24 = arith.constant 24 : i32
    %digit = arith.shrui %key, %c24 : i32
    %bin = arith.index_cast %digit : i32 to index
    %old = tile.atomic add %one, %hist[%warp, %bin] : !tile.shared<[8, 256], i32>
  }
  return
}

// A later pass for one key: the digit at `shift` into the warp's histogram
// when the key has the threshold's prefix (the bits above shift + 8).
func.func private @topk_count_digit(%key: i32, %shift: i32, %above: i32,
                                    %prefix_high: i32, %warp: index,
                                    %hist: !tile.shared<[8, 256], i32>) {
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
    %old = tile.atomic add %one, %hist[%warp, %bin] : !tile.shared<[8, 256], i32>
  }
  return
}

// Slots for the keys of four columns that are taken (t0..t3), with one
// shared atomic per warp and step: ballots rank each lane's keys within the
// warp, the warp's first lane claims the warp's total and the others read
// the base it got. Every lane of the warp must call it (the walks that do
// step over a warp's columns together).
func.func private @topk_claim4(%t0: i1, %t1: i1, %t2: i1, %t3: i1, %lane: i32,
                               %state: !tile.shared<[2, 7], i32>)
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
    %old = tile.atomic add %total, %state[%c0, %c3] : !tile.shared<[2, 7], i32>
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

// The column of a taken key into its slot (relative to column_base).
func.func private @topk_store_slot(%taken: i1, %slot: i32, %column: i32,
                                   %row: index, %column_base: i32,
                                   %out: !tile.global<[?, ?], i32>) {
  scf.if %taken {
    %at = arith.index_castui %slot : i32 to index
    %relative = arith.subi %column, %column_base : i32
    tile.store %relative, %out[%row, %at] : !tile.global<[?, ?], i32>
  }
  return
}

// Compaction for one key: above the 16-bit prefix it is taken now (its
// slot comes from @topk_claim4), with the prefix it becomes a candidate.
func.func private @topk_compact_test(%key: i32, %prefix16: i32) -> (i1, i1) {
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

func.func private @topk_add_candidate(%candidate: i1, %key: i32, %column: i32,
                                      %state: !tile.shared<[2, 7], i32>,
                                      %candidate_keys: !tile.shared<[candidates], i32>,
                                      %candidate_columns: !tile.shared<[candidates], i32>) {
  scf.if %candidate {
    %one = arith.constant 1 : i32
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %at_i32 = tile.atomic add %one, %state[%c1, %c3] : !tile.shared<[2, 7], i32>
    %at = arith.index_castui %at_i32 : i32 to index
    tile.store %key, %candidate_keys[%at] : !tile.shared<[candidates], i32>
    tile.store %column, %candidate_columns[%at] : !tile.shared<[candidates], i32>
  }
  return
}

// Selection for one key: above the threshold, or equal to it when every key
// at the threshold is needed, it is taken.
func.func private @topk_take_test(%key: i32, %threshold: i32,
                                  %all_at_threshold: i1) -> i1 {
  %above = arith.cmpi ugt, %key, %threshold : i32
  %at_threshold = arith.cmpi eq, %key, %threshold : i32
  %equal_taken = arith.andi %at_threshold, %all_at_threshold : i1
  %take = arith.ori %above, %equal_taken : i1
  return %take : i1
}

tile.kernel @topk_f32(%x: !tile.global<[?, ?], f32>,
                      %starts: !tile.global<[?], i32>,
                      %ends: !tile.global<[?], i32>,
                      %out: !tile.global<[?, ?], i32>)
    params {cache = 8192, compact = 0, candidates = 32, windowed = 0, relative = 0,
            min_blocks = 1, splits = 1} {
  %rows = tile.dim %x, 0 : !tile.global<[?, ?], f32>
  %splits = tile.param "splits" : index
  %num_blocks = arith.muli %rows, %splits : index
  tile.launch (%block) in (%num_blocks) threads 256 blocks_per_sm "min_blocks" cluster "splits" {
    // `splits` blocks per row (a cluster; 1: a block per row): block r of
    // the cluster walks the r-th contiguous part of the row's window, so
    // block order is column order. Every pass sums the blocks' histograms
    // through distributed shared memory (each block reads the others'
    // published counts: no peer atomics) and every block picks the same
    // threshold; a block's slots and tie ranks start after the keys of the
    // blocks below it, counted from its own histograms. For rows too few to
    // fill the GPU (decode: 64 rows of 131072 on 132 SMs).
    %row = arith.divui %block, %splits : index
    %c1_splits = arith.constant 1 : index
    %several_blocks = arith.cmpi ne, %splits, %c1_splits : index
    // With splits the candidate lists (no compaction then) hold this
    // block's histogram of the pass in candidate_keys[256 p + bin] (by pass
    // parity p: a peer may still read the previous pass's while this block
    // writes the next) and its suffix sums in candidate_columns, so that
    // one block per row keeps today's shared memory. The operator passes
    // candidates = 512 with splits; with fewer only the first block of each
    // cluster runs, on the whole row (below).
    %candidates_param = tile.param "candidates" : index
    %c512_scratch = arith.constant 512 : index
    %scratch_fits = arith.cmpi uge, %candidates_param, %c512_scratch : index
    %clustered = arith.andi %several_blocks, %scratch_fits : i1
    // 0 without splits, folded: the code below then is today's kernel.
    %rank_in_cluster = tile.cluster_rank : index
    %c0_rank = arith.constant 0 : index
    %cluster_rank = arith.select %clustered, %rank_in_cluster, %c0_rank : index

    %keys = tile.alloc : !tile.shared<[cache], i32>
    // One histogram per warp (8 x 256 bins): the top bits of real data fall
    // in a few bins, and a block-wide histogram would serialize the atomics
    // of all warps on them.
    %hist = tile.alloc : !tile.shared<[8, 256], i32>
    %counts = tile.alloc : !tile.shared<[256], i32>
    %at_least = tile.alloc : !tile.shared<[256], i32>
    %warp_ties = tile.alloc : !tile.shared<[8], i32>
    %warp_offsets = tile.alloc : !tile.shared<[8], i32>
    // With splits: [taken below, taken in all, ties below].
    %bases = tile.alloc : !tile.shared<[4], i32>
    // [p, 0] threshold prefix, [p, 1] keys still needed at the threshold,
    // [p, 2] done (the whole threshold bin is needed), [p, 4] keys in the
    // threshold bin; [0, 3] slot counter, [1, 3] candidate counter. With
    // splits, this block's own keys: [p, 5] above the threshold bins so far,
    // [p, 6] in the threshold bin (peers read both at the end).
    // A pass reads the p of its parity and writes the other: the threads
    // still reading one never race with the writer of the next.
    %state = tile.alloc : !tile.shared<[2, 7], i32>
    // The keys (and columns) that share the threshold's top 16 bits, once
    // they are few enough, so that the last two passes and the selection
    // read these instead of the row (x or the cache). Exact: they are
    // compacted only when the count (known from the second pass) fits
    // `candidates`. Only specializations with `compact` set have the code
    // (the operator layer leaves it out for rows of up to 2048 columns,
    // whose passes over 8 KiB of keys cost less than the code's registers).
    %candidate_keys = tile.alloc : !tile.shared<[candidates], i32>
    %candidate_columns = tile.alloc : !tile.shared<[candidates], i32>
    // Without room for the histograms only the first block of a cluster
    // works (on the whole row): several blocks would claim slots in
    // different orders.
    %first_of_cluster = arith.cmpi eq, %rank_in_cluster, %c0_rank : index
    %alone = arith.xori %several_blocks, %clustered : i1
    %true_works = arith.constant true
    %single_or_clustered = arith.xori %alone, %true_works : i1
    %active = arith.ori %single_or_clustered, %first_of_cluster : i1
    scf.if %active {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c256 = arith.constant 256 : index
      %zero = arith.constant 0 : i32
      %one = arith.constant 1 : i32
      %true_flag = arith.constant true
      %n = tile.dim %x, 1 : !tile.global<[?, ?], f32>
      %k = tile.dim %out, 1 : !tile.global<[?, ?], i32>
      %k_i32 = arith.index_cast %k : index to i32
      %cache = tile.param "cache" : index
      %windowed = tile.param "windowed" : index

      // The row's window, clamped to [0, n]; empty when ends <= starts.
      %is_windowed = arith.cmpi ne, %windowed, %c0 : index
      %window_start, %window_end = scf.if %is_windowed -> (index, index) {
        %s_i32 = tile.load %starts[%row] : !tile.global<[?], i32>
        %e_i32 = tile.load %ends[%row] : !tile.global<[?], i32>
        %s_raw = arith.index_cast %s_i32 : i32 to index
        %e_raw = arith.index_cast %e_i32 : i32 to index
        %s_low = arith.maxsi %s_raw, %c0 : index
        %s = arith.minsi %s_low, %n : index
        %e_low = arith.maxsi %e_raw, %s : index
        %e = arith.minsi %e_low, %n : index
        scf.yield %s, %e : index, index
      } else {
        scf.yield %c0, %n : index, index
      }
      %window_length = arith.subi %window_end, %window_start : index
      // This block's part of the window (all of it without splits), a
      // multiple of 256 columns but the last.
      %c255_part = arith.constant 255 : index
      %per_block = arith.ceildivui %window_length, %splits : index
      %per_block_up = arith.addi %per_block, %c255_part : index
      %part_chunks = arith.divui %per_block_up, %c256 : index
      %block_part = arith.muli %part_chunks, %c256 : index
      %part_offset = arith.muli %cluster_rank, %block_part : index
      %start_raw = arith.addi %window_start, %part_offset : index
      %part_start = arith.minui %start_raw, %window_end : index
      %end_raw = arith.addi %part_start, %block_part : index
      %part_end = arith.minui %end_raw, %window_end : index
      %start = arith.select %clustered, %part_start, %window_start : index
      %end = arith.select %clustered, %part_end, %window_end : index
      %length = arith.subi %end, %start : index
      // relative: columns are written as offsets from the window's start
      // (the flat indexer's output); the unclamped start, as given.
      %relative = tile.param "relative" : index
      %is_relative = arith.cmpi ne, %relative, %c0 : index
      %given_start = scf.if %is_relative -> (index) {
        %s_given = tile.load %starts[%row] : !tile.global<[?], i32>
        %s_index = arith.index_cast %s_given : i32 to index
        scf.yield %s_index : index
      } else {
        scf.yield %c0 : index
      }
      %column_base = arith.select %is_windowed, %given_start, %c0 : index
      %cached = arith.cmpi ule, %length, %cache : index
      // The walks' column arithmetic is 32-bit (@topk_keys4).
      %start_i32 = arith.index_cast %start : index to i32
      %end_i32 = arith.index_cast %end : index to i32
      %column_base_i32 = arith.index_cast %column_base : index to i32
      // Whether this specialization compacts rows past the cache at all.
      %compact_param = tile.param "compact" : index
      %compact_set = arith.cmpi ne, %compact_param, %c0 : index
      // Not with splits: a compacting block writes keys before the blocks
      // below it have counted theirs.
      %single = arith.xori %clustered, %true_flag : i1
      %compaction = arith.andi %compact_set, %single : i1

      // 1. Keys and the histogram of their top 8 bits.
      tile.fill %hist, %zero : !tile.shared<[8, 256], i32>, i32
      // Four columns a thread per step, all read before any is used
      // (@topk_keys4; -0.0 is 0.0, -inf/NaN key 0: kernels-dsl/lib/select_key.mlir).
      tile.parallel (%t) in [256] {
        %t_i32 = arith.index_castui %t : index to i32
        %first = arith.addi %start_i32, %t_i32 : i32
        %c32_w = arith.constant 32 : index
        %warp = arith.divui %t, %c32_w : index
        %c1024 = arith.constant 1024 : i32
        %from_x = arith.constant false
        scf.for %c = %first to %end_i32 step %c1024 : i32 {
          %k0, %k1, %k2, %k3 = func.call @topk_keys4(%x, %keys, %row, %c, %c, %start_i32, %end_i32, %from_x)
              : (!tile.global<[?, ?], f32>, !tile.shared<[cache], i32>, index, i32, i32, i32, i32, i1) -> (i32, i32, i32, i32)
          %c256_i32 = arith.constant 256 : i32
          %c512 = arith.constant 512 : i32
          %c768 = arith.constant 768 : i32
          %c_1 = arith.addi %c, %c256_i32 : i32
          %c_2 = arith.addi %c, %c512 : i32
          %c_3 = arith.addi %c, %c768 : i32
          func.call @topk_count_first(%k0, %c, %start_i32, %end_i32, %cached, %warp, %keys, %hist) : (i32, i32, i32, i32, i1, index, !tile.shared<[cache], i32>, !tile.shared<[8, 256], i32>) -> ()
          func.call @topk_count_first(%k1, %c_1, %start_i32, %end_i32, %cached, %warp, %keys, %hist) : (i32, i32, i32, i32, i1, index, !tile.shared<[cache], i32>, !tile.shared<[8, 256], i32>) -> ()
          func.call @topk_count_first(%k2, %c_2, %start_i32, %end_i32, %cached, %warp, %keys, %hist) : (i32, i32, i32, i32, i1, index, !tile.shared<[cache], i32>, !tile.shared<[8, 256], i32>) -> ()
          func.call @topk_count_first(%k3, %c_3, %start_i32, %end_i32, %cached, %warp, %keys, %hist) : (i32, i32, i32, i32, i1, index, !tile.shared<[cache], i32>, !tile.shared<[8, 256], i32>) -> ()
        }
      }
      tile.parallel (%b) in [256] {
        %c8_w = arith.constant 8 : index
        %total = scf.for %w = %c0 to %c8_w step %c1 iter_args(%sum = %zero) -> (i32) {
          %part = tile.load %hist[%w, %b] : !tile.shared<[8, 256], i32>
          %more = arith.addi %sum, %part : i32
          scf.yield %more : i32
        }
        tile.store %total, %counts[%b] : !tile.shared<[256], i32>
      }
      // With splits: this block's suffix sums, then %counts becomes the
      // cluster's histogram.
      %own_selectable = scf.if %clustered -> (i32) {
        %own_total = tile.scan sum %counts to %at_least reverse
            : !tile.shared<[256], i32> to !tile.shared<[256], i32>
        tile.parallel (%b) in [256] {
          %mine = tile.load %counts[%b] : !tile.shared<[256], i32>
          tile.store %mine, %candidate_keys[%b] : !tile.shared<[candidates], i32>
          %own_ge = tile.load %at_least[%b] : !tile.shared<[256], i32>
          tile.store %own_ge, %candidate_columns[%b] : !tile.shared<[candidates], i32>
        }
        tile.cluster_barrier
        tile.parallel (%b) in [256] {
          %total = scf.for %p = %c0 to %splits step %c1 iter_args(%sum = %zero) -> (i32) {
            %peer_count = tile.load %candidate_keys[%b] peer %p : !tile.shared<[candidates], i32>
            %more = arith.addi %sum, %peer_count : i32
            scf.yield %more : i32
          }
          tile.store %total, %counts[%b] : !tile.shared<[256], i32>
        }
        scf.yield %own_total : i32
      } else {
        scf.yield %zero : i32
      }
      %selectable_count = tile.scan sum %counts to %at_least reverse
          : !tile.shared<[256], i32> to !tile.shared<[256], i32>
      %take_all = arith.cmpi sle, %selectable_count, %k_i32 : i32
      tile.parallel (%p, %i) in [2, 7] {
        // prefix 0, k needed, not done, no slot taken; with splits, no own
        // key above the threshold yet and all of them in its bin (what a
        // row whose every key is taken keeps).
        %is_needed = arith.cmpi eq, %i, %c1 : index
        %c6_own = arith.constant 6 : index
        %is_own_bin = arith.cmpi eq, %i, %c6_own : index
        %init_needed = arith.select %is_needed, %k_i32, %zero : i32
        %init = arith.select %is_own_bin, %own_selectable, %init_needed : i32
        tile.store %init, %state[%p, %i] : !tile.shared<[2, 7], i32>
      }

      // 2. Radix select, unless every selectable key is taken.
      %c24_i32 = arith.constant 24 : i32
      %true = arith.constant true
      %false_init = arith.constant false
      %final:4 = scf.while (%shift = %c24_i32, %first_pass = %true, %parity = %c0,
                            %compacted = %false_init)
          : (i32, i1, index, i1) -> (i32, i1, index, i1) {
        %c2_index = arith.constant 2 : index
        %done_i32 = tile.load %state[%parity, %c2_index] : !tile.shared<[2, 7], i32>
        // The last pass's digit (8 for bf16, whose key bits end there: above).
        %last_shift = arith.constant 0 : i32
        %more_bits = arith.cmpi sge, %shift, %last_shift : i32
        %not_done = arith.cmpi eq, %done_i32, %zero : i32
        %needed = arith.xori %take_all, %true : i1
        %go_on = arith.andi %more_bits, %not_done : i1
        %go = arith.andi %go_on, %needed : i1
        scf.condition(%go) %shift, %first_pass, %parity, %compacted : i32, i1, index, i1
      } do {
      ^bb0(%shift: i32, %first_pass: i1, %parity: index, %compacted: i1):
        %prefix = tile.load %state[%parity, %c0] : !tile.shared<[2, 7], i32>
        %still_needed = tile.load %state[%parity, %c1] : !tile.shared<[2, 7], i32>
        %other = arith.subi %c1, %parity : index
        %later_pass = arith.xori %first_pass, %true : i1
        // Before the third pass: compact the threshold bin's keys if they fit.
        %c8_third = arith.constant 8 : i32
        %third_pass = arith.cmpi eq, %shift, %c8_third : i32
        %c4_bin = arith.constant 4 : index
        %bin_keys = tile.load %state[%parity, %c4_bin] : !tile.shared<[2, 7], i32>
        %capacity_index = tile.param "candidates" : index
        %capacity = arith.index_cast %capacity_index : index to i32
        %fits = arith.cmpi sle, %bin_keys, %capacity : i32
        %compact_third = arith.andi %third_pass, %fits : i1
        %compact_now = arith.andi %compact_third, %compaction : i1
        %any_candidates = arith.ori %compact_now, %compacted : i1
        // Constant false without compaction: the candidate code folds away.
        %use_candidates = arith.andi %any_candidates, %compaction : i1
        scf.if %compact_now {
          // Keys above the 16-bit prefix are selected now; keys with it
          // become candidates.
          %c16_i32 = arith.constant 16 : i32
          %prefix16 = arith.shrui %prefix, %c16_i32 : i32
          tile.parallel (%t) in [256] {
            // A warp steps over its 32 x 4 columns together (@topk_claim4).
            %t_i32 = arith.index_castui %t : index to i32
            %c31_i32 = arith.constant 31 : i32
            %lane = arith.andi %t_i32, %c31_i32 : i32
            %warp_t = arith.subi %t_i32, %lane : i32
            %warp_first = arith.addi %start_i32, %warp_t : i32
            %c1024 = arith.constant 1024 : i32
            scf.for %cw = %warp_first to %end_i32 step %c1024 : i32 {
              %c = arith.addi %cw, %lane : i32
              %k0, %k1, %k2, %k3 = func.call @topk_keys4(%x, %keys, %row, %c, %cw, %start_i32, %end_i32, %cached)
                  : (!tile.global<[?, ?], f32>, !tile.shared<[cache], i32>, index, i32, i32, i32, i32, i1) -> (i32, i32, i32, i32)
              %c256_i32 = arith.constant 256 : i32
              %c512 = arith.constant 512 : i32
              %c768 = arith.constant 768 : i32
              %c_1 = arith.addi %c, %c256_i32 : i32
              %c_2 = arith.addi %c, %c512 : i32
              %c_3 = arith.addi %c, %c768 : i32
              %t0, %a0 = func.call @topk_compact_test(%k0, %prefix16) : (i32, i32) -> (i1, i1)
              %t1, %a1 = func.call @topk_compact_test(%k1, %prefix16) : (i32, i32) -> (i1, i1)
              %t2, %a2 = func.call @topk_compact_test(%k2, %prefix16) : (i32, i32) -> (i1, i1)
              %t3, %a3 = func.call @topk_compact_test(%k3, %prefix16) : (i32, i32) -> (i1, i1)
              %s0, %s1, %s2, %s3 = func.call @topk_claim4(%t0, %t1, %t2, %t3, %lane, %state)
                  : (i1, i1, i1, i1, i32, !tile.shared<[2, 7], i32>) -> (i32, i32, i32, i32)
              func.call @topk_store_slot(%t0, %s0, %c, %row, %column_base_i32, %out) : (i1, i32, i32, index, i32, !tile.global<[?, ?], i32>) -> ()
              func.call @topk_store_slot(%t1, %s1, %c_1, %row, %column_base_i32, %out) : (i1, i32, i32, index, i32, !tile.global<[?, ?], i32>) -> ()
              func.call @topk_store_slot(%t2, %s2, %c_2, %row, %column_base_i32, %out) : (i1, i32, i32, index, i32, !tile.global<[?, ?], i32>) -> ()
              func.call @topk_store_slot(%t3, %s3, %c_3, %row, %column_base_i32, %out) : (i1, i32, i32, index, i32, !tile.global<[?, ?], i32>) -> ()
              func.call @topk_add_candidate(%a0, %k0, %c, %state, %candidate_keys, %candidate_columns) : (i1, i32, i32, !tile.shared<[2, 7], i32>, !tile.shared<[candidates], i32>, !tile.shared<[candidates], i32>) -> ()
              func.call @topk_add_candidate(%a1, %k1, %c_1, %state, %candidate_keys, %candidate_columns) : (i1, i32, i32, !tile.shared<[2, 7], i32>, !tile.shared<[candidates], i32>, !tile.shared<[candidates], i32>) -> ()
              func.call @topk_add_candidate(%a2, %k2, %c_2, %state, %candidate_keys, %candidate_columns) : (i1, i32, i32, !tile.shared<[2, 7], i32>, !tile.shared<[candidates], i32>, !tile.shared<[candidates], i32>) -> ()
              func.call @topk_add_candidate(%a3, %k3, %c_3, %state, %candidate_keys, %candidate_columns) : (i1, i32, i32, !tile.shared<[2, 7], i32>, !tile.shared<[candidates], i32>, !tile.shared<[candidates], i32>) -> ()
            }
          }
        }
        scf.if %use_candidates {
          // This digit's histograms among the candidates with the prefix.
          %c8_i32 = arith.constant 8 : i32
          %above = arith.addi %shift, %c8_i32 : i32
          %prefix_high = arith.shrui %prefix, %above : i32
          %c3_count = arith.constant 3 : index
          %candidates_i32 = tile.load %state[%c1, %c3_count] : !tile.shared<[2, 7], i32>
          %candidates = arith.index_cast %candidates_i32 : i32 to index
          tile.parallel (%t) in [256] {
            scf.for %i = %t to %candidates step %c256 {
              %key = tile.load %candidate_keys[%i] : !tile.shared<[candidates], i32>
              %key_high = arith.shrui %key, %above : i32
              %same_prefix = arith.cmpi eq, %key_high, %prefix_high : i32
              scf.if %same_prefix {
                %shifted = arith.shrui %key, %shift : i32
                %mask = arith.constant 255 : i32
                %digit = arith.andi %shifted, %mask : i32
                %bin = arith.index_cast %digit : i32 to index
                %c32_w = arith.constant 32 : index
                %warp = arith.divui %t, %c32_w : index
                %old = tile.atomic add %one, %hist[%warp, %bin] : !tile.shared<[8, 256], i32>
              }
            }
          }
        }
        %full_pass = arith.xori %use_candidates, %true : i1
        %count_all = arith.andi %later_pass, %full_pass : i1
        scf.if %count_all {
          // The histograms of this digit among the keys that share the
          // prefix found so far.
          %c8_i32 = arith.constant 8 : i32
          %above = arith.addi %shift, %c8_i32 : i32
          %prefix_high = arith.shrui %prefix, %above : i32
          tile.parallel (%t) in [256] {
            %t_i32 = arith.index_castui %t : index to i32
            %first = arith.addi %start_i32, %t_i32 : i32
            %c32_w = arith.constant 32 : index
            %warp = arith.divui %t, %c32_w : index
            %c1024 = arith.constant 1024 : i32
            scf.for %c = %first to %end_i32 step %c1024 : i32 {
              %k0, %k1, %k2, %k3 = func.call @topk_keys4(%x, %keys, %row, %c, %c, %start_i32, %end_i32, %cached)
                  : (!tile.global<[?, ?], f32>, !tile.shared<[cache], i32>, index, i32, i32, i32, i32, i1) -> (i32, i32, i32, i32)
              func.call @topk_count_digit(%k0, %shift, %above, %prefix_high, %warp, %hist) : (i32, i32, i32, i32, index, !tile.shared<[8, 256], i32>) -> ()
              func.call @topk_count_digit(%k1, %shift, %above, %prefix_high, %warp, %hist) : (i32, i32, i32, i32, index, !tile.shared<[8, 256], i32>) -> ()
              func.call @topk_count_digit(%k2, %shift, %above, %prefix_high, %warp, %hist) : (i32, i32, i32, i32, index, !tile.shared<[8, 256], i32>) -> ()
              func.call @topk_count_digit(%k3, %shift, %above, %prefix_high, %warp, %hist) : (i32, i32, i32, i32, index, !tile.shared<[8, 256], i32>) -> ()
            }
          }
        }
        scf.if %later_pass {
          tile.parallel (%b) in [256] {
            %c8_w = arith.constant 8 : index
            %total = scf.for %w = %c0 to %c8_w step %c1 iter_args(%sum = %zero) -> (i32) {
              %part = tile.load %hist[%w, %b] : !tile.shared<[8, 256], i32>
              %more = arith.addi %sum, %part : i32
              scf.yield %more : i32
            }
            tile.store %total, %counts[%b] : !tile.shared<[256], i32>
          }
          scf.if %clustered {
            %own_counted = tile.scan sum %counts to %at_least reverse
                : !tile.shared<[256], i32> to !tile.shared<[256], i32>
            %parity_offset = arith.muli %parity, %c256 : index
            tile.parallel (%b) in [256] {
              %mine = tile.load %counts[%b] : !tile.shared<[256], i32>
              %at = arith.addi %parity_offset, %b : index
              tile.store %mine, %candidate_keys[%at] : !tile.shared<[candidates], i32>
              %own_ge = tile.load %at_least[%b] : !tile.shared<[256], i32>
              tile.store %own_ge, %candidate_columns[%b] : !tile.shared<[candidates], i32>
            }
            tile.cluster_barrier
            tile.parallel (%b) in [256] {
              %at = arith.addi %parity_offset, %b : index
              %total = scf.for %p = %c0 to %splits step %c1 iter_args(%sum = %zero) -> (i32) {
                %peer_count = tile.load %candidate_keys[%at] peer %p : !tile.shared<[candidates], i32>
                %more = arith.addi %sum, %peer_count : i32
                scf.yield %more : i32
              }
              tile.store %total, %counts[%b] : !tile.shared<[256], i32>
            }
          }
          %counted_total = tile.scan sum %counts to %at_least reverse
              : !tile.shared<[256], i32> to !tile.shared<[256], i32>
        }
        // The bin where "keys at least this bin" reaches the number needed.
        tile.parallel (%b) in [256] {
          // The next pass counts into cleared histograms (the counts of this
          // one were merged before the scan).
          %c8_z = arith.constant 8 : index
          scf.for %w = %c0 to %c8_z step %c1 {
            tile.store %zero, %hist[%w, %b] : !tile.shared<[8, 256], i32>
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
            tile.store %new_prefix, %state[%other, %c0] : !tile.shared<[2, 7], i32>
            tile.store %need, %state[%other, %c1] : !tile.shared<[2, 7], i32>
            tile.store %done, %state[%other, %c2] : !tile.shared<[2, 7], i32>
            %c4_store = arith.constant 4 : index
            tile.store %in_bin, %state[%other, %c4_store] : !tile.shared<[2, 7], i32>
            scf.if %clustered {
              // This block's keys above the bin join those above earlier
              // bins; its keys in the bin are the next pass's to split.
              %own_ge = tile.load %candidate_columns[%b] : !tile.shared<[candidates], i32>
              %own_ge_next = tile.load %candidate_columns[%next] : !tile.shared<[candidates], i32>
              %own_gt = arith.select %is_last, %zero, %own_ge_next : i32
              %own_in = arith.subi %own_ge, %own_gt : i32
              %c5_own = arith.constant 5 : index
              %c6_own = arith.constant 6 : index
              %own_above = tile.load %state[%parity, %c5_own] : !tile.shared<[2, 7], i32>
              %own_above_next = arith.addi %own_above, %own_gt : i32
              tile.store %own_above_next, %state[%other, %c5_own] : !tile.shared<[2, 7], i32>
              tile.store %own_in, %state[%other, %c6_own] : !tile.shared<[2, 7], i32>
            }
          }
        }
        %c8 = arith.constant 8 : i32
        %next_shift = arith.subi %shift, %c8 : i32
        %false = arith.constant false
        scf.yield %next_shift, %false, %other, %use_candidates : i32, i1, index, i1
      }

      // 3. Keys above the threshold, or at least the threshold when all of
      //    those equal to it are needed (always so when every selectable key
      //    is taken: the threshold is then 1, the least selectable key).
      %prefix_found = tile.load %state[%final#2, %c0] : !tile.shared<[2, 7], i32>
      // The bits below the last pass's digit (none for f32; bf16's follow
      // from the sign: a key without the top bit is a negative value's).
      %last_pass_shift = arith.constant 0 : i32
      %low_one = arith.constant 1 : i32
      %low_range = arith.shli %low_one, %last_pass_shift : i32
      %low_bits = arith.subi %low_range, %low_one : i32
      %negative_key = arith.cmpi sge, %prefix_found, %zero : i32
      %negative_low = arith.ori %prefix_found, %low_bits : i32
      %found = arith.select %negative_key, %negative_low, %prefix_found : i32
      %need = tile.load %state[%final#2, %c1] : !tile.shared<[2, 7], i32>
      %c2 = arith.constant 2 : index
      %done_i32 = tile.load %state[%final#2, %c2] : !tile.shared<[2, 7], i32>
      %done = arith.cmpi ne, %done_i32, %zero : i32
      %threshold = arith.select %take_all, %one, %found : i32
      %all_at_threshold = arith.ori %take_all, %done : i1
      %final_compacted = arith.andi %final#3, %compaction : i1
      // With splits: where this block's keys go. Its taken keys (those above
      // the threshold, and those at it when all are needed) follow the lower
      // blocks' taken keys; the ties follow every block's taken keys, ranked
      // after the lower blocks' ties. Counted from each block's histograms:
      // no walk over the keys.
      scf.if %clustered {
        tile.cluster_barrier
        tile.parallel (%i) in [4] {
          // 0: taken below, 1: taken in all blocks, 2: ties below (3 unused).
          %c2_base = arith.constant 2 : index
          %c5_own = arith.constant 5 : index
          %c6_own = arith.constant 6 : index
          %all_blocks = arith.cmpi eq, %i, %c1 : index
          %is_ties = arith.cmpi eq, %i, %c2_base : index
          %upto = arith.select %all_blocks, %splits, %cluster_rank : index
          %total = scf.for %p = %c0 to %upto step %c1 iter_args(%sum = %zero) -> (i32) {
            %above = tile.load %state[%final#2, %c5_own] peer %p : !tile.shared<[2, 7], i32>
            %in_bin = tile.load %state[%final#2, %c6_own] peer %p : !tile.shared<[2, 7], i32>
            %bin_taken = arith.select %all_at_threshold, %in_bin, %zero : i32
            %taken = arith.addi %above, %bin_taken : i32
            %ties = arith.subi %in_bin, %bin_taken : i32
            %value = arith.select %is_ties, %ties, %taken : i32
            %more = arith.addi %sum, %value : i32
            scf.yield %more : i32
          }
          tile.store %total, %bases[%i] : !tile.shared<[4], i32>
          // This block's slots start after the lower blocks' taken keys.
          %first = arith.cmpi eq, %i, %c0 : index
          scf.if %first {
            %c3_slot = arith.constant 3 : index
            tile.store %total, %state[%c0, %c3_slot] : !tile.shared<[2, 7], i32>
          }
        }
      }
      scf.if %final_compacted {
        // Compacted: the keys above the 16-bit prefix are written; the rest
        // of the selection is among the candidates.
        %c3_count = arith.constant 3 : index
        %candidates_i32 = tile.load %state[%c1, %c3_count] : !tile.shared<[2, 7], i32>
        %candidates = arith.index_cast %candidates_i32 : i32 to index
        tile.parallel (%t) in [256] {
          scf.for %i = %t to %candidates step %c256 {
            %key = tile.load %candidate_keys[%i] : !tile.shared<[candidates], i32>
            %above = arith.cmpi ugt, %key, %threshold : i32
            %at_threshold = arith.cmpi eq, %key, %threshold : i32
            %equal_taken = arith.andi %at_threshold, %all_at_threshold : i1
            %take = arith.ori %above, %equal_taken : i1
            scf.if %take {
              %c3 = arith.constant 3 : index
              %slot_i32 = tile.atomic add %one, %state[%c0, %c3] : !tile.shared<[2, 7], i32>
              %slot = arith.index_cast %slot_i32 : i32 to index
              %c_i32 = tile.load %candidate_columns[%i] : !tile.shared<[candidates], i32>
              %c = arith.index_cast %c_i32 : i32 to index
              %column_index = arith.subi %c, %column_base : index
              %column = arith.index_cast %column_index : index to i32
              tile.store %column, %out[%row, %slot] : !tile.global<[?, ?], i32>
            }
          }
        }
        // Ties among the candidates (every key equal to the threshold is
        // one), in column order: a tie's rank is the number of ties in lower
        // columns (candidates are few: at most `candidates`).
        %ties_left = arith.xori %all_at_threshold, %true : i1
        scf.if %ties_left {
          %c3 = arith.constant 3 : index
          %base = tile.load %state[%c0, %c3] : !tile.shared<[2, 7], i32>
          tile.parallel (%t) in [256] {
            scf.for %i = %t to %candidates step %c256 {
              %key = tile.load %candidate_keys[%i] : !tile.shared<[candidates], i32>
              %is_tie = arith.cmpi eq, %key, %threshold : i32
              scf.if %is_tie {
                %column_i = tile.load %candidate_columns[%i] : !tile.shared<[candidates], i32>
                %rank = scf.for %j = %c0 to %candidates step %c1
                    iter_args(%lower = %zero) -> (i32) {
                  %other_key = tile.load %candidate_keys[%j] : !tile.shared<[candidates], i32>
                  %other_column = tile.load %candidate_columns[%j] : !tile.shared<[candidates], i32>
                  %other_tie = arith.cmpi eq, %other_key, %threshold : i32
                  %before = arith.cmpi slt, %other_column, %column_i : i32
                  %is_lower = arith.andi %other_tie, %before : i1
                  %add = arith.extui %is_lower : i1 to i32
                  %next = arith.addi %lower, %add : i32
                  scf.yield %next : i32
                }
                %wanted = arith.cmpi slt, %rank, %need : i32
                scf.if %wanted {
                  %slot_i32 = arith.addi %base, %rank : i32
                  %slot = arith.index_cast %slot_i32 : i32 to index
                  %c = arith.index_cast %column_i : i32 to index
                  %column_index = arith.subi %c, %column_base : index
                  %column = arith.index_cast %column_index : index to i32
                  tile.store %column, %out[%row, %slot] : !tile.global<[?, ?], i32>
                }
              }
            }
          }
        }
      } else {
        tile.parallel (%t) in [256] {
          // A warp steps over its 32 x 4 columns together (@topk_claim4).
          %t_i32 = arith.index_castui %t : index to i32
          %c31_i32 = arith.constant 31 : i32
          %lane = arith.andi %t_i32, %c31_i32 : i32
          %warp_t = arith.subi %t_i32, %lane : i32
          %warp_first = arith.addi %start_i32, %warp_t : i32
          %c1024 = arith.constant 1024 : i32
          scf.for %cw = %warp_first to %end_i32 step %c1024 : i32 {
            %c = arith.addi %cw, %lane : i32
            %k0, %k1, %k2, %k3 = func.call @topk_keys4(%x, %keys, %row, %c, %cw, %start_i32, %end_i32, %cached)
                : (!tile.global<[?, ?], f32>, !tile.shared<[cache], i32>, index, i32, i32, i32, i32, i1) -> (i32, i32, i32, i32)
            %c256_i32 = arith.constant 256 : i32
            %c512 = arith.constant 512 : i32
            %c768 = arith.constant 768 : i32
            %c_1 = arith.addi %c, %c256_i32 : i32
            %c_2 = arith.addi %c, %c512 : i32
            %c_3 = arith.addi %c, %c768 : i32
            %t0 = func.call @topk_take_test(%k0, %threshold, %all_at_threshold) : (i32, i32, i1) -> i1
            %t1 = func.call @topk_take_test(%k1, %threshold, %all_at_threshold) : (i32, i32, i1) -> i1
            %t2 = func.call @topk_take_test(%k2, %threshold, %all_at_threshold) : (i32, i32, i1) -> i1
            %t3 = func.call @topk_take_test(%k3, %threshold, %all_at_threshold) : (i32, i32, i1) -> i1
            %s0, %s1, %s2, %s3 = func.call @topk_claim4(%t0, %t1, %t2, %t3, %lane, %state)
                : (i1, i1, i1, i1, i32, !tile.shared<[2, 7], i32>) -> (i32, i32, i32, i32)
            func.call @topk_store_slot(%t0, %s0, %c, %row, %column_base_i32, %out) : (i1, i32, i32, index, i32, !tile.global<[?, ?], i32>) -> ()
            func.call @topk_store_slot(%t1, %s1, %c_1, %row, %column_base_i32, %out) : (i1, i32, i32, index, i32, !tile.global<[?, ?], i32>) -> ()
            func.call @topk_store_slot(%t2, %s2, %c_2, %row, %column_base_i32, %out) : (i1, i32, i32, index, i32, !tile.global<[?, ?], i32>) -> ()
            func.call @topk_store_slot(%t3, %s3, %c_3, %row, %column_base_i32, %out) : (i1, i32, i32, index, i32, !tile.global<[?, ?], i32>) -> ()
          }
        }
      }

      // 4. Ties at the threshold, in column order: each warp owns a
      //    contiguous segment of the row (a multiple of 32 columns) and counts
      //    its ties with ballots; a scan over the 8 warps gives each warp the
      //    rank of its first tie; a second walk gives the ties their slots
      //    until enough are taken. Two passes and a few barriers, however many
      //    ties there are (bf16 rows have many).
      //    (Compacted rows ranked theirs among the candidates above.)
      %some_ties = arith.xori %all_at_threshold, %true : i1
      %not_compacted = arith.xori %final_compacted, %true : i1
      %ties_needed = arith.andi %some_ties, %not_compacted : i1
      scf.if %ties_needed {
        %c3 = arith.constant 3 : index
        %c32 = arith.constant 32 : index
        %c255 = arith.constant 255 : index
        // The first tie's slot and this block's first tie rank (with splits,
        // after every block's taken keys and the lower blocks' ties).
        %own_base = tile.load %state[%c0, %c3] : !tile.shared<[2, 7], i32>
        %taken_all = tile.load %bases[%c1] : !tile.shared<[4], i32>
        %c2_ties = arith.constant 2 : index
        %ties_in_lower_blocks = tile.load %bases[%c2_ties] : !tile.shared<[4], i32>
        %base = arith.select %clustered, %taken_all, %own_base : i32
        %first_rank = arith.select %clustered, %ties_in_lower_blocks, %zero : i32
        %rounded = arith.addi %length, %c255 : index
        %chunks = arith.divui %rounded, %c256 : index
        %segment = arith.muli %chunks, %c32 : index
        tile.parallel (%t) in [256] {
          %lane = arith.remui %t, %c32 : index
          %warp = arith.divui %t, %c32 : index
          %offset = arith.muli %warp, %segment : index
          %segment_start = arith.addi %start, %offset : index
          %segment_limit = arith.addi %segment_start, %segment : index
          %segment_end = arith.minui %segment_limit, %end : index
          // Bounds are the same for a warp's lanes: the ballots are warp-wide.
          %count = scf.for %j = %segment_start to %segment_end step %c32
              iter_args(%sum = %zero) -> (i32) {
            %c = arith.addi %j, %lane : index
            %inside = arith.cmpi ult, %c, %segment_end : index
            %c_safe = arith.select %inside, %c, %start : index
            %key = scf.if %cached -> (i32) {
              %at = arith.subi %c_safe, %start : index
              %cached_key = tile.load %keys[%at] : !tile.shared<[cache], i32>
              scf.yield %cached_key : i32
            } else {
              %v = tile.load %x[%row, %c_safe] : !tile.global<[?, ?], f32>
              %read_key = func.call @select_key(%v) : (f32) -> i32
              scf.yield %read_key : i32
            }
            %equal = arith.cmpi eq, %key, %threshold : i32
            %tie = arith.andi %equal, %inside : i1
            %ties = tile.vote ballot %tie : i32
            %tie_count = math.ctpop %ties : i32
            %next = arith.addi %sum, %tie_count : i32
            scf.yield %next : i32
          }
          %first_lane = arith.cmpi eq, %lane, %c0 : index
          scf.if %first_lane {
            tile.store %count, %warp_ties[%warp] : !tile.shared<[8], i32>
          }
        }
        %all_ties = tile.scan sum %warp_ties to %warp_offsets exclusive
            : !tile.shared<[8], i32> to !tile.shared<[8], i32>
        tile.parallel (%t) in [256] {
          %lane = arith.remui %t, %c32 : index
          %warp = arith.divui %t, %c32 : index
          %offset = arith.muli %warp, %segment : index
          %segment_start = arith.addi %start, %offset : index
          %segment_limit = arith.addi %segment_start, %segment : index
          %segment_end = arith.minui %segment_limit, %end : index
          %warp_offset = tile.load %warp_offsets[%warp] : !tile.shared<[8], i32>
          %warp_first = arith.addi %first_rank, %warp_offset : i32
          %lane_i32 = arith.index_cast %lane : index to i32
          %lane_bit = arith.shli %one, %lane_i32 : i32
          %lanes_below = arith.subi %lane_bit, %one : i32
          // Warps whose first tie is past the ones needed have nothing to do.
          %warp_needed = arith.cmpi slt, %warp_first, %need : i32
          scf.if %warp_needed {
            %unused = scf.for %j = %segment_start to %segment_end step %c32
                iter_args(%before = %warp_first) -> (i32) {
              %c = arith.addi %j, %lane : index
              %inside = arith.cmpi ult, %c, %segment_end : index
              %c_safe = arith.select %inside, %c, %start : index
              %key = scf.if %cached -> (i32) {
                %at = arith.subi %c_safe, %start : index
                %cached_key = tile.load %keys[%at] : !tile.shared<[cache], i32>
                scf.yield %cached_key : i32
              } else {
                %v = tile.load %x[%row, %c_safe] : !tile.global<[?, ?], f32>
                %read_key = func.call @select_key(%v) : (f32) -> i32
                scf.yield %read_key : i32
              }
              %equal = arith.cmpi eq, %key, %threshold : i32
              %tie = arith.andi %equal, %inside : i1
              %ties = tile.vote ballot %tie : i32
              %ties_below = arith.andi %ties, %lanes_below : i32
              %rank_in_warp = math.ctpop %ties_below : i32
              %rank = arith.addi %before, %rank_in_warp : i32
              %wanted = arith.cmpi slt, %rank, %need : i32
              %take = arith.andi %tie, %wanted : i1
              scf.if %take {
                %slot_i32 = arith.addi %base, %rank : i32
                %slot = arith.index_cast %slot_i32 : i32 to index
                %column_index = arith.subi %c, %column_base : index
                %column = arith.index_cast %column_index : index to i32
                tile.store %column, %out[%row, %slot] : !tile.global<[?, ?], i32>
              }
              %tie_count = math.ctpop %ties : i32
              %after = arith.addi %before, %tie_count : i32
              scf.yield %after : i32
            }
          }
        }
      }

      // 5. -1 in the slots past the selectable keys.
      %filled_i32 = arith.minsi %selectable_count, %k_i32 : i32
      %filled = arith.index_cast %filled_i32 : i32 to index
      %first_block = arith.cmpi eq, %cluster_rank, %c0 : index
      scf.if %first_block {
        tile.parallel (%t) in [256] {
          %first = arith.addi %filled, %t : index
          scf.for %slot = %first to %k step %c256 {
            %none = arith.constant -1 : i32
            tile.store %none, %out[%row, %slot] : !tile.global<[?, ?], i32>
          }
        }
      }
      // Peers read this block's shared memory until the bases above.
      scf.if %clustered {
        tile.cluster_barrier
      }
    }
  }
}
