// RUN: hisa-opt %s -split-input-file --pass-pipeline="builtin.module(gpu.module(tile-extern-dynamic-shared-memory))" | FileCheck %s
// RUN: hisa-opt %s -split-input-file --pass-pipeline="builtin.module(gpu.module(tile-extern-dynamic-shared-memory{alignment=1024}))" | FileCheck %s --check-prefix=ALIGN
// RUN: not hisa-opt %s --pass-pipeline="builtin.module(gpu.module(tile-extern-dynamic-shared-memory{alignment=24}))" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not hisa-opt %S/Inputs/shared-base-marker-no-global.mlir --pass-pipeline="builtin.module(gpu.module(tile-extern-dynamic-shared-memory))" 2>&1 | FileCheck %s --check-prefix=NOBASE
// The wgmma lowering moves the shared base from the symbol itself (inline
// PTX naming it), so ptxas builds descriptors in uniform registers.
// RUN: not hisa-opt %S/Inputs/shared-base-marker-two-globals.mlir --pass-pipeline="builtin.module(gpu.module(tile-extern-dynamic-shared-memory))" 2>&1 | FileCheck %s --check-prefix=TWOBASES
// RUN: hisa-opt %kernels/fp8_gemm.mlir --tile-to-nvvm | hisa-translate --gpu-to-ptx -o %t.gemm.ptx
// RUN: FileCheck %s --check-prefix=WGMMA --implicit-check-not=__hisa_dynamic_shared_base__ < %t.gemm.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t.gemm.ptx -o /dev/null %}
// The whole lowering: PTX declares the window CUDA's way, and ptxas sees no
// static shared variable (no "bytes smem", no out-of-bounds notes).
// RUN: hisa-opt %kernels/fp8_block_mean_pooling.mlir --tile-to-nvvm | hisa-translate --gpu-to-ptx -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o /dev/null 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not="bytes smem" --implicit-check-not="Potential out of bound access" --implicit-check-not="wgmma.mma_async instructions are serialized" --implicit-check-not="warpgroup.wait is injected" %}

// CHECK: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.mlir.global internal @other
// ALIGN: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 1024 : i64}
// BAD: error: tile-extern-dynamic-shared-memory: alignment must be a power of two, got 24
// NOBASE: error: 'llvm.inline_asm' op names the dynamic shared-memory base, but the module has 0 dynamic shared-memory globals (expected 1)
// TWOBASES: error: 'llvm.inline_asm' op names the dynamic shared-memory base, but the module has 2 dynamic shared-memory globals (expected 1)
// WGMMA: mov.b64 %rd{{[0-9]+}}, __dynamic_shmem__0;
// Two warpgroups: each one's operand offset comes from its index
// broadcast from lane 0 (warp-uniform for ptxas, like the base).
// WGMMA: shfl.sync.idx.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, 0, 31, -1;
// WGMMA: wgmma.mma_async
// CHECK-LABEL: gpu.module @named
// CHECK: llvm.inline_asm has_side_effects "mov.b64 $0, __dynamic_shmem__0;", "=l"
// PTX: .extern .shared .align 16 .b8 __dynamic_shmem__0[];
// PTX-NOT: demoted
// (ptxas prints "N bytes smem" on the "Used" line: checked implicitly.)
// PTXAS: Used {{[0-9]+}} registers
gpu.module @m {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  // A sized shared global is a real static variable: left alone.
  llvm.mlir.global internal @other() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<4 x i8>
}

// -----

gpu.module @named {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.func @f() -> i64 {
    %0 = llvm.inline_asm has_side_effects "mov.b64 $0, __hisa_dynamic_shared_base__;", "=l" : () -> i64
    llvm.return %0 : i64
  }
}
