// hisa-translate refuses modules that are not in GPU/NVVM form, with a reason.
// RUN: not hisa-translate --gpu-to-ptx %s -split-input-file 2>&1 | FileCheck %s

// CHECK: error: no gpu.module to translate; lower the input to the GPU/NVVM dialects first
module {
}

// -----

// CHECK: error: gpu.module @no_target has no #nvvm.target; attach one (e.g. with --nvvm-attach-target="chip=sm_90a") before translating
module attributes {gpu.container_module} {
  gpu.module @no_target {
  }
}

// -----

// LLVM would abort the process on a chip the lowering cannot target (no
// PTX 8.0 support, or no cp.async) and on optimization levels outside 0..3.
// CHECK: error: gpu.module @sm120 targets unsupported chip 'sm_120a' (hisa compiles for sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a: the lowering emits PTX ISA 8.0 and cp.async)
module attributes {gpu.container_module} {
  gpu.module @sm120 [#nvvm.target<chip = "sm_120a">] {
  }
}

// -----

// CHECK: error: gpu.module @with_features targets unsupported chip 'sm_90a,-tma'
module attributes {gpu.container_module} {
  gpu.module @with_features [#nvvm.target<chip = "sm_90a,-tma">] {
  }
}

// -----

// (The #nvvm.target verifier refuses the level itself.)
// CHECK: error: The optimization level must be a number between 0 and 3.
module attributes {gpu.container_module} {
  gpu.module @level [#nvvm.target<O = 7, chip = "sm_90a">] {
  }
}

// -----

// A type LLVM IR cannot express is refused before translation (upstream's
// translation corrupts memory on it; found by hisa-fuzz).
// CHECK: error: 'llvm.mlir.global' op has type '!llvm.array<4 x complex<f32>>', which LLVM IR cannot express; lower it first
module attributes {gpu.container_module} {
  gpu.module @bad_type [#nvvm.target<chip = "sm_90a">] {
    llvm.mlir.global internal @other() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<4 x complex<f32>>
  }
}

// -----

// NVPTX aborts on a global in an address space PTX has no state space for
// (found by hisa-fuzz).
// CHECK: error: 'llvm.mlir.global' op is in address space 1024, which PTX has no state space for (0 generic, 1 global, 3 shared, 4 constant, 5 local)
module attributes {gpu.container_module} {
  gpu.module @odd_space [#nvvm.target<chip = "sm_90a">] {
    llvm.mlir.global internal @g() {addr_space = 1024 : i32} : i32
  }
}
