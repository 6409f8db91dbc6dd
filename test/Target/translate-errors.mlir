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
