//===- BoundDims.cpp - Run-time sizes bounded below 2^31 ------------------===//

#include "hisa/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

namespace hisa {
#define GEN_PASS_DEF_TILEBOUNDDIMS
#include "hisa/Conversion/Passes.h.inc"
} // namespace hisa

using namespace mlir;

namespace {

struct TileBoundDimsPass
    : public hisa::impl::TileBoundDimsBase<TileBoundDimsPass> {
  void runOnOperation() override {
    getOperation().walk([](memref::DimOp dim) {
      OpBuilder b(dim->getContext());
      b.setInsertionPointAfter(dim);
      Value bound =
          arith::ConstantIndexOp::create(b, dim.getLoc(), int64_t(INT32_MAX));
      auto bounded =
          arith::MinUIOp::create(b, dim.getLoc(), dim.getResult(), bound);
      dim.getResult().replaceAllUsesExcept(bounded, bounded);
    });
  }
};

} // namespace
