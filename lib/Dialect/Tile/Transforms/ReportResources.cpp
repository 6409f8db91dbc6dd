//===- ReportResources.cpp - Print on-chip memory of tile kernels ---------===//

#include "hisa/Dialect/Tile/IR/TileLimits.h"
#include "hisa/Dialect/Tile/Transforms/Passes.h"
#include "hisa/Target/TargetSpec.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

namespace hisa::tile {
#define GEN_PASS_DEF_TILEREPORTRESOURCES
#include "hisa/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace hisa::tile

using namespace mlir;
using namespace hisa::tile;

namespace {

struct TileReportResourcesPass
    : public hisa::tile::impl::TileReportResourcesBase<
          TileReportResourcesPass> {
  using Base::Base;

  /// The shared memory the planner gives `kernel`'s launch: read from a
  /// planned launch, else planned on a copy (in a module nested in this
  /// one, removed afterwards) with the JIT's planning pipeline.
  /// std::nullopt (after a diagnostic) if planning fails.
  std::optional<int64_t> getPlannedSharedBytes(KernelOp kernel,
                                               const hisa::TargetSpec &target) {
    if (auto planned =
            kernel.getLaunch()->getAttrOfType<IntegerAttr>("tile.shared_bytes"))
      return planned.getInt();
    OpBuilder builder = OpBuilder::atBlockEnd(getOperation().getBody());
    auto scratch = ModuleOp::create(builder, kernel.getLoc());
    scratch.getBody()->push_back(kernel.clone());
    OpPassManager pm(ModuleOp::getOperationName());
    buildTilePlanningPipeline(pm, target.chip, target.tma);
    std::optional<int64_t> bytes;
    if (succeeded(runPipeline(pm, scratch)))
      if (auto planned = (*scratch.getOps<KernelOp>().begin())
                             .getLaunch()
                             ->getAttrOfType<IntegerAttr>("tile.shared_bytes"))
        bytes = planned.getInt();
    scratch.erase();
    return bytes;
  }

  void runOnOperation() override {
    hisa::TargetSpec target;
    std::string error;
    if (!hisa::parseTargetSpec(chip, target, error) ||
        !hisa::applyTargetFeatures(features, target, error)) {
      getOperation().emitError("tile-report-resources: ") << error;
      return signalPassFailure();
    }
    // The scratch modules getPlannedSharedBytes appends are not visited.
    for (KernelOp kernel : llvm::to_vector(getOperation().getOps<KernelOp>())) {
      LaunchOp launch = kernel.getLaunch();
      if (!launch)
        continue;
      int64_t threads = launch.getThreads();
      int64_t tileBytes = 0, fragmentBytes = 0, localBytes = 0;
      int64_t sharedTiles = 0;
      for (auto alloc : launch.getBody().getOps<AllocOp>()) {
        Type type = alloc.getResult().getType();
        std::optional<int64_t> bytes = getStaticTileBytes(type);
        if (!bytes) {
          alloc.emitOpError("has a shape with parameter names; run "
                            "tile-bind-params before tile-report-resources");
          return signalPassFailure();
        }
        if (isa<SharedType>(type)) {
          tileBytes += *bytes;
          ++sharedTiles;
        } else if (isa<FragmentType>(type)) {
          // Per thread, rounded up below; a warpgroup's copy (inside
          // tile.per_warpgroup) is spread over 128 threads, not all.
          int64_t over = getFragmentScopeThreads(alloc.getResult(), threads)
                             .value_or(threads);
          fragmentBytes += *bytes * threads / over;
        } else {
          localBytes += *bytes;
        }
      }
      std::optional<int64_t> shared = getPlannedSharedBytes(kernel, target);
      if (!shared)
        return signalPassFailure();
      llvm::outs() << "kernel @" << kernel.getSymName()
                   << " threads=" << threads << " shared=" << *shared
                   << "B (declared: " << sharedTiles << " tiles, " << tileBytes
                   << "B)"
                   << " fragment=" << (fragmentBytes + threads - 1) / threads
                   << "B/thread local=" << localBytes << "B/thread\n";
    }
  }
};

} // namespace
