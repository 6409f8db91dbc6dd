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

// One element of a RoPE pair rotated, in registers: `own` is the element,
// `partner` the other of its pair (the element at index xor 1, e.g. read
// with tile.load at `arith.xori %j, 1` in a tile.parallel whose layout keeps
// pairs in one thread), `odd` whether the element is the pair's imaginary
// part. Both are bf16 values as stored; the result is rounded to bf16, as a
// separate v4_rope over the stored values would give (inverse: s = -sin).
func.func private @rope_rotate_element(%own: bf16, %partner: bf16, %odd: i1,
                                       %c: f32, %s: f32) -> bf16 {
  %re_b = arith.select %odd, %partner, %own : bf16
  %im_b = arith.select %odd, %own, %partner : bf16
  %re = arith.extf %re_b : bf16 to f32
  %im = arith.extf %im_b : bf16 to f32
  %re_out, %im_out = func.call @rope_rotate(%re, %im, %c, %s)
      : (f32, f32, f32, f32) -> (f32, f32)
  %out = arith.select %odd, %im_out, %re_out : f32
  %rounded = arith.truncf %out : f32 to bf16
  return %rounded : bf16
}

// An attention output's element at column `column` of its 512, rotated
// back by RoPE when `enabled` and the column is one of the last 64 (the
// V4 layer's decode and prefill epilogues): `own` and its pair partner
// (column xor 1) rounded to bf16, `cos` / `sin` the token's table rows in
// shared memory. Every column computes the rotation (with a valid table
// entry) and keeps it or not: a branch per element would hold each load
// behind it.
func.func private @rope_inverse_column(%own: bf16, %partner: bf16, %column: index,
                                       %enabled: i1, %cos: !tile.shared<[32], f32>,
                                       %sin: !tile.shared<[32], f32>) -> bf16 {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c63 = arith.constant 63 : index
  %c448 = arith.constant 448 : index
  %rotated_dim = arith.cmpi uge, %column, %c448 : index
  %rotate = arith.andi %enabled, %rotated_dim : i1
  %in_block = arith.andi %column, %c63 : index
  %pair = arith.divui %in_block, %c2 : index
  %parity = arith.remui %column, %c2 : index
  %odd = arith.cmpi ne, %parity, %c0 : index
  %c = tile.load %cos[%pair] : !tile.shared<[32], f32>
  %s_forward = tile.load %sin[%pair] : !tile.shared<[32], f32>
  %s = arith.negf %s_forward : f32
  %rotated = func.call @rope_rotate_element(%own, %partner, %odd, %c, %s)
      : (bf16, bf16, i1, f32, f32) -> bf16
  %result = arith.select %rotate, %rotated, %own : bf16
  return %result : bf16
}

// The position of token t: sequence t / seq at base[t / seq] + t % seq,
// clamped to the tables' rows (cos [positions, 32]): a negative base
// (a direct caller's) takes row 0, not the last.
func.func private @rope_position(%base: !tile.global<[?], i32>,
                                 %cos: !tile.global<[?, 32], f32>,
                                 %token: index, %seq: index) -> index {
  %c1 = arith.constant 1 : index
  %sequence = arith.divui %token, %seq : index
  %in_sequence = arith.remui %token, %seq : index
  %base_i32 = tile.load %base[%sequence] : !tile.global<[?], i32>
  %base_raw = arith.index_cast %base_i32 : i32 to index
  %unclamped = arith.addi %base_raw, %in_sequence : index
  %c0 = arith.constant 0 : index
  %non_negative = arith.maxsi %unclamped, %c0 : index
  %table = tile.dim %cos, 0 : !tile.global<[?, 32], f32>
  %last_row = arith.subi %table, %c1 : index
  %position = arith.minui %non_negative, %last_row : index
  return %position : index
}

// The V4 layer's inverse RoPE on an attention output the block has just
// stored: the last 64 of the 512 dims of heads [first_head, first_head +
// 64) (those below `heads`) of o[token], rotated back at the token's
// position and stored again, with the arithmetic of v4_rope (inverse = 1)
// on the rounded bf16 values, so the bits are the same as a separate
// v4_rope. The pairs are read back from memory after a barrier (a fragment
// is read only at its own index, and a pair may sit in two threads).
func.func private @rope_inverse_64_heads(%o: !tile.global<[?, ?, 512], bf16>,
                                         %cos: !tile.global<[?, 32], f32>,
                                         %sin: !tile.global<[?, 32], f32>,
                                         %base: !tile.global<[?], i32>,
                                         %token: index, %seq: index,
                                         %first_head: index, %heads: index) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c448 = arith.constant 448 : index
  tile.barrier
  %position = func.call @rope_position(%base, %cos, %token, %seq)
      : (!tile.global<[?], i32>, !tile.global<[?, 32], f32>, index, index) -> index
  tile.parallel (%r, %p) in [64, 32] {
    %h = arith.addi %first_head, %r : index
    %real = arith.cmpi ult, %h, %heads : index
    scf.if %real {
      %pair = arith.muli %p, %c2 : index
      %even = arith.addi %c448, %pair : index
      %odd = arith.addi %even, %c1 : index
      %re_b = tile.load %o[%token, %h, %even] : !tile.global<[?, ?, 512], bf16>
      %im_b = tile.load %o[%token, %h, %odd] : !tile.global<[?, ?, 512], bf16>
      %re = arith.extf %re_b : bf16 to f32
      %im = arith.extf %im_b : bf16 to f32
      %c = tile.load %cos[%position, %p] : !tile.global<[?, 32], f32>
      %s_forward = tile.load %sin[%position, %p] : !tile.global<[?, 32], f32>
      %s = arith.negf %s_forward : f32
      %re_out, %im_out = func.call @rope_rotate(%re, %im, %c, %s)
          : (f32, f32, f32, f32) -> (f32, f32)
      %re_r = arith.truncf %re_out : f32 to bf16
      %im_r = arith.truncf %im_out : f32 to bf16
      tile.store %re_r, %o[%token, %h, %even] : !tile.global<[?, ?, 512], bf16>
      tile.store %im_r, %o[%token, %h, %odd] : !tile.global<[?, ?, 512], bf16>
    }
  }
  return
}

// The V4 layer's query preparation, on a block's 64 query heads in shared
// memory (sparse attention's prologue): each 512-dim head normalized
// (RMSNorm with weight 1: q * rsqrt(mean(q^2) + eps), rounded to bf16),
// then its last 64 dims rotated by RoPE with the position's table rows cos
// and sin (staged in shared memory by the caller; rounded to bf16), as
// v4_norm_rope does; not its bits, since the squares add up in another
// order. The heads pass through registers a half (256 columns) at a time:
// half, squares and sums (the heads' sums of squares) are the caller's
// scratch. (Rotating the pairs in registers during the second half's pass,
// with partner reads, measured 7 us slower at decode: each element's
// cos/sin loads sat behind its own branch, one latency after another. GPU
// run 68.)
func.func private @norm_rope_query_heads(%q_s: !tile.shared<[64, 512], bf16>,
                                         %half: !tile.frag<[64, 256], bf16>,
                                         %squares: !tile.frag<[64, 256], f32>,
                                         %sums: !tile.shared<[64], f32>,
                                         %cos: !tile.shared<[32], f32>,
                                         %sin: !tile.shared<[32], f32>,
                                         %eps: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c256 = arith.constant 256 : index
  %c448 = arith.constant 448 : index
  %zero = arith.constant 0.0 : f32
  %dim = arith.constant 512.0 : f32
  tile.fill %sums, %zero : !tile.shared<[64], f32>, f32
  scf.for %part = %c0 to %c2 step %c1 {
    %column = arith.muli %part, %c256 : index
    tile.copy %q_s[%c0, %column] to %half
        : !tile.shared<[64, 512], bf16> to !tile.frag<[64, 256], bf16>
    tile.parallel (%i, %j) in [64, 256] {
      %v = tile.load %half[%i, %j] : !tile.frag<[64, 256], bf16>
      %f = arith.extf %v : bf16 to f32
      %square = arith.mulf %f, %f : f32
      tile.store %square, %squares[%i, %j] : !tile.frag<[64, 256], f32>
    }
    tile.reduce sum %squares to %sums dim = 1 accumulate
        : !tile.frag<[64, 256], f32> to !tile.shared<[64], f32>
  }
  // (Each head's scale is computed where it is used: a [64] parallel
  // would run replicated over the 256 threads, and rewriting the sums in
  // place there raced (racecheck, GPU run 59). A thread's elements of one
  // head read the same sum, so LLVM computes its scale once.)
  scf.for %part = %c0 to %c2 step %c1 {
    %column = arith.muli %part, %c256 : index
    tile.copy %q_s[%c0, %column] to %half
        : !tile.shared<[64, 512], bf16> to !tile.frag<[64, 256], bf16>
    tile.parallel (%i, %j) in [64, 256] {
      %v = tile.load %half[%i, %j] : !tile.frag<[64, 256], bf16>
      %total = tile.load %sums[%i] : !tile.shared<[64], f32>
      %mean = arith.divf %total, %dim : f32
      %shifted = arith.addf %mean, %eps : f32
      %inverse = math.rsqrt %shifted : f32
      %f = arith.extf %v : bf16 to f32
      %normed = arith.mulf %f, %inverse : f32
      tile.store %normed, %squares[%i, %j] : !tile.frag<[64, 256], f32>
    }
    tile.cast %squares to %half : !tile.frag<[64, 256], f32> to !tile.frag<[64, 256], bf16>
    // Every thread has read the half before any overwrites it (the copies
    // need not give each thread the same elements both ways: racecheck,
    // GPU run 58).
    tile.barrier
    tile.copy %half to %q_s[%c0, %column]
        : !tile.frag<[64, 256], bf16> to !tile.shared<[64, 512], bf16>
  }
  tile.barrier
  tile.parallel (%r, %p) in [64, 32] {
    %pair = arith.muli %p, %c2 : index
    %even = arith.addi %c448, %pair : index
    %odd = arith.addi %even, %c1 : index
    %re_b = tile.load %q_s[%r, %even] : !tile.shared<[64, 512], bf16>
    %im_b = tile.load %q_s[%r, %odd] : !tile.shared<[64, 512], bf16>
    %re = arith.extf %re_b : bf16 to f32
    %im = arith.extf %im_b : bf16 to f32
    %c = tile.load %cos[%p] : !tile.shared<[32], f32>
    %s = tile.load %sin[%p] : !tile.shared<[32], f32>
    %re_out, %im_out = func.call @rope_rotate(%re, %im, %c, %s)
        : (f32, f32, f32, f32) -> (f32, f32)
    %re_r = arith.truncf %re_out : f32 to bf16
    %im_r = arith.truncf %im_out : f32 to bf16
    tile.store %re_r, %q_s[%r, %even] : !tile.shared<[64, 512], bf16>
    tile.store %im_r, %q_s[%r, %odd] : !tile.shared<[64, 512], bf16>
  }
  return
}
