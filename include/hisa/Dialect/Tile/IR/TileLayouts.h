//===- TileLayouts.h - Fragment layouts the compiler generates --*- C++ -*-===//
//
// The layout-assignment pass gives every fragment a "vector row-major" layout:
// the tile's elements in row-major order are dealt to the threads in runs of
// `vector` contiguous elements, so that thread t holds runs t, t + T, t + 2T...
// For (thread t, value v) with V = vector and T = threads:
//
//   linear(t, v) = (v floordiv V) * T * V + t * V + v mod V
//
// and the coordinates are linear delinearized row-major over the shape. A run
// of V elements is contiguous in the innermost dimension, which gives 16-byte
// vector accesses; consecutive threads take consecutive runs (coalescing).
//
//===----------------------------------------------------------------------===//

#ifndef HISA_DIALECT_TILE_IR_TILELAYOUTS_H
#define HISA_DIALECT_TILE_IR_TILELAYOUTS_H

#include "hisa/Dialect/Tile/IR/TileDialect.h"

namespace hisa::tile {

/// A vector row-major layout of a fully static shape over `threads` threads.
struct VectorLayout {
  llvm::SmallVector<int64_t> shape;
  int64_t threads = 0;
  int64_t vector = 1;

  int64_t getNumElements() const;
  /// Values each thread holds (a multiple of `vector`).
  int64_t getValuesPerThread() const;
  /// Whether some (thread, value) pairs fall past the end of the tile.
  bool hasPartialCoverage() const;
  /// linear(t, v) for constant t and v.
  int64_t getLinearIndex(int64_t thread, int64_t value) const;
  /// The layout as an attribute.
  FragmentLayoutAttr toAttr(mlir::MLIRContext *context) const;
  /// Recovers the layout from an attribute this struct produced, or
  /// std::nullopt for any other map.
  static std::optional<VectorLayout> fromAttr(FragmentLayoutAttr attr,
                                              llvm::ArrayRef<int64_t> shape);
};

} // namespace hisa::tile

#endif // HISA_DIALECT_TILE_IR_TILELAYOUTS_H
