//===- ParallelOp.cpp - Lower tile.parallel ------------------------------===//

#include "KernelLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace hisa::tile;

/// Every thread runs the body once per value its layout gives it, with the
/// induction variables set to that value's coordinates. The loop is fully
/// unrolled so that fragment registers are addressed by constants.
LogicalResult KernelLowering::lowerParallel(ParallelOp op, OpBuilder &b) {
  if (!op.getLayout())
    return op.emitOpError("has no layout; run tile-assign-layouts first");
  std::optional<VectorLayout> layout =
      VectorLayout::fromAttr(*op.getLayout(), *op.getDomain().getStaticSizes());
  bool writesShared = false;
  op.walk([&](StoreOp store) {
    writesShared |= isa<SharedType>(store.getDest().getType());
  });
  op.walk([&](AtomicOp atomic) {
    writesShared |= isa<SharedType>(atomic.getDest().getType());
  });

  Block &body = op.getBody().front();
  SmallVector<Value> runStart;
  for (int64_t v = 0; v < layout->getValuesPerThread(); ++v) {
    // Values of one run share all coordinates but the innermost, which
    // steps by one: computing them from the run's start lets CSE (and LLVM)
    // see that, e.g., a per-row load is the same for the whole run.
    if (v % layout->vector == 0)
      runStart = coordinates(b, *layout, v);
    SmallVector<Value> coords = runStart;
    if (int64_t step = v % layout->vector)
      coords.back() = arith::AddIOp::create(b, op.getLoc(), runStart.back(),
                                            index(b, step));
    Value inside = isInside(b, *layout, v);
    LogicalResult result = success();
    emitIf(b, inside, [&](OpBuilder &nested) {
      IRMapping mapping;
      mapping.map(body.getArguments(), coords);
      ElementContext context{op, v};
      // Clone the whole body before lowering: lowering replaces the uses of
      // the clones' results, which later clones must already hold.
      SmallVector<Operation *> clones;
      for (Operation &inner : body.without_terminator())
        clones.push_back(nested.clone(inner, mapping));
      for (Operation *clone : clones)
        if (failed(lowerNested(clone, &context)))
          result = failure();
    });
    if (failed(result))
      return failure();
  }
  if (writesShared)
    barrier(b);
  return success();
}
