//===- LaneUniformity.cpp - Values a warp's lanes agree on ----------------===//
//
// A forward dataflow analysis over one tile.parallel body. Each integer value
// is described across a warp's 32 lanes as `base + coefficient * lane`, with
// `base` the same in every lane and a known multiple of `divisor`: the
// innermost induction variable of a [.., 256] domain is `32k + lane`, and
// `t / 32` of it is the same in every lane (the warp index: the bounds of
// top-k's per-warp segment loops). Anything else computed from a lane-varying
// value, or read from registers or per-element data, is lane-varying. The
// analysis errs towards "varying", so it may refuse code that happens to
// agree within a warp; it does not follow memory (a shared or global load at
// a uniform address is uniform) nor device functions (checked once inlined).
//
//===----------------------------------------------------------------------===//

#include "hisa/Dialect/Tile/IR/LaneUniformity.h"

#include "hisa/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <numeric>

using namespace mlir;
using namespace hisa::tile;

namespace {
constexpr int64_t kWarpSize = 32;

/// One value across the lanes of a warp: not known yet, `base +
/// coefficient * lane` (base the same in every lane and a multiple of
/// `divisor`; divisor 0 means base is 0), or anything else.
struct LaneValue {
  enum class State { Unknown, Affine, Varying };
  State state = State::Unknown;
  int64_t coefficient = 0;
  uint64_t divisor = 1;

  static LaneValue affine(int64_t coefficient, uint64_t divisor) {
    return {State::Affine, coefficient, divisor};
  }
  static LaneValue uniform(uint64_t divisor = 1) { return affine(0, divisor); }
  static LaneValue varying() { return {State::Varying, 0, 1}; }

  bool isUnknown() const { return state == State::Unknown; }
  bool isUniform() const { return state == State::Affine && coefficient == 0; }
  /// Known to differ between lanes (or to be anything).
  bool isNonUniform() const {
    return state == State::Varying ||
           (state == State::Affine && coefficient != 0);
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
    if (state == State::Varying || other.state == State::Varying ||
        coefficient != other.coefficient)
      return varying();
    return affine(coefficient, std::gcd(divisor, other.divisor));
  }
};

uint64_t magnitude(int64_t value) {
  return value < 0 ? uint64_t(0) - uint64_t(value) : uint64_t(value);
}

LaneValue addOrSubtract(const LaneValue &lhs, const LaneValue &rhs,
                        bool subtract) {
  if (lhs.state != LaneValue::State::Affine ||
      rhs.state != LaneValue::State::Affine)
    return LaneValue::varying();
  std::optional<int64_t> coefficient =
      subtract ? llvm::checkedSub(lhs.coefficient, rhs.coefficient)
               : llvm::checkedAdd(lhs.coefficient, rhs.coefficient);
  if (!coefficient)
    return LaneValue::varying();
  return LaneValue::affine(*coefficient, std::gcd(lhs.divisor, rhs.divisor));
}

LaneValue multiply(const LaneValue &value, int64_t factor) {
  std::optional<int64_t> coefficient =
      llvm::checkedMul(value.coefficient, factor);
  std::optional<uint64_t> divisor =
      llvm::checkedMulUnsigned(value.divisor, magnitude(factor));
  if (!coefficient)
    return LaneValue::varying();
  return LaneValue::affine(*coefficient, divisor ? *divisor : 1);
}

/// Whether `base + coefficient * lane` (base a multiple of the value's
/// divisor) lies between the same two multiples of `divisor` in every lane:
/// the base is a multiple of it and the lanes' spread stays below it, or it
/// divides the base's divisor and the spread stays below that.
static bool staysInOneInterval(const LaneValue &value, uint64_t divisor) {
  if (value.coefficient < 0)
    return false;
  auto spreadBelow = [&](uint64_t bound) {
    return bound != 0 &&
           uint64_t(value.coefficient) <= (bound - 1) / (kWarpSize - 1);
  };
  if (value.divisor % divisor == 0)
    return spreadBelow(divisor);
  return divisor % value.divisor == 0 && spreadBelow(value.divisor);
}

/// `value / divisor` (unsigned, divisor > 0).
LaneValue divide(const LaneValue &value, uint64_t divisor) {
  if (value.state != LaneValue::State::Affine)
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
  if (value.state != LaneValue::State::Affine)
    return LaneValue::varying();
  bool baseDivides = value.divisor % divisor == 0;
  if (value.coefficient == 0)
    return LaneValue::uniform(baseDivides ? 0
                                          : std::gcd(value.divisor, divisor));
  if (staysInOneInterval(value, divisor))
    return LaneValue::affine(value.coefficient,
                             baseDivides ? 0 : value.divisor);
  return LaneValue::varying();
}

/// A positive integer constant below 2^62 (a divisor, a shift's power).
std::optional<uint64_t> getPositiveConstant(Value value) {
  std::optional<int64_t> constant = getConstantIntValue(value);
  if (!constant || *constant <= 0)
    return std::nullopt;
  return uint64_t(*constant);
}

bool isWarpCollective(Operation *op) {
  return isa<VoteOp, WarpScanOp, WarpBroadcastOp, WarpMatchOp>(op);
}

class LaneUniformity {
public:
  explicit LaneUniformity(ParallelOp parallel) : parallel(parallel) {}

  /// Runs to a fixed point; false when the domain is not bound yet.
  bool run() {
    std::optional<SmallVector<int64_t>> extents =
        parallel.getDomain().getStaticSizes();
    if (!extents)
      return false;
    // A warp takes 32 consecutive elements of the row-major domain: the
    // linear index is `32k + lane`. Each induction variable is a quotient
    // and remainder of it.
    LaneValue linear = LaneValue::affine(1, kWarpSize);
    uint64_t inner = 1;
    Block &body = parallel.getBody().front();
    for (int64_t dim = extents->size() - 1; dim >= 0; --dim) {
      uint64_t extent = (*extents)[dim];
      values[body.getArgument(dim)] = remainder(divide(linear, inner), extent);
      inner *= extent;
    }
    // Every update moves a value up the lattice (unknown, then affine with a
    // smaller divisor, then varying); widening bounds the sweeps.
    for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
      changed = false;
      parallel.getBody().walk<WalkOrder::PreOrder>(
          [&](Operation *op) { visit(op); });
      if (!changed)
        return true;
    }
    // Not reached for structured control flow; refuse nothing rather than
    // guess.
    return false;
  }

  /// The innermost op around `op` (inside the body) whose control flow
  /// differs between the lanes of a warp, if any.
  Operation *getDivergentAncestor(Operation *op) {
    for (Operation *parent = op->getParentOp(); parent && parent != parallel;
         parent = parent->getParentOp())
      if (isDivergent(parent))
        return parent;
    return nullptr;
  }

private:
  static constexpr int kMaxSweeps = 256;
  static constexpr int kUpdatesBeforeWidening = 4;

  LaneValue lookup(Value value) {
    if (auto it = values.find(value); it != values.end())
      return it->second;
    if (!parallel.getBody().isAncestor(value.getParentRegion())) {
      // Defined outside the body: the same in every thread of the block.
      if (std::optional<int64_t> constant = getConstantIntValue(value))
        return LaneValue::uniform(magnitude(*constant));
      return LaneValue::uniform();
    }
    return LaneValue{};
  }

  /// Whether a value decides control flow the same way in every lane; a
  /// value still unknown after the fixed point counts as varying.
  bool decidesUniformly(Value value) { return lookup(value).isUniform(); }

  bool isDivergent(Operation *op) {
    return TypeSwitch<Operation *, bool>(op)
        .Case([&](scf::IfOp branch) {
          return !decidesUniformly(branch.getCondition());
        })
        .Case([&](scf::ForOp loop) {
          return !decidesUniformly(loop.getLowerBound()) ||
                 !decidesUniformly(loop.getUpperBound()) ||
                 !decidesUniformly(loop.getStep());
        })
        .Case([&](scf::WhileOp loop) {
          return !decidesUniformly(loop.getConditionOp().getCondition());
        })
        .Case([&](scf::IndexSwitchOp cases) {
          return !decidesUniformly(cases.getArg());
        })
        .Default([](Operation *) { return false; });
  }

  void update(Value value, LaneValue next) {
    LaneValue &current = values[value];
    LaneValue joined = current.join(next);
    if (joined == current)
      return;
    if (++updates[value] > kUpdatesBeforeWidening &&
        joined.state == LaneValue::State::Affine)
      joined.divisor = 1;
    if (joined == current)
      return;
    current = joined;
    changed = true;
  }

  void setAll(ValueRange range, LaneValue value) {
    for (Value v : range)
      update(v, value);
  }

  void forward(ValueRange from, ValueRange to) {
    for (auto [source, target] : llvm::zip(from, to))
      update(target, lookup(source));
  }

  /// Results of a side-effect-free op with no rule of its own: uniform when
  /// every operand is.
  void visitGeneric(Operation *op) {
    bool unknown = false;
    for (Value operand : op->getOperands()) {
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
    // `x op constant`, the constant positive.
    auto byConstant = [&](auto compute) {
      std::optional<uint64_t> constant = getPositiveConstant(op->getOperand(1));
      if (!constant || *constant >= (uint64_t(1) << 62))
        return false;
      LaneValue lhs = lookup(op->getOperand(0));
      if (!lhs.isUnknown())
        update(op->getResult(0), compute(lhs, *constant));
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
              return lhs.state == LaneValue::State::Affine
                         ? multiply(lhs, *factor)
                         : LaneValue::varying();
            if (std::optional<int64_t> factor =
                    getConstantIntValue(op->getOperand(0)))
              return rhs.state == LaneValue::State::Affine
                         ? multiply(rhs, *factor)
                         : LaneValue::varying();
            if (lhs.isUniform() && rhs.isUniform())
              return LaneValue::uniform(
                  llvm::checkedMulUnsigned(lhs.divisor, rhs.divisor)
                      .value_or(1));
            return LaneValue::varying();
          });
          return true;
        })
        .Case([&](arith::DivUIOp) {
          if (!byConstant(divide))
            visitGeneric(op);
          return true;
        })
        .Case([&](arith::RemUIOp) {
          if (!byConstant(remainder))
            visitGeneric(op);
          return true;
        })
        .Case([&](arith::ShLIOp) {
          if (!byConstant([](LaneValue value, uint64_t shift) {
                return shift < 62 ? multiply(value, int64_t(1) << shift)
                                  : LaneValue::varying();
              }))
            visitGeneric(op);
          return true;
        })
        .Case([&](arith::ShRUIOp) {
          if (!byConstant([](LaneValue value, uint64_t shift) {
                return shift < 62 ? divide(value, uint64_t(1) << shift)
                                  : LaneValue::varying();
              }))
            visitGeneric(op);
          return true;
        })
        .Case([&](arith::AndIOp) {
          // `x & (2^n - 1)` is `x % 2^n`.
          std::optional<uint64_t> mask = getPositiveConstant(op->getOperand(1));
          if (mask && *mask < (uint64_t(1) << 62) && ((*mask + 1) & *mask) == 0)
            byConstant([&](LaneValue value, uint64_t) {
              return remainder(value, *mask + 1);
            });
          else
            visitGeneric(op);
          return true;
        })
        .Case<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
              arith::ExtUIOp, arith::TruncIOp>([&](Operation *) {
          if (LaneValue value = lookup(op->getOperand(0)); !value.isUnknown())
            update(op->getResult(0), value);
          return true;
        })
        .Default([](Operation *) { return false; });
  }

  void visit(Operation *op) {
    if (visitArith(op))
      return;
    TypeSwitch<Operation *>(op)
        .Case([&](scf::ForOp loop) {
          LaneValue lower = lookup(loop.getLowerBound()),
                    upper = lookup(loop.getUpperBound()),
                    step = lookup(loop.getStep());
          if (lower.isNonUniform() || upper.isNonUniform() ||
              step.isNonUniform()) {
            // Lanes leave the loop at different iterations.
            update(loop.getInductionVar(), LaneValue::varying());
            setAll(loop.getRegionIterArgs(), LaneValue::varying());
            setAll(loop.getResults(), LaneValue::varying());
            return;
          }
          if (lower.isUnknown() || upper.isUnknown() || step.isUnknown())
            return;
          update(loop.getInductionVar(),
                 LaneValue::uniform(std::gcd(lower.divisor, step.divisor)));
          forward(loop.getInitArgs(), loop.getRegionIterArgs());
          forward(loop.getInitArgs(), loop.getResults());
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
          // Registers and local arrays hold each element's own values; a
          // shared or global address the lanes agree on reads one value.
          if (isa<FragmentType, LocalType>(load.getSource().getType()))
            update(load.getResult(), LaneValue::varying());
          else
            visitGeneric(load);
        })
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
        .Case([&](func::CallOp call) { visitGeneric(call); })
        .Default([&](Operation *other) {
          // Ops of the tile dialect (atomics' old values, matches) and ops
          // with regions of their own give what each element computed.
          if (other->getNumRegions() != 0 ||
              isa<TileDialect>(other->getDialect())) {
            setAll(other->getResults(), LaneValue::varying());
            for (Region &region : other->getRegions())
              for (Block &block : region)
                setAll(block.getArguments(), LaneValue::varying());
            return;
          }
          visitGeneric(other);
        });
  }

  ParallelOp parallel;
  llvm::DenseMap<Value, LaneValue> values;
  llvm::DenseMap<Value, int> updates;
  bool changed = false;
};
} // namespace

LogicalResult hisa::tile::verifyWarpCollectivesConverge(ParallelOp parallel) {
  SmallVector<Operation *> collectives;
  parallel.getBody().walk([&](Operation *op) {
    if (isWarpCollective(op))
      collectives.push_back(op);
  });
  if (collectives.empty())
    return success();
  LaneUniformity analysis(parallel);
  if (!analysis.run())
    return success();
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
