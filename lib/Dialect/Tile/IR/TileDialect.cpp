//===- TileDialect.cpp - Tile dialect, attributes and types ---------------===//

#include "hisa/Dialect/Tile/IR/TileDialect.h"
#include "hisa/Dialect/Tile/IR/TileLimits.h"
#include "hisa/Dialect/Tile/IR/TileOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FoldInterfaces.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace hisa::tile;

#include "hisa/Dialect/Tile/IR/TileEnums.cpp.inc"
#include "hisa/Dialect/Tile/IR/TileOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "hisa/Dialect/Tile/IR/TileAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "hisa/Dialect/Tile/IR/TileTypes.cpp.inc"

namespace {
/// Device functions (tile-inline-functions) are inlined into launch bodies:
/// every tile op may move into one, and a call may sit in any tile region.
struct TileInlinerInterface : DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
  bool isLegalToInline(Region *, Region *, bool, IRMapping &) const final {
    return true;
  }
};

/// Constants that folding creates (or deduplicates) inside a launch stay in
/// the launch body: hoisted onto the kernel's host side, a float constant
/// would break its rule that only integer arithmetic computes the grid.
struct TileFoldInterface : DialectFoldInterface {
  using DialectFoldInterface::DialectFoldInterface;
  bool shouldMaterializeInto(Region *region) const final {
    return isa<LaunchOp>(region->getParentOp());
  }
};
} // namespace

void TileDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "hisa/Dialect/Tile/IR/TileOps.cpp.inc"
      >();
  addInterfaces<TileInlinerInterface, TileFoldInterface>();
}

void TileDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "hisa/Dialect/Tile/IR/TileAttrs.cpp.inc"
      >();
}

void TileDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "hisa/Dialect/Tile/IR/TileTypes.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

LogicalResult
FragmentLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           int64_t threads, int64_t values, AffineMap map) {
  if (threads <= 0 || values <= 0)
    return emitError() << "fragment layout needs a positive thread and value "
                          "count, got threads = "
                       << threads << ", values = " << values;
  if (threads > 1024 || values > kMaxFragmentRegisterBytes / 4)
    return emitError() << "fragment layout of " << threads << " threads x "
                       << values << " values is out of range (at most 1024 "
                       << "threads and " << kMaxFragmentRegisterBytes / 4
                       << " values per thread)";
  if (map.getNumDims() != 2 || map.getNumSymbols() != 0)
    return emitError() << "fragment layout map must be (thread, value) -> "
                          "(coordinates) with no symbols, got "
                       << AffineMapAttr::get(map);
  if (map.getNumResults() == 0)
    return emitError() << "fragment layout map must have at least one result";
  return success();
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

static LogicalResult
verifyTileDims(function_ref<InFlightDiagnostic()> emitError, ArrayAttr dims,
               StringRef kind, bool allowRuntimeSizes) {
  if (dims.empty())
    return emitError() << "a " << kind << " needs at least one dimension";
  for (Attribute dim : dims) {
    if (auto size = dyn_cast<IntegerAttr>(dim)) {
      if (size.getInt() == TileShape::kRuntimeSize) {
        if (!allowRuntimeSizes)
          return emitError()
                 << "a " << kind
                 << " needs sizes known at compile time; '?' is only allowed "
                    "in global tensors";
        continue;
      }
      if (size.getInt() <= 0)
        return emitError() << "dimension sizes must be positive, got "
                           << size.getInt();
      continue;
    }
    auto text = dyn_cast<StringAttr>(dim);
    if (!text)
      return emitError() << "a dimension must be an integer or a parameter "
                            "expression, got "
                         << dim;
    std::optional<DimMonomial> monomial = DimMonomial::parse(text.getValue());
    if (!monomial || monomial->str() != text.getValue())
      return emitError() << "malformed dimension '" << text.getValue() << "'";
  }
  return success();
}

static LogicalResult
verifyElementType(function_ref<InFlightDiagnostic()> emitError, Type type) {
  // Not index: its width is the target's, and tiles need byte sizes.
  // Whole bytes only: copies move elements in vectors, which pack narrower
  // ones (i1, i4, fp4) into bits, while every element access and the
  // runtime count a byte per element.
  if (isa<IntegerType, FloatType>(type)) {
    if (type.getIntOrFloatBitWidth() % 8 == 0)
      return success();
    return emitError() << "tile elements must be whole bytes, got " << type
                       << " (" << type.getIntOrFloatBitWidth()
                       << " bits; hold flags or 4-bit codes in i8)";
  }
  return emitError() << "tile elements must be integers or floats (i64 or "
                        "i32 for indices), got "
                     << type;
}

LogicalResult GlobalType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayAttr dims, Type elementType) {
  if (failed(verifyTileDims(emitError, dims, "global tensor",
                            /*allowRuntimeSizes=*/true)) ||
      failed(verifyElementType(emitError, elementType)))
    return failure();
  return verifyTileFootprint(emitError, "global tensor", dims, elementType);
}

LogicalResult SharedType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayAttr dims, Type elementType) {
  if (failed(verifyTileDims(emitError, dims, "shared tile",
                            /*allowRuntimeSizes=*/false)) ||
      failed(verifyElementType(emitError, elementType)))
    return failure();
  return verifyTileFootprint(emitError, "shared tile", dims, elementType);
}

LogicalResult LocalType::verify(function_ref<InFlightDiagnostic()> emitError,
                                ArrayAttr dims, Type elementType) {
  if (failed(verifyTileDims(emitError, dims, "local tile",
                            /*allowRuntimeSizes=*/false)) ||
      failed(verifyElementType(emitError, elementType)))
    return failure();
  return verifyTileFootprint(emitError, "local tile", dims, elementType);
}

LogicalResult FragmentType::verify(function_ref<InFlightDiagnostic()> emitError,
                                   ArrayAttr dims, Type elementType,
                                   FragmentLayoutAttr layout) {
  if (failed(verifyTileDims(emitError, dims, "fragment",
                            /*allowRuntimeSizes=*/false)) ||
      failed(verifyElementType(emitError, elementType)) ||
      failed(verifyTileFootprint(emitError, "fragment", dims, elementType)))
    return failure();
  if (!layout)
    return success();
  if (layout.getMap().getNumResults() != static_cast<unsigned>(dims.size()))
    return emitError() << "fragment layout map has "
                       << layout.getMap().getNumResults()
                       << " results but the fragment has rank " << dims.size();
  if (std::optional<int64_t> elements = getStaticElementCount(dims)) {
    std::optional<int64_t> held =
        checkedMul(layout.getThreads(), layout.getValues());
    if (held && *held < *elements)
      return emitError() << "fragment layout holds " << *held
                         << " values but the fragment has " << *elements
                         << " elements";
  }
  return success();
}

std::optional<std::pair<TileShape, Type>>
hisa::tile::getTileShapeAndElementType(Type type) {
  return llvm::TypeSwitch<Type, std::optional<std::pair<TileShape, Type>>>(type)
      .Case<GlobalType, SharedType, FragmentType, LocalType>([](auto tile) {
        return std::make_pair(tile.getTileShape(), tile.getElementType());
      })
      .Default([](Type) { return std::nullopt; });
}

StringRef hisa::tile::getTileMemoryKindName(Type type) {
  return llvm::TypeSwitch<Type, StringRef>(type)
      .Case<GlobalType>([](auto) { return "global"; })
      .Case<SharedType>([](auto) { return "shared"; })
      .Case<FragmentType>([](auto) { return "fragment"; })
      .Case<LocalType>([](auto) { return "local"; })
      .Default([](Type) { return "non-tile"; });
}
