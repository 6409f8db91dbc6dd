// The producer of a warp-specialized loop recomputes a copy's row from an
// element of a tile.gemm operand (a swizzled shared tile): it reads that
// element through the swizzle too (%a_s is a gemm operand before the loop;
// only loads read it inside).
tile.kernel @producer_reads_operand(%a: !tile.global<[64, 64], bf16>,
                                    %k: !tile.global<[?, 64], bf16>,
                                    %out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %q_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %a[%c0, %c0] to %q_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.gemm %a_s, %a_s, %acc transpose_b clear_accum
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %x = tile.load %a_s[%c1, %t] : !tile.shared<[64, 64], bf16>
      %block_i32 = arith.fptosi %x : bf16 to i32
      %block = arith.index_cast %block_i32 : i32 to index
      %rows = arith.muli %block, %c64 : index
      tile.copy %k[%rows, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %k_s, %q_s, %acc transpose_b
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    }
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}
