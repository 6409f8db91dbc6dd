//===- LowerSCFToCFBottomUp.cpp - SCF to CF in linear time ----------------===//

#include "hisa/Conversion/Passes.h"

#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
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
    // Non-convergence only means some op was left for convert-scf-to-cf.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns), config);
  }
};

} // namespace
