//===- UnrollLoops.cpp - Unroll marked loops, shared loads first ----------===//
//
// An scf.for marked `tile.unroll = N` becomes a loop of step N * step whose
// body runs the original body for the next N iterations, each past the
// first under `iteration < upper bound`. Loads of shared tiles at the top
// of the body, from tiles nothing in the loop writes, are cloned ahead of
// every iteration's body, at the iteration's index or, past the end, at the
// first iteration's: LLVM cannot move a load above an atomic or store of
// another shared tile (it cannot tell them apart), and a loop whose loads
// each wait for the previous iteration's atomics is latency-bound.
//
//===----------------------------------------------------------------------===//

#include "hisa/Dialect/Tile/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace hisa::tile {
#define GEN_PASS_DEF_TILEUNROLLLOOPS
#include "hisa/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace hisa::tile

using namespace mlir;
using namespace hisa::tile;

namespace {

constexpr llvm::StringLiteral kUnrollAttrName = "tile.unroll";
constexpr int64_t kMaxUnrollFactor = 16;

/// Whether shared-tile value `operand` may reach the bytes of `root` (a
/// tile.alloc): the same allocation through views, a tile.pick with such a
/// candidate, or anything that is not a tile.alloc (nothing is known).
bool mayAccess(Value operand, Value root) {
  Value tile = getViewedTile(operand);
  if (tile == root)
    return true;
  if (auto pick = tile.getDefiningOp<PickOp>())
    return llvm::any_of(pick.getTiles(), [&](Value candidate) {
      return mayAccess(candidate, root);
    });
  return !tile.getDefiningOp<AllocOp>();
}

/// Whether the loop's body holds only element code (arith, math, scf and
/// tile.load / store / atomic): no barrier or block-wide tile op another
/// thread's write could be ordered behind, so a load of a tile the loop does
/// not write reads the same value anywhere in an iteration.
bool holdsOnlyElementCode(scf::ForOp loop) {
  WalkResult walk = loop.getBody()->walk([](Operation *op) {
    if (isa<LoadOp, StoreOp, AtomicOp>(op))
      return WalkResult::advance();
    StringRef dialect =
        op->getDialect() ? op->getDialect()->getNamespace() : "";
    return dialect == "arith" || dialect == "math" || dialect == "scf"
               ? WalkResult::advance()
               : WalkResult::interrupt();
  });
  return !walk.wasInterrupted();
}

/// Whether `load` may be issued ahead of the iterations: it reads a shared
/// tile.alloc defined outside the loop (directly or through views), no op in
/// `loop` other than a load may reach that tile, it has no peer, and each of
/// its indices is computed from the induction variable, values defined
/// outside the loop and side-effect-free ops of the body (collected in
/// `chain`, in body order).
bool isHoistable(LoadOp load, scf::ForOp loop,
                 llvm::SetVector<Operation *> &chain) {
  Value source = load.getSource();
  if (!isa<SharedType>(source.getType()) || load.getPeer() ||
      loop->isAncestor(source.getParentRegion()->getParentOp()))
    return false;
  Value root = getViewedTile(source);
  if (!root.getDefiningOp<AllocOp>())
    return false;
  WalkResult writes = loop.getBody()->walk([&](Operation *op) {
    if (isa<LoadOp>(op))
      return WalkResult::advance();
    for (Value operand : op->getOperands())
      if (isa<SharedType>(operand.getType()) && mayAccess(operand, root))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (writes.wasInterrupted())
    return false;
  SmallVector<Value> pending(load.getIndices());
  llvm::SetVector<Operation *> needed;
  while (!pending.empty()) {
    Value value = pending.pop_back_val();
    if (value == loop.getInductionVar() ||
        !loop->isAncestor(value.getParentRegion()->getParentOp()))
      continue;
    Operation *def = value.getDefiningOp();
    if (!def || def->getBlock() != loop.getBody() || !isPure(def) ||
        def->getNumRegions() != 0)
      return false;
    if (needed.insert(def))
      llvm::append_range(pending, def->getOperands());
  }
  // In body order, so that each clone's operands exist.
  for (Operation &op : *loop.getBody())
    if (needed.contains(&op))
      chain.insert(&op);
  return true;
}

LogicalResult unroll(scf::ForOp loop) {
  Attribute attr = loop->getAttr(kUnrollAttrName);
  auto factorAttr = dyn_cast<IntegerAttr>(attr);
  if (!factorAttr)
    return loop.emitOpError("has tile.unroll = ")
           << attr << "; it takes an integer from 1 to " << kMaxUnrollFactor;
  int64_t factor = factorAttr.getInt();
  if (factor < 1 || factor > kMaxUnrollFactor)
    return loop.emitOpError("has tile.unroll = ")
           << factor << "; it takes an integer from 1 to " << kMaxUnrollFactor;
  if (loop.getNumResults() != 0)
    return loop.emitOpError("has tile.unroll but carries iteration "
                            "arguments; only loops without them are unrolled");
  // (Over index, whose 64 bits leave room past the bound for the guards'
  // iterations; signed, as the guards compare.)
  if (!loop.getInductionVar().getType().isIndex() || loop.getUnsignedCmp())
    return loop.emitOpError("has tile.unroll but is not a signed loop over "
                            "index; only those are unrolled");
  WalkResult collective = loop.getBody()->walk([](Operation *op) {
    return isa<VoteOp, WarpScanOp, WarpBroadcastOp, WarpMatchOp>(op)
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  if (collective.wasInterrupted())
    return loop.emitOpError(
        "has tile.unroll but holds a warp collective, which every lane must "
        "reach: the unrolled iterations run under guards that differ between "
        "lanes");
  loop->removeAttr(kUnrollAttrName);
  if (factor == 1)
    return success();

  Location loc = loop.getLoc();
  OpBuilder b(loop);
  auto constant = [&](OpBuilder &at, int64_t value) -> Value {
    return arith::ConstantIndexOp::create(at, loc, value);
  };
  Value step = loop.getStep();
  Value wideStep = arith::MulIOp::create(b, loc, step, constant(b, factor));
  auto wide = scf::ForOp::create(b, loc, loop.getLowerBound(),
                                 loop.getUpperBound(), wideStep);
  OpBuilder in = OpBuilder::atBlockTerminator(wide.getBody());
  Value first = wide.getInductionVar();

  // Iteration u runs at first + u * step, past the first only when that is
  // below the upper bound (the loop's own test).
  SmallVector<Value> iterations{first};
  SmallVector<Value> inside{Value()};
  for (int64_t u = 1; u < factor; ++u) {
    Value offset = arith::MulIOp::create(in, loc, step, constant(in, u));
    Value iteration = arith::AddIOp::create(in, loc, first, offset);
    iterations.push_back(iteration);
    inside.push_back(arith::CmpIOp::create(in, loc, arith::CmpIPredicate::slt,
                                           iteration, loop.getUpperBound()));
  }

  // The hoistable loads at the top of the body (before any op that is not a
  // load or side-effect-free), for every iteration first.
  Block &body = *loop.getBody();
  SmallVector<LoadOp> hoisted;
  SmallVector<llvm::SetVector<Operation *>> chains;
  if (holdsOnlyElementCode(loop)) {
    for (Operation &op : body.without_terminator()) {
      auto load = dyn_cast<LoadOp>(op);
      if (!load) {
        if (isPure(&op) && op.getNumRegions() == 0)
          continue;
        break;
      }
      llvm::SetVector<Operation *> chain;
      if (!isHoistable(load, loop, chain))
        continue;
      hoisted.push_back(load);
      chains.push_back(std::move(chain));
    }
  }
  SmallVector<IRMapping> early(factor);
  for (int64_t u = 0; u < factor && !hoisted.empty(); ++u) {
    Value at = u == 0 ? first
                      : arith::SelectOp::create(in, loc, inside[u],
                                                iterations[u], first)
                            .getResult();
    for (auto [load, chain] : llvm::zip(hoisted, chains)) {
      IRMapping mapping;
      mapping.map(loop.getInductionVar(), at);
      for (Operation *op : chain)
        in.clone(*op, mapping);
      Operation *clone = in.clone(*load, mapping);
      early[u].map(load.getResult(), clone->getResult(0));
    }
  }

  // Then each iteration's body, without its hoisted loads.
  llvm::SmallPtrSet<Operation *, 8> skipped;
  for (LoadOp load : hoisted)
    skipped.insert(load);
  for (int64_t u = 0; u < factor; ++u) {
    IRMapping mapping = early[u];
    mapping.map(loop.getInductionVar(), iterations[u]);
    auto cloneBody = [&](OpBuilder &at) {
      for (Operation &op : body.without_terminator())
        if (!skipped.contains(&op))
          at.clone(op, mapping);
    };
    if (u == 0) {
      cloneBody(in);
      continue;
    }
    auto guard = scf::IfOp::create(in, loc, inside[u], /*withElse=*/false);
    OpBuilder then = OpBuilder::atBlockTerminator(guard.thenBlock());
    cloneBody(then);
  }
  loop.erase();
  return success();
}

struct TileUnrollLoopsPass
    : public hisa::tile::impl::TileUnrollLoopsBase<TileUnrollLoopsPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) {
      if (loop->hasAttr(kUnrollAttrName))
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops)
      if (failed(unroll(loop)))
        return signalPassFailure();
  }
};

} // namespace
