// Superseded by topk_f32's `splits` (thirty-fifth session: four reads in
// flight a thread, cached parts, slot bases from the passes' histograms;
// docs/performance.md); kept as the measured first version.
//
// Probe (not an operator kernel): exact top-k of each row of x [R, C] f32
// with a thread-block cluster of `splits` blocks per row
// (docs/proposals/decode-topk-several-blocks-per-row.md, thirty-fourth
// session). Rows whose one block would leave most SMs idle ([64, 2^20]:
// hisa.topk 0.42x torch.topk) get `splits` blocks that each walk a
// contiguous part of the row; the radix select's histograms are summed
// through distributed shared memory (peer loads only), so every block finds
// the same threshold; the selection's slot and tie offsets come from the
// counts of the lower-ranked blocks (block order is column order). Same
// guarantees as topk_f32: ties at the threshold to the lower columns, -inf
// and NaN never selected (key 0), -1 in the slots past the selectable
// keys. No windows, no key cache, no compaction: every pass re-reads x.
// k >= 1 (an operator would refuse k = 0 before launching).
//
//   python/bench/probes/topk_cluster_ab.py checks it against torch and
//   times it beside hisa.topk and torch.topk.

// From hisa's device library (kernels-dsl/lib/select_key.mlir).
func.func private @select_key(f32) -> i32

tile.kernel @topk_cluster(%x: !tile.global<[?, ?], f32>,
                          %out: !tile.global<[?, ?], i32>)
    params {splits = 4} {
  %num_rows = tile.dim %x, 0 : !tile.global<[?, ?], f32>
  %splits = tile.param "splits" : index
  %num_blocks = arith.muli %num_rows, %splits : index
  tile.launch (%block) in (%num_blocks) threads 256 cluster "splits" {
    // One histogram per warp (hot bins), merged into this block's counts of
    // the pass (by pass parity: a peer may still read the previous pass's
    // while this block writes the next one's).
    %hist = tile.alloc : !tile.shared<[8, 256], i32>
    %counts = tile.alloc : !tile.shared<[2, 256], i32>
    %sum = tile.alloc : !tile.shared<[256], i32>
    %at_least = tile.alloc : !tile.shared<[256], i32>
    // [p, 0] threshold prefix, [p, 1] keys still needed at the threshold,
    // [p, 2] done (the whole threshold bin is needed); [0, 3] slot counter.
    %state = tile.alloc : !tile.shared<[2, 4], i32>
    // This block's [keys taken above the threshold, ties]: peers read them.
    %mine = tile.alloc : !tile.shared<[2], i32>
    // [0] slots above the threshold in lower blocks, [1] in all blocks,
    // [2] ties in lower blocks.
    %bases = tile.alloc : !tile.shared<[4], i32>
    %warp_ties = tile.alloc : !tile.shared<[8], i32>
    %warp_offsets = tile.alloc : !tile.shared<[8], i32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c32 = arith.constant 32 : index
    %c256 = arith.constant 256 : index
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %none = arith.constant -1 : i32
    %true = arith.constant true
    %false = arith.constant false
    %mask = arith.constant 255 : i32
    %c8_i32 = arith.constant 8 : i32
    %c24_i32 = arith.constant 24 : i32

    %rank = tile.cluster_rank : index
    %row = arith.divui %block, %splits : index
    %num_columns = tile.dim %x, 1 : !tile.global<[?, ?], f32>
    %k_out = tile.dim %out, 1 : !tile.global<[?, ?], i32>
    %k_i32 = arith.index_cast %k_out : index to i32
    // This block's columns [begin, end): contiguous parts in rank order.
    %part = arith.ceildivui %num_columns, %splits : index
    %begin_raw = arith.muli %rank, %part : index
    %begin = arith.minui %begin_raw, %num_columns : index
    %end_raw = arith.addi %begin, %part : index
    %end = arith.minui %end_raw, %num_columns : index

    tile.fill %hist, %zero : !tile.shared<[8, 256], i32>, i32
    tile.fill %mine, %zero : !tile.shared<[2], i32>, i32

    // 1. The histogram of the top 8 bits of this block's keys, summed over
    //    the cluster.
    tile.parallel (%warp, %lane) in [8, 32] {
      %warp_first = arith.muli %warp, %c32 : index
      %t = arith.addi %warp_first, %lane : index
      %first = arith.addi %begin, %t : index
      scf.for %c = %first to %end step %c256 {
        %v = tile.load %x[%row, %c] : !tile.global<[?, ?], f32>
        %key = func.call @select_key(%v) : (f32) -> i32
        %selectable = arith.cmpi ne, %key, %zero : i32
        scf.if %selectable {
          %digit = arith.shrui %key, %c24_i32 : i32
          %bin = arith.index_cast %digit : i32 to index
          %old = tile.atomic add %one, %hist[%warp, %bin] : !tile.shared<[8, 256], i32>
        }
      }
    }
    tile.parallel (%b) in [256] {
      %c8 = arith.constant 8 : index
      %total = scf.for %w = %c0 to %c8 step %c1 iter_args(%s = %zero) -> (i32) {
        %part_count = tile.load %hist[%w, %b] : !tile.shared<[8, 256], i32>
        tile.store %zero, %hist[%w, %b] : !tile.shared<[8, 256], i32>
        %more = arith.addi %s, %part_count : i32
        scf.yield %more : i32
      }
      tile.store %total, %counts[%c0, %b] : !tile.shared<[2, 256], i32>
    }
    tile.cluster_barrier
    tile.parallel (%b) in [256] {
      %total = scf.for %p = %c0 to %splits step %c1 iter_args(%s = %zero) -> (i32) {
        %peer_count = tile.load %counts[%c0, %b] peer %p : !tile.shared<[2, 256], i32>
        %more = arith.addi %s, %peer_count : i32
        scf.yield %more : i32
      }
      tile.store %total, %sum[%b] : !tile.shared<[256], i32>
    }
    %selectable_count = tile.scan sum %sum to %at_least reverse
        : !tile.shared<[256], i32> to !tile.shared<[256], i32>
    %take_all = arith.cmpi sle, %selectable_count, %k_i32 : i32
    tile.parallel (%p, %i) in [2, 4] {
      %is_needed = arith.cmpi eq, %i, %c1 : index
      %init = arith.select %is_needed, %k_i32, %zero : i32
      tile.store %init, %state[%p, %i] : !tile.shared<[2, 4], i32>
    }

    // 2. Radix select, 8 bits a pass, unless every selectable key is taken.
    //    Every block computes the same state from the same sums.
    %final:3 = scf.while (%shift = %c24_i32, %first_pass = %true, %parity = %c0)
        : (i32, i1, index) -> (i32, i1, index) {
      %done_i32 = tile.load %state[%parity, %c2] : !tile.shared<[2, 4], i32>
      %more_bits = arith.cmpi sge, %shift, %zero : i32
      %not_done = arith.cmpi eq, %done_i32, %zero : i32
      %needed = arith.xori %take_all, %true : i1
      %go_on = arith.andi %more_bits, %not_done : i1
      %go = arith.andi %go_on, %needed : i1
      scf.condition(%go) %shift, %first_pass, %parity : i32, i1, index
    } do {
    ^bb0(%shift: i32, %first_pass: i1, %parity: index):
      %prefix = tile.load %state[%parity, %c0] : !tile.shared<[2, 4], i32>
      %still_needed = tile.load %state[%parity, %c1] : !tile.shared<[2, 4], i32>
      %other = arith.subi %c1, %parity : index
      %later_pass = arith.xori %first_pass, %true : i1
      scf.if %later_pass {
        %above = arith.addi %shift, %c8_i32 : i32
        %prefix_high = arith.shrui %prefix, %above : i32
        tile.parallel (%warp, %lane) in [8, 32] {
          %warp_first = arith.muli %warp, %c32 : index
          %t = arith.addi %warp_first, %lane : index
          %first = arith.addi %begin, %t : index
          scf.for %c = %first to %end step %c256 {
            %v = tile.load %x[%row, %c] : !tile.global<[?, ?], f32>
            %key = func.call @select_key(%v) : (f32) -> i32
            %key_high = arith.shrui %key, %above : i32
            %same_prefix = arith.cmpi eq, %key_high, %prefix_high : i32
            %selectable = arith.cmpi ne, %key, %zero : i32
            %counted = arith.andi %same_prefix, %selectable : i1
            scf.if %counted {
              %shifted = arith.shrui %key, %shift : i32
              %digit = arith.andi %shifted, %mask : i32
              %bin = arith.index_cast %digit : i32 to index
              %old = tile.atomic add %one, %hist[%warp, %bin] : !tile.shared<[8, 256], i32>
            }
          }
        }
        tile.parallel (%b) in [256] {
          %c8 = arith.constant 8 : index
          %total = scf.for %w = %c0 to %c8 step %c1 iter_args(%s = %zero) -> (i32) {
            %part_count = tile.load %hist[%w, %b] : !tile.shared<[8, 256], i32>
            tile.store %zero, %hist[%w, %b] : !tile.shared<[8, 256], i32>
            %more = arith.addi %s, %part_count : i32
            scf.yield %more : i32
          }
          tile.store %total, %counts[%parity, %b] : !tile.shared<[2, 256], i32>
        }
        tile.cluster_barrier
        tile.parallel (%b) in [256] {
          %total = scf.for %p = %c0 to %splits step %c1 iter_args(%s = %zero) -> (i32) {
            %peer_count = tile.load %counts[%parity, %b] peer %p : !tile.shared<[2, 256], i32>
            %more = arith.addi %s, %peer_count : i32
            scf.yield %more : i32
          }
          tile.store %total, %sum[%b] : !tile.shared<[256], i32>
        }
        %counted_total = tile.scan sum %sum to %at_least reverse
            : !tile.shared<[256], i32> to !tile.shared<[256], i32>
      }
      // The bin where "keys at least this bin" reaches the number needed.
      tile.parallel (%b) in [256] {
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
          tile.store %new_prefix, %state[%other, %c0] : !tile.shared<[2, 4], i32>
          tile.store %need, %state[%other, %c1] : !tile.shared<[2, 4], i32>
          tile.store %done, %state[%other, %c2] : !tile.shared<[2, 4], i32>
        }
      }
      %next_shift = arith.subi %shift, %c8_i32 : i32
      scf.yield %next_shift, %false, %other : i32, i1, index
    }

    // 3. The threshold; this block's keys taken above it (or at it, when
    //    all of those are needed) and its ties, published for the peers.
    %found = tile.load %state[%final#2, %c0] : !tile.shared<[2, 4], i32>
    %need = tile.load %state[%final#2, %c1] : !tile.shared<[2, 4], i32>
    %done_i32 = tile.load %state[%final#2, %c2] : !tile.shared<[2, 4], i32>
    %done = arith.cmpi ne, %done_i32, %zero : i32
    %threshold = arith.select %take_all, %one, %found : i32
    %all_at_threshold = arith.ori %take_all, %done : i1
    tile.parallel (%warp, %lane) in [8, 32] {
      %warp_first = arith.muli %warp, %c32 : index
      %t = arith.addi %warp_first, %lane : index
      %first = arith.addi %begin, %t : index
      %counted:2 = scf.for %c = %first to %end step %c256
          iter_args(%taken = %zero, %tied = %zero) -> (i32, i32) {
        %v = tile.load %x[%row, %c] : !tile.global<[?, ?], f32>
        %key = func.call @select_key(%v) : (f32) -> i32
        %above = arith.cmpi ugt, %key, %threshold : i32
        %at_threshold = arith.cmpi eq, %key, %threshold : i32
        %equal_taken = arith.andi %at_threshold, %all_at_threshold : i1
        %take = arith.ori %above, %equal_taken : i1
        %tie_only = arith.xori %all_at_threshold, %true : i1
        %tie = arith.andi %at_threshold, %tie_only : i1
        %take_i32 = arith.extui %take : i1 to i32
        %tie_i32 = arith.extui %tie : i1 to i32
        %taken_next = arith.addi %taken, %take_i32 : i32
        %tied_next = arith.addi %tied, %tie_i32 : i32
        scf.yield %taken_next, %tied_next : i32, i32
      }
      %old_taken = tile.atomic add %counted#0, %mine[%c0] : !tile.shared<[2], i32>
      %old_tied = tile.atomic add %counted#1, %mine[%c1] : !tile.shared<[2], i32>
    }
    tile.cluster_barrier
    tile.parallel (%i) in [4] {
      // 0: taken in lower blocks, 1: taken in all, 2: ties in lower blocks
      // (3: the same, unused).
      %which = arith.divui %i, %c2 : index
      %all_blocks = arith.cmpi eq, %i, %c1 : index
      %upto = arith.select %all_blocks, %splits, %rank : index
      %total = scf.for %p = %c0 to %upto step %c1 iter_args(%s = %zero) -> (i32) {
        %peer_value = tile.load %mine[%which] peer %p : !tile.shared<[2], i32>
        %more = arith.addi %s, %peer_value : i32
        scf.yield %more : i32
      }
      tile.store %total, %bases[%i] : !tile.shared<[4], i32>
      %first_i = arith.cmpi eq, %i, %c0 : index
      scf.if %first_i {
        tile.store %zero, %state[%c0, %c3] : !tile.shared<[2, 4], i32>
      }
    }
    %taken_below = tile.load %bases[%c0] : !tile.shared<[4], i32>
    %taken_total = tile.load %bases[%c1] : !tile.shared<[4], i32>
    %ties_below = tile.load %bases[%c2] : !tile.shared<[4], i32>

    // 4. This block's taken keys in its slots [taken_below, ...).
    tile.parallel (%warp, %lane) in [8, 32] {
      %warp_first = arith.muli %warp, %c32 : index
      %t = arith.addi %warp_first, %lane : index
      %first = arith.addi %begin, %t : index
      scf.for %c = %first to %end step %c256 {
        %v = tile.load %x[%row, %c] : !tile.global<[?, ?], f32>
        %key = func.call @select_key(%v) : (f32) -> i32
        %above = arith.cmpi ugt, %key, %threshold : i32
        %at_threshold = arith.cmpi eq, %key, %threshold : i32
        %equal_taken = arith.andi %at_threshold, %all_at_threshold : i1
        %take = arith.ori %above, %equal_taken : i1
        scf.if %take {
          %claimed = tile.atomic add %one, %state[%c0, %c3] : !tile.shared<[2, 4], i32>
          %slot_i32 = arith.addi %taken_below, %claimed : i32
          %slot = arith.index_cast %slot_i32 : i32 to index
          %column = arith.index_cast %c : index to i32
          tile.store %column, %out[%row, %slot] : !tile.global<[?, ?], i32>
        }
      }
    }

    // 5. Ties, in column order: the cluster's first `need` take the slots
    //    after every taken key. This block's ties have cluster ranks from
    //    ties_below on; 256 columns at a time, a ballot per warp and a scan
    //    over the warps, until none of its ties is needed any more.
    %ties_needed = arith.xori %all_at_threshold, %true : i1
    %some_needed = arith.cmpi slt, %ties_below, %need : i32
    %walk = arith.andi %ties_needed, %some_needed : i1
    scf.if %walk {
      %left:2 = scf.while (%chunk = %begin, %taken = %ties_below) : (index, i32) -> (index, i32) {
        %columns_left = arith.cmpi ult, %chunk, %end : index
        %short = arith.cmpi slt, %taken, %need : i32
        %go = arith.andi %columns_left, %short : i1
        scf.condition(%go) %chunk, %taken : index, i32
      } do {
      ^bb0(%chunk: index, %taken: i32):
        tile.parallel (%warp, %lane) in [8, 32] {
          %warp_first = arith.muli %warp, %c32 : index
          %t = arith.addi %warp_first, %lane : index
          %c = arith.addi %chunk, %t : index
          %inside = arith.cmpi ult, %c, %end : index
          %c_safe = arith.select %inside, %c, %begin : index
          %v = tile.load %x[%row, %c_safe] : !tile.global<[?, ?], f32>
          %key = func.call @select_key(%v) : (f32) -> i32
          %equal = arith.cmpi eq, %key, %threshold : i32
          %tie = arith.andi %equal, %inside : i1
          %ties = tile.vote ballot %tie : i32
          %first_lane = arith.cmpi eq, %lane, %c0 : index
          scf.if %first_lane {
            %count = math.ctpop %ties : i32
            tile.store %count, %warp_ties[%warp] : !tile.shared<[8], i32>
          }
        }
        %chunk_ties = tile.scan sum %warp_ties to %warp_offsets exclusive
            : !tile.shared<[8], i32> to !tile.shared<[8], i32>
        tile.parallel (%warp, %lane) in [8, 32] {
          %warp_first = arith.muli %warp, %c32 : index
          %t = arith.addi %warp_first, %lane : index
          %c = arith.addi %chunk, %t : index
          %inside = arith.cmpi ult, %c, %end : index
          %c_safe = arith.select %inside, %c, %begin : index
          %v = tile.load %x[%row, %c_safe] : !tile.global<[?, ?], f32>
          %key = func.call @select_key(%v) : (f32) -> i32
          %equal = arith.cmpi eq, %key, %threshold : i32
          %tie = arith.andi %equal, %inside : i1
          %ties = tile.vote ballot %tie : i32
          %lane_i32 = arith.index_cast %lane : index to i32
          %lane_bit = arith.shli %one, %lane_i32 : i32
          %lanes_below = arith.subi %lane_bit, %one : i32
          %ties_below_lane = arith.andi %ties, %lanes_below : i32
          %rank_in_warp = math.ctpop %ties_below_lane : i32
          %warp_offset = tile.load %warp_offsets[%warp] : !tile.shared<[8], i32>
          %rank_in_chunk = arith.addi %warp_offset, %rank_in_warp : i32
          %tie_rank = arith.addi %taken, %rank_in_chunk : i32
          %wanted = arith.cmpi slt, %tie_rank, %need : i32
          %take = arith.andi %tie, %wanted : i1
          scf.if %take {
            %slot_i32 = arith.addi %taken_total, %tie_rank : i32
            %slot = arith.index_cast %slot_i32 : i32 to index
            %column = arith.index_cast %c : index to i32
            tile.store %column, %out[%row, %slot] : !tile.global<[?, ?], i32>
          }
        }
        %next_chunk = arith.addi %chunk, %c256 : index
        %next_taken = arith.addi %taken, %chunk_ties : i32
        scf.yield %next_chunk, %next_taken : index, i32
      }
    }

    // 6. -1 in the slots past the selectable keys (the first block).
    %filled_i32 = arith.minsi %selectable_count, %k_i32 : i32
    %filled = arith.index_cast %filled_i32 : i32 to index
    %first_block = arith.cmpi eq, %rank, %c0 : index
    scf.if %first_block {
      tile.parallel (%warp, %lane) in [8, 32] {
        %warp_first = arith.muli %warp, %c32 : index
        %t = arith.addi %warp_first, %lane : index
        %first = arith.addi %filled, %t : index
        scf.for %slot = %first to %k_out step %c256 {
          tile.store %none, %out[%row, %slot] : !tile.global<[?, ?], i32>
        }
      }
    }
    // Peers read this block's counts until here.
    tile.cluster_barrier
  }
}
