//===- LowerSCFToCFBottomUp.cpp - SCF to CF in linear time ----------------===//

#include "hisa/Conversion/Passes.h"

#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hisa {
#define GEN_PASS_DEF_TILELOWERSCFTOCFBOTTOMUP
#include "hisa/Conversion/Passes.h.inc"
} // namespace hisa

using namespace mlir;

namespace {

struct TileLowerSCFToCFBottomUpPass
    : public hisa::impl::TileLowerSCFToCFBottomUpBase<
          TileLowerSCFToCFBottomUpPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateSCFToControlFlowConversionPatterns(patterns);
    // Bottom-up: the worklist is filled first to last and popped from the
    // back. No folding or region simplification: only the lowering.
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(false)
        .enableFolding(false)
        .enableConstantCSE(false)
        .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    FrozenRewritePatternSet frozen(std::move(patterns));
    // Functions with an scf.while are left whole to convert-scf-to-cf: the
    // while pattern is a dialect-conversion pattern that this greedy,
    // bottom-up driver applies only in part, leaving branches whose operands
    // do not match their blocks.
    for (Operation &function : getOperation().getBody()->getOperations()) {
      if (function.walk([](scf::WhileOp) { return WalkResult::interrupt(); })
              .wasInterrupted())
        continue;
      // Non-convergence only means some op was left for convert-scf-to-cf.
      (void)applyPatternsGreedily(&function, frozen, config);
    }
  }
};

} // namespace
