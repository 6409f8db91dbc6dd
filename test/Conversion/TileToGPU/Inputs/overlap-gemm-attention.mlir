// overlap_gemm with gathered rows and a second gemm (decode attention's
// shape, without its softmax): tile t + 1's scores S = Q K^T are issued
// before tile t's P = bf16(S) goes through shared memory into O += P V,
// which reads the same gathered rows as values.
tile.kernel @overlap_gemm_attention(%q: !tile.global<[64, 64], bf16>,
                                    %kv: !tile.global<[?, 64], bf16>,
                                    %idx: !tile.global<[256], i32>,
                                    %o: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %rows = tile.alloc : !tile.shared<[256], i32>
    %kv_s = tile.alloc : !tile.shared<[32, 64], bf16>
    %p_s = tile.alloc : !tile.shared<[64, 32], bf16>
    %s = tile.alloc : !tile.frag<[64, 32], f32>
    %p = tile.alloc : !tile.frag<[64, 32], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %zero = arith.constant 0.0 : f32
    tile.copy %q[%c0, %c0] to %q_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %idx[%c0] to %rows : !tile.global<[256], i32> to !tile.shared<[256], i32>
    tile.fill %acc, %zero : !tile.frag<[64, 64], f32>, f32
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 3 warp_specialized overlap_gemm {
      %first = arith.muli %t, %c32 : index
      tile.copy %kv rows(%rows[%first] : !tile.shared<[256], i32>) to %kv_s
          : !tile.global<[?, 64], bf16> to !tile.shared<[32, 64], bf16>
      tile.gemm %q_s, %kv_s, %s transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[32, 64], bf16> -> !tile.frag<[64, 32], f32>
      tile.cast %s to %p : !tile.frag<[64, 32], f32> to !tile.frag<[64, 32], bf16>
      tile.copy %p to %p_s : !tile.frag<[64, 32], bf16> to !tile.shared<[64, 32], bf16>
      tile.gemm %p_s, %kv_s, %acc
          : !tile.shared<[64, 32], bf16>, !tile.shared<[32, 64], bf16> -> !tile.frag<[64, 64], f32>
    }
    tile.copy %acc to %o[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}
