// RoPE of the DeepSeek-V4 attention layer, in place on the last 64 dims of
// each head: the q heads after their norm, the kv row, the attention output
// (inverse = 1: rotated back). Interleaved pairs (x[2i], x[2i+1]) of the
// last 64 dims rotate by the angle of pair i at the token's position
// (python/hisa/v4/reference.py: rope): cos and sin come from the layer's
// tables [positions, 32] f32, computed once on the host as the reference
// computes them, so kernel and reference rotate by the same numbers.
// x [tokens, heads, dim] bf16 (dim 512: attention heads; 128: the CSA
// indexer's q heads); token t of sequence b = t / seq is at position
// base[b] + t % seq (a prefill from 0: base = 0; a decode step: seq = 1 and
// base the sequences' positions, in device memory so that a captured CUDA
// graph replays at the current positions). Positions outside the tables
// read their last row instead of memory past them. One block per token.

func.func private @rope_rotate(f32, f32, f32, f32) -> (f32, f32)
func.func private @rope_position(!tile.global<[?], i32>, !tile.global<[?, 32], f32>,
                                 index, index) -> index

tile.kernel @v4_rope(%x: !tile.global<[?, ?, dim], bf16>,
                     %cos: !tile.global<[?, 32], f32>,
                     %sin: !tile.global<[?, 32], f32>,
                     %base: !tile.global<[?], i32>,
                     %seq: index)
    params {inverse = 0, dim = 512} {
  %tokens = tile.dim %x, 0 : !tile.global<[?, ?, dim], bf16>
  tile.launch (%t) in (%tokens) threads 128 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %dim = tile.param "dim" : index
    %rope_first = arith.subi %dim, %c64 : index
    %heads = tile.dim %x, 1 : !tile.global<[?, ?, dim], bf16>
    %position = func.call @rope_position(%base, %cos, %t, %seq)
        : (!tile.global<[?], i32>, !tile.global<[?, 32], f32>, index, index) -> index
    %inverse_param = tile.param "inverse" : index
    %inverse = arith.cmpi ne, %inverse_param, %c0 : index
    // 4 heads of 32 pairs per step: 128 threads, one pair each.
    scf.for %h0 = %c0 to %heads step %c4 {
      tile.parallel (%hh, %p) in [4, 32] {
        %h = arith.addi %h0, %hh : index
        %real = arith.cmpi ult, %h, %heads : index
        scf.if %real {
          %pair = arith.muli %p, %c2 : index
          %even = arith.addi %rope_first, %pair : index
          %odd = arith.addi %even, %c1 : index
          %re_b = tile.load %x[%t, %h, %even] : !tile.global<[?, ?, dim], bf16>
          %im_b = tile.load %x[%t, %h, %odd] : !tile.global<[?, ?, dim], bf16>
          %re = arith.extf %re_b : bf16 to f32
          %im = arith.extf %im_b : bf16 to f32
          %c = tile.load %cos[%position, %p] : !tile.global<[?, 32], f32>
          %s_forward = tile.load %sin[%position, %p] : !tile.global<[?, 32], f32>
          %s_back = arith.negf %s_forward : f32
          %s = arith.select %inverse, %s_back, %s_forward : f32
          %re_out, %im_out = func.call @rope_rotate(%re, %im, %c, %s)
              : (f32, f32, f32, f32) -> (f32, f32)
          %re_r = arith.truncf %re_out : f32 to bf16
          %im_r = arith.truncf %im_out : f32 to bf16
          tile.store %re_r, %x[%t, %h, %even] : !tile.global<[?, ?, dim], bf16>
          tile.store %im_r, %x[%t, %h, %odd] : !tile.global<[?, ?, dim], bf16>
        }
      }
    }
  }
}
