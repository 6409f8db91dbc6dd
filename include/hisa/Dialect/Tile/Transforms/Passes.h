//===- Passes.h - Tile dialect passes ---------------------------*- C++ -*-===//

#ifndef HISA_DIALECT_TILE_TRANSFORMS_PASSES_H
#define HISA_DIALECT_TILE_TRANSFORMS_PASSES_H

#include "hisa/Dialect/Tile/IR/TileOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace hisa::tile {

#define GEN_PASS_DECL
#include "hisa/Dialect/Tile/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "hisa/Dialect/Tile/Transforms/Passes.h.inc"

/// What the JIT and tile-to-nvvm run after binding: layouts, TMA marks and
/// the shared-memory plan (tile-report-resources runs it on a copy).
void buildTilePlanningPipeline(mlir::OpPassManager &pm,
                               llvm::StringRef chip = "sm_90a",
                               bool useTma = true);

} // namespace hisa::tile

#endif // HISA_DIALECT_TILE_TRANSFORMS_PASSES_H
