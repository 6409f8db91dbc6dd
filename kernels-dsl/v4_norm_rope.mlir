// v4_rmsnorm then v4_rope, in one launch: the V4 layer's per-head q norm
// (RMSNorm of each 512-dim head, weight 1) followed by RoPE of its last 64
// dims at the token's position (python/hisa/v4/reference.py: rmsnorm, then
// rope), in place on x [tokens, heads, dim] bf16. The same arithmetic as
// the two kernels (the normalized value rounds to bf16 before it rotates),
// so results are bit-identical; the second launch on decode's critical path
// and a round trip of q through memory are saved. cos, sin [positions, 32]
// f32 tables; token t of sequence t / seq is at position base[t / seq] +
// t % seq (positions past the tables read their last row). One block per
// (token, head) row.

func.func private @rope_rotate(f32, f32, f32, f32) -> (f32, f32)
func.func private @rope_position(!tile.global<[?], i32>, !tile.global<[?, 32], f32>,
                                 index, index) -> index

func.func private @rms_scale(!tile.frag<[n], f32>, !tile.frag<[n], f32>,
                             !tile.frag<[n], f32>, !tile.frag<[n], bf16>,
                             !tile.local<[1], f32>, f32, f32)

tile.kernel @v4_norm_rope(%x: !tile.global<[?, ?, dim], bf16>,
                          %weight: !tile.global<[dim], f32>,
                          %cos: !tile.global<[?, 32], f32>,
                          %sin: !tile.global<[?, 32], f32>,
                          %base: !tile.global<[?], i32>,
                          %seq: index,
                          %eps: f32)
    params {dim = 512} {
  %tokens = tile.dim %x, 0 : !tile.global<[?, ?, dim], bf16>
  %heads = tile.dim %x, 1 : !tile.global<[?, ?, dim], bf16>
  %rows = arith.muli %tokens, %heads : index
  tile.launch (%row) in (%rows) threads 128 {
    %values = tile.alloc : !tile.frag<[dim], bf16>
    %wide = tile.alloc : !tile.frag<[dim], f32>
    %squares = tile.alloc : !tile.frag<[dim], f32>
    %result = tile.alloc : !tile.frag<[dim], bf16>
    %weights = tile.alloc : !tile.frag<[dim], f32>
    %normed = tile.alloc : !tile.shared<[dim], bf16>
    %sum = tile.alloc : !tile.local<[1], f32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %t = arith.divui %row, %heads : index
    %h = arith.remui %row, %heads : index
    tile.copy %weight[%c0] to %weights : !tile.global<[dim], f32> to !tile.frag<[dim], f32>
    tile.copy %x[%t, %h, %c0] to %values : !tile.global<[?, ?, dim], bf16> to !tile.frag<[dim], bf16>
    // RMSNorm, as v4_rmsnorm.
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
    // The row leaves whole (16-byte stores); the rotated last 64 dims are
    // written again after the barrier, from the row kept in shared memory
    // (a pair's two values live in different threads' registers).
    tile.copy %result to %normed : !tile.frag<[dim], bf16> to !tile.shared<[dim], bf16>
    tile.copy %result to %x[%t, %h, %c0] : !tile.frag<[dim], bf16> to !tile.global<[?, ?, dim], bf16>
    tile.barrier
    // RoPE, as v4_rope.
    %position = func.call @rope_position(%base, %cos, %t, %seq)
        : (!tile.global<[?], i32>, !tile.global<[?, 32], f32>, index, index) -> index
    %rope_first = arith.subi %dim_index, %c64 : index
    tile.parallel (%p) in [32] {
      %pair = arith.muli %p, %c2 : index
      %even = arith.addi %rope_first, %pair : index
      %odd = arith.addi %even, %c1 : index
      %re_b = tile.load %normed[%even] : !tile.shared<[dim], bf16>
      %im_b = tile.load %normed[%odd] : !tile.shared<[dim], bf16>
      %re = arith.extf %re_b : bf16 to f32
      %im = arith.extf %im_b : bf16 to f32
      %c = tile.load %cos[%position, %p] : !tile.global<[?, 32], f32>
      %s = tile.load %sin[%position, %p] : !tile.global<[?, 32], f32>
      %re_out, %im_out = func.call @rope_rotate(%re, %im, %c, %s)
          : (f32, f32, f32, f32) -> (f32, f32)
      %re_r = arith.truncf %re_out : f32 to bf16
      %im_r = arith.truncf %im_out : f32 to bf16
      tile.store %re_r, %x[%t, %h, %even] : !tile.global<[?, ?, dim], bf16>
      tile.store %im_r, %x[%t, %h, %odd] : !tile.global<[?, ?, dim], bf16>
    }
  }
}
