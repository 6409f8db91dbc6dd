// A fragment stored into shared memory (P of attention) in a
// warp-specialized key loop (MemoryOps.cpp needsLeadingBarrier,
// PipelinedOp.cpp writesNeedIterationBarrier): after a cross-warpgroup
// row maximum, whose barrier already follows the previous tile's P V, the
// copy needs no leading barrier and the loop no barrier at the top of each
// iteration; without the exchange the copy keeps its leading barrier; in a
// branch inside the loop both stay (the backward scan would miss the
// previous iteration's ops in the branch).
tile.kernel @p_after_exchange(%q: !tile.global<[64, 128], bf16>, %kv: !tile.global<[?, 128], bf16>,
                              %o: !tile.global<[64, 128], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %q_s = tile.alloc : !tile.shared<[64, 128], bf16>
    %kv_s = tile.alloc : !tile.shared<[64, 128], bf16>
    %p_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %s = tile.alloc : !tile.frag<[64, 64], f32>
    %p = tile.alloc : !tile.frag<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 128], f32>
    %m = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    tile.copy %q[%c0, %c0] to %q_s : !tile.global<[64, 128], bf16> to !tile.shared<[64, 128], bf16>
    tile.fill %acc, %zero : !tile.frag<[64, 128], f32>, f32
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 warp_specialized {
      %row = arith.muli %t, %c64 : index
      tile.copy %kv[%row, %c0] to %kv_s : !tile.global<[?, 128], bf16> to !tile.shared<[64, 128], bf16>
      tile.gemm %q_s, %kv_s, %s transpose_b clear_accum policy(full_col)
          : !tile.shared<[64, 128], bf16>, !tile.shared<[64, 128], bf16> -> !tile.frag<[64, 64], f32>
      tile.reduce max %s to %m dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      tile.parallel (%i, %j) in [64, 64] {
        %v = tile.load %s[%i, %j] : !tile.frag<[64, 64], f32>
        %mi = tile.load %m[%i] : !tile.frag<[64], f32>
        %d = arith.subf %v, %mi : f32
        %e = math.exp2 %d : f32
        tile.store %e, %s[%i, %j] : !tile.frag<[64, 64], f32>
      }
      tile.cast %s to %p : !tile.frag<[64, 64], f32> to !tile.frag<[64, 64], bf16>
      tile.copy %p to %p_s : !tile.frag<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %p_s, %kv_s, %acc policy(full_col)
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 128], bf16> -> !tile.frag<[64, 128], f32>
    }
    tile.copy %acc to %o[%c0, %c0] : !tile.frag<[64, 128], f32> to !tile.global<[64, 128], f32>
  }
}

// -----

tile.kernel @p_without_exchange(%q: !tile.global<[64, 128], bf16>, %kv: !tile.global<[?, 128], bf16>,
                              %o: !tile.global<[64, 128], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %q_s = tile.alloc : !tile.shared<[64, 128], bf16>
    %kv_s = tile.alloc : !tile.shared<[64, 128], bf16>
    %p_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %s = tile.alloc : !tile.frag<[64, 64], f32>
    %p = tile.alloc : !tile.frag<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 128], f32>
    %m = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    tile.copy %q[%c0, %c0] to %q_s : !tile.global<[64, 128], bf16> to !tile.shared<[64, 128], bf16>
    tile.fill %acc, %zero : !tile.frag<[64, 128], f32>, f32
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 warp_specialized {
      %row = arith.muli %t, %c64 : index
      tile.copy %kv[%row, %c0] to %kv_s : !tile.global<[?, 128], bf16> to !tile.shared<[64, 128], bf16>
      tile.gemm %q_s, %kv_s, %s transpose_b clear_accum policy(full_col)
          : !tile.shared<[64, 128], bf16>, !tile.shared<[64, 128], bf16> -> !tile.frag<[64, 64], f32>
      tile.parallel (%i, %j) in [64, 64] {
        %v = tile.load %s[%i, %j] : !tile.frag<[64, 64], f32>
        %d = arith.subf %v, %zero : f32
        %e = math.exp2 %d : f32
        tile.store %e, %s[%i, %j] : !tile.frag<[64, 64], f32>
      }
      tile.cast %s to %p : !tile.frag<[64, 64], f32> to !tile.frag<[64, 64], bf16>
      tile.copy %p to %p_s : !tile.frag<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %p_s, %kv_s, %acc policy(full_col)
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 128], bf16> -> !tile.frag<[64, 128], f32>
    }
    tile.copy %acc to %o[%c0, %c0] : !tile.frag<[64, 128], f32> to !tile.global<[64, 128], f32>
  }
}

// -----

tile.kernel @p_in_branch(%q: !tile.global<[64, 128], bf16>, %kv: !tile.global<[?, 128], bf16>,
                              %o: !tile.global<[64, 128], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %q_s = tile.alloc : !tile.shared<[64, 128], bf16>
    %kv_s = tile.alloc : !tile.shared<[64, 128], bf16>
    %p_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %s = tile.alloc : !tile.frag<[64, 64], f32>
    %p = tile.alloc : !tile.frag<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 128], f32>
    %m = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    tile.copy %q[%c0, %c0] to %q_s : !tile.global<[64, 128], bf16> to !tile.shared<[64, 128], bf16>
    tile.fill %acc, %zero : !tile.frag<[64, 128], f32>, f32
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 warp_specialized {
      %row = arith.muli %t, %c64 : index
      tile.copy %kv[%row, %c0] to %kv_s : !tile.global<[?, 128], bf16> to !tile.shared<[64, 128], bf16>
      tile.gemm %q_s, %kv_s, %s transpose_b clear_accum policy(full_col)
          : !tile.shared<[64, 128], bf16>, !tile.shared<[64, 128], bf16> -> !tile.frag<[64, 64], f32>
      tile.reduce max %s to %m dim = 1 : !tile.frag<[64, 64], f32> to !tile.frag<[64], f32>
      tile.parallel (%i, %j) in [64, 64] {
        %v = tile.load %s[%i, %j] : !tile.frag<[64, 64], f32>
        %mi = tile.load %m[%i] : !tile.frag<[64], f32>
        %d = arith.subf %v, %mi : f32
        %e = math.exp2 %d : f32
        tile.store %e, %s[%i, %j] : !tile.frag<[64, 64], f32>
      }
      tile.cast %s to %p : !tile.frag<[64, 64], f32> to !tile.frag<[64, 64], bf16>
      %even = arith.cmpi ult, %t, %c4 : index
      scf.if %even {
        tile.copy %p to %p_s : !tile.frag<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
      }
      tile.gemm %p_s, %kv_s, %acc policy(full_col)
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 128], bf16> -> !tile.frag<[64, 128], f32>
    }
    tile.copy %acc to %o[%c0, %c0] : !tile.frag<[64, 128], f32> to !tile.global<[64, 128], f32>
  }
}

// -----

// (Review of the twenty-sixth session.) Inside tile.per_warpgroup the copy
// keeps its leading barrier (the scan cannot tell a warpgroup barrier from
// a block barrier).
tile.kernel @pwg(%x: !tile.global<[64], f32>, %out: !tile.global<[2, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %c0 = arith.constant 0 : index
    %t = tile.alloc : !tile.shared<[64], f32>
    %u0 = tile.alloc : !tile.shared<[64], f32>
    %u1 = tile.alloc : !tile.shared<[64], f32>
    %f = tile.alloc : !tile.frag<[64], f32>
    %g = tile.alloc : !tile.frag<[64], f32>
    tile.copy %x[%c0] to %t : !tile.global<[64], f32> to !tile.shared<[64], f32>
    tile.per_warpgroup (%wg) {
      tile.parallel (%r) in [64] {
        %v = tile.load %t[%r] : !tile.shared<[64], f32>
        tile.store %v, %f[%r] : !tile.frag<[64], f32>
      }
      %u = tile.pick %wg [%u0, %u1] : !tile.shared<[64], f32>
      tile.copy %f to %u : !tile.frag<[64], f32> to !tile.shared<[64], f32>
      tile.parallel (%r) in [64] {
        %v = tile.load %u[%r] : !tile.shared<[64], f32>
        %w = arith.addf %v, %v : f32
        tile.store %w, %g[%r] : !tile.frag<[64], f32>
      }
      tile.copy %g to %t : !tile.frag<[64], f32> to !tile.shared<[64], f32>
      tile.copy %g to %out[%wg, %c0] : !tile.frag<[64], f32> to !tile.global<[2, 64], f32>
    }
  }
}
