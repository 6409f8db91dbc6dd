//===- BindParams.cpp - Bind tile kernel specialization parameters --------===//

#include "hisa/Dialect/Tile/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MathExtras.h"

namespace hisa::tile {
#define GEN_PASS_DEF_TILEBINDPARAMS
#include "hisa/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace hisa::tile

using namespace mlir;
using namespace hisa::tile;

namespace {

/// Gives every parameter of `kernel` its value and removes parameter names
/// from the kernel's shapes.
LogicalResult bindKernel(KernelOp kernel,
                         const llvm::StringMap<int64_t> &overrides) {
  Builder builder(kernel.getContext());
  llvm::StringMap<int64_t> values;
  SmallVector<NamedAttribute> boundParams;
  for (NamedAttribute param : kernel.getParams()) {
    StringRef name = param.getName().getValue();
    auto it = overrides.find(name);
    int64_t value = it != overrides.end()
                        ? it->second
                        : cast<IntegerAttr>(param.getValue()).getInt();
    values[name] = value;
    boundParams.push_back(
        builder.getNamedAttr(name, builder.getI64IntegerAttr(value)));
  }
  auto lookup = [&](StringRef name) -> std::optional<int64_t> {
    auto it = values.find(name);
    if (it == values.end())
      return std::nullopt;
    return it->second;
  };

  bool failed = false;
  auto emitError = [&]() -> InFlightDiagnostic {
    failed = true;
    return kernel.emitOpError("cannot bind parameters: ");
  };
  auto bind = [&](ArrayAttr dims) -> ArrayAttr {
    FailureOr<ArrayAttr> bound = bindDims(dims, lookup, emitError);
    return mlir::failed(bound) ? dims : *bound;
  };

  AttrTypeReplacer replacer;
  replacer.addReplacement([&](Type type) -> std::optional<Type> {
    if (auto global = dyn_cast<GlobalType>(type))
      return GlobalType::get(type.getContext(), bind(global.getDims()),
                             global.getElementType());
    if (auto shared = dyn_cast<SharedType>(type))
      return SharedType::get(type.getContext(), bind(shared.getDims()),
                             shared.getElementType());
    if (auto fragment = dyn_cast<FragmentType>(type))
      return FragmentType::get(type.getContext(), bind(fragment.getDims()),
                               fragment.getElementType(), fragment.getLayout());
    if (auto local = dyn_cast<LocalType>(type))
      return LocalType::get(type.getContext(), bind(local.getDims()),
                            local.getElementType());
    return std::nullopt;
  });
  replacer.recursivelyReplaceElementsIn(kernel, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/true);
  kernel.walk([&](ParallelOp parallel) {
    parallel.setExtentsAttr(bind(parallel.getExtents()));
  });
  kernel.walk([&](LaunchOp launch) {
    // blocks_per_sm and cluster may each name a parameter.
    auto bindNamed = [&](Attribute attr, StringRef what, auto set) {
      auto name = dyn_cast_or_null<StringAttr>(attr);
      if (!name)
        return;
      std::optional<int64_t> value = lookup(name.getValue());
      if (!value) {
        emitError() << what << " names unknown parameter '" << name.getValue()
                    << "'";
        return;
      }
      set(builder.getI64IntegerAttr(*value));
    };
    bindNamed(launch.getBlocksPerSmAttr(), "blocks_per_sm",
              [&](IntegerAttr value) { launch.setBlocksPerSmAttr(value); });
    bindNamed(launch.getClusterBlocksAttr(), "cluster",
              [&](IntegerAttr value) { launch.setClusterBlocksAttr(value); });
  });
  if (failed)
    return failure();

  // A value the tile.param's integer type cannot hold would be truncated.
  WalkResult fits = kernel.walk([&](ParamOp param) {
    Type type = param.getType();
    int64_t value = values.lookup(param.getName());
    // Integers are signless: iN holds -2^(N-1) .. 2^N - 1.
    unsigned width = type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
    if (width >= 64 || llvm::isIntN(width, value) ||
        llvm::isUIntN(width, value))
      return WalkResult::advance();
    param.emitOpError("cannot bind parameter '")
        << param.getName() << "' = " << value << ": it does not fit in "
        << type;
    return WalkResult::interrupt();
  });
  if (fits.wasInterrupted())
    return failure();

  OpBuilder rewriter(kernel.getContext());
  kernel.walk([&](ParamOp param) {
    rewriter.setInsertionPoint(param);
    Type type = param.getType();
    Value constant = arith::ConstantOp::create(
        rewriter, param.getLoc(), type,
        rewriter.getIntegerAttr(type, values.lookup(param.getName())));
    param.replaceAllUsesWith(constant);
    param.erase();
  });
  kernel.walk([&](DimOp dim) {
    std::optional<int64_t> size =
        dim.getSource().getType().getTileShape().getStaticSize(dim.getIndex());
    if (!size)
      return;
    rewriter.setInsertionPoint(dim);
    Value constant =
        arith::ConstantIndexOp::create(rewriter, dim.getLoc(), *size);
    dim.replaceAllUsesWith(constant);
    dim.erase();
  });
  kernel.setParamsAttr(builder.getDictionaryAttr(boundParams));
  return success();
}

struct TileBindParamsPass
    : public hisa::tile::impl::TileBindParamsBase<TileBindParamsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<KernelOp> kernels;
    for (KernelOp kernel : module.getOps<KernelOp>())
      if (this->kernel.empty() ||
          kernel.getSymName() == StringRef(this->kernel))
        kernels.push_back(kernel);
    // Errors in the binding itself point at the kernel being bound (the
    // module of a parsed file has no location of its own) and quote the
    // binding, which comes from the pass options, not from the source.
    auto allKernels = module.getOps<KernelOp>();
    Location bindingLoc = !kernels.empty()      ? kernels[0].getLoc()
                          : !allKernels.empty() ? (*allKernels.begin()).getLoc()
                                                : module.getLoc();
    std::string binding = "params=" + llvm::join(params, ",");
    if (!this->kernel.empty() && kernels.empty()) {
      emitError(bindingLoc, "no tile.kernel named @") << this->kernel;
      return signalPassFailure();
    }
    // A device function's types name its callers' parameters: binding the
    // kernels alone would leave the calls mismatched.
    for (KernelOp kernel : kernels) {
      WalkResult calls = kernel.walk([](Operation *call) {
        if (!isa<func::CallOp, CallOp>(call))
          return WalkResult::advance();
        call->emitOpError("calls a device function that is not inlined yet; "
                          "run tile-inline-functions before tile-bind-params "
                          "(tile-to-nvvm and the JIT do)");
        return WalkResult::interrupt();
      });
      if (calls.wasInterrupted())
        return signalPassFailure();
    }

    llvm::StringMap<int64_t> overrides;
    for (const std::string &entry : params) {
      auto [name, text] = StringRef(entry).split('=');
      name = name.trim();
      int64_t value;
      if (name.empty() || text.trim().getAsInteger(10, value)) {
        emitError(bindingLoc, "malformed parameter binding '")
            << entry << "' in '" << binding << "': expected name=integer";
        return signalPassFailure();
      }
      if (!overrides.try_emplace(name, value).second) {
        emitError(bindingLoc, "parameter '")
            << name << "' is bound twice in '" << binding << "'";
        return signalPassFailure();
      }
    }
    for (const auto &entry : overrides) {
      bool declared = llvm::any_of(kernels, [&](KernelOp kernel) {
        return static_cast<bool>(kernel.getParams().get(entry.getKey()));
      });
      if (declared)
        continue;
      std::string names;
      for (KernelOp kernel : kernels)
        for (NamedAttribute param : kernel.getParams())
          names += (names.empty() ? "" : ", ") + param.getName().str();
      emitError(bindingLoc, "parameter '")
          << entry.getKey() << "' in '" << binding
          << "' is not declared by any bound kernel (parameters: "
          << (names.empty() ? "none" : names) << ")";
      return signalPassFailure();
    }
    for (KernelOp kernel : kernels)
      if (failed(bindKernel(kernel, overrides)))
        return signalPassFailure();
  }
};

} // namespace
