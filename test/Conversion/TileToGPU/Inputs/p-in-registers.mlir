// P in registers: the bf16 cast of a wgmma accumulator (attention scores
// S = Q K^T) is the A operand of the next wgmma (O = P V) straight from the
// registers: the accumulator layout of a [64, 64] tile and wgmma's 16-bit
// A-operand layout are the same layout (written as different maps), so the
// cast needs no shared memory. A GPU test (python/tests/test_p_in_registers.py).
tile.kernel @p_in_registers(%q: !tile.global<[64, 64], bf16>, %k: !tile.global<[64, 64], bf16>,
                            %v: !tile.global<[64, 64], bf16>, %o: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %v_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %s = tile.alloc : !tile.frag<[64, 64], f32>
    %p = tile.alloc : !tile.frag<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    tile.copy %q[%c0, %c0] to %q_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %k[%c0, %c0] to %k_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %v[%c0, %c0] to %v_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.gemm %q_s, %k_s, %s transpose_b clear_accum : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.cast %s to %p : !tile.frag<[64, 64], f32> to !tile.frag<[64, 64], bf16>
    tile.gemm %p, %v_s, %acc clear_accum : !tile.frag<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.copy %acc to %o[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}
