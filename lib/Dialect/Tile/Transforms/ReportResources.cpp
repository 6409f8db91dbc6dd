//===- ReportResources.cpp - Print on-chip memory of tile kernels ---------===//

#include "hisa/Dialect/Tile/Transforms/Passes.h"

#include "llvm/Support/raw_ostream.h"

namespace hisa::tile {
#define GEN_PASS_DEF_TILEREPORTRESOURCES
#include "hisa/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace hisa::tile

using namespace mlir;
using namespace hisa::tile;

namespace {

/// Bytes of a tile with a fully static shape, or std::nullopt.
std::optional<int64_t> getTileBytes(Type type) {
  auto tile = getTileShapeAndElementType(type);
  if (!tile)
    return std::nullopt;
  std::optional<SmallVector<int64_t>> sizes = tile->first.getStaticSizes();
  if (!sizes)
    return std::nullopt;
  int64_t elements = 1;
  for (int64_t size : *sizes)
    elements *= size;
  int64_t bits =
      tile->second.isIndex() ? 64 : tile->second.getIntOrFloatBitWidth();
  return (elements * bits + 7) / 8;
}

struct TileReportResourcesPass
    : public hisa::tile::impl::TileReportResourcesBase<
          TileReportResourcesPass> {
  void runOnOperation() override {
    for (KernelOp kernel : getOperation().getOps<KernelOp>()) {
      LaunchOp launch = kernel.getLaunch();
      if (!launch)
        continue;
      int64_t threads = launch.getThreads();
      int64_t sharedBytes = 0, fragmentBytes = 0, localBytes = 0;
      int64_t sharedTiles = 0;
      for (auto alloc : launch.getBody().getOps<AllocOp>()) {
        Type type = alloc.getResult().getType();
        std::optional<int64_t> bytes = getTileBytes(type);
        if (!bytes) {
          alloc.emitOpError("has a shape with parameter names; run "
                            "tile-bind-params before tile-report-resources");
          return signalPassFailure();
        }
        if (isa<SharedType>(type)) {
          sharedBytes += *bytes;
          ++sharedTiles;
        } else if (isa<FragmentType>(type)) {
          fragmentBytes += *bytes;
        } else {
          localBytes += *bytes;
        }
      }
      llvm::outs() << "kernel @" << kernel.getSymName()
                   << " threads=" << threads << " shared=" << sharedBytes
                   << "B (" << sharedTiles << " tiles)"
                   << " fragment=" << (fragmentBytes + threads - 1) / threads
                   << "B/thread local=" << localBytes << "B/thread\n";
    }
  }
};

} // namespace
