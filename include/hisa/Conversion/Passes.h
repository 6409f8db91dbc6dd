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
#include "mlir/Pass/Pass.h"

namespace hisa {

#define GEN_PASS_DECL
#include "hisa/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "hisa/Conversion/Passes.h.inc"

} // namespace hisa

#endif // HISA_CONVERSION_PASSES_H
