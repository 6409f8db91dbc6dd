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

/// What the JIT and tile-to-nvvm run first: device functions inlined, then
/// the kernel's parameters bound to `params` ("name=value" each; none: the
/// defaults). A pass that must see every specialization goes here or in
/// the planning pipeline, which both run next: the JIT runs this stage on
/// its own pass manager (it reports a binding failure as the caller's bad
/// parameters), so a pass added to tile-to-nvvm alone would not reach it.
void buildTileSpecializationPipeline(mlir::OpPassManager &pm,
                                     llvm::ArrayRef<std::string> params);

/// What the JIT and tile-to-nvvm run after binding: layouts, TMA marks and
/// the shared-memory plan (tile-report-resources runs it on a copy).
void buildTilePlanningPipeline(mlir::OpPassManager &pm,
                               llvm::StringRef chip = "sm_90a",
                               bool useTma = true);

} // namespace hisa::tile

#endif // HISA_DIALECT_TILE_TRANSFORMS_PASSES_H
