// Round trip of every tile op and type: print, re-parse, and the generic form.
// RUN: hisa-opt %s -split-input-file | hisa-opt -split-input-file | FileCheck %s
// RUN: hisa-opt %s -split-input-file --mlir-print-op-generic | hisa-opt -split-input-file | FileCheck %s

// CHECK-LABEL: tile.kernel @all_ops
// CHECK-SAME: (%{{.*}}: !tile.global<[?, heads, dim], f8E4M3FN>, %{{.*}}: !tile.global<[?, ?], f32>, %{{.*}}: !tile.global<[?], i32>, %{{.*}}: index)
// CHECK-SAME: params {block_q = 2, dim = 128, heads = 64}
tile.kernel @all_ops(%q: !tile.global<[?, heads, dim], f8E4M3FN>,
                     %out: !tile.global<[?, ?], f32>,
                     %idx: !tile.global<[?], i32>,
                     %n: index)
    params {heads = 64, dim = 128, block_q = 2} {
  // CHECK: %[[M:.*]] = tile.dim %{{.*}}, 0 : !tile.global<[?, heads, dim], f8E4M3FN>
  %m = tile.dim %q, 0 : !tile.global<[?, heads, dim], f8E4M3FN>
  // CHECK: %[[BQ:.*]] = tile.param "block_q" : index
  %block_q = tile.param "block_q" : index
  // CHECK: %[[G:.*]] = arith.ceildivui %[[M]], %[[BQ]]
  %grid = arith.ceildivui %m, %block_q : index
  // CHECK: tile.launch (%[[BX:.*]], %[[BY:.*]]) in (%[[G]], %{{.*}}) threads 256 {
  tile.launch (%bx, %by) in (%grid, %n) threads 256 {
    // CHECK: %[[QS:.*]] = tile.alloc : !tile.shared<[block_q, heads, dim], f8E4M3FN>
    %q_s = tile.alloc : !tile.shared<[block_q, heads, dim], f8E4M3FN>
    // CHECK: %[[KS:.*]] = tile.alloc : !tile.shared<[64, dim], f8E4M3FN>
    %k_s = tile.alloc : !tile.shared<[64, dim], f8E4M3FN>
    // CHECK: %[[ACC:.*]] = tile.alloc : !tile.frag<[block_q*heads, 64], f32>
    %acc = tile.alloc : !tile.frag<[heads*block_q, 64], f32>
    // CHECK: %[[ROW:.*]] = tile.alloc : !tile.frag<[block_q, 64], f32>
    %row = tile.alloc : !tile.frag<[block_q, 64], f32>
    // CHECK: %[[LOC:.*]] = tile.alloc : !tile.local<[2], i32>
    %loc = tile.alloc : !tile.local<[2], i32>
    // CHECK: %[[H16:.*]] = tile.alloc : !tile.shared<[64, 32], f16>
    %h16 = tile.alloc : !tile.shared<[64, 32], f16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32

    // CHECK: tile.copy %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] to %[[QS]] : !tile.global<[?, heads, dim], f8E4M3FN> to !tile.shared<[block_q, heads, dim], f8E4M3FN>
    tile.copy %q[%bx, %c0, %c0] to %q_s
        : !tile.global<[?, heads, dim], f8E4M3FN> to !tile.shared<[block_q, heads, dim], f8E4M3FN>
    // CHECK: tile.copy %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] to %[[KS]] : !tile.global<[?, heads, dim], f8E4M3FN> to !tile.shared<[64, dim], f8E4M3FN>
    tile.copy %q[%by, %c0, %c0] to %k_s
        : !tile.global<[?, heads, dim], f8E4M3FN> to !tile.shared<[64, dim], f8E4M3FN>
    // CHECK: %[[QV:.*]] = tile.view %[[QS]] : !tile.shared<[block_q, heads, dim], f8E4M3FN> to !tile.shared<[block_q*heads, dim], f8E4M3FN>
    %q_rows = tile.view %q_s
        : !tile.shared<[block_q, heads, dim], f8E4M3FN> to !tile.shared<[block_q*heads, dim], f8E4M3FN>
    // CHECK: tile.clear %[[ACC]] : !tile.frag<[block_q*heads, 64], f32>
    tile.clear %acc : !tile.frag<[block_q*heads, 64], f32>
    // CHECK: tile.fill %[[ROW]], %{{.*}} : !tile.frag<[block_q, 64], f32>, f32
    tile.fill %row, %zero : !tile.frag<[block_q, 64], f32>, f32

    // CHECK: tile.pipelined %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} num_stages = 3 {
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 3 {
      // CHECK: tile.gemm %[[QV]], %[[KS]], %[[ACC]] transpose_b policy(full_row) : !tile.shared<[block_q*heads, dim], f8E4M3FN>, !tile.shared<[64, dim], f8E4M3FN> -> !tile.frag<[block_q*heads, 64], f32>
      tile.gemm %q_rows, %k_s, %acc transpose_b policy(full_row)
          : !tile.shared<[block_q*heads, dim], f8E4M3FN>, !tile.shared<[64, dim], f8E4M3FN>
            -> !tile.frag<[block_q*heads, 64], f32>
      // CHECK: tile.parallel (%[[I:.*]], %[[J:.*]]) in [block_q*heads, 64] {
      tile.parallel (%i, %j) in [block_q*heads, 64] {
        // CHECK: %[[X:.*]] = tile.load %[[ACC]][%[[I]], %[[J]]] : !tile.frag<[block_q*heads, 64], f32>
        %x = tile.load %acc[%i, %j] : !tile.frag<[block_q*heads, 64], f32>
        %r = arith.maximumf %x, %zero : f32
        // CHECK: tile.store %{{.*}}, %[[ACC]][%[[I]], %[[J]]] : !tile.frag<[block_q*heads, 64], f32>
        tile.store %r, %acc[%i, %j] : !tile.frag<[block_q*heads, 64], f32>
      }
    }
    %acc3 = tile.view %acc
        : !tile.frag<[block_q*heads, 64], f32> to !tile.frag<[block_q, heads, 64], f32>
    // CHECK: tile.reduce sum %{{.*}} to %[[ROW]] dim = 1 : !tile.frag<[block_q, heads, 64], f32> to !tile.frag<[block_q, 64], f32>
    tile.reduce sum %acc3 to %row dim = 1
        : !tile.frag<[block_q, heads, 64], f32> to !tile.frag<[block_q, 64], f32>
    // CHECK: tile.reduce max %{{.*}} to %[[ROW]] dim = 1 accumulate
    tile.reduce max %acc3 to %row dim = 1 accumulate
        : !tile.frag<[block_q, heads, 64], f32> to !tile.frag<[block_q, 64], f32>
    // CHECK: tile.reduce max %{{.*}} to %[[ROW]] dim = 1 chains = 4 :
    tile.reduce max %acc3 to %row dim = 1 chains = 4
        : !tile.frag<[block_q, heads, 64], f32> to !tile.frag<[block_q, 64], f32>
    // CHECK: tile.reduce min
    tile.reduce min %acc3 to %row dim = 1
        : !tile.frag<[block_q, heads, 64], f32> to !tile.frag<[block_q, 64], f32>
    // CHECK: tile.reduce absmax
    tile.reduce absmax %acc3 to %row dim = 1
        : !tile.frag<[block_q, heads, 64], f32> to !tile.frag<[block_q, 64], f32>
    // CHECK: tile.reduce abssum
    tile.reduce abssum %acc3 to %row dim = 1
        : !tile.frag<[block_q, heads, 64], f32> to !tile.frag<[block_q, 64], f32>
    // CHECK: tile.copy %[[ROW]] to %{{.*}}[%{{.*}}, %{{.*}}] : !tile.frag<[block_q, 64], f32> to !tile.global<[?, ?], f32>
    tile.copy %row to %out[%bx, %c0] : !tile.frag<[block_q, 64], f32> to !tile.global<[?, ?], f32>

    // CHECK: tile.cast %[[ROW]] to %{{.*}} : !tile.frag<[block_q, 64], f32> to !tile.frag<[block_q, 64], bf16>
    %row_bf16 = tile.alloc : !tile.frag<[block_q, 64], bf16>
    tile.cast %row to %row_bf16 : !tile.frag<[block_q, 64], f32> to !tile.frag<[block_q, 64], bf16>

    // CHECK: tile.gemm %[[H16]], %[[H16]], %{{.*}} transpose_a clear_accum :
    %hc = tile.alloc : !tile.frag<[32, 32], f16>
    tile.gemm %h16, %h16, %hc transpose_a clear_accum
        : !tile.shared<[64, 32], f16>, !tile.shared<[64, 32], f16> -> !tile.frag<[32, 32], f16>

    // CHECK: %{{.*}} = tile.load %{{.*}}[%{{.*}}] : !tile.global<[?], i32>
    %v = tile.load %idx[%bx] : !tile.global<[?], i32>
    // CHECK: tile.store %{{.*}}, %[[LOC]][%{{.*}}] : !tile.local<[2], i32>
    tile.store %v, %loc[%c1] : !tile.local<[2], i32>
    // CHECK: tile.store %{{.*}}, %{{.*}}[%{{.*}}] : !tile.global<[?], i32>
    tile.store %v, %idx[%by] : !tile.global<[?], i32>
  }
}

// -----

// A fragment whose layout has been assigned prints it as an attribute.
// CHECK-LABEL: tile.kernel @fragment_layout
// CHECK: tile.alloc : !tile.frag<[64, 64], f32, #tile.frag_layout<threads = 128, values = 32, map = (d0, d1) -> ((d0 floordiv 32) * 16 + (d0 mod 32) floordiv 4 + ((d1 floordiv 2) mod 2) * 8, (d1 floordiv 4) * 8 + (d0 mod 4) * 2 + d1 mod 2)>>
tile.kernel @fragment_layout() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %acc = tile.alloc : !tile.frag<[64, 64], f32, #tile.frag_layout<threads = 128, values = 32,
        map = (t, v) -> ((t floordiv 32) * 16 + (t mod 32) floordiv 4 + ((v floordiv 2) mod 2) * 8,
                         (v floordiv 4) * 8 + (t mod 4) * 2 + v mod 2)>>
  }
}

// -----

// Three-dimensional grids, scalar arguments, no parameters.
// CHECK-LABEL: tile.kernel @grid3
// CHECK: tile.launch (%[[X:.*]], %[[Y:.*]], %[[Z:.*]]) in (%{{.*}}, %{{.*}}, %{{.*}}) threads 32 {
tile.kernel @grid3(%a: index, %b: i32, %alpha: f32) {
  tile.launch (%x, %y, %z) in (%a, %a, %a) threads 32 {
  }
}

// -----

// An occupancy hint: blocks_per_sm (CUDA's __launch_bounds__ second value).
// CHECK-LABEL: tile.kernel @occupancy
// CHECK: tile.launch (%{{.*}}) in (%{{.*}}) threads 128 blocks_per_sm 5 {
tile.kernel @occupancy(%a: index) {
  tile.launch (%x) in (%a) threads 128 blocks_per_sm 5 {
  }
}

// -----

// blocks_per_sm may name a parameter.
// CHECK-LABEL: tile.kernel @occupancy_param
// CHECK: tile.launch (%{{.*}}) in (%{{.*}}) threads 256 blocks_per_sm "blocks" {
tile.kernel @occupancy_param(%a: index) params {blocks = 3} {
  tile.launch (%x) in (%a) threads 256 blocks_per_sm "blocks" {
  }
}

// -----

// Thread-block clusters: the rank, the cluster barrier and a peer's shared
// element; the size may name a parameter.
// CHECK-LABEL: tile.kernel @cluster_pair
// CHECK: tile.launch (%{{.*}}) in (%{{.*}}) threads 128 cluster 2 {
// CHECK: %[[RANK:.*]] = tile.cluster_rank : index
// CHECK: tile.cluster_barrier
// CHECK: tile.load %{{.*}}[%{{.*}}] peer %{{.*}} : !tile.shared<[128], f32>
tile.kernel @cluster_pair(%a: index, %out: !tile.global<[?], f32>) {
  tile.launch (%x) in (%a) threads 128 cluster 2 {
    %s = tile.alloc : !tile.shared<[128], f32>
    %c1 = arith.constant 1 : index
    %rank = tile.cluster_rank : index
    %other = arith.subi %c1, %rank : index
    tile.cluster_barrier
    tile.parallel (%i) in [128] {
      %v = tile.load %s[%i] peer %other : !tile.shared<[128], f32>
      tile.store %v, %out[%i] : !tile.global<[?], f32>
    }
    tile.cluster_barrier
  }
}

// -----

// CHECK-LABEL: tile.kernel @cluster_param
// CHECK: tile.launch (%{{.*}}) in (%{{.*}}) threads 128 cluster "pair" {
tile.kernel @cluster_param(%a: index) params {pair = 2} {
  tile.launch (%x) in (%a) threads 128 cluster "pair" {
  }
}

// -----

// Atomics on shared and global memory, at indices computed in the body.
// CHECK-LABEL: tile.kernel @atomics
// CHECK: %{{.*}} = tile.atomic add %{{.*}}, %{{.*}}[%{{.*}}] : !tile.shared<[256], i32>
// CHECK: %{{.*}} = tile.atomic umax %{{.*}}, %{{.*}}[%{{.*}}] : !tile.global<[?], i32>
// CHECK: %{{.*}} = tile.atomic min %{{.*}}, %{{.*}}[%{{.*}}] : !tile.global<[4], f32>
tile.kernel @atomics(%g: !tile.global<[?], i32>, %f: !tile.global<[4], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %s = tile.alloc : !tile.shared<[256], i32>
    tile.parallel (%i) in [256] {
      %one = arith.constant 1 : i32
      %x = arith.constant 2.0 : f32
      %c3 = arith.constant 3 : index
      %a = tile.atomic add %one, %s[%i] : !tile.shared<[256], i32>
      %b = tile.atomic umax %a, %g[%i] : !tile.global<[?], i32>
      %c = tile.atomic min %x, %f[%c3] : !tile.global<[4], f32>
    }
  }
}

// -----

// Memory fences at each scope.
// CHECK-LABEL: tile.kernel @fences
// CHECK: tile.fence block
// CHECK: tile.fence gpu
// CHECK: tile.fence system
tile.kernel @fences() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    tile.fence block
    tile.fence gpu
    tile.fence system
  }
}

// -----

// L2 prefetches of a global byte range, per element of a parallel domain
// and in serial code.
// CHECK-LABEL: tile.kernel @prefetch
// CHECK: tile.prefetch %{{.*}}[%{{.*}}], %{{.*}} : !tile.global<[?], i8>
// CHECK: tile.prefetch %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} : !tile.global<[?, 64], bf16>
tile.kernel @prefetch(%bytes: !tile.global<[?], i8>, %w: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %c0 = arith.constant 0 : index
    %chunk = arith.constant 4096 : index
    tile.parallel (%i) in [32] {
      %at = arith.muli %i, %chunk : index
      tile.prefetch %bytes[%at], %chunk : !tile.global<[?], i8>
    }
    tile.prefetch %w[%bx, %c0], %chunk : !tile.global<[?, 64], bf16>
  }
}

// -----

// Block-wide scans and warp collectives.
// CHECK-LABEL: tile.kernel @scans
// CHECK: %{{.*}} = tile.scan sum %{{.*}} to %{{.*}} reverse : !tile.shared<[256], i32> to !tile.shared<[256], i32>
// CHECK: %{{.*}} = tile.scan max %{{.*}} to %{{.*}} exclusive : !tile.shared<[256], f32> to !tile.shared<[256], f32>
// CHECK: %{{.*}}, %{{.*}} = tile.warp_scan sum %{{.*}} exclusive : i32
// CHECK: %{{.*}} = tile.vote ballot %{{.*}} : i32
// CHECK: %{{.*}} = tile.vote any %{{.*}} : i1
// CHECK: %{{.*}} = tile.warp_broadcast %{{.*}}, %{{.*}} : i32
// CHECK: %{{.*}} = tile.warp_match %{{.*}} : i32
tile.kernel @scans() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %s = tile.alloc : !tile.shared<[256], i32>
    %f = tile.alloc : !tile.shared<[256], f32>
    %total = tile.scan sum %s to %s reverse : !tile.shared<[256], i32> to !tile.shared<[256], i32>
    %top = tile.scan max %f to %f exclusive : !tile.shared<[256], f32> to !tile.shared<[256], f32>
    tile.parallel (%i) in [256] {
      %v = tile.load %s[%i] : !tile.shared<[256], i32>
      %rank, %count = tile.warp_scan sum %v exclusive : i32
      %zero = arith.constant 0 : i32
      %odd = arith.cmpi ne, %v, %zero : i32
      %bits = tile.vote ballot %odd : i32
      %some = tile.vote any %odd : i1
      %lane0 = arith.constant 0 : i32
      %base = tile.warp_broadcast %count, %lane0 : i32
      %peers = tile.warp_match %v : i32
    }
  }
}

// -----

// A gather: rows of a global tensor chosen by row numbers in a shared tile,
// from a position that follows a loop.
// CHECK-LABEL: tile.kernel @gather_rows
tile.kernel @gather_rows(%kv: !tile.global<[?, 512], bf16>, %idx: !tile.global<[?, 256], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %rows = tile.alloc : !tile.shared<[256], i32>
    %kv_s = tile.alloc : !tile.shared<[64, 512], bf16>
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    tile.copy %idx[%bx, %c0] to %rows : !tile.global<[?, 256], i32> to !tile.shared<[256], i32>
    // CHECK: tile.copy %{{.*}} rows(%{{.*}}[%{{.*}}] : !tile.shared<[256], i32>) to %{{.*}} : !tile.global<[?, 512], bf16> to !tile.shared<[64, 512], bf16>
    tile.copy %kv rows(%rows[%c64] : !tile.shared<[256], i32>) to %kv_s
        : !tile.global<[?, 512], bf16> to !tile.shared<[64, 512], bf16>
  }
}

// -----

// tile.call: a device function over a shape symbol.
func.func private @zero_all(%t: !tile.shared<[n], i32>) {
  %z = arith.constant 0 : i32
  tile.fill %t, %z : !tile.shared<[n], i32>, i32
  return
}

// CHECK-LABEL: tile.kernel @calls
tile.kernel @calls() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %t = tile.alloc : !tile.shared<[16], i32>
    // CHECK: tile.call @zero_all(%{{.*}}) : (!tile.shared<[16], i32>) -> ()
    tile.call @zero_all(%t) : (!tile.shared<[16], i32>) -> ()
  }
}

// A warp-specialized pipeline prints its role split.
// CHECK-LABEL: tile.kernel @warp_specialized
tile.kernel @warp_specialized(%k: !tile.global<[?, 64], bf16>, %n: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %c0 = arith.constant 0 : index
    // CHECK: tile.pipelined %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} num_stages = 2 warp_specialized {
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 2 warp_specialized {
      tile.copy %k[%t, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    }
  }
}

// -----

// tile.per_warpgroup: each warpgroup's own index.
// CHECK-LABEL: tile.kernel @per_warpgroup
// CHECK: tile.per_warpgroup (%[[WG:.*]]) {
// CHECK: tile.store %{{.*}}, %{{.*}}[%[[WG]]] : !tile.shared<[2], i32>
// CHECK: tile.pick %[[WG]] [%{{.*}}, %{{.*}}] : !tile.shared<[2], i32>
// CHECK: tile.barrier
tile.kernel @per_warpgroup(%out: !tile.global<[2], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %owner = tile.alloc : !tile.shared<[2], i32>
    %other = tile.alloc : !tile.shared<[2], i32>
    tile.per_warpgroup (%wg) {
      %v = arith.index_cast %wg : index to i32
      tile.store %v, %owner[%wg] : !tile.shared<[2], i32>
      %mine = tile.pick %wg [%owner, %other] : !tile.shared<[2], i32>
      tile.barrier
    }
    tile.copy %owner to %out : !tile.shared<[2], i32> to !tile.global<[2], i32>
  }
}

// -----

// tile.release, named barriers and an unsynchronized tile.per_warpgroup in
// a one-stage warp-specialized loop.
// CHECK-LABEL: tile.kernel @released_stages
// CHECK: tile.pipelined %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} num_stages = 1 warp_specialized {
// CHECK: tile.per_warpgroup (%[[WG:.*]]) unsynchronized {
// CHECK: %[[OWN:.*]] = tile.pick %[[WG]]
// CHECK: tile.release %[[OWN]] : !tile.shared<[64, 64], bf16>
// CHECK: tile.barrier id = 0 arrive_only
// CHECK: tile.barrier id = 0{{$}}
tile.kernel @released_stages(%a: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 256 {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %a0 = tile.alloc : !tile.shared<[64, 64], bf16>
    %a1 = tile.alloc : !tile.shared<[64, 64], bf16>
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 1 warp_specialized {
      tile.copy %a[%t, %c0] to %a0
          : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.copy %a[%t, %c0] to %a1
          : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.per_warpgroup (%wg) unsynchronized {
        %own = tile.pick %wg [%a0, %a1] : !tile.shared<[64, 64], bf16>
        tile.release %own : !tile.shared<[64, 64], bf16>
        tile.barrier id = 0 arrive_only
        tile.barrier id = 0
      }
    }
  }
}

// -----

// A predicate over a small shared tile, the same in every thread.
// CHECK-LABEL: tile.kernel @all_of
// CHECK: %[[OK:.*]] = tile.all_of %{{.*}} : !tile.shared<[kt], f32> {
// CHECK: ^bb0(%[[S:.*]]: f32):
// CHECK: %[[P:.*]] = arith.cmpf oge, %[[S]], %{{.*}} : f32
// CHECK: tile.yield %[[P]] : i1
// CHECK: scf.if %[[OK]]
tile.kernel @all_of() params {kt = 64} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %scales = tile.alloc : !tile.shared<[kt], f32>
    %zero = arith.constant 0.0 : f32
    %ok = tile.all_of %scales : !tile.shared<[kt], f32> {
    ^bb0(%s: f32):
      %p = arith.cmpf oge, %s, %zero : f32
      tile.yield %p : i1
    }
    scf.if %ok {
      tile.fill %scales, %zero : !tile.shared<[kt], f32>, f32
    }
  }
}

// -----

// A predicate over the fragment elements a warp holds; the branch it
// decides holds only thread-local work (here a parallel over registers,
// reached through an arith.xori).
// CHECK-LABEL: tile.kernel @all_of_fragment
// CHECK: %[[KEPT:.*]] = tile.all_of %{{.*}} : !tile.frag<[64], f32> {
// CHECK: tile.yield %{{.*}} : i1
// CHECK: %[[MOVED:.*]] = arith.xori %[[KEPT]]
// CHECK: scf.if %[[MOVED]]
// CHECK: tile.parallel
tile.kernel @all_of_fragment() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %alpha = tile.alloc : !tile.frag<[64], f32>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %one = arith.constant 1.0 : f32
    %true = arith.constant true
    %kept = tile.all_of %alpha : !tile.frag<[64], f32> {
    ^bb0(%a: f32):
      %p = arith.cmpf oeq, %a, %one : f32
      tile.yield %p : i1
    }
    %moved = arith.xori %kept, %true : i1
    scf.if %moved {
      tile.parallel (%i, %j) in [64, 64] {
        %x = tile.load %acc[%i, %j] : !tile.frag<[64, 64], f32>
        %f = tile.load %alpha[%i] : !tile.frag<[64], f32>
        %y = arith.mulf %x, %f : f32
        tile.store %y, %acc[%i, %j] : !tile.frag<[64, 64], f32>
      }
    }
  }
}

// -----

// CHECK-LABEL: tile.kernel @recompute_after
// CHECK: tile.pipelined %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} num_stages = 2 warp_specialized recompute_after {
tile.kernel @recompute_after(%k: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 2 warp_specialized recompute_after {
      %row = arith.muli %t, %c64 : index
      tile.copy %k[%row, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
    }
  }
}

// -----

// CHECK-LABEL: tile.kernel @overlap_gemm
// CHECK: tile.pipelined %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} num_stages = 3 warp_specialized overlap_gemm {
tile.kernel @overlap_gemm(%k: !tile.global<[?, 64], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %acc = tile.alloc : !tile.frag<[64, 64], f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    tile.pipelined %t = %c0 to %c4 step %c1 num_stages = 3 warp_specialized overlap_gemm {
      %row = arith.muli %t, %c64 : index
      tile.copy %k[%row, %c0] to %k_s : !tile.global<[?, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.gemm %k_s, %q, %acc transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    }
  }
}

// -----

// CHECK-LABEL: tile.kernel @async_gemms
// CHECK: tile.gemm %{{.*}}, %{{.*}}, %{{.*}} transpose_b clear_accum async :
// CHECK: tile.gemm %{{.*}}, %{{.*}}, %{{.*}} policy(full_row) async :
// CHECK: tile.wait_gemms pending = 1
// CHECK: tile.wait_gemms{{$}}
tile.kernel @async_gemms() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %q = tile.alloc : !tile.shared<[64, 64], bf16>
    %k_s = tile.alloc : !tile.shared<[64, 64], bf16>
    %s = tile.alloc : !tile.frag<[64, 64], f32>
    %o = tile.alloc : !tile.frag<[64, 64], f32>
    tile.gemm %q, %k_s, %s transpose_b clear_accum async
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.gemm %q, %k_s, %o policy(full_row) async
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.wait_gemms pending = 1
    tile.wait_gemms
    // Two halves of one product on one accumulator, and a register A read
    // (stored) while its gemm runs.
    %p = tile.alloc : !tile.frag<[64, 64], bf16>
    %p_s = tile.alloc : !tile.shared<[64, 64], bf16>
    tile.gemm %q, %k_s, %s transpose_b clear_accum async
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.gemm %k_s, %q, %s transpose_b async
        : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.gemm %p, %k_s, %o async
        : !tile.frag<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
    tile.copy %p to %p_s : !tile.frag<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
    tile.wait_gemms
  }
}

// tile.rejoin: the block's threads, a warp-specialized loop's producer
// included, after the loop.
// CHECK-LABEL: tile.kernel @rejoin
// CHECK: tile.rejoin {
// CHECK: tile.scan sum
tile.kernel @rejoin(%out: !tile.global<[?], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %rows = tile.alloc : !tile.shared<[256], i32>
    %prefix = tile.alloc : !tile.shared<[256], i32>
    tile.rejoin {
      %total = tile.scan sum %rows to %prefix : !tile.shared<[256], i32> to !tile.shared<[256], i32>
    }
  }
}
