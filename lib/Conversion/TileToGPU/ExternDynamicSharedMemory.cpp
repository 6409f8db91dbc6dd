//===- ExternDynamicSharedMemory.cpp - extern __shared__ declarations -----===//

#include "hisa/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace hisa {
#define GEN_PASS_DEF_TILEEXTERNDYNAMICSHAREDMEMORY
#include "hisa/Conversion/Passes.h.inc"
} // namespace hisa

using namespace mlir;

namespace {

/// Whether `global` is the zero-sized shared array that GPUToNVVM creates for
/// gpu.dynamic_shared_memory.
bool isDynamicSharedMemoryBase(LLVM::GlobalOp global) {
  auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
  return array && array.getNumElements() == 0 &&
         global.getAddrSpace() ==
             static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared) &&
         !global.getValueOrNull() && global.getInitializerRegion().empty();
}

struct TileExternDynamicSharedMemoryPass
    : public hisa::impl::TileExternDynamicSharedMemoryBase<
          TileExternDynamicSharedMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      getOperation().emitError("tile-extern-dynamic-shared-memory: alignment "
                               "must be a power of two, got ")
          << static_cast<int64_t>(alignment);
      return signalPassFailure();
    }
    SmallVector<LLVM::GlobalOp> bases;
    getOperation().walk([&](LLVM::GlobalOp global) {
      if (!isDynamicSharedMemoryBase(global))
        return;
      global.setLinkage(LLVM::Linkage::External);
      global.setDsoLocal(false);
      uint64_t current = global.getAlignment().value_or(1);
      global.setAlignment(std::max<uint64_t>(current, alignment));
      bases.push_back(global);
    });
    WalkResult named = getOperation().walk([&](LLVM::InlineAsmOp asmOp) {
      StringRef text = asmOp.getAsmString();
      if (!text.contains(hisa::kDynamicSharedBaseMarker))
        return WalkResult::advance();
      if (bases.size() != 1) {
        asmOp.emitOpError("names the dynamic shared-memory base, but the "
                          "module has ")
            << bases.size() << " dynamic shared-memory globals (expected 1)";
        return WalkResult::interrupt();
      }
      std::string replaced = text.str();
      StringRef name = bases.front().getSymName();
      for (size_t at = replaced.find(hisa::kDynamicSharedBaseMarker);
           at != std::string::npos;
           at = replaced.find(hisa::kDynamicSharedBaseMarker, at + name.size()))
        replaced.replace(at, hisa::kDynamicSharedBaseMarker.size(), name.str());
      asmOp.setAsmString(replaced);
      return WalkResult::advance();
    });
    if (named.wasInterrupted())
      return signalPassFailure();
  }
};

} // namespace
