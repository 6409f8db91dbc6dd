// RUN: hisa-opt %s --pass-pipeline="builtin.module(gpu.module(tile-lower-exp2))" | FileCheck %s

// f32 exp2 is one ex2.approx.ftz.f32; other widths keep libdevice.
// CHECK-LABEL: gpu.func @exp2s
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%{{.*}}) : (f32) -> f32
// CHECK: math.exp2 %{{.*}} : f64
// CHECK-NOT: math.exp2 %{{.*}} : f32
// (test/Kernels/flash_attn.test checks the PTX of a whole kernel.)
gpu.module @m {
  gpu.func @exp2s(%out32: memref<1xf32>, %out64: memref<1xf64>, %x: f32, %y: f64) kernel {
    %c0 = arith.constant 0 : index
    %e = math.exp2 %x : f32
    %d = math.exp2 %y : f64
    memref.store %e, %out32[%c0] : memref<1xf32>
    memref.store %d, %out64[%c0] : memref<1xf64>
    gpu.return
  }
}
