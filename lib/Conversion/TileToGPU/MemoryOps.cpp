//===- MemoryOps.cpp - Lower tile allocations, copies and accesses --------===//

#include "KernelLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace hisa::tile;

namespace {

SmallVector<int64_t> staticShape(Type tileType) {
  return *getTileShapeAndElementType(tileType)->first.getStaticSizes();
}

Type elementTypeOf(Type tileType) {
  return getTileShapeAndElementType(tileType)->second;
}

int64_t shapeRank(Value tile) {
  return getTileShapeAndElementType(tile.getType())->first.getRank();
}

/// Indices into a window of rank R for tile coordinates of rank r <= R:
/// leading window dimensions are squeezed (extent 1).
SmallVector<Value> windowIndices(OpBuilder &b, Location loc, ValueRange offsets,
                                 int64_t windowRank, ArrayRef<Value> coords) {
  int64_t lead = windowRank - coords.size();
  SmallVector<Value> indices;
  for (int64_t i = 0; i < windowRank; ++i) {
    Value offset = offsets.empty() ? Value() : offsets[i];
    if (i < lead) {
      indices.push_back(offset ? offset
                               : arith::ConstantIndexOp::create(b, loc, 0));
      continue;
    }
    Value coord = coords[i - lead];
    indices.push_back(
        offset ? arith::AddIOp::create(b, loc, offset, coord).getResult()
               : coord);
  }
  return indices;
}

/// Whether runs of `vector` elements along the innermost window dimension are
/// whole vectors in memory: the innermost extent of the memref is a static
/// multiple of `vector` and the innermost offset a known multiple of it.
bool isVectorizable(Value memref, ValueRange offsets, int64_t vector) {
  if (vector == 1)
    return true;
  auto type = cast<MemRefType>(memref.getType());
  if (type.isDynamicDim(type.getRank() - 1) ||
      type.getDimSize(type.getRank() - 1) % vector != 0)
    return false;
  return offsets.empty() || isKnownMultipleOf(offsets.back(), vector);
}

} // namespace

LogicalResult KernelLowering::lowerAlloc(AllocOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  Type type = op.getResult().getType();
  Type elementType = elementTypeOf(type);
  SmallVector<int64_t> shape = staticShape(type);
  if (auto fragment = dyn_cast<FragmentType>(type)) {
    FailureOr<VectorLayout> layout = getLayout(op, fragment);
    if (failed(layout))
      return failure();
    SmallVector<Value> values;
    for (int64_t v = 0; v < layout->getValuesPerThread(); ++v)
      values.push_back(
          memref::AllocaOp::create(b, loc, MemRefType::get({}, elementType)));
    registers[op.getResult()] = std::move(values);
    return success();
  }
  if (isa<LocalType>(type)) {
    memrefs[op.getResult()] =
        memref::AllocaOp::create(b, loc, MemRefType::get(shape, elementType));
    return success();
  }
  auto offset = op->getAttrOfType<IntegerAttr>("tile.offset");
  // A tile nothing uses gets no bytes (in a launch with no other shared
  // tile, no shared memory at all): nothing to address.
  if (offset && !sharedBase && op->use_empty())
    return success();
  if (!offset || !sharedBase)
    return op.emitOpError("shared tile has no offset; run "
                          "tile-plan-shared-memory first");
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  // A swizzled tile is addressed through sharedIndices as a flat array.
  SmallVector<int64_t> storageShape = shape;
  if (op->hasAttr("tile.swizzle")) {
    int64_t elements = 1;
    for (int64_t size : shape)
      elements *= size;
    storageShape = {elements};
  }
  memrefs[op.getResult()] = memref::ViewOp::create(
      b, loc,
      MemRefType::get(storageShape, elementType, MemRefLayoutAttrInterface(),
                      workgroup),
      sharedBase, index(b, offset.getInt()), ValueRange());
  sharedOffsets[op.getResult()] = offset.getInt();
  return success();
}

LogicalResult KernelLowering::lowerPick(PickOp op, OpBuilder &b) {
  // The candidates' memrefs (the same type), chosen by the index; an index
  // past the end takes the last.
  Location loc = op.getLoc();
  ValueRange tiles = op.getTiles();
  // Stage buffers are remapped to the iteration's stage inside their loop
  // only: a pick made outside it would always choose stage 0.
  for (Value tile : tiles) {
    auto alloc = tile.getDefiningOp<AllocOp>();
    auto stages = alloc ? alloc->getAttrOfType<IntegerAttr>("tile.stages")
                        : IntegerAttr();
    if (stages && stages.getInt() > 1 && !stagedTiles.contains(tile))
      return op.emitOpError("picks a tile that a pipelined loop fills in ")
             << stages.getInt()
             << " stages, outside that loop; pick inside the loop body";
  }
  Value chosen = memrefs.lookup(tiles.back());
  for (int64_t i = int64_t(tiles.size()) - 2; i >= 0; --i) {
    Value candidate = memrefs.lookup(tiles[i]);
    if (!candidate || !chosen)
      return op.emitOpError("picks a tile that is not lowered yet");
    Value is = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                     op.getIndex(), index(b, i));
    chosen = arith::SelectOp::create(b, loc, is, candidate, chosen);
  }
  memrefs[op.getResult()] = chosen;
  return success();
}

LogicalResult KernelLowering::lowerView(ViewOp op, OpBuilder &b) {
  Type type = op.getResult().getType();
  if (isa<FragmentType>(type)) {
    // Vector row-major layouts of two shapes with the same run length put
    // element k of the row-major order in the same register.
    registers[op.getResult()] = registers.lookup(op.getSource());
    return success();
  }
  if (!isa<SharedType>(type))
    return op.emitOpError("views of local tiles are not supported");
  // A view is addressed from its tile's first buffer: a tile with several
  // pipeline stages would always read stage 0.
  if (auto alloc = op.getSource().getDefiningOp<AllocOp>())
    if (auto stages = alloc->getAttrOfType<IntegerAttr>("tile.stages");
        stages && stages.getInt() > 1)
      return op.emitOpError("views a shared tile that a pipelined loop "
                            "fills in ")
             << stages.getInt()
             << " stages; read the tile itself (views of stage buffers are "
                "not supported)";
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  int64_t offset = sharedOffsets.lookup(op.getSource());
  memrefs[op.getResult()] = memref::ViewOp::create(
      b, op.getLoc(),
      MemRefType::get(staticShape(type), elementTypeOf(type),
                      MemRefLayoutAttrInterface(), workgroup),
      sharedBase, index(b, offset), ValueRange());
  sharedOffsets[op.getResult()] = offset;
  return success();
}

//===----------------------------------------------------------------------===//
// Copy
//===----------------------------------------------------------------------===//

Value KernelLowering::gatheredRow(OpBuilder &b, CopyOp copy, Value first,
                                  Value row) {
  Location loc = copy.getLoc();
  Value rows = copy.getRowIndices();
  int64_t length = staticShape(rows.getType())[0];
  Value position = arith::AddIOp::create(b, loc, first, row);
  Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                       position, index(b, length));
  Value safe = arith::SelectOp::create(b, loc, inside, position, index(b, 0));
  SmallVector<Value> at = isa<SharedType>(rows.getType())
                              ? sharedIndices(b, rows, {safe})
                              : SmallVector<Value>{safe};
  Value number = memref::LoadOp::create(b, loc, memrefs.lookup(rows), at);
  Value none = arith::ConstantIntOp::create(b, loc, b.getI32Type(), -1);
  number = arith::SelectOp::create(b, loc, inside, number, none);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), number);
}

/// A copy of global memory into a whole shared tile outside a pipelined
/// loop: every thread loads and stores its share between a leading and a
/// trailing barrier.
static bool isWholeTileGlobalToShared(Operation *op) {
  auto copy = dyn_cast_or_null<CopyOp>(op);
  return copy && !copy.getRowIndices() && copy.getDestOffsets().empty() &&
         isa<GlobalType>(copy.getSource().getType()) &&
         isa<SharedType>(copy.getDest().getType()) &&
         !isa<PipelinedOp>(copy->getParentOp());
}

/// The copy after `op` that may share its barriers: the next op with side
/// effects in the block, a whole-tile global-to-shared copy into bytes that
/// no copy of the chain so far (`written`: `op`'s destination and those of
/// the copies joined before it) shares. Nothing between them reads or
/// writes memory, so the chain's leading barrier also covers the next
/// copy's destination and the last copy's trailing barrier publishes all.
static CopyOp getCopySharingBarriers(CopyOp op, ArrayRef<Value> written) {
  for (Operation *next = op->getNextNode(); next; next = next->getNextNode()) {
    if (isWholeTileGlobalToShared(next)) {
      auto copy = cast<CopyOp>(next);
      bool overlaps = llvm::any_of(written, [&](Value tile) {
        return mayShareBytes(copy.getDest(), tile);
      });
      return overlaps ? CopyOp() : copy;
    }
    if (!isMemoryEffectFree(next) || next->getNumRegions() != 0)
      return CopyOp();
  }
  return CopyOp();
}

bool hisa::tile::guardsOwnSharedWrites(CopyOp op) {
  if (!isa<FragmentType>(op.getSource().getType()) ||
      !isa<SharedType>(op.getDest().getType()))
    return false;
  // Inside tile.per_warpgroup a barrier is the warpgroup's (the scan would
  // count the other warpgroup's readers as ordered); in a branch inside a
  // loop the scan can only count the branch as a whole, so the barrier
  // stays there.
  if (op->getParentOfType<PerWarpgroupOp>() || !isScannedCompletely(op))
    return false;
  return !mayBeReadAsynchronously(op, op.getDest());
}

/// Whether a tile.gemm reads `alloc`'s tile (directly, or through a
/// tile.pick or tile.view): through the async proxy, so the generic proxy's
/// stores into it need a fence first.
static bool isReadByGemm(AllocOp alloc) {
  SmallVector<Value> tiles = {alloc.getResult()};
  while (!tiles.empty()) {
    for (Operation *user : tiles.pop_back_val().getUsers()) {
      if (isa<GemmOp>(user))
        return true;
      if (isa<PickOp, ViewOp>(user))
        tiles.push_back(user->getResult(0));
    }
  }
  return false;
}

/// Whether a copy into shared memory must first wait for slower threads'
/// reads of its destination. A fragment stored into shared memory (P of
/// attention) waits only where the backward scan finds an earlier reader
/// not yet behind a barrier: in a key loop, the previous tile's P V is
/// behind the row maximum's exchange.
/// (`inWarpgroup`: lowered inside tile.per_warpgroup, whose body then no
/// longer sits under the op.)
static bool needsLeadingBarrier(CopyOp op, bool inWarpgroup) {
  if (inWarpgroup || !guardsOwnSharedWrites(op))
    return true;
  SmallPtrSet<Value, 1> written;
  written.insert(op.getDest());
  return mayOverwriteWhatOthersRead(op, written);
}

LogicalResult KernelLowering::lowerCopy(CopyOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  // A gemm operand is stored as swizzled panels; a view of it (another
  // shape over the same bytes) does not know their geometry and would move
  // the elements in their storage order.
  for (Value side : {op.getSource(), op.getDest()}) {
    Value viewed = getViewedTile(side);
    if (AllocOp alloc = getRootAlloc(viewed);
        viewed != side && alloc && alloc->hasAttr("tile.swizzle"))
      return op.emitOpError("copies through a view of a swizzled (tile.gemm "
                            "operand) tile, whose elements the view would "
                            "take in storage order; copy the whole tile");
  }
  Type sourceType = op.getSource().getType();
  Type destType = op.getDest().getType();
  Type elementType = elementTypeOf(sourceType);
  bool toShared = isa<SharedType>(destType);

  // A gather (verified: global rows into a shared tile), moved
  // cooperatively; rows out of range read zeros.
  if (op.getRowIndices()) {
    Value tile = op.getDest();
    Value source = memrefs.lookup(op.getSource());
    Value tileMemref = memrefs.lookup(tile);
    VectorLayout layout =
        getCooperativeLayout(staticShape(tile.getType()), elementType);
    if (!isVectorizable(source, op.getSourceOffsets(), layout.vector))
      layout.vector = 1;
    barrier(b); // earlier readers of the destination are done
    for (int64_t v = 0; v < layout.getValuesPerThread(); v += layout.vector) {
      SmallVector<Value> coords = coordinates(b, layout, v);
      emitIf(b, isInside(b, layout, v), [&](OpBuilder &nested) {
        Value column = coords[1];
        if (!op.getSourceOffsets().empty())
          column = arith::AddIOp::create(nested, loc, op.getSourceOffsets()[1],
                                         column);
        SmallVector<Value> indices = {
            gatheredRow(nested, op, op.getRowOffset(), coords[0]), column};
        Value value =
            loadElements(nested, source, indices, layout.vector, true);
        storeElements(nested, value, tileMemref,
                      sharedIndices(nested, tile, coords), false, Value());
      });
    }
    barrier(b);
    return success();
  }

  // Register <-> register: fragments of one shape share one layout.
  if (isa<FragmentType>(sourceType) && isa<FragmentType>(destType)) {
    for (auto [from, to] : llvm::zip(registers.lookup(op.getSource()),
                                     registers.lookup(op.getDest())))
      memref::StoreOp::create(b, loc, memref::LoadOp::create(b, loc, from), to);
    return success();
  }
  if (isa<FragmentType>(sourceType) && isa<LocalType>(destType))
    return op.emitOpError("cannot copy a fragment into a local tile (every "
                          "thread would need every element); go through "
                          "shared memory");

  // The side without offsets is the tile whose shape is the window's; with
  // no offsets, the window is the global side, else the shared one.
  bool windowIsSource;
  if (!op.getSourceOffsets().empty() || !op.getDestOffsets().empty())
    windowIsSource = !op.getSourceOffsets().empty();
  else if (isa<GlobalType>(sourceType) || isa<GlobalType>(destType))
    windowIsSource = isa<GlobalType>(sourceType);
  else
    windowIsSource = isa<SharedType>(sourceType);
  Value tile = windowIsSource ? op.getDest() : op.getSource();
  Value window = windowIsSource ? op.getSource() : op.getDest();
  ValueRange offsets =
      windowIsSource ? op.getSourceOffsets() : op.getDestOffsets();
  if (isa<FragmentType>(window.getType()))
    return op.emitOpError("windows into fragments are not supported; copy the "
                          "whole fragment");
  Value windowMemref = memrefs.lookup(window);
  bool windowIsGlobal = isa<GlobalType>(window.getType());
  int64_t windowRank = cast<MemRefType>(windowMemref.getType()).getRank();
  SmallVector<int64_t> tileShape = staticShape(tile.getType());

  // (A copy joined to the previous one continues its chain and barriers.)
  if (!joinedCopies.contains(op)) {
    // (A hand-over to another warpgroup is ordered by the kernel's named
    // barriers: no thread of this warpgroup reads the destination.)
    if (toShared && !op->hasAttr(kHandOverAttr) &&
        needsLeadingBarrier(op, /*inWarpgroup=*/bool(warpgroup)))
      barrier(b); // earlier readers of the destination are done
    copyChain.clear();
  }
  copyChain.push_back(op.getDest());

  if (auto fragment = dyn_cast<FragmentType>(tile.getType())) {
    FailureOr<VectorLayout> layout = getLayout(op, fragment);
    if (failed(layout))
      return failure();
    int64_t vector = isVectorizable(windowMemref, offsets, layout->vector)
                         ? layout->vector
                         : 1;
    // A swizzled shared tile keeps 16-byte pieces whole, no longer runs.
    if (auto alloc = getRootAlloc(window);
        alloc && alloc->hasAttr("tile.swizzle")) {
      int64_t bytes = elementType.getIntOrFloatBitWidth() / 8;
      while (vector > 1 && vector * bytes > 16)
        vector /= 2;
    }
    SmallVector<Value> &regs = registers[tile];
    // A replicated fragment (e.g. a reduction result left in the lanes it
    // combined) is stored by one thread of each replica group.
    Value writer;
    if (!windowIsSource)
      if (int64_t replicated = getReplicatedThreadBits(fragment.getLayout()))
        writer = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq,
            arith::AndIOp::create(b, loc, threadId, index(b, replicated)),
            index(b, 0));
    for (int64_t v = 0; v < layout->getValuesPerThread(); v += vector) {
      SmallVector<Value> coords = coordinates(b, *layout, v);
      Value inside = isInside(b, *layout, v);
      if (writer)
        inside = inside
                     ? arith::AndIOp::create(b, loc, inside, writer).getResult()
                     : writer;
      SmallVector<Value> indices =
          windowIsGlobal
              ? windowIndices(b, loc, offsets, windowRank, coords)
              : sharedIndices(
                    b, window,
                    windowIndices(b, loc, offsets, shapeRank(window), coords));
      if (windowIsSource) {
        // Reads outside the tile's own coverage are harmless: those
        // registers are never stored.
        Value loaded =
            loadElements(b, windowMemref, indices, vector, windowIsGlobal);
        for (int64_t k = 0; k < vector; ++k) {
          Value element =
              vector == 1
                  ? loaded
                  : vector::ExtractOp::create(b, loc, loaded, k).getResult();
          memref::StoreOp::create(b, loc, element, regs[v + k]);
        }
        continue;
      }
      Value value;
      if (vector == 1) {
        value = memref::LoadOp::create(b, loc, regs[v]);
      } else {
        SmallVector<Value> elements;
        for (int64_t k = 0; k < vector; ++k)
          elements.push_back(memref::LoadOp::create(b, loc, regs[v + k]));
        value = vector::FromElementsOp::create(
            b, loc, VectorType::get({vector}, elementType), elements);
      }
      storeElements(b, value, windowMemref, indices, windowIsGlobal, inside);
    }
    if (toShared) {
      // A wgmma operand (P of attention) is read through the async proxy,
      // also by threads that a named barrier hands it to: the writers fence
      // their generic-proxy stores.
      // (A swizzled staging tile of an epilogue is not read by wgmma.)
      if (hasWgmma(chip) &&
          llvm::any_of(getPossibleAllocs(window), isReadByGemm))
        fenceSharedForAsyncProxy(b);
      if (!op->hasAttr(kHandOverAttr))
        barrier(b);
    }
    return success();
  }

  Value tileMemref = memrefs.lookup(tile);
  if (isa<LocalType>(tile.getType())) {
    // Every thread holds the whole local tile; global writes come from
    // thread 0 only.
    VectorLayout all{tileShape, 1, 1};
    Value writer =
        (!windowIsSource && windowIsGlobal) ? isThreadZero(b) : Value();
    for (int64_t e = 0; e < all.getNumElements(); ++e) {
      SmallVector<Value> coords = staticCoordinates(b, loc, tileShape, e);
      SmallVector<Value> indices =
          windowIndices(b, loc, offsets, windowRank, coords);
      if (windowIsSource) {
        Value value = loadElements(b, windowMemref, indices, 1, windowIsGlobal);
        memref::StoreOp::create(b, loc, value, tileMemref, coords);
      } else {
        Value value = memref::LoadOp::create(b, loc, tileMemref, coords);
        storeElements(b, value, windowMemref, indices, windowIsGlobal, writer);
      }
    }
    if (toShared)
      barrier(b);
    return success();
  }

  // A whole shared tile moved cooperatively by every thread.
  VectorLayout layout = getCooperativeLayout(tileShape, elementType);
  int64_t vector =
      isVectorizable(windowMemref, offsets, layout.vector) ? layout.vector : 1;
  if (vector != layout.vector)
    layout.vector = vector;
  if (windowIsSource && windowIsGlobal) {
    // Loads first, then the stores: a thread's loads are in flight at once
    // (one round trip) rather than each waiting behind the previous piece's
    // store in its own branch (a 640-index row: 3 pieces a thread, the last
    // only in some threads). A piece past the tile's coverage loads from
    // inside the tensor (bounds-checked) and is not stored. At most
    // kPiecesInFlight pieces at a time (64 registers of 16-byte pieces:
    // a large tile copied by few threads would otherwise spill).
    constexpr int64_t kPiecesInFlight = 16;
    int64_t values = layout.getValuesPerThread();
    for (int64_t first = 0; first < values; first += kPiecesInFlight * vector) {
      int64_t end = std::min(values, first + kPiecesInFlight * vector);
      SmallVector<std::pair<SmallVector<Value>, Value>> loaded;
      for (int64_t v = first; v < end; v += vector) {
        SmallVector<Value> coords = coordinates(b, layout, v);
        Value value = loadElements(
            b, windowMemref, windowIndices(b, loc, offsets, windowRank, coords),
            vector, /*checkBounds=*/true);
        loaded.push_back({std::move(coords), value});
      }
      for (auto [piece, entry] : llvm::enumerate(loaded)) {
        const SmallVector<Value> &coords = entry.first;
        Value value = entry.second;
        emitIf(b, isInside(b, layout, first + int64_t(piece) * vector),
               [&](OpBuilder &nested) {
                 storeElements(nested, value, tileMemref,
                               sharedIndices(nested, tile, coords), false,
                               Value());
               });
      }
    }
  } else {
    for (int64_t v = 0; v < layout.getValuesPerThread(); v += vector) {
      SmallVector<Value> coords = coordinates(b, layout, v);
      Value inside = isInside(b, layout, v);
      SmallVector<Value> indices =
          windowIndices(b, loc, offsets, windowRank, coords);
      emitIf(b, inside, [&](OpBuilder &nested) {
        if (windowIsSource) {
          Value value = loadElements(nested, windowMemref, indices, vector,
                                     windowIsGlobal);
          storeElements(nested, value, tileMemref,
                        sharedIndices(nested, tile, coords), false, Value());
        } else {
          Value value =
              loadElements(nested, tileMemref,
                           sharedIndices(nested, tile, coords), vector, false);
          storeElements(nested, value, windowMemref, indices, windowIsGlobal,
                        Value());
        }
      });
    }
  }
  if (!toShared)
    return success();
  if (CopyOp next = isWholeTileGlobalToShared(op)
                        ? getCopySharingBarriers(op, copyChain)
                        : CopyOp())
    joinedCopies.insert(next.getOperation());
  else
    barrier(b);
  return success();
}

//===----------------------------------------------------------------------===//
// Fill, cast
//===----------------------------------------------------------------------===//

LogicalResult KernelLowering::lowerFill(Operation *op, Value dest, Value value,
                                        OpBuilder &b) {
  Location loc = op->getLoc();
  Type type = dest.getType();
  if (isa<FragmentType>(type)) {
    for (Value reg : registers.lookup(dest))
      memref::StoreOp::create(b, loc, value, reg);
    return success();
  }
  SmallVector<int64_t> shape = staticShape(type);
  Value memref = memrefs.lookup(dest);
  if (isa<LocalType>(type)) {
    VectorLayout all{shape, 1, 1};
    for (int64_t e = 0; e < all.getNumElements(); ++e)
      memref::StoreOp::create(b, loc, value, memref,
                              staticCoordinates(b, loc, shape, e));
    return success();
  }
  barrier(b);
  VectorLayout layout = getCooperativeLayout(shape, value.getType());
  Value splat =
      layout.vector == 1
          ? value
          : vector::BroadcastOp::create(
                b, loc, VectorType::get({layout.vector}, value.getType()),
                value)
                .getResult();
  for (int64_t v = 0; v < layout.getValuesPerThread(); v += layout.vector)
    storeElements(b, splat, memref,
                  sharedIndices(b, dest, coordinates(b, layout, v)), false,
                  isInside(b, layout, v));
  barrier(b);
  return success();
}

LogicalResult KernelLowering::lowerCast(CastOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  Type sourceType = op.getSource().getType(), destType = op.getDest().getType();
  Type to = elementTypeOf(destType);
  if (!isa<FragmentType>(sourceType))
    return op.emitOpError("casts from ") << getTileMemoryKindName(sourceType)
                                         << " tiles are not supported yet; "
                                            "cast a fragment";
  SmallVector<Value> &from = registers[op.getSource()];
  if (auto fragment = dyn_cast<FragmentType>(destType)) {
    SmallVector<Value> &into = registers[op.getDest()];
    for (size_t v = 0; v + 1 < from.size(); v += 2) {
      auto [first, second] =
          convertPair(b, memref::LoadOp::create(b, loc, from[v]),
                      memref::LoadOp::create(b, loc, from[v + 1]), to);
      memref::StoreOp::create(b, loc, first, into[v]);
      memref::StoreOp::create(b, loc, second, into[v + 1]);
    }
    if (from.size() % 2)
      memref::StoreOp::create(
          b, loc,
          convertElement(b, memref::LoadOp::create(b, loc, from.back()), to),
          into.back());
    return success();
  }
  if (!isa<SharedType>(destType))
    return op.emitOpError("casts into local tiles are not supported yet");
  FailureOr<VectorLayout> layout =
      getLayout(op, cast<FragmentType>(sourceType));
  if (failed(layout))
    return failure();
  barrier(b);
  Value memref = memrefs.lookup(op.getDest());
  for (int64_t v = 0; v < layout->getValuesPerThread(); ++v) {
    Value converted =
        convertElement(b, memref::LoadOp::create(b, loc, from[v]), to);
    storeElements(b, converted, memref,
                  sharedIndices(b, op.getDest(), coordinates(b, *layout, v)),
                  false, isInside(b, *layout, v));
  }
  barrier(b);
  return success();
}

//===----------------------------------------------------------------------===//
// Element access
//===----------------------------------------------------------------------===//

/// The value of `fragment` that value `value` of the parallel's own
/// fragments reads: itself, or for a row slice (a reduction of the
/// parallel's fragments along one dimension, which tile-assign-layouts
/// verified is read at the other induction variables) the reduced value
/// holding the same coordinates in the same thread.
static FailureOr<int64_t> getReadValue(ParallelOp parallel,
                                       FragmentType fragment, int64_t value) {
  SmallVector<int64_t> shape = *parallel.getDomain().getStaticSizes();
  SmallVector<int64_t> sliceShape = *fragment.getTileShape().getStaticSizes();
  if (sliceShape == shape)
    return value;
  FragmentLayoutAttr layout = *parallel.getLayout();
  for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim) {
    SmallVector<int64_t> kept(shape);
    kept.erase(kept.begin() + dim);
    if (kept != sliceShape ||
        !areEquivalentLayouts(getReducedLayout(layout, shape, dim),
                              fragment.getLayout()))
      continue;
    std::optional<SmallVector<int64_t>> bits =
        getReducedValueBits(layout, shape, dim);
    if (!bits)
      break;
    return getReducedValueIndex(*bits, value);
  }
  return failure();
}

FailureOr<SmallVector<Value>>
KernelLowering::getElementIndices(Operation *op, OpBuilder &b, Value tile,
                                  ValueRange indices) {
  Value viewed = getViewedTile(tile);
  AllocOp alloc = getRootAlloc(viewed);
  if (!isa<SharedType>(tile.getType()) || !alloc ||
      !alloc->hasAttr("tile.swizzle"))
    return SmallVector<Value>(indices);
  // A gemm operand is stored as swizzled panels (a flat array); only the
  // whole tile knows its panel geometry.
  if (viewed != tile)
    return op->emitOpError("cannot address an element through a view of a "
                           "swizzled (tile.gemm operand) tile");
  return sharedIndices(b, tile, llvm::to_vector(indices));
}

LogicalResult KernelLowering::lowerLoad(LoadOp op, OpBuilder &b,
                                        const ElementContext *context) {
  Location loc = op.getLoc();
  Type type = op.getSource().getType();
  Value result;
  if (auto fragment = dyn_cast<FragmentType>(type)) {
    if (!context)
      return op.emitOpError("fragment element read outside tile.parallel");
    FailureOr<int64_t> value = failure();
    // The element's partner (index d xor mask), which tile-assign-layouts
    // verified this thread holds; else its own value or a row slice's.
    if (std::optional<std::pair<int64_t, int64_t>> partner =
            matchPartnerIndices(op.getIndices(), context->coords)) {
      auto [dim, mask] = *partner;
      ParallelOp parallel = context->parallel;
      auto key = std::make_tuple(parallel.getOperation(), dim, mask);
      auto found = partnerValues.find(key);
      if (found == partnerValues.end()) {
        std::optional<SmallVector<int64_t>> partners =
            getPartnerValues(*parallel.getLayout(),
                             *parallel.getDomain().getStaticSizes(), dim, mask);
        if (!partners)
          return op.emitOpError("reads the partner of its element, which "
                                "another thread holds");
        found = partnerValues.emplace(key, std::move(*partners)).first;
      }
      value = found->second[context->value];
    } else {
      value = getReadValue(context->parallel, fragment, context->value);
    }
    if (failed(value))
      return op.emitOpError("reads a fragment that is neither the enclosing "
                            "tile.parallel's shape nor a reduction of it");
    result = memref::LoadOp::create(b, loc,
                                    registers.lookup(op.getSource())[*value]);
  } else {
    FailureOr<SmallVector<Value>> indices =
        getElementIndices(op, b, op.getSource(), op.getIndices());
    if (failed(indices))
      return failure();
    Value memref = memrefs.lookup(op.getSource());
    if (Value peer = op.getPeer()) {
      FailureOr<Value> loaded = loadPeerElement(op, b, memref, *indices, peer);
      if (failed(loaded))
        return failure();
      result = *loaded;
    } else {
      result = loadElements(b, memref, *indices, 1, isa<GlobalType>(type));
    }
  }
  op.getResult().replaceAllUsesWith(result);
  return success();
}

FailureOr<Value> KernelLowering::loadPeerElement(LoadOp op, OpBuilder &b,
                                                 Value memref,
                                                 ValueRange indices,
                                                 Value peer) {
  Location loc = op.getLoc();
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return op.emitOpError("reads a peer's element of a shared tile whose "
                          "layout is not static");
  // The same tile sits at the same shared address in every block of the
  // cluster: the tile's base mapped to the peer's (one mapa, which LLVM
  // shares between the elements), then the element's offset, so that
  // LLVM can merge a thread's consecutive elements into one vector load
  // (each distributed shared memory request costs about as much as a
  // 16-byte one).
  Value linear = index(b, offset);
  for (auto [coordinate, stride] : llvm::zip(indices, strides))
    linear = arith::AddIOp::create(
        b, loc, linear,
        arith::MulIOp::create(b, loc, coordinate, index(b, stride)));
  Type element = type.getElementType();
  Value remoteBase = NVVM::MapaOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 7),
      getSharedPointer(b, memref),
      arith::IndexCastUIOp::create(b, loc, b.getI32Type(), peer));
  // mapa keeps the address's offset in the block's window: the peer's
  // tile is as aligned as this one (what LLVM needs to merge loads).
  AllocOp alloc = getRootAlloc(op.getSource());
  auto tileOffset =
      alloc ? alloc->getAttrOfType<IntegerAttr>("tile.offset") : IntegerAttr();
  if (tileOffset && tileOffset.getInt() % 16 == 0)
    LLVM::AssumeOp::create(
        b, loc, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1),
        LLVM::AssumeAlignTag(), remoteBase,
        arith::ConstantIntOp::create(b, loc, b.getI64Type(), 16));
  Value remote = LLVM::GEPOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 7), element,
      remoteBase,
      ValueRange{arith::IndexCastOp::create(b, loc, b.getI64Type(), linear)});
  return LLVM::LoadOp::create(b, loc, element, remote).getResult();
}

LogicalResult KernelLowering::lowerStore(StoreOp op, OpBuilder &b,
                                         const ElementContext *context) {
  Location loc = op.getLoc();
  Type type = op.getDest().getType();
  if (isa<FragmentType>(type)) {
    if (!context)
      return op.emitOpError("fragment element written outside tile.parallel");
    memref::StoreOp::create(b, loc, op.getValue(),
                            registers.lookup(op.getDest())[context->value]);
    return success();
  }
  // Serial code runs in every thread; one of them performs the write.
  FailureOr<SmallVector<Value>> indices =
      getElementIndices(op, b, op.getDest(), op.getIndices());
  if (failed(indices))
    return failure();
  Value writer =
      (!context && !isa<LocalType>(type)) ? isThreadZero(b) : Value();
  storeElements(b, op.getValue(), memrefs.lookup(op.getDest()), *indices,
                isa<GlobalType>(type), writer);
  if (!context && isa<SharedType>(type))
    barrier(b);
  return success();
}

/// The memref.atomic_rmw kind of `kind` on `element`.
static arith::AtomicRMWKind getRMWKind(AtomicKind kind, Type element) {
  bool isFloat = isa<FloatType>(element);
  switch (kind) {
  case AtomicKind::Add:
    return isFloat ? arith::AtomicRMWKind::addf : arith::AtomicRMWKind::addi;
  case AtomicKind::Max:
    return isFloat ? arith::AtomicRMWKind::maximumf
                   : arith::AtomicRMWKind::maxs;
  case AtomicKind::Min:
    return isFloat ? arith::AtomicRMWKind::minimumf
                   : arith::AtomicRMWKind::mins;
  case AtomicKind::UMax:
    return arith::AtomicRMWKind::maxu;
  case AtomicKind::UMin:
    return arith::AtomicRMWKind::minu;
  }
  llvm_unreachable("unknown atomic kind");
}

LogicalResult KernelLowering::lowerAtomic(AtomicOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  Value dest = op.getDest();
  // Defensive: atomics take 32/64-bit elements, gemm operands are 8/16-bit
  // (also through a view: the view's memref is the swizzled storage).
  if (auto alloc = getRootAlloc(getViewedTile(dest));
      alloc && alloc->hasAttr("tile.swizzle"))
    return op.emitOpError("cannot update a swizzled (tile.gemm operand) "
                          "shared tile element-wise");
  Value memref = memrefs.lookup(dest);
  Type element = op.getValue().getType();
  arith::AtomicRMWKind kind = getRMWKind(op.getKind(), element);
  auto emitAtomic = [&](OpBuilder &at) -> Value {
    return memref::AtomicRMWOp::create(at, loc, kind, op.getValue(), memref,
                                       op.getIndices())
        .getResult();
  };
  Value old;
  if (isa<GlobalType>(dest.getType())) {
    // Outside the tensor: dropped, returns 0 (as tile.store and tile.load).
    auto guarded = scf::IfOp::create(b, loc, TypeRange{element},
                                     inBounds(b, memref, op.getIndices(), 1),
                                     /*withElseRegion=*/true);
    OpBuilder thenBuilder = guarded.getThenBodyBuilder();
    scf::YieldOp::create(thenBuilder, loc, emitAtomic(thenBuilder));
    OpBuilder elseBuilder = guarded.getElseBodyBuilder();
    scf::YieldOp::create(elseBuilder, loc, zero(elseBuilder, element));
    old = guarded.getResult(0);
  } else {
    old = emitAtomic(b);
  }
  op.getOld().replaceAllUsesWith(old);
  return success();
}

/// One cp.async.bulk.prefetch.L2 of the byte range [start, start + bytes)
/// of the tensor, clipped to it and to 16-byte granules (the tensor's base
/// is 16-byte aligned, so the granules stay inside it).
LogicalResult KernelLowering::lowerPrefetch(PrefetchOp op, OpBuilder &b,
                                            const ElementContext *context) {
  // cp.async.bulk is sm_90's: LLVM would abort selecting it for another chip.
  if (std::optional<int64_t> sm = getSmVersion(chip); !sm || *sm < 90)
    return op.emitOpError("lowers to cp.async.bulk.prefetch.L2, which needs "
                          "sm_90 or newer; the target is ")
           << chip;
  Location loc = op.getLoc();
  Value memref = memrefs.lookup(op.getSource());
  auto type = cast<MemRefType>(memref.getType());
  int64_t bits = type.getElementTypeBitWidth();
  Value linear = index(b, 0), count = index(b, 1);
  for (auto [dim, at] : llvm::enumerate(op.getIndices())) {
    Value size = memref::DimOp::create(b, loc, memref, dim);
    linear = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, linear, size), at);
    count = arith::MulIOp::create(b, loc, count, size);
  }
  auto toBytes = [&](Value elements) -> Value {
    Value scaled = arith::MulIOp::create(b, loc, elements, index(b, bits));
    return arith::DivUIOp::create(b, loc, scaled, index(b, 8));
  };
  Value start = toBytes(linear), total = toBytes(count);
  Value granule = index(b, -16);
  Value first = arith::AndIOp::create(b, loc, start, granule);
  Value end = arith::MinUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, start, op.getBytes()), total);
  end = arith::AndIOp::create(b, loc, end, granule);
  // Serial code runs in every thread; thread 0 issues it.
  Value issue =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, start, total);
  issue = arith::AndIOp::create(
      b, loc, issue,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, end, first));
  if (!context)
    issue = arith::AndIOp::create(b, loc, issue, isThreadZero(b));
  auto guarded = scf::IfOp::create(b, loc, issue, /*withElseRegion=*/false);
  OpBuilder then = guarded.getThenBodyBuilder();
  Value size = arith::MinUIOp::create(
      then, loc, arith::SubIOp::create(then, loc, end, first),
      index(then, int64_t(1) << 31));
  Value base =
      memref::ExtractAlignedPointerAsIndexOp::create(then, loc, memref);
  Value address =
      arith::IndexCastOp::create(then, loc, then.getI64Type(),
                                 arith::AddIOp::create(then, loc, base, first));
  // A generic address (the kernel's arguments), cast to the global space.
  Value pointer = LLVM::AddrSpaceCastOp::create(
      then, loc, LLVM::LLVMPointerType::get(then.getContext(), 1),
      LLVM::IntToPtrOp::create(
          then, loc, LLVM::LLVMPointerType::get(then.getContext()), address));
  NVVM::CpAsyncBulkPrefetchOp::create(
      then, loc, pointer,
      arith::IndexCastOp::create(then, loc, then.getI32Type(), size),
      /*l2CacheHint=*/Value());
  return success();
}
