//===- TensorMaps.cpp - TMA copies and the tensor maps they use -----------===//

#include "hisa/Dialect/Tile/IR/TensorMaps.h"

#include "hisa/Dialect/Tile/IR/TileLayouts.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace hisa::tile;

bool hisa::tile::hasTma(StringRef chip) {
  std::optional<int64_t> sm = getSmVersion(chip);
  return sm && *sm >= 90;
}

/// The kernel argument `value` is, if it is one.
static BlockArgument getKernelArgument(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || !isa_and_nonnull<KernelOp>(arg.getOwner()->getParentOp()))
    return {};
  return arg;
}

std::string hisa::tile::getTmaIneligibility(CopyOp copy) {
  auto loop = dyn_cast<PipelinedOp>(copy->getParentOp());
  if (!loop || loop.getNumStages() < 2)
    return "it is not staged by a tile.pipelined loop with num_stages > 1";
  auto globalType = dyn_cast<GlobalType>(copy.getSource().getType());
  auto sharedType = dyn_cast<SharedType>(copy.getDest().getType());
  if (!globalType || !sharedType || !copy.getDestOffsets().empty())
    return "it does not copy a global window into a whole shared tile";
  if (!getKernelArgument(copy.getSource()))
    return "its source is not a kernel argument (a tensor map describes an "
           "argument)";
  std::optional<SmallVector<int64_t>> shape =
      sharedType.getTileShape().getStaticSizes();
  if (!shape)
    return "the shared tile's shape is not bound";
  int64_t rank = globalType.getRank();
  if (rank > 5 || static_cast<int64_t>(shape->size()) > rank)
    return "TMA boxes have at most 5 dimensions";
  Type elementType = globalType.getElementType();
  unsigned bits =
      elementType.isIntOrFloat() ? elementType.getIntOrFloatBitWidth() : 0;
  if (!llvm::is_contained({8u, 16u, 32u, 64u}, bits))
    return "its elements are not 1, 2, 4 or 8 bytes";
  int64_t elementBytes = bits / 8;
  Operation *alloc = copy.getDest().getDefiningOp<AllocOp>();
  if (!alloc)
    return "its destination is not allocated by tile.alloc";
  int64_t innerBytes = shape->back() * elementBytes;
  auto swizzle = alloc->getAttrOfType<IntegerAttr>("tile.swizzle");
  if (swizzle && (shape->size() != 2 || innerBytes % swizzle.getInt() != 0))
    return "the swizzled tile's rows are not whole swizzle panels";
  // A swizzled tile is one box per panel (the box's rows are the panel's).
  SmallVector<int64_t> box(*shape);
  if (swizzle)
    box.back() = swizzle.getInt() / elementBytes;
  for (int64_t extent : box)
    if (extent > 256)
      return "a box extent is larger than 256";
  if (innerBytes % 16 != 0)
    return "the innermost box is not a multiple of 16 bytes";
  if (rank > 1) {
    // Global strides (bytes) must be multiples of 16: static rows of such a
    // size make every stride one.
    std::optional<int64_t> rowSize =
        globalType.getTileShape().getStaticSize(rank - 1);
    if (!rowSize || (*rowSize * elementBytes) % 16 != 0)
      return "its rows are not of a static size that is a multiple of 16 "
             "bytes";
  }
  // The kernel's own writes to the tensor would need a proxy fence.
  for (Operation *user : copy.getSource().getUsers()) {
    auto other = dyn_cast<CopyOp>(user);
    if (isa<StoreOp>(user) || (other && other.getDest() == copy.getSource()))
      return "the kernel also writes its source (TMA reads through the "
             "async proxy)";
  }
  return "";
}

SmallVector<TensorMapSpec>
hisa::tile::getTensorMaps(KernelOp kernel,
                          DenseMap<Operation *, unsigned> *mapOfCopy) {
  SmallVector<TensorMapSpec> maps;
  kernel.walk([&](CopyOp copy) {
    if (!copy->hasAttr(kTmaAttrName) || !getTmaIneligibility(copy).empty())
      return;
    auto globalType = cast<GlobalType>(copy.getSource().getType());
    auto sharedType = cast<SharedType>(copy.getDest().getType());
    TensorMapSpec spec;
    spec.argNumber = getKernelArgument(copy.getSource()).getArgNumber();
    spec.elementBytes = globalType.getElementType().getIntOrFloatBitWidth() / 8;
    SmallVector<int64_t> shape = *sharedType.getTileShape().getStaticSizes();
    spec.box.assign(globalType.getRank() - shape.size(), 1);
    spec.box.append(shape.begin(), shape.end());
    if (auto alloc = copy.getDest().getDefiningOp<AllocOp>())
      if (auto swizzle = alloc->getAttrOfType<IntegerAttr>("tile.swizzle")) {
        spec.swizzleBytes = swizzle.getInt();
        spec.box.back() = spec.swizzleBytes / spec.elementBytes;
      }
    auto *found = llvm::find(maps, spec);
    if (mapOfCopy)
      (*mapOfCopy)[copy] = found - maps.begin();
    if (found == maps.end())
      maps.push_back(std::move(spec));
  });
  return maps;
}
