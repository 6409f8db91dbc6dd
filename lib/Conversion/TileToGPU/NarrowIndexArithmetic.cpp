//===- NarrowIndexArithmetic.cpp - 32-bit index arithmetic ----------------===//

#include "hisa/Conversion/Passes.h"

#include "mlir/Analysis/DataFlow/IntegerRangeAnalysis.h"
#include "mlir/Analysis/DataFlow/Utils.h"
#include "mlir/Analysis/DataFlowFramework.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

namespace hisa {
#define GEN_PASS_DEF_TILENARROWINDEXARITHMETIC
#include "hisa/Conversion/Passes.h.inc"
} // namespace hisa

using namespace mlir;

namespace {

/// Whether the analysis proves `value` (an index) in [0, 2^31).
bool isSmallNonNegative(DataFlowSolver &solver, Value value) {
  auto *lattice = solver.lookupState<dataflow::IntegerValueRangeLattice>(value);
  if (!lattice || lattice->getValue().isUninitialized())
    return false;
  const ConstantIntRanges &range = lattice->getValue().getValue();
  return range.smin().isNonNegative() &&
         range.umax().ule(static_cast<uint64_t>(INT32_MAX));
}

/// The integer ops whose i32 form means the same as their index form when
/// every operand and result is in [0, 2^31).
bool isNarrowable(Operation *op) {
  return isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivUIOp,
             arith::DivSIOp, arith::CeilDivUIOp, arith::CeilDivSIOp,
             arith::FloorDivSIOp, arith::RemUIOp, arith::RemSIOp,
             arith::MinUIOp, arith::MaxUIOp, arith::MinSIOp, arith::MaxSIOp,
             arith::ShLIOp, arith::ShRUIOp, arith::ShRSIOp, arith::AndIOp,
             arith::OrIOp, arith::XOrIOp, arith::CmpIOp>(op);
}

struct TileNarrowIndexArithmeticPass
    : public hisa::impl::TileNarrowIndexArithmeticBase<
          TileNarrowIndexArithmeticPass> {
  void runOnOperation() override {
    DataFlowSolver solver;
    dataflow::loadBaselineAnalyses(solver);
    solver.load<dataflow::IntegerRangeAnalysis>();
    if (failed(solver.initializeAndRun(getOperation())))
      return signalPassFailure();

    // Decided on the analysis of the unchanged module, then rewritten.
    SmallVector<Operation *> narrow;
    getOperation().walk([&](Operation *op) {
      if (!isNarrowable(op))
        return;
      auto isIndex = [](Value v) { return v.getType().isIndex(); };
      if (!llvm::all_of(op->getOperands(), isIndex))
        return;
      for (Value operand : op->getOperands())
        if (!isSmallNonNegative(solver, operand))
          return;
      for (Value result : op->getResults())
        if (result.getType().isIndex() && !isSmallNonNegative(solver, result))
          return;
      narrow.push_back(op);
    });

    for (Operation *op : narrow) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      Type i32 = b.getI32Type();
      SmallVector<Value> operands;
      for (Value operand : op->getOperands())
        operands.push_back(arith::IndexCastUIOp::create(b, loc, i32, operand));
      SmallVector<Type> types;
      for (Type type : op->getResultTypes())
        types.push_back(type.isIndex() ? i32 : type);
      OperationState state(loc, op->getName().getStringRef(), operands, types,
                           op->getAttrs());
      Operation *narrowed = b.create(state);
      for (auto [old, result] :
           llvm::zip(op->getResults(), narrowed->getResults())) {
        Value replacement =
            old.getType().isIndex()
                ? arith::IndexCastUIOp::create(b, loc, old.getType(), result)
                      .getResult()
                : result;
        old.replaceAllUsesWith(replacement);
      }
      op->erase();
    }
  }
};

} // namespace
