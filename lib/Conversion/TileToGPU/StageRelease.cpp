//===- StageRelease.cpp - Copy-by-copy stages of a warp-specialized loop --===//
//
// A warp_specialized tile.pipelined with tile.release hands each copy's
// buffer over on mbarriers of its own (per copy and stage) instead of one
// pair per stage, so that consumers start on a copy's data as soon as it
// lands and the producer refills a buffer as soon as every consumer warp
// released it. Each consumer thread keeps two 32-bit masks per iteration:
// the copies it waited for and those it released. A copy is waited for
// just before the first op that reads it (a runtime check, since picks and
// scf.if make the first read dynamic), released by tile.release or at the
// end of the iteration, and never released before it was waited for: the
// mbarriers' phase parity then never runs two phases ahead of a warp.
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"

#include "hisa/Dialect/Tile/IR/TileLimits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace hisa::tile;

Value KernelLowering::selectByCopy(OpBuilder &b, Value copy,
                                   ArrayRef<Value> values) {
  if (std::optional<int64_t> known = getConstantIntValue(copy))
    return values[*known];
  Location loc = func.getLoc();
  Value result = values.front();
  for (auto [c, value] : llvm::enumerate(values))
    if (c > 0 && value != result)
      result = arith::SelectOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, copy,
                                index(b, c)),
          value, result);
  return result;
}

Value KernelLowering::getCopyMbarrier(OpBuilder &b, Value mbarriers, Value copy,
                                      Value stage, bool empty,
                                      ArrayRef<int64_t> copyStages) {
  // Layout: every copy's "full" mbarriers (copy-major, then stage), then
  // every copy's "empty" ones; with one copy set this is the per-stage
  // layout of getStageMbarrier / getEmptyStageMbarrier.
  Location loc = func.getLoc();
  int64_t total = 0;
  // The copy's first slot: c * stages when all copies have as many, else
  // the earlier copies' stages summed.
  Value first;
  if (llvm::all_equal(copyStages)) {
    total = copyStages.front() * int64_t(copyStages.size());
    first = arith::MulIOp::create(b, loc, copy, index(b, copyStages.front()));
  } else {
    SmallVector<Value> firsts;
    for (int64_t stages : copyStages) {
      firsts.push_back(index(b, total));
      total += stages;
    }
    first = selectByCopy(b, copy, firsts);
  }
  Value slot = arith::AddIOp::create(b, loc, first, stage);
  if (empty)
    slot = arith::AddIOp::create(b, loc, slot, index(b, total));
  return getStageMbarrier(b, mbarriers, slot);
}

/// The shared tile behind views of `tile`.
static Value stripViews(Value tile) {
  while (auto view = tile.getDefiningOp<ViewOp>())
    tile = view.getSource();
  return tile;
}

FailureOr<Value> KernelLowering::getReleasedCopyIndex(OpBuilder &b,
                                                      Operation *user,
                                                      Value tile) {
  ReleasedCopies &released = *releasedCopies;
  tile = stripViews(tile);
  auto found = released.copyOf.find(tile);
  if (found != released.copyOf.end())
    return index(b, found->second);
  auto pick = tile.getDefiningOp<PickOp>();
  if (!pick)
    return Value();
  ValueRange tiles = pick.getTiles();
  int64_t staged = llvm::count_if(
      tiles, [&](Value t) { return released.copyOf.count(t) != 0; });
  if (staged == 0)
    return Value();
  if (staged != int64_t(tiles.size()))
    return user->emitOpError("reads a tile.pick among stage buffers and "
                             "other tiles; with tile.release in the loop a "
                             "pick must be all stage buffers or none");
  // The copy of the candidate the pick chooses (an index past the end takes
  // the last, as the pick does).
  Location loc = user->getLoc();
  Value chosen = index(b, released.copyOf.lookup(tiles.back()));
  for (int64_t i = int64_t(tiles.size()) - 2; i >= 0; --i) {
    Value is = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                     pick.getIndex(), index(b, i));
    chosen = arith::SelectOp::create(
        b, loc, is, index(b, released.copyOf.lookup(tiles[i])), chosen);
  }
  return chosen;
}

/// The mask in `maskMemref` (an i32 alloca), `1 << copy`, and whether that
/// bit is clear in the mask.
struct MaskBit {
  Value mask, bit, clear;
};
static MaskBit readMaskBit(OpBuilder &b, Location loc, Value maskMemref,
                           Value copy) {
  Type i32 = b.getI32Type();
  Value bit = arith::ShLIOp::create(
      b, loc, arith::ConstantIntOp::create(b, loc, i32, 1),
      arith::IndexCastOp::create(b, loc, i32, copy));
  Value mask = memref::LoadOp::create(b, loc, maskMemref);
  Value clear =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                            arith::AndIOp::create(b, loc, mask, bit),
                            arith::ConstantIntOp::create(b, loc, i32, 0));
  return {mask, bit, clear};
}

/// Sets the bit of `read` in its mask.
static void setMaskBit(OpBuilder &b, Location loc, Value maskMemref,
                       const MaskBit &read) {
  memref::StoreOp::create(
      b, loc, arith::OrIOp::create(b, loc, read.mask, read.bit), maskMemref);
}

void KernelLowering::awaitCopy(OpBuilder &b, Value copy, bool forReading) {
  ReleasedCopies &released = *releasedCopies;
  Location loc = func.getLoc();
  std::optional<int64_t> known = getConstantIntValue(copy);
  if (known && released.awaited.contains(*known))
    return;
  MaskBit waited = readMaskBit(b, loc, released.waitedMask, copy);
  emitIf(b, waited.clear, [&](OpBuilder &waiting) {
    waitForPhase(waiting, loc,
                 getCopyMbarrier(waiting, released.mbarriers, copy,
                                 selectByCopy(waiting, copy, released.stageOf),
                                 /*empty=*/false, released.copyStages),
                 selectByCopy(waiting, copy, released.parityOf));
    // cp.async pieces are written through the generic proxy; wgmma reads
    // them through the async one. (A warpgroup that releases a buffer it
    // did not read waits only to arrive in the right phase: it reads
    // nothing, so there is nothing to fence.)
    if (released.anyCpAsync && (forReading || !elideSync))
      fenceSharedForAsyncProxy(waiting);
    setMaskBit(waiting, loc, released.waitedMask, waited);
  });
}

void KernelLowering::releaseCopy(OpBuilder &b, Value copy) {
  ReleasedCopies &released = *releasedCopies;
  Location loc = func.getLoc();
  awaitCopy(b, copy, /*forReading=*/false);
  MaskBit held = readMaskBit(b, loc, released.releasedMask, copy);
  emitIf(b, held.clear, [&](OpBuilder &releasing) {
    // Once all of a warp's lanes are done with the buffer.
    arriveOncePerWarp(
        releasing,
        getCopyMbarrier(releasing, released.mbarriers, copy,
                        selectByCopy(releasing, copy, released.stageOf),
                        /*empty=*/true, released.copyStages));
    setMaskBit(releasing, loc, released.releasedMask, held);
  });
}

LogicalResult KernelLowering::lowerRelease(ReleaseOp op, OpBuilder &b) {
  if (!releasedCopies)
    return op.emitOpError("is not in the consumers' body of a "
                          "warp-specialized loop being lowered");
  FailureOr<Value> copy = getReleasedCopyIndex(b, op, op.getTile());
  if (failed(copy))
    return failure();
  if (!*copy)
    return op.emitOpError("releases a tile that no copy of the loop fills");
  releaseCopy(b, *copy);
  return success();
}

LogicalResult KernelLowering::awaitCopiesReadBy(Operation *op, OpBuilder &b) {
  if (isa<PerWarpgroupOp, PickOp, ReleaseOp, YieldOp, AllocOp, BarrierOp>(op))
    return success();
  SmallVector<Value> copies;
  llvm::SmallPtrSet<Operation *, 4> seenPicks;
  llvm::SmallDenseSet<int64_t> seenCopies;
  WalkResult walk = op->walk([&](Operation *inner) {
    for (Value operand : inner->getOperands()) {
      if (!isa<SharedType>(operand.getType()))
        continue;
      Value tile = stripViews(operand);
      if (auto pick = tile.getDefiningOp<PickOp>();
          pick && !seenPicks.insert(pick).second)
        continue;
      FailureOr<Value> copy = getReleasedCopyIndex(b, op, tile);
      if (failed(copy))
        return WalkResult::interrupt();
      if (!*copy)
        continue;
      if (std::optional<int64_t> known = getConstantIntValue(*copy);
          known && !seenCopies.insert(*known).second)
        continue;
      copies.push_back(*copy);
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  // An op every consumer thread reaches in every iteration (in the loop's
  // body or a tile.per_warpgroup body there, not under scf.if) waits for
  // its copies once for the rest of the iteration.
  Operation *parent = op->getParentOp();
  bool everyIteration = parent == releasedCopies->loop ||
                        (isa<scf::ExecuteRegionOp>(parent) &&
                         parent->getParentOp() == releasedCopies->loop);
  for (Value copy : copies) {
    awaitCopy(b, copy);
    if (std::optional<int64_t> known = getConstantIntValue(copy);
        known && everyIteration)
      releasedCopies->awaited.insert(*known);
  }
  return success();
}
