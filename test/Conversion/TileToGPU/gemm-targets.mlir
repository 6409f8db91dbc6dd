// tile.gemm lowers to wgmma on sm_90a only; other targets are refused by
// name, never compiled to a slow path.
// RUN: hisa-opt %s -split-input-file --tile-assign-layouts --tile-plan-shared-memory --convert-tile-to-gpu="chip=sm_89" -verify-diagnostics
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

// CHECK: nvvm.wgmma.mma_async
tile.kernel @bf16() {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.shared<[64, 64], bf16>
    %b = tile.alloc : !tile.shared<[64, 64], bf16>
    %c = tile.alloc : !tile.frag<[64, 64], f32>
    // expected-error @+1 {{'tile.gemm' op for target sm_89 (mma.sync) is not implemented yet; refusing rather than emitting a slow path}}
    tile.gemm %a, %b, %c transpose_b : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16> -> !tile.frag<[64, 64], f32>
  }
}
