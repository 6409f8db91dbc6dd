// A tile.gemm B operand written element by element: a tile.parallel turns
// the query's f32 weights into a [8, 64] bf16 tile (column 0 the weights,
// the rest zero), then a pipelined loop sums a key tile's ReLU'd scores
// against it with a second gemm, the scores' bf16 cast as register A, in
// an scf.if after the first gemm (HISA stage 2's head sum on the tensor
// cores). Everything the loop runs before the second gemm writes only
// registers, so that gemm needs no fence and barrier of its own: the
// weights were fenced before the loop.
tile.kernel @head_sum_on_tensor_cores(%q: !tile.global<[64, 64], bf16>,
                                      %k: !tile.global<[?, 64], bf16>,
                                      %w: !tile.global<[64], f32>,
                                      %out: !tile.global<[512], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %w_s = tile.alloc : !tile.shared<[64], f32>
    %w_b = tile.alloc : !tile.shared<[8, 64], bf16>
    %scores = tile.alloc : !tile.frag<[64, 64], f32>
    %relu = tile.alloc : !tile.frag<[64, 64], bf16>
    %sums = tile.alloc : !tile.frag<[64, 8], f32>
    %row = tile.alloc : !tile.frag<[64], f32>
    %keys = tile.alloc : !tile.shared<[512], f32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %zero_b = arith.constant 0.0 : bf16
    tile.copy %q[%c0, %c0] to %q_s : !tile.global<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.copy %w[%c0] to %w_s : !tile.global<[64], f32> to !tile.shared<[64], f32>
    tile.parallel (%c, %h) in [8, 64] {
      %v = tile.load %w_s[%h] : !tile.shared<[64], f32>
      %vb = arith.truncf %v : f32 to bf16
      %first = arith.cmpi eq, %c, %c0 : index
      %wb = arith.select %first, %vb, %zero_b : bf16
      tile.store %wb, %w_b[%c, %h] : !tile.shared<[8, 64], bf16>
    }
    tile.pipelined %t = %c0 to %c8 step %c1 num_stages = 2 warp_specialized {
      %rows = arith.muli %t, %c64 : index
      tile.copy %k[%rows, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      %positive = tile.all_of %w_s : !tile.shared<[64], f32> {
      ^bb0(%x: f32):
        %p = arith.cmpf oge, %x, %zero : f32
        tile.yield %p : i1
      }
      tile.gemm %k_s, %q_s, %scores transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      scf.if %positive {
        tile.parallel (%i, %h) in [64, 64] {
          %x = tile.load %scores[%i, %h] : !tile.frag<[64, 64], f32>
          %r = arith.maximumf %x, %zero : f32
          %rb = arith.truncf %r : f32 to bf16
          tile.store %rb, %relu[%i, %h] : !tile.frag<[64, 64], bf16>
        }
        tile.gemm %relu, %w_b, %sums transpose_b clear_accum
            : !tile.frag<[64, 64], bf16>, !tile.shared<[8, 64], bf16> -> !tile.frag<[64, 8], f32>
        tile.reduce sum %sums to %row dim = 1 : !tile.frag<[64, 8], f32> to !tile.frag<[64], f32>
      } else {
        tile.reduce sum %scores to %row dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      }
      tile.parallel (%i) in [64] {
        %v = tile.load %row[%i] : !tile.frag<[64], f32>
        %slot = arith.addi %rows, %i : index
        tile.store %v, %keys[%slot] : !tile.shared<[512], f32>
      }
    }
    tile.copy %keys to %out[%c0] : !tile.shared<[512], f32> to !tile.global<[512], f32>
  }
}
