//===- PlanSharedMemory.cpp - Place shared tiles in one buffer ------------===//

#include "hisa/Dialect/Tile/IR/TensorMaps.h"
#include "hisa/Dialect/Tile/IR/TileLayouts.h"
#include "hisa/Dialect/Tile/IR/TileLimits.h"
#include "hisa/Dialect/Tile/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/MathExtras.h"

#include <climits>

namespace hisa::tile {
#define GEN_PASS_DEF_TILEPLANSHAREDMEMORY
#include "hisa/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace hisa::tile

using namespace mlir;
using namespace hisa::tile;

namespace {

/// Whether `reduce` never touches the reduction scratch (the lowering's
/// rule, isWarpLocalReduction). Conservative: anything it cannot tell needs
/// scratch.
static bool staysWithinWarps(ReduceOp reduce) {
  auto source = dyn_cast<FragmentType>(reduce.getSource().getType());
  auto dest = dyn_cast<FragmentType>(reduce.getDest().getType());
  if (!source || !dest)
    return false;
  std::optional<SmallVector<int64_t>> shape =
      source.getTileShape().getStaticSizes();
  return shape && isWarpLocalReduction(source.getLayout(), *shape,
                                       reduce.getDim(), dest.getLayout());
}

struct SharedTile {
  AllocOp alloc;
  int64_t bytes;
  unsigned firstUse, lastUse; // positions in the launch body
  int64_t offset = -1;
};

/// `value` rounded up to a multiple of `alignment`, or std::nullopt.
std::optional<int64_t> checkedAlignTo(int64_t value, int64_t alignment) {
  std::optional<int64_t> padded = checkedAdd(value, alignment - 1);
  if (!padded)
    return std::nullopt;
  return *padded / alignment * alignment;
}

struct TilePlanSharedMemoryPass
    : public hisa::tile::impl::TilePlanSharedMemoryBase<
          TilePlanSharedMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    for (KernelOp kernel : getOperation().getOps<KernelOp>())
      if (LaunchOp launch = kernel.getLaunch())
        if (failed(planLaunch(launch)))
          return signalPassFailure();
  }

  LogicalResult planLaunch(LaunchOp launch) {
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment))
      return launch.emitOpError("shared-memory alignment must be a power of "
                                "two, got ")
             << static_cast<int64_t>(alignment);
    // Sizes are bounded by the verifiers, but every sum and product here is
    // still checked: a wrapped size would be a wrong plan, not an error.
    auto overflow = [&](Operation *op, StringRef what) {
      return op->emitOpError("shared-memory size of ")
             << what << " overflows int64; a block may use at most "
             << static_cast<int64_t>(maxBytes) << " bytes";
    };
    Block &body = launch.getBody().front();
    // Positions of the top-level ops. A run of tile.per_warpgroup
    // unsynchronized bodies (after one another, or after a warp-specialized
    // loop) is one position: its warpgroups run out of step with only their
    // own barriers between the bodies, so one warpgroup may still read a
    // tile of the previous body while the other writes the next's.
    DenseMap<Operation *, unsigned> position;
    {
      auto isUnsynchronized = [](Operation *op) {
        auto region = dyn_cast<PerWarpgroupOp>(op);
        return region && region.getUnsynchronized();
      };
      auto isWarpSpecialized = [](Operation *op) {
        auto loop = dyn_cast<PipelinedOp>(op);
        return loop && loop.getWarpSpecialized();
      };
      SmallVector<Operation *> ops;
      for (Operation &op : body)
        ops.push_back(&op);
      int64_t lastBlockOp = -1; // the last op with regions or effects
      for (auto [i, op] : llvm::enumerate(ops)) {
        position[op] = i == 0 ? 0 : position[ops[i - 1]] + 1;
        if (isUnsynchronized(op) && lastBlockOp >= 0 &&
            (isUnsynchronized(ops[lastBlockOp]) ||
             isWarpSpecialized(ops[lastBlockOp])))
          for (int64_t k = lastBlockOp + 1; k <= int64_t(i); ++k)
            position[ops[k]] = position[ops[lastBlockOp]];
        // (Allocations, views and picks name tiles and run no code: they
        // do not end a run.)
        if (!isa<AllocOp, ViewOp, PickOp>(op) &&
            (op->getNumRegions() != 0 || !isMemoryEffectFree(op)))
          lastBlockOp = i;
      }
    }
    auto topLevelPosition = [&](Operation *user) {
      while (user->getBlock() != &body)
        user = user->getParentOp();
      return position.lookup(user);
    };

    // Global-to-shared copies at the top level of a pipelined loop fill one
    // buffer per stage while earlier stages are computed on.
    DenseMap<Operation *, int64_t> stagesOf;
    // A warp-specialized loop's producer may start filling its stages
    // before the loop (as soon as what it reads is written, while the
    // consumers finish their prologue): those stages are live from the
    // launch's start and share no bytes with the prologue's tiles.
    DenseSet<Operation *> filledEarly;
    WalkResult pipelines = launch.walk([&](PipelinedOp loop) -> WalkResult {
      if (!stagesCopies(loop))
        return WalkResult::advance();
      for (auto copy : loop.getBody().getOps<CopyOp>()) {
        if (!isa<GlobalType>(copy.getSource().getType()) ||
            !isa<SharedType>(copy.getDest().getType()))
          continue;
        auto alloc = copy.getDest().getDefiningOp<AllocOp>();
        if (!alloc)
          return copy.emitOpError("a pipelined copy must write a shared tile "
                                  "allocated by tile.alloc (not a view)");
        int64_t &stages = stagesOf[alloc];
        stages = std::max<int64_t>(stages, getCopyStages(copy, loop));
        if (loop.getWarpSpecialized())
          filledEarly.insert(alloc);
      }
      return WalkResult::advance();
    });
    if (pipelines.wasInterrupted())
      return failure();

    // Where an async gemm's operands stay in use: its tensor cores read
    // them until a tile.wait_gemms with nothing pending completes it (the
    // first top-level op from the gemm's on that holds one; the launch's
    // end if none does).
    auto asyncGemmEnd = [&](GemmOp gemm) -> unsigned {
      Operation *top = gemm;
      while (top->getBlock() != &body)
        top = top->getParentOp();
      for (Operation *op = top; op; op = op->getNextNode()) {
        WalkResult found = op->walk([&](WaitGemmsOp wait) {
          return wait.getPending() == 0 ? WalkResult::interrupt()
                                        : WalkResult::advance();
        });
        if (found.wasInterrupted())
          return position.lookup(op);
      }
      return body.getOperations().size();
    };
    // Shared tiles a warp-specialized loop's producer reads again after
    // the roles' rendezvous (loop bounds or copy positions the consumers
    // loaded before the loop): alive to the launch's end, whatever the
    // consumers' last read of them (nothing after the loop waits for the
    // producer's read when the loop runs no iteration).
    DenseMap<Operation *, unsigned> rereadUntil;
    for (auto loop : body.getOps<PipelinedOp>()) {
      if (!loop.getWarpSpecialized())
        continue;
      SmallVector<Value> worklist = {loop.getLowerBound(), loop.getUpperBound(),
                                     loop.getStep()};
      for (auto copy : loop.getBody().getOps<CopyOp>())
        for (Value operand : copy->getOperands())
          worklist.push_back(operand);
      DenseSet<Value> seen;
      while (!worklist.empty()) {
        Value value = worklist.pop_back_val();
        if (!seen.insert(value).second)
          continue;
        Operation *def = value.getDefiningOp();
        if (!def || loop->isAncestor(def) || !launch->isAncestor(def))
          continue;
        if (auto load = dyn_cast<LoadOp>(def))
          if (AllocOp alloc = getRootAlloc(getViewedTile(load.getSource())))
            rereadUntil[alloc] = body.getOperations().size();
        for (Value operand : def->getOperands())
          worklist.push_back(operand);
      }
    }

    SmallVector<SharedTile> tiles;
    for (auto alloc : body.getOps<AllocOp>()) {
      if (!isa<SharedType>(alloc.getType()))
        continue;
      if (!getTileShapeAndElementType(alloc.getType())->first.isFullyStatic())
        return alloc.emitOpError("shared tile shape is not bound; run "
                                 "tile-bind-params first");
      // Live from the first use to the last (the alloc itself reserves
      // nothing: tiles allocated up front can still share bytes).
      unsigned at = position.lookup(alloc);
      std::optional<int64_t> tileBytes = getStaticTileBytes(alloc.getType());
      if (!tileBytes)
        return overflow(alloc, "the tile");
      SharedTile tile{alloc, *tileBytes, UINT_MAX, at};
      // Uses through views and picks keep the tile alive too.
      SmallVector<Value> worklist{alloc.getResult()};
      while (!worklist.empty()) {
        Value value = worklist.pop_back_val();
        for (Operation *user : value.getUsers()) {
          unsigned use = topLevelPosition(user);
          tile.firstUse = std::min(tile.firstUse, use);
          tile.lastUse = std::max(tile.lastUse, use);
          // Another block of the cluster may read it until the launch's
          // last cluster barrier.
          if (auto load = dyn_cast<LoadOp>(user); load && load.getPeer())
            tile.lastUse = body.getOperations().size();
          if (auto gemm = dyn_cast<GemmOp>(user); gemm && gemm.getAsync())
            tile.lastUse = std::max(tile.lastUse, asyncGemmEnd(gemm));
          if (auto view = dyn_cast<ViewOp>(user))
            worklist.push_back(view.getResult());
          if (auto pick = dyn_cast<PickOp>(user))
            worklist.push_back(pick.getResult());
        }
      }
      // An unused tile (its uses in a branch a parameter removed, say)
      // takes no bytes.
      if (tile.firstUse == UINT_MAX) {
        tile.firstUse = at;
        tile.bytes = 0;
      }
      if (filledEarly.contains(alloc))
        tile.firstUse = 0;
      if (auto until = rereadUntil.find(alloc); until != rereadUntil.end())
        tile.lastUse = std::max(tile.lastUse, until->second);
      if (int64_t stages = stagesOf.lookup(alloc)) {
        // Every stage starts as aligned as the tile: 1024 bytes for wgmma's
        // swizzled operands, at least 128 for TMA boxes.
        int64_t stageAlignment = std::max<int64_t>(
            alignment, alloc->hasAttr("tile.swizzle") ? 1024 : 128);
        std::optional<int64_t> stride =
            checkedAlignTo(tile.bytes, stageAlignment);
        std::optional<int64_t> staged =
            stride ? checkedMul(*stride, stages) : std::nullopt;
        if (!staged)
          return overflow(alloc, "the pipeline stages of the tile");
        tile.bytes = *staged;
        Builder builder(alloc);
        alloc->setAttr("tile.stages", builder.getI64IntegerAttr(stages));
        alloc->setAttr("tile.stage_bytes", builder.getI64IntegerAttr(*stride));
      }
      tiles.push_back(tile);
    }

    // First fit in order of first use, against tiles whose ranges overlap.
    int64_t end = 0;
    for (SharedTile &tile : tiles) {
      int64_t offset = 0;
      bool moved = true;
      auto tileAlignment = [&](const SharedTile &t) -> int64_t {
        // wgmma's swizzled operands need 1024-byte-aligned tiles.
        return t.alloc->hasAttr("tile.swizzle")
                   ? std::max<int64_t>(alignment, 1024)
                   : static_cast<int64_t>(alignment);
      };
      while (moved) {
        moved = false;
        for (SharedTile &other : tiles) {
          if (&other == &tile || other.offset < 0)
            continue;
          bool liveTogether =
              !(other.lastUse < tile.firstUse || tile.lastUse < other.firstUse);
          bool bytesOverlap = offset < other.offset + other.bytes &&
                              other.offset < offset + tile.bytes;
          if (liveTogether && bytesOverlap) {
            // Both are at most maxBytes here (checked below).
            offset =
                llvm::alignTo(other.offset + other.bytes, tileAlignment(tile));
            moved = true;
          }
        }
      }
      tile.offset = offset;
      std::optional<int64_t> tileEnd = checkedAdd(offset, tile.bytes);
      if (!tileEnd)
        return overflow(tile.alloc, "the tile");
      if (*tileEnd > maxBytes)
        return tile.alloc.emitOpError("needs shared memory up to byte ")
               << *tileEnd << " (" << tile.bytes << " bytes at offset "
               << offset << "); a block may use at most "
               << static_cast<int64_t>(maxBytes);
      end = std::max(end, *tileEnd);
      tile.alloc->setAttr("tile.offset",
                          Builder(launch).getI64IntegerAttr(offset));
    }

    // TMA copies of a pipelined loop complete on one mbarrier per stage;
    // another per stage may release it. A warp-specialized loop hands every
    // stage over through both, whatever its copies.
    launch.walk([&](PipelinedOp loop) {
      auto copies = loop.getBody().front().getOps<CopyOp>();
      if (!loop.getWarpSpecialized() && llvm::none_of(copies, [](CopyOp copy) {
            return copy->hasAttr(kTmaAttrName);
          }))
        return;
      int64_t offset = llvm::alignTo(end, 8);
      loop->setAttr(kMbarrierOffsetAttrName,
                    Builder(loop).getI64IntegerAttr(offset));
      // "full" and "empty" mbarriers (see the pipelined lowering), per
      // stage, or with tile.release per copy and stage; stages are bounded
      // by the verifier, copies by the lowering, so this cannot overflow.
      // With tile.release each copy has as many pairs as its stages.
      int64_t pairs = loop.getNumStages();
      if (releasesCopies(loop)) {
        pairs = 0;
        for (CopyOp copy : loop.getBody().front().getOps<CopyOp>())
          if (isa<GlobalType>(copy.getSource().getType()) &&
              isa<SharedType>(copy.getDest().getType()))
            pairs += getCopyStages(copy, loop);
        pairs = std::max<int64_t>(pairs, loop.getNumStages());
      }
      end = offset + 16 * pairs;
    });

    // Cross-warp reductions combine per-warp partial results in shared
    // memory: at most one f32 per output element per warp. A reduction
    // that stays within warps (its results left in the reduced layout, as
    // a row statistic of a wgmma accumulator) needs none.
    int64_t scratch = 0;
    // (With tile.rejoin, the producer's warps too.)
    int64_t warps = getMostThreads(launch) / 32;
    bool scratchOverflow = false;
    launch.walk([&](ReduceOp reduce) {
      if (staysWithinWarps(reduce))
        return;
      std::optional<int64_t> outputs = getStaticElementCount(
          getTileShapeAndElementType(reduce.getDest().getType())
              ->first.getDims());
      std::optional<int64_t> bytes =
          outputs ? checkedMul(*outputs, warps * 4) : std::nullopt;
      if (!bytes)
        scratchOverflow = true;
      else
        scratch = std::max(scratch, *bytes);
    });
    // Block-wide scans combine one value per warp there.
    launch.walk([&](ScanOp scan) {
      int64_t bytes =
          warps * (scan.getTotal().getType().getIntOrFloatBitWidth() / 8);
      scratch = std::max(scratch, bytes);
    });
    if (scratchOverflow)
      return overflow(launch, "the reduction scratch");
    int64_t scratchOffset = llvm::alignTo(end, alignment);
    std::optional<int64_t> total =
        scratch ? checkedAdd(scratchOffset, scratch) : end;
    if (!total)
      return overflow(launch, "the reduction scratch");
    if (*total > maxBytes)
      return launch.emitOpError("needs ")
             << *total << " bytes of shared memory (" << end
             << " for tiles and mbarriers, " << scratch
             << " for reductions); a block may use at most "
             << static_cast<int64_t>(maxBytes);
    Builder builder(launch);
    launch->setAttr("tile.shared_bytes", builder.getI64IntegerAttr(*total));
    launch->setAttr("tile.scratch_offset",
                    builder.getI64IntegerAttr(scratchOffset));
    return success();
  }
};

} // namespace
