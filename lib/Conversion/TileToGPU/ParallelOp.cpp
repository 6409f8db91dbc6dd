//===- ParallelOp.cpp - Lower tile.parallel ------------------------------===//

#include "KernelLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/IRMapping.h"

#include <optional>

using namespace mlir;
using namespace hisa::tile;

/// The element (row-major index) that value `value` of thread `thread`
/// holds in `layout`, or -1 past the end of the tile.
static int64_t elementOf(const VectorLayout &layout, int64_t thread,
                         int64_t value) {
  if (!layout.isGeneral()) {
    int64_t linear = layout.getLinearIndex(thread, value);
    return linear < layout.getNumElements() ? linear : -1;
  }
  MLIRContext *context = layout.generalMap.getContext();
  SmallVector<AffineExpr> constants = {getAffineConstantExpr(thread, context),
                                       getAffineConstantExpr(value, context)};
  int64_t linear = 0;
  for (auto [expr, size] :
       llvm::zip(layout.generalMap.getResults(), layout.shape)) {
    auto coord =
        dyn_cast<AffineConstantExpr>(expr.replaceDimsAndSymbols(constants, {}));
    if (!coord || coord.getValue() < 0 || coord.getValue() >= size)
      return -1;
    linear = linear * size + coord.getValue();
  }
  return linear;
}

/// How many threads hold each element of `layout`, counting only threads
/// with none of `skippedThreadBits` set.
static SmallVector<int64_t> countHolders(const VectorLayout &layout,
                                         int64_t skippedThreadBits) {
  SmallVector<int64_t> holders(layout.getNumElements(), 0);
  for (int64_t t = 0; t < layout.threads; ++t)
    for (int64_t v = 0;
         (t & skippedThreadBits) == 0 && v < layout.getValuesPerThread(); ++v)
      if (int64_t element = elementOf(layout, t, v); element >= 0)
        ++holders[element];
  return holders;
}

/// The thread-index bits over which `attr` replicates its elements (the
/// lanes of a reduced accumulator's row): the threads with those bits clear
/// must own every element exactly once; failure when elements repeat over
/// threads in any other pattern.
static FailureOr<int64_t> getReplicaBits(FragmentLayoutAttr attr,
                                         const VectorLayout &layout) {
  int64_t mask = getReplicatedThreadBits(attr);
  if (!llvm::all_of(countHolders(layout, mask),
                    [](int64_t count) { return count == 1; }))
    return failure();
  return mask;
}

/// The most threads that `layout` gives one element to (1 when every
/// element has one thread).
static int64_t getMaxCopiesPerElement(const VectorLayout &layout) {
  SmallVector<int64_t> holders = countHolders(layout, /*skippedThreadBits=*/0);
  return holders.empty() ? 1 : *llvm::max_element(holders);
}

/// A shared tile or global tensor (seen through views) that `op`'s body
/// both reads (tile.load from this block) and writes (tile.store), if any.
static Value getTileReadAndWritten(ParallelOp op) {
  SmallPtrSet<Value, 4> read;
  op.walk([&](LoadOp load) {
    if (!load.getPeer() &&
        !isa<LocalType, FragmentType>(load.getSource().getType()))
      read.insert(getViewedTile(load.getSource()));
  });
  Value found;
  op.walk([&](StoreOp store) {
    Value tile = getViewedTile(store.getDest());
    if (!found && read.contains(tile))
      found = tile;
  });
  return found;
}

/// The shared tiles `op` writes (stores and atomics), seen through views.
static SmallPtrSet<Value, 4> getWrittenSharedTiles(ParallelOp op) {
  SmallPtrSet<Value, 4> tiles;
  op.walk([&](StoreOp store) {
    if (isa<SharedType>(store.getDest().getType()))
      tiles.insert(getViewedTile(store.getDest()));
  });
  op.walk([&](AtomicOp atomic) {
    if (isa<SharedType>(atomic.getDest().getType()))
      tiles.insert(getViewedTile(atomic.getDest()));
  });
  return tiles;
}

/// c when `index` is a sum of `iv * c`, an induction variable e of
/// `parallel` and constants d >= 0 (arith.addi in any association, operands
/// either way round), with c a constant and d + extent(e) <= c: iteration
/// iv then writes within [iv * c, (iv + 1) * c). (A store of the second half
/// of an iteration's slots, `iv * c + c / 2 + e`, qualifies.)
static std::optional<int64_t> getIterationStride(Value index, Value iv,
                                                 ParallelOp parallel) {
  std::optional<SmallVector<int64_t>> extents =
      parallel.getDomain().getStaticSizes();
  if (!extents)
    return std::nullopt;
  SmallVector<Value> terms;
  SmallVector<Value> worklist = {index};
  while (!worklist.empty()) {
    Value term = worklist.pop_back_val();
    if (auto add = term.getDefiningOp<arith::AddIOp>()) {
      worklist.push_back(add.getLhs());
      worklist.push_back(add.getRhs());
      continue;
    }
    // (A bounded count keeps a pathological add tree cheap.)
    if (terms.size() == 8)
      return std::nullopt;
    terms.push_back(term);
  }
  std::optional<int64_t> stride;
  std::optional<int64_t> extent;
  int64_t offset = 0;
  for (Value term : terms) {
    if (std::optional<int64_t> constant = getConstantIntValue(term)) {
      if (*constant < 0 || *constant > (int64_t{1} << 40))
        return std::nullopt;
      offset += *constant;
      continue;
    }
    if (auto argument = dyn_cast<BlockArgument>(term)) {
      if (extent || argument.getOwner() != &parallel.getBody().front())
        return std::nullopt;
      extent = (*extents)[argument.getArgNumber()];
      continue;
    }
    auto mul = term.getDefiningOp<arith::MulIOp>();
    if (stride || !mul)
      return std::nullopt;
    if (mul.getLhs() == iv)
      stride = getConstantIntValue(mul.getRhs());
    else if (mul.getRhs() == iv)
      stride = getConstantIntValue(mul.getLhs());
    if (!stride)
      return std::nullopt;
  }
  if (!stride || !extent || *stride <= 0 || offset + *extent > *stride)
    return std::nullopt;
  return stride;
}

/// Whether `op`'s trailing barrier may wait for its loop's end (see
/// markDeferredBarriers).
static bool canDeferTrailingBarrier(ParallelOp op, PipelinedOp loop) {
  Value iv = loop.getBody().front().getArgument(0);
  // Each written tile's stride: every store into it must use the same one,
  // or two stores could reach one element from different iterations.
  llvm::SmallDenseMap<Value, int64_t, 4> strides;
  SmallPtrSet<Operation *, 4> stores;
  WalkResult walk = op.walk([&](Operation *inner) {
    if (auto atomic = dyn_cast<AtomicOp>(inner))
      return isa<SharedType>(atomic.getDest().getType())
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    auto store = dyn_cast<StoreOp>(inner);
    if (!store)
      return WalkResult::advance();
    // (Global writes keep the barrier that orders them, as before.)
    if (!isa<SharedType>(store.getDest().getType()))
      return WalkResult::interrupt();
    // (Through a view the first index would not be the tile's.)
    if (!store.getDest().getDefiningOp<AllocOp>() || store.getIndices().empty())
      return WalkResult::interrupt();
    std::optional<int64_t> stride =
        getIterationStride(store.getIndices().front(), iv, op);
    if (!stride)
      return WalkResult::interrupt();
    auto [it, inserted] = strides.try_emplace(store.getDest(), *stride);
    if (!inserted && it->second != *stride)
      return WalkResult::interrupt();
    stores.insert(store);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted() || strides.empty())
    return false;
  WalkResult touched = loop.getBody().walk([&](Operation *inner) {
    if (isa<AllocOp, ViewOp>(inner))
      return WalkResult::advance();
    for (Value operand : inner->getOperands()) {
      if (!isa<SharedType>(operand.getType()) ||
          (stores.contains(inner) && operand == cast<StoreOp>(inner).getDest()))
        continue;
      for (auto &entry : strides)
        if (mayShareBytes(operand, entry.first))
          return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return !touched.wasInterrupted();
}

static constexpr llvm::StringLiteral kDeferredBarrierAttrName =
    "tile.deferred_barrier";

bool hisa::tile::markDeferredBarriers(PipelinedOp loop) {
  bool any = false;
  for (Operation &inner : loop.getBody().front()) {
    auto parallel = dyn_cast<ParallelOp>(inner);
    if (!parallel || !canDeferTrailingBarrier(parallel, loop))
      continue;
    parallel->setAttr(kDeferredBarrierAttrName,
                      UnitAttr::get(loop.getContext()));
    any = true;
  }
  return any;
}

bool hisa::tile::defersTrailingBarrier(ParallelOp op) {
  return op->hasAttr(kDeferredBarrierAttrName);
}

/// The bytes [first, end) of the dynamic shared memory that `tile` (seen
/// through views) was planned at, all stages included; nullopt when it is
/// not a planned tile.alloc.
static std::optional<std::pair<int64_t, int64_t>> getPlannedBytes(Value tile) {
  auto alloc = getViewedTile(tile).getDefiningOp<AllocOp>();
  auto shared = alloc ? dyn_cast<SharedType>(alloc.getType()) : SharedType();
  auto offset =
      alloc ? alloc->getAttrOfType<IntegerAttr>("tile.offset") : IntegerAttr();
  if (!shared || !offset || !shared.getTileShape().getStaticSizes())
    return std::nullopt;
  int64_t bytes = getTileBytes(shared);
  if (auto stages = alloc->getAttrOfType<IntegerAttr>("tile.stages"))
    if (auto stride = alloc->getAttrOfType<IntegerAttr>("tile.stage_bytes"))
      bytes = stages.getInt() * stride.getInt();
  return std::make_pair(offset.getInt(), offset.getInt() + bytes);
}

bool hisa::tile::mayShareBytes(Value a, Value b) {
  a = getViewedTile(a);
  b = getViewedTile(b);
  if (a == b)
    return true;
  // A tile.pick is any of its candidates.
  if (auto pick = a.getDefiningOp<PickOp>())
    return llvm::any_of(pick.getTiles(),
                        [&](Value tile) { return mayShareBytes(tile, b); });
  if (auto pick = b.getDefiningOp<PickOp>())
    return llvm::any_of(pick.getTiles(),
                        [&](Value tile) { return mayShareBytes(a, tile); });
  std::optional<std::pair<int64_t, int64_t>> first = getPlannedBytes(a);
  std::optional<std::pair<int64_t, int64_t>> second = getPlannedBytes(b);
  if (!first || !second)
    return true;
  return first->first < second->second && second->first < first->second;
}

bool hisa::tile::mayOverwriteWhatOthersRead(
    Operation *op, const SmallPtrSetImpl<Value> &written) {
  auto readsWritten = [&](Operation *root) {
    bool reads = false;
    root->walk([&](Operation *inner) {
      if (isa<StoreOp, AtomicOp, AllocOp, ViewOp>(inner))
        return;
      for (Value operand : inner->getOperands()) {
        if (!isa<SharedType>(operand.getType()))
          continue;
        reads |= llvm::any_of(
            written, [&](Value tile) { return mayShareBytes(operand, tile); });
      }
    });
    return reads;
  };
  return mayRaceWithEarlierReads(op, readsWritten);
}

bool hisa::tile::mayRaceWithEarlierReads(
    Operation *op, llvm::function_ref<bool(Operation *)> readsWritten) {
  // Ops whose lowering ends with a block barrier after all their reads:
  // a parallel that writes shared memory (unless markDeferredBarriers left
  // its barrier to its loop's end), a scan, and copies, fills and
  // casts into a shared tile (MemoryOps.cpp, ScanOps.cpp). (A copy joined
  // to the next one has no trailing barrier of its own, but only
  // side-effect-free ops lie between them, so a backward scan meets the
  // last copy of the chain first, which has it.)
  auto endsWithBarrier = [](Operation *candidate) {
    if (isa<gpu::BarrierOp, ScanOp>(candidate))
      return true;
    if (auto parallel = dyn_cast<ParallelOp>(candidate))
      return !getWrittenSharedTiles(parallel).empty() &&
             !defersTrailingBarrier(parallel);
    // (Not a pipelined loop's own copies: staged, they end with none; nor
    // a hand-over to another warpgroup.)
    if (auto copy = dyn_cast<CopyOp>(candidate))
      return isa<SharedType>(copy.getDest().getType()) &&
             !isa<PipelinedOp>(copy->getParentOp()) &&
             !copy->hasAttr(kHandOverAttr);
    if (auto cast = dyn_cast<CastOp>(candidate))
      return isa<SharedType>(cast.getDest().getType());
    if (auto fill = dyn_cast<FillOp>(candidate))
      return isa<SharedType>(fill.getDest().getType());
    if (auto clear = dyn_cast<ClearOp>(candidate))
      return isa<SharedType>(clear.getDest().getType());
    return false;
  };
  /// Scans backwards from `last` to just after `stopBefore` (or the block's
  /// start): true on a read, false on a barrier, nullopt on neither.
  auto scanBack = [&](Operation *last,
                      Operation *stopBefore) -> std::optional<bool> {
    for (Operation *previous = last; previous && previous != stopBefore;
         previous = previous->getPrevNode()) {
      if (endsWithBarrier(previous))
        return false;
      if (readsWritten(previous))
        return true;
    }
    return std::nullopt;
  };
  bool barriered = endsWithBarrier(op);
  auto readsInBranches = [&](Operation *at) {
    WalkResult walk = at->walk<WalkOrder::PreOrder>([&](Operation *inner) {
      if (inner == at || inner->isProperAncestor(op))
        return WalkResult::advance();
      if (barriered && inner->getBlock() == op->getBlock() &&
          !op->isBeforeInBlock(inner))
        return WalkResult::skip();
      return readsWritten(inner) ? WalkResult::interrupt() : WalkResult::skip();
    });
    return walk.wasInterrupted();
  };
  for (Operation *at = op; at && !isa<LaunchOp, gpu::GPUFuncOp>(at);
       at = at->getParentOp()) {
    if (std::optional<bool> found = scanBack(at->getPrevNode(), nullptr))
      return *found;
    // Around an enclosing loop: in its first iteration what precedes the
    // loop ran last (the walk goes on up); in later ones the previous
    // iteration's ops after `at`, which a barrier there orders only for
    // those iterations.
    Operation *parent = at->getParentOp();
    if (!parent || !isa<scf::ForOp, scf::WhileOp, PipelinedOp>(parent))
      continue;
    std::optional<bool> found;
    if (auto loop = dyn_cast<scf::WhileOp>(parent)) {
      Block &condition = loop.getBefore().front();
      Block &body = loop.getAfter().front();
      if (at->getBlock() == &body) {
        // This iteration's condition ran just before the body, every time.
        if (std::optional<bool> ran = scanBack(&condition.back(), nullptr))
          return *ran;
        found = scanBack(&body.back(), at);
      } else {
        // In the condition: the previous iteration's whole body, then its
        // condition after `at`.
        found = scanBack(&body.back(), nullptr);
        if (!found)
          found = scanBack(&condition.back(), at);
      }
    } else {
      found = scanBack(&at->getBlock()->back(), at);
    }
    if (found) {
      if (*found)
        return true;
      continue;
    }
    // Nothing in between: `op` itself ran last in the previous iteration
    // (a reduction reads its scratch after its last barrier).
    if (at == op && !endsWithBarrier(op) && readsWritten(op))
      return true;
    // With `op` nested in `at` (a branch), whatever `at` ran then: the
    // ops after `op`, other branches. (Barriers in there count for
    // nothing: their branch may not have run.) Only `op` and the ops
    // before it in its block are behind `op`'s own trailing barrier.
    if (at != op && readsInBranches(at))
      return true;
  }
  return false;
}

bool hisa::tile::isScannedCompletely(Operation *op) {
  bool inBranch = false;
  for (Operation *parent = op->getParentOp();
       parent && !isa<gpu::GPUFuncOp, LaunchOp>(parent);
       parent = parent->getParentOp()) {
    if (isa<scf::WhileOp>(parent))
      return false;
    if (isa<scf::ForOp, PipelinedOp>(parent)) {
      if (inBranch)
        return false;
      continue;
    }
    inBranch = true;
  }
  return true;
}

bool hisa::tile::mayBeReadAsynchronously(Operation *op, Value tile) {
  Operation *kernel = op->getParentOfType<gpu::GPUFuncOp>();
  if (!kernel)
    kernel = op->getParentOfType<LaunchOp>();
  if (!kernel)
    return true;
  WalkResult walk = kernel->walk([&](GemmOp gemm) {
    if (!gemm.getAsync())
      return WalkResult::advance();
    for (Value operand : SmallVector<Value, 2>{gemm.getA(), gemm.getB()})
      if (isa<SharedType>(operand.getType()) && mayShareBytes(operand, tile))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return walk.wasInterrupted();
}

/// Every thread runs the body once per value its layout gives it, with the
/// induction variables set to that value's coordinates. The loop is fully
/// unrolled so that fragment registers are addressed by constants. Where
/// the layout gives an element to several threads (a reduced accumulator),
/// a body with atomics runs in one of them only: the body runs once per
/// element, as the op says.
LogicalResult KernelLowering::lowerParallel(ParallelOp op, OpBuilder &b) {
  if (!op.getLayout())
    return op.emitOpError("has no layout; run tile-assign-layouts first");
  std::optional<VectorLayout> layout =
      VectorLayout::fromAttr(*op.getLayout(), *op.getDomain().getStaticSizes());
  bool hasAtomics = false, hasWarpCollectives = false;
  op.walk([&](Operation *inner) {
    hasAtomics |= isa<AtomicOp>(inner);
    hasWarpCollectives |=
        isa<VoteOp, WarpScanOp, WarpBroadcastOp, WarpMatchOp>(inner);
  });
  // Without atomics every thread holding an element runs its body: copies
  // of a read-modify-write of memory race (one may read what another
  // already wrote), so refuse them rather than compute a wrong answer.
  if (!hasAtomics)
    if (Value tile = getTileReadAndWritten(op))
      if (int64_t copies = getMaxCopiesPerElement(*layout); copies > 1) {
        InFlightDiagnostic diag =
            op.emitOpError()
            << "reads and writes the same "
            << (isa<GlobalType>(tile.getType()) ? "global tensor"
                                                : "shared tile")
            << ", but its layout gives an element to " << copies
            << " threads, which all run the body: one copy may read what "
               "another already wrote; write the result to another tile, or "
               "make the domain as large as the threads";
        diag.attachNote(tile.getLoc()) << "the tile read and written";
        return diag;
      }
  Value owner;
  if (hasAtomics) {
    FailureOr<int64_t> replicaBits = getReplicaBits(*op.getLayout(), *layout);
    if (failed(replicaBits))
      return op.emitOpError("has atomics, but its layout gives some elements "
                            "to several threads in a pattern that does not "
                            "pick one owner per element");
    if (*replicaBits && hasWarpCollectives)
      return op.emitOpError("has atomics and warp collectives over a layout "
                            "that gives each element to several threads: the "
                            "atomics must run once per element and the "
                            "collectives in every lane");
    if (*replicaBits) {
      Location loc = op.getLoc();
      Value replica =
          arith::AndIOp::create(b, loc, threadId, index(b, *replicaBits));
      owner = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, replica,
                                    index(b, 0));
    }
  }
  // (Keyed by the parallel op, whose address a later op may reuse.)
  partnerValues.clear();
  SmallPtrSet<Value, 4> written = getWrittenSharedTiles(op);
  bool writesShared = !written.empty();
  // Threads that run ahead must not overwrite what slower ones still read
  // (e.g. a partner's element read in the previous parallel).
  if (writesShared && mayOverwriteWhatOthersRead(op, written))
    barrier(b);

  Block &body = op.getBody().front();
  SmallVector<Value> runStart;
  for (int64_t v = 0; v < layout->getValuesPerThread(); ++v) {
    // Values of one run share all coordinates but the innermost, which
    // steps by one: computing them from the run's start lets CSE (and LLVM)
    // see that, e.g., a per-row load is the same for the whole run.
    if (v % layout->vector == 0)
      runStart = coordinates(b, *layout, v);
    SmallVector<Value> coords = runStart;
    if (int64_t step = v % layout->vector)
      coords.back() = arith::AddIOp::create(b, op.getLoc(), runStart.back(),
                                            index(b, step));
    Value inside = isInside(b, *layout, v);
    if (owner)
      inside =
          inside ? arith::AndIOp::create(b, op.getLoc(), inside, owner) : owner;
    LogicalResult result = success();
    emitIf(b, inside, [&](OpBuilder &nested) {
      IRMapping mapping;
      mapping.map(body.getArguments(), coords);
      ElementContext context{op, v, coords};
      // Clone the whole body before lowering: lowering replaces the uses of
      // the clones' results, which later clones must already hold.
      SmallVector<Operation *> clones;
      for (Operation &inner : body.without_terminator())
        clones.push_back(nested.clone(inner, mapping));
      for (Operation *clone : clones)
        if (failed(lowerNested(clone, &context)))
          result = failure();
    });
    if (failed(result))
      return failure();
  }
  // (A parallel whose writes no other iteration touches leaves its barrier
  // to the end of its loop: lowerPipelined's caller.)
  if (writesShared && !defersTrailingBarrier(op))
    barrier(b);
  return success();
}
