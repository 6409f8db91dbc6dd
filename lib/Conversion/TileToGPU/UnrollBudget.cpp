//===- UnrollBudget.cpp - Bound the code a kernel unrolls to --------------===//
//
// convert-tile-to-gpu unrolls tile.parallel bodies over each thread's share
// of the domain and element-wise tile ops over each thread's elements, so
// the code it emits (and the time and memory of every later pass, and of
// ptxas) grows with tile sizes, not with the source. A specialization whose
// unrolled code would exceed a budget is refused before any of it is built.
//
//===----------------------------------------------------------------------===//

#include "UnrollBudget.h"

#include "hisa/Dialect/Tile/IR/TileLimits.h"

using namespace mlir;
using namespace hisa::tile;

/// What a loop or branch costs relative to a plain operation. LLVM's NVPTX
/// code generation and, more so, ptxas grow about quadratically with the
/// loops and branches of a function (clean_and_maintain_logits, 5 loops and
/// 2 branches per row; unrolled rows per thread 32 / 64 / 128: LLVM 0.5 /
/// 1.2 / 3.7 s, ptxas -O3 2.8 / 10.2 / 33 s), so unrolled control flow is
/// charged more: 32 rows fit the budget, 64 do not.
static constexpr int64_t kControlFlowCost = 256;

/// Elements of each thread's share of a tile or domain of `dims`.
static int64_t perThread(ArrayAttr dims, int64_t threads) {
  std::optional<int64_t> elements = getStaticElementCount(dims);
  if (!elements)
    return 0; // unbound shapes are refused elsewhere
  return (*elements + threads - 1) / threads;
}

/// The largest on-chip operand of an element-wise tile op, per thread.
static int64_t perThreadElements(Operation *op, int64_t threads) {
  int64_t most = 0;
  for (Value operand : op->getOperands())
    if (isa<SharedType, FragmentType, LocalType>(operand.getType()))
      most = std::max(
          most,
          perThread(
              getTileShapeAndElementType(operand.getType())->first.getDims(),
              threads));
  return most;
}

LogicalResult hisa::tile::checkUnrollBudget(LaunchOp launch, int64_t budget) {
  int64_t threads = launch.getThreads();
  int64_t total = 0, largest = 0;
  Operation *largestOp = nullptr;
  auto add = [&](Operation *op, int64_t cost) {
    // Costs are at most 2^18 x the source size: no overflow.
    total += cost;
    if (cost > largest) {
      largest = cost;
      largestOp = op;
    }
  };
  launch.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
    // A tile.per_warpgroup body's elements are spread over one warpgroup.
    int64_t over = isInPerWarpgroup(op) ? kWarpgroupThreads : threads;
    if (auto parallel = dyn_cast<ParallelOp>(op)) {
      int64_t bodyOps = 0;
      parallel.getBody().walk([&](Operation *nested) {
        bodyOps += nested->getNumRegions() ? kControlFlowCost : 1;
      });
      add(op, perThread(parallel.getExtents(), over) * bodyOps);
      return WalkResult::skip(); // counted with the iterations
    }
    if (isa<CopyOp, FillOp, ClearOp, CastOp, ReduceOp>(op))
      add(op, perThreadElements(op, over));
    else
      add(op, 1);
    return WalkResult::advance();
  });
  if (total <= budget)
    return success();
  InFlightDiagnostic diag =
      launch.emitOpError("would unroll to about ")
      << total << " operations per thread; the budget is " << budget
      << " (convert-tile-to-gpu max-unrolled-ops): use smaller tiles or "
         "fewer elements per thread";
  diag.attachNote(largestOp->getLoc())
      << "the largest part, " << largest << " operations, unrolls here";
  return diag;
}
