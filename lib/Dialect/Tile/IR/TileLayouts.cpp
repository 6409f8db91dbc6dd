//===- TileLayouts.cpp - Fragment layouts the compiler generates ----------===//

#include "hisa/Dialect/Tile/IR/TileLayouts.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace hisa::tile;

int64_t VectorLayout::getNumElements() const {
  int64_t elements = 1;
  for (int64_t size : shape)
    elements *= size;
  return elements;
}

int64_t VectorLayout::getValuesPerThread() const {
  if (isGeneral())
    return generalValues;
  int64_t perSweep = threads * vector;
  return (getNumElements() + perSweep - 1) / perSweep * vector;
}

bool VectorLayout::hasPartialCoverage() const {
  if (isGeneral())
    return false;
  return getNumElements() % (threads * vector) != 0;
}

int64_t VectorLayout::getLinearIndex(int64_t thread, int64_t value) const {
  return value / vector * threads * vector + thread * vector + value % vector;
}

FragmentLayoutAttr VectorLayout::toAttr(MLIRContext *context) const {
  AffineExpr t = getAffineDimExpr(0, context);
  AffineExpr v = getAffineDimExpr(1, context);
  AffineExpr linear =
      v.floorDiv(vector) * (threads * vector) + t * vector + v % vector;
  SmallVector<AffineExpr> coords;
  int64_t stride = getNumElements();
  for (auto [i, size] : llvm::enumerate(shape)) {
    stride /= size;
    AffineExpr coord = linear.floorDiv(stride);
    // The outermost coordinate is not wrapped so that positions past the end
    // of the tile stay recognizable.
    coords.push_back(i == 0 ? coord : coord % size);
  }
  auto map = AffineMap::get(2, 0, coords, context);
  return FragmentLayoutAttr::get(context, threads, getValuesPerThread(), map);
}

SmallVector<int64_t>
hisa::tile::getFragmentCoordinates(FragmentLayoutAttr layout, int64_t thread,
                                   int64_t value) {
  MLIRContext *context = layout.getContext();
  SmallVector<Attribute> operands = {
      IntegerAttr::get(IndexType::get(context), thread),
      IntegerAttr::get(IndexType::get(context), value)};
  SmallVector<Attribute> results;
  if (failed(layout.getMap().constantFold(operands, results)))
    return {};
  return llvm::map_to_vector(
      results, [](Attribute a) { return cast<IntegerAttr>(a).getInt(); });
}

VectorLayout VectorLayout::fromAttr(FragmentLayoutAttr attr,
                                    ArrayRef<int64_t> shape) {
  for (int64_t vector = 1; vector <= attr.getValues(); vector *= 2) {
    VectorLayout candidate{SmallVector<int64_t>(shape), attr.getThreads(),
                           vector};
    if (candidate.toAttr(attr.getContext()) == attr)
      return candidate;
  }
  VectorLayout general{SmallVector<int64_t>(shape), attr.getThreads(), 1};
  general.generalMap = attr.getMap();
  general.generalValues = attr.getValues();
  // Runs: values v..v+r-1 (v a multiple of r) at consecutive innermost
  // coordinates in every thread, as the column pairs of a wgmma
  // accumulator; copies move a run with one vector access.
  auto at = [&](int64_t t, int64_t v) {
    return getFragmentCoordinates(attr, t, v);
  };
  auto isRun = [&](int64_t run) {
    if (attr.getValues() % run != 0)
      return false;
    for (int64_t t = 0; t < attr.getThreads(); ++t)
      for (int64_t v = 0; v < attr.getValues(); v += run) {
        SmallVector<int64_t> first = at(t, v);
        if (first.empty())
          return false;
        for (int64_t j = 1; j < run; ++j) {
          SmallVector<int64_t> next = at(t, v + j);
          SmallVector<int64_t> expected = first;
          expected.back() += j;
          if (next != expected)
            return false;
        }
      }
    return true;
  };
  for (int64_t run = 2; run <= 8 && isRun(run); run *= 2)
    general.vector = run;
  return general;
}

FailureOr<WgmmaPartition> hisa::tile::getWgmmaPartition(int64_t m, int64_t n,
                                                        int64_t threads,
                                                        GemmWarpPolicy policy,
                                                        std::string &reason) {
  llvm::raw_string_ostream os(reason);
  if (threads % 128 != 0) {
    os << "needs whole warpgroups (a multiple of 128 threads), got " << threads
       << " threads";
    return failure();
  }
  WgmmaPartition partition;
  partition.warpgroups = threads / 128;
  int64_t groups = partition.warpgroups;
  bool mFits = m % (64 * groups) == 0;
  bool nFits = n % (8 * groups) == 0;
  switch (policy) {
  case GemmWarpPolicy::FullRow:
    partition.splitN = false;
    break;
  case GemmWarpPolicy::FullCol:
    partition.splitN = true;
    break;
  case GemmWarpPolicy::Square:
    partition.splitN = !mFits && nFits;
    break;
  }
  partition.rowsPerGroup = partition.splitN ? m : m / groups;
  partition.colsPerGroup = partition.splitN ? n / groups : n;
  if (partition.splitN ? !nFits || m % 64 != 0 : !mFits || n % 8 != 0) {
    os << "cannot split an accumulator [" << m << ", " << n << "] over "
       << groups << " warpgroup(s) along " << (partition.splitN ? "N" : "M")
       << ": each warpgroup needs M a multiple of 64 and N a multiple of 8";
    return failure();
  }
  if (partition.colsPerGroup > 256) {
    os << "gives each warpgroup " << partition.colsPerGroup
       << " accumulator columns; wgmma computes at most 256 (split along N "
          "or use more warpgroups)";
    return failure();
  }
  return partition;
}

FragmentLayoutAttr
hisa::tile::getWgmmaAccumulatorLayout(MLIRContext *context, int64_t m,
                                      int64_t n,
                                      const WgmmaPartition &partition) {
  AffineExpr t = getAffineDimExpr(0, context);
  AffineExpr v = getAffineDimExpr(1, context);
  int64_t perBlock = partition.colsPerGroup / 2;
  AffineExpr block = v.floorDiv(perBlock);
  AffineExpr i = v % perBlock;
  AffineExpr lane = t % 32;
  AffineExpr warp = t.floorDiv(32);
  if (partition.warpgroups > 1)
    warp = warp % 4;
  AffineExpr row =
      block * 64 + warp * 16 + lane.floorDiv(4) + (i.floorDiv(2) % 2) * 8;
  AffineExpr col = i.floorDiv(4) * 8 + (lane % 4) * 2 + i % 2;
  AffineExpr group = t.floorDiv(128);
  if (partition.warpgroups == 1)
    ; // One warpgroup: the piece is the whole tile.
  else if (partition.splitN)
    col = col + group * partition.colsPerGroup;
  else
    row = row + group * partition.rowsPerGroup;
  int64_t values = (partition.rowsPerGroup / 64) * perBlock;
  return FragmentLayoutAttr::get(context, 128 * partition.warpgroups, values,
                                 AffineMap::get(2, 0, {row, col}, context));
}

std::optional<SmallVector<int64_t>>
hisa::tile::getReducedValueBits(FragmentLayoutAttr source,
                                ArrayRef<int64_t> shape, int64_t dim) {
  MLIRContext *context = source.getContext();
  AffineMap map = source.getMap();
  int64_t threads = source.getThreads(), values = source.getValues();
  if (!llvm::isPowerOf2_64(threads) || !llvm::isPowerOf2_64(values) ||
      !llvm::all_of(shape, [](int64_t s) { return llvm::isPowerOf2_64(s); }))
    return std::nullopt;
  // Which coordinate does each thread/value bit move? It must move exactly
  // one coordinate by a power of two.
  auto evaluate = [&](int64_t t, int64_t v) -> SmallVector<int64_t> {
    SmallVector<Attribute> operands = {
        IntegerAttr::get(IndexType::get(context), t),
        IntegerAttr::get(IndexType::get(context), v)};
    SmallVector<Attribute> results;
    if (failed(map.constantFold(operands, results)))
      return {};
    return llvm::map_to_vector(
        results, [](Attribute a) { return cast<IntegerAttr>(a).getInt(); });
  };
  auto movesDim = [&](SmallVector<int64_t> coords) -> int64_t {
    int64_t moved = -1;
    for (auto [i, c] : llvm::enumerate(coords)) {
      if (c == 0)
        continue;
      if (moved >= 0 || !llvm::isPowerOf2_64(c))
        return -2;
      moved = i;
    }
    return moved;
  };
  SmallVector<int64_t> origin = evaluate(0, 0);
  if (origin.empty() || llvm::any_of(origin, [](int64_t c) { return c != 0; }))
    return std::nullopt;
  // Thread bits of the reduced dimension (lanes, and warps: an accumulator
  // whose columns are split over warpgroups) become replicated bits of the
  // reduced layout: every thread that held part of a row holds its result.
  SmallVector<int64_t> reducedValueBits;
  for (int64_t bit = 0; (int64_t(1) << bit) < values; ++bit) {
    int64_t moved = movesDim(evaluate(0, int64_t(1) << bit));
    if (moved == -2)
      return std::nullopt;
    if (moved == dim)
      reducedValueBits.push_back(bit);
  }
  return reducedValueBits;
}

std::optional<std::pair<int64_t, int64_t>>
hisa::tile::matchPartnerIndices(ValueRange indices, ValueRange inductionVars) {
  if (indices.size() != inductionVars.size())
    return std::nullopt;
  std::optional<std::pair<int64_t, int64_t>> partner;
  for (auto [dim, pair] :
       llvm::enumerate(llvm::zip_equal(indices, inductionVars))) {
    auto [index, iv] = pair;
    if (index == iv)
      continue;
    auto xorOp = index.getDefiningOp<arith::XOrIOp>();
    if (partner || !xorOp)
      return std::nullopt;
    Value other = xorOp.getLhs() == iv   ? xorOp.getRhs()
                  : xorOp.getRhs() == iv ? xorOp.getLhs()
                                         : Value();
    APInt mask;
    if (!other || !matchPattern(other, m_ConstantInt(&mask)) ||
        !mask.isStrictlyPositive())
      return std::nullopt;
    partner = std::make_pair(static_cast<int64_t>(dim), mask.getSExtValue());
  }
  return partner;
}

std::optional<SmallVector<int64_t>>
hisa::tile::getPartnerValues(FragmentLayoutAttr layout, ArrayRef<int64_t> shape,
                             int64_t dim, int64_t mask) {
  if (!layout || dim < 0 || dim >= static_cast<int64_t>(shape.size()) ||
      layout.getMap().getNumResults() != shape.size())
    return std::nullopt;
  MLIRContext *context = layout.getContext();
  int64_t threads = layout.getThreads(), values = layout.getValues();
  // Every (thread, value)'s element, row-major; -1 past the shape.
  SmallVector<int64_t> elements(threads * values, -1);
  SmallVector<Attribute> operands(2), results;
  for (int64_t t = 0; t < threads; ++t)
    for (int64_t v = 0; v < values; ++v) {
      operands[0] = IntegerAttr::get(IndexType::get(context), t);
      operands[1] = IntegerAttr::get(IndexType::get(context), v);
      results.clear();
      if (failed(layout.getMap().constantFold(operands, results)))
        return std::nullopt;
      int64_t linear = 0;
      bool inside = true;
      for (auto [attr, size] : llvm::zip_equal(results, shape)) {
        int64_t coord = cast<IntegerAttr>(attr).getInt();
        inside &= coord >= 0 && coord < size;
        linear = linear * size + coord;
      }
      elements[t * values + v] = inside ? linear : -1;
    }
  // The row-major stride of coordinate `dim`.
  int64_t stride = 1;
  for (int64_t d = dim + 1; d < static_cast<int64_t>(shape.size()); ++d)
    stride *= shape[d];
  auto partnerOf = [&](int64_t linear) -> int64_t {
    int64_t coord = linear / stride % shape[dim];
    int64_t flipped = coord ^ mask;
    if (flipped >= shape[dim])
      return -1;
    return linear + (flipped - coord) * stride;
  };
  // The partner value of each value, from the first thread that holds it;
  // then every thread must hold that partner at that value.
  SmallVector<int64_t> partners(values, -1);
  for (int64_t v = 0; v < values; ++v)
    for (int64_t t = 0; t < threads && partners[v] < 0; ++t) {
      int64_t element = elements[t * values + v];
      if (element < 0)
        continue;
      int64_t partner = partnerOf(element);
      if (partner < 0)
        return std::nullopt;
      for (int64_t w = 0; w < values; ++w)
        if (elements[t * values + w] == partner)
          partners[v] = w;
      if (partners[v] < 0)
        return std::nullopt;
    }
  for (int64_t t = 0; t < threads; ++t)
    for (int64_t v = 0; v < values; ++v) {
      int64_t element = elements[t * values + v];
      if (element >= 0 &&
          elements[t * values + partners[v]] != partnerOf(element))
        return std::nullopt;
    }
  for (int64_t &partner : partners)
    partner = std::max<int64_t>(partner, 0);
  return partners;
}

int64_t hisa::tile::getReducedValueIndex(ArrayRef<int64_t> reducedValueBits,
                                         int64_t value) {
  int64_t result = 0, position = 0;
  for (int64_t bit = 0; (value >> bit) != 0; ++bit) {
    if (llvm::is_contained(reducedValueBits, bit))
      continue;
    result |= ((value >> bit) & 1) << position++;
  }
  return result;
}

std::optional<int64_t> hisa::tile::getRowSliceDim(
    FragmentLayoutAttr layout, ArrayRef<int64_t> shape,
    ValueRange inductionVars, FragmentLayoutAttr sliceLayout,
    ArrayRef<int64_t> sliceShape, ValueRange sliceIndices) {
  if (!layout || !sliceLayout || sliceShape.size() + 1 != shape.size() ||
      sliceIndices.size() != sliceShape.size())
    return std::nullopt;
  for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim) {
    SmallVector<int64_t> kept;
    SmallVector<Value> keptVars;
    for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
      if (i != dim) {
        kept.push_back(shape[i]);
        keptVars.push_back(inductionVars[i]);
      }
    if (ArrayRef<int64_t>(kept) != sliceShape ||
        !llvm::equal(keptVars, sliceIndices))
      continue;
    // Equivalent, not only equal: statistics of one accumulator (scores
    // [64, 64]) rescale another of the same rows (the output [64, 512]).
    if (areEquivalentLayouts(getReducedLayout(layout, shape, dim), sliceLayout))
      return dim;
  }
  return std::nullopt;
}

FragmentLayoutAttr hisa::tile::getReducedLayout(FragmentLayoutAttr source,
                                                ArrayRef<int64_t> shape,
                                                int64_t dim) {
  MLIRContext *context = source.getContext();
  AffineMap map = source.getMap();
  int64_t threads = source.getThreads(), values = source.getValues();
  std::optional<SmallVector<int64_t>> found =
      getReducedValueBits(source, shape, dim);
  if (!found)
    return {};
  SmallVector<int64_t> reducedValueBits = *found;
  // v (source) = v' with zero bits inserted at the reduced positions.
  AffineExpr t = getAffineDimExpr(0, context);
  AffineExpr v = getAffineDimExpr(1, context);
  AffineExpr expanded = v;
  for (int64_t bit : reducedValueBits) {
    int64_t low = int64_t(1) << bit;
    expanded = expanded.floorDiv(low) * (2 * low) + expanded % low;
  }
  SmallVector<AffineExpr> coords;
  for (auto [i, expr] : llvm::enumerate(map.getResults()))
    if (static_cast<int64_t>(i) != dim)
      coords.push_back(expr.replaceDimsAndSymbols({t, expanded}, {}));
  if (coords.empty())
    coords.push_back(getAffineConstantExpr(0, context));
  return FragmentLayoutAttr::get(
      context, threads, values >> reducedValueBits.size(),
      simplifyAffineMap(AffineMap::get(2, 0, coords, context)));
}

bool hisa::tile::isWarpLocalReduction(FragmentLayoutAttr source,
                                      ArrayRef<int64_t> shape, int64_t dim,
                                      FragmentLayoutAttr dest) {
  if (!source || !dest || dest != getReducedLayout(source, shape, dim))
    return false;
  MLIRContext *context = source.getContext();
  for (int64_t thread = 32; thread < source.getThreads(); thread *= 2) {
    SmallVector<Attribute> operands = {
        IntegerAttr::get(IndexType::get(context), thread),
        IntegerAttr::get(IndexType::get(context), 0)};
    SmallVector<Attribute> coordinates;
    if (failed(source.getMap().constantFold(operands, coordinates)) ||
        dim >= static_cast<int64_t>(coordinates.size()))
      return false;
    auto coordinate = dyn_cast<IntegerAttr>(coordinates[dim]);
    if (!coordinate || coordinate.getInt() != 0)
      return false;
  }
  return true;
}

bool hisa::tile::areEquivalentLayouts(FragmentLayoutAttr a,
                                      FragmentLayoutAttr b) {
  if (a == b)
    return true;
  if (!a || !b || a.getThreads() != b.getThreads() ||
      a.getValues() != b.getValues() ||
      a.getMap().getNumResults() != b.getMap().getNumResults())
    return false;
  MLIRContext *context = a.getContext();
  SmallVector<Attribute> aResults, bResults;
  for (int64_t t = 0; t < a.getThreads(); ++t)
    for (int64_t v = 0; v < a.getValues(); ++v) {
      SmallVector<Attribute> operands = {
          IntegerAttr::get(IndexType::get(context), t),
          IntegerAttr::get(IndexType::get(context), v)};
      aResults.clear();
      bResults.clear();
      if (failed(a.getMap().constantFold(operands, aResults)) ||
          failed(b.getMap().constantFold(operands, bResults)) ||
          aResults != bResults)
        return false;
    }
  return true;
}

int64_t hisa::tile::getReplicatedThreadBits(FragmentLayoutAttr layout) {
  MLIRContext *context = layout.getContext();
  AffineMap map = layout.getMap();
  int64_t threads = layout.getThreads(), values = layout.getValues();
  auto evaluate = [&](int64_t t, int64_t v) {
    SmallVector<Attribute> operands = {
        IntegerAttr::get(IndexType::get(context), t),
        IntegerAttr::get(IndexType::get(context), v)};
    SmallVector<Attribute> results;
    if (failed(map.constantFold(operands, results)))
      results.clear();
    return results;
  };
  if (!llvm::isPowerOf2_64(threads))
    return 0;
  int64_t bits = 0;
  for (int64_t bit = 1; bit < threads; bit *= 2) {
    bool same = true;
    for (int64_t t = 0; t < threads && same; ++t) {
      if (t & bit)
        continue;
      for (int64_t v = 0; v < values && same; ++v) {
        SmallVector<Attribute> here = evaluate(t, v);
        // A map that does not fold is never taken as replicated.
        same = !here.empty() && here == evaluate(t | bit, v);
      }
    }
    if (same)
      bits |= bit;
  }
  return bits;
}

bool hisa::tile::hasWgmma(StringRef chip) { return chip == "sm_90a"; }

std::optional<int64_t> hisa::tile::getSmVersion(StringRef chip) {
  int64_t sm = 0;
  if (!chip.consume_front("sm_") ||
      chip.take_while(llvm::isDigit).getAsInteger(10, sm))
    return std::nullopt;
  return sm;
}

FailureOr<MmaSyncPartition>
hisa::tile::getMmaSyncPartition(int64_t m, int64_t n, int64_t threads,
                                GemmWarpPolicy policy, std::string &reason) {
  llvm::raw_string_ostream os(reason);
  int64_t warps = threads / 32;
  bool alongM = m % (16 * warps) == 0 && n % 8 == 0;
  bool alongN = n % (8 * warps) == 0 && m % 16 == 0;
  bool splitN = policy == GemmWarpPolicy::FullCol ||
                (policy == GemmWarpPolicy::Square && !alongM && alongN);
  if (splitN ? !alongN : !alongM) {
    os << "cannot split an accumulator [" << m << ", " << n << "] over "
       << warps << " warp(s) along " << (splitN ? "N" : "M")
       << " for mma.sync: each warp needs M a multiple of 16 and N a "
          "multiple of 8";
    return failure();
  }
  MmaSyncPartition partition;
  partition.warpsM = splitN ? 1 : warps;
  partition.warpsN = splitN ? warps : 1;
  partition.rowsPerWarp = m / partition.warpsM;
  partition.colsPerWarp = n / partition.warpsN;
  return partition;
}

FragmentLayoutAttr
hisa::tile::getMmaSyncAccumulatorLayout(MLIRContext *context,
                                        const MmaSyncPartition &p) {
  AffineExpr t = getAffineDimExpr(0, context);
  AffineExpr v = getAffineDimExpr(1, context);
  int64_t tilesM = p.rowsPerWarp / 16, tilesN = p.colsPerWarp / 8;
  AffineExpr warp = t.floorDiv(32);
  AffineExpr lane = t % 32;
  AffineExpr tile = v.floorDiv(4);
  AffineExpr r = v % 4;
  AffineExpr row = warp.floorDiv(p.warpsN) * p.rowsPerWarp +
                   tile.floorDiv(tilesN) * 16 + lane.floorDiv(4) +
                   r.floorDiv(2) * 8;
  AffineExpr col = (warp % p.warpsN) * p.colsPerWarp + (tile % tilesN) * 8 +
                   (lane % 4) * 2 + r % 2;
  return FragmentLayoutAttr::get(context, 32 * p.warpsM * p.warpsN,
                                 tilesM * tilesN * 4,
                                 AffineMap::get(2, 0, {row, col}, context));
}

FragmentLayoutAttr
hisa::tile::getWgmmaOperandALayout(MLIRContext *context, int64_t m, int64_t k,
                                   int64_t elementBytes,
                                   const WgmmaPartition &partition) {
  AffineExpr t = getAffineDimExpr(0, context);
  AffineExpr v = getAffineDimExpr(1, context);
  int64_t perRegister = 4 / elementBytes;
  int64_t kStep = 32 / elementBytes;
  int64_t steps = k / kStep;
  int64_t rows = partition.splitN ? m : partition.rowsPerGroup;
  AffineExpr element = v % perRegister;
  AffineExpr reg = v.floorDiv(perRegister) % 4;
  AffineExpr step = v.floorDiv(4 * perRegister) % steps;
  AffineExpr block = v.floorDiv(4 * perRegister * steps);
  AffineExpr warp = t.floorDiv(32);
  if (partition.warpgroups > 1)
    warp = warp % 4;
  AffineExpr lane = t % 32;
  AffineExpr row = block * 64 + warp * 16 + lane.floorDiv(4) + (reg % 2) * 8;
  if (partition.warpgroups > 1 && !partition.splitN)
    row = row + t.floorDiv(128) * partition.rowsPerGroup;
  AffineExpr col = step * kStep + (lane % 4) * perRegister +
                   reg.floorDiv(2) * (kStep / 2) + element;
  int64_t values = (rows / 64) * steps * 4 * perRegister;
  return FragmentLayoutAttr::get(context, 128 * partition.warpgroups, values,
                                 AffineMap::get(2, 0, {row, col}, context));
}
