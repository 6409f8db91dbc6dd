// Column sums of a wgmma accumulator (a reduction across the four warps):
// each thread holds 16 partials (2 rows x 16 columns, the rows summed in
// registers), over the 8 lanes that share its columns.
tile.kernel @column_sums(%a: !tile.global<[64, 64], bf16>, %b: !tile.global<[64, 64], bf16>,
                         %out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %b_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %sums = tile.alloc : !tile.shared<[64], f32>
    %c0 = arith.constant 0 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %b[%c0, %c0] to %b_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.gemm %a_s, %b_s, %acc transpose_b clear_accum
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.reduce sum %acc to %sums dim = 0
        : !tile.frag<[64, 64], f32> to !tile.shared<[64], f32>
    tile.copy %sums to %out[%c0] : !tile.shared<[64], f32> to !tile.global<[64], f32>
  }
}

// -----

// Row maxima of the same accumulator stay in the warp: the butterfly, whose
// result every lane of a quad holds.
tile.kernel @row_maxima(%a: !tile.global<[64, 64], bf16>, %b: !tile.global<[64, 64], bf16>,
                        %out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %b_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %m = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    tile.copy %a[%c0, %c0] to %a_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %b[%c0, %c0] to %b_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.gemm %a_s, %b_s, %acc transpose_b clear_accum
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.reduce max %acc to %m dim = 1
        : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
    tile.copy %m to %out[%c0] : !tile.frag<[64], f32> to !tile.global<[64], f32>
  }
}

// -----

// Row sums of a plain [32, 32] fragment in one warp (8 rows a thread, the
// columns over lanes 0-2): the result leaves through the scratch (each
// thread then holds one row), so the lanes scatter too: 4 + 2 + 1.
tile.kernel @warp_row_sums(%x: !tile.global<[32, 32], f32>, %out: !tile.global<[32], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %v = tile.alloc : !tile.frag<[32, 32], f32>
    %s = tile.alloc : !tile.frag<[32], f32>
    %c0 = arith.constant 0 : index
    tile.copy %x[%c0, %c0] to %v : !tile.global<[32, 32], f32> to !tile.frag<[32, 32], f32>
    tile.reduce sum %v to %s dim = 1 : !tile.frag<[32, 32], f32> to !tile.frag<[32], f32>
    tile.copy %s to %out[%c0] : !tile.frag<[32], f32> to !tile.global<[32], f32>
  }
}
