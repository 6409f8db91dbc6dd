// RUN: hisa-opt %s --pass-pipeline="builtin.module(gpu.module(tile-bound-dims))" | FileCheck %s

// Each run-time size is bounded below 2^31 where it is read, so that range
// analysis can narrow the arithmetic that uses it.
// CHECK-LABEL: gpu.func @row_offset
// CHECK-DAG: %[[MAX:.*]] = arith.constant 2147483647 : index
// CHECK-DAG: %[[DIM:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<?x?xf32>
// CHECK: %[[BOUNDED:.*]] = arith.minui %[[DIM]], %[[MAX]] : index
// CHECK: arith.remui %{{.*}}, %[[BOUNDED]] : index
// (narrow-index-arithmetic.mlir: what the bound lets the narrowing do.)
gpu.module @m {
  // (The dimension's number is an argument: a constant out of range, as a
  // fuzzer's mutation makes it, crashes upstream's canonicalizer.)
  gpu.func @row_offset(%x: memref<?x?xf32>, %out: memref<?xf32>, %d: index) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %tid = gpu.thread_id x
    %columns = memref.dim %x, %d : memref<?x?xf32>
    %column = arith.remui %tid, %columns : index
    %v = memref.load %x[%c0, %column] : memref<?x?xf32>
    memref.store %v, %out[%tid] : memref<?xf32>
    gpu.return
  }
}
