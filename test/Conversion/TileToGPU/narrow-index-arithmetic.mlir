// RUN: hisa-opt %s --pass-pipeline="builtin.module(gpu.module(tile-bound-dims,tile-narrow-index-arithmetic))" | FileCheck %s

// Ops whose operands and results are all in [0, 2^31) run on i32: a
// thread's column (< 128) modulo a size, and the compare against it.
// CHECK-LABEL: gpu.func @in_range
// CHECK: %[[TID:.*]] = arith.index_castui %thread_id_x : index to i32
// CHECK: %[[COLUMNS:.*]] = arith.index_castui %{{.*}} : index to i32
// CHECK: arith.remui %[[TID]], %[[COLUMNS]] : i32
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : i32
gpu.module @m {
  // (Dimension numbers are arguments: a constant out of range, as a
  // fuzzer's mutation makes it, crashes upstream's canonicalizer.)
  gpu.func @in_range(%x: memref<?x?xf32>, %out: memref<?xf32>, %d: index) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %tid = gpu.thread_id x
    %columns = memref.dim %x, %d : memref<?x?xf32>
    %column = arith.remui %tid, %columns : index
    %inside = arith.cmpi slt, %tid, %columns : index
    scf.if %inside {
      %v = memref.load %x[%c0, %column] : memref<?x?xf32>
      memref.store %v, %out[%tid] : memref<?xf32>
    }
    gpu.return
  }

  // The sum of two sizes reaches 2^32 - 2: fits 32 bits unsigned, not
  // signed, so its signed ops stay 64-bit (LLVM 22's
  // arith-int-range-narrowing would narrow them: divsi of 2.4e9 by 2 gave
  // 3347483648). A value that may be negative keeps remui 64-bit too (-1
  // mod 7 is not (2^32 - 1) mod 7).
  // CHECK-LABEL: gpu.func @out_of_range
  // CHECK-NOT: : i32
  // CHECK: gpu.return
  gpu.func @out_of_range(%x: memref<?xf32>, %y: memref<?xf32>, %out: memref<?xindex>,
                         %signed: index, %d: index) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c7 = arith.constant 7 : index
    %n = memref.dim %x, %d : memref<?xf32>
    %m = memref.dim %y, %d : memref<?xf32>
    %s = arith.addi %n, %m : index
    %q = arith.divsi %s, %c2 : index
    memref.store %q, %out[%c0] : memref<?xindex>
    %lt = arith.cmpi slt, %s, %c3 : index
    %sel = arith.select %lt, %c1, %c0 : index
    memref.store %sel, %out[%c1] : memref<?xindex>
    %mx = arith.maxsi %s, %c1 : index
    memref.store %mx, %out[%c2] : memref<?xindex>
    %neg = arith.subi %c0, %c1 : index
    %r = arith.remui %neg, %c7 : index
    memref.store %r, %out[%c3] : memref<?xindex>
    gpu.return
  }
}
