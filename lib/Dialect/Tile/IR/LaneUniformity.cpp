//===- LaneUniformity.cpp - Values a warp's lanes agree on ----------------===//
//
// A forward dataflow analysis over one launch body. Each integer value is
// described across a warp's 32 lanes as `base + coefficient * lane` (modulo
// 2^width), with `base` the same in every lane and a multiple of `divisor`,
// a power of two: the innermost induction variable of a [.., 256] domain is
// `32k + lane`, and `t / 32` of it is the same in every lane (the warp
// index: the bounds of top-k's per-warp segment loops). Values enter as
// uniform only from known sources: kernel arguments and what is computed
// outside the launch, block indices, tile.dim / tile.param / cluster_rank,
// constants, shared or global loads at uniform addresses, block-wide
// results (scan totals, all_of) and the collectives' warp-wide results;
// arith / math / index ops of uniform operands are uniform. Everything else
// (register and local-array loads, atomics' old values, thread and lane ids,
// calls, ops of other dialects) is lane-varying. The analysis errs towards
// "varying": it may refuse code whose lanes agree for reasons it cannot see.
//
//===----------------------------------------------------------------------===//

#include "hisa/Dialect/Tile/IR/LaneUniformity.h"

#include "hisa/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <deque>
#include <numeric>

using namespace mlir;
using namespace hisa::tile;

namespace {
constexpr int64_t kWarpSize = 32;
/// Divisors are capped here (a base that is a multiple of 2^62 in a 64-bit
/// value is one of four values; nothing below needs more).
constexpr uint64_t kMaxDivisor = uint64_t(1) << 62;

/// The largest power of two dividing `value` (0 for 0): divisibility by a
/// power of two survives arithmetic modulo 2^width, by other numbers not.
uint64_t powerOfTwoPart(uint64_t value) { return value & (~value + 1); }

/// One value across the lanes of a warp: not known yet, `base +
/// coefficient * lane` (base the same in every lane and a multiple of
/// `divisor`, a power of two; divisor 0 means base is 0), or anything else.
struct LaneValue {
  enum class State { Unknown, Affine, Varying };
  State state = State::Unknown;
  int64_t coefficient = 0;
  uint64_t divisor = 1;

  static LaneValue affine(int64_t coefficient, uint64_t divisor) {
    divisor = powerOfTwoPart(divisor);
    return {State::Affine, coefficient,
            divisor > kMaxDivisor ? kMaxDivisor : divisor};
  }
  static LaneValue uniform(uint64_t divisor = 1) { return affine(0, divisor); }
  static LaneValue varying() { return {State::Varying, 0, 1}; }

  bool isUnknown() const { return state == State::Unknown; }
  bool isAffine() const { return state == State::Affine; }
  bool isUniform() const { return isAffine() && coefficient == 0; }
  /// Known to differ between lanes (or to be anything).
  bool isNonUniform() const {
    return state == State::Varying || (isAffine() && coefficient != 0);
  }

  bool operator==(const LaneValue &other) const {
    return state == other.state && coefficient == other.coefficient &&
           divisor == other.divisor;
  }

  /// What holds of both (a value reaching a block argument from two places).
  LaneValue join(const LaneValue &other) const {
    if (isUnknown())
      return other;
    if (other.isUnknown())
      return *this;
    if (!isAffine() || !other.isAffine() || coefficient != other.coefficient)
      return varying();
    return affine(coefficient, std::gcd(divisor, other.divisor));
  }
};

uint64_t magnitude(int64_t value) {
  return value < 0 ? uint64_t(0) - uint64_t(value) : uint64_t(value);
}

/// The bit width of an integer or index value (index: 64).
unsigned getWidth(Type type) {
  if (auto integer = dyn_cast<IntegerType>(type))
    return integer.getWidth();
  return 64;
}

LaneValue addOrSubtract(const LaneValue &lhs, const LaneValue &rhs,
                        bool subtract) {
  if (!lhs.isAffine() || !rhs.isAffine())
    return LaneValue::varying();
  std::optional<int64_t> coefficient =
      subtract ? llvm::checkedSub(lhs.coefficient, rhs.coefficient)
               : llvm::checkedAdd(lhs.coefficient, rhs.coefficient);
  if (!coefficient)
    return LaneValue::varying();
  return LaneValue::affine(*coefficient, std::gcd(lhs.divisor, rhs.divisor));
}

LaneValue multiply(const LaneValue &value, int64_t factor) {
  if (!value.isAffine())
    return LaneValue::varying();
  std::optional<int64_t> coefficient =
      llvm::checkedMul(value.coefficient, factor);
  if (!coefficient)
    return LaneValue::varying();
  if (factor == 0)
    return LaneValue::uniform(0);
  std::optional<uint64_t> divisor = llvm::checkedMulUnsigned(
      value.divisor, powerOfTwoPart(magnitude(factor)));
  return LaneValue::affine(*coefficient, divisor ? *divisor : kMaxDivisor);
}

/// Whether `base + coefficient * lane` (base a multiple of the value's
/// divisor, a power of two) lies between the same two multiples of
/// `divisor` in every lane: the base is a multiple of it and the lanes'
/// spread stays below it, or it divides the base's divisor and the spread
/// stays below that. (Then no lane wraps past 2^width either: the base
/// modulo 2^width is at most 2^width minus its divisor.)
bool staysInOneInterval(const LaneValue &value, uint64_t divisor) {
  if (value.coefficient < 0)
    return false;
  auto spreadBelow = [&](uint64_t bound) {
    return bound != 0 &&
           uint64_t(value.coefficient) <= (bound - 1) / (kWarpSize - 1);
  };
  if (value.divisor % divisor == 0) // (divisor 0: the base is 0)
    return spreadBelow(divisor);
  return divisor % value.divisor == 0 && spreadBelow(value.divisor);
}

/// `value / divisor` (unsigned, divisor > 0).
LaneValue divide(const LaneValue &value, uint64_t divisor) {
  if (!value.isAffine())
    return LaneValue::varying();
  if (divisor == 1)
    return value;
  bool baseDivides = value.divisor % divisor == 0;
  if (value.coefficient == 0 || staysInOneInterval(value, divisor))
    return LaneValue::uniform(baseDivides ? value.divisor / divisor : 1);
  return LaneValue::varying();
}

/// `value % divisor` (unsigned, divisor > 0).
LaneValue remainder(const LaneValue &value, uint64_t divisor) {
  if (!value.isAffine())
    return LaneValue::varying();
  bool baseDivides = value.divisor % divisor == 0;
  if (divisor == 1 || (value.coefficient == 0 && baseDivides))
    return LaneValue::uniform(0);
  if (value.coefficient == 0)
    return LaneValue::uniform(std::gcd(value.divisor, divisor));
  if (staysInOneInterval(value, divisor))
    return LaneValue::affine(value.coefficient,
                             baseDivides ? 0 : value.divisor);
  return LaneValue::varying();
}

/// A cast from `fromWidth` bits to a wider type (zero- or sign-extending):
/// exact when no lane crosses the wrap (or sign) boundary, i.e. the lanes
/// stay in one aligned block of the base's divisor, no larger than the
/// boundary's spacing.
LaneValue extend(const LaneValue &value, unsigned fromWidth, bool isSigned) {
  if (!value.isAffine() || value.coefficient == 0)
    return value;
  unsigned boundary = isSigned ? fromWidth - 1 : fromWidth;
  if (value.coefficient < 0)
    return LaneValue::varying();
  uint64_t spread = uint64_t(value.coefficient) * (kWarpSize - 1);
  if (value.divisor == 0)
    return boundary >= 63 || spread < (uint64_t(1) << boundary)
               ? value
               : LaneValue::varying();
  bool blockFits = boundary >= 63 || value.divisor <= (uint64_t(1) << boundary);
  if (blockFits && spread < value.divisor)
    return value;
  return LaneValue::varying();
}

/// A cast to `toWidth` bits: the same lanes' offsets modulo 2^toWidth, and
/// the base a multiple of at most 2^toWidth.
LaneValue truncate(LaneValue value, unsigned toWidth) {
  if (value.isAffine() && toWidth < 63 &&
      value.divisor > (uint64_t(1) << toWidth))
    value.divisor = uint64_t(1) << toWidth;
  return value;
}

/// A positive integer constant (a divisor, a shift, a step).
std::optional<uint64_t> getPositiveConstant(Value value) {
  std::optional<int64_t> constant = getConstantIntValue(value);
  if (!constant || *constant <= 0 || uint64_t(*constant) > kMaxDivisor)
    return std::nullopt;
  return uint64_t(*constant);
}

bool isWarpCollective(Operation *op) {
  return isa<VoteOp, WarpScanOp, WarpBroadcastOp, WarpMatchOp>(op);
}

class LaneUniformity {
public:
  explicit LaneUniformity(LaunchOp launch) : launch(launch) {}

  void run() {
    // Block indices are the same in every thread of the block.
    for (BlockArgument index : launch.getBody().front().getArguments())
      update(index, LaneValue::uniform());
    launch.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (auto parallel = dyn_cast<ParallelOp>(op))
        seedInductionVars(parallel);
      else if (auto perWarpgroup = dyn_cast<PerWarpgroupOp>(op))
        update(perWarpgroup.getWarpgroup(), LaneValue::uniform());
      push(op);
    });
    while (!worklist.empty()) {
      Operation *op = worklist.front();
      worklist.pop_front();
      queued.erase(op);
      visit(op);
    }
  }

  /// The innermost op around `op` (inside the launch) whose control flow
  /// differs between the lanes of a warp, if any.
  Operation *getDivergentAncestor(Operation *op) {
    for (Operation *parent = op->getParentOp(); parent && parent != launch;
         parent = parent->getParentOp())
      if (isDivergent(parent))
        return parent;
    return nullptr;
  }

private:
  static constexpr int kUpdatesBeforeWidening = 8;

  /// A warp takes 32 consecutive elements of the row-major domain: the
  /// linear index is `32k + lane`, each induction variable a quotient and
  /// remainder of it. (An unbound domain: checked again once bound.)
  void seedInductionVars(ParallelOp parallel) {
    Block &body = parallel.getBody().front();
    std::optional<SmallVector<int64_t>> extents =
        parallel.getDomain().getStaticSizes();
    if (!extents || extents->size() != body.getNumArguments()) {
      for (BlockArgument argument : body.getArguments())
        update(argument, LaneValue::varying());
      return;
    }
    LaneValue linear = LaneValue::affine(1, kWarpSize);
    uint64_t inner = 1;
    for (int64_t dim = extents->size() - 1; dim >= 0; --dim) {
      uint64_t extent = (*extents)[dim];
      update(body.getArgument(dim), remainder(divide(linear, inner), extent));
      inner = llvm::checkedMulUnsigned(inner, extent).value_or(kMaxDivisor);
    }
  }

  void push(Operation *op) {
    if (queued.insert(op).second)
      worklist.push_back(op);
  }

  LaneValue lookup(Value value) {
    if (auto it = values.find(value); it != values.end())
      return it->second;
    // The launch's verifier runs before dominance is checked: a use ahead
    // of its definition may still be the parser's unplaced forward
    // reference (no region). Unknown here; dominance reports it after.
    Region *region = value.getParentRegion();
    if (!region)
      return LaneValue{};
    if (!launch.getBody().isAncestor(region)) {
      // Computed outside the launch (kernel arguments, host-side sizes):
      // the same in every thread.
      if (std::optional<int64_t> constant = getConstantIntValue(value))
        return LaneValue::uniform(magnitude(*constant));
      return LaneValue::uniform();
    }
    return LaneValue{};
  }

  /// Whether a value decides control flow the same way in every lane; a
  /// value still unknown at the fixed point counts as varying.
  bool decidesUniformly(Value value) { return lookup(value).isUniform(); }

  /// Whether every lane runs the loop's iterations together: uniform
  /// bounds, or a lane-strided start (`%j = %lane to %n step 32`) whose
  /// lanes lie within one step of an aligned base below a bound that is a
  /// multiple of the step.
  bool isConvergentLoop(Value lowerBound, Value upperBound, Value step) {
    LaneValue lower = lookup(lowerBound), upper = lookup(upperBound);
    if (!lookup(step).isUniform() || !upper.isUniform() || !lower.isAffine())
      return false;
    if (lower.isUniform())
      return true;
    std::optional<uint64_t> stride = getPositiveConstant(step);
    return stride && upper.divisor % *stride == 0 &&
           staysInOneInterval(lower, *stride) &&
           (lower.divisor == 0 || lower.divisor % *stride == 0);
  }

  LaneValue getInductionValue(Value lowerBound, Value step) {
    LaneValue lower = lookup(lowerBound), stride = lookup(step);
    return LaneValue::affine(lower.coefficient,
                             std::gcd(lower.divisor, stride.divisor));
  }

  bool isDivergent(Operation *op) {
    return TypeSwitch<Operation *, bool>(op)
        .Case([&](scf::IfOp branch) {
          return !decidesUniformly(branch.getCondition());
        })
        .Case([&](scf::ForOp loop) {
          return !isConvergentLoop(loop.getLowerBound(), loop.getUpperBound(),
                                   loop.getStep());
        })
        .Case([&](PipelinedOp loop) {
          return !isConvergentLoop(loop.getLowerBound(), loop.getUpperBound(),
                                   loop.getStep());
        })
        .Case([&](scf::WhileOp loop) {
          return !decidesUniformly(loop.getConditionOp().getCondition());
        })
        .Case([&](scf::IndexSwitchOp cases) {
          return !decidesUniformly(cases.getArg());
        })
        .Case([&](scf::ExecuteRegionOp region) {
          // Branches between blocks are not followed.
          return !region.getRegion().hasOneBlock();
        })
        .Case<ParallelOp, PerWarpgroupOp, RejoinOp, AllOfOp>(
            [](Operation *) { return false; })
        // Ops with regions of other kinds (scf.parallel, affine loops ...)
        // may run their regions in some lanes only.
        .Default([](Operation *) { return true; });
  }

  void update(Value value, LaneValue next) {
    LaneValue &current = values[value];
    LaneValue joined = current.join(next);
    if (joined == current)
      return;
    if (++updates[value] > kUpdatesBeforeWidening && joined.isAffine())
      joined.divisor = 1;
    if (joined == current)
      return;
    current = joined;
    for (Operation *user : value.getUsers())
      push(user);
  }

  void setAll(ValueRange range, LaneValue value) {
    for (Value v : range)
      update(v, value);
  }

  void forward(ValueRange from, ValueRange to) {
    for (auto [source, target] : llvm::zip(from, to))
      if (LaneValue value = lookup(source); !value.isUnknown())
        update(target, value);
  }

  /// Results of an arith / math / index op with no rule of its own:
  /// uniform when every operand is.
  void visitGeneric(Operation *op) { visitGeneric(op, op->getOperands()); }
  void visitGeneric(Operation *op, ValueRange operands) {
    bool unknown = false;
    for (Value operand : operands) {
      LaneValue value = lookup(operand);
      if (value.isNonUniform()) {
        setAll(op->getResults(), LaneValue::varying());
        return;
      }
      unknown |= value.isUnknown();
    }
    if (!unknown)
      setAll(op->getResults(), LaneValue::uniform());
  }

  /// Integer arithmetic that keeps the affine form.
  bool visitArith(Operation *op) {
    auto binary = [&](auto compute) {
      LaneValue lhs = lookup(op->getOperand(0)),
                rhs = lookup(op->getOperand(1));
      if (lhs.isUnknown() || rhs.isUnknown())
        return;
      update(op->getResult(0), compute(lhs, rhs));
    };
    // `x op constant`, the constant positive; false when it is not one.
    auto byConstant = [&](auto compute) {
      std::optional<uint64_t> constant = getPositiveConstant(op->getOperand(1));
      if (!constant)
        return false;
      LaneValue lhs = lookup(op->getOperand(0));
      if (!lhs.isUnknown())
        update(op->getResult(0), compute(lhs, *constant));
      return true;
    };
    auto orGeneric = [&](bool handled) {
      if (!handled)
        visitGeneric(op);
      return true;
    };
    return TypeSwitch<Operation *, bool>(op)
        .Case([&](arith::ConstantOp constant) {
          std::optional<int64_t> value =
              getConstantIntValue(constant.getResult());
          update(constant.getResult(),
                 LaneValue::uniform(value ? magnitude(*value) : 1));
          return true;
        })
        .Case<arith::AddIOp, arith::SubIOp>([&](Operation *) {
          binary([&](LaneValue lhs, LaneValue rhs) {
            return addOrSubtract(lhs, rhs, isa<arith::SubIOp>(op));
          });
          return true;
        })
        .Case([&](arith::MulIOp) {
          binary([&](LaneValue lhs, LaneValue rhs) {
            if (std::optional<int64_t> factor =
                    getConstantIntValue(op->getOperand(1)))
              return multiply(lhs, *factor);
            if (std::optional<int64_t> factor =
                    getConstantIntValue(op->getOperand(0)))
              return multiply(rhs, *factor);
            if (lhs.isUniform() && rhs.isUniform())
              return LaneValue::uniform(
                  llvm::checkedMulUnsigned(lhs.divisor, rhs.divisor)
                      .value_or(kMaxDivisor));
            return LaneValue::varying();
          });
          return true;
        })
        .Case([&](arith::DivUIOp) { return orGeneric(byConstant(divide)); })
        .Case([&](arith::RemUIOp) { return orGeneric(byConstant(remainder)); })
        .Case([&](arith::ShLIOp) {
          return orGeneric(byConstant([](LaneValue value, uint64_t shift) {
            return shift < 62 ? multiply(value, int64_t(1) << shift)
                              : LaneValue::varying();
          }));
        })
        .Case([&](arith::ShRUIOp) {
          return orGeneric(byConstant([](LaneValue value, uint64_t shift) {
            return shift < 62 ? divide(value, uint64_t(1) << shift)
                              : LaneValue::varying();
          }));
        })
        .Case([&](arith::AndIOp) {
          // `x & (2^n - 1)` is `x % 2^n`.
          std::optional<uint64_t> mask = getPositiveConstant(op->getOperand(1));
          if (!mask || ((*mask + 1) & *mask) != 0)
            return orGeneric(false);
          return orGeneric(byConstant([&](LaneValue value, uint64_t) {
            return remainder(value, *mask + 1);
          }));
        })
        .Case<arith::ExtUIOp, arith::ExtSIOp, arith::IndexCastOp,
              arith::IndexCastUIOp, arith::TruncIOp>([&](Operation *) {
          LaneValue value = lookup(op->getOperand(0));
          if (value.isUnknown())
            return true;
          unsigned from = getWidth(op->getOperand(0).getType()),
                   to = getWidth(op->getResult(0).getType());
          bool isSigned = isa<arith::ExtSIOp, arith::IndexCastOp>(op);
          // (Index casts narrow or widen.)
          update(op->getResult(0), to < from ? truncate(value, to)
                                             : extend(value, from, isSigned));
          return true;
        })
        .Default([](Operation *) { return false; });
  }

  void visitRegionOp(Operation *op) {
    TypeSwitch<Operation *>(op)
        .Case([&](scf::ForOp loop) {
          if (isConvergentLoop(loop.getLowerBound(), loop.getUpperBound(),
                               loop.getStep())) {
            update(loop.getInductionVar(),
                   getInductionValue(loop.getLowerBound(), loop.getStep()));
            forward(loop.getInitArgs(), loop.getRegionIterArgs());
            forward(loop.getInitArgs(), loop.getResults());
            return;
          }
          if (llvm::any_of(loop->getOperands().take_front(3),
                           [&](Value v) { return lookup(v).isUnknown(); }))
            return;
          // Lanes leave the loop at different iterations.
          update(loop.getInductionVar(), LaneValue::varying());
          setAll(loop.getRegionIterArgs(), LaneValue::varying());
          setAll(loop.getResults(), LaneValue::varying());
        })
        .Case([&](PipelinedOp loop) {
          bool convergent = isConvergentLoop(
              loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
          update(loop.getInductionVar(),
                 convergent
                     ? getInductionValue(loop.getLowerBound(), loop.getStep())
                     : LaneValue::varying());
        })
        .Case([&](scf::IfOp branch) {
          if (lookup(branch.getCondition()).isNonUniform())
            setAll(branch.getResults(), LaneValue::varying());
        })
        .Case([&](scf::IndexSwitchOp cases) {
          if (lookup(cases.getArg()).isNonUniform())
            setAll(cases.getResults(), LaneValue::varying());
        })
        .Case([&](scf::WhileOp loop) {
          forward(loop.getInits(), loop.getBeforeArguments());
        })
        .Case([&](AllOfOp allOf) {
          // One answer per warp; the predicate's argument is an element.
          update(allOf.getResult(), LaneValue::uniform());
          for (Block &block : allOf.getPredicate())
            setAll(block.getArguments(), LaneValue::varying());
        })
        .Case<ParallelOp, PerWarpgroupOp, RejoinOp, scf::ExecuteRegionOp>(
            [](Operation *) {})
        .Default([&](Operation *other) {
          setAll(other->getResults(), LaneValue::varying());
          for (Region &region : other->getRegions())
            for (Block &block : region)
              setAll(block.getArguments(), LaneValue::varying());
        });
  }

  void visit(Operation *op) {
    if (op->getNumRegions() != 0)
      return visitRegionOp(op);
    if (visitArith(op))
      return;
    TypeSwitch<Operation *>(op)
        .Case([&](scf::ConditionOp condition) {
          auto loop = cast<scf::WhileOp>(condition->getParentOp());
          if (lookup(condition.getCondition()).isNonUniform()) {
            setAll(loop.getAfterArguments(), LaneValue::varying());
            setAll(loop.getResults(), LaneValue::varying());
            return;
          }
          forward(condition.getArgs(), loop.getAfterArguments());
          forward(condition.getArgs(), loop.getResults());
        })
        .Case([&](scf::YieldOp yield) {
          Operation *parent = yield->getParentOp();
          if (auto loop = dyn_cast<scf::ForOp>(parent)) {
            forward(yield.getResults(), loop.getRegionIterArgs());
            forward(yield.getResults(), loop.getResults());
          } else if (auto loop = dyn_cast<scf::WhileOp>(parent)) {
            forward(yield.getResults(), loop.getBeforeArguments());
          } else {
            forward(yield.getResults(), parent->getResults());
          }
        })
        .Case([&](LoadOp load) {
          // Registers and local arrays hold each thread's own values; a
          // shared or global address the lanes agree on reads one value.
          if (isa<FragmentType, LocalType>(load.getSource().getType())) {
            update(load.getResult(), LaneValue::varying());
            return;
          }
          SmallVector<Value> address;
          for (Value operand : load->getOperands())
            if (operand != load.getSource())
              address.push_back(operand);
          visitGeneric(load, address);
        })
        // Run-time sizes, parameters and the block's rank in its cluster.
        .Case<DimOp, ParamOp, ClusterRankOp>([&](Operation *) {
          setAll(op->getResults(), LaneValue::uniform());
        })
        .Case(
            [&](ScanOp scan) { update(scan.getTotal(), LaneValue::uniform()); })
        .Case([&](VoteOp vote) {
          update(vote.getResult(), LaneValue::uniform());
        })
        .Case([&](WarpScanOp scan) {
          update(scan.getPrefix(), LaneValue::varying());
          update(scan.getTotal(), LaneValue::uniform());
        })
        .Case([&](WarpBroadcastOp broadcast) {
          LaneValue lane = lookup(broadcast.getLane());
          if (lane.isNonUniform())
            update(broadcast.getResult(), LaneValue::varying());
          else if (!lane.isUnknown())
            update(broadcast.getResult(), LaneValue::uniform());
        })
        .Default([&](Operation *other) {
          StringRef name = other->getName().getStringRef();
          if (llvm::is_contained({"gpu.block_id", "gpu.grid_dim",
                                  "gpu.block_dim", "gpu.cluster_id",
                                  "gpu.cluster_dim"},
                                 name))
            return setAll(other->getResults(), LaneValue::uniform());
          StringRef dialect = other->getName().getDialectNamespace();
          if (llvm::is_contained({"arith", "math", "index", "ub"}, dialect))
            return visitGeneric(other);
          // Atomics' old values, matches, calls (checked again once
          // inlined), thread and lane ids, ops of other dialects.
          setAll(other->getResults(), LaneValue::varying());
        });
  }

  LaunchOp launch;
  std::deque<Operation *> worklist;
  llvm::DenseSet<Operation *> queued;
  llvm::DenseMap<Value, LaneValue> values;
  llvm::DenseMap<Value, int> updates;
};
} // namespace

LogicalResult hisa::tile::verifyWarpCollectivesConverge(LaunchOp launch) {
  SmallVector<Operation *> collectives;
  launch.getBody().walk([&](Operation *op) {
    if (!isWarpCollective(op))
      return;
    // A parallel whose domain is not bound yet is checked once it is.
    auto parallel = op->getParentOfType<ParallelOp>();
    if (parallel && parallel.getDomain().getStaticSizes())
      collectives.push_back(op);
  });
  if (collectives.empty())
    return success();
  LaneUniformity analysis(launch);
  analysis.run();
  for (Operation *collective : collectives) {
    Operation *divergent = analysis.getDivergentAncestor(collective);
    if (!divergent)
      continue;
    InFlightDiagnostic diagnostic = collective->emitOpError(
        "is reached by only some lanes of a warp: it sits under control "
        "flow that differs between them, and a warp collective needs "
        "all 32 lanes (move it out of the branch or loop, or give it a "
        "predicate instead)");
    diagnostic.attachNote(divergent->getLoc())
        << "this condition, bound or case differs between the lanes of a "
           "warp (it is computed from the element's coordinates or from "
           "values the lanes hold alone)";
    return diagnostic;
  }
  return success();
}
