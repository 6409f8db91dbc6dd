// The TMA half of warp-specialized-gather.mlir's description (ws_tma).
tile.kernel @ws_tma(%a: !tile.global<[64, 64], bf16>, %b: !tile.global<[?, 64], bf16>,
                    %out: !tile.global<[64, 128], f32>) {
  %c1 = arith.constant 1 : index
  %rows = tile.dim %b, 0 : !tile.global<[?, 64], bf16>
  tile.launch (%bx) in (%c1) threads 256 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %b_s = tile.alloc : !tile.shared<[128, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 128], f32>
    %c0 = arith.constant 0 : index
    %c127 = arith.constant 127 : index
    %c128 = arith.constant 128 : index
    %zero = arith.constant 0.0 : f32
    %n = tile.dim %b, 0 : !tile.global<[?, 64], bf16>
    %rounded = arith.addi %n, %c127 : index
    %tiles = arith.divui %rounded, %c128 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.fill %acc, %zero : !tile.frag<[64, 128], f32>, f32
    tile.pipelined %t = %c0 to %tiles step %c1 num_stages = 3 warp_specialized {
      %first = arith.muli %t, %c128 : index
      tile.copy %b[%first, %c0] to %b_s : !tile.global<[?, 64], bf16> to !tile.shared<[128, 64], bf16>
      tile.gemm %a_s, %b_s, %acc transpose_b policy(full_col)
          : !tile.shared<[64, 64], bf16>, !tile.shared<[128, 64], bf16> -> !tile.frag<[64, 128], f32>
    }
    tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 128], f32> to !tile.global<[64, 128], f32>
  }
}
