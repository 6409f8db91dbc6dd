//===- TensorMaps.h - TMA copies and the tensor maps they use ---*- C++ -*-===//
//
// A global-to-shared copy staged by a tile.pipelined loop may go through the
// Tensor Memory Accelerator (cp.async.bulk.tensor) instead of cp.async. TMA
// reads through a tensor map (CUtensorMap) that the host builds with
// cuTensorMapEncodeTiled for the tensor's run-time address and sizes, and
// passes as a kernel parameter. tile-use-tma marks such copies with the
// `tile.tma` unit attribute; this header is the one place that says which
// copies qualify and which tensor maps a kernel takes, so that the lowering
// (which appends the parameters) and the JIT (which encodes them) agree.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_DIALECT_TILE_IR_TENSORMAPS_H
#define HISA_DIALECT_TILE_IR_TENSORMAPS_H

#include "hisa/Dialect/Tile/IR/TileOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace hisa::tile {

/// The attribute tile-use-tma puts on copies that go through TMA.
inline constexpr llvm::StringLiteral kTmaAttrName = "tile.tma";
/// Byte offset of a pipelined loop's mbarriers (tile-plan-shared-memory).
inline constexpr llvm::StringLiteral kMbarrierOffsetAttrName =
    "tile.mbarrier_offset";
/// Number of tensor-map parameters at the end of a lowered kernel's
/// signature (convert-tile-to-gpu, read by tile-mark-tensor-map-params).
inline constexpr llvm::StringLiteral kTensorMapCountAttrName =
    "tile.tensor_maps";

/// One tensor map parameter of a kernel.
struct TensorMapSpec {
  /// The kernel argument (a !tile.global) the map describes.
  unsigned argNumber = 0;
  /// Box extents, outermost first, one per tensor dimension (leading window
  /// dimensions have extent 1). A swizzled tile is read as one box per
  /// swizzle panel (its innermost extent is the panel's).
  llvm::SmallVector<int64_t, 4> box;
  /// Swizzle of the destination rows: 0 (none), 32, 64 or 128 bytes.
  int64_t swizzleBytes = 0;
  unsigned elementBytes = 0;

  bool operator==(const TensorMapSpec &other) const {
    return argNumber == other.argNumber && box == other.box &&
           swizzleBytes == other.swizzleBytes &&
           elementBytes == other.elementBytes;
  }
};

/// Why `copy` cannot go through TMA on a chip that has it, or "" if it can:
/// a staged copy (top level of a tile.pipelined loop with num_stages > 1)
/// from a kernel argument into a whole shared tile, with static rows whose
/// bytes are a multiple of 16, box extents of at most 256 and an innermost
/// box of a multiple of 16 bytes (whole swizzle panels for swizzled tiles),
/// from an argument the kernel never writes (TMA reads through the async
/// proxy, which would not see the kernel's own writes).
std::string getTmaIneligibility(CopyOp copy);

/// Whether `chip` (sm_XX[a]) has TMA: sm_90 and newer.
bool hasTma(llvm::StringRef chip);

/// The tensor maps `kernel` takes, in parameter order (after its own
/// arguments): one per distinct (argument, box, swizzle) among its copies
/// marked `tile.tma` (and eligible: a stale mark is ignored here and
/// reported by the lowering), in walk order. `mapOfCopy`, when given,
/// receives the index of the map each such copy uses.
llvm::SmallVector<TensorMapSpec>
getTensorMaps(KernelOp kernel,
              llvm::DenseMap<mlir::Operation *, unsigned> *mapOfCopy = nullptr);

} // namespace hisa::tile

#endif // HISA_DIALECT_TILE_IR_TENSORMAPS_H
