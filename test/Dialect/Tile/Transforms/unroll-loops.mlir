// RUN: hisa-opt %s --split-input-file --tile-unroll-loops --verify-diagnostics | FileCheck %s

// A thread's key loop, unrolled by 4: the shared loads of all four
// iterations first (past the first, at a guarded index that falls back to
// the first iteration's), then each iteration's body, past the first under
// `iteration < upper bound`. The load of %hist, which the loop writes,
// stays in its body.

// CHECK-LABEL: tile.kernel @key_loop
// CHECK: tile.parallel (%[[T:.*]]) in [128]
// CHECK: %[[WIDE:.*]] = arith.muli %{{.*}}, %c4 : index
// CHECK: scf.for %[[C:.*]] = %[[T]] to %{{.*}} step %[[WIDE]] {
// CHECK: %[[C1:.*]] = arith.addi %[[C]]
// CHECK: %[[IN1:.*]] = arith.cmpi slt, %[[C1]]
// CHECK: %[[C2:.*]] = arith.addi %[[C]]
// CHECK: %[[IN2:.*]] = arith.cmpi slt, %[[C2]]
// CHECK: %[[C3:.*]] = arith.addi %[[C]]
// CHECK: %[[IN3:.*]] = arith.cmpi slt, %[[C3]]
// CHECK: %[[K0:.*]] = tile.load %{{.*}}[%[[C]]] : !tile.shared<[1000], i32>
// CHECK: %[[AT1:.*]] = arith.select %[[IN1]], %[[C1]], %[[C]] : index
// CHECK: %[[K1:.*]] = tile.load %{{.*}}[%[[AT1]]] : !tile.shared<[1000], i32>
// CHECK: %[[AT2:.*]] = arith.select %[[IN2]], %[[C2]], %[[C]] : index
// CHECK: tile.load %{{.*}}[%[[AT2]]] : !tile.shared<[1000], i32>
// CHECK: %[[AT3:.*]] = arith.select %[[IN3]], %[[C3]], %[[C]] : index
// CHECK: %[[K3:.*]] = tile.load %{{.*}}[%[[AT3]]] : !tile.shared<[1000], i32>
// CHECK-NOT: tile.load %{{.*}} : !tile.shared<[1000], i32>
// CHECK: arith.cmpi ne, %[[K0]]
// CHECK: tile.atomic add
// CHECK: scf.if %[[IN1]] {
// CHECK: arith.cmpi ne, %[[K1]]
// CHECK: tile.load %{{.*}} : !tile.shared<[256], i32>
// CHECK: scf.if %[[IN3]] {
// CHECK: arith.cmpi ne, %[[K3]]
// CHECK-NOT: tile.unroll
tile.kernel @key_loop(%out: !tile.global<[256], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %keys = tile.alloc : !tile.shared<[1000], i32>
    %hist = tile.alloc : !tile.shared<[256], i32>
    %c0 = arith.constant 0 : index
    %c128 = arith.constant 128 : index
    %c1000 = arith.constant 1000 : index
    %one = arith.constant 1 : i32
    %zero = arith.constant 0 : i32
    tile.fill %keys, %zero : !tile.shared<[1000], i32>, i32
    tile.fill %hist, %zero : !tile.shared<[256], i32>, i32
    tile.parallel (%t) in [128] {
      scf.for %c = %t to %c1000 step %c128 {
        %key = tile.load %keys[%c] : !tile.shared<[1000], i32>
        %nonzero = arith.cmpi ne, %key, %zero : i32
        scf.if %nonzero {
          %c255 = arith.constant 255 : i32
          %digit = arith.andi %key, %c255 : i32
          %bin = arith.index_cast %digit : i32 to index
          %seen = tile.load %hist[%bin] : !tile.shared<[256], i32>
          %old = tile.atomic add %one, %hist[%bin] : !tile.shared<[256], i32>
        }
      } {tile.unroll = 4}
    }
    tile.copy %hist to %out[%c0] : !tile.shared<[256], i32> to !tile.global<[256], i32>
  }
}

// -----

// A load after a store stays in place (only the loads at the top of the
// body go first), and factor 1 only drops the mark.

// CHECK-LABEL: tile.kernel @load_after_store
// CHECK: scf.for
// CHECK-NEXT: tile.store
// CHECK-NEXT: tile.load
// CHECK-NOT: tile.unroll
tile.kernel @load_after_store(%out: !tile.global<[128], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[128], i32>
    %b = tile.alloc : !tile.shared<[128], i32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0 : i32
    tile.parallel (%t) in [128] {
      scf.for %i = %c0 to %c4 step %c1 {
        tile.store %zero, %a[%t] : !tile.shared<[128], i32>
        %v = tile.load %b[%t] : !tile.shared<[128], i32>
        tile.store %v, %a[%t] : !tile.shared<[128], i32>
      } {tile.unroll = 1}
    }
    tile.copy %a to %out[%c0] : !tile.shared<[128], i32> to !tile.global<[128], i32>
  }
}

// -----

tile.kernel @bad_factor(%out: !tile.global<[128], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[128], i32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0 : i32
    tile.parallel (%t) in [128] {
      // expected-error @+1 {{has tile.unroll = 17; it takes an integer from 1 to 16}}
      scf.for %i = %c0 to %c4 step %c1 {
        tile.store %zero, %a[%t] : !tile.shared<[128], i32>
      } {tile.unroll = 17}
    }
  }
}

// -----

tile.kernel @not_an_integer(%out: !tile.global<[128], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[128], i32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0 : i32
    tile.parallel (%t) in [128] {
      // expected-error @+1 {{has tile.unroll = "four"; it takes an integer from 1 to 16}}
      scf.for %i = %c0 to %c4 step %c1 {
        tile.store %zero, %a[%t] : !tile.shared<[128], i32>
      } {tile.unroll = "four"}
    }
  }
}

// -----

tile.kernel @iteration_arguments(%out: !tile.global<[128], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[128], i32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0 : i32
    tile.parallel (%t) in [128] {
      // expected-error @+1 {{has tile.unroll but carries iteration arguments; only loops without them are unrolled}}
      %sum = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %zero) -> (i32) {
        %v = tile.load %a[%t] : !tile.shared<[128], i32>
        %more = arith.addi %s, %v : i32
        scf.yield %more : i32
      } {tile.unroll = 2}
      tile.store %sum, %a[%t] : !tile.shared<[128], i32>
    }
  }
}

// -----

tile.kernel @collective(%out: !tile.global<[128], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[128], i32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0 : i32
    tile.parallel (%t) in [128] {
      // expected-error @+1 {{has tile.unroll but holds a warp collective, which every lane must reach}}
      scf.for %i = %c0 to %c4 step %c1 {
        %v = tile.load %a[%t] : !tile.shared<[128], i32>
        %positive = arith.cmpi sgt, %v, %zero : i32
        %bits = tile.vote ballot %positive : i32
        tile.store %bits, %a[%t] : !tile.shared<[128], i32>
      } {tile.unroll = 2}
    }
  }
}

// -----

// No load goes first where the loop may reach its tile otherwise: a store
// through a tile.pick that may be %keys, or a load through a view made in
// the body; nor in a body with a block-wide op (a barrier could order
// another thread's write before a later iteration's load).

// CHECK-LABEL: tile.kernel @through_pick
// CHECK: scf.for
// CHECK-NOT: arith.select
// CHECK: tile.load
// CHECK-NEXT: arith.addi
// CHECK-NEXT: tile.store
// CHECK-NEXT: scf.if
// CHECK-NEXT: tile.load
tile.kernel @through_pick(%out: !tile.global<[1024], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %keys = tile.alloc : !tile.shared<[1024], i32>
    %other = tile.alloc : !tile.shared<[1024], i32>
    %c0 = arith.constant 0 : index
    %c128 = arith.constant 128 : index
    %c896 = arith.constant 896 : index
    %p = tile.pick %c0 [%keys, %other] : !tile.shared<[1024], i32>
    tile.parallel (%t) in [128] {
      scf.for %c = %t to %c896 step %c128 {
        %k = tile.load %keys[%c] : !tile.shared<[1024], i32>
        %n = arith.addi %c, %c128 : index
        tile.store %k, %p[%n] : !tile.shared<[1024], i32>
      } {tile.unroll = 2}
    }
    tile.copy %keys to %out[%c0] : !tile.shared<[1024], i32> to !tile.global<[1024], i32>
  }
}

// -----

// CHECK-LABEL: tile.kernel @view_in_body
// CHECK: scf.for
// CHECK: tile.view
// CHECK-NEXT: tile.load
// CHECK: scf.if
// CHECK-NEXT: tile.view
// CHECK-NEXT: tile.load
tile.kernel @view_in_body(%out: !tile.global<[1024], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %keys = tile.alloc : !tile.shared<[1024], i32>
    %sums = tile.alloc : !tile.shared<[128], i32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c128 = arith.constant 128 : index
    %zero = arith.constant 0 : i32
    tile.fill %keys, %zero : !tile.shared<[1024], i32>, i32
    tile.parallel (%t) in [128] {
      scf.for %c = %c0 to %c4 step %c1 {
        %rows = tile.view %keys : !tile.shared<[1024], i32> to !tile.shared<[8, 128], i32>
        %k = tile.load %rows[%c, %t] : !tile.shared<[8, 128], i32>
        tile.store %k, %sums[%t] : !tile.shared<[128], i32>
      } {tile.unroll = 2}
    }
    tile.copy %sums to %out[%c0] : !tile.shared<[128], i32> to !tile.global<[1024], i32>
  }
}

// -----

// CHECK-LABEL: tile.kernel @block_wide_body
// CHECK: scf.for
// CHECK: tile.load
// CHECK-NEXT: tile.parallel
// CHECK: scf.if
// CHECK-NEXT: tile.load
tile.kernel @block_wide_body(%out: !tile.global<[128], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %keys = tile.alloc : !tile.shared<[1024], i32>
    %sums = tile.alloc : !tile.shared<[128], i32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0 : i32
    tile.fill %keys, %zero : !tile.shared<[1024], i32>, i32
    scf.for %c = %c0 to %c4 step %c1 {
      %k = tile.load %keys[%c] : !tile.shared<[1024], i32>
      tile.parallel (%t) in [128] {
        tile.store %k, %sums[%t] : !tile.shared<[128], i32>
      }
    } {tile.unroll = 2}
    tile.copy %sums to %out[%c0] : !tile.shared<[128], i32> to !tile.global<[128], i32>
  }
}

// -----

tile.kernel @unsigned_loop(%out: !tile.global<[128], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[128], i32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0 : i32
    tile.parallel (%t) in [128] {
      // expected-error @+1 {{has tile.unroll but is not a signed loop over index; only those are unrolled}}
      scf.for unsigned %i = %c0 to %c4 step %c1 {
        tile.store %zero, %a[%t] : !tile.shared<[128], i32>
      } {tile.unroll = 2}
    }
  }
}

// -----

tile.kernel @i32_loop(%out: !tile.global<[128], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[128], i32>
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %c4_i32 = arith.constant 4 : i32
    tile.parallel (%t) in [128] {
      // expected-error @+1 {{has tile.unroll but is not a signed loop over index; only those are unrolled}}
      scf.for %i = %c0_i32 to %c4_i32 step %c1_i32 : i32 {
        tile.store %i, %a[%t] : !tile.shared<[128], i32>
      } {tile.unroll = 2}
    }
  }
}
