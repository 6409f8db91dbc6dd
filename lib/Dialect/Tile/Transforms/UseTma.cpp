//===- UseTma.cpp - Stage pipelined copies through TMA --------------------===//

#include "hisa/Dialect/Tile/IR/TensorMaps.h"
#include "hisa/Dialect/Tile/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace hisa::tile {
#define GEN_PASS_DEF_TILEUSETMA
#include "hisa/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace hisa::tile

using namespace mlir;
using namespace hisa::tile;

namespace {

struct TileUseTmaPass
    : public hisa::tile::impl::TileUseTmaBase<TileUseTmaPass> {
  using Base::Base;

  void runOnOperation() override {
    bool available = enable && hasTma(chip);
    // Marks from the input are decided again.
    getOperation().walk([](CopyOp copy) { copy->removeAttr(kTmaAttrName); });
    getOperation().walk([&](PipelinedOp loop) {
      if (loop.getNumStages() < 2)
        return;
      for (CopyOp copy : loop.getBody().front().getOps<CopyOp>()) {
        if (!isa<GlobalType>(copy.getSource().getType()) ||
            !isa<SharedType>(copy.getDest().getType()))
          continue;
        std::string reason = copy.getRowIndices() ? "a gather of rows"
                             : available          ? getTmaIneligibility(copy)
                             : enable ? "target " + chip + " has no TMA"
                                      : "TMA is disabled";
        if (reason.empty()) {
          copy->setAttr(kTmaAttrName, UnitAttr::get(&getContext()));
          continue;
        }
        if (report)
          copy.emitRemark("stays on cp.async: ") << reason;
      }
    });
  }
};

} // namespace
