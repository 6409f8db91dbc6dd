// Pipelined loops whose bodies write a shared tile besides their staged
// copies (HISA's stage 2 stores each key tile's selection keys).
// keys_written_only writes %keys and reads it only after the loop; its key
// block comes from a division (not speculatable, but no memory effect).
// keys_read_in_loop also reads %keys in the loop (the previous tile's first
// key), so a fast thread could overwrite what a slow one still reads.
// keys_same_slots writes overlapping slots in consecutive iterations: a
// fast thread's store of the next tile must wait for the slow ones' stores
// of this one. keys_two_strides stores each tile twice, at t * 64 + i and
// t * 96 + i: each store alone would be disjoint between iterations, the
// two together are not (slot 130: i = 34 at t = 1, i = 2 at t = 2).
// keys_counted also counts its keys with an atomic, and keys_through_view
// stores through a [8, 64] view of the tile: both keep their barrier (an
// atomic's tile is shared by every iteration; a view's first index is not
// the tile's).
tile.kernel @keys_written_only(%a: !tile.global<[64, 64], bf16>,
                               %k: !tile.global<[?, 64], bf16>,
                               %out: !tile.global<[512], f32>)
    params {kt = 64} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %sums = tile.alloc : !tile.frag<[64], f32>
    %keys = tile.alloc : !tile.shared<[512], f32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %kt = tile.param "kt" : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %rows = arith.muli %t, %kt : index
      %block = arith.divui %rows, %kt : index
      %first = arith.muli %block, %kt : index
      tile.copy %k[%first, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %k_s, %a_s, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      tile.reduce sum %acc to %sums dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      tile.parallel (%i) in [64] {
        %v = tile.load %sums[%i] : !tile.frag<[64], f32>
        %slot = arith.addi %rows, %i : index
        tile.store %v, %keys[%slot] : !tile.shared<[512], f32>
      }
    }
    tile.copy %keys to %out[%c0] : !tile.shared<[512], f32> to !tile.global<[512], f32>
  }
}

// -----

tile.kernel @keys_read_in_loop(%a: !tile.global<[64, 64], bf16>,
                               %k: !tile.global<[?, 64], bf16>,
                               %out: !tile.global<[512], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %sums = tile.alloc : !tile.frag<[64], f32>
    %keys = tile.alloc : !tile.shared<[512], f32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %rows = arith.muli %t, %c64 : index
      tile.copy %k[%rows, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %k_s, %a_s, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      tile.reduce sum %acc to %sums dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      %previous = tile.load %keys[%c0] : !tile.shared<[512], f32>
      tile.parallel (%i) in [64] {
        %v = tile.load %sums[%i] : !tile.frag<[64], f32>
        %w = arith.addf %v, %previous : f32
        %slot = arith.addi %rows, %i : index
        tile.store %w, %keys[%slot] : !tile.shared<[512], f32>
      }
    }
    tile.copy %keys to %out[%c0] : !tile.shared<[512], f32> to !tile.global<[512], f32>
  }
}

// -----

tile.kernel @keys_same_slots(%a: !tile.global<[64, 64], bf16>,
                             %k: !tile.global<[?, 64], bf16>,
                             %out: !tile.global<[512], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %sums = tile.alloc : !tile.frag<[64], f32>
    %keys = tile.alloc : !tile.shared<[512], f32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %rows = arith.muli %t, %c64 : index
      %half = arith.muli %t, %c32 : index
      tile.copy %k[%rows, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %k_s, %a_s, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      tile.reduce sum %acc to %sums dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      // Slots t * 32 + i for i < 64: iterations t and t + 1 overlap.
      tile.parallel (%i) in [64] {
        %v = tile.load %sums[%i] : !tile.frag<[64], f32>
        %slot = arith.addi %half, %i : index
        tile.store %v, %keys[%slot] : !tile.shared<[512], f32>
      }
    }
    tile.copy %keys to %out[%c0] : !tile.shared<[512], f32> to !tile.global<[512], f32>
  }
}

// -----

tile.kernel @keys_two_strides(%a: !tile.global<[64, 64], bf16>,
                              %k: !tile.global<[?, 64], bf16>,
                              %out: !tile.global<[1024], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %sums = tile.alloc : !tile.frag<[64], f32>
    %keys = tile.alloc : !tile.shared<[1024], f32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %c96 = arith.constant 96 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %rows = arith.muli %t, %c64 : index
      %wide = arith.muli %t, %c96 : index
      tile.copy %k[%rows, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %k_s, %a_s, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      tile.reduce sum %acc to %sums dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      tile.parallel (%i) in [64] {
        %v = tile.load %sums[%i] : !tile.frag<[64], f32>
        %first = arith.addi %rows, %i : index
        tile.store %v, %keys[%first] : !tile.shared<[1024], f32>
        %w = arith.negf %v : f32
        %second = arith.addi %wide, %i : index
        tile.store %w, %keys[%second] : !tile.shared<[1024], f32>
      }
    }
    tile.copy %keys to %out[%c0] : !tile.shared<[1024], f32> to !tile.global<[1024], f32>
  }
}

// -----

tile.kernel @keys_counted(%a: !tile.global<[64, 64], bf16>,
                  %k: !tile.global<[?, 64], bf16>,
                  %out: !tile.global<[512], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %sums = tile.alloc : !tile.frag<[64], f32>
    %keys = tile.alloc : !tile.shared<[512], f32>
    %count = tile.alloc : !tile.shared<[1], i32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %one = arith.constant 1 : i32
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %rows = arith.muli %t, %c64 : index
      tile.copy %k[%rows, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %k_s, %a_s, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      tile.reduce sum %acc to %sums dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      tile.parallel (%i) in [64] {
        %v = tile.load %sums[%i] : !tile.frag<[64], f32>
        %slot = arith.addi %rows, %i : index
        tile.store %v, %keys[%slot] : !tile.shared<[512], f32>
        %old = tile.atomic add %one, %count[%c0] : !tile.shared<[1], i32>
      }
    }
    tile.copy %keys to %out[%c0] : !tile.shared<[512], f32> to !tile.global<[512], f32>
  }
}

// -----

tile.kernel @keys_through_view(%a: !tile.global<[64, 64], bf16>,
                  %k: !tile.global<[?, 64], bf16>,
                  %out: !tile.global<[512], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %sums = tile.alloc : !tile.frag<[64], f32>
    %keys = tile.alloc : !tile.shared<[512], f32>
    %count = tile.alloc : !tile.shared<[1], i32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %one = arith.constant 1 : i32
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %rows = arith.muli %t, %c64 : index
      tile.copy %k[%rows, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %k_s, %a_s, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      tile.reduce sum %acc to %sums dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      %by_tile = tile.view %keys : !tile.shared<[512], f32> to !tile.shared<[8, 64], f32>
      tile.parallel (%i) in [64] {
        %v = tile.load %sums[%i] : !tile.frag<[64], f32>
        %slot = arith.addi %rows, %i : index
        %tile_index = arith.divui %slot, %c64 : index
        tile.store %v, %by_tile[%tile_index, %i] : !tile.shared<[8, 64], f32>
      }
    }
    tile.copy %keys to %out[%c0] : !tile.shared<[512], f32> to !tile.global<[512], f32>
  }
}

// -----

tile.kernel @keys_two_halves(%a: !tile.global<[64, 64], bf16>,
                  %k: !tile.global<[?, 64], bf16>,
                  %out: !tile.global<[1024], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %sums = tile.alloc : !tile.frag<[64], f32>
    %keys = tile.alloc : !tile.shared<[1024], f32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %second_half = arith.constant 64 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %rows = arith.muli %t, %c64 : index
      %slot0 = arith.muli %t, %c128 : index
      tile.copy %k[%rows, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %k_s, %a_s, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      tile.reduce sum %acc to %sums dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      tile.parallel (%i) in [64] {
        %v = tile.load %sums[%i] : !tile.frag<[64], f32>
        %first = arith.addi %slot0, %i : index
        tile.store %v, %keys[%first] : !tile.shared<[1024], f32>
        %w = arith.negf %v : f32
        %half = arith.addi %second_half, %i : index
        %second = arith.addi %slot0, %half : index
        tile.store %w, %keys[%second] : !tile.shared<[1024], f32>
      }
    }
    tile.copy %keys to %out[%c0] : !tile.shared<[1024], f32> to !tile.global<[1024], f32>
  }
}

// -----

tile.kernel @keys_offset_past_slots(%a: !tile.global<[64, 64], bf16>,
                  %k: !tile.global<[?, 64], bf16>,
                  %out: !tile.global<[1024], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %sums = tile.alloc : !tile.frag<[64], f32>
    %keys = tile.alloc : !tile.shared<[1024], f32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %second_half = arith.constant 96 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %rows = arith.muli %t, %c64 : index
      %slot0 = arith.muli %t, %c128 : index
      tile.copy %k[%rows, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %k_s, %a_s, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      tile.reduce sum %acc to %sums dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      tile.parallel (%i) in [64] {
        %v = tile.load %sums[%i] : !tile.frag<[64], f32>
        %first = arith.addi %slot0, %i : index
        tile.store %v, %keys[%first] : !tile.shared<[1024], f32>
        %w = arith.negf %v : f32
        %half = arith.addi %second_half, %i : index
        %second = arith.addi %slot0, %half : index
        tile.store %w, %keys[%second] : !tile.shared<[1024], f32>
      }
    }
    tile.copy %keys to %out[%c0] : !tile.shared<[1024], f32> to !tile.global<[1024], f32>
  }
}
