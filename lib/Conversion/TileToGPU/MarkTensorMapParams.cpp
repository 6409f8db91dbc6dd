//===- MarkTensorMapParams.cpp - Tensor maps as grid constants ------------===//

#include "hisa/Conversion/Passes.h"
#include "hisa/Dialect/Tile/IR/TensorMaps.h"

namespace hisa {
#define GEN_PASS_DEF_TILEMARKTENSORMAPPARAMS
#include "hisa/Conversion/Passes.h.inc"
} // namespace hisa

using namespace mlir;

namespace {

struct TileMarkTensorMapParamsPass
    : public hisa::impl::TileMarkTensorMapParamsBase<
          TileMarkTensorMapParamsPass> {
  void runOnOperation() override {
    Builder b(&getContext());
    // CUtensorMap: 128 opaque bytes, 64-byte aligned.
    Type storage = LLVM::LLVMArrayType::get(b.getI8Type(), 128);
    getOperation().walk([&](LLVM::LLVMFuncOp func) {
      auto count =
          func->getAttrOfType<IntegerAttr>(hisa::tile::kTensorMapCountAttrName);
      if (!count)
        return;
      unsigned arguments = func.getNumArguments();
      if (count.getInt() > arguments) {
        func.emitOpError("has fewer parameters than its ")
            << count.getInt() << " tensor maps";
        return signalPassFailure();
      }
      for (unsigned i = arguments - count.getInt(); i < arguments; ++i) {
        if (!isa<LLVM::LLVMPointerType>(func.getArgument(i).getType())) {
          func.emitOpError("tensor map parameter #")
              << i << " is not a pointer";
          return signalPassFailure();
        }
        func.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                        TypeAttr::get(storage));
        func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                        b.getI64IntegerAttr(64));
        func.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                        b.getUnitAttr());
      }
      func->removeAttr(hisa::tile::kTensorMapCountAttrName);
    });
  }
};

} // namespace
