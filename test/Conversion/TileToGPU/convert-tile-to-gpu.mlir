// RUN: hisa-opt %s -split-input-file --tile-assign-layouts --tile-plan-shared-memory --convert-tile-to-gpu -verify-diagnostics | FileCheck %s
// RUN: hisa-opt %s -split-input-file --tile-assign-layouts --tile-plan-shared-memory --convert-tile-to-gpu="fp-contract=false" -verify-diagnostics | FileCheck %s --check-prefix=EXACT

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
// Float arithmetic may contract into fused multiply-adds (nvcc's default),
// unless fp-contract=false.
// CHECK: arith.addf {{.*}} fastmath<contract> : f32
// CHECK: memref.store {{.*}} %[[OUT]]
// CHECK-NOT: tile.
// EXACT-LABEL: gpu.func @rows
// EXACT-NOT: fastmath<contract>
// EXACT: gpu.return
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

// tile.gemm: wgmma on 128-byte-swizzled shared operands (flat storage,
// xor-swizzled addresses), descriptors, fence/commit/wait.
// CHECK-LABEL: gpu.func @gemm
// CHECK: memref.view {{.*}} to memref<8192xf8E4M3FN, #gpu.address_space<workgroup>>
// CHECK: arith.xori
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
tile.kernel @gemm(%a: !tile.global<[?, 128], f8E4M3FN>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %c0 = arith.constant 0 : index
    %as = tile.alloc : !tile.shared<[64, 128], f8E4M3FN>
    %bs = tile.alloc : !tile.shared<[64, 128], f8E4M3FN>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    tile.copy %a[%c0, %c0] to %as : !tile.global<[?, 128], f8E4M3FN> to !tile.shared<[64, 128], f8E4M3FN>
    tile.copy %a[%c0, %c0] to %bs : !tile.global<[?, 128], f8E4M3FN> to !tile.shared<[64, 128], f8E4M3FN>
    tile.gemm %as, %bs, %c transpose_b clear_accum
        : !tile.shared<[64, 128], f8E4M3FN>, !tile.shared<[64, 128], f8E4M3FN> -> !tile.frag<[64, 64], f32>
  }
}

// -----

// Transposed (MN-major) operands set wgmma's trans bits: A [K, M] is "col",
// B [K, N] "row". B's rows (N = 128 bf16) span two 128-byte panels, 64 rows
// x 128 bytes apart: the descriptor's leading byte offset is 8192 (>> 4 =
// 512 in bits 16-29), its stride offset 8 rows of 128 bytes (1024 >> 4 = 64
// in bits 32-45), 128-byte swizzle (1 in bits 62-63): 0x4000004002000000,
// built as a low word (start | 0x2000000, stepped by 32-bit adds) and a
// constant high word 0x40000040.
// CHECK-LABEL: gpu.func @gemm_mn_major
// CHECK: arith.constant 33554432 : i32
// CHECK: arith.constant 4611686293305294848 : i64
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, {{.*}}], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
tile.kernel @gemm_mn_major(%g: !tile.global<[?, ?], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 64], bf16>
    %b = tile.alloc : !tile.shared<[64, 128], bf16>
    %c = tile.alloc : !tile.frag<[64, 128], f32>
    %c0 = arith.constant 0 : index
    tile.gemm %a, %b, %c transpose_a clear_accum : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 128], bf16> -> !tile.frag<[64, 128], f32>
    tile.copy %c to %g[%c0, %c0] : !tile.frag<[64, 128], f32> to !tile.global<[?, ?], f32>
  }
}

// -----

// A pipelined step known only at run time: a step that is not positive runs
// no iteration (the upper bound becomes the lower one) instead of looping
// forever; constant steps are checked by the verifier.
// CHECK-LABEL: gpu.func @runtime_step
// CHECK: %[[POSITIVE:.*]] = arith.cmpi sgt, %[[STEP:.*]], %{{.*}} : index
// CHECK: %[[UPPER:.*]] = arith.select %[[POSITIVE]], %{{.*}}, %[[LOWER:.*]] : index
// CHECK: scf.for %{{.*}} = %[[LOWER]] to %[[UPPER]] step %[[STEP]]
tile.kernel @runtime_step(%x: !tile.global<[?], f32>, %n: index, %step: index) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 32 {
    %c0 = arith.constant 0 : index
    tile.pipelined %t = %c0 to %n step %step num_stages = 1 {
      %zero = arith.constant 0.0 : f32
      tile.store %zero, %x[%t] : !tile.global<[?], f32>
    }
  }
}
