//===- UnrollBudget.h - Bound the code a kernel unrolls to ------*- C++ -*-===//

#ifndef HISA_LIB_CONVERSION_TILETOGPU_UNROLLBUDGET_H
#define HISA_LIB_CONVERSION_TILETOGPU_UNROLLBUDGET_H

#include "hisa/Dialect/Tile/IR/TileOps.h"

namespace hisa::tile {

/// Estimates the operations per thread that lowering `launch` emits (each
/// tile.parallel body once per element of the thread's share of its domain,
/// a loop or branch in it counting as 256 operations; each element-wise tile
/// op once per element of its largest on-chip operand) and fails, with a
/// diagnostic naming the largest part, when the estimate exceeds `budget`.
mlir::LogicalResult checkUnrollBudget(LaunchOp launch, int64_t budget);

} // namespace hisa::tile

#endif // HISA_LIB_CONVERSION_TILETOGPU_UNROLLBUDGET_H
