// Row statistics across warpgroups: two warpgroups split the columns of the
// scores S = A B^T [64, 64] (policy full_col), so a row's maximum combines
// both halves through the reduction scratch; every thread that holds part of
// the row reads the result at its row index, also inside a parallel over
// another accumulator of the same rows (O = A C^T [64, 128]), as online
// softmax rescales its output. out_s = S - rowmax(S); out_o = O * rowmax(S).
tile.kernel @row_max_warpgroups(%a: !tile.global<[64, 64], bf16>,
                                %b: !tile.global<[64, 64], bf16>,
                                %c: !tile.global<[128, 64], bf16>,
                                %out_s: !tile.global<[64, 64], f32>,
                                %out_o: !tile.global<[64, 128], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %b_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %c_s = tile.alloc : !tile.shared<[128, 64], bf16>
    %scores = tile.alloc : !tile.frag<[64, 64], f32>
    %acc = tile.alloc : !tile.frag<[64, 128], f32>
    %row_max = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %b[%c0, %c0] to %b_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %c[%c0, %c0] to %c_s : !tile.global<[128, 64], bf16> to !tile.shared<[128, 64], bf16>
    tile.gemm %a_s, %b_s, %scores transpose_b clear_accum policy(full_col)
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.gemm %a_s, %c_s, %acc transpose_b clear_accum policy(full_col)
        : !tile.shared<[64, 64], bf16>, !tile.shared<[128, 64], bf16> -> !tile.frag<[64, 128], f32>
    tile.reduce max %scores to %row_max dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
    tile.parallel (%i, %j) in [64, 64] {
      %x = tile.load %scores[%i, %j] : !tile.frag<[64, 64], f32>
      %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
      %shifted = arith.subf %x, %m : f32
      tile.store %shifted, %out_s[%i, %j] : !tile.global<[64, 64], f32>
    }
    tile.parallel (%i, %j) in [64, 128] {
      %x = tile.load %acc[%i, %j] : !tile.frag<[64, 128], f32>
      %m = tile.load %row_max[%i] : !tile.frag<[64], f32>
      %scaled = arith.mulf %x, %m : f32
      tile.store %scaled, %out_o[%i, %j] : !tile.global<[64, 128], f32>
    }
  }
}
