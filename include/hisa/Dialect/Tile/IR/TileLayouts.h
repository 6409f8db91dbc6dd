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

#include <optional>

namespace hisa::tile {

/// A vector row-major layout of a fully static shape over `threads` threads,
/// or (when `generalMap` is set) any other layout given by its map, e.g. the
/// wgmma accumulator layout: then `vector` is 1 and `generalValues` values.
struct VectorLayout {
  llvm::SmallVector<int64_t> shape;
  int64_t threads = 0;
  int64_t vector = 1;
  mlir::AffineMap generalMap;
  int64_t generalValues = 0;

  bool isGeneral() const { return static_cast<bool>(generalMap); }

  int64_t getNumElements() const;
  /// Values each thread holds (a multiple of `vector`).
  int64_t getValuesPerThread() const;
  /// Whether some (thread, value) pairs fall past the end of the tile.
  bool hasPartialCoverage() const;
  /// linear(t, v) for constant t and v.
  int64_t getLinearIndex(int64_t thread, int64_t value) const;
  /// The layout as an attribute.
  FragmentLayoutAttr toAttr(mlir::MLIRContext *context) const;
  /// Recovers the layout from an attribute: a vector row-major layout when
  /// the map is one, else a general layout.
  static VectorLayout fromAttr(FragmentLayoutAttr attr,
                               llvm::ArrayRef<int64_t> shape);
};

/// The coordinates `layout` gives value `value` of thread `thread` (its map
/// folded at those constants); empty if the map does not fold.
llvm::SmallVector<int64_t> getFragmentCoordinates(FragmentLayoutAttr layout,
                                                  int64_t thread,
                                                  int64_t value);

/// How one tile.gemm is split over the warpgroups of a block: each
/// warpgroup computes a [rowsPerGroup, colsPerGroup] piece of C, the pieces
/// laid side by side along M (splitN false) or along N (splitN true).
struct WgmmaPartition {
  int64_t warpgroups = 1;
  bool splitN = false;
  int64_t rowsPerGroup = 0;
  int64_t colsPerGroup = 0;
};

/// The partition of an [m, n] accumulator over `threads` threads under
/// `policy` (full_row: split M; full_col: split N; square: M when it divides
/// into 64-row blocks, else N), or failure with `reason` set.
mlir::FailureOr<WgmmaPartition> getWgmmaPartition(int64_t m, int64_t n,
                                                  int64_t threads,
                                                  GemmWarpPolicy policy,
                                                  std::string &reason);

/// The accumulator layout of `wgmma.mma_async` m64nN for an [m, n] tile
/// split as `partition`. Within a warpgroup's piece (m64 blocks one after the
/// other), for thread t (warp w = t / 32 % 4, lane l = t % 32) and register
/// i of a block:
///   row = 16 w + l / 4 + 8 ((i / 2) % 2),  col = 8 (i / 4) + 2 (l % 4) + i % 2
/// and warpgroup g = t / 128 adds g * rowsPerGroup to the row (split M) or
/// g * colsPerGroup to the column (split N).
FragmentLayoutAttr getWgmmaAccumulatorLayout(mlir::MLIRContext *context,
                                             int64_t m, int64_t n,
                                             const WgmmaPartition &partition);

/// The layout wgmma reads an A operand from registers in, for an [m, k] tile
/// of `elementBytes`-byte elements (2: bf16/f16, k16 steps; 1: fp8, k32
/// steps) split as `partition` (split N: every warpgroup holds all of A).
/// Within a warpgroup's m64 block and k step, warp w, lane l (g = l / 4,
/// q = l % 4) holds 32-bit register j (4 per step) of 4 / elementBytes
/// elements e:  row = 16 w + g + 8 (j % 2),
///              col = (4 / elementBytes) q + (16 / elementBytes) (j / 2) + e.
FragmentLayoutAttr getWgmmaOperandALayout(mlir::MLIRContext *context, int64_t m,
                                          int64_t k, int64_t elementBytes,
                                          const WgmmaPartition &partition);

/// Whether `chip` runs tile.gemm on wgmma (sm_90a) rather than mma.sync.
bool hasWgmma(llvm::StringRef chip);

/// The SM version of `chip` ("sm_90a" -> 90), if it names one.
std::optional<int64_t> getSmVersion(llvm::StringRef chip);

/// How one tile.gemm is split over the warps of a block for mma.sync
/// (m16n8k16): a warpsM x warpsN grid of warps, each computing a
/// [rowsPerWarp, colsPerWarp] piece of C.
struct MmaSyncPartition {
  int64_t warpsM = 1, warpsN = 1;
  int64_t rowsPerWarp = 0, colsPerWarp = 0;
};

/// The mma.sync partition of an [m, n] accumulator over `threads` threads
/// under `policy` (full_row: warps along M; full_col: along N; square: M
/// when it divides into 16-row pieces, else N), or failure with `reason`.
mlir::FailureOr<MmaSyncPartition> getMmaSyncPartition(int64_t m, int64_t n,
                                                      int64_t threads,
                                                      GemmWarpPolicy policy,
                                                      std::string &reason);

/// The accumulator layout of mma.sync m16n8k16 (f32): warp w = t / 32 at
/// (w / warpsN, w % warpsN) of the warp grid, lane l = t % 32; register v
/// is element r = v % 4 of the (mi, ni) = (v / 4 / tilesN, v / 4 % tilesN)
/// 16x8 tile of the warp's piece:
///   row = 16 mi + l / 4 + 8 (r / 2),  col = 8 ni + 2 (l % 4) + r % 2.
FragmentLayoutAttr getMmaSyncAccumulatorLayout(mlir::MLIRContext *context,
                                               const MmaSyncPartition &p);

/// The layout in which a reduction along `dim` of a fragment laid out as
/// `source` (over `shape`) leaves its results without moving them: the
/// source map with the reduced value bits removed and `dim` dropped, each
/// result replicated over the lanes that were combined. Null when the
/// reduction crosses warps or the layout is not a bit permutation of
/// power-of-two sizes (the results then go through shared memory).
FragmentLayoutAttr getReducedLayout(FragmentLayoutAttr source,
                                    llvm::ArrayRef<int64_t> shape, int64_t dim);

/// Whether a reduction along `dim` of a fragment laid out as `source` (over
/// `shape`) into one laid out as `dest` needs no shared memory: `dest` is
/// getReducedLayout's layout (the results stay with the threads that held
/// the row) and no thread bit from 5 up (a warp) moves coordinate `dim`.
/// The shared-memory plan reserves reduction scratch and the lowering takes
/// its shuffle-only path by this one rule.
bool isWarpLocalReduction(FragmentLayoutAttr source,
                          llvm::ArrayRef<int64_t> shape, int64_t dim,
                          FragmentLayoutAttr dest);

/// The value bits of `source` that move coordinate `dim` (what a reduction
/// along `dim` combines in a thread), or none when getReducedLayout has no
/// layout for it.
std::optional<llvm::SmallVector<int64_t>>
getReducedValueBits(FragmentLayoutAttr source, llvm::ArrayRef<int64_t> shape,
                    int64_t dim);

/// A read inside a tile.parallel over `shape` (laid out as `layout`, with
/// induction variables `inductionVars`) of a fragment of shape `sliceShape`
/// laid out as `sliceLayout` at `sliceIndices`: when that fragment is a
/// reduction of the parallel's fragments along a dimension d (its layout
/// the reduced one) read at the induction variables without d, every
/// thread holds the element it reads (row statistics read across a row).
/// Returns d, or none.
std::optional<int64_t> getRowSliceDim(FragmentLayoutAttr layout,
                                      llvm::ArrayRef<int64_t> shape,
                                      mlir::ValueRange inductionVars,
                                      FragmentLayoutAttr sliceLayout,
                                      llvm::ArrayRef<int64_t> sliceShape,
                                      mlir::ValueRange sliceIndices);

/// A read inside a tile.parallel of its own fragment at its induction
/// variables `inductionVars`, except that coordinate d is `iv_d xor mask`
/// (`arith.xori` with a positive constant): the element's partner, e.g. the
/// other half of a RoPE pair. Returns (d, mask), or none for other indices.
std::optional<std::pair<int64_t, int64_t>>
matchPartnerIndices(mlir::ValueRange indices, mlir::ValueRange inductionVars);

/// For the partner reads of matchPartnerIndices in a tile.parallel over
/// `shape` laid out as `layout`: for each value, the value of the same
/// thread that holds its partner (coordinate `dim` xor `mask`). None when a
/// partner lies in another thread or outside the shape.
std::optional<llvm::SmallVector<int64_t>>
getPartnerValues(FragmentLayoutAttr layout, llvm::ArrayRef<int64_t> shape,
                 int64_t dim, int64_t mask);

/// The value of the reduced fragment that holds source value `value`'s
/// coordinates (with `dim` dropped): `value` with `reducedValueBits` removed.
int64_t getReducedValueIndex(llvm::ArrayRef<int64_t> reducedValueBits,
                             int64_t value);

/// Whether two layouts give every (thread, value) the same coordinates: the
/// same layout written as different maps (e.g. wgmma's accumulator layout
/// of an [m, k] tile and its A-operand layout, which line up for 16-bit
/// elements: a bf16 cast of an attention score tile is the next gemm's A).
bool areEquivalentLayouts(FragmentLayoutAttr a, FragmentLayoutAttr b);

/// The thread-id bits that a fragment layout replicates over: flipping any
/// of them gives the same coordinates for every value (e.g. the lanes a
/// reduction combined). One thread of each replica group suffices to store
/// the fragment. Zero when the layout has no replication.
int64_t getReplicatedThreadBits(FragmentLayoutAttr layout);

} // namespace hisa::tile

#endif // HISA_DIALECT_TILE_IR_TILELAYOUTS_H
