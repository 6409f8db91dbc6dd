// hisa's device library: RoPE's rotation of one interleaved pair
// (python/hisa/v4/reference.py: rope), (re + i im) * (c + i s), with the
// products fused explicitly: every kernel that rotates (v4_rope,
// v4_norm_rope, sparse_attn_combine's rope = 1) rounds the same way, rather
// than as LLVM happens to contract each one's multiplies and adds (GPU run
// 51: it had fused different products in two of them). Inverse rotations
// pass s = -sin.
func.func private @rope_rotate(%re: f32, %im: f32, %c: f32, %s: f32) -> (f32, f32) {
  %im_s = arith.mulf %im, %s : f32
  %minus_im_s = arith.negf %im_s : f32
  %re_out = math.fma %re, %c, %minus_im_s : f32
  %im_c = arith.mulf %im, %c : f32
  %im_out = math.fma %re, %s, %im_c : f32
  return %re_out, %im_out : f32, f32
}
