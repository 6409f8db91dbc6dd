//===- AssignLayouts.cpp - Give every fragment a thread layout ------------===//

#include "hisa/Dialect/Tile/IR/TileLayouts.h"
#include "hisa/Dialect/Tile/IR/TileLimits.h"
#include "hisa/Dialect/Tile/IR/TileOps.h"
#include "hisa/Dialect/Tile/Transforms/Passes.h"

#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/MathExtras.h"

namespace hisa::tile {
#define GEN_PASS_DEF_TILEASSIGNLAYOUTS
#include "hisa/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace hisa::tile

using namespace mlir;
using namespace hisa::tile;

namespace {

using Shape = SmallVector<int64_t>;

/// The tile a tile.load reads or a tile.store writes, with the indices;
/// nullopt for other ops.
std::optional<std::pair<Value, OperandRange>> getElementAccess(Operation *op) {
  if (auto load = dyn_cast<LoadOp>(op))
    return std::make_pair(load.getSource(), load.getIndices());
  if (auto store = dyn_cast<StoreOp>(op))
    return std::make_pair(store.getDest(), store.getIndices());
  return std::nullopt;
}

/// The swizzle wgmma and TMA read a 2-d shared tile of this shape in: rows
/// (the contiguous dimension) of one 32- or 64-byte atom, or panels of 128
/// bytes; 0 for other row sizes.
int64_t getSwizzleBytes(SharedType shared) {
  std::optional<SmallVector<int64_t>> shape =
      shared.getTileShape().getStaticSizes();
  if (!shape || shape->size() != 2)
    return 0;
  int64_t rowBytes =
      (*shape)[1] * shared.getElementType().getIntOrFloatBitWidth() / 8;
  if (rowBytes == 32 || rowBytes == 64)
    return rowBytes;
  return rowBytes % 128 == 0 ? 128 : 0;
}

struct TileAssignLayoutsPass
    : public hisa::tile::impl::TileAssignLayoutsBase<TileAssignLayoutsPass> {
  using Base::Base;

  void runOnOperation() override {
    for (KernelOp kernel : getOperation().getOps<KernelOp>()) {
      LaunchOp launch = kernel.getLaunch();
      if (launch && failed(assignLaunch(launch)))
        return signalPassFailure();
    }
  }

  LogicalResult assignLaunch(LaunchOp launch) {
    int64_t launchThreads = launch.getThreads();
    // Shapes are grouped: fragments of one shape, parallel domains of that
    // shape, and both sides of a view share a layout. Values spread over a
    // warpgroup (inside tile.per_warpgroup) form groups of their own: the
    // same shape is laid out over 128 threads there.
    SmallVector<Shape> shapes;
    SmallVector<int64_t> scopes; // threads of each shape's group
    llvm::EquivalenceClasses<unsigned> classes;
    auto shapeId = [&](ArrayRef<int64_t> shape, int64_t scope) -> unsigned {
      for (auto [i, known] : llvm::enumerate(shapes))
        if (ArrayRef<int64_t>(known) == shape && scopes[i] == scope)
          return i;
      shapes.push_back(Shape(shape));
      scopes.push_back(scope);
      classes.insert(shapes.size() - 1);
      return shapes.size() - 1;
    };
    // (tile.rejoin's body runs on the producer warpgroup's threads too.)
    int64_t rejoinThreads = getMostThreads(launch);
    auto opScope = [&](Operation *op) {
      if (isInPerWarpgroup(op))
        return kWarpgroupThreads;
      return op->getParentOfType<RejoinOp>() ? rejoinThreads : launchThreads;
    };
    DenseMap<Value, int64_t> fragmentScopes;
    auto valueScope = [&](Value value) {
      auto it = fragmentScopes.find(value);
      return it != fragmentScopes.end() ? it->second : launchThreads;
    };
    llvm::MapVector<unsigned, int64_t> elementBytes; // shape -> min bytes

    // Layout classes: fragments whose elements must sit in the same
    // threads, and the parallels that touch them. A parallel is linked to
    // every fragment it accesses at exactly its induction variables, and a
    // register-to-register copy or cast links its two sides (both move
    // values register by register). A class that a gemm, a view or a
    // reduction constrains takes that layout; the others take their shape's
    // (below). So two fragments of one shape may hold different layouts (a
    // register A operand beside an accumulator of its shape, row and column
    // statistics of a square accumulator) as long as nothing links them.
    llvm::EquivalenceClasses<void *> linked;
    auto link = [&](void *a, void *b) { linked.unionSets(a, b); };
    auto keyOf = [](Value value) { return value.getAsOpaquePointer(); };
    auto isFragment = [](Value value) {
      return isa<FragmentType>(value.getType());
    };

    SmallVector<Value> fragments;
    SmallVector<ParallelOp> parallels;
    WalkResult walk = launch.walk([&](Operation *op) -> WalkResult {
      // (The verifiers give both sides one shape and no window.)
      if (auto copy = dyn_cast<CopyOp>(op);
          copy && isFragment(copy.getSource()) && isFragment(copy.getDest()) &&
          copy.getSourceOffsets().empty() && copy.getDestOffsets().empty())
        link(keyOf(copy.getSource()), keyOf(copy.getDest()));
      if (auto cast = dyn_cast<CastOp>(op);
          cast && isFragment(cast.getSource()) && isFragment(cast.getDest()))
        link(keyOf(cast.getSource()), keyOf(cast.getDest()));
      for (Value result : op->getResults()) {
        auto fragment = dyn_cast<FragmentType>(result.getType());
        if (!fragment)
          continue;
        std::optional<SmallVector<int64_t>> sizes =
            fragment.getTileShape().getStaticSizes();
        if (!sizes)
          return op->emitOpError("fragment shape ")
                 << formatDims(fragment.getDims())
                 << " is not bound; run tile-bind-params first";
        std::optional<int64_t> scope =
            getFragmentScopeThreads(result, launchThreads);
        if (!scope)
          return op->emitOpError("fragment ")
                 << formatDims(fragment.getDims())
                 << " is used both inside and outside tile.per_warpgroup "
                    "(inside, each warpgroup has its own copy)";
        fragmentScopes[result] = *scope;
        linked.insert(keyOf(result));
        unsigned id = shapeId(*sizes, *scope);
        int64_t bytes = std::max<int64_t>(
            1, fragment.getElementType().getIntOrFloatBitWidth() / 8);
        auto [it, inserted] = elementBytes.insert({id, bytes});
        if (!inserted)
          it->second = std::min(it->second, bytes);
        fragments.push_back(result);
        if (auto view = dyn_cast<ViewOp>(op)) {
          auto sourceSizes = cast<FragmentType>(view.getSource().getType())
                                 .getTileShape()
                                 .getStaticSizes();
          if (valueScope(view.getSource()) != *scope)
            return view.emitOpError("views a fragment of another scope (one "
                                    "side is inside tile.per_warpgroup, the "
                                    "other outside)");
          if (sourceSizes)
            classes.unionSets(id, shapeId(*sourceSizes, *scope));
        }
      }
      if (auto parallel = dyn_cast<ParallelOp>(op)) {
        std::optional<SmallVector<int64_t>> sizes =
            parallel.getDomain().getStaticSizes();
        if (!sizes)
          return parallel.emitOpError("domain ")
                 << formatDims(parallel.getExtents())
                 << " is not bound; run tile-bind-params first";
        shapeId(*sizes, opScope(parallel));
        parallels.push_back(parallel);
        linked.insert(parallel.getOperation());
        ValueRange ivs = parallel.getInductionVars();
        parallel.getBody().walk([&](Operation *inner) {
          std::optional<std::pair<Value, OperandRange>> access =
              getElementAccess(inner);
          if (!access)
            return;
          auto [fragment, indices] = *access;
          if (isFragment(fragment) && llvm::equal(indices, ivs) &&
              cast<FragmentType>(fragment.getType()).getDims() ==
                  parallel.getExtents())
            link(parallel.getOperation(), keyOf(fragment));
        });
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();

    // One vector length per group.
    DenseMap<unsigned, int64_t> vectorOfLeader;
    for (auto it = classes.begin(); it != classes.end(); ++it) {
      if (!(*it)->isLeader())
        continue;
      int64_t minBytes = 0, gcd = 0, minElements = INT64_MAX;
      for (auto member = classes.member_begin(**it);
           member != classes.member_end(); ++member) {
        const Shape &shape = shapes[*member];
        gcd = std::gcd(gcd, shape.back());
        int64_t elements = 1;
        for (int64_t size : shape)
          elements *= size;
        minElements = std::min(minElements, elements);
        auto bytes = elementBytes.find(*member);
        if (bytes != elementBytes.end())
          minBytes =
              minBytes ? std::min(minBytes, bytes->second) : bytes->second;
      }
      // Domains with no fragment access memory element by element: one
      // element per thread per step makes each warp-wide access contiguous.
      int64_t vector = minBytes ? vectorBytes / minBytes : 1;
      vector = std::min(vector, gcd);
      int64_t threads = scopes[(*it)->getData()];
      vector = std::min(vector, std::max<int64_t>(1, minElements / threads));
      vector =
          std::max<int64_t>(1, llvm::bit_floor(static_cast<uint64_t>(vector)));
      while (gcd % vector != 0)
        vector /= 2;
      vectorOfLeader[(*it)->getData()] = vector;
    }
    // Layouts fixed by gemms, views and reductions: per class, and per
    // shape (the first one seen) for the classes nothing constrains.
    llvm::DenseMap<void *, FragmentLayoutAttr> classLayouts;
    llvm::DenseMap<unsigned, FragmentLayoutAttr> accumulators; // per shape
    auto classLayout = [&](void *key) {
      return classLayouts.lookup(linked.getLeaderValue(key));
    };
    // Records `layout` for `key`'s class (and its shape when the shape has
    // none); false when the class already holds a different one.
    auto constrain = [&](void *key, unsigned shape, FragmentLayoutAttr layout) {
      FragmentLayoutAttr &known = classLayouts[linked.getLeaderValue(key)];
      if (known && !areEquivalentLayouts(known, layout))
        return false;
      if (!known)
        known = layout;
      accumulators.try_emplace(shape, layout);
      return true;
    };

    // tile.gemm fixes the layout of its accumulator (the wgmma one, split
    // over the warpgroups by its policy) and needs its shared operands in
    // the swizzled layout wgmma reads: one swizzle atom per K-major row.
    WalkResult gemms = launch.walk([&](GemmOp gemm) -> WalkResult {
      auto cType = cast<FragmentType>(gemm.getC().getType());
      std::optional<SmallVector<int64_t>> cShape =
          cType.getTileShape().getStaticSizes();
      if (!cShape)
        return gemm.emitOpError("accumulator shape is not bound");
      int64_t m = (*cShape)[0], n = (*cShape)[1];
      // Inside tile.per_warpgroup a gemm is one warpgroup's.
      int64_t threads = opScope(gemm);
      FragmentLayoutAttr layout = getGemmAccumulatorLayout(gemm, m, n, threads);
      if (!layout)
        return failure();
      unsigned id = shapeId(*cShape, threads);
      if (!constrain(keyOf(gemm.getC()), id, layout))
        return gemm.emitOpError("splits its accumulator over the warpgroups "
                                "differently from another gemm into the same "
                                "tile (or one a tile.parallel, copy or cast "
                                "links to it); give both the same policy");
      // A in registers (wgmma only) takes wgmma's A-operand layout.
      if (auto aFragment = dyn_cast<FragmentType>(gemm.getA().getType())) {
        std::string reason;
        FailureOr<WgmmaPartition> partition =
            hasWgmma(chip)
                ? getWgmmaPartition(m, n, threads, gemm.getPolicy(), reason)
                : FailureOr<WgmmaPartition>(failure());
        if (failed(partition))
          return gemm.emitOpError("with A in registers needs wgmma (sm_90a); "
                                  "target ")
                 << chip << " reads A from shared memory";
        std::optional<SmallVector<int64_t>> aSizes =
            aFragment.getTileShape().getStaticSizes();
        if (!aSizes)
          return gemm.emitOpError("A fragment shape is not bound");
        SmallVector<int64_t> aShape = *aSizes;
        int64_t bytes = aFragment.getElementType().getIntOrFloatBitWidth() / 8;
        if (aShape[1] % (32 / bytes) != 0)
          return gemm.emitOpError("with A in registers needs K a multiple of ")
                 << 32 / bytes << " (one wgmma k step), got " << aShape[1];
        FragmentLayoutAttr aLayout = getWgmmaOperandALayout(
            launch.getContext(), aShape[0], aShape[1], bytes, *partition);
        unsigned aId = shapeId(aShape, threads);
        // A linked accumulator may already hold the same layout under
        // another map (16-bit A: the score tile cast register by register
        // into the next gemm's A); it stays.
        if (!constrain(keyOf(gemm.getA()), aId, aLayout))
          return gemm.emitOpError("A fragment ")
                 << formatDims(aFragment.getDims())
                 << " needs wgmma's A-operand layout, but a tile.parallel, "
                    "copy or cast links it to a fragment with another layout "
                    "(an 8-bit A cannot be cast from an accumulator register "
                    "by register); fill A on its own";
      }
      for (Value operand : {Value(gemm.getA()), Value(gemm.getB())}) {
        if (isa<FragmentType>(operand.getType()))
          continue;
        auto shared = dyn_cast<SharedType>(operand.getType());
        // A tile.pick operand: every candidate gets the layout.
        SmallVector<AllocOp> allocs = getPossibleAllocs(operand);
        if (!shared || allocs.empty())
          return gemm.emitOpError("operands must be shared tiles allocated "
                                  "by tile.alloc (or picked among them)");
        std::optional<SmallVector<int64_t>> shape =
            shared.getTileShape().getStaticSizes();
        if (!shape)
          return gemm.emitOpError("operand shape is not bound");
        // Rows (the contiguous dimension: K of a K-major operand, M or N of
        // a transposed one) of one 32/64/128-byte swizzle atom, or several
        // 128-byte panels (see sharedIndices in the lowering).
        int64_t rowBytes =
            (*shape)[1] * shared.getElementType().getIntOrFloatBitWidth() / 8;
        int64_t swizzle = getSwizzleBytes(shared);
        if (!swizzle)
          return gemm.emitOpError("needs operand rows (the contiguous "
                                  "dimension) of 32, 64 or a multiple of 128 "
                                  "bytes (fp8: 32, 64, 128, 256...; "
                                  "bf16/f16: 16, 32, 64, 128... elements), "
                                  "got ")
                 << rowBytes << " bytes in " << formatDims(shared.getDims());
        if (rowBytes > 128 && (*shape)[0] % 8 != 0)
          return gemm.emitOpError("operand ")
                 << formatDims(shared.getDims())
                 << " spans several 128-byte swizzle panels and needs a "
                    "multiple of 8 rows";
        for (AllocOp alloc : allocs)
          alloc->setAttr(
              "tile.swizzle",
              IntegerAttr::get(IntegerType::get(launch.getContext(), 64),
                               swizzle));
      }
      return WalkResult::advance();
    });
    if (gemms.wasInterrupted())
      return failure();
    // A staging tile (a fragment copied into it, every use a tile.copy: an
    // epilogue through shared memory) gets the same swizzle as a gemm
    // operand of its shape: the fragment's 4-byte pieces of 8 rows then
    // land in different banks (a plain layout of 512-byte rows puts them in
    // the same 4 banks, 8-way conflicts), and the 16-byte pieces the copy
    // out reads stay whole. Copies address it through the swizzle. A
    // tile.pick among staging tiles (one per warpgroup) counts as its
    // candidates' use; the lowering addresses a pick through its first
    // candidate's swizzle, so a pick's candidates are swizzled together or
    // not at all.
    std::function<bool(Value, bool &)> usedByWholeCopiesOnly =
        [&](Value tile, bool &fromFragment) {
          for (OpOperand &use : tile.getUses()) {
            Operation *user = use.getOwner();
            if (auto pick = dyn_cast<PickOp>(user)) {
              if (use.get() == pick.getIndex() ||
                  !usedByWholeCopiesOnly(pick.getResult(), fromFragment))
                return false;
              continue;
            }
            // Every use a whole-tile copy to or from a fragment or global
            // memory: the paths that address the tile through its swizzle
            // (a window into it, a local tile or another shared tile on the
            // other side would index it as a plain array).
            auto copy = dyn_cast<CopyOp>(user);
            if (!copy || copy.getRowIndices())
              return false;
            bool isSource = copy.getSource() == tile;
            Type other = isSource ? copy.getDest().getType()
                                  : copy.getSource().getType();
            bool windowed = isSource ? !copy.getSourceOffsets().empty()
                                     : !copy.getDestOffsets().empty();
            if (windowed || !isa<FragmentType, GlobalType>(other))
              return false;
            fromFragment |= !isSource && isa<FragmentType>(other);
          }
          return true;
        };
    llvm::SmallSetVector<Operation *, 8> staging;
    launch.walk([&](AllocOp alloc) {
      auto shared = dyn_cast<SharedType>(alloc.getType());
      if (!shared || alloc->hasAttr("tile.swizzle"))
        return;
      std::optional<SmallVector<int64_t>> shape =
          shared.getTileShape().getStaticSizes();
      if (!shape || shape->size() != 2 || (*shape)[0] % 8 != 0)
        return;
      bool fromFragment = false;
      if (usedByWholeCopiesOnly(alloc.getResult(), fromFragment) &&
          fromFragment && getSwizzleBytes(shared) != 0)
        staging.insert(alloc);
    });
    // Drop the candidates of picks that also choose a plain tile.
    for (bool changed = true; changed;) {
      changed = false;
      launch.walk([&](PickOp pick) {
        SmallVector<AllocOp> allocs = getPossibleAllocs(pick.getResult());
        bool mixed = llvm::any_of(allocs, [&](AllocOp alloc) {
          return !staging.contains(alloc) && !alloc->hasAttr("tile.swizzle");
        });
        if (!mixed)
          return;
        for (AllocOp alloc : allocs)
          changed |= staging.remove(alloc);
      });
    }
    for (Operation *alloc : staging)
      alloc->setAttr("tile.swizzle",
                     IntegerAttr::get(IntegerType::get(launch.getContext(), 64),
                                      getSwizzleBytes(cast<SharedType>(
                                          alloc->getResult(0).getType()))));
    // Views and reductions of fixed fragments: a view re-indexes its
    // source's registers (the view's layout is the source's map,
    // re-delinearized for the new shape); a reduction leaves its results
    // where they are (its destination takes the reduced layout unless
    // something fixed it already). Repeated until nothing changes: a view
    // of a reduction's destination may come before the reduction. A source
    // that nothing fixed takes its shape's fixed layout for good (what it
    // would hold anyway), so no later reduction fixes it differently.
    auto sourceLayout = [&](Value source, unsigned shape) {
      if (FragmentLayoutAttr layout = classLayout(keyOf(source)))
        return layout;
      FragmentLayoutAttr fallback = accumulators.lookup(shape);
      if (fallback)
        classLayouts[linked.getLeaderValue(keyOf(source))] = fallback;
      return fallback;
    };
    auto viewLayout = [&](FragmentLayoutAttr source,
                          ArrayRef<int64_t> sourceShape,
                          ArrayRef<int64_t> resultShape) {
      AffineMap map = source.getMap();
      AffineExpr linear = getAffineConstantExpr(0, launch.getContext());
      for (auto [expr, size] : llvm::zip(map.getResults(), sourceShape))
        linear = linear * size + expr;
      int64_t stride = 1;
      for (int64_t size : resultShape)
        stride *= size;
      SmallVector<AffineExpr> coords;
      for (auto [i, size] : llvm::enumerate(resultShape)) {
        stride /= size;
        AffineExpr coord = linear.floorDiv(stride);
        coords.push_back(i == 0 ? coord : coord % size);
      }
      return FragmentLayoutAttr::get(
          launch.getContext(), source.getThreads(), source.getValues(),
          AffineMap::get(2, 0, coords, launch.getContext()));
    };
    for (bool changed = true; changed;) {
      changed = false;
      WalkResult views = launch.walk([&](ViewOp view) -> WalkResult {
        auto sourceType = dyn_cast<FragmentType>(view.getSource().getType());
        auto resultType = dyn_cast<FragmentType>(view.getResult().getType());
        if (!sourceType || !resultType)
          return WalkResult::advance();
        auto sourceShape = sourceType.getTileShape().getStaticSizes();
        auto resultShape = resultType.getTileShape().getStaticSizes();
        if (!sourceShape || !resultShape)
          return WalkResult::advance();
        int64_t scope = valueScope(view.getSource());
        FragmentLayoutAttr source =
            sourceLayout(view.getSource(), shapeId(*sourceShape, scope));
        if (!source)
          return WalkResult::advance();
        FragmentLayoutAttr viewed =
            viewLayout(source, *sourceShape, *resultShape);
        if (FragmentLayoutAttr known = classLayout(keyOf(view.getResult()))) {
          if (areEquivalentLayouts(known, viewed))
            return WalkResult::advance();
          view.emitOpError("result ")
              << formatDims(resultType.getDims())
              << " shares its source's registers, but a tile.parallel, copy "
                 "or cast links it to a fragment with another layout";
          return WalkResult::interrupt();
        }
        unsigned resultId = shapeId(*resultShape, scope);
        constrain(keyOf(view.getResult()), resultId, viewed);
        // Other fragments of the view's shape take it too (as before
        // layouts were kept per class).
        accumulators[resultId] = viewed;
        changed = true;
        return WalkResult::advance();
      });
      if (views.wasInterrupted())
        return failure();
      launch.walk([&](ReduceOp reduce) {
        auto sourceType = cast<FragmentType>(reduce.getSource().getType());
        auto destType = dyn_cast<FragmentType>(reduce.getDest().getType());
        auto sourceShape = sourceType.getTileShape().getStaticSizes();
        if (!destType || !sourceShape)
          return;
        int64_t scope = valueScope(reduce.getSource());
        auto destShape = destType.getTileShape().getStaticSizes();
        if (!destShape || valueScope(reduce.getDest()) != scope ||
            classLayout(keyOf(reduce.getDest())))
          return;
        FragmentLayoutAttr source =
            sourceLayout(reduce.getSource(), shapeId(*sourceShape, scope));
        if (!source)
          return;
        if (FragmentLayoutAttr reduced =
                getReducedLayout(source, *sourceShape, reduce.getDim())) {
          constrain(keyOf(reduce.getDest()), shapeId(*destShape, scope),
                    reduced);
          changed = true;
        }
      });
    }

    auto layoutFor = [&](void *key, ArrayRef<int64_t> shape, int64_t scope) {
      if (FragmentLayoutAttr layout = classLayout(key))
        return layout;
      unsigned id = shapeId(shape, scope);
      if (FragmentLayoutAttr accumulator = accumulators.lookup(id))
        return accumulator;
      VectorLayout layout{Shape(shape), scope,
                          vectorOfLeader.lookup(classes.getLeaderValue(id))};
      return layout.toAttr(launch.getContext());
    };

    for (Value fragment : fragments) {
      auto type = cast<FragmentType>(fragment.getType());
      auto sizes = *type.getTileShape().getStaticSizes();
      fragment.setType(FragmentType::get(
          type.getContext(), type.getDims(), type.getElementType(),
          layoutFor(keyOf(fragment), sizes, valueScope(fragment))));
    }
    for (ParallelOp parallel : parallels)
      parallel.setLayoutAttr(layoutFor(parallel.getOperation(),
                                       *parallel.getDomain().getStaticSizes(),
                                       opScope(parallel)));
    return verifyFragmentAccesses(launch);
  }

  /// The accumulator layout of `gemm` for the target (null after a
  /// diagnostic when the tile cannot be split over the threads).
  FragmentLayoutAttr getGemmAccumulatorLayout(GemmOp gemm, int64_t m, int64_t n,
                                              int64_t threads) {
    std::string reason;
    MLIRContext *context = gemm.getContext();
    if (hasWgmma(chip)) {
      FailureOr<WgmmaPartition> partition =
          getWgmmaPartition(m, n, threads, gemm.getPolicy(), reason);
      if (succeeded(partition))
        return getWgmmaAccumulatorLayout(context, m, n, *partition);
    } else {
      FailureOr<MmaSyncPartition> partition =
          getMmaSyncPartition(m, n, threads, gemm.getPolicy(), reason);
      if (succeeded(partition))
        return getMmaSyncAccumulatorLayout(context, *partition);
    }
    gemm.emitOpError("with policy ")
        << stringifyGemmWarpPolicy(gemm.getPolicy()) << " " << reason;
    return {};
  }

  /// Fragment elements live in the registers of the thread that owns them.
  LogicalResult verifyFragmentAccesses(LaunchOp launch) {
    WalkResult walk = launch.walk([&](Operation *op) -> WalkResult {
      std::optional<std::pair<Value, OperandRange>> access =
          getElementAccess(op);
      if (!access)
        return WalkResult::advance();
      auto [buffer, indices] = *access;
      auto fragment = dyn_cast<FragmentType>(buffer.getType());
      if (!fragment)
        return WalkResult::advance();
      auto parallel = op->getParentOfType<ParallelOp>();
      if (!parallel)
        return op->emitOpError("accesses a fragment outside tile.parallel; "
                               "fragment elements are spread over the "
                               "threads, so copy the fragment to shared "
                               "memory or a local tile first");
      if (parallel.getExtents() == fragment.getDims() &&
          llvm::equal(indices, parallel.getInductionVars()))
        return WalkResult::advance();
      if (std::optional<std::pair<int64_t, int64_t>> partner =
              matchPartnerIndices(indices, parallel.getInductionVars())) {
        auto [dim, mask] = *partner;
        if (!isa<LoadOp>(op))
          return op->emitOpError("writes the partner of its element (index ")
                 << dim << " xor " << mask
                 << "); a tile.parallel writes its own elements only";
        bool written = false;
        parallel.walk([&](StoreOp store) {
          written |= getViewedTile(store.getDest()) == getViewedTile(buffer);
        });
        if (written)
          return op->emitOpError("reads the partner of its element (index ")
                 << dim << " xor " << mask << ") of fragment "
                 << formatDims(fragment.getDims())
                 << ", which the same tile.parallel writes: the partner may "
                    "already hold its new value";
        if (parallel.getLayout() &&
            parallel.getExtents() == fragment.getDims() &&
            areEquivalentLayouts(*parallel.getLayout(), fragment.getLayout()) &&
            getPartnerValues(*parallel.getLayout(),
                             *parallel.getDomain().getStaticSizes(), dim, mask))
          return WalkResult::advance();
        return op->emitOpError("reads the partner of its element (index ")
               << dim << " xor " << mask << ") of fragment "
               << formatDims(fragment.getDims())
               << ", but its layout puts some partners in other threads or "
                  "past the tile (read the pair from shared memory instead)";
      }
      if (isa<LoadOp>(op) && parallel.getLayout() &&
          getRowSliceDim(*parallel.getLayout(),
                         *parallel.getDomain().getStaticSizes(),
                         parallel.getInductionVars(), fragment.getLayout(),
                         *fragment.getTileShape().getStaticSizes(), indices))
        return WalkResult::advance();
      return op->emitOpError("accesses fragment ")
             << formatDims(fragment.getDims())
             << " at indices other than the induction variables of the "
                "enclosing tile.parallel over "
             << formatDims(parallel.getExtents())
             << "; the element may live in another thread (read it from "
                "shared or global memory instead; a reduction of the "
                "parallel's fragment along one dimension may be read at the "
                "other induction variables)";
    });
    return failure(walk.wasInterrupted());
  }
};

} // namespace
