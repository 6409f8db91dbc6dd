//===- Combiner.h - The combining step of reductions and scans -*- C++ -*-===//
//
// Identity and binary step of the tile.reduce / tile.scan kinds on one
// element type, shared by the reduction and scan lowerings.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_CONVERSION_TILETOGPU_COMBINER_H
#define HISA_CONVERSION_TILETOGPU_COMBINER_H

#include "hisa/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace hisa::tile {

struct Combiner {
  ReduceKind kind;
  mlir::Type type;

  bool isFloat() const { return mlir::isa<mlir::FloatType>(type); }

  mlir::Value identity(mlir::OpBuilder &b, mlir::Location loc) const {
    if (isFloat()) {
      auto floatType = mlir::cast<mlir::FloatType>(type);
      const llvm::fltSemantics &semantics = floatType.getFloatSemantics();
      llvm::APFloat value = llvm::APFloat::getZero(semantics);
      if (kind == ReduceKind::Max)
        value = llvm::APFloat::getInf(semantics, /*Negative=*/true);
      if (kind == ReduceKind::Min)
        value = llvm::APFloat::getInf(semantics, /*Negative=*/false);
      return mlir::arith::ConstantOp::create(b, loc, floatType,
                                             b.getFloatAttr(floatType, value));
    }
    unsigned width = type.getIntOrFloatBitWidth();
    llvm::APInt value = llvm::APInt::getZero(width);
    if (kind == ReduceKind::Max)
      value = llvm::APInt::getSignedMinValue(width);
    if (kind == ReduceKind::Min)
      value = llvm::APInt::getSignedMaxValue(width);
    return mlir::arith::ConstantOp::create(b, loc, type,
                                           b.getIntegerAttr(type, value));
  }

  /// The value an element contributes (its magnitude for abs kinds).
  mlir::Value leaf(mlir::OpBuilder &b, mlir::Location loc,
                   mlir::Value value) const {
    if (kind != ReduceKind::AbsMax && kind != ReduceKind::AbsSum)
      return value;
    if (isFloat())
      return mlir::math::AbsFOp::create(b, loc, value);
    return mlir::math::AbsIOp::create(b, loc, value);
  }

  mlir::Value combine(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs,
                      mlir::Value rhs) const {
    switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::AbsSum:
      return isFloat()
                 ? mlir::arith::AddFOp::create(b, loc, lhs, rhs).getResult()
                 : mlir::arith::AddIOp::create(b, loc, lhs, rhs).getResult();
    case ReduceKind::Max:
    case ReduceKind::AbsMax:
      return isFloat()
                 ? mlir::arith::MaximumFOp::create(b, loc, lhs, rhs).getResult()
                 : mlir::arith::MaxSIOp::create(b, loc, lhs, rhs).getResult();
    case ReduceKind::Min:
      return isFloat()
                 ? mlir::arith::MinimumFOp::create(b, loc, lhs, rhs).getResult()
                 : mlir::arith::MinSIOp::create(b, loc, lhs, rhs).getResult();
    }
    llvm_unreachable("unknown reduce kind");
  }
};

} // namespace hisa::tile

#endif // HISA_CONVERSION_TILETOGPU_COMBINER_H
