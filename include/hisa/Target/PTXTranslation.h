//===- PTXTranslation.h - GPU modules to PTX and cubin ----------*- C++ -*-===//

#ifndef HISA_TARGET_PTXTRANSLATION_H
#define HISA_TARGET_PTXTRANSLATION_H

namespace hisa {
/// Registers the hisa-translate translations of modules in GPU/NVVM form:
///   --gpu-to-llvmir  device LLVM IR of the module's gpu.module
///   --gpu-to-ptx     PTX (needs no CUDA toolkit)
///   --gpu-to-cubin   cubin (needs ptxas)
void registerGPUTranslations();
} // namespace hisa

#endif // HISA_TARGET_PTXTRANSLATION_H
