// A wide output (V4 attention's [64 heads, 512] f32 accumulator): two
// warpgroups split the N = 512 columns (policy full_col), 128 f32 per
// thread, m64n256k16 wgmma each; no register spills.
tile.kernel @wide_output(%p: !tile.global<[64, 64], bf16>, %v: !tile.global<[64, 512], bf16>, %o: !tile.global<[64, 512], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %p_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %v_s = tile.alloc : !tile.shared<[64, 512], bf16>
    %acc = tile.alloc : !tile.frag<[64, 512], f32>
    %c0 = arith.constant 0 : index
    tile.copy %p[%c0, %c0] to %p_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %v[%c0, %c0] to %v_s : !tile.global<[64, 512], bf16> to !tile.shared<[64, 512], bf16>
    tile.gemm %p_s, %v_s, %acc clear_accum policy(full_col) : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 512], bf16> -> !tile.frag<[64, 512], f32>
    tile.copy %acc to %o[%c0, %c0] : !tile.frag<[64, 512], f32> to !tile.global<[64, 512], f32>
  }
}
