//===- InlineFunctions.cpp - Inline device functions into tile kernels ----===//

#include "hisa/Dialect/Tile/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Transforms/InliningUtils.h"

namespace hisa::tile {
#define GEN_PASS_DEF_TILEINLINEFUNCTIONS
#include "hisa/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace hisa::tile

using namespace mlir;
using namespace hisa::tile;

namespace {

/// A file of hisa's device library: kernels-dsl/lib/<name>.mlir.
struct LibraryFile {
  const char *name;
  const char *source;
};

const LibraryFile kLibrary[] = {
#include "DeviceLibrary.inc"
};

/// Calls nested deeper than this are taken for recursion.
constexpr int kMaxInlineDepth = 32;

/// Copies into `module` the library function `name`, if the library has it
/// with the type of `declaration` (when given), replacing the declaration.
func::FuncOp linkFromLibrary(ModuleOp module, StringRef name,
                             func::FuncOp declaration) {
  for (const LibraryFile &file : kLibrary) {
    ParserConfig config(module.getContext());
    OwningOpRef<ModuleOp> library =
        parseSourceString<ModuleOp>(file.source, config, file.name);
    if (!library)
      continue;
    auto function = library->lookupSymbol<func::FuncOp>(name);
    if (!function || function.isExternal())
      continue;
    if (declaration &&
        declaration.getFunctionType() != function.getFunctionType())
      return nullptr;
    auto copy = cast<func::FuncOp>(function->clone());
    copy.setPrivate();
    if (declaration)
      declaration.erase();
    module.push_back(copy);
    return copy;
  }
  return nullptr;
}

/// Moves or clones the callee's body in place of the call, as MLIR's
/// inliner does by default.
void cloneBody(OpBuilder &builder, Region *source, Block *inlineBlock,
               Block *postInsertBlock, IRMapping &mapper, bool clone) {
  Region *region = inlineBlock->getParent();
  if (clone)
    source->cloneInto(region, postInsertBlock->getIterator(), mapper);
  else
    region->getBlocks().splice(postInsertBlock->getIterator(),
                               source->getBlocks(), source->begin(),
                               source->end());
}

struct TileInlineFunctionsPass
    : hisa::tile::impl::TileInlineFunctionsBase<TileInlineFunctionsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    InlinerInterface interface(&getContext());
    // Inlined bodies may call further functions: repeat until no call is
    // left, counting the nesting of each call to catch recursion.
    DenseMap<Operation *, int> depth;
    bool changed = true;
    while (changed) {
      changed = false;
      SmallVector<Operation *> calls;
      module.walk([&](Operation *op) {
        if (isa<func::CallOp, CallOp>(op) && op->getParentOfType<LaunchOp>())
          calls.push_back(op);
      });
      for (Operation *call : calls) {
        if (failed(inline_(module, interface, call, depth)))
          return signalPassFailure();
        changed = true;
      }
    }
    // Calls left are in device functions (inlined copies of them were
    // handled) or outside any kernel: those are errors.
    WalkResult outside = module.walk([](Operation *call) {
      if (!isa<func::CallOp, CallOp>(call))
        return WalkResult::advance();
      auto function = call->getParentOfType<func::FuncOp>();
      if (function && function.isPrivate())
        return WalkResult::advance();
      call->emitOpError("calls a device function outside a tile.launch; "
                        "device functions are inlined into kernels only");
      return WalkResult::interrupt();
    });
    if (outside.wasInterrupted())
      return signalPassFailure();
    // The device functions (and the library declarations kernels made) have
    // no use in a kernel left: erase them, callers before callees.
    bool erased = true;
    while (erased) {
      erased = false;
      for (auto function :
           llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
        if (function.isPrivate() &&
            SymbolTable::symbolKnownUseEmpty(function, module)) {
          function.erase();
          erased = true;
        }
    }
  }

  LogicalResult inline_(ModuleOp module, InlinerInterface &interface,
                        Operation *call, DenseMap<Operation *, int> &depth) {
    auto tileCall = dyn_cast<CallOp>(call);
    StringRef name =
        tileCall ? tileCall.getCallee() : cast<func::CallOp>(call).getCallee();
    auto error = [&]() { return call->emitOpError(); };
    auto callee = module.lookupSymbol<func::FuncOp>(name);
    // A declaration (how a kernel names what it uses from the library) or
    // a missing function: the library's definition.
    if (!callee || callee.isExternal()) {
      func::FuncOp declaration = callee;
      callee = linkFromLibrary(module, name, declaration);
      if (!callee && declaration)
        return error() << "calls @" << name
                       << ", which has no body here or in hisa's device "
                          "library (kernels-dsl/lib)";
    }
    if (!callee)
      return error() << "calls @" << name
                     << ", which is neither in this module nor in hisa's "
                        "device library (kernels-dsl/lib)";
    if (!callee.getBody().hasOneBlock())
      return error() << "calls @" << name
                     << ", whose body has several blocks; device functions "
                        "use structured control flow (scf) only";
    int level = depth.lookup(call) + 1;
    if (level > kMaxInlineDepth)
      return error() << "calls @" << name << " more than " << kMaxInlineDepth
                     << " levels deep: device functions must not be recursive";
    // A tile.call inlines a copy of the callee with its shape symbols bound
    // to the caller's dimensions.
    OwningOpRef<func::FuncOp> specialized;
    if (tileCall) {
      FailureOr<llvm::StringMap<Attribute>> bindings =
          tileCall.bindShapes(callee.getFunctionType());
      if (failed(bindings))
        return failure();
      specialized = cast<func::FuncOp>(callee->clone());
      substituteShapes(*specialized, *bindings);
    } else if (callee.getFunctionType() !=
               FunctionType::get(&getContext(), call->getOperandTypes(),
                                 call->getResultTypes())) {
      return error() << "does not match the type of @" << name << ": "
                     << callee.getFunctionType();
    }
    func::FuncOp body = specialized ? *specialized : callee;
    // The calls the inlined body brings along are one level deeper.
    Block *block = call->getBlock();
    DenseSet<Operation *> before;
    block->walk([&](Operation *inner) {
      if (isa<func::CallOp, CallOp>(inner))
        before.insert(inner);
    });
    if (failed(inlineRegion(interface, cloneBody, &body.getBody(), call,
                            call->getOperands(), call->getResults(),
                            call->getLoc())))
      return error() << "could not inline @" << name;
    block->walk([&](Operation *inner) {
      if (isa<func::CallOp, CallOp>(inner) && !before.contains(inner))
        depth[inner] = level;
    });
    depth.erase(call);
    call->erase();
    return success();
  }

  /// Replaces the shape symbols of `function` (its types and parallel
  /// domains) by the dimensions `bindings` gives.
  static void substituteShapes(func::FuncOp function,
                               const llvm::StringMap<Attribute> &bindings) {
    MLIRContext *context = function.getContext();
    auto substitute = [&](ArrayAttr dims) -> ArrayAttr {
      SmallVector<Attribute> result;
      for (Attribute dim : dims) {
        auto text = dyn_cast<StringAttr>(dim);
        std::optional<DimMonomial> monomial =
            text ? DimMonomial::parse(text.getValue()) : std::nullopt;
        if (!monomial) {
          result.push_back(dim);
          continue;
        }
        if (monomial->coefficient == 1 && monomial->symbols.size() == 1) {
          Attribute bound = bindings.lookup(monomial->symbols[0]);
          result.push_back(bound ? bound : dim);
          continue;
        }
        Attribute product =
            Builder(context).getI64IntegerAttr(monomial->coefficient);
        for (const std::string &symbol : monomial->symbols) {
          Attribute bound = bindings.lookup(symbol);
          Attribute factor = bound ? bound : StringAttr::get(context, symbol);
          product = product ? multiplyDims(product, factor) : Attribute();
        }
        result.push_back(product ? product : dim);
      }
      return ArrayAttr::get(context, result);
    };
    AttrTypeReplacer replacer;
    replacer.addReplacement([&](Type type) -> std::optional<Type> {
      if (auto global = dyn_cast<GlobalType>(type))
        return GlobalType::get(context, substitute(global.getDims()),
                               global.getElementType());
      if (auto shared = dyn_cast<SharedType>(type))
        return SharedType::get(context, substitute(shared.getDims()),
                               shared.getElementType());
      if (auto fragment = dyn_cast<FragmentType>(type))
        return FragmentType::get(context, substitute(fragment.getDims()),
                                 fragment.getElementType(),
                                 fragment.getLayout());
      if (auto local = dyn_cast<LocalType>(type))
        return LocalType::get(context, substitute(local.getDims()),
                              local.getElementType());
      return std::nullopt;
    });
    replacer.recursivelyReplaceElementsIn(function, /*replaceAttrs=*/true,
                                          /*replaceLocs=*/false,
                                          /*replaceTypes=*/true);
    function.walk([&](ParallelOp parallel) {
      parallel.setExtentsAttr(substitute(parallel.getExtents()));
    });
  }
};

} // namespace
