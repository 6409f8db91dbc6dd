// RUN: hisa-opt %s -split-input-file --tile-assign-layouts --tile-plan-shared-memory --convert-tile-to-gpu -verify-diagnostics | FileCheck %s

// Kernel outlining, the ABI (memrefs), vectorized predicated copies, and a
// reduction through registers, xor shuffles and shared scratch.
// CHECK-LABEL: gpu.module @rows_module
// CHECK: gpu.func @rows(%[[IN:.*]]: memref<?x128xf32>, %[[OUT:.*]]: memref<?xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>
// CHECK-DAG: gpu.thread_id x
// CHECK-DAG: gpu.block_id x
// CHECK-DAG: gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: scf.if
// CHECK: vector.load %[[IN]][{{.*}}] {alignment = 16 : i64} : memref<?x128xf32>, vector<4xf32>
// CHECK: gpu.shuffle  xor
// CHECK: gpu.barrier
// CHECK: vector.maskedload %[[OUT]]
// CHECK: memref.store {{.*}} %[[OUT]]
// CHECK-NOT: tile.
tile.kernel @rows(%in: !tile.global<[?, 128], f32>, %out: !tile.global<[?], f32>) {
  %n = tile.dim %in, 0 : !tile.global<[?, 128], f32>
  tile.launch (%bx) in (%n) threads 128 {
    %c0 = arith.constant 0 : index
    %tile = tile.alloc : !tile.frag<[32, 128], f32>
    %sums = tile.alloc : !tile.frag<[32], f32>
    %row = arith.muli %bx, %n : index
    tile.copy %in[%row, %c0] to %tile : !tile.global<[?, 128], f32> to !tile.frag<[32, 128], f32>
    tile.reduce sum %tile to %sums dim = 1 : !tile.frag<[32, 128], f32> to !tile.frag<[32], f32>
    tile.parallel (%i) in [32] {
      %x = tile.load %sums[%i] : !tile.frag<[32], f32>
      %old = tile.load %out[%i] : !tile.global<[?], f32>
      %y = arith.addf %x, %old : f32
      tile.store %y, %out[%i] : !tile.global<[?], f32>
    }
  }
}

// -----

// fp8 conversions go through PTX cvt, two elements at a time.
// CHECK-LABEL: gpu.func @convert
// CHECK: llvm.inline_asm "cvt.rn.f16x2.e4m3x2 $0, $1;", "=r,h"
// CHECK: llvm.inline_asm "cvt.rn.satfinite.e4m3x2.f32 $0, $1, $2;", "=h,f,f"
tile.kernel @convert(%in: !tile.global<[?, 64], f8E4M3FN>, %out: !tile.global<[?, 64], f8E4M3FN>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %c0 = arith.constant 0 : index
    %a = tile.alloc : !tile.frag<[16, 64], f8E4M3FN>
    %b = tile.alloc : !tile.frag<[16, 64], f32>
    tile.copy %in[%c0, %c0] to %a : !tile.global<[?, 64], f8E4M3FN> to !tile.frag<[16, 64], f8E4M3FN>
    tile.cast %a to %b : !tile.frag<[16, 64], f8E4M3FN> to !tile.frag<[16, 64], f32>
    tile.cast %b to %a : !tile.frag<[16, 64], f32> to !tile.frag<[16, 64], f8E4M3FN>
    tile.copy %a to %out[%c0, %c0] : !tile.frag<[16, 64], f8E4M3FN> to !tile.global<[?, 64], f8E4M3FN>
  }
}

// -----

// Tensor-core gemm has no lowering yet: refused, never a slow fallback.
tile.kernel @gemm() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 32], f16>
    %b = tile.alloc : !tile.shared<[32, 64], f16>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'tile.gemm' op has no lowering yet: tensor-core gemm (wgmma) is the next milestone; refusing rather than emitting a slow path}}
    tile.gemm %a, %b, %c : !tile.shared<[64, 32], f16>, !tile.shared<[32, 64], f16> -> !tile.frag<[64, 64], f32>
  }
}
