//===- ReduceOp.cpp - Lower tile.reduce: registers, shuffles, shared ------===//
//
// With vector row-major layouts of power-of-two shapes, every bit of an
// element's linear index comes from a bit of the value index (registers of
// one thread), of the lane, or of the warp. Reducing a dimension means
// combining over the linear-index bits of that dimension: value bits inside
// the thread, lane bits with xor warp shuffles (a butterfly within a warp,
// a reduce-scatter when the result crosses warps), warp bits through a
// shared scratch area read back by the threads that own each output.
//
//===----------------------------------------------------------------------===//

#include "Combiner.h"
#include "KernelLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace hisa::tile;

namespace {

bool isPowerOfTwo(int64_t value) {
  return value > 0 && llvm::isPowerOf2_64(value);
}

/// A layout in which every bit of the thread index and of the value index
/// sets one bit of the element's row-major linear index: vector row-major
/// layouts and the wgmma accumulator layout are such bit permutations. A
/// thread bit may also set none (kReplicated): the layout of a reduction
/// result repeats each value in the lanes (and warpgroups) that combined it.
struct BitLayout {
  static constexpr int64_t kReplicated = -1;
  SmallVector<int64_t> threadBits; // linear-index bit of each thread bit
  SmallVector<int64_t> valueBits;  // linear-index bit of each value bit

  /// Linear index of (t, v) for constant t and v.
  static int64_t linearIndex(const VectorLayout &layout, int64_t t, int64_t v) {
    if (!layout.isGeneral())
      return layout.getLinearIndex(t, v);
    MLIRContext *context = layout.generalMap.getContext();
    SmallVector<Attribute> operands = {
        IntegerAttr::get(IndexType::get(context), t),
        IntegerAttr::get(IndexType::get(context), v)};
    SmallVector<Attribute> results;
    if (failed(layout.generalMap.constantFold(operands, results)))
      return -1;
    int64_t linear = 0;
    for (auto [coord, size] : llvm::zip(results, layout.shape))
      linear = linear * size + cast<IntegerAttr>(coord).getInt();
    return linear;
  }

  static std::optional<BitLayout> analyze(const VectorLayout &layout) {
    BitLayout bits;
    // (int64_t, not the unsigned of Log2_64: -2 must stay negative.)
    constexpr int64_t kNotABit = -2;
    auto singleBit = [](int64_t value) -> int64_t {
      if (value == 0)
        return kReplicated;
      return value > 0 && llvm::isPowerOf2_64(value)
                 ? static_cast<int64_t>(llvm::Log2_64(value))
                 : kNotABit;
    };
    for (int64_t t = 1; t < layout.threads; t *= 2)
      bits.threadBits.push_back(singleBit(linearIndex(layout, t, 0)));
    for (int64_t v = 1; v < layout.getValuesPerThread(); v *= 2)
      bits.valueBits.push_back(singleBit(linearIndex(layout, 0, v)));
    // Values are never replicated within a thread.
    if (llvm::is_contained(bits.threadBits, kNotABit) ||
        llvm::any_of(bits.valueBits, [](int64_t bit) { return bit < 0; }) ||
        linearIndex(layout, 0, 0) != 0)
      return std::nullopt;
    // Every (t, v) must be the sum of its bits' contributions.
    for (int64_t t = 0; t < layout.threads; ++t)
      for (int64_t v = 0; v < layout.getValuesPerThread(); ++v)
        if (linearIndex(layout, t, v) !=
            linearIndex(layout, t, 0) + linearIndex(layout, 0, v))
          return std::nullopt;
    return bits;
  }
};

} // namespace

LogicalResult KernelLowering::lowerReduce(ReduceOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  auto sourceType = dyn_cast<FragmentType>(op.getSource().getType());
  if (!sourceType)
    return op.emitOpError("reductions of shared tiles are not supported yet; "
                          "copy the tile to a fragment first");
  FailureOr<VectorLayout> layout = getLayout(op, sourceType);
  if (failed(layout))
    return failure();
  Type elementType = sourceType.getElementType();
  if (!elementType.isF32() && !elementType.isInteger(32))
    return op.emitOpError("reduces f32 or i32 fragments only, got ")
           << elementType << "; cast the fragment first";
  if (!llvm::all_of(layout->shape, isPowerOfTwo) || !isPowerOfTwo(threads) ||
      !isPowerOfTwo(layout->getValuesPerThread()))
    return op.emitOpError("reductions need power-of-two fragment shapes, got ")
           << formatDims(sourceType.getDims());
  std::optional<BitLayout> bits = BitLayout::analyze(*layout);
  if (!bits)
    return op.emitOpError("cannot reduce over fragment layout ")
           << sourceType.getLayout();

  Combiner combiner{op.getKind(), elementType};
  // Writes a result into the destination, combined with what it holds when
  // the reduction accumulates.
  auto writeResult = [&](OpBuilder &builder, Value result, Value memref,
                         ValueRange indices) {
    if (op.getAccumulate())
      result = combiner.combine(
          builder, loc,
          combiner.leaf(builder, loc,
                        memref::LoadOp::create(builder, loc, memref, indices)),
          result);
    memref::StoreOp::create(builder, loc, result, memref, indices);
  };
  int64_t dim = op.getDim();
  int64_t lo = 0;
  for (int64_t i = dim + 1; i < static_cast<int64_t>(layout->shape.size()); ++i)
    lo += llvm::Log2_64(layout->shape[i]);
  int64_t hi = lo + llvm::Log2_64(layout->shape[dim]);
  auto reduced = [&](int64_t linearBit) {
    return linearBit >= lo && linearBit < hi;
  };
  int64_t logThreads = llvm::Log2_64(threads);
  int64_t values = layout->getValuesPerThread();

  // 1. Registers: value-index bits that belong to the reduced dimension.
  int64_t valueMask = 0;
  for (int64_t bit = 0; (int64_t(1) << bit) < values; ++bit) {
    if (reduced(bits->valueBits[bit]))
      valueMask |= int64_t(1) << bit;
  }
  // The values of one output go round-robin into `chains` independent
  // chains, combined pairwise at the end: one chain over a thread's 16
  // values of a row is 15 dependent adds (~60 cycles of latency in an
  // epilogue), four are 3 + 2.
  const int64_t numChains = op.getChains();
  SmallVector<Value> &regs = registers[op.getSource()];
  llvm::MapVector<int64_t, SmallVector<Value>> chains;
  DenseMap<int64_t, int64_t> seen;
  for (int64_t v = 0; v < values; ++v) {
    Value element =
        combiner.leaf(b, loc, memref::LoadOp::create(b, loc, regs[v]));
    if (Value inside = isInside(b, *layout, v))
      element = arith::SelectOp::create(b, loc, inside, element,
                                        combiner.identity(b, loc));
    int64_t key = v & ~valueMask;
    SmallVector<Value> &chain = chains[key];
    int64_t position = seen[key]++;
    if (position < numChains)
      chain.push_back(element);
    else
      chain[position % numChains] =
          combiner.combine(b, loc, chain[position % numChains], element);
  }
  llvm::MapVector<int64_t, Value> partial;
  for (auto &[key, chain] : chains) {
    for (int64_t width = 1; width < static_cast<int64_t>(chain.size());
         width *= 2)
      for (int64_t i = 0; i + width < static_cast<int64_t>(chain.size());
           i += 2 * width)
        chain[i] = combiner.combine(b, loc, chain[i], chain[i + width]);
    partial.insert({key, chain.front()});
  }

  // 2. Lanes: xor shuffles over the reduced lane bits.
  int64_t laneMask = 0;
  SmallVector<int64_t> warpBits;
  for (int64_t bit = 0; bit < logThreads; ++bit) {
    if (!reduced(bits->threadBits[bit]))
      continue;
    if (bit < 5)
      laneMask |= int64_t(1) << bit;
    else
      warpBits.push_back(bit);
  }
  // The thread's contribution to linear indices: its bits moved into place.
  auto threadPart = [&](const BitLayout &layoutBits) -> Value {
    Value sum = index(b, 0);
    for (auto [bit, linearBit] : llvm::enumerate(layoutBits.threadBits)) {
      if (linearBit == BitLayout::kReplicated)
        continue;
      Value set = arith::AndIOp::create(
          b, loc, arith::ShRUIOp::create(b, loc, threadId, index(b, bit)),
          index(b, 1));
      sum = arith::OrIOp::create(
          b, loc, sum, arith::ShLIOp::create(b, loc, set, index(b, linearBit)));
    }
    return sum;
  };
  Type i32 = b.getI32Type();
  Value width = arith::ConstantIntOp::create(b, loc, i32, 32);
  auto destFragment = dyn_cast<FragmentType>(op.getDest().getType());
  bool warpLocal = isWarpLocalReduction(
      sourceType.getLayout(), layout->shape, dim,
      destFragment ? destFragment.getLayout() : FragmentLayoutAttr());
  // Across warps the results meet in shared memory, so no lane needs every
  // output: each reduced lane bit halves the partials a thread keeps (it
  // sends the half its partner keeps, one shuffle per pair, and combines
  // what it receives with its own), until one value bit of the partials'
  // keys is told by that lane bit instead. A thread's 16 partials over 8
  // lanes take 8 + 4 + 2 shuffles instead of 3 x 16, and every lane then
  // writes its own outputs. Each output is still combined lane bit by lane
  // bit in the same order, so the results are those of the butterfly.
  // Warp-local reductions keep the butterfly: their destinations hold every
  // output in every lane that reduced it.
  SmallVector<int64_t> freeValueBits;
  for (int64_t bit = 0; (int64_t(1) << bit) < values; ++bit)
    if (!(valueMask & (int64_t(1) << bit)))
      freeValueBits.push_back(bit);
  // Only where every reduced lane bit can halve the partials (then every
  // lane writes): with fewer partials than lanes (a row statistic's 2
  // values over a quad) the selects cost what the shuffles save.
  bool scatter = !warpLocal && !layout->hasPartialCoverage() &&
                 static_cast<int64_t>(freeValueBits.size()) >=
                     llvm::popcount(static_cast<uint64_t>(laneMask));
  // (value bit, lane bit) pairs: the value bit of a kept partial's key is
  // the thread's lane bit.
  SmallVector<std::pair<int64_t, int64_t>> scatteredBits;
  int64_t butterflyMask = 0;
  llvm::MapVector<int64_t, Value> kept = partial;
  for (int64_t bit = 0; bit < 5; ++bit) {
    if (!(laneMask & (int64_t(1) << bit)))
      continue;
    Value offset = arith::ConstantIntOp::create(b, loc, i32, 1 << bit);
    if (scatter && !freeValueBits.empty()) {
      int64_t valueBit = freeValueBits.pop_back_val();
      Value laneSet = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ne,
          arith::AndIOp::create(b, loc, threadId, index(b, int64_t(1) << bit)),
          index(b, 0));
      llvm::MapVector<int64_t, Value> halved;
      for (auto &[key, value] : kept) {
        if (key & (int64_t(1) << valueBit))
          continue;
        Value low = value, high = kept.lookup(key | (int64_t(1) << valueBit));
        Value send = arith::SelectOp::create(b, loc, laneSet, low, high);
        Value own = arith::SelectOp::create(b, loc, laneSet, high, low);
        Value other = gpu::ShuffleOp::create(b, loc, send, offset, width,
                                             gpu::ShuffleMode::XOR)
                          .getShuffleResult();
        halved.insert({key, combiner.combine(b, loc, own, other)});
      }
      kept = std::move(halved);
      scatteredBits.push_back({valueBit, bit});
      continue;
    }
    butterflyMask |= int64_t(1) << bit;
    for (auto &[key, value] : kept) {
      Value other = gpu::ShuffleOp::create(b, loc, value, offset, width,
                                           gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      value = combiner.combine(b, loc, value, other);
    }
  }

  // The destination's register holding the result of partial `key`, when
  // tile-assign-layouts gave it the reduced layout of the source (results
  // stay with the threads that held the row).
  bool inReducedLayout =
      destFragment && destFragment.getLayout() &&
      destFragment.getLayout() ==
          getReducedLayout(sourceType.getLayout(), layout->shape, dim);
  auto compactValue = [&](int64_t key) {
    int64_t compact = 0, position = 0;
    for (int64_t bit = 0; (int64_t(1) << bit) < values; ++bit) {
      if (valueMask & (int64_t(1) << bit))
        continue;
      compact |= ((key >> bit) & 1) << position++;
    }
    return compact;
  };
  // Within warps: no shared-memory hop (the plan reserved no scratch for
  // this reduction by the same rule).
  if (warpLocal) {
    SmallVector<Value> &destRegs = registers[op.getDest()];
    for (auto &[key, value] : kept)
      writeResult(b, value, destRegs[compactValue(key)], {});
    return success();
  }

  // 3. Warps: the lane-reduced partials go to the scratch slice of their
  //    warp group (one copy of each: all lanes after a scatter, the lanes
  //    with zero butterflied bits otherwise).
  int64_t outputs = layout->getNumElements() / layout->shape[dim];
  int64_t slices = int64_t(1) << warpBits.size();
  auto scratchOffset =
      launch->getAttrOfType<IntegerAttr>("tile.scratch_offset");
  auto sharedBytes = launch->getAttrOfType<IntegerAttr>("tile.shared_bytes");
  if (!scratchOffset || !sharedBytes || !sharedBase)
    return op.emitOpError("has no reduction scratch; run "
                          "tile-plan-shared-memory first");
  // The plan reserved scratch by isWarpLocalReduction too; this only
  // guards against the two drifting apart.
  int64_t scratchNeeded = slices * outputs * 4;
  int64_t scratchPlanned = warpgroup
                               ? warpgroupScratchBytes
                               : sharedBytes.getInt() - scratchOffset.getInt();
  if (scratchNeeded > scratchPlanned)
    return op.emitOpError("needs ")
           << scratchNeeded << " bytes of reduction scratch, the plan left "
           << std::max<int64_t>(scratchPlanned, 0);
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  // Inside tile.per_warpgroup each warpgroup combines its own 4 warps in
  // its own slice (warpgroupScratchBytes apart).
  Value scratchBytes = index(b, scratchOffset.getInt());
  if (warpgroup)
    scratchBytes = arith::AddIOp::create(
        b, loc, scratchBytes,
        arith::MulIOp::create(b, loc, warpgroup,
                              index(b, warpgroupScratchBytes)));
  Value scratch = memref::ViewOp::create(
      b, loc,
      MemRefType::get({slices * outputs}, elementType,
                      MemRefLayoutAttrInterface(), workgroup),
      sharedBase, scratchBytes, ValueRange());
  // Threads that run ahead must not overwrite slices that slower ones still
  // read from an earlier reduction or scan: a barrier, unless one already
  // separates this reduction from every earlier scratch reader (e.g. a
  // key loop's shared-memory copy after the previous iteration's
  // reduction). (Inside tile.per_warpgroup, always: its barriers are the
  // warpgroup's.)
  auto readsScratch = [](Operation *root) {
    WalkResult walk = root->walk([](Operation *inner) {
      return isa<ReduceOp, ScanOp, func::CallOp>(inner)
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    return walk.wasInterrupted();
  };
  if (warpgroup || !isScannedCompletely(op) ||
      mayRaceWithEarlierReads(op, readsScratch))
    barrier(b);
  // Lanes that hold copies of the same outputs (butterflied lane bits)
  // write them once; after a full scatter every lane writes.
  Value writer;
  if (butterflyMask) {
    Value laneBits =
        arith::AndIOp::create(b, loc, threadId, index(b, butterflyMask));
    writer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, laneBits,
                                   index(b, 0));
  }
  // The linear-index bits a scattered partial's lane bits stand for.
  Value scatteredPart = index(b, 0);
  for (auto [valueBit, laneBit] : scatteredBits) {
    Value set = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, threadId, index(b, laneBit)),
        index(b, 1));
    scatteredPart = arith::OrIOp::create(
        b, loc, scatteredPart,
        arith::ShLIOp::create(b, loc, set,
                              index(b, bits->valueBits[valueBit])));
  }
  Value slice = index(b, 0);
  for (auto [j, bit] : llvm::enumerate(warpBits)) {
    Value bitValue = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, threadId, index(b, bit)),
        index(b, 1));
    slice = arith::AddIOp::create(
        b, loc, slice, arith::ShLIOp::create(b, loc, bitValue, index(b, j)));
  }
  Value sliceBase = arith::MulIOp::create(b, loc, slice, index(b, outputs));
  // The output's row-major index of partial `key` of this thread: its
  // linear index with the reduced bits dropped.
  auto outputIndex = [&](int64_t key, Value extra = Value()) -> Value {
    Value linear = arith::AddIOp::create(
        b, loc, threadPart(*bits),
        index(b, BitLayout::linearIndex(*layout, 0, key)));
    if (extra)
      linear = arith::AddIOp::create(b, loc, linear, extra);
    Value low =
        arith::AndIOp::create(b, loc, linear, index(b, (int64_t(1) << lo) - 1));
    Value high = arith::ShLIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, linear, index(b, hi)),
        index(b, lo));
    return arith::OrIOp::create(b, loc, low, high);
  };
  for (auto &[key, value] : kept) {
    Value output = outputIndex(key, scatteredPart);
    Value predicate = writer;
    if (Value inside = isInside(b, *layout, key))
      predicate =
          predicate
              ? arith::AndIOp::create(b, loc, predicate, inside).getResult()
              : inside;
    storeElements(
        b, value, scratch,
        {arith::AddIOp::create(b, loc, sliceBase, output).getResult()}, false,
        predicate);
  }
  barrier(b);

  // 4. The owners of the outputs combine the slices.
  auto combineSlices = [&](Value output) {
    Value result = memref::LoadOp::create(b, loc, scratch, output);
    for (int64_t s = 1; s < slices; ++s) {
      Value at = arith::AddIOp::create(b, loc, output, index(b, s * outputs));
      result = combiner.combine(b, loc, result,
                                memref::LoadOp::create(b, loc, scratch, at));
    }
    return result;
  };
  // Across warps into the reduced layout (columns split over warpgroups):
  // every thread that holds a row reads its slices back.
  if (inReducedLayout) {
    SmallVector<Value> &destRegs = registers[op.getDest()];
    for (auto &[key, value] : partial) {
      Value output = outputIndex(key);
      if (Value inside = isInside(b, *layout, key))
        output = arith::SelectOp::create(b, loc, inside, output, index(b, 0));
      writeResult(b, combineSlices(output), destRegs[compactValue(key)], {});
    }
    return success();
  }
  Type destType = op.getDest().getType();
  if (auto destFragment = dyn_cast<FragmentType>(destType)) {
    FailureOr<VectorLayout> destLayout = getLayout(op, destFragment);
    if (failed(destLayout))
      return failure();
    std::optional<BitLayout> destBits = BitLayout::analyze(*destLayout);
    if (!destBits)
      return op.emitOpError("cannot reduce into fragment layout ")
             << destFragment.getLayout();
    SmallVector<Value> &destRegs = registers[op.getDest()];
    for (int64_t v = 0; v < destLayout->getValuesPerThread(); ++v) {
      Value linear = arith::AddIOp::create(
          b, loc, threadPart(*destBits),
          index(b, BitLayout::linearIndex(*destLayout, 0, v)));
      if (Value inside = isInside(b, *destLayout, v))
        linear = arith::SelectOp::create(b, loc, inside, linear, index(b, 0));
      Value result = combineSlices(linear);
      writeResult(b, result, destRegs[v], {});
    }
    return success();
  }
  Value destMemref = memrefs.lookup(op.getDest());
  SmallVector<int64_t> destShape =
      *getTileShapeAndElementType(destType)->first.getStaticSizes();
  auto delinearize = [&](int64_t output) {
    return staticCoordinates(b, loc, destShape, output);
  };
  if (isa<LocalType>(destType)) {
    for (int64_t o = 0; o < outputs; ++o) {
      SmallVector<Value> coords = delinearize(o);
      Value result = combineSlices(index(b, o));
      writeResult(b, result, destMemref, coords);
    }
    return success();
  }
  // Shared destination: every thread writes some outputs.
  VectorLayout destLayout{destShape, threads, 1};
  for (int64_t v = 0; v < destLayout.getValuesPerThread(); ++v) {
    SmallVector<Value> coords = coordinates(b, destLayout, v);
    Value linear = arith::AddIOp::create(
        b, loc, threadId, index(b, destLayout.getLinearIndex(0, v)));
    emitIf(b, isInside(b, destLayout, v), [&](OpBuilder &nested) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(nested.getInsertionBlock(),
                          nested.getInsertionPoint());
      Value result = combineSlices(linear);
      writeResult(b, result, destMemref, coords);
    });
  }
  barrier(b);
  return success();
}
