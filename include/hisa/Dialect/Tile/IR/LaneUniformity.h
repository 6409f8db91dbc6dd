//===- LaneUniformity.h - Values a warp's lanes agree on --------*- C++ -*-===//
//
// A tile.parallel body runs one domain element per lane, a warp taking 32
// consecutive elements (row-major) at a time. Warp collectives (tile.vote,
// warp_scan, warp_broadcast, warp_match) are shuffles over those 32 lanes:
// every lane must reach them. This analysis finds which values of a body
// are the same in every lane of a warp, so that control flow decided by a
// value that is not (a condition or loop bound computed from the element's
// coordinates or the data it read) can be refused around a collective.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_DIALECT_TILE_IR_LANEUNIFORMITY_H
#define HISA_DIALECT_TILE_IR_LANEUNIFORMITY_H

#include "mlir/Support/LLVM.h"

namespace mlir {
class Operation;
} // namespace mlir

namespace hisa::tile {
class LaunchOp;

/// Refuses warp collectives in `launch` that sit under control flow whose
/// condition, bounds or case differ between a warp's lanes. Those in a
/// tile.parallel whose domain is not bound yet are checked once
/// tile-bind-params binds it; those in device functions, once inlined.
mlir::LogicalResult verifyWarpCollectivesConverge(LaunchOp launch);

} // namespace hisa::tile

#endif // HISA_DIALECT_TILE_IR_LANEUNIFORMITY_H
