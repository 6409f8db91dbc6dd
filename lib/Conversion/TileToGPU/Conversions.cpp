//===- Conversions.cpp - Element type conversions, fp8 through PTX cvt ----===//

#include "KernelLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace hisa::tile;

namespace {

Value inlinePTX(OpBuilder &b, Location loc, Type result, StringRef ptx,
                StringRef constraints, ValueRange operands) {
  return LLVM::InlineAsmOp::create(
             b, loc, result, operands, ptx, constraints,
             /*has_side_effects=*/false, /*is_align_stack=*/false,
             LLVM::TailCallKind::None, LLVM::AsmDialectAttr(),
             /*operand_attrs=*/ArrayAttr())
      .getResult(0);
}

/// PTX's name of an fp8 type (e4m3 or e5m2).
StringRef getFp8Name(Type fp8) {
  return isa<Float8E5M2Type>(fp8) ? "e5m2" : "e4m3";
}

/// Two fp8 values to f32 with one cvt.rn.f16x2.e4m3x2 / e5m2x2 (exact).
std::pair<Value, Value> fp8PairToF32(OpBuilder &b, Location loc, Value first,
                                     Value second) {
  std::string cvt =
      ("cvt.rn.f16x2." + getFp8Name(first.getType()) + "x2 $0, $1;").str();
  Type i8 = b.getI8Type(), i16 = b.getI16Type();
  auto widen = [&](Value byte) {
    return arith::ExtUIOp::create(b, loc, i16,
                                  arith::BitcastOp::create(b, loc, i8, byte));
  };
  Value packed = arith::OrIOp::create(
      b, loc, widen(first),
      arith::ShLIOp::create(b, loc, widen(second),
                            arith::ConstantIntOp::create(b, loc, i16, 8)));
  Value halves = inlinePTX(b, loc, b.getI32Type(), cvt, "=r,h", {packed});
  Value pair = LLVM::BitcastOp::create(
      b, loc, VectorType::get({2}, b.getF16Type()), halves);
  auto extract = [&](int64_t i) -> Value {
    Value half = vector::ExtractOp::create(b, loc, pair, i);
    return arith::ExtFOp::create(b, loc, b.getF32Type(), half).getResult();
  };
  return {extract(0), extract(1)};
}

/// Two f32 to fp8 with one cvt.rn.satfinite.e4m3x2.f32 / e5m2x2.f32
/// (saturating to the largest finite value: 448 / 57344).
std::pair<Value, Value> f32PairToFp8(OpBuilder &b, Location loc, Type fp8,
                                     Value first, Value second) {
  std::string cvt =
      ("cvt.rn.satfinite." + getFp8Name(fp8) + "x2.f32 $0, $1, $2;").str();
  // The first operand lands in the upper byte.
  Value packed =
      inlinePTX(b, loc, b.getI16Type(), cvt, "=h,f,f", {second, first});
  Type i8 = b.getI8Type();
  auto byte = [&](Value bits) {
    return arith::BitcastOp::create(b, loc, fp8,
                                    arith::TruncIOp::create(b, loc, i8, bits));
  };
  Value high = arith::ShRUIOp::create(
      b, loc, packed, arith::ConstantIntOp::create(b, loc, b.getI16Type(), 8));
  return {byte(packed), byte(high)};
}

Value convertScalar(OpBuilder &b, Location loc, Value value, Type to) {
  Type from = value.getType();
  if (from == to)
    return value;
  auto fromFloat = dyn_cast<FloatType>(from);
  auto toFloat = dyn_cast<FloatType>(to);
  if (fromFloat && toFloat)
    return fromFloat.getWidth() < toFloat.getWidth()
               ? arith::ExtFOp::create(b, loc, to, value).getResult()
               : arith::TruncFOp::create(b, loc, to, value).getResult();
  if (fromFloat)
    return arith::FPToSIOp::create(b, loc, to, value);
  if (toFloat)
    return arith::SIToFPOp::create(b, loc, to, value);
  unsigned fromWidth = from.getIntOrFloatBitWidth();
  unsigned toWidth = to.getIntOrFloatBitWidth();
  if (fromWidth < toWidth)
    return arith::ExtSIOp::create(b, loc, to, value);
  return arith::TruncIOp::create(b, loc, to, value);
}

} // namespace

std::pair<Value, Value> KernelLowering::convertPair(OpBuilder &b, Value first,
                                                    Value second, Type to) {
  Location loc = func.getLoc();
  Type from = first.getType();
  if (isFloat8(from)) {
    auto [a, c] = fp8PairToF32(b, loc, first, second);
    // (fp8 to another fp8: through f32, exact on the way in.)
    if (isFloat8(to))
      return f32PairToFp8(b, loc, to, a, c);
    return {convertScalar(b, loc, a, to), convertScalar(b, loc, c, to)};
  }
  if (isFloat8(to)) {
    Type f32 = b.getF32Type();
    return f32PairToFp8(b, loc, to, convertScalar(b, loc, first, f32),
                        convertScalar(b, loc, second, f32));
  }
  return {convertScalar(b, loc, first, to), convertScalar(b, loc, second, to)};
}

Value KernelLowering::convertElement(OpBuilder &b, Value value, Type to) {
  if (!isFloat8(value.getType()) && !isFloat8(to))
    return convertScalar(b, func.getLoc(), value, to);
  Value other = zero(b, value.getType());
  return convertPair(b, value, other, to).first;
}
