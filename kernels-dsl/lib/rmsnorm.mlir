// hisa's device library: the second half of the V4 layer's RMSNorm
// (python/hisa/v4/reference.py: rmsnorm), shared by v4_rmsnorm,
// v4_norm_rope and linear_reduce_rmsnorm so that all three round alike:
// result = bf16(x * rsqrt(sum(squares) / n + eps) * weights), from the row's
// values in f32 (`wide`) and their squares, with `sum` the block's scratch.
func.func private @rms_scale(%wide: !tile.frag<[n], f32>,
                             %squares: !tile.frag<[n], f32>,
                             %weights: !tile.frag<[n], f32>,
                             %result: !tile.frag<[n], bf16>,
                             %sum: !tile.local<[1], f32>,
                             %n_f: f32, %eps: f32) {
  %c0 = arith.constant 0 : index
  tile.reduce sum %squares to %sum dim = 0 : !tile.frag<[n], f32> to !tile.local<[1], f32>
  %total = tile.load %sum[%c0] : !tile.local<[1], f32>
  %mean = arith.divf %total, %n_f : f32
  %shifted = arith.addf %mean, %eps : f32
  %inverse = math.rsqrt %shifted : f32
  tile.parallel (%j) in [n] {
    %f = tile.load %wide[%j] : !tile.frag<[n], f32>
    %w = tile.load %weights[%j] : !tile.frag<[n], f32>
    %scaled = arith.mulf %f, %inverse : f32
    %y = arith.mulf %scaled, %w : f32
    %rounded = arith.truncf %y : f32 to bf16
    tile.store %rounded, %result[%j] : !tile.frag<[n], bf16>
  }
  return
}
