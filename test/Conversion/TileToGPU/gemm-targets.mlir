// tile.gemm lowers to wgmma on sm_90a and to mma.sync m16n8k16 (bf16/f16,
// f32 accumulators) on sm_80 and newer; fp8 without wgmma, targets without
// mma.sync and layouts assigned for another target are refused by name,
// never compiled to a slow path.
// RUN: hisa-opt %s -split-input-file --tile-assign-layouts="chip=sm_89" --tile-plan-shared-memory --convert-tile-to-gpu="chip=sm_89" -verify-diagnostics | FileCheck %s --check-prefix=MMA
// RUN: hisa-opt %s -split-input-file --tile-assign-layouts --tile-plan-shared-memory --convert-tile-to-gpu="chip=sm_90a" | FileCheck %s

// CHECK: nvvm.wgmma.mma_async
tile.kernel @fp8() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 128], f8E4M3FN>
    %b = tile.alloc : !tile.shared<[64, 128], f8E4M3FN>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'tile.gemm' op fp8 (f8E4M3FN) gemm needs wgmma, which target sm_89 does not have (mma.sync would emulate fp8); compile for sm_90a}}
    tile.gemm %a, %b, %c transpose_b : !tile.shared<[64, 128], f8E4M3FN>, !tile.shared<[64, 128], f8E4M3FN> -> !tile.frag<[64, 64], f32>
  }
}

// -----

// On sm_89 each of the 4 warps computes 16 rows x 64 columns: 8 tiles of
// 16x8, 4 k16 steps, from 32-bit pairs read out of the swizzled tiles.
// CHECK: nvvm.wgmma.mma_async
// MMA-LABEL: gpu.func @bf16
// MMA: gpu.barrier
// MMA: vector.load {{.*}} : memref<{{.*}}xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// MMA-COUNT-32: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// MMA-NOT: mma.sync
// MMA: gpu.return
tile.kernel @bf16() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 64], bf16>
    %b = tile.alloc : !tile.shared<[64, 64], bf16>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    tile.gemm %a, %b, %c transpose_b : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
  }
}

// -----

// A in registers: wgmma only.
tile.kernel @register_a() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.frag<[64, 32], bf16>
    %b = tile.alloc : !tile.shared<[64, 32], bf16>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'tile.gemm' op with A in registers needs wgmma (sm_90a); target sm_89 reads A from shared memory}}
    tile.gemm %a, %b, %c transpose_b : !tile.frag<[64, 32], bf16>, !tile.shared<[64, 32], bf16> -> !tile.frag<[64, 64], f32>
  }
}
