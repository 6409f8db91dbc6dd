//===- PerWarpgroupOp.cpp - Lower tile.per_warpgroup ----------------------===//
//
// The body runs in every consumer warpgroup at once, each with its own
// index: it is lowered with the thread numbering of one warpgroup (thread
// id modulo 128, 128 threads), so its fragments (laid out over 128 threads
// by tile-assign-layouts), tile.parallel domains and gemms (one warpgroup's
// wgmma, no group offset) are the warpgroup's own. Its block barriers
// synchronize that warpgroup only: named barrier kWarpgroupBarrierBase + wg
// over 128 threads; the whole block meets before and after the body.
// Cross-warp reductions use the warpgroup's slice of the reduction scratch
// (the same stride for every reduction: the plan's scratch split in W).
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"

#include "hisa/Dialect/Tile/IR/TileLimits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace hisa::tile;

Attribute hisa::tile::evaluateForWarpgroup(Value value,
                                           PerWarpgroupOp perWarpgroup,
                                           int64_t index) {
  Value warpgroup = perWarpgroup.getWarpgroup();
  return evaluateByFolding(
      value, perWarpgroup,
      [&](Value known) -> Attribute {
        if (known != warpgroup)
          return {};
        return IntegerAttr::get(IndexType::get(known.getContext()), index);
      },
      /*maxDepth=*/8);
}

bool hisa::tile::mayRunInWarpgroup(Operation *op, PerWarpgroupOp perWarpgroup,
                                   int64_t index) {
  for (Operation *inner = op; inner != perWarpgroup.getOperation();
       inner = inner->getParentOp()) {
    auto branch = dyn_cast<scf::IfOp>(inner->getParentOp());
    if (!branch)
      continue;
    auto condition = dyn_cast_or_null<IntegerAttr>(
        evaluateForWarpgroup(branch.getCondition(), perWarpgroup, index));
    if (!condition)
      continue;
    bool inThen = inner->getParentRegion() == &branch.getThenRegion();
    if (inThen != (condition.getValue() != 0))
      return false;
  }
  return true;
}

void hisa::tile::collectTilesForWarpgroup(Value tile,
                                          PerWarpgroupOp perWarpgroup,
                                          int64_t index,
                                          SmallVectorImpl<Value> &tiles) {
  tile = getViewedTile(tile);
  auto pick = tile.getDefiningOp<PickOp>();
  if (!pick) {
    tiles.push_back(tile);
    return;
  }
  auto chosen = dyn_cast_or_null<IntegerAttr>(
      evaluateForWarpgroup(pick.getIndex(), perWarpgroup, index));
  if (!chosen) {
    for (Value candidate : pick.getTiles())
      collectTilesForWarpgroup(candidate, perWarpgroup, index, tiles);
    return;
  }
  // (As the lowering's compare chain: any index past the end, a negative
  // one read as unsigned too, takes the last.)
  uint64_t last = pick.getTiles().size() - 1;
  uint64_t at = std::min<uint64_t>(chosen.getValue().getLimitedValue(), last);
  collectTilesForWarpgroup(pick.getTiles()[at], perWarpgroup, index, tiles);
}

void KernelLowering::markHandOverCopies(PerWarpgroupOp perWarpgroup,
                                        int64_t warpgroups) {
  Block &body = perWarpgroup.getBody().front();
  // Every shared-tile operand in the kernel (none lowered yet): (op, tile).
  SmallVector<std::pair<Operation *, Value>> accesses;
  func->walk([&](Operation *op) {
    for (Value operand : op->getOperands())
      if (isa<SharedType>(operand.getType()) && !isa<PickOp, ViewOp>(op))
        accesses.push_back({op, operand});
  });
  body.walk([&](CopyOp copy) {
    if (!isa<FragmentType>(copy.getSource().getType()) ||
        !isa<SharedType>(copy.getDest().getType()))
      return;
    for (int64_t index = 0; index < warpgroups; ++index) {
      if (!mayRunInWarpgroup(copy, perWarpgroup, index))
        continue;
      SmallVector<Value> written;
      collectTilesForWarpgroup(copy.getDest(), perWarpgroup, index, written);
      for (auto [op, operand] : accesses) {
        if (op == copy.getOperation())
          continue;
        bool inBody = perWarpgroup->isAncestor(op);
        // Outside the body any access counts (nothing here orders it);
        // inside, one its own warpgroup may run.
        if (inBody && !mayRunInWarpgroup(op, perWarpgroup, index))
          continue;
        SmallVector<Value> touched;
        if (inBody)
          collectTilesForWarpgroup(operand, perWarpgroup, index, touched);
        else
          touched.push_back(operand);
        for (Value tile : touched)
          for (Value destination : written)
            if (mayShareBytes(tile, destination))
              return;
      }
    }
    copy->setAttr(kHandOverAttr, UnitAttr::get(copy.getContext()));
  });
}

LogicalResult KernelLowering::lowerPerWarpgroup(PerWarpgroupOp op,
                                                OpBuilder &b) {
  if (warpgroup)
    return op.emitOpError("is nested in another tile.per_warpgroup");
  Location loc = op.getLoc();
  // Warp-uniform for ptxas: tiles picked by it give uniform descriptors.
  Value wg = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                        getUniformWarpgroupIndex(b, loc));
  Value local =
      arith::RemUIOp::create(b, loc, threadId, index(b, kWarpgroupThreads));
  // The whole block meets before and after the body: what the launch's
  // threads wrote before it (shared tiles, the reduction scratch) is read
  // inside by either warpgroup, and what either writes inside may be read
  // after it; the barriers inside synchronize one warpgroup only.
  bool synchronized = !op.getUnsynchronized();
  bool fencedByPipeline = fencedWarpgroups.contains(op);
  if (synchronized)
    gpu::BarrierOp::create(b, loc);
  // The body, in a region of its own while it is lowered, so that the
  // barriers its ops emit can be told from the block's.
  auto region = scf::ExecuteRegionOp::create(b, loc, TypeRange());
  Block *block = new Block();
  region.getRegion().push_back(block);
  Block &body = op.getBody().front();
  op.getWarpgroup().replaceAllUsesWith(wg);
  body.getTerminator()->erase();
  SmallVector<Operation *> roots;
  for (Operation &inner : body.getOperations())
    roots.push_back(&inner);
  block->getOperations().splice(block->end(), body.getOperations());
  OpBuilder end = OpBuilder::atBlockEnd(block);
  scf::YieldOp::create(end, loc);

  // The plan's reduction scratch (what lies past tile.scratch_offset: the
  // most outputs of any reduction x 4 bytes x every warp of the block),
  // split evenly between the warpgroups.
  auto sharedBytes = launch->getAttrOfType<IntegerAttr>("tile.shared_bytes");
  auto scratchOffset =
      launch->getAttrOfType<IntegerAttr>("tile.scratch_offset");
  if (!sharedBytes || !scratchOffset)
    return op.emitOpError("has no shared-memory plan; run "
                          "tile-plan-shared-memory first");
  warpgroupScratchBytes = (sharedBytes.getInt() - scratchOffset.getInt()) /
                          (launch.getThreads() / kWarpgroupThreads);

  Value blockThreadId = threadId;
  int64_t blockThreads = threads;
  threadId = local;
  threads = kWarpgroupThreads;
  warpgroup = wg;
  warpgroupFencedByPipeline = fencedByPipeline;
  LogicalResult result = success();
  for (Operation *root : roots)
    if (failed(lowerNested(root, nullptr))) {
      result = failure();
      break;
    }
  threadId = blockThreadId;
  threads = blockThreads;
  warpgroup = Value();
  warpgroupFencedByPipeline = false;
  if (failed(result))
    return failure();

  SmallVector<gpu::BarrierOp> barriers;
  region.walk([&](gpu::BarrierOp barrier) { barriers.push_back(barrier); });
  if (synchronized)
    gpu::BarrierOp::create(b, loc); // after the region (b's insertion point)
  if (barriers.empty())
    return success();
  OpBuilder at(region);
  Type i32 = at.getI32Type();
  Value id = arith::AddIOp::create(
      at, loc, arith::IndexCastOp::create(at, loc, i32, wg),
      arith::ConstantIntOp::create(at, loc, i32, kWarpgroupBarrierBase));
  for (gpu::BarrierOp barrier : barriers) {
    OpBuilder nb(barrier);
    NVVM::BarrierOp::create(nb, barrier.getLoc(), TypeRange(), id,
                            arith::ConstantIntOp::create(
                                nb, barrier.getLoc(), i32, kWarpgroupThreads),
                            NVVM::BarrierReductionAttr(), Value());
    barrier->erase();
  }
  return success();
}
