//===- ScanOps.cpp - Lower tile.scan, warp collectives and tile.all_of ---===//
//
// tile.scan: each thread scans a contiguous run of the tile in registers;
// the run totals are scanned across each warp with shuffles (Hillis-Steele,
// five steps) and across warps through one value per warp in the reduction
// scratch; a second pass over the run writes the results. Three barriers in
// all (before, between, after), whatever the tile's size.
//
// tile.warp_scan and tile.vote act on the lanes of a warp, which hold 32
// consecutive elements of their tile.parallel's domain when the domain's
// layout gives each thread one element per step (vector 1) and the domain
// fills whole warps; anything else is refused with a diagnostic.
//
// tile.all_of: every warp reads the whole (small) tile, ceil(n / 32)
// consecutive elements per lane (one vector load when they fill whole
// lanes), evaluates the predicate in registers and votes: the same answer
// in every warp without a barrier.
//
//===----------------------------------------------------------------------===//

#include "Combiner.h"
#include "KernelLowering.h"

#include "hisa/Dialect/Tile/IR/TileLimits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace hisa::tile;

namespace {

/// Inclusive scan of `value` over the lanes of each warp (lane l combines
/// lanes 0..l).
Value scanWarp(OpBuilder &b, Location loc, const Combiner &combiner,
               Value value, Value lane) {
  Type i32 = b.getI32Type();
  Value width = arith::ConstantIntOp::create(b, loc, i32, 32);
  for (int64_t step = 1; step < 32; step *= 2) {
    Value offset = arith::ConstantIntOp::create(b, loc, i32, step);
    Value other = gpu::ShuffleOp::create(b, loc, value, offset, width,
                                         gpu::ShuffleMode::UP)
                      .getShuffleResult();
    Value has =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, lane,
                              arith::ConstantIndexOp::create(b, loc, step));
    value = arith::SelectOp::create(
        b, loc, has, combiner.combine(b, loc, value, other), value);
  }
  return value;
}

/// Value of lane `source` of the warp.
Value broadcastLane(OpBuilder &b, Location loc, Value value, int64_t source) {
  Type i32 = b.getI32Type();
  return gpu::ShuffleOp::create(
             b, loc, value, arith::ConstantIntOp::create(b, loc, i32, source),
             arith::ConstantIntOp::create(b, loc, i32, 32),
             gpu::ShuffleMode::IDX)
      .getShuffleResult();
}

/// The exclusive scan from the inclusive one: the previous lane's value,
/// the identity in lane 0.
Value exclusiveFromInclusive(OpBuilder &b, Location loc,
                             const Combiner &combiner, Value inclusive,
                             Value lane) {
  Type i32 = b.getI32Type();
  Value previous =
      gpu::ShuffleOp::create(
          b, loc, inclusive, arith::ConstantIntOp::create(b, loc, i32, 1),
          arith::ConstantIntOp::create(b, loc, i32, 32), gpu::ShuffleMode::UP)
          .getShuffleResult();
  Value firstLane =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                            arith::ConstantIndexOp::create(b, loc, 0));
  return arith::SelectOp::create(b, loc, firstLane, combiner.identity(b, loc),
                                 previous);
}

} // namespace

/// Checks that the lanes of a warp hold consecutive elements of the
/// enclosing parallel's domain, each element once per step.
static LogicalResult
verifyWarpLanes(Operation *op, const ElementContext *context, int64_t threads) {
  ParallelOp parallel = context ? context->parallel : ParallelOp();
  if (!parallel || !parallel.getLayout())
    return op->emitOpError("must be lowered inside a tile.parallel with a "
                           "layout; run tile-assign-layouts first");
  VectorLayout layout = VectorLayout::fromAttr(
      *parallel.getLayout(), *parallel.getDomain().getStaticSizes());
  if (layout.isGeneral() || layout.vector != 1)
    return op->emitOpError("needs the enclosing tile.parallel to give each "
                           "thread one element per step, but its layout is ")
           << *parallel.getLayout()
           << " (a fragment of the domain's shape fixes it)";
  if (layout.getNumElements() % 32 != 0 || threads % 32 != 0)
    return op->emitOpError("needs the enclosing tile.parallel's domain to "
                           "fill whole warps, but it has ")
           << layout.getNumElements() << " elements";
  return success();
}

LogicalResult KernelLowering::lowerScan(ScanOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  for (Value tile : {op.getSource(), op.getDest()})
    if (auto alloc = getRootAlloc(tile);
        alloc && alloc->hasAttr("tile.swizzle"))
      return op.emitOpError("cannot scan a swizzled (tile.gemm operand) "
                            "shared tile");
  auto scratchOffset =
      launch->getAttrOfType<IntegerAttr>("tile.scratch_offset");
  if (!scratchOffset || !sharedBase)
    return op.emitOpError("has no scratch; run tile-plan-shared-memory first");
  std::optional<SmallVector<int64_t>> sizes =
      getTileShapeAndElementType(op.getSource().getType())
          ->first.getStaticSizes();
  if (!sizes)
    return op.emitOpError("tile shape is not bound");
  int64_t n = (*sizes)[0];
  Type element = op.getTotal().getType();
  Combiner combiner{op.getKind(), element};
  Value source = memrefs.lookup(op.getSource());
  Value dest = memrefs.lookup(op.getDest());
  int64_t perThread = (n + threads - 1) / threads;
  int64_t warps = threads / 32;

  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value scratch = memref::ViewOp::create(
      b, loc,
      MemRefType::get({warps}, element, MemRefLayoutAttrInterface(), workgroup),
      sharedBase, index(b, scratchOffset.getInt()), ValueRange());
  Value lane = arith::RemUIOp::create(b, loc, threadId, index(b, 32));
  Value warp = arith::DivUIOp::create(b, loc, threadId, index(b, 32));
  Value first = arith::MulIOp::create(b, loc, threadId, index(b, perThread));

  // The position of the run's j-th element in the tile (mirrored for
  // reverse) and whether it exists.
  auto position = [&](OpBuilder &at, Value j) -> std::pair<Value, Value> {
    Value i = arith::AddIOp::create(at, loc, first, j);
    Value inside = arith::CmpIOp::create(at, loc, arith::CmpIPredicate::ult, i,
                                         index(at, n));
    if (op.getReverse())
      i = arith::SubIOp::create(at, loc, index(at, n - 1), i);
    return {i, inside};
  };
  // Runs `body(running, element) -> new running` over this thread's run.
  auto overRun =
      [&](Value init,
          function_ref<Value(OpBuilder &, Value, Value, Value)> body) -> Value {
    auto loop = scf::ForOp::create(b, loc, index(b, 0), index(b, perThread),
                                   index(b, 1), ValueRange{init});
    OpBuilder inner = OpBuilder::atBlockBegin(loop.getBody());
    auto [i, inside] = position(inner, loop.getInductionVar());
    Value running = loop.getRegionIterArgs()[0];
    auto guarded = scf::IfOp::create(inner, loc, TypeRange{element}, inside,
                                     /*withElseRegion=*/true);
    OpBuilder then = guarded.getThenBodyBuilder();
    Value value = memref::LoadOp::create(then, loc, source, ValueRange{i});
    scf::YieldOp::create(then, loc, body(then, running, value, i));
    OpBuilder otherwise = guarded.getElseBodyBuilder();
    scf::YieldOp::create(otherwise, loc, running);
    scf::YieldOp::create(inner, loc, guarded.getResult(0));
    return loop.getResult(0);
  };

  barrier(b);
  Value identity = combiner.identity(b, loc);
  Value runTotal =
      overRun(identity, [&](OpBuilder &at, Value running, Value value, Value) {
        return combiner.combine(at, loc, running, value);
      });
  Value inclusive = scanWarp(b, loc, combiner, runTotal, lane);
  Value lastLane = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                         index(b, 31));
  emitIf(b, lastLane, [&](OpBuilder &at) {
    memref::StoreOp::create(at, loc, inclusive, scratch, ValueRange{warp});
  });
  barrier(b);
  // Every thread reads the warp totals: those of the warps before its own
  // give its warp's offset, all of them the result.
  Value warpOffset = identity, total = identity;
  for (int64_t w = 0; w < warps; ++w) {
    Value warpTotal =
        memref::LoadOp::create(b, loc, scratch, ValueRange{index(b, w)});
    Value before = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         index(b, w), warp);
    warpOffset = arith::SelectOp::create(
        b, loc, before, combiner.combine(b, loc, warpOffset, warpTotal),
        warpOffset);
    total = combiner.combine(b, loc, total, warpTotal);
  }
  // The runs of the lanes before this one.
  Value laneOffset = exclusiveFromInclusive(b, loc, combiner, inclusive, lane);
  Value runOffset = combiner.combine(b, loc, warpOffset, laneOffset);
  bool exclusive = op.getExclusive();
  overRun(runOffset,
          [&](OpBuilder &at, Value running, Value value, Value i) -> Value {
            Value next = combiner.combine(at, loc, running, value);
            memref::StoreOp::create(at, loc, exclusive ? running : next, dest,
                                    ValueRange{i});
            return next;
          });
  barrier(b);
  op.getTotal().replaceAllUsesWith(total);
  return success();
}

LogicalResult KernelLowering::lowerWarpScan(WarpScanOp op, OpBuilder &b,
                                            const ElementContext *context) {
  if (failed(verifyWarpLanes(op, context, threads)))
    return failure();
  Location loc = op.getLoc();
  Combiner combiner{op.getKind(), op.getValue().getType()};
  Value lane = arith::RemUIOp::create(b, loc, threadId, index(b, 32));
  Value inclusive = scanWarp(b, loc, combiner, op.getValue(), lane);
  Value prefix = inclusive;
  if (op.getExclusive())
    prefix = exclusiveFromInclusive(b, loc, combiner, inclusive, lane);
  op.getPrefix().replaceAllUsesWith(prefix);
  op.getTotal().replaceAllUsesWith(broadcastLane(b, loc, inclusive, 31));
  return success();
}

LogicalResult
KernelLowering::lowerWarpBroadcast(WarpBroadcastOp op, OpBuilder &b,
                                   const ElementContext *context) {
  if (failed(verifyWarpLanes(op, context, threads)))
    return failure();
  Location loc = op.getLoc();
  Value result = gpu::ShuffleOp::create(
                     b, loc, op.getValue(), op.getLane(),
                     arith::ConstantIntOp::create(b, loc, b.getI32Type(), 32),
                     gpu::ShuffleMode::IDX)
                     .getShuffleResult();
  op.getResult().replaceAllUsesWith(result);
  return success();
}

LogicalResult KernelLowering::lowerVote(VoteOp op, OpBuilder &b,
                                        const ElementContext *context) {
  if (failed(verifyWarpLanes(op, context, threads)))
    return failure();
  Location loc = op.getLoc();
  NVVM::VoteSyncKind kind = NVVM::VoteSyncKind::ballot;
  if (op.getKind() == VoteKind::Any)
    kind = NVVM::VoteSyncKind::any;
  else if (op.getKind() == VoteKind::All)
    kind = NVVM::VoteSyncKind::all;
  Value everyLane = arith::ConstantIntOp::create(b, loc, b.getI32Type(), -1);
  Value result = NVVM::VoteSyncOp::create(b, loc, op.getResult().getType(),
                                          everyLane, op.getPredicate(), kind)
                     .getResult();
  op.getResult().replaceAllUsesWith(result);
  return success();
}

LogicalResult KernelLowering::lowerWarpMatch(WarpMatchOp op, OpBuilder &b,
                                             const ElementContext *context) {
  if (failed(verifyWarpLanes(op, context, threads)))
    return failure();
  Location loc = op.getLoc();
  Value everyLane = arith::ConstantIntOp::create(b, loc, b.getI32Type(), -1);
  Value result =
      NVVM::MatchSyncOp::create(b, loc, b.getI32Type(), everyLane,
                                op.getValue(), NVVM::MatchSyncKind::any)
          .getResult();
  op.getResult().replaceAllUsesWith(result);
  return success();
}

/// `holds` and the predicate of `op` on `value` (cloned at `b`); an element
/// outside the tile (`inside` false) holds.
static Value andPredicate(AllOfOp op, OpBuilder &b, Value holds, Value value,
                          Value inside) {
  Location loc = op.getLoc();
  Block &predicate = op.getPredicate().front();
  IRMapping mapping;
  mapping.map(predicate.getArgument(0), value);
  for (Operation &inner : predicate.without_terminator())
    b.clone(inner, mapping);
  Value result = mapping.lookupOrDefault(
      cast<YieldOp>(predicate.getTerminator()).getValues()[0]);
  if (inside)
    result = arith::OrIOp::create(
        b, loc, result,
        arith::XOrIOp::create(
            b, loc, inside,
            arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)));
  return arith::AndIOp::create(b, loc, holds, result);
}

/// Replaces `op` by the warp's vote on every lane's `holds`.
static void replaceByWarpVote(AllOfOp op, OpBuilder &b, Value holds) {
  Location loc = op.getLoc();
  Value everyLane = arith::ConstantIntOp::create(b, loc, b.getI32Type(), -1);
  Value all = NVVM::VoteSyncOp::create(b, loc, b.getI1Type(), everyLane, holds,
                                       NVVM::VoteSyncKind::all)
                  .getResult();
  op.getResult().replaceAllUsesWith(all);
}

/// Whether the predicate holds for every element the warp holds: each
/// thread tests its own registers (values past the tile's end hold), then
/// one vote.
LogicalResult KernelLowering::lowerFragmentAllOf(AllOfOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  FailureOr<VectorLayout> layout =
      getLayout(op, cast<FragmentType>(op.getSource().getType()));
  if (failed(layout))
    return failure();
  SmallVector<Value> values = registers.lookup(op.getSource());
  if (static_cast<int64_t>(values.size()) != layout->getValuesPerThread())
    return op.emitOpError("reads a fragment whose registers are not known "
                          "here (a view or pick of a fragment is not "
                          "supported)");
  Value holds = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  for (auto [v, reg] : llvm::enumerate(values))
    holds = andPredicate(op, b, holds, memref::LoadOp::create(b, loc, reg),
                         isInside(b, *layout, v));
  replaceByWarpVote(op, b, holds);
  return success();
}

LogicalResult KernelLowering::lowerAllOf(AllOfOp op, OpBuilder &b) {
  if (isa<FragmentType>(op.getSource().getType()))
    return lowerFragmentAllOf(op, b);
  Location loc = op.getLoc();
  std::optional<SmallVector<int64_t>> sizes =
      getTileShapeAndElementType(op.getSource().getType())
          ->first.getStaticSizes();
  if (!sizes)
    return op.emitOpError("tile shape is not bound");
  int64_t count = (*sizes)[0];
  if (count > kMaxAllOfElements)
    return op.emitOpError("reads the whole tile in every warp: at most ")
           << kMaxAllOfElements << " elements, got " << count
           << " once the parameters are bound";
  int64_t perLane = (count + 31) / 32;
  Value memref = memrefs.lookup(op.getSource());
  Type element = cast<MemRefType>(memref.getType()).getElementType();
  int64_t bytes = element.getIntOrFloatBitWidth() / 8;
  // One vector load per lane when the lanes' runs fill the tile exactly.
  bool vectorized = count == 32 * perLane && perLane > 1 &&
                    llvm::isPowerOf2_64(perLane) && perLane * bytes <= 16;
  Value lane = arith::RemUIOp::create(b, loc, threadId, index(b, 32));
  Value first = arith::MulIOp::create(b, loc, lane, index(b, perLane));
  Value loaded;
  if (vectorized)
    loaded = loadElements(b, memref, first, perLane, /*checkBounds=*/false);
  Value holds = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  for (int64_t i = 0; i < perLane; ++i) {
    Value at = arith::AddIOp::create(b, loc, first, index(b, i));
    Value inside;
    Value value;
    if (vectorized) {
      value = vector::ExtractOp::create(b, loc, loaded, i);
    } else {
      inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, at,
                                     index(b, count));
      Value safe = arith::SelectOp::create(b, loc, inside, at, index(b, 0));
      value = loadElements(b, memref, safe, 1, /*checkBounds=*/false);
    }
    // (Past the tile's end, where a lane's last run overhangs: holds.)
    holds = andPredicate(op, b, holds, value, inside);
  }
  replaceByWarpVote(op, b, holds);
  return success();
}
