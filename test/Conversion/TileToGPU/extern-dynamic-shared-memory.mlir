// RUN: hisa-opt %s -split-input-file --pass-pipeline="builtin.module(gpu.module(tile-extern-dynamic-shared-memory))" | FileCheck %s
// RUN: hisa-opt %s -split-input-file --pass-pipeline="builtin.module(gpu.module(tile-extern-dynamic-shared-memory{alignment=1024}))" | FileCheck %s --check-prefix=ALIGN
// RUN: not hisa-opt %s --pass-pipeline="builtin.module(gpu.module(tile-extern-dynamic-shared-memory{alignment=24}))" 2>&1 | FileCheck %s --check-prefix=BAD
// The whole lowering: PTX declares the window CUDA's way, and ptxas sees no
// static shared variable (no "bytes smem", no out-of-bounds notes).
// RUN: hisa-opt %kernels/fp8_block_mean_pooling.mlir --tile-to-nvvm | hisa-translate --gpu-to-ptx -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o /dev/null 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// CHECK: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.mlir.global internal @other
// ALIGN: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 1024 : i64}
// BAD: error: tile-extern-dynamic-shared-memory: alignment must be a power of two, got 24
// PTX: .extern .shared .align 16 .b8 __dynamic_shmem__0[];
// PTX-NOT: demoted
// PTXAS-NOT: Potential out of bound access
// PTXAS-NOT: bytes smem
// PTXAS: Used {{[0-9]+}} registers
gpu.module @m {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  // A sized shared global is a real static variable: left alone.
  llvm.mlir.global internal @other() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<4 x i8>
}
