// RMSNorm of the DeepSeek-V4 attention layer (q_norm after wq_a, kv_norm
// after wkv, the compressors' norms): out[r] = x[r] * rsqrt(mean(x[r]^2) +
// eps) * weight, math in f32, x and out bf16 [rows, dim], weight f32 [dim]
// (python/hisa/v4/reference.py: rmsnorm). One block per row; its dim values
// stay in registers between the sum of squares and the scaling.

func.func private @rms_scale(!tile.frag<[n], f32>, !tile.frag<[n], f32>,
                             !tile.frag<[n], f32>, !tile.frag<[n], bf16>,
                             !tile.local<[1], f32>, f32, f32)

tile.kernel @v4_rmsnorm(%x: !tile.global<[?, dim], bf16>,
                        %weight: !tile.global<[dim], f32>,
                        %out: !tile.global<[?, dim], bf16>,
                        %eps: f32)
    params {dim = 4096} {
  %rows = tile.dim %x, 0 : !tile.global<[?, dim], bf16>
  tile.launch (%row) in (%rows) threads 128 {
    %values = tile.alloc : !tile.frag<[dim], bf16>
    %wide = tile.alloc : !tile.frag<[dim], f32>
    %squares = tile.alloc : !tile.frag<[dim], f32>
    %result = tile.alloc : !tile.frag<[dim], bf16>
    %weights = tile.alloc : !tile.frag<[dim], f32>
    %sum = tile.alloc : !tile.local<[1], f32>
    %c0 = arith.constant 0 : index
    tile.copy %weight[%c0] to %weights : !tile.global<[dim], f32> to !tile.frag<[dim], f32>
    tile.copy %x[%row, %c0] to %values : !tile.global<[?, dim], bf16> to !tile.frag<[dim], bf16>
    tile.parallel (%j) in [dim] {
      %v = tile.load %values[%j] : !tile.frag<[dim], bf16>
      %f = arith.extf %v : bf16 to f32
      %sq = arith.mulf %f, %f : f32
      tile.store %f, %wide[%j] : !tile.frag<[dim], f32>
      tile.store %sq, %squares[%j] : !tile.frag<[dim], f32>
    }
    %dim_index = tile.param "dim" : index
    %dim_i64 = arith.index_cast %dim_index : index to i64
    %dim_f = arith.sitofp %dim_i64 : i64 to f32
    tile.call @rms_scale(%wide, %squares, %weights, %result, %sum, %dim_f, %eps)
        : (!tile.frag<[dim], f32>, !tile.frag<[dim], f32>, !tile.frag<[dim], f32>,
           !tile.frag<[dim], bf16>, !tile.local<[1], f32>, f32, f32) -> ()
    tile.copy %result to %out[%row, %c0] : !tile.frag<[dim], bf16> to !tile.global<[?, dim], bf16>
  }
}
