// RUN: hisa-opt %s -split-input-file --tile-inline-functions -verify-diagnostics | FileCheck %s

// tile.call binds the callee's shape symbols to the caller's dimensions: one
// function clears tiles of two shapes (a parameter product and an integer),
// with a parallel over its own symbolic domain.
func.func private @clear(%t: !tile.shared<[n], i32>) {
  %z = arith.constant 0 : i32
  tile.parallel (%i) in [n] {
    tile.store %z, %t[%i] : !tile.shared<[n], i32>
  }
  return
}

func.func private @first(%t: !tile.shared<[n], i32>) -> i32 {
  %c0 = arith.constant 0 : index
  %v = tile.load %t[%c0] : !tile.shared<[n], i32>
  return %v : i32
}

tile.kernel @two_shapes(%out: !tile.global<[1], i32>) params {topk = 4, kb = 64} {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %keys = tile.alloc : !tile.shared<[topk*kb], i32>
    %small = tile.alloc : !tile.shared<[32], i32>
    tile.call @clear(%keys) : (!tile.shared<[topk*kb], i32>) -> ()
    tile.call @clear(%small) : (!tile.shared<[32], i32>) -> ()
    %v = tile.call @first(%keys) : (!tile.shared<[topk*kb], i32>) -> i32
  }
}

// CHECK-NOT: func.func
// CHECK-LABEL: tile.kernel @two_shapes
// CHECK: tile.parallel (%{{.*}}) in [kb*topk] {
// CHECK: tile.store %{{.*}}, %{{.*}}[%{{.*}}] : !tile.shared<[kb*topk], i32>
// CHECK: tile.parallel (%{{.*}}) in [32] {
// CHECK: tile.store %{{.*}}, %{{.*}}[%{{.*}}] : !tile.shared<[32], i32>
// CHECK: tile.load %{{.*}}[%{{.*}}] : !tile.shared<[kb*topk], i32>
// CHECK-NOT: tile.call

// -----

func.func private @pair(%a: !tile.shared<[n], i32>, %b: !tile.shared<[n], i32>) {
  return
}

tile.kernel @inconsistent(%out: !tile.global<[1], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %a = tile.alloc : !tile.shared<[32], i32>
    %b = tile.alloc : !tile.shared<[64], i32>
    // expected-error @+1 {{binds 'n' of @pair to both 32 and 64}}
    tile.call @pair(%a, %b) : (!tile.shared<[32], i32>, !tile.shared<[64], i32>) -> ()
  }
}

// -----

func.func private @floats(%a: !tile.shared<[n], f32>) {
  return
}

tile.kernel @element_type(%out: !tile.global<[1], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %a = tile.alloc : !tile.shared<[32], i32>
    // expected-error @+1 {{(element type and rank must match)}}
    tile.call @floats(%a) : (!tile.shared<[32], i32>) -> ()
  }
}
