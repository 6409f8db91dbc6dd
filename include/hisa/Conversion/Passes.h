//===- Passes.h - Conversion passes of hisa ---------------------*- C++ -*-===//

#ifndef HISA_CONVERSION_PASSES_H
#define HISA_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace hisa {

/// Stands for the name of the dynamic shared-memory symbol in inline PTX
/// that the TileToGPU lowering emits before that symbol exists (it is
/// defined by convert-gpu-to-nvvm); tile-extern-dynamic-shared-memory puts
/// the name in.
inline constexpr llvm::StringLiteral kDynamicSharedBaseMarker =
    "__hisa_dynamic_shared_base__";

/// f32 `math.exp2` as `llvm.nvvm.ex2.approx.ftz.f32` (tile-lower-exp2).
void populateTileLowerExp2Patterns(mlir::RewritePatternSet &patterns);

#define GEN_PASS_DECL
#include "hisa/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "hisa/Conversion/Passes.h.inc"

} // namespace hisa

#endif // HISA_CONVERSION_PASSES_H
