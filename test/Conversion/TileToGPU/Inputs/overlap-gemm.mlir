// A warp-specialized loop with overlap_gemm: the next key tile's gemm is
// issued before this tile's epilogue (a ReLU row sum into shared memory).
tile.kernel @overlap_gemm(%q: !tile.global<[64, 64], bf16>,
                          %k: !tile.global<[?, 64], bf16>,
                          %out: !tile.global<[?], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %sums = tile.alloc : !tile.frag<[64], f32>
    %rows = tile.alloc : !tile.shared<[1024], f32>
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %n = tile.dim %k, 0 : !tile.global<[?, 64], bf16>
    %tiles = arith.divui %n, %c64 : index
    tile.copy %q[%c0, %c0] to %q_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.pipelined %t = %c0 to %tiles step %c1 num_stages = 3 warp_specialized overlap_gemm {
      %first = arith.muli %t, %c64 : index
      tile.copy %k[%first, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %k_s, %q_s, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      tile.parallel (%i, %h) in [64, 64] {
        %x = tile.load %acc[%i, %h] : !tile.frag<[64, 64], f32>
        %relu = arith.maximumf %x, %zero : f32
        tile.store %relu, %acc[%i, %h] : !tile.frag<[64, 64], f32>
      }
      tile.reduce sum %acc to %sums dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      tile.parallel (%i) in [64] {
        %v = tile.load %sums[%i] : !tile.frag<[64], f32>
        %slot = arith.addi %first, %i : index
        %c1023 = arith.constant 1023 : index
        %wrapped = arith.andi %slot, %c1023 : index
        tile.store %v, %rows[%wrapped] : !tile.shared<[1024], f32>
      }
    }
    tile.copy %rows to %out[%c0] : !tile.shared<[1024], f32> to !tile.global<[?], f32>
  }
}
