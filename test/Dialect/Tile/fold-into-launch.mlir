// RUN: hisa-opt %s --canonicalize | FileCheck %s

// Constants that folding creates or deduplicates inside a launch stay in the
// launch body (TileFoldInterface): on the kernel's host side a float
// constant would break the rule that only integer arithmetic computes the
// grid. Integer constants of the host side stay there.
// CHECK-LABEL: tile.kernel @constants_stay_in_the_launch
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK-NOT: arith.constant {{.*}} : f32
// CHECK: tile.launch (%{{.*}}) in (%[[C1]]) threads 64 {
// CHECK: arith.constant 3.000000e+00 : f32
// CHECK: tile.parallel
// CHECK-NOT: arith.addf
tile.kernel @constants_stay_in_the_launch(%out: !tile.global<[64], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 64 {
    %one = arith.constant 1.0 : f32
    %two = arith.constant 2.0 : f32
    %t = tile.alloc : !tile.shared<[64], f32>
    tile.parallel (%i) in [64] {
      %three = arith.addf %one, %two : f32
      tile.store %three, %t[%i] : !tile.shared<[64], f32>
    }
    %c0 = arith.constant 0 : index
    tile.copy %t to %out[%c0] : !tile.shared<[64], f32> to !tile.global<[64], f32>
  }
}
