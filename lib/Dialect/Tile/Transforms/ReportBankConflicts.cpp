//===- ReportBankConflicts.cpp - Bank conflicts of fragment copies --------===//
//
// Counts the shared-memory wavefronts of the warp instructions that a
// whole-tile copy between a fragment and a shared tile lowers to, from the
// fragment's layout and the shared tile's swizzle, and reports the copies
// whose instructions conflict on banks (sparse_attn_wg's unswizzled output
// staging cost 8 wavefronts per store, fifty-fourth session).
//
//===----------------------------------------------------------------------===//

#include "hisa/Dialect/Tile/IR/TileLayouts.h"
#include "hisa/Dialect/Tile/IR/TileOps.h"
#include "hisa/Dialect/Tile/Transforms/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

namespace hisa::tile {
#define GEN_PASS_DEF_TILEREPORTBANKCONFLICTS
#include "hisa/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace hisa::tile

using namespace mlir;
using namespace hisa::tile;

namespace {

constexpr int64_t kBanks = 32;
constexpr int64_t kWarpSize = 32;

/// Byte offset of element `coords` in a shared tile of `shape`, as the
/// lowering addresses it (sharedIndices): row-major, or for a swizzled 2-d
/// tile panels of `swizzle` bytes with 16-byte pieces XOR-ed by the row.
int64_t getSharedByteOffset(ArrayRef<int64_t> coords, ArrayRef<int64_t> shape,
                            int64_t elementBytes, int64_t swizzle) {
  if (!swizzle) {
    int64_t linear = 0;
    for (auto [coord, size] : llvm::zip(coords, shape))
      linear = linear * size + coord;
    return linear * elementBytes;
  }
  int64_t rows = shape[0], columns = shape[1];
  int64_t offset;
  if (columns * elementBytes <= swizzle) {
    offset = (coords[0] * columns + coords[1]) * elementBytes;
  } else {
    int64_t column = coords[1] * elementBytes;
    offset = column / swizzle * rows * swizzle + coords[0] * swizzle +
             column % swizzle;
  }
  return offset ^ (((offset >> 7) & (swizzle / 16 - 1)) << 4);
}

struct TileReportBankConflictsPass
    : public hisa::tile::impl::TileReportBankConflictsBase<
          TileReportBankConflictsPass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation().walk([&](CopyOp copy) {
      if (copy.getRowIndices() || !copy.getSourceOffsets().empty() ||
          !copy.getDestOffsets().empty())
        return;
      auto fragment = dyn_cast<FragmentType>(copy.getSource().getType());
      Value shared = copy.getDest();
      bool stores = true;
      if (!fragment) {
        fragment = dyn_cast<FragmentType>(copy.getDest().getType());
        shared = copy.getSource();
        stores = false;
      }
      auto sharedType = dyn_cast<SharedType>(shared.getType());
      AllocOp alloc = getRootAlloc(shared);
      if (!fragment || !fragment.getLayout() || !sharedType || !alloc)
        return;
      std::optional<SmallVector<int64_t>> shape =
          sharedType.getTileShape().getStaticSizes();
      if (!shape || shape->empty())
        return;
      report(copy, fragment, sharedType, *shape, alloc, stores);
    });
  }

  void report(CopyOp copy, FragmentType fragment, SharedType sharedType,
              ArrayRef<int64_t> shape, AllocOp alloc, bool stores) {
    FragmentLayoutAttr layout = fragment.getLayout();
    int64_t elementBytes = std::max<int64_t>(
        1, sharedType.getElementType().getIntOrFloatBitWidth() / 8);
    int64_t swizzle = 0;
    if (auto attr = alloc->getAttrOfType<IntegerAttr>("tile.swizzle"))
      swizzle = attr.getInt();
    if (swizzle && shape.size() != 2)
      return;
    // The lowering's piece per access: the fragment's runs, of at most 16
    // bytes (a swizzled tile's limit, and the widest shared-memory access a
    // lane makes: wider vectors are split into such instructions).
    int64_t vector = VectorLayout::fromAttr(layout, shape).vector;
    while (vector > 1 && vector * elementBytes > 16)
      vector /= 2;
    int64_t warps = std::max<int64_t>(1, layout.getThreads() / kWarpSize);
    int64_t instructions = 0, wavefronts = 0, ideal = 0;
    for (int64_t value = 0; value < layout.getValues(); value += vector) {
      for (int64_t warp = 0; warp < warps; ++warp) {
        DenseMap<int64_t, DenseSet<int64_t>> wordsOfBank;
        DenseSet<int64_t> words;
        for (int64_t lane = 0; lane < kWarpSize; ++lane) {
          int64_t thread = warp * kWarpSize + lane;
          if (thread >= layout.getThreads())
            break;
          SmallVector<int64_t> coords =
              getFragmentCoordinates(layout, thread, value);
          if (coords.size() != shape.size() || coords[0] >= shape[0])
            continue; // past the tile's end: not stored
          int64_t first =
              getSharedByteOffset(coords, shape, elementBytes, swizzle);
          int64_t last = first + vector * elementBytes - 1;
          for (int64_t word = first / 4; word <= last / 4; ++word) {
            wordsOfBank[word % kBanks].insert(word);
            words.insert(word);
          }
        }
        if (words.empty())
          continue;
        int64_t most = 0;
        for (auto &entry : wordsOfBank)
          most = std::max<int64_t>(most, entry.second.size());
        ++instructions;
        wavefronts += most;
        ideal += llvm::divideCeil(static_cast<int64_t>(words.size()), kBanks);
      }
    }
    if (!instructions || wavefronts <= ideal)
      return;
    copy.emitRemark() << "fragment "
                      << (stores ? "stores into " : "loads from ") << sharedType
                      << ": "
                      << llvm::formatv("{0:F1}",
                                       double(wavefronts) / instructions)
                      << " wavefronts per warp instruction, "
                      << llvm::formatv("{0:F1}", double(ideal) / instructions)
                      << " without bank conflicts (" << instructions / warps
                      << " instructions per warp)";
  }
};

} // namespace
