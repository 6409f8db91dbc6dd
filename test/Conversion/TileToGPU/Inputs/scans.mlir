// Block-wide scans and warp collectives of each row of x (1000 elements,
// 128 threads: runs of 8 per thread, partial warps at the end): a GPU test
// of tile.scan, tile.warp_scan, tile.warp_broadcast, tile.warp_match and
// tile.vote (python/tests/test_scans.py).
tile.kernel @scans(%x: !tile.global<[?, 1000], i32>,
                   %inclusive: !tile.global<[?, 1000], i32>,
                   %suffix: !tile.global<[?, 1000], i32>,
                   %totals: !tile.global<[?, 2], i32>,
                   %f: !tile.global<[?, 1000], f32>,
                   %running_max: !tile.global<[?, 1000], f32>,
                   %warp_prefix: !tile.global<[?, 1024], i32>,
                   %ballots: !tile.global<[?, 32], i32>,
                   %group_totals: !tile.global<[?, 32], i32>,
                   %any_all: !tile.global<[?, 32], i32>,
                   %broadcast: !tile.global<[?, 1024], i32>,
                   %matches: !tile.global<[?, 1024], i32>) {
  %rows = tile.dim %x, 0 : !tile.global<[?, 1000], i32>
  tile.launch (%bx) in (%rows) threads 128 {
    %s = tile.alloc : !tile.shared<[1000], i32>
    %sum = tile.alloc : !tile.shared<[1000], i32>
    %after = tile.alloc : !tile.shared<[1000], i32>
    %fs = tile.alloc : !tile.shared<[1000], f32>
    tile.parallel (%i) in [1000] {
      %v = tile.load %x[%bx, %i] : !tile.global<[?, 1000], i32>
      tile.store %v, %s[%i] : !tile.shared<[1000], i32>
      %w = tile.load %f[%bx, %i] : !tile.global<[?, 1000], f32>
      tile.store %w, %fs[%i] : !tile.shared<[1000], f32>
    }
    %total = tile.scan sum %s to %sum : !tile.shared<[1000], i32> to !tile.shared<[1000], i32>
    %total_again = tile.scan sum %s to %after exclusive reverse : !tile.shared<[1000], i32> to !tile.shared<[1000], i32>
    %fmax = tile.scan max %fs to %fs : !tile.shared<[1000], f32> to !tile.shared<[1000], f32>
    tile.parallel (%i) in [1000] {
      %a = tile.load %sum[%i] : !tile.shared<[1000], i32>
      tile.store %a, %inclusive[%bx, %i] : !tile.global<[?, 1000], i32>
      %b = tile.load %after[%i] : !tile.shared<[1000], i32>
      tile.store %b, %suffix[%bx, %i] : !tile.global<[?, 1000], i32>
      %c = tile.load %fs[%i] : !tile.shared<[1000], f32>
      tile.store %c, %running_max[%bx, %i] : !tile.global<[?, 1000], f32>
    }
    tile.parallel (%i) in [1024] {
      %c0 = arith.constant 0 : index
      %c32 = arith.constant 32 : index
      %c1000 = arith.constant 1000 : index
      %zero = arith.constant 0 : i32
      %one = arith.constant 1 : i32
      %two = arith.constant 2 : i32
      %inside = arith.cmpi ult, %i, %c1000 : index
      %at = arith.select %inside, %i, %c0 : index
      %loaded = tile.load %s[%at] : !tile.shared<[1000], i32>
      %v = arith.select %inside, %loaded, %zero : i32
      %prefix, %count = tile.warp_scan sum %v exclusive : i32
      tile.store %prefix, %warp_prefix[%bx, %i] : !tile.global<[?, 1024], i32>
      // Each element reads lane (5 lane + 3) % 32 of its group.
      %lane_index = arith.remui %i, %c32 : index
      %lane_i32 = arith.index_cast %lane_index : index to i32
      %five = arith.constant 5 : i32
      %three = arith.constant 3 : i32
      %scaled = arith.muli %lane_i32, %five : i32
      %source = arith.addi %scaled, %three : i32
      %read = tile.warp_broadcast %v, %source : i32
      tile.store %read, %broadcast[%bx, %i] : !tile.global<[?, 1024], i32>
      // The elements of the group whose low 3 bits equal this one's.
      %seven = arith.constant 7 : i32
      %bin = arith.andi %v, %seven : i32
      %peers = tile.warp_match %bin : i32
      tile.store %peers, %matches[%bx, %i] : !tile.global<[?, 1024], i32>
      %low = arith.andi %v, %one : i32
      %odd = arith.cmpi ne, %low, %zero : i32
      %bits = tile.vote ballot %odd : i32
      %any = tile.vote any %odd : i1
      %all = tile.vote all %odd : i1
      // Lane 0 of each group writes the ballot, the group's total, and
      // any + 2 all.
      %lane = arith.remui %i, %c32 : index
      %group = arith.divui %i, %c32 : index
      %first = arith.cmpi eq, %lane, %c0 : index
      scf.if %first {
        tile.store %bits, %ballots[%bx, %group] : !tile.global<[?, 32], i32>
        tile.store %count, %group_totals[%bx, %group] : !tile.global<[?, 32], i32>
        %any_i32 = arith.extui %any : i1 to i32
        %all_i32 = arith.extui %all : i1 to i32
        %all_2 = arith.muli %all_i32, %two : i32
        %votes = arith.addi %any_i32, %all_2 : i32
        tile.store %votes, %any_all[%bx, %group] : !tile.global<[?, 32], i32>
      }
    }
    tile.parallel (%i) in [2] {
      %c0 = arith.constant 0 : index
      %first = arith.cmpi eq, %i, %c0 : index
      %t = arith.select %first, %total, %total_again : i32
      tile.store %t, %totals[%bx, %i] : !tile.global<[?, 2], i32>
    }
  }
}
