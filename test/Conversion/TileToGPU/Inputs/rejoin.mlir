// tile.rejoin after a warp-specialized loop: the row sums of each key tile
// go to shared memory in the loop (the consumers), then every thread of the
// block, the producer's included, scans them and writes them out.
tile.kernel @rejoin(%q: !tile.global<[64, 64], bf16>,
                    %k: !tile.global<[?, 64], bf16>,
                    %out: !tile.global<[?], i32>) {
  %c1 = arith.constant 1 : index
  %blocks = tile.dim %k, 0 : !tile.global<[?, 64], bf16>
  tile.launch (%bx) in (%c1) threads 128 blocks_per_sm 2 {
    %q_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %sums = tile.alloc : !tile.frag<[64], f32>
    %rows = tile.alloc : !tile.shared<[256], i32>
    %prefix = tile.alloc : !tile.shared<[256], i32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    tile.copy %q[%c0, %c0] to %q_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 warp_specialized {
      %first = arith.muli %t, %c64 : index
      tile.copy %k[%first, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %k_s, %q_s, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      tile.reduce sum %acc to %sums dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      tile.parallel (%i) in [64] {
        %v = tile.load %sums[%i] : !tile.frag<[64], f32>
        %slot = arith.addi %first, %i : index
        %bits = arith.fptosi %v : f32 to i32
        tile.store %bits, %rows[%slot] : !tile.shared<[256], i32>
      }
    }
    tile.rejoin {
      %total = tile.scan sum %rows to %prefix : !tile.shared<[256], i32> to !tile.shared<[256], i32>
      tile.parallel (%warp, %lane) in [8, 32] {
        %c32 = arith.constant 32 : index
        %base = arith.muli %warp, %c32 : index
        %i = arith.addi %base, %lane : index
        %v = tile.load %prefix[%i] : !tile.shared<[256], i32>
        %shifted = arith.addi %i, %bx : index
        tile.store %v, %out[%shifted] : !tile.global<[?], i32>
      }
    }
  }
}
