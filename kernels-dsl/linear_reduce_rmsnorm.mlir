// linear_reduce then v4_rmsnorm, in one launch: the second step of a
// split-k projection whose output row is normalized next (the V4 layer's
// q_lora after wq_a and kv after wkv, at decode's few rows): y [rows, dim]
// bf16 = RMSNorm(bf16(sum over s of partial[s, row, :])) * weight. The
// partial sums add in split order and round to bf16 before the norm, as
// the two kernels do, so results are bit-identical; one launch on decode's
// critical path and a round trip of the row through memory are saved. One
// block per row.

func.func private @rms_scale(!tile.frag<[n], f32>, !tile.frag<[n], f32>,
                             !tile.frag<[n], f32>, !tile.frag<[n], bf16>,
                             !tile.local<[1], f32>, f32, f32)

tile.kernel @linear_reduce_rmsnorm(%partial: !tile.global<[?, ?, dim], f32>,
                                   %weight: !tile.global<[dim], f32>,
                                   %y: !tile.global<[?, dim], bf16>,
                                   %eps: f32)
    params {dim = 1024} {
  %rows = tile.dim %y, 0 : !tile.global<[?, dim], bf16>
  tile.launch (%row) in (%rows) threads 128 {
    %wide = tile.alloc : !tile.frag<[dim], f32>
    %squares = tile.alloc : !tile.frag<[dim], f32>
    %result = tile.alloc : !tile.frag<[dim], bf16>
    %weights = tile.alloc : !tile.frag<[dim], f32>
    %sum = tile.alloc : !tile.local<[1], f32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %splits = tile.dim %partial, 0 : !tile.global<[?, ?, dim], f32>
    %acc = tile.alloc : !tile.frag<[dim], f32>
    %part = tile.alloc : !tile.frag<[dim], f32>
    tile.copy %weight[%c0] to %weights : !tile.global<[dim], f32> to !tile.frag<[dim], f32>
    // The splits in order, each one's row read with 16-byte loads.
    tile.fill %acc, %zero : !tile.frag<[dim], f32>, f32
    scf.for %s = %c0 to %splits step %c1 {
      tile.copy %partial[%s, %row, %c0] to %part
          : !tile.global<[?, ?, dim], f32> to !tile.frag<[dim], f32>
      tile.parallel (%j) in [dim] {
        %a = tile.load %acc[%j] : !tile.frag<[dim], f32>
        %v = tile.load %part[%j] : !tile.frag<[dim], f32>
        %next = arith.addf %a, %v : f32
        tile.store %next, %acc[%j] : !tile.frag<[dim], f32>
      }
    }
    tile.parallel (%j) in [dim] {
      %total = tile.load %acc[%j] : !tile.frag<[dim], f32>
      %rounded = arith.truncf %total : f32 to bf16
      %f = arith.extf %rounded : bf16 to f32
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
    tile.copy %result to %y[%row, %c0] : !tile.frag<[dim], bf16> to !tile.global<[?, dim], bf16>
  }
}
