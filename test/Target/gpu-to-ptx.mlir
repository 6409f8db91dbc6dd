// A small kernel in the GPU dialect through the upstream NVVM pipeline with
// the project's own tools: catches a missing dialect, interface or target
// registration. Where ptxas exists, the PTX is assembled for sm_90a.
//
// RUN: hisa-opt %s --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90a cubin-features=+ptx80 cubin-format=isa" | FileCheck %s --check-prefix=PIPELINE
// RUN: hisa-opt %s --pass-pipeline="builtin.module(nvvm-attach-target{chip=sm_90a},gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm,reconcile-unrealized-casts))" -o %t.nvvm.mlir
// RUN: hisa-translate --gpu-to-llvmir %t.nvvm.mlir | FileCheck %s --check-prefix=LLVMIR
// RUN: hisa-translate --gpu-to-ptx %t.nvvm.mlir -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t.ptx -o %t.cubin %}
// RUN: %if ptxas %{ hisa-translate --gpu-to-cubin %t.nvvm.mlir -o %t.direct.cubin %}
// RUN: %if ptxas %{ od -A n -t x1 -N 4 %t.direct.cubin | FileCheck %s --check-prefix=ELF %}

// PIPELINE: gpu.binary @kernels
// PIPELINE-SAME: .target sm_90a
// PIPELINE: llvm.func @launch

// LLVMIR: define ptx_kernel void @scale_add(
// LLVMIR: call {{.*}}i32 @llvm.nvvm.read.ptx.sreg.tid.x()

// PTX: .target sm_90a
// PTX: .visible .entry scale_add(
// PTX: fma.rn.f32

// ELF: 7f 45 4c 46

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale_add(%x: memref<?xf32>, %y: memref<?xf32>, %alpha: f32, %n: index) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %in_range = arith.cmpi ult, %i, %n : index
      scf.if %in_range {
        %a = memref.load %x[%i] : memref<?xf32>
        %b = memref.load %y[%i] : memref<?xf32>
        %r = math.fma %alpha, %a, %b : f32
        memref.store %r, %y[%i] : memref<?xf32>
      }
      gpu.return
    }
  }

  func.func @launch(%x: memref<?xf32>, %y: memref<?xf32>, %alpha: f32, %n: index) {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %blocks = arith.ceildivui %n, %c256 : index
    gpu.launch_func @kernels::@scale_add blocks in (%blocks, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%x : memref<?xf32>, %y : memref<?xf32>, %alpha : f32, %n : index)
    return
  }
}
