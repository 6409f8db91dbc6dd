//===- ReportBankConflicts.cpp - Shared-memory bank conflicts -------------===//
//
// Counts the shared-memory wavefronts of the warp instructions that a
// whole-tile copy between a fragment and a shared tile lowers to (from the
// fragment's layout and the shared tile's swizzle), and those of element
// loads and stores of shared tiles in tile.parallel bodies (from the
// parallel's layout and the indices' arithmetic), and reports the accesses
// whose instructions conflict on banks (sparse_attn_wg's unswizzled output
// staging cost 8 wavefronts per store and 3-8% of prefill: fifty-fourth and
// fifty-fifth sessions).
//
//===----------------------------------------------------------------------===//

#include "hisa/Dialect/Tile/IR/TileLayouts.h"
#include "hisa/Dialect/Tile/IR/TileOps.h"
#include "hisa/Dialect/Tile/Transforms/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

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

/// The value of index expression `value` at one iteration of `parallel`
/// (its induction variables `ivs`), folded from constants and the integer
/// arithmetic in its body (a loop's induction variable at its first
/// iteration: a loop whose bounds and step every lane shares keeps the
/// lanes' pattern on every iteration); nullopt for anything else (a value
/// loaded, or from outside the parallel and not a constant).
std::optional<int64_t> evaluateIndex(Value value, ParallelOp parallel,
                                     ArrayRef<int64_t> ivs) {
  Block &body = parallel.getBody().front();
  std::function<Attribute(Value)> known = [&](Value given) -> Attribute {
    auto argument = dyn_cast<BlockArgument>(given);
    if (!argument)
      return {};
    if (argument.getOwner() == &body && argument.getArgNumber() < ivs.size())
      return IntegerAttr::get(IndexType::get(given.getContext()),
                              ivs[argument.getArgNumber()]);
    auto loop = dyn_cast<scf::ForOp>(argument.getOwner()->getParentOp());
    if (loop && argument == loop.getInductionVar() &&
        parallel->isProperAncestor(loop))
      return evaluateByFolding(loop.getLowerBound(), parallel, known,
                               /*maxDepth=*/32);
    return {};
  };
  auto folded = dyn_cast_or_null<IntegerAttr>(
      evaluateByFolding(value, parallel, known, /*maxDepth=*/32));
  if (!folded)
    return std::nullopt;
  return folded.getValue().getSExtValue();
}

/// The wavefronts of every warp instruction an access issues over a
/// layout's threads and values, against the fewest their bytes need.
struct WavefrontTotals {
  int64_t instructions = 0;
  int64_t wavefronts = 0;
  int64_t ideal = 0;
};

/// Counts one warp instruction per `valueStep` values of `layout` and per
/// warp, each lane moving `bytes` from the byte offset `offsetOf(thread,
/// value)` gives (nullopt: the lane has nothing there). A bank takes as
/// many wavefronts as distinct 4-byte words land in it; lanes on one word
/// share it (a broadcast). Failure when `offsetOf` fails for any lane.
FailureOr<WavefrontTotals> countWavefronts(
    FragmentLayoutAttr layout, int64_t valueStep, int64_t bytes,
    function_ref<FailureOr<std::optional<int64_t>>(int64_t, int64_t)>
        offsetOf) {
  WavefrontTotals totals;
  int64_t warps = llvm::divideCeil(layout.getThreads(), kWarpSize);
  for (int64_t value = 0; value < layout.getValues(); value += valueStep) {
    for (int64_t warp = 0; warp < warps; ++warp) {
      DenseMap<int64_t, DenseSet<int64_t>> wordsOfBank;
      DenseSet<int64_t> words;
      for (int64_t lane = 0; lane < kWarpSize; ++lane) {
        int64_t thread = warp * kWarpSize + lane;
        if (thread >= layout.getThreads())
          break;
        FailureOr<std::optional<int64_t>> first = offsetOf(thread, value);
        if (failed(first))
          return failure();
        if (!*first)
          continue;
        for (int64_t word = **first / 4; word <= (**first + bytes - 1) / 4;
             ++word) {
          wordsOfBank[word % kBanks].insert(word);
          words.insert(word);
        }
      }
      if (words.empty())
        continue;
      int64_t most = 0;
      for (auto &entry : wordsOfBank)
        most = std::max<int64_t>(most, entry.second.size());
      ++totals.instructions;
      totals.wavefronts += most;
      totals.ideal +=
          llvm::divideCeil(static_cast<int64_t>(words.size()), kBanks);
    }
  }
  return totals;
}

/// The shared tile's swizzle in bytes (0: plain), or failure for a
/// swizzled tile that is not 2-d (not modelled).
FailureOr<int64_t> getModelledSwizzle(AllocOp alloc, size_t rank) {
  int64_t swizzle = 0;
  if (auto attr = alloc->getAttrOfType<IntegerAttr>("tile.swizzle"))
    swizzle = attr.getInt();
  if (swizzle && rank != 2)
    return failure();
  return swizzle;
}

/// "N.N wavefronts per warp instruction, M.M without bank conflicts".
std::string describe(const WavefrontTotals &totals) {
  return llvm::formatv("{0:F1} wavefronts per warp instruction, {1:F1} "
                       "without bank conflicts",
                       double(totals.wavefronts) / totals.instructions,
                       double(totals.ideal) / totals.instructions)
      .str();
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
    getOperation().walk([&](ParallelOp parallel) {
      if (!parallel.getLayout())
        return;
      std::optional<SmallVector<int64_t>> domain =
          parallel.getDomain().getStaticSizes();
      if (!domain)
        return;
      parallel.getBody().walk([&](Operation *op) {
        if (auto load = dyn_cast<LoadOp>(op); load && !load.getPeer())
          reportElementAccess(parallel, *domain, op, load.getSource(),
                              load.getIndices(), /*stores=*/false);
        else if (auto store = dyn_cast<StoreOp>(op))
          reportElementAccess(parallel, *domain, op, store.getDest(),
                              store.getIndices(), /*stores=*/true);
      });
    });
  }

  /// An element load or store of a shared tile in a parallel's body: one
  /// warp instruction per value of the parallel's layout, its lanes at the
  /// elements their iterations' indices name. Only accesses whose indices
  /// follow from the induction variables and constants are counted.
  void reportElementAccess(ParallelOp parallel, ArrayRef<int64_t> domain,
                           Operation *access, Value tile, ValueRange indices,
                           bool stores) {
    auto sharedType = dyn_cast<SharedType>(tile.getType());
    AllocOp alloc = getRootAlloc(tile);
    if (!sharedType || !alloc || !sharedType.getElementType().isIntOrFloat())
      return;
    std::optional<SmallVector<int64_t>> shape =
        sharedType.getTileShape().getStaticSizes();
    if (!shape || shape->size() != indices.size() || shape->empty())
      return;
    int64_t elementBytes = std::max<int64_t>(
        1, sharedType.getElementType().getIntOrFloatBitWidth() / 8);
    FailureOr<int64_t> swizzle = getModelledSwizzle(alloc, shape->size());
    if (failed(swizzle))
      return;
    auto offsetOf = [&](int64_t thread,
                        int64_t value) -> FailureOr<std::optional<int64_t>> {
      SmallVector<int64_t> ivs =
          getFragmentCoordinates(*parallel.getLayout(), thread, value);
      if (ivs.size() != domain.size())
        return failure();
      for (auto [iv, extent] : llvm::zip(ivs, domain))
        if (iv < 0 || iv >= extent)
          return std::optional<int64_t>(); // past the domain's end
      SmallVector<int64_t> coords;
      for (Value index : indices) {
        std::optional<int64_t> coord = evaluateIndex(index, parallel, ivs);
        if (!coord)
          return failure(); // not modelled: no report for this access
        coords.push_back(*coord);
      }
      for (auto [coord, size] : llvm::zip(coords, *shape))
        if (coord < 0 || coord >= size)
          return std::optional<int64_t>();
      return std::optional<int64_t>(
          getSharedByteOffset(coords, *shape, elementBytes, *swizzle));
    };
    FailureOr<WavefrontTotals> totals = countWavefronts(
        *parallel.getLayout(), /*valueStep=*/1, elementBytes, offsetOf);
    if (failed(totals) || !totals->instructions ||
        totals->wavefronts <= totals->ideal)
      return;
    access->emitRemark() << "element "
                         << (stores ? "stores into " : "loads from ")
                         << sharedType
                         << " in a parallel: " << describe(*totals) << " ("
                         << totals->instructions << " warp instructions)";
  }

  void report(CopyOp copy, FragmentType fragment, SharedType sharedType,
              ArrayRef<int64_t> shape, AllocOp alloc, bool stores) {
    FragmentLayoutAttr layout = fragment.getLayout();
    int64_t elementBytes = std::max<int64_t>(
        1, sharedType.getElementType().getIntOrFloatBitWidth() / 8);
    FailureOr<int64_t> swizzle = getModelledSwizzle(alloc, shape.size());
    if (failed(swizzle))
      return;
    // The lowering's piece per access: the fragment's runs, of at most 16
    // bytes (a swizzled tile's limit, and the widest shared-memory access a
    // lane makes: wider vectors are split into such instructions).
    int64_t vector = VectorLayout::fromAttr(layout, shape).vector;
    while (vector > 1 && vector * elementBytes > 16)
      vector /= 2;
    auto offsetOf = [&](int64_t thread,
                        int64_t value) -> FailureOr<std::optional<int64_t>> {
      SmallVector<int64_t> coords =
          getFragmentCoordinates(layout, thread, value);
      if (coords.size() != shape.size() || coords[0] >= shape[0])
        return std::optional<int64_t>(); // past the tile's end: not moved
      return std::optional<int64_t>(
          getSharedByteOffset(coords, shape, elementBytes, *swizzle));
    };
    FailureOr<WavefrontTotals> totals =
        countWavefronts(layout, vector, vector * elementBytes, offsetOf);
    if (failed(totals) || !totals->instructions ||
        totals->wavefronts <= totals->ideal)
      return;
    int64_t warps = std::max<int64_t>(1, layout.getThreads() / kWarpSize);
    copy.emitRemark() << "fragment "
                      << (stores ? "stores into " : "loads from ") << sharedType
                      << ": " << describe(*totals) << " ("
                      << totals->instructions / warps
                      << " instructions per warp)";
  }
};

} // namespace
