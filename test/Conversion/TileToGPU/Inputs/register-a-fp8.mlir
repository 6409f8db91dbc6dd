// fp8 Q as a register A operand beside an accumulator of its own shape
// ([64, 128] at kt = 128): two fragments of one shape, two layouts.
tile.kernel @register_a_fp8(
    %q: !tile.global<[?, 64, 128], f8E4M3FN>,
    %k: !tile.global<[?, 128], f8E4M3FN>,
    %out: !tile.global<[?, 64, kt], f32>)
    params {iters = 64, min_blocks = 3, kt = 128} {
  %m = tile.dim %q, 0 : !tile.global<[?, 64, 128], f8E4M3FN>
  tile.launch (%bx) in (%m) threads 128 blocks_per_sm "min_blocks" {
    %q_frag = tile.alloc : !tile.frag<[64, 128], f8E4M3FN>
    %k_tile = tile.alloc : !tile.shared<[kt, 128], f8E4M3FN>
    %scores = tile.alloc : !tile.frag<[64, kt], f32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %iters = tile.param "iters" : index
    %blk = arith.remui %bx, %c64 : index
    %row0 = arith.muli %blk, %c64 : index
    tile.copy %q[%bx, %c0, %c0] to %q_frag
        : !tile.global<[?, 64, 128], f8E4M3FN> to !tile.frag<[64, 128], f8E4M3FN>
    tile.copy %k[%row0, %c0] to %k_tile
        : !tile.global<[?, 128], f8E4M3FN> to !tile.shared<[kt, 128], f8E4M3FN>
    tile.fill %scores, %zero : !tile.frag<[64, kt], f32>, f32
    scf.for %t = %c0 to %iters step %c1 {
      tile.gemm %q_frag, %k_tile, %scores transpose_b
          : !tile.frag<[64, 128], f8E4M3FN>, !tile.shared<[kt, 128], f8E4M3FN>
            -> !tile.frag<[64, kt], f32>
    }
    tile.copy %scores to %out[%bx, %c0, %c0]
        : !tile.frag<[64, kt], f32> to !tile.global<[?, 64, kt], f32>
  }
}
