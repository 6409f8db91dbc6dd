//===- TileLimits.cpp - Sizes the tile dialect accepts --------------------===//

#include "hisa/Dialect/Tile/IR/TileLimits.h"
#include "hisa/Dialect/Tile/IR/TileDialect.h"
#include "hisa/Dialect/Tile/IR/TileShape.h"

#include "llvm/ADT/TypeSwitch.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace hisa::tile;

int64_t hisa::tile::getElementBytes(Type type) {
  if (type.isIndex())
    return 8;
  if (type.isIntOrFloat())
    return std::max<int64_t>(1, (type.getIntOrFloatBitWidth() + 7) / 8);
  return 1;
}

std::optional<int64_t> hisa::tile::checkedMul(int64_t lhs, int64_t rhs) {
  int64_t product;
  if (llvm::MulOverflow(lhs, rhs, product))
    return std::nullopt;
  return product;
}

std::optional<int64_t> hisa::tile::checkedAdd(int64_t lhs, int64_t rhs) {
  int64_t sum;
  if (llvm::AddOverflow(lhs, rhs, sum))
    return std::nullopt;
  return sum;
}

std::optional<int64_t> hisa::tile::getStaticElementCount(ArrayAttr dims) {
  std::optional<SmallVector<int64_t>> sizes = TileShape(dims).getStaticSizes();
  if (!sizes)
    return std::nullopt;
  std::optional<int64_t> count = 1;
  for (int64_t size : *sizes)
    if (!(count = checkedMul(*count, size)))
      return std::nullopt;
  return count;
}

/// The fewest elements a tile of `dims` can have: the product of its
/// integers and of the coefficients of its parameter products (parameters
/// are at least 1; a global tensor's `?` sizes count as 1), or
/// std::nullopt if that already overflows int64.
static std::optional<int64_t> getLeastElementCount(ArrayAttr dims) {
  std::optional<int64_t> count = 1;
  for (Attribute dim : dims) {
    int64_t factor = 1;
    if (auto size = dyn_cast<IntegerAttr>(dim)) {
      if (size.getInt() != TileShape::kRuntimeSize)
        factor = size.getInt();
    } else if (auto text = dyn_cast<StringAttr>(dim)) {
      if (std::optional<DimMonomial> monomial =
              DimMonomial::parse(text.getValue()))
        factor = monomial->coefficient;
    }
    if (!(count = checkedMul(*count, factor)))
      return std::nullopt;
  }
  return count;
}

LogicalResult
hisa::tile::verifyTileFootprint(function_ref<InFlightDiagnostic()> emitError,
                                StringRef kind, ArrayAttr dims,
                                Type elementType) {
  auto describe = [&]() {
    return formatDims(dims) + " of " + [&] {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << elementType;
      return text;
    }();
  };
  int64_t elementBytes = getElementBytes(elementType);
  bool isGlobal = kind == "global tensor";
  // Exact once parameters are bound; before, a lower bound that already
  // refuses shapes too large for any binding.
  std::optional<int64_t> elements = getLeastElementCount(dims);
  if (!elements)
    return emitError() << "the " << kind << " " << describe()
                       << " has more elements than int64 can count";

  // What each kind occupies, and the most the target holds.
  int64_t unitBytes = elementBytes, limit = 0;
  StringRef what;
  if (isGlobal) {
    limit = kMaxGlobalBytes;
    what = "bytes (the statically known dimensions; the limit keeps byte "
           "offsets within int64)";
  } else if (kind == "shared tile") {
    limit = kMaxSharedBytes;
    what = "bytes of shared memory (the most a block may use on sm_90)";
  } else if (kind == "fragment") {
    // Each value lives in (at least) one 32-bit register.
    unitBytes = std::max<int64_t>(4, elementBytes);
    limit = kMaxFragmentRegisterBytes;
    what = "bytes of registers (one SM's register file: 65536 32-bit "
           "registers)";
  } else {
    limit = kMaxLocalBytesPerThread;
    what = "bytes per thread (the local memory a thread may address)";
  }
  std::optional<int64_t> bytes = checkedMul(*elements, unitBytes);
  if (!bytes || *bytes > limit) {
    InFlightDiagnostic diag = emitError();
    diag << "the " << kind << " " << describe() << " needs "
         << (TileShape(dims).isFullyStatic() || isGlobal ? "" : "at least ");
    if (bytes)
      diag << *bytes;
    else
      diag << "more than 2^63";
    diag << " bytes; the limit is " << limit << " " << what;
    return diag;
  }
  return success();
}

std::optional<int64_t> hisa::tile::getStaticTileBytes(Type type) {
  auto tile = getTileShapeAndElementType(type);
  if (!tile)
    return std::nullopt;
  std::optional<int64_t> elements =
      getStaticElementCount(tile->first.getDims());
  if (!elements)
    return std::nullopt;
  return checkedMul(*elements, getElementBytes(tile->second));
}

LogicalResult
hisa::tile::verifyTileFootprint(function_ref<InFlightDiagnostic()> emitError,
                                Type type) {
  auto tile = getTileShapeAndElementType(type);
  if (!tile)
    return success();
  StringRef kind = llvm::TypeSwitch<Type, StringRef>(type)
                       .Case<GlobalType>([](auto) { return "global tensor"; })
                       .Case<SharedType>([](auto) { return "shared tile"; })
                       .Case<FragmentType>([](auto) { return "fragment"; })
                       .Default([](Type) { return "local tile"; });
  return verifyTileFootprint(emitError, kind, tile->first.getDims(),
                             tile->second);
}
