// Every verifier error of the tile dialect, one case each.
// RUN: hisa-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'tile.kernel' op cannot return values; write results to global tensor arguments}}
tile.kernel @returns_value() -> i32 {
}

// -----

// expected-error @+1 {{'tile.kernel' op parameter 'heads' must have an integer value, got 6.400000e+01 : f64}}
tile.kernel @float_param() params {heads = 64.0} {
}

// -----

// expected-error @+1 {{'tile.kernel' op argument #0 must be a global tensor or a scalar, got 'memref<?xf32>'}}
tile.kernel @memref_arg(%a: memref<?xf32>) {
}

// -----

tile.kernel @host_float_math() {
  // expected-error @+1 {{'arith.constant' op cannot appear on the host side of tile.kernel: only integer constants, casts, tile.param, tile.dim and the arith ops addi, subi, muli, divsi, divui, ceildivui, ceildivsi, floordivsi, remsi, remui, minsi, maxsi, minui, maxui, andi, ori, xori, shli, shrui, shrsi may compute the launch grid (the JIT evaluates them on the host)}}
  %x = arith.constant 1.0 : f32
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
  }
}

// -----

// The JIT evaluates no compares or selects in the grid arithmetic.
tile.kernel @host_select(%n: index) params {decode = 0} {
  %c1 = arith.constant 1 : index
  %decode = tile.param "decode" : index
  // expected-error @+1 {{'arith.cmpi' op cannot appear on the host side of tile.kernel}}
  %is_decode = arith.cmpi ne, %decode, %c1 : index
  %grid = arith.select %is_decode, %c1, %n : index
  tile.launch (%bx) in (%grid) threads 32 {
  }
}

// -----

// expected-error @+1 {{'tile.kernel' op expects exactly one tile.launch in its body, found 0}}
tile.kernel @no_launch() {
}

// -----

// expected-error @+1 {{'tile.kernel' op expects exactly one tile.launch in its body, found 2}}
tile.kernel @two_launches() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
  }
  tile.launch (%bx) in (%c1) threads 32 {
  }
}

// -----

// expected-error @+1 {{'tile.kernel' op shape [?, hedas] names 'hedas', which is not a parameter of kernel @typo_in_arg (parameters: heads)}}
tile.kernel @typo_in_arg(%q: !tile.global<[?, hedas], f32>) params {heads = 64} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
  }
}

// -----

tile.kernel @typo_in_alloc() params {dim = 64} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    // expected-error @+1 {{'tile.alloc' op shape [2*dims] names 'dims', which is not a parameter of kernel @typo_in_alloc (parameters: dim)}}
    %s = tile.alloc : !tile.shared<[2*dims], f32>
  }
}

// -----

tile.kernel @typo_in_parallel() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    // expected-error @+1 {{'tile.parallel' op shape [n] names 'n', which is not a parameter of kernel @typo_in_parallel (parameters: none)}}
    tile.parallel (%i) in [n] {
    }
  }
}

// -----

tile.kernel @return_in_launch() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    // expected-error @+1 {{'tile.return' op expects parent op 'tile.kernel'}}
    tile.return
  }
}

// -----

tile.kernel @unknown_param() params {heads = 64} {
  // expected-error @+1 {{'tile.param' op 'dim' is not a parameter of kernel @unknown_param}}
  %d = tile.param "dim" : index
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
  }
}

// -----

func.func @param_outside_kernel() {
  // expected-error @+1 {{'tile.param' op must be nested in a tile.kernel}}
  %d = tile.param "dim" : index
  return
}

// -----

tile.kernel @dim_out_of_range(%a: !tile.global<[?, 4], f32>) {
  // expected-error @+1 {{'tile.dim' op dimension 2 is out of range for a tensor of rank 2}}
  %n = tile.dim %a, 2 : !tile.global<[?, 4], f32>
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
  }
}

// -----

tile.kernel @dim_negative(%a: !tile.global<[?, 4], f32>) {
  // expected-error @+1 {{'tile.dim' op dimension -1 is out of range for a tensor of rank 2}}
  %n = tile.dim %a, -1 : !tile.global<[?, 4], f32>
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
  }
}

// -----

tile.kernel @grid_rank_4() {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'tile.launch' op expects 1 to 3 grid dimensions, got 4}}
  tile.launch (%a, %b, %c, %d) in (%c1, %c1, %c1, %c1) threads 32 {
  }
}

// -----

tile.kernel @threads_not_warp_multiple() {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'tile.launch' op thread count must be a multiple of 32 between 32 and 1024, got 100}}
  tile.launch (%bx) in (%c1) threads 100 {
  }
}

// -----

tile.kernel @no_blocks_per_sm() {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'tile.launch' op blocks_per_sm must be at least 1 with at most 2048 threads per SM, got 0 blocks of 128 threads}}
  tile.launch (%bx) in (%c1) threads 128 blocks_per_sm 0 {
  }
}

// -----

tile.kernel @blocks_per_sm_unknown_param() params {blocks = 2} {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'tile.launch' op blocks_per_sm names 'block', which is not a parameter of kernel @blocks_per_sm_unknown_param}}
  tile.launch (%bx) in (%c1) threads 128 blocks_per_sm "block" {
  }
}

// -----

tile.kernel @cluster_too_large() {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'tile.launch' op cluster must be 1 to 8 blocks, got 16}}
  tile.launch (%bx) in (%c1) threads 128 cluster 16 {
  }
}

// -----

tile.kernel @cluster_unknown_param() params {pair = 2} {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'tile.launch' op cluster names 'pairs', which is not a parameter of kernel @cluster_unknown_param}}
  tile.launch (%bx) in (%c1) threads 128 cluster "pairs" {
  }
}

// -----

tile.kernel @cluster_rank_without_cluster() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    // expected-error @+1 {{'tile.cluster_rank' op needs a tile.launch with `cluster N`}}
    %rank = tile.cluster_rank : index
  }
}

// -----

tile.kernel @cluster_barrier_in_parallel() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 cluster 2 {
    tile.parallel (%i) in [128] {
      // expected-error @+1 {{'tile.cluster_barrier' op may not sit in a tile.parallel body (every thread of the cluster meets it once)}}
      tile.cluster_barrier
    }
  }
}

// -----

tile.kernel @cluster_barrier_in_pipelined(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 cluster 2 {
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 2 {
      // expected-error @+1 {{'tile.cluster_barrier' op may not sit in a tile.pipelined, tile.per_warpgroup or tile.all_of body}}
      tile.cluster_barrier
    }
  }
}

// -----

tile.kernel @peer_load_from_global(%g: !tile.global<[?], f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 cluster 2 {
    // expected-error @+1 {{'tile.load' op reads a peer block's element only from a shared tile, got a global tile [?]}}
    %v = tile.load %g[%c0] peer %c1 : !tile.global<[?], f32>
  }
}

// -----

tile.kernel @peer_load_without_cluster() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %s = tile.alloc : !tile.shared<[128], f32>
    // expected-error @+1 {{'tile.load' op needs a tile.launch with `cluster N`}}
    %v = tile.load %s[%c0] peer %c1 : !tile.shared<[128], f32>
  }
}

// -----

tile.kernel @too_many_blocks_per_sm() {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'tile.launch' op blocks_per_sm must be at least 1 with at most 2048 threads per SM, got 9 blocks of 256 threads}}
  tile.launch (%bx) in (%c1) threads 256 blocks_per_sm 9 {
  }
}

// -----

tile.kernel @too_many_threads() {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'tile.launch' op thread count must be a multiple of 32 between 32 and 1024, got 2048}}
  tile.launch (%bx) in (%c1) threads 2048 {
  }
}

// -----

tile.kernel @indices_vs_grid() {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'tile.launch' op has 1 grid dimensions but 2 block indices}}
  tile.launch (%bx, %by) in (%c1) threads 32 {
  }
}

// -----

func.func @launch_outside_kernel(%n: index) {
  // expected-error @+1 {{'tile.launch' op expects parent op 'tile.kernel'}}
  tile.launch (%bx) in (%n) threads 32 {
  }
  return
}

// -----

tile.kernel @yield_in_kernel() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
  }
  // expected-error @+1 {{'tile.yield' op expects parent op to be one of 'tile.launch, tile.parallel, tile.pipelined, tile.per_warpgroup, tile.all_of, tile.rejoin'}}
  tile.yield
}

// -----

tile.kernel @alloc_in_loop() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%i) in [4] {
      // expected-error @+1 {{'tile.alloc' op expects parent op 'tile.launch'}}
      %s = tile.alloc : !tile.shared<[4], f32>
    }
  }
}

// -----

tile.kernel @alloc_global() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    // expected-error @+1 {{'tile.alloc' op result #0 must be shared, fragment or local tile}}
    %s = tile.alloc : !tile.global<[4], f32>
  }
}

// -----

tile.kernel @layout_thread_mismatch() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    // expected-error @+1 {{'tile.alloc' op fragment layout is for 64 threads but the launch has 128}}
    %f = tile.alloc : !tile.frag<[64], f32, #tile.frag_layout<threads = 64, values = 1, map = (t, v) -> (t)>>
  }
}

// -----

tile.kernel @view_changes_kind() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.shared<[4, 4], f32>
    // expected-error @+1 {{'tile.view' op cannot view a shared tile as a fragment tile}}
    %v = tile.view %s : !tile.shared<[4, 4], f32> to !tile.frag<[16], f32>
  }
}

// -----

tile.kernel @view_changes_element_type() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.shared<[4, 4], f32>
    // expected-error @+1 {{'tile.view' op element type changes from 'f32' to 'i32'; use tile.cast to convert elements}}
    %v = tile.view %s : !tile.shared<[4, 4], f32> to !tile.shared<[16], i32>
  }
}

// -----

tile.kernel @view_changes_size() params {n = 8} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.shared<[4, n], f32>
    // expected-error @+1 {{'tile.view' op views [4, n] (4*n elements) as [2, n] (2*n elements)}}
    %v = tile.view %s : !tile.shared<[4, n], f32> to !tile.shared<[2, n], f32>
  }
}

// -----

func.func @view_outside_launch(%s: !tile.shared<[4, 4], f32>) {
  // expected-error @+1 {{'tile.view' op must be nested in a tile.launch}}
  %v = tile.view %s : !tile.shared<[4, 4], f32> to !tile.shared<[16], f32>
  return
}

// -----

tile.kernel @copy_global_to_global(%a: !tile.global<[?], f32>, %b: !tile.global<[?], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    // expected-error @+1 {{'tile.copy' op cannot copy from global memory to global memory; stage the data through a shared or fragment tile}}
    tile.copy %a to %b : !tile.global<[?], f32> to !tile.global<[?], f32>
  }
}

// -----

tile.kernel @copy_element_types(%a: !tile.global<[?], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.shared<[32], bf16>
    // expected-error @+1 {{'tile.copy' op element types differ ('f32' to 'bf16'); convert with tile.cast}}
    tile.copy %a[%bx] to %s : !tile.global<[?], f32> to !tile.shared<[32], bf16>
  }
}

// -----

tile.kernel @copy_two_windows() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.shared<[64], f32>
    %t = tile.alloc : !tile.shared<[64], f32>
    // expected-error @+1 {{'tile.copy' op only one side of a copy may take a window offset}}
    tile.copy %s[%bx] to %t[%bx] : !tile.shared<[64], f32> to !tile.shared<[64], f32>
  }
}

// -----

tile.kernel @copy_shape_mismatch() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.shared<[64, 8], f32>
    %f = tile.alloc : !tile.frag<[64, 16], f32>
    // expected-error @+1 {{'tile.copy' op copies a shared tile [64, 8] to a fragment tile [64, 16] of another shape}}
    tile.copy %s to %f : !tile.shared<[64, 8], f32> to !tile.frag<[64, 16], f32>
  }
}

// -----

tile.kernel @copy_offset_count(%a: !tile.global<[?, ?], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.shared<[64], f32>
    // expected-error @+1 {{'tile.copy' op expects 2 offsets for the source window (one per dimension), got 1}}
    tile.copy %a[%bx] to %s : !tile.global<[?, ?], f32> to !tile.shared<[64], f32>
  }
}

// -----

tile.kernel @copy_window_rank(%a: !tile.global<[?], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.shared<[8, 8], f32>
    // expected-error @+1 {{'tile.copy' op the source has rank 1, less than the rank 2 of the shared tile [8, 8]}}
    tile.copy %a[%bx] to %s : !tile.global<[?], f32> to !tile.shared<[8, 8], f32>
  }
}

// -----

tile.kernel @copy_window_too_large() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.shared<[4, 32], f32>
    %f = tile.alloc : !tile.frag<[64], f32>
    // expected-error @+1 {{'tile.copy' op a fragment tile [64] does not fit in the source shared tile [4, 32]}}
    tile.copy %s[%bx, %bx] to %f : !tile.shared<[4, 32], f32> to !tile.frag<[64], f32>
  }
}

// -----

tile.kernel @fill_type() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %f = tile.alloc : !tile.frag<[64], f32>
    %zero = arith.constant 0 : i32
    // expected-error @+1 {{'tile.fill' op fill value has type 'i32' but the tile holds 'f32'}}
    tile.fill %f, %zero : !tile.frag<[64], f32>, i32
  }
}

// -----

func.func @clear_outside_launch(%f: !tile.frag<[64], f32>) {
  // expected-error @+1 {{'tile.clear' op must be nested in a tile.launch}}
  tile.clear %f : !tile.frag<[64], f32>
  return
}

// -----

tile.kernel @cast_shape() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %f = tile.alloc : !tile.frag<[64], f32>
    %h = tile.alloc : !tile.frag<[32], f16>
    // expected-error @+1 {{'tile.cast' op casts a fragment tile [64] to a fragment tile [32] of another shape}}
    tile.cast %f to %h : !tile.frag<[64], f32> to !tile.frag<[32], f16>
  }
}

// -----

tile.kernel @cast_same_type() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %f = tile.alloc : !tile.frag<[64], f32>
    %s = tile.alloc : !tile.shared<[64], f32>
    // expected-error @+1 {{'tile.cast' op source and destination both hold 'f32'; use tile.copy}}
    tile.cast %f to %s : !tile.frag<[64], f32> to !tile.shared<[64], f32>
  }
}

// -----

tile.kernel @gemm_rank() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[2, 64, 32], bf16>
    %b = tile.alloc : !tile.shared<[32, 64], bf16>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'tile.gemm' op operand A must be a rank-2 tile, got rank 3}}
    tile.gemm %a, %b, %c : !tile.shared<[2, 64, 32], bf16>, !tile.shared<[32, 64], bf16> -> !tile.frag<[64, 64], f32>
  }
}

// -----

tile.kernel @gemm_types() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 32], f32>
    %b = tile.alloc : !tile.shared<[32, 64], f32>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'tile.gemm' op unsupported element types 'f32' x 'f32' -> 'f32'; supported: f8E4M3FN x f8E4M3FN -> f32, bf16 x bf16 -> f32, f16 x f16 -> f32 or f16}}
    tile.gemm %a, %b, %c : !tile.shared<[64, 32], f32>, !tile.shared<[32, 64], f32> -> !tile.frag<[64, 64], f32>
  }
}

// -----

tile.kernel @gemm_bf16_to_bf16() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 32], bf16>
    %b = tile.alloc : !tile.shared<[32, 64], bf16>
    %c = tile.alloc : !tile.frag<[64, 64], bf16>
    // expected-error @+1 {{'tile.gemm' op unsupported element types 'bf16' x 'bf16' -> 'bf16'}}
    tile.gemm %a, %b, %c : !tile.shared<[64, 32], bf16>, !tile.shared<[32, 64], bf16> -> !tile.frag<[64, 64], bf16>
  }
}

// -----

tile.kernel @gemm_fp8_mn_major() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 32], f8E4M3FN>
    %b = tile.alloc : !tile.shared<[32, 64], f8E4M3FN>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'tile.gemm' op fp8 (f8E4M3FN) gemm needs K-major operands: A as [M, K] without transpose_a and B as [N, K] with transpose_b}}
    tile.gemm %a, %b, %c : !tile.shared<[64, 32], f8E4M3FN>, !tile.shared<[32, 64], f8E4M3FN> -> !tile.frag<[64, 64], f32>
  }
}

// -----

tile.kernel @gemm_k_mismatch() params {dim = 128} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, dim], f8E4M3FN>
    %b = tile.alloc : !tile.shared<[64, 64], f8E4M3FN>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'tile.gemm' op reduction size K of A (dim) differs from K of B (64)}}
    tile.gemm %a, %b, %c transpose_b : !tile.shared<[64, dim], f8E4M3FN>, !tile.shared<[64, 64], f8E4M3FN> -> !tile.frag<[64, 64], f32>
  }
}

// -----

tile.kernel @gemm_c_shape() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 32], f16>
    %b = tile.alloc : !tile.shared<[32, 128], f16>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'tile.gemm' op C has shape [64, 64] but A and B give [64, 128]}}
    tile.gemm %a, %b, %c : !tile.shared<[64, 32], f16>, !tile.shared<[32, 128], f16> -> !tile.frag<[64, 64], f32>
  }
}

// -----

tile.kernel @gemm_b_in_registers() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 32], f16>
    %b = tile.alloc : !tile.frag<[32, 64], f16>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'tile.gemm' op operand #1 must be A tile in shared memory}}
    tile.gemm %a, %b, %c : !tile.shared<[64, 32], f16>, !tile.frag<[32, 64], f16> -> !tile.frag<[64, 64], f32>
  }
}

// -----

tile.kernel @reduce_dim_range() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.frag<[8, 8], f32>
    %d = tile.alloc : !tile.frag<[8], f32>
    // expected-error @+1 {{'tile.reduce' op dimension 2 is out of range for a source of rank 2}}
    tile.reduce sum %s to %d dim = 2 : !tile.frag<[8, 8], f32> to !tile.frag<[8], f32>
  }
}

// -----

tile.kernel @reduce_element_type() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.frag<[8, 8], f32>
    %d = tile.alloc : !tile.frag<[8], f16>
    // expected-error @+1 {{'tile.reduce' op destination holds 'f16' but the source holds 'f32'}}
    tile.reduce max %s to %d dim = 1 : !tile.frag<[8, 8], f32> to !tile.frag<[8], f16>
  }
}

// -----

tile.kernel @reduce_shape() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.frag<[8, 16], f32>
    %d = tile.alloc : !tile.frag<[16], f32>
    // expected-error @+1 {{'tile.reduce' op destination must have shape [8] (the source [8, 16] without dimension 1), got [16]}}
    tile.reduce sum %s to %d dim = 1 : !tile.frag<[8, 16], f32> to !tile.frag<[16], f32>
  }
}

// -----

tile.kernel @reduce_chains() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.frag<[8, 16], f32>
    %d = tile.alloc : !tile.frag<[8], f32>
    // expected-error @+1 {{'tile.reduce' op chains must be a power of two from 1 to 16, got 3}}
    tile.reduce sum %s to %d dim = 1 chains = 3 : !tile.frag<[8, 16], f32> to !tile.frag<[8], f32>
  }
}

// -----

tile.kernel @reduce_unknown_kind() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.frag<[8, 16], f32>
    %d = tile.alloc : !tile.frag<[8], f32>
    // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [sum, max, min, absmax, abssum]}}
    tile.reduce mean %s to %d dim = 1 : !tile.frag<[8, 16], f32> to !tile.frag<[8], f32>
  }
}

// -----

tile.kernel @parallel_runtime_extent() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    // expected-error @+1 {{'tile.parallel' op extents must be positive integers or parameter expressions known at compile time, got [?, 4]}}
    tile.parallel (%i, %j) in [?, 4] {
    }
  }
}

// -----

tile.kernel @parallel_nested() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%i) in [4] {
      // expected-error @+1 {{'tile.parallel' op cannot be nested in another tile.parallel; use one multi-dimensional tile.parallel}}
      tile.parallel (%j) in [4] {
      }
    }
  }
}

// -----

tile.kernel @parallel_arity() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    // expected-error @+1 {{'tile.parallel' op has 2 extents but 1 induction variables}}
    tile.parallel (%i) in [4, 4] {
    }
  }
}

// -----

func.func @parallel_outside_launch() {
  // expected-error @+1 {{'tile.parallel' op must be nested in a tile.launch}}
  tile.parallel (%i) in [4] {
  }
  return
}

// -----

tile.kernel @pipelined_zero_stages(%n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'tile.pipelined' op num_stages must be between 1 and 32, got 0}}
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 0 {
    }
  }
}

// -----

tile.kernel @warp_specialized_one_stage(%k: !tile.global<[?, 64], bf16>, %n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'tile.pipelined' op warp_specialized needs num_stages >= 2 (the producer fills one stage while the consumers read another)}}
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 1 warp_specialized {
      tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    }
  }
}

// -----

tile.kernel @copy_stages_without_release(%k: !tile.global<[?, 64], bf16>, %n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %c0 = arith.constant 0 : index
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 2 warp_specialized {
      // expected-error @+1 {{'tile.copy' op tile.stages needs a warp_specialized loop with tile.release (whose copies hand their buffers over one by one)}}
      tile.copy %k[%t, %c0] to %k_s {tile.stages = 3} : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    }
  }
}

// -----

tile.kernel @copy_stages_below_the_loops(%k: !tile.global<[?, 64], bf16>, %n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %c0 = arith.constant 0 : index
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 2 warp_specialized {
      // expected-error @+1 {{'tile.copy' op tile.stages must be between the loop's num_stages (2) and 32, got 1}}
      tile.copy %k[%t, %c0] to %k_s {tile.stages = 1} : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.release %k_s : !tile.shared<[64, 64], bf16>
    }
  }
}

// -----

tile.kernel @copy_stages_not_an_integer(%k: !tile.global<[?, 64], bf16>, %n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %c0 = arith.constant 0 : index
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 1 warp_specialized {
      // expected-error @+1 {{'tile.copy' op tile.stages must be an integer, got "two"}}
      tile.copy %k[%t, %c0] to %k_s {tile.stages = "two"} : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.release %k_s : !tile.shared<[64, 64], bf16>
    }
  }
}

// -----

tile.kernel @copy_stages_two_counts_one_tile(%k: !tile.global<[?, 64], bf16>, %n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %c0 = arith.constant 0 : index
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 1 warp_specialized {
      tile.copy %k[%t, %c0] to %k_s {tile.stages = 2} : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      // expected-error @+1 {{'tile.copy' op fills a tile another copy of the loop fills with a different tile.stages}}
      tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.release %k_s : !tile.shared<[64, 64], bf16>
    }
  }
}

// -----

tile.kernel @copy_stages_outside_a_loop(%k: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'tile.copy' op tile.stages is for the staged copies at the top of a tile.pipelined body}}
    tile.copy %k[%c0, %c0] to %k_s {tile.stages = 2} : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
  }
}

// -----

tile.kernel @warp_specialized_nested(%k: !tile.global<[?, 64], bf16>, %n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %c0 = arith.constant 0 : index
    scf.for %i = %c0 to %n step %c1 {
      // expected-error @+1 {{'tile.pipelined' op warp_specialized must sit directly in the tile.launch body (the producer warpgroup runs beside the whole block)}}
      tile.pipelined %t = %c0 to %n step %c1 num_stages = 2 warp_specialized {
        tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      }
    }
  }
}

// -----

tile.kernel @warp_specialized_partial_warpgroup(%k: !tile.global<[?, 64], bf16>, %n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 96 {
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'tile.pipelined' op warp_specialized needs the launch's threads to be whole warpgroups, at most 896 (the producer adds 128), got 96}}
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 2 warp_specialized {
      tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    }
  }
}

// -----

tile.kernel @warp_specialized_twice(%k: !tile.global<[?, 64], bf16>, %n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %c0 = arith.constant 0 : index
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 2 warp_specialized {
      tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    }
    // expected-error @+1 {{'tile.pipelined' op is the second warp_specialized tile.pipelined of its launch; at most one is supported}}
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 2 warp_specialized {
      tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    }
  }
}

// -----

tile.kernel @warp_specialized_without_copies(%n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'tile.pipelined' op warp_specialized needs a global-to-shared copy at the top of its body for the producer to issue}}
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 2 warp_specialized {
    }
  }
}

// -----

func.func @pipelined_outside_launch(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'tile.pipelined' op must be nested in a tile.launch}}
  tile.pipelined %t = %c0 to %n step %c1 num_stages = 2 {
  }
  return
}

// -----

tile.kernel @load_index_count(%a: !tile.global<[?, ?], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    // expected-error @+1 {{'tile.load' op expects 2 indices for a global tile [?, ?], got 1}}
    %x = tile.load %a[%bx] : !tile.global<[?, ?], f32>
  }
}

// -----

tile.kernel @store_index_count() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %l = tile.alloc : !tile.local<[2, 2], f32>
    %v = arith.constant 1.0 : f32
    // expected-error @+1 {{'tile.store' op expects 2 indices for a local tile [2, 2], got 3}}
    tile.store %v, %l[%bx, %bx, %bx] : !tile.local<[2, 2], f32>
  }
}

// -----

tile.kernel @store_value_type() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %l = tile.alloc : !tile.local<[2], f32>
    // expected-note @+1 {{prior use here}}
    %v = arith.constant 1 : i32
    // expected-error @+1 {{use of value '%v' expects different type than prior uses: 'f32' vs 'i32'}}
    tile.store %v, %l[%bx] : !tile.local<[2], f32>
  }
}

// -----

tile.kernel @atomic_fragment() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %f = tile.alloc : !tile.frag<[32], i32>
    tile.parallel (%i) in [32] {
      %one = arith.constant 1 : i32
      // expected-error @+1 {{'tile.atomic' op dest must be a shared tile or a global tensor, got a fragment}}
      %old = tile.atomic add %one, %f[%i] : !tile.frag<[32], i32>
    }
  }
}

// -----

tile.kernel @atomic_f16(%g: !tile.global<[?], f16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%i) in [32] {
      %x = arith.constant 1.0 : f16
      // expected-error @+1 {{'tile.atomic' op supports 32- or 64-bit integer or f32 elements, got 'f16'}}
      %old = tile.atomic add %x, %g[%i] : !tile.global<[?], f16>
    }
  }
}

// -----

tile.kernel @atomic_unsigned_float(%g: !tile.global<[?], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%i) in [32] {
      %x = arith.constant 1.0 : f32
      // expected-error @+1 {{'tile.atomic' op 'umax' needs integer elements, got 'f32'}}
      %old = tile.atomic umax %x, %g[%i] : !tile.global<[?], f32>
    }
  }
}

// -----

tile.kernel @atomic_serial(%g: !tile.global<[?], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %c0 = arith.constant 0 : index
    %one = arith.constant 1 : i32
    // expected-error @+1 {{'tile.atomic' op must be in a tile.parallel body (one atomic per element of its domain)}}
    %old = tile.atomic add %one, %g[%c0] : !tile.global<[?], i32>
  }
}

// -----

tile.kernel @atomic_rank(%g: !tile.global<[?, 4], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%i) in [32] {
      %one = arith.constant 1 : i32
      // expected-error @+1 {{'tile.atomic' op expects 2 indices for a global tile [?, 4], got 1}}
      %old = tile.atomic add %one, %g[%i] : !tile.global<[?, 4], i32>
    }
  }
}

// -----

tile.kernel @scan_rank() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.shared<[4, 8], i32>
    // expected-error @+1 {{'tile.scan' op scans 1-D tiles, got a source of shape [4, 8]}}
    %t = tile.scan sum %s to %s : !tile.shared<[4, 8], i32> to !tile.shared<[4, 8], i32>
  }
}

// -----

tile.kernel @scan_shape() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.shared<[64], i32>
    %d = tile.alloc : !tile.shared<[32], i32>
    // expected-error @+1 {{'tile.scan' op destination must have the shape of the source [64], got [32]}}
    %t = tile.scan sum %s to %d : !tile.shared<[64], i32> to !tile.shared<[32], i32>
  }
}

// -----

tile.kernel @scan_kind() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.shared<[64], f32>
    // expected-error @+1 {{'tile.scan' op supports the kinds sum, max and min, got 'absmax'}}
    %t = tile.scan absmax %s to %s : !tile.shared<[64], f32> to !tile.shared<[64], f32>
  }
}

// -----

tile.kernel @scan_element() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.shared<[64], f16>
    // expected-error @+1 {{'tile.scan' op scans 32- or 64-bit integers or f32, got 'f16'}}
    %t = tile.scan sum %s to %s : !tile.shared<[64], f16> to !tile.shared<[64], f16>
  }
}

// -----

tile.kernel @scan_in_parallel() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.shared<[64], i32>
    tile.parallel (%i) in [32] {
      // expected-error @+1 {{'tile.scan' op is block-wide: every thread takes part, so it cannot be in a tile.parallel body (use tile.warp_scan there)}}
      %t = tile.scan sum %s to %s : !tile.shared<[64], i32> to !tile.shared<[64], i32>
    }
  }
}

// -----

tile.kernel @warp_scan_serial() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %one = arith.constant 1 : i32
    // expected-error @+1 {{'tile.warp_scan' op must be in a tile.parallel body (it combines the domain's elements a warp at a time)}}
    %p, %t = tile.warp_scan sum %one : i32
  }
}

// -----

tile.kernel @warp_broadcast_serial() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %one = arith.constant 1 : i32
    // expected-error @+1 {{'tile.warp_broadcast' op must be in a tile.parallel body (it combines the domain's elements a warp at a time)}}
    %b = tile.warp_broadcast %one, %one : i32
  }
}

// -----

tile.kernel @warp_match_serial() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %one = arith.constant 1 : i32
    // expected-error @+1 {{'tile.warp_match' op must be in a tile.parallel body (it combines the domain's elements a warp at a time)}}
    %m = tile.warp_match %one : i32
  }
}

// -----

tile.kernel @warp_scan_kind() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%i) in [32] {
      %one = arith.constant 1.0 : f32
      // expected-error @+1 {{'tile.warp_scan' op supports the kinds sum, max and min, got 'abssum'}}
      %p, %t = tile.warp_scan abssum %one : f32
    }
  }
}

// -----

tile.kernel @vote_result() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%i) in [32] {
      %yes = arith.constant true
      // expected-error @+1 {{'tile.vote' op 'ballot' gives an i32 mask, not 'i1'}}
      %b = tile.vote ballot %yes : i1
    }
  }
}

// -----

tile.kernel @vote_any_result() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%i) in [32] {
      %yes = arith.constant true
      // expected-error @+1 {{'tile.vote' op 'any' gives an i1, not 'i32'}}
      %b = tile.vote any %yes : i32
    }
  }
}

// -----

// More cases: lane-uniformity.mlir.
tile.kernel @vote_in_lane_branch() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.parallel (%i) in [32] {
      %c16 = arith.constant 16 : index
      %low = arith.cmpi ult, %i, %c16 : index
      // expected-note @+1 {{this condition, bound or case differs between the lanes of a warp}}
      scf.if %low {
        %yes = arith.constant true
        // expected-error @+1 {{'tile.vote' op is reached by only some lanes of a warp: it sits under control flow that differs between them, and a warp collective needs all 32 lanes (move it out of the branch or loop, or give it a predicate instead)}}
        %b = tile.vote ballot %yes : i32
      }
    }
  }
}

// -----

tile.kernel @gather_into_fragment(%kv: !tile.global<[?, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %rows = tile.alloc : !tile.shared<[64], i32>
    %f = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'tile.copy' op gathers rows into a 2-D shared tile, not a fragment tile [64, 64]}}
    tile.copy %kv rows(%rows[%c0] : !tile.shared<[64], i32>) to %f : !tile.global<[?, 64], f32> to !tile.frag<[64, 64], f32>
  }
}

// -----

tile.kernel @gather_float_rows(%kv: !tile.global<[?, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %rows = tile.alloc : !tile.shared<[64], f32>
    %s = tile.alloc : !tile.shared<[64, 64], f32>
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'tile.copy' op row numbers must be a 1-D shared or local tile of i32}}
    tile.copy %kv rows(%rows[%c0] : !tile.shared<[64], f32>) to %s : !tile.global<[?, 64], f32> to !tile.shared<[64, 64], f32>
  }
}

// -----

tile.kernel @gather_other_width(%kv: !tile.global<[?, ?], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %rows = tile.alloc : !tile.shared<[64], i32>
    %s = tile.alloc : !tile.shared<[64, 64], f32>
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'tile.copy' op gathers rows of [?, ?] into a shared tile [64, 64]; the rows must have the destination's static width}}
    tile.copy %kv rows(%rows[%c0] : !tile.shared<[64], i32>) to %s : !tile.global<[?, ?], f32> to !tile.shared<[64, 64], f32>
  }
}

// -----

tile.kernel @gather_with_offsets(%kv: !tile.global<[?, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %rows = tile.alloc : !tile.shared<[64], i32>
    %s = tile.alloc : !tile.shared<[64, 64], f32>
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'tile.copy' op a gather (rows) takes source offsets [0, column] only (the rows come from the row numbers)}}
    tile.copy %kv[%c1, %c0] rows(%rows[%c0] : !tile.shared<[64], i32>) to %s : !tile.global<[?, 64], f32> to !tile.shared<[64, 64], f32>
  }
}

// -----

tile.kernel @gather_column_window_past_the_row(%kv: !tile.global<[?, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %rows = tile.alloc : !tile.shared<[64], i32>
    %s = tile.alloc : !tile.shared<[64, 32], f32>
    %c0 = arith.constant 0 : index
    %c48 = arith.constant 48 : index
    // expected-error @+1 {{'tile.copy' op gathers a column window of rows of [?, 64] into a shared tile [64, 32]; the source needs a static width and the window a constant column that keeps it inside the row}}
    tile.copy %kv[%c0, %c48] rows(%rows[%c0] : !tile.shared<[64], i32>) to %s : !tile.global<[?, 64], f32> to !tile.shared<[64, 32], f32>
  }
}

// -----

tile.kernel @per_warpgroup_one_warpgroup() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    // expected-error @+1 {{'tile.per_warpgroup' op needs a launch of at least two whole warpgroups (threads a multiple of 128, >= 256), got 128 threads}}
    tile.per_warpgroup (%wg) {
    }
  }
}

// -----

tile.kernel @per_warpgroup_nested() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    tile.parallel (%i) in [256] {
      // expected-error @+1 {{'tile.per_warpgroup' op must sit directly in a tile.launch body, or in the body of a tile.pipelined that does (each warpgroup of the block runs it)}}
      tile.per_warpgroup (%wg) {
      }
    }
  }
}

// -----

tile.kernel @per_warpgroup_scan() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %counts = tile.alloc : !tile.shared<[256], i32>
    %sums = tile.alloc : !tile.shared<[256], i32>
    tile.per_warpgroup (%wg) {
      // expected-error @+1 {{'tile.scan' op is not supported inside tile.per_warpgroup (it involves every thread of the block)}}
      %total = tile.scan sum %counts to %sums : !tile.shared<[256], i32> to !tile.shared<[256], i32>
    }
  }
}

// -----

tile.kernel @per_warpgroup_mixed_scope(%out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'tile.alloc' op is used both inside and outside tile.per_warpgroup (inside, each warpgroup has its own copy): fill, use and store it in the bodies}}
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    tile.clear %acc : !tile.frag<[64, 64], f32>
    tile.per_warpgroup (%wg) {
      tile.copy %acc to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
    }
  }
}

// -----

tile.kernel @pick_one() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %c0 = arith.constant 0 : index
    %a = tile.alloc : !tile.shared<[64], f32>
    // expected-error @+1 {{'tile.pick' op needs at least two tiles to choose from, got 1}}
    %p = tile.pick %c0 [%a] : !tile.shared<[64], f32>
  }
}

// -----

tile.kernel @pick_types() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %c0 = arith.constant 0 : index
    %a = tile.alloc : !tile.shared<[64], f32>
    %b = tile.alloc : !tile.shared<[32], f32>
    // (The custom form gives every tile the result's type: the generic one
    // reaches the verifier.)
    // expected-error @+1 {{'tile.pick' op tile 1 has type '!tile.shared<[32], f32>' but the result has type '!tile.shared<[64], f32>'}}
    %p = "tile.pick"(%c0, %a, %b) : (index, !tile.shared<[64], f32>, !tile.shared<[32], f32>) -> !tile.shared<[64], f32>
  }
}

// -----

tile.kernel @pick_of_a_view() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %c0 = arith.constant 0 : index
    %a = tile.alloc : !tile.shared<[64], f32>
    %b = tile.alloc : !tile.shared<[8, 8], f32>
    %v = tile.view %b : !tile.shared<[8, 8], f32> to !tile.shared<[64], f32>
    // expected-error @+1 {{'tile.pick' op tile 1 must be a tile.alloc result (its layout and place in shared memory are the pick's)}}
    %p = tile.pick %c0 [%a, %v] : !tile.shared<[64], f32>
  }
}

// -----

tile.kernel @per_warpgroup_view_of_outer_fragment(%out: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'tile.alloc' op is used both inside and outside tile.per_warpgroup}}
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    tile.clear %acc : !tile.frag<[64, 64], f32>
    %flat = tile.view %acc : !tile.frag<[64, 64], f32> to !tile.frag<[4096], f32>
    tile.per_warpgroup (%wg) {
      %again = tile.view %flat : !tile.frag<[4096], f32> to !tile.frag<[64, 64], f32>
      tile.copy %again to %out[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
    }
  }
}

// -----

tile.kernel @barrier_in_parallel() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    tile.parallel (%i) in [128] {
      // expected-error @+1 {{'tile.barrier' op cannot be in a tile.parallel body (every thread of the block meets at it once)}}
      tile.barrier
    }
  }
}

// -----

tile.kernel @arrive_only_without_id() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    tile.per_warpgroup (%wg) {
      // expected-error @+1 {{'tile.barrier' op arrive_only needs a named barrier (id = N): every thread waits at the block's barrier}}
      tile.barrier arrive_only
    }
  }
}

// -----

tile.kernel @named_barrier_id_out_of_range() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    tile.per_warpgroup (%wg) {
      // expected-error @+1 {{'tile.barrier' op id must be in [0, 6), got 6}}
      tile.barrier id = 6
    }
  }
}

// -----

tile.kernel @named_barrier_outside_per_warpgroup() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    // expected-error @+1 {{'tile.barrier' op with an id must be in a tile.per_warpgroup body (warpgroups signal and wait for each other)}}
    tile.barrier id = 0
  }
}

// -----

tile.kernel @release_outside_warp_specialized(%a: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %a0 = tile.alloc : !tile.shared<[64, 64], bf16>
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 {
      tile.copy %a[%t, %c0] to %a0
          : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      // expected-error @+1 {{'tile.release' op must be in the body of a warp_specialized tile.pipelined (directly, or in tile.per_warpgroup or scf.if there): it hands a stage buffer back to the producer}}
      tile.release %a0 : !tile.shared<[64, 64], bf16>
    }
  }
}

// -----

tile.kernel @release_of_unstaged_tile(%a: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %a0 = tile.alloc : !tile.shared<[64, 64], bf16>
    %other = tile.alloc : !tile.shared<[64, 64], bf16>
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 1 warp_specialized {
      tile.copy %a[%t, %c0] to %a0
          : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      // expected-error @+1 {{'tile.release' op releases a tile that no copy of the loop fills (only the producer's stage buffers, or a tile.pick among them, can be released)}}
      tile.release %other : !tile.shared<[64, 64], bf16>
    }
  }
}

// -----

tile.kernel @named_barrier_beside_eight_warpgroups() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 1024 {
    tile.per_warpgroup (%wg) {
      // expected-error @+1 {{'tile.barrier' op with an id needs at most 896 threads in the launch (named barriers 10 + id lie above the warpgroups' own), got 1024}}
      tile.barrier id = 0
    }
  }
}

// -----

tile.kernel @all_of_rank() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %t = tile.alloc : !tile.shared<[8, 8], f32>
    // expected-error @+1 {{'tile.all_of' op tests 1-D tiles, got a source of shape [8, 8]}}
    %ok = tile.all_of %t : !tile.shared<[8, 8], f32> {
    ^bb0(%s: f32):
      %p = arith.constant true
      tile.yield %p : i1
    }
  }
}

// -----

tile.kernel @all_of_too_large() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %t = tile.alloc : !tile.shared<[2048], f32>
    // expected-error @+1 {{'tile.all_of' op reads the whole tile in every warp: at most 1024 elements, got 2048}}
    %ok = tile.all_of %t : !tile.shared<[2048], f32> {
    ^bb0(%s: f32):
      %p = arith.constant true
      tile.yield %p : i1
    }
  }
}

// -----

tile.kernel @all_of_argument() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %t = tile.alloc : !tile.shared<[64], f32>
    // expected-error @+1 {{'tile.all_of' op predicate takes one argument, the element ('f32')}}
    %ok = tile.all_of %t : !tile.shared<[64], f32> {
    ^bb0(%s: i32):
      %p = arith.constant true
      tile.yield %p : i1
    }
  }
}

// -----

// A fragment's all_of agrees only within a warp: a copy into shared memory
// (which ends with a block barrier) cannot be in the branch it decides.
tile.kernel @all_of_fragment_copy_in_branch() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %alpha = tile.alloc : !tile.frag<[64], f32>
    %saved = tile.alloc : !tile.shared<[64], f32>
    %one = arith.constant 1.0 : f32
    // expected-note @+1 {{the value comes from this fragment's tile.all_of}}
    %kept = tile.all_of %alpha : !tile.frag<[64], f32> {
    ^bb0(%a: f32):
      %p = arith.cmpf oeq, %a, %one : f32
      tile.yield %p : i1
    }
    scf.if %kept {
      // expected-error @+1 {{'tile.copy' op cannot be in control flow decided by a fragment's tile.all_of: the decision agrees only within a warp}}
      tile.copy %alpha to %saved : !tile.frag<[64], f32> to !tile.shared<[64], f32>
    }
  }
}

// -----

// ... nor a parallel that writes shared memory, also when the decision
// reaches the branch through other values.
tile.kernel @all_of_fragment_shared_store_in_branch(%flag: i1) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %alpha = tile.alloc : !tile.frag<[64], f32>
    %saved = tile.alloc : !tile.shared<[64], f32>
    %one = arith.constant 1.0 : f32
    // expected-note @+1 {{the value comes from this fragment's tile.all_of}}
    %kept = tile.all_of %alpha : !tile.frag<[64], f32> {
    ^bb0(%a: f32):
      %p = arith.cmpf oeq, %a, %one : f32
      tile.yield %p : i1
    }
    %both = arith.andi %kept, %flag : i1
    scf.if %both {
      tile.parallel (%i) in [64] {
        %a = tile.load %alpha[%i] : !tile.frag<[64], f32>
        // expected-error @+1 {{'tile.store' op cannot be in control flow decided by a fragment's tile.all_of}}
        tile.store %a, %saved[%i] : !tile.shared<[64], f32>
      }
    }
  }
}

// A warp-dependent value reaching control flow other than an scf.if
// condition, or a block-wide op, is refused too (review of the twenty-fifth
// session): a loop bound, an scf.if result, a carried value, a while
// condition, a local array written under the decision, a pick index.
// -----

tile.kernel @all_of_fragment_loop_bound() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %alpha = tile.alloc : !tile.frag<[64], f32>
    %saved = tile.alloc : !tile.shared<[64], f32>
    %g = tile.alloc : !tile.shared<[64], f32>
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    // expected-note @+1 {{the value comes from this fragment's tile.all_of}}
    %kept = tile.all_of %alpha : !tile.frag<[64], f32> {
    ^bb0(%a: f32):
      %p = arith.cmpf oeq, %a, %one : f32
      tile.yield %p : i1
    }
    %n = arith.select %kept, %c0, %c1 : index
    scf.for %i = %c0 to %n step %c1 {
      // expected-error @+1 {{'tile.copy' op cannot be in control flow decided by a fragment's tile.all_of}}
      tile.copy %g to %saved : !tile.shared<[64], f32> to !tile.shared<[64], f32>
    }
  }
}

// -----

tile.kernel @all_of_fragment_through_if_result(%flag: i1) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %alpha = tile.alloc : !tile.frag<[64], f32>
    %saved = tile.alloc : !tile.shared<[64], f32>
    %g = tile.alloc : !tile.shared<[64], f32>
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    // expected-note @+1 {{the value comes from this fragment's tile.all_of}}
    %kept = tile.all_of %alpha : !tile.frag<[64], f32> {
    ^bb0(%a: f32):
      %p = arith.cmpf oeq, %a, %one : f32
      tile.yield %p : i1
    }
    %c = scf.if %flag -> i1 {
      scf.yield %kept : i1
    } else {
      scf.yield %flag : i1
    }
    scf.if %c {
      // expected-error @+1 {{'tile.barrier' op cannot be in control flow decided by a fragment's tile.all_of}}
      tile.barrier
    }
  }
}

// -----

tile.kernel @all_of_fragment_carried() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %alpha = tile.alloc : !tile.frag<[64], f32>
    %saved = tile.alloc : !tile.shared<[64], f32>
    %g = tile.alloc : !tile.shared<[64], f32>
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    // expected-note @+1 {{the value comes from this fragment's tile.all_of}}
    %kept = tile.all_of %alpha : !tile.frag<[64], f32> {
    ^bb0(%a: f32):
      %p = arith.cmpf oeq, %a, %one : f32
      tile.yield %p : i1
    }
    %c4 = arith.constant 4 : index
    %last = scf.for %i = %c0 to %c4 step %c1 iter_args(%k = %kept) -> (i1) {
      scf.if %k {
        // expected-error @+1 {{'tile.barrier' op cannot be in control flow decided by a fragment's tile.all_of}}
        tile.barrier
      }
      scf.yield %k : i1
    }
  }
}

// -----

tile.kernel @all_of_fragment_while() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %alpha = tile.alloc : !tile.frag<[64], f32>
    %saved = tile.alloc : !tile.shared<[64], f32>
    %g = tile.alloc : !tile.shared<[64], f32>
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    // expected-note @+1 {{the value comes from this fragment's tile.all_of}}
    %kept = tile.all_of %alpha : !tile.frag<[64], f32> {
    ^bb0(%a: f32):
      %p = arith.cmpf oeq, %a, %one : f32
      tile.yield %p : i1
    }
    scf.while (%k = %kept) : (i1) -> () {
      scf.condition(%k)
    } do {
      // expected-error @+1 {{'tile.barrier' op cannot be in control flow decided by a fragment's tile.all_of}}
      tile.barrier
      %false = arith.constant false
      scf.yield %false : i1
    }
  }
}

// -----

tile.kernel @all_of_fragment_through_local() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %alpha = tile.alloc : !tile.frag<[64], f32>
    %saved = tile.alloc : !tile.shared<[64], f32>
    %g = tile.alloc : !tile.shared<[64], f32>
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    // expected-note @+1 {{the value comes from this fragment's tile.all_of}}
    %kept = tile.all_of %alpha : !tile.frag<[64], f32> {
    ^bb0(%a: f32):
      %p = arith.cmpf oeq, %a, %one : f32
      tile.yield %p : i1
    }
    %flagged = tile.alloc : !tile.local<[1], f32>
    scf.if %kept {
      tile.fill %flagged, %one : !tile.local<[1], f32>, f32
    }
    %v = tile.load %flagged[%c0] : !tile.local<[1], f32>
    %b = arith.cmpf oeq, %v, %one : f32
    scf.if %b {
      // expected-error @+1 {{'tile.barrier' op cannot be in control flow decided by a fragment's tile.all_of}}
      tile.barrier
    }
  }
}

// -----

tile.kernel @all_of_fragment_pick_index() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %alpha = tile.alloc : !tile.frag<[64], f32>
    %saved = tile.alloc : !tile.shared<[64], f32>
    %g = tile.alloc : !tile.shared<[64], f32>
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    // expected-note @+1 {{the value comes from this fragment's tile.all_of}}
    %kept = tile.all_of %alpha : !tile.frag<[64], f32> {
    ^bb0(%a: f32):
      %p = arith.cmpf oeq, %a, %one : f32
      tile.yield %p : i1
    }
    %w = arith.select %kept, %c0, %c1 : index
    // expected-error @+1 {{'tile.pick' op cannot take a value computed from a fragment's tile.all_of}}
    %t = tile.pick %w [%saved, %g] : !tile.shared<[64], f32>
    tile.fill %t, %one : !tile.shared<[64], f32>, f32
  }
}

// -----

tile.kernel @all_of_side_effect() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %t = tile.alloc : !tile.shared<[64], f32>
    %c0 = arith.constant 0 : index
    %ok = tile.all_of %t : !tile.shared<[64], f32> {
    ^bb0(%s: f32):
      // expected-error @+1 {{'tile.store' op cannot be in a tile.all_of predicate: it computes an i1 from the element with side-effect-free ops}}
      tile.store %s, %t[%c0] : !tile.shared<[64], f32>
      %p = arith.constant true
      tile.yield %p : i1
    }
  }
}

// -----

tile.kernel @all_of_yield() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %t = tile.alloc : !tile.shared<[64], f32>
    %ok = tile.all_of %t : !tile.shared<[64], f32> {
    ^bb0(%s: f32):
      // expected-error @+1 {{'tile.yield' op ends a tile.all_of predicate: it yields one i1, got 0 values}}
      tile.yield
    }
  }
}

// -----

tile.kernel @yield_values_outside_all_of() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    tile.parallel (%i) in [128] {
      %p = arith.constant true
      // expected-error @+1 {{'tile.yield' op yields values only in a tile.all_of predicate}}
      tile.yield %p : i1
    }
  }
}

// -----

tile.kernel @all_of_in_parallel() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %t = tile.alloc : !tile.shared<[64], f32>
    tile.parallel (%i) in [128] {
      // expected-error @+1 {{'tile.all_of' op is block-wide: every thread takes part, so it cannot be in a tile.parallel body (use tile.vote there)}}
      %ok = tile.all_of %t : !tile.shared<[64], f32> {
      ^bb0(%s: f32):
        %p = arith.constant true
        tile.yield %p : i1
      }
    }
  }
}

// -----

tile.kernel @overlap_gemm_stages(%k: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    // expected-error @+1 {{'tile.pipelined' op overlap_gemm needs warp_specialized and num_stages >= 3 (an iteration holds its own stage and the next one's), got num_stages = 2}}
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 warp_specialized overlap_gemm {
      tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %k_s, %q, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    }
  }
}

// -----

tile.kernel @overlap_gemm_accumulates(%k: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 3 warp_specialized overlap_gemm {
      tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      // expected-error @+1 {{'tile.gemm' op in an overlap_gemm loop must clear a fragment accumulator (clear_accum): the next iteration's gemm starts before this one's result is used}}
      tile.gemm %k_s, %q, %acc transpose_b
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    }
  }
}

// -----

tile.kernel @overlap_gemm_store_before(%k: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %flags = tile.alloc : !tile.shared<[4], i32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %one = arith.constant 1 : i32
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 3 warp_specialized overlap_gemm {
      tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      // expected-error @+1 {{'tile.store' op cannot come before the gemm of an overlap_gemm loop (only staged copies, loads, tile.all_of and side-effect-free ops can: they are issued again for the next iteration)}}
      tile.store %one, %flags[%t] : !tile.shared<[4], i32>
      tile.gemm %k_s, %q, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    }
  }
}

// -----

tile.kernel @overlap_gemm_used_after(%k: !tile.global<[?, 64], bf16>, %o: !tile.global<[64, 64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 3 warp_specialized overlap_gemm {
      tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      // expected-error @+1 {{'tile.gemm' op in an overlap_gemm loop has an accumulator used after the loop; it holds only the last iteration's value inside it}}
      tile.gemm %k_s, %q, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    }
    tile.copy %acc to %o[%c0, %c0] : !tile.frag<[64, 64], f32> to !tile.global<[64, 64], f32>
  }
}

// -----

tile.kernel @overlap_gemm_operand_written(%k: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %p = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 3 warp_specialized overlap_gemm {
      tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %p, %k_s, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      // expected-error @+1 {{'tile.cast' op writes a tile that the gemm of an overlap_gemm loop (or a load before it) reads: the next iteration's gemm would read it before this write}}
      tile.cast %acc to %p : !tile.frag<[64, 64], f32> to !tile.shared<[64, 64], bf16>
    }
  }
}

// -----

// (Review of the twenty-sixth session.) The gemm reads a tile.pick whose
// candidates include the tile the body writes.
tile.kernel @overlap_gemm_picked_operand_written(%k: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %x0 = tile.alloc : !tile.shared<[64, 64], bf16>
    %x1 = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %p = tile.alloc : !tile.frag<[64, 64], bf16>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 3 warp_specialized overlap_gemm {
      tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      %a = tile.pick %c0 [%x0, %x1] : !tile.shared<[64, 64], bf16>
      tile.gemm %a, %k_s, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      tile.cast %acc to %p : !tile.frag<[64, 64], f32> to !tile.frag<[64, 64], bf16>
      // expected-error @+1 {{'tile.copy' op writes a tile that the gemm of an overlap_gemm loop (or a load before it) reads: the next iteration's gemm would read it before this write}}
      tile.copy %p to %x0 : !tile.frag<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    }
  }
}

// -----

tile.kernel @copy_fragment_window() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %c = tile.alloc : !tile.frag<[64, 128], f32>
    %small = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    // expected-error @+1 {{'tile.copy' op takes a window of the source fragment; windows into fragments are not supported (copy the whole fragment, or go through shared memory)}}
    tile.copy %c[%c0, %c64] to %small : !tile.frag<[64, 128], f32> to !tile.frag<[64, 64], f32>
  }
}

// -----

tile.kernel @gemm_in_parallel() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 64], bf16>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    tile.parallel (%i) in [8] {
      // expected-error @+1 {{'tile.gemm' op cannot be in a tile.parallel body (the whole block runs a gemm together)}}
      tile.gemm %a, %a, %c transpose_b : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    }
  }
}

// -----

// Found by hisa-fuzz: a predicate block with no terminator crashed the
// verifier.
tile.kernel @all_of_empty_predicate() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %scales = tile.alloc : !tile.shared<[64], f32>
    // expected-error @+1 {{'tile.all_of' op predicate must end with tile.yield of an i1}}
    %ok = tile.all_of %scales : !tile.shared<[64], f32> {
    ^bb0(%s: f32):
    }
  }
}

// -----

tile.kernel @prefetch_shared() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %s = tile.alloc : !tile.shared<[64], i32>
    %c0 = arith.constant 0 : index
    %n = arith.constant 256 : index
    // expected-error @+1 {{'tile.prefetch' op operand #0 must be}}
    tile.prefetch %s[%c0], %n : !tile.shared<[64], i32>
  }
}

// -----

tile.kernel @prefetch_negative(%g: !tile.global<[?], i8>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %c0 = arith.constant 0 : index
    %n = arith.constant -16 : index
    // expected-error @+1 {{'tile.prefetch' op prefetches a negative byte count (-16)}}
    tile.prefetch %g[%c0], %n : !tile.global<[?], i8>
  }
}

// -----

tile.kernel @prefetch_rank(%g: !tile.global<[?, 8], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %c0 = arith.constant 0 : index
    %n = arith.constant 16 : index
    // expected-error @+1 {{'tile.prefetch' op expects 2 indices for a global tile [?, 8], got 1}}
    tile.prefetch %g[%c0], %n : !tile.global<[?, 8], bf16>
  }
}

// -----

tile.kernel @prefetch_outside_launch(%g: !tile.global<[?], i8>) {
  %c0 = arith.constant 0 : index
  %n = arith.constant 16 : index
  // expected-error @+1 {{'tile.prefetch' op must be nested in a tile.launch}}
  tile.prefetch %g[%c0], %n : !tile.global<[?], i8>
}

// -----

tile.kernel @fence_outside_launch() {
  // expected-error @+1 {{'tile.fence' op must be nested in a tile.launch}}
  tile.fence gpu
}

// -----

tile.kernel @fence_unknown_scope() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'scope' [block, gpu, system]}}
    tile.fence cluster
  }
}

// -----

tile.kernel @async_gemm_never_waited() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q = tile.alloc : !tile.shared<[64, 64], bf16>
    %s = tile.alloc : !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'tile.gemm' op is asynchronous but no tile.wait_gemms after it in its block (or after the scf.if holding it) waits for it}}
    tile.gemm %q, %q, %s transpose_b clear_accum async
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    // (Two newer gemms would have to be issued for this wait to cover it.)
    tile.wait_gemms pending = 1
  }
}

// -----

tile.kernel @async_gemm_accumulator_read_early() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q = tile.alloc : !tile.shared<[64, 64], bf16>
    %s = tile.alloc : !tile.frag<[64, 64], f32>
    %zero = arith.constant 0.0 : f32
    tile.gemm %q, %q, %s transpose_b clear_accum async
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'tile.parallel' op uses the accumulator of an asynchronous tile.gemm before a tile.wait_gemms waits for it}}
    tile.parallel (%i, %j) in [64, 64] {
      tile.store %zero, %s[%i, %j] : !tile.frag<[64, 64], f32>
    }
    tile.wait_gemms
  }
}

// -----

tile.kernel @async_gemm_register_a_rewritten() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %v = tile.alloc : !tile.shared<[64, 64], bf16>
    %p = tile.alloc : !tile.frag<[64, 64], bf16>
    %o = tile.alloc : !tile.frag<[64, 64], f32>
    %zero = arith.constant 0.0 : bf16
    tile.gemm %p, %v, %o async
        : !tile.frag<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'tile.fill' op writes the register A operand of an asynchronous tile.gemm before a tile.wait_gemms waits for it}}
    tile.fill %p, %zero : !tile.frag<[64, 64], bf16>, bf16
    tile.wait_gemms
  }
}

// -----

tile.kernel @async_gemm_wait_nested(%flag: i1) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q = tile.alloc : !tile.shared<[64, 64], bf16>
    %s = tile.alloc : !tile.frag<[64, 64], f32>
    tile.gemm %q, %q, %s transpose_b clear_accum async
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'scf.if' op holds a tile.gemm or tile.wait_gemms while an asynchronous tile.gemm before it is pending; wait for it in its own block first}}
    scf.if %flag {
      tile.wait_gemms
    }
    tile.wait_gemms
  }
}

// -----

tile.kernel @wait_gemms_pending_out_of_range() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    // expected-error @+1 {{'tile.wait_gemms' op pending must be between 0 and 7, got 8}}
    tile.wait_gemms pending = 8
  }
}

// -----

tile.kernel @overlap_gemm_async(%k: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 3 warp_specialized overlap_gemm {
      tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      // expected-error @+1 {{'tile.gemm' op in an overlap_gemm loop cannot be async (the loop issues it ahead and waits for it itself)}}
      tile.gemm %k_s, %q, %acc transpose_b clear_accum async
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      tile.wait_gemms
    }
  }
}

// -----

// A later gemm (attention's P V) waits for itself, and with it for the gemm
// issued ahead: it cannot be async.
tile.kernel @overlap_gemm_later_async(%k: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %p_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %out = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 3 warp_specialized overlap_gemm {
      tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %q, %k_s, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      // expected-error @+1 {{'tile.gemm' op after the first gemm of an overlap_gemm loop cannot be async (the rest of the iteration waits for it, and so for the gemm issued ahead)}}
      tile.gemm %p_s, %k_s, %out async
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      tile.wait_gemms
    }
  }
}

// -----

tile.kernel @overlap_gemm_later_same_accumulator(%k: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %p_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 3 warp_specialized overlap_gemm {
      tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %q, %k_s, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      // expected-error @+1 {{'tile.gemm' op writes the accumulator of the gemm an overlap_gemm loop issues ahead (the next iteration's gemm is then writing it)}}
      tile.gemm %p_s, %k_s, %acc
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    }
  }
}

// -----

tile.kernel @overlap_gemm_nested_same_accumulator(%k: !tile.global<[?, 64], bf16>, %flag: i1) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %p_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 3 warp_specialized overlap_gemm {
      tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %q, %k_s, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      scf.if %flag {
        // expected-error @+1 {{'tile.gemm' op writes the accumulator of the gemm an overlap_gemm loop issues ahead (the next iteration's gemm is then writing it)}}
        tile.gemm %p_s, %k_s, %acc
            : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
      }
    }
  }
}

// -----

// Block-wide ops on shared tiles or fragments run their barriers and
// shuffles with every thread: a parallel body runs per element under a
// guard some threads skip.
tile.kernel @reduce_in_parallel(%y: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %f = tile.alloc : !tile.frag<[128], f32>
    %total = tile.alloc : !tile.local<[1], f32>
    tile.parallel (%i) in [64] {
      // expected-error @+1 {{'tile.reduce' op works on a fragment tile with every thread of the block, so it cannot be in a tile.parallel body}}
      tile.reduce sum %f to %total dim = 0 : !tile.frag<[128], f32> to !tile.local<[1], f32>
    }
  }
}

// -----

tile.kernel @fill_in_parallel() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %s = tile.alloc : !tile.shared<[64], f32>
    %zero = arith.constant 0.0 : f32
    tile.parallel (%i) in [64] {
      // expected-error @+1 {{'tile.fill' op works on a shared tile with every thread of the block}}
      tile.fill %s, %zero : !tile.shared<[64], f32>, f32
    }
  }
}

// -----

tile.kernel @copy_in_parallel(%x: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %s = tile.alloc : !tile.shared<[64], f32>
    tile.parallel (%i) in [128] {
      // expected-error @+1 {{'tile.copy' op works on a shared tile with every thread of the block}}
      tile.copy %x to %s : !tile.global<[64], f32> to !tile.shared<[64], f32>
    }
  }
}

// -----

tile.kernel @cast_in_parallel() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %f = tile.alloc : !tile.frag<[64, 64], f32>
    %h = tile.alloc : !tile.frag<[64, 64], bf16>
    tile.parallel (%i) in [128] {
      // expected-error @+1 {{'tile.cast' op works on a fragment tile with every thread of the block}}
      tile.cast %f to %h : !tile.frag<[64, 64], f32> to !tile.frag<[64, 64], bf16>
    }
  }
}

// -----

tile.kernel @pipelined_in_parallel(%x: !tile.global<[?, 64], f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    tile.parallel (%i) in [128] {
      // expected-error @+1 {{'tile.pipelined' op cannot be in a tile.parallel body (its copies, stages and barriers are the whole block's)}}
      tile.pipelined %t = %c0 to %c1 step %c1 num_stages = 2 {
      }
    }
  }
}

// -----

// A thread's own local tiles are per thread: fill and copy them anywhere.
tile.kernel @local_fill_in_parallel(%y: !tile.global<[128], f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %l = tile.alloc : !tile.local<[1], f32>
    %zero = arith.constant 0.0 : f32
    tile.parallel (%i) in [128] {
      tile.fill %l, %zero : !tile.local<[1], f32>, f32
      %v = tile.load %l[%c0] : !tile.local<[1], f32>
      tile.store %v, %y[%i] : !tile.global<[128], f32>
    }
  }
}

// -----

// A constant index past an on-chip tile would address its neighbour.
tile.kernel @constant_index_past_a_local_tile() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %c7 = arith.constant 7 : index
    %l = tile.alloc : !tile.local<[4], f32>
    %one = arith.constant 1.0 : f32
    // expected-error @+1 {{'tile.store' op index 7 is out of range for dimension 0 of a local tile [4]}}
    tile.store %one, %l[%c7] : !tile.local<[4], f32>
  }
}

// -----

tile.kernel @constant_index_past_a_shared_tile(%y: !tile.global<[1], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %c_1 = arith.constant -1 : index
    %s = tile.alloc : !tile.shared<[4], f32>
    // expected-error @+1 {{'tile.load' op index -1 is out of range for dimension 0 of a shared tile [4]}}
    %v = tile.load %s[%c_1] : !tile.shared<[4], f32>
  }
}

// -----

tile.kernel @window_past_a_shared_tile(%x: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %c48 = arith.constant 48 : index
    %f = tile.alloc : !tile.frag<[64], f32>
    %s = tile.alloc : !tile.shared<[64], f32>
    tile.copy %x to %f : !tile.global<[64], f32> to !tile.frag<[64], f32>
    // expected-error @+1 {{'tile.copy' op a fragment tile [64] at offset 48 in dimension 0 runs past the destination shared tile [64]}}
    tile.copy %f to %s[%c48] : !tile.frag<[64], f32> to !tile.shared<[64], f32>
  }
}

// -----

tile.kernel @row_past_a_shared_tile(%x: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %s = tile.alloc : !tile.shared<[4, 64], f32>
    // expected-error @+1 {{'tile.copy' op offset 4 is out of range for dimension 0 of the destination shared tile [4, 64]}}
    tile.copy %x to %s[%c4, %c0] : !tile.global<[64], f32> to !tile.shared<[4, 64], f32>
  }
}

// -----

// expected-error @+1 {{tile elements must be whole bytes, got 'i1' (1 bits; hold flags or 4-bit codes in i8)}}
tile.kernel @bits(%x: !tile.global<[4096], i1>) {
}

// -----

// The name becomes a PTX entry point (NVPTX aborted on a '-').
// expected-error @+1 {{'tile.kernel' op name 'k-1' is not a PTX identifier}}
tile.kernel @"k-1"() {
}

// -----

// A tile passed through an SSA alias is one the shared-memory plan cannot
// see (its bytes were reused while it was read; the lowering crashed).
tile.kernel @select_alias(%g: !tile.global<[64], f32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64], f32>
    %b = tile.alloc : !tile.shared<[64], f32>
    %cond = arith.cmpi eq, %n, %c0 : index
    // expected-error @+1 {{'arith.select' op yields a shared tile [64]; on-chip tiles are named by tile.alloc, tile.view and tile.pick only (choose between tiles with tile.pick)}}
    %sel = arith.select %cond, %a, %b : !tile.shared<[64], f32>
  }
}

// -----

tile.kernel @if_alias(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.frag<[64], f32>
    %b = tile.alloc : !tile.frag<[64], f32>
    %cond = arith.cmpi eq, %n, %c0 : index
    // expected-error @+1 {{'scf.if' op yields a fragment tile [64]}}
    %t = scf.if %cond -> (!tile.frag<[64], f32>) {
      scf.yield %a : !tile.frag<[64], f32>
    } else {
      scf.yield %b : !tile.frag<[64], f32>
    }
  }
}

// -----

// The launch packs scalar floats as f32 or f64: a 16-bit one arrived as a
// double's low bytes.
// expected-error @+1 {{'tile.kernel' op argument #0 is a 'bf16' scalar; scalar floats are f32 or f64 (convert in the kernel)}}
tile.kernel @half_scalar(%s: bf16) {
}

// -----

// Under scf control flow a constant index is not checked: the branch may be
// dead for this specialization (here n = 1 never takes it).
tile.kernel @constant_index_in_a_branch_dead_for_n_1() params {n = 1} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %l = tile.alloc : !tile.local<[n], f32>
    %n = tile.param "n" : index
    %two_or_more = arith.cmpi ugt, %n, %c1 : index
    %one = arith.constant 1.0 : f32
    scf.if %two_or_more {
      tile.store %one, %l[%c1] : !tile.local<[n], f32>
    }
  }
}

// -----

tile.kernel @rejoin_not_last(%out: !tile.global<[?], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %rows = tile.alloc : !tile.shared<[256], i32>
    %zero = arith.constant 0 : i32
    // expected-error @+1 {{'tile.rejoin' op must be the last op of a tile.launch body}}
    tile.rejoin {
      tile.fill %rows, %zero : !tile.shared<[256], i32>, i32
    }
    tile.fill %rows, %zero : !tile.shared<[256], i32>, i32
  }
}

// -----

tile.kernel @rejoin_fragment(%out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %sums = tile.alloc : !tile.frag<[64], f32>
    %c0 = arith.constant 0 : index
    tile.rejoin {
      // expected-error @+1 {{'tile.copy' op uses a fragment inside tile.rejoin (fragments are laid out over the launch's threads, not the producer's)}}
      tile.copy %sums to %out[%c0] : !tile.frag<[64], f32> to !tile.global<[64], f32>
    }
  }
}

// -----

tile.kernel @rejoin_loaded_outside(%n: !tile.global<[4], i32>, %out: !tile.global<[?], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %c0 = arith.constant 0 : index
    // expected-note @+1 {{it comes from here}}
    %count = tile.load %n[%c0] : !tile.global<[4], i32>
    tile.rejoin {
      tile.parallel (%i) in [256] {
        // expected-error @+1 {{'tile.store' op uses a value from before tile.rejoin that the producer warpgroup cannot recompute; compute it inside the body (loads included)}}
        tile.store %count, %out[%i] : !tile.global<[?], i32>
      }
    }
  }
}
