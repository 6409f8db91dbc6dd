//===- PTXTranslation.h - GPU modules to PTX and cubin ----------*- C++ -*-===//

#ifndef HISA_TARGET_PTXTRANSLATION_H
#define HISA_TARGET_PTXTRANSLATION_H

#include "llvm/ADT/STLFunctionalExtras.h"

#include <functional>

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace hisa {
/// Registers the hisa-translate translations of modules in GPU/NVVM form:
///   --gpu-to-llvmir  device LLVM IR of the module's gpu.module
///   --gpu-to-ptx     PTX (needs no CUDA toolkit)
///   --gpu-to-cubin   cubin (needs ptxas)
/// `registerDialects` adds the dialects the input may hold besides the GPU,
/// LLVM and NVVM ones (e.g. host code in func/memref).
void registerGPUTranslations(
    std::function<void(mlir::DialectRegistry &)> registerDialects);
/// Registers translation `name` of a module: its input is scanned for what
/// MLIR's parser would abort on (hisa/Tools/SourceLimits.h), parsed with the
/// dialects of `registerDialects`, verified and given to `function`.
void registerModuleTranslation(
    llvm::StringRef name, llvm::StringRef description,
    std::function<mlir::LogicalResult(mlir::ModuleOp, llvm::raw_ostream &)>
        function,
    std::function<void(mlir::DialectRegistry &)> registerDialects);
/// Serializes the module's gpu.modules (NVVM form) with gpu-module-to-binary
/// and writes the objects: `format` is "isa" (PTX) or "bin" (cubin).
mlir::LogicalResult serializeGPUModules(mlir::ModuleOp module,
                                        llvm::raw_ostream &output,
                                        llvm::StringRef format);
} // namespace hisa

#endif // HISA_TARGET_PTXTRANSLATION_H
