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
  if (isGeneral())
    return generalValues;
  int64_t perSweep = threads * vector;
  return (getNumElements() + perSweep - 1) / perSweep * vector;
}

bool VectorLayout::hasPartialCoverage() const {
  if (isGeneral())
    return false;
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

VectorLayout VectorLayout::fromAttr(FragmentLayoutAttr attr,
                                    ArrayRef<int64_t> shape) {
  for (int64_t vector = 1; vector <= attr.getValues(); vector *= 2) {
    VectorLayout candidate{SmallVector<int64_t>(shape), attr.getThreads(),
                           vector};
    if (candidate.toAttr(attr.getContext()) == attr)
      return candidate;
  }
  VectorLayout general{SmallVector<int64_t>(shape), attr.getThreads(), 1};
  general.generalMap = attr.getMap();
  general.generalValues = attr.getValues();
  return general;
}

FragmentLayoutAttr hisa::tile::getWgmmaAccumulatorLayout(MLIRContext *context,
                                                         int64_t m, int64_t n) {
  AffineExpr t = getAffineDimExpr(0, context);
  AffineExpr v = getAffineDimExpr(1, context);
  int64_t perBlock = n / 2;
  AffineExpr block = v.floorDiv(perBlock);
  AffineExpr i = v % perBlock;
  AffineExpr lane = t % 32;
  AffineExpr row = block * 64 + t.floorDiv(32) * 16 + lane.floorDiv(4) +
                   (i.floorDiv(2) % 2) * 8;
  AffineExpr col = i.floorDiv(4) * 8 + (lane % 4) * 2 + i % 2;
  return FragmentLayoutAttr::get(context, 128, (m / 64) * perBlock,
                                 AffineMap::get(2, 0, {row, col}, context));
}
