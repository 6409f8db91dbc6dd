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
