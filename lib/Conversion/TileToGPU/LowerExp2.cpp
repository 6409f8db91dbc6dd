//===- LowerExp2.cpp - f32 exp2 as ex2.approx.ftz -------------------------===//

#include "hisa/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hisa {
#define GEN_PASS_DEF_TILELOWEREXP2
#include "hisa/Conversion/Passes.h.inc"
} // namespace hisa

using namespace mlir;

namespace {

/// f32 `math.exp2` -> `llvm.nvvm.ex2.approx.ftz.f32` (one MUFU.EX2).
struct Exp2ToApproxFtz : OpRewritePattern<math::Exp2Op> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::Exp2Op op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!type.isF32())
      return rewriter.notifyMatchFailure(op, "not a scalar f32");
    rewriter.replaceOpWithNewOp<LLVM::CallIntrinsicOp>(
        op, type, rewriter.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"),
        ValueRange{op.getOperand()});
    return success();
  }
};

struct TileLowerExp2Pass
    : public hisa::impl::TileLowerExp2Base<TileLowerExp2Pass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    hisa::populateTileLowerExp2Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void hisa::populateTileLowerExp2Patterns(RewritePatternSet &patterns) {
  patterns.add<Exp2ToApproxFtz>(patterns.getContext());
}
