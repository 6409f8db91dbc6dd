//===- GemmOp.cpp - Lower tile.gemm to wgmma (sm_90a) ---------------------===//
//
// The warpgroups of a block compute C[M, N] += A[M, K] * B[N, K]^T with A and
// B in shared memory, K-major, in the swizzled layout of one atom per row
// (32, 64 or 128 bytes), and C in registers in the wgmma accumulator layout.
// Each warpgroup owns a piece of C (split along M or N by the warp policy,
// see getWgmmaPartition) and computes each m64 block of it as one chain of
// wgmma.mma_async m64nNk(32 bytes). Descriptor facts (checked on the H200,
// see TOOLCHAIN.md): start address >> 4 in bits 0-13, leading byte offset
// >> 4 in 16-29 (unused for one atom per row), stride byte offset (8 rows)
// >> 4 in 32-45, swizzle mode in bits 62-63 (1: 128 B, 2: 64 B, 3: 32 B);
// the k-th 32-byte step advances the start address by 32 bytes.
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace hisa::tile;

namespace {

/// The wgmma descriptor of a K-major tile at `address` whose rows are one
/// swizzle atom of `rowBytes` (32, 64 or 128) bytes.
Value makeDescriptor(OpBuilder &b, Location loc, Value address,
                     int64_t rowBytes) {
  Type i64 = b.getI64Type();
  auto constant = [&](int64_t value) {
    return arith::ConstantIntOp::create(b, loc, i64, value).getResult();
  };
  Value start = arith::ShRUIOp::create(
      b, loc, arith::AndIOp::create(b, loc, address, constant(0x3FFFF)),
      constant(4));
  int64_t mode = rowBytes == 128 ? 1 : rowBytes == 64 ? 2 : 3;
  int64_t fixed = (int64_t(1) << 16) | (int64_t(8 * rowBytes >> 4) << 32) |
                  (mode << 62);
  return arith::OrIOp::create(b, loc, start, constant(fixed));
}

std::optional<NVVM::WGMMATypes> getWgmmaType(Type type) {
  if (isa<Float8E4M3FNType>(type))
    return NVVM::WGMMATypes::e4m3;
  if (type.isBF16())
    return NVVM::WGMMATypes::bf16;
  if (type.isF16())
    return NVVM::WGMMATypes::f16;
  if (type.isF32())
    return NVVM::WGMMATypes::f32;
  return std::nullopt;
}

} // namespace

void KernelLowering::fenceSharedForAsyncProxy(OpBuilder &b) {
  MLIRContext *context = b.getContext();
  NVVM::FenceProxyOp::create(
      b, func.getLoc(),
      NVVM::ProxyKindAttr::get(context, NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(context, NVVM::SharedSpace::shared_cta));
}

bool hisa::tile::isFencedByPipeline(PipelinedOp loop, GemmOp gemm) {
  if (loop.getNumStages() < 2)
    return false;
  for (Operation &op : loop.getBody().front()) {
    if (&op == gemm.getOperation())
      return true;
    if (auto copy = dyn_cast<CopyOp>(op)) {
      if (isa<GlobalType>(copy.getSource().getType()) &&
          isa<SharedType>(copy.getDest().getType()))
        continue; // a staged copy
      return false;
    }
    if (isa<LoadOp, DimOp, ParamOp>(op) || isPure(&op))
      continue;
    return false;
  }
  return false;
}

LogicalResult KernelLowering::lowerGemm(GemmOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  auto aType = dyn_cast<SharedType>(op.getA().getType());
  auto bType = cast<SharedType>(op.getB().getType());
  auto cType = cast<FragmentType>(op.getC().getType());
  if (chip != "sm_90a") {
    if (isa<Float8E4M3FNType>(bType.getElementType()))
      return op.emitOpError("fp8 (f8E4M3FN) gemm needs wgmma, which target ")
             << chip
             << " does not have (mma.sync would emulate fp8); compile for "
                "sm_90a";
    return op.emitOpError("for target ")
           << chip
           << " (mma.sync) is not implemented yet; refusing rather than "
              "emitting a slow path";
  }
  if (!aType)
    return op.emitOpError("with A in registers is not supported yet; stage A "
                          "in shared memory");
  if (op.getTransposeA() || !op.getTransposeB())
    return op.emitOpError("supports K-major operands only for now: A as "
                          "[M, K] and B as [N, K] with transpose_b");
  auto aAlloc = op.getA().getDefiningOp<AllocOp>();
  auto bAlloc = op.getB().getDefiningOp<AllocOp>();
  if (!aAlloc || !bAlloc || !aAlloc->hasAttr("tile.swizzle") ||
      !bAlloc->hasAttr("tile.swizzle"))
    return op.emitOpError("operands have no swizzled layout; run "
                          "tile-assign-layouts first");
  SmallVector<int64_t> cShape = *cType.getTileShape().getStaticSizes();
  int64_t m = cShape[0], n = cShape[1];
  std::string reason;
  FailureOr<WgmmaPartition> partition =
      getWgmmaPartition(m, n, threads, op.getPolicy(), reason);
  if (failed(partition))
    return op.emitOpError(reason);
  Type elementType = aType.getElementType();
  int64_t elementBytes = elementType.getIntOrFloatBitWidth() / 8;
  int64_t k = *aType.getTileShape().getStaticSize(1);
  int64_t rowBytes = k * elementBytes;
  int64_t kPerInstruction = 32 / elementBytes;
  int64_t steps = k / kPerInstruction;
  int64_t groupN = partition->colsPerGroup;
  NVVM::WGMMATypes inputType = *getWgmmaType(elementType);
  NVVM::WGMMATypes accumulatorType = *getWgmmaType(cType.getElementType());
  MLIRContext *context = b.getContext();
  Type i64 = b.getI64Type();

  // Stores through the generic proxy must be visible to wgmma's async proxy:
  // a fence in every thread, then a barrier. The top of a pipelined
  // iteration already has both when nothing before the gemm in the body
  // writes shared memory.
  if (!fencedGemms.contains(op)) {
    fenceSharedForAsyncProxy(b);
    gpu::BarrierOp::create(b, loc);
  }
  auto addressOf = [&](Value tile) -> Value {
    Value pointer = memref::ExtractAlignedPointerAsIndexOp::create(
        b, loc, memrefs.lookup(tile));
    return arith::IndexCastOp::create(b, loc, i64, pointer);
  };
  Value aAddress = addressOf(op.getA());
  Value bAddress = addressOf(op.getB());
  // Each warpgroup starts at its own rows of A (split M) or of B (split N).
  if (partition->warpgroups > 1) {
    Value group = arith::IndexCastOp::create(
        b, loc, i64,
        arith::DivUIOp::create(
            b, loc, threadId,
            arith::ConstantIndexOp::create(b, loc, 128).getResult()));
    int64_t groupBytes = (partition->splitN ? groupN
                                            : partition->rowsPerGroup) *
                         rowBytes;
    Value offset = arith::MulIOp::create(
        b, loc, group, arith::ConstantIntOp::create(b, loc, i64, groupBytes));
    Value &base = partition->splitN ? bAddress : aAddress;
    base = arith::AddIOp::create(b, loc, base, offset);
  }

  SmallVector<Value> &regs = registers[op.getC()];
  int64_t perBlock = groupN / 2;
  Type f32 = cType.getElementType();
  auto structType = LLVM::LLVMStructType::getLiteral(
      context, SmallVector<Type>(perBlock, f32));
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  SmallVector<Value> results;
  for (int64_t block = 0; block < partition->rowsPerGroup / 64; ++block) {
    Value accumulator = LLVM::PoisonOp::create(b, loc, structType);
    for (int64_t i = 0; i < perBlock; ++i)
      accumulator = LLVM::InsertValueOp::create(
          b, loc, accumulator,
          memref::LoadOp::create(b, loc, regs[block * perBlock + i]), i);
    for (int64_t step = 0; step < steps; ++step) {
      auto offset = [&](Value base, int64_t bytes) {
        return arith::AddIOp::create(
            b, loc, base, arith::ConstantIntOp::create(b, loc, i64, bytes));
      };
      Value aDescriptor = makeDescriptor(
          b, loc, offset(aAddress, block * 64 * rowBytes + step * 32),
          rowBytes);
      Value bDescriptor =
          makeDescriptor(b, loc, offset(bAddress, step * 32), rowBytes);
      bool overwrite = op.getClearAccum() && step == 0;
      accumulator = NVVM::WgmmaMmaAsyncOp::create(
          b, loc, structType, accumulator, aDescriptor, bDescriptor,
          NVVM::MMAShapeAttr::get(context, 64, groupN, kPerInstruction),
          NVVM::WGMMATypesAttr::get(context, inputType),
          NVVM::WGMMATypesAttr::get(context, inputType),
          NVVM::WGMMATypesAttr::get(context, accumulatorType),
          NVVM::WGMMAScaleOutAttr::get(context, overwrite
                                                    ? NVVM::WGMMAScaleOut::zero
                                                    : NVVM::WGMMAScaleOut::one),
          NVVM::WGMMAScaleInAttr::get(context, NVVM::WGMMAScaleIn::one),
          NVVM::WGMMAScaleInAttr::get(context, NVVM::WGMMAScaleIn::one),
          NVVM::MMALayoutAttr::get(context, NVVM::MMALayout::row),
          NVVM::MMALayoutAttr::get(context, NVVM::MMALayout::col),
          NVVM::MMAIntOverflowAttr());
    }
    results.push_back(accumulator);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  // A deferred gemm keeps its group in flight; the loop waits after it.
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc,
                                     deferredGemms.contains(op) ? 1 : 0);
  for (auto [block, accumulator] : llvm::enumerate(results))
    for (int64_t i = 0; i < perBlock; ++i)
      memref::StoreOp::create(
          b, loc, LLVM::ExtractValueOp::create(b, loc, accumulator, i),
          regs[block * perBlock + i]);
  return success();
}
