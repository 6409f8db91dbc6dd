//===- TileLayouts.cpp - Fragment layouts the compiler generates ----------===//

#include "hisa/Dialect/Tile/IR/TileLayouts.h"

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;
using namespace hisa::tile;

int64_t VectorLayout::getNumElements() const {
  int64_t elements = 1;
  for (int64_t size : shape)
    elements *= size;
  return elements;
}

int64_t VectorLayout::getValuesPerThread() const {
  int64_t perSweep = threads * vector;
  return (getNumElements() + perSweep - 1) / perSweep * vector;
}

bool VectorLayout::hasPartialCoverage() const {
  return getNumElements() % (threads * vector) != 0;
}

int64_t VectorLayout::getLinearIndex(int64_t thread, int64_t value) const {
  return value / vector * threads * vector + thread * vector + value % vector;
}

FragmentLayoutAttr VectorLayout::toAttr(MLIRContext *context) const {
  AffineExpr t = getAffineDimExpr(0, context);
  AffineExpr v = getAffineDimExpr(1, context);
  AffineExpr linear =
      v.floorDiv(vector) * (threads * vector) + t * vector + v % vector;
  SmallVector<AffineExpr> coords;
  int64_t stride = getNumElements();
  for (auto [i, size] : llvm::enumerate(shape)) {
    stride /= size;
    AffineExpr coord = linear.floorDiv(stride);
    // The outermost coordinate is not wrapped so that positions past the end
    // of the tile stay recognizable.
    coords.push_back(i == 0 ? coord : coord % size);
  }
  auto map = AffineMap::get(2, 0, coords, context);
  return FragmentLayoutAttr::get(context, threads, getValuesPerThread(), map);
}

std::optional<VectorLayout> VectorLayout::fromAttr(FragmentLayoutAttr attr,
                                                   ArrayRef<int64_t> shape) {
  for (int64_t vector = 1; vector <= attr.getValues(); vector *= 2) {
    VectorLayout candidate{SmallVector<int64_t>(shape), attr.getThreads(),
                           vector};
    if (candidate.toAttr(attr.getContext()) == attr)
      return candidate;
  }
  return std::nullopt;
}
