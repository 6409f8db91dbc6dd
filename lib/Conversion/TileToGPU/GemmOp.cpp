//===- GemmOp.cpp - Lower tile.gemm to wgmma (sm_90a) ---------------------===//
//
// The warpgroups of a block compute C[M, N] += A * B with A and B in shared
// memory (A may be in registers) and C in registers in the wgmma accumulator
// layout. Each warpgroup owns a piece of C (split along M or N by the warp
// policy, see getWgmmaPartition) and computes each m64 block of it as one
// chain of wgmma.mma_async m64nNk(32 bytes).
//
// Shared operands are stored as the swizzled panels of sharedIndices: rows
// of the tile's contiguous dimension cut into S-byte panels (S = 32, 64 or
// 128). A K-major operand (A [M, K], B [N, K] with transpose_b) has K along
// its rows; a transposed one (A [K, M] with transpose_a, B [K, N]: bf16/f16
// only) has M or N along them, and wgmma reads it "MN-major" (its trans
// bit). Descriptor facts (checked on the H200, see TOOLCHAIN.md): start
// address >> 4 in bits 0-13, leading byte offset >> 4 in 16-29, stride byte
// offset >> 4 in 32-45, swizzle mode in bits 62-63 (1: 128 B, 2: 64 B, 3:
// 32 B). K-major: the stride offset is 8 rows (8 S), the leading offset is
// unused (one instruction reads 32 bytes of K, inside one panel), k step s
// starts at byte 32 s of the rows. MN-major: the stride offset is 8 K-rows
// (8 S), the leading offset the distance between the panels an instruction
// spans along M or N (rows * S), k step s starts 32 / (element bytes) K-rows
// further.
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"
#include "hisa/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace hisa::tile;

namespace {

/// A wgmma matrix descriptor, kept as its two words: the low one (start
/// address / 16, leading byte offset / 16) computed in the kernel, the high
/// one (stride byte offset, swizzle mode) a constant. Stepping the start
/// field is then a 32-bit add, and the high word never reaches a register
/// of its own (64-bit adds cost ptxas an add with carry and register moves
/// per wgmma).
struct Descriptor {
  Value low; // i32
  int64_t high;
};

/// The wgmma descriptor of a tile at `address` stored in `swizzleBytes`
/// (32, 64 or 128) panels: 8 rows apart by 8 * swizzleBytes, and panels
/// `leadingBytes` apart (0: one panel, the field's unused value 1).
Descriptor makeDescriptor(OpBuilder &b, Location loc, Value address,
                          int64_t swizzleBytes, int64_t leadingBytes = 0) {
  Type i32 = b.getI32Type();
  auto constant = [&](int64_t value) {
    return arith::ConstantIntOp::create(b, loc, i32, value).getResult();
  };
  Value address32 = arith::TruncIOp::create(b, loc, i32, address);
  Value start = arith::ShRUIOp::create(
      b, loc, arith::AndIOp::create(b, loc, address32, constant(0x3FFFF)),
      constant(4));
  int64_t mode = swizzleBytes == 128 ? 1 : swizzleBytes == 64 ? 2 : 3;
  int64_t leading = leadingBytes ? (leadingBytes >> 4) & 0x3FFF : 1;
  int64_t high = int64_t(8 * swizzleBytes >> 4) | (mode << 30);
  return {arith::OrIOp::create(b, loc, start, constant(leading << 16)), high};
}

/// The 64-bit descriptor of `base`'s tile `bytes` further on. Start
/// addresses are 16-byte aligned and below 256 KiB, so adding bytes / 16
/// to the start field never carries out of it.
Value stepDescriptor(OpBuilder &b, Location loc, const Descriptor &base,
                     int64_t bytes) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Value low = base.low;
  if (bytes)
    low = arith::AddIOp::create(
        b, loc, low, arith::ConstantIntOp::create(b, loc, i32, bytes >> 4));
  Value wide = arith::ExtUIOp::create(b, loc, i64, low);
  return arith::OrIOp::create(
      b, loc, wide, arith::ConstantIntOp::create(b, loc, i64, base.high << 32));
}

/// Where a shared gemm operand's wgmma reads start: the tile's geometry
/// (tile-assign-layouts' swizzle) and its major-ness.
struct OperandGeometry {
  bool kMajor;
  int64_t rows;         // of the stored tile (M/N if K-major, else K)
  int64_t swizzleBytes; // panel width S
  int64_t elementBytes;

  int64_t getPanelBytes() const { return rows * swizzleBytes; }
  /// Byte offset of element `mn` along M/N at the start of k step `step`
  /// (32 bytes of K each).
  int64_t getOffset(int64_t mn, int64_t step) const {
    if (kMajor)
      return 32 * step / swizzleBytes * getPanelBytes() +
             32 * step % swizzleBytes + mn * swizzleBytes;
    int64_t column = mn * elementBytes;
    return column / swizzleBytes * getPanelBytes() + column % swizzleBytes +
           32 / elementBytes * step * swizzleBytes;
  }
  /// The descriptor's leading byte offset (0: unused).
  int64_t getLeadingBytes() const { return kMajor ? 0 : getPanelBytes(); }
};

/// Two f16 accumulator values as one 32-bit register (the first in the low
/// half), as wgmma and mma.sync hold f16 accumulators.
Value packHalves(OpBuilder &b, Location loc, Value low, Value high) {
  Value pair = vector::FromElementsOp::create(
      b, loc, VectorType::get({2}, b.getF16Type()), ValueRange{low, high});
  return LLVM::BitcastOp::create(b, loc, b.getI32Type(), pair);
}

std::pair<Value, Value> unpackHalves(OpBuilder &b, Location loc, Value word) {
  Value pair = LLVM::BitcastOp::create(
      b, loc, VectorType::get({2}, b.getF16Type()), word);
  return {vector::ExtractOp::create(b, loc, pair, 0),
          vector::ExtractOp::create(b, loc, pair, 1)};
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

/// Whether `op` (with what it contains) leaves shared memory as it is: a
/// gemm writes its register accumulator; stores, reductions, casts and
/// fills into fragments or local arrays (e.g. P cast to bf16 in registers
/// for a register-A gemm); loads; regions of such ops.
static bool leavesSharedMemory(Operation &op) {
  // Not isPure: an unsigned division by a parameter is not speculatable,
  // but it writes no shared memory either.
  // (A barrier or a wait for gemms orders accesses; it writes nothing.)
  if (isa<LoadOp, DimOp, ParamOp, AllOfOp, GemmOp, BarrierOp, WaitGemmsOp>(
          op) ||
      isMemoryEffectFree(&op))
    return true;
  if (isa<StoreOp, ReduceOp, CastOp, FillOp, ClearOp>(op)) {
    Value dest = getWrittenTile(&op);
    return dest && isa<FragmentType, LocalType>(dest.getType());
  }
  if (isa<ParallelOp, scf::IfOp, scf::ForOp>(op))
    return llvm::all_of(op.getRegions(), [](Region &region) {
      return llvm::all_of(region.getOps(), [](Operation &inside) {
        return leavesSharedMemory(inside);
      });
    });
  return false;
}

/// A global-to-shared copy: in a pipelined body, one of its staged copies.
static bool isStagedCopy(Operation &op) {
  auto copy = dyn_cast<CopyOp>(op);
  return copy && isa<GlobalType>(copy.getSource().getType()) &&
         isa<SharedType>(copy.getDest().getType());
}

/// Whether nothing in `perWarpgroup`'s body writes shared memory.
static bool writesNoSharedMemory(PerWarpgroupOp perWarpgroup) {
  return llvm::all_of(perWarpgroup.getBody().getOps(), [](Operation &inside) {
    return leavesSharedMemory(inside);
  });
}

/// Whether `op`, which names no written tile (getWrittenTile), writes none:
/// reads, gemms (into registers), synchronization, containers (whose ops
/// are walked on their own) and side-effect-free ops.
static bool writesNoTile(Operation *op) {
  return isa<GemmOp, LoadOp, BarrierOp, WaitGemmsOp, ReleaseOp, AllOfOp, PickOp,
             AllocOp, DimOp, ParamOp, PerWarpgroupOp, ParallelOp, YieldOp,
             scf::IfOp, scf::ForOp, scf::YieldOp>(op) ||
         isMemoryEffectFree(op);
}

/// Whether every shared-memory write in `perWarpgroup`'s body either fences
/// itself for the async proxy (a fragment copied into a swizzled tile, a
/// wgmma operand, fences its stores) or goes to a tile that no gemm of the
/// kernel reads (row statistics handed between warpgroups): a named
/// barrier in the body then has nothing to fence for another warpgroup's
/// wgmma.
static bool writesNothingUnfencedForGemms(PerWarpgroupOp perWarpgroup) {
  Operation *kernel = perWarpgroup;
  while (Operation *parent = kernel->getParentOp()) {
    if (isa<ModuleOp, gpu::GPUModuleOp>(parent))
      break;
    kernel = parent;
  }
  SmallVector<Value> gemmOperands;
  kernel->walk([&](GemmOp gemm) {
    for (Value operand : {gemm.getA(), Value(gemm.getB())})
      if (isa<SharedType>(operand.getType()))
        gemmOperands.push_back(operand);
  });
  WalkResult walk = perWarpgroup.getBody().walk([&](Operation *op) {
    Value written = getWrittenTile(op);
    if (!written)
      return writesNoTile(op) ? WalkResult::advance() : WalkResult::interrupt();
    if (!isa<SharedType>(written.getType()))
      return WalkResult::advance();
    auto copy = dyn_cast<CopyOp>(op);
    AllocOp alloc = getRootAlloc(written);
    if (copy && isa<FragmentType>(copy.getSource().getType()) && alloc &&
        alloc->hasAttr("tile.swizzle"))
      return WalkResult::advance();
    bool readByGemm = llvm::any_of(gemmOperands, [&](Value operand) {
      return mayShareBytes(operand, written);
    });
    return readByGemm ? WalkResult::interrupt() : WalkResult::advance();
  });
  return !walk.wasInterrupted();
}

bool hisa::tile::isFencedByPipeline(PipelinedOp loop,
                                    PerWarpgroupOp perWarpgroup,
                                    bool selfFencedWrites) {
  if (perWarpgroup->getParentOp() != loop ||
      !(selfFencedWrites ? writesNothingUnfencedForGemms(perWarpgroup)
                         : writesNoSharedMemory(perWarpgroup)))
    return false;
  for (Operation &op : loop.getBody().front()) {
    if (&op == perWarpgroup.getOperation())
      return true;
    if (!isStagedCopy(op) && !leavesSharedMemory(op))
      return false;
  }
  return false;
}

/// Whether everything `block` runs before `gemm` (which it contains, maybe
/// nested) leaves shared memory as it is, apart from the pipeline's staged
/// copies (global-to-shared copies directly in its body, `topLevel`).
/// Nested gemms count only inside an scf.if or a tile.per_warpgroup: in a
/// nested loop, what follows the gemm runs before its next pass. An
/// unsynchronized tile.per_warpgroup counts only when nothing in it writes
/// shared memory: its warpgroups run successive iterations out of step, so
/// a write after the gemm could precede the other warpgroup's next gemm.
static bool onlyStagedWritesBefore(Block &block, GemmOp gemm, bool topLevel) {
  for (Operation &op : block) {
    if (&op == gemm.getOperation())
      return true;
    if (op.isAncestor(gemm)) {
      auto perWarpgroup = dyn_cast<PerWarpgroupOp>(op);
      bool writesNothing = perWarpgroup && writesNoSharedMemory(perWarpgroup);
      if (!isa<scf::IfOp>(op) &&
          !(perWarpgroup &&
            (!perWarpgroup.getUnsynchronized() || writesNothing)))
        return false;
      Block *inner = gemm->getBlock();
      while (inner->getParentOp() != &op)
        inner = inner->getParentOp()->getBlock();
      return onlyStagedWritesBefore(*inner, gemm, /*topLevel=*/false);
    }
    if (isa<CopyOp>(op)) {
      if (topLevel && isStagedCopy(op))
        continue;
      return false;
    }
    if (!leavesSharedMemory(op))
      return false;
  }
  return false;
}

/// The shared tiles `tile` may be: the allocation behind its views, or
/// each candidate of a tile.pick.
static void collectTileRoots(Value tile, llvm::SmallPtrSetImpl<Value> &roots) {
  tile = getViewedTile(tile);
  if (auto pick = tile.getDefiningOp<PickOp>()) {
    for (Value candidate : pick.getTiles())
      collectTileRoots(candidate, roots);
    return;
  }
  roots.insert(tile);
}

/// Whether every warpgroup that may run `gemm` never runs `writer`, or
/// writes none of the gemm's operands there (both in `perWarpgroup`'s body).
static bool writtenOnlyByOtherWarpgroups(GemmOp gemm, Operation *writer,
                                         Value written,
                                         PerWarpgroupOp perWarpgroup,
                                         int64_t warpgroups) {
  for (int64_t index = 0; index < warpgroups; ++index) {
    if (!mayRunInWarpgroup(gemm, perWarpgroup, index) ||
        !mayRunInWarpgroup(writer, perWarpgroup, index))
      continue;
    SmallVector<Value> writtenTiles, readTiles;
    collectTilesForWarpgroup(written, perWarpgroup, index, writtenTiles);
    for (Value operand : {gemm.getA(), Value(gemm.getB())})
      if (isa<SharedType>(operand.getType()))
        collectTilesForWarpgroup(operand, perWarpgroup, index, readTiles);
    for (Value tile : writtenTiles)
      for (Value read : readTiles)
        if (mayShareBytes(tile, read))
          return false;
  }
  return warpgroups > 0;
}

/// Whether nothing in the warp-specialized `loop`'s body but its staged
/// copies, or (for a gemm in tile.per_warpgroup, `warpgroups` known)
/// another warpgroup, writes a shared operand of `gemm`. The gemm then
/// reads only tiles written before the loop, which the consumers fenced for
/// the async proxy before their rendezvous, stages of staged copies, which
/// each thread waits for (and fences, when cp.async filled them) before
/// its first read in the iteration, and tiles the writing warpgroup fenced
/// and handed over through a named barrier: a fence and barrier of its own
/// would order nothing more.
static bool readsOnlySettledTiles(PipelinedOp loop, GemmOp gemm,
                                  int64_t warpgroups) {
  if (!loop.getWarpSpecialized())
    return false;
  auto perWarpgroup = gemm->getParentOfType<PerWarpgroupOp>();
  llvm::SmallPtrSet<Value, 4> operands;
  for (Value operand : {gemm.getA(), Value(gemm.getB())})
    if (isa<SharedType>(operand.getType()))
      collectTileRoots(operand, operands);
  Block &body = loop.getBody().front();
  WalkResult walk = body.walk([&](Operation *op) {
    if (op->getBlock() == &body && isStagedCopy(*op))
      return WalkResult::advance();
    if (Value written = getWrittenTile(op)) {
      if (!isa<SharedType>(written.getType()))
        return WalkResult::advance();
      llvm::SmallPtrSet<Value, 4> writtenRoots;
      collectTileRoots(written, writtenRoots);
      bool overlaps = llvm::any_of(
          writtenRoots, [&](Value root) { return operands.contains(root); });
      if (overlaps && perWarpgroup && perWarpgroup->isAncestor(op) &&
          writtenOnlyByOtherWarpgroups(gemm, op, written, perWarpgroup,
                                       warpgroups))
        overlaps = false;
      return overlaps ? WalkResult::interrupt() : WalkResult::advance();
    }
    // (Not known to write nothing: keep the fence and barrier.)
    return writesNoTile(op) ? WalkResult::advance() : WalkResult::interrupt();
  });
  return !walk.wasInterrupted();
}

bool hisa::tile::isFencedByPipeline(PipelinedOp loop, GemmOp gemm,
                                    std::optional<int64_t> settledWarpgroups) {
  if (settledWarpgroups &&
      readsOnlySettledTiles(loop, gemm, *settledWarpgroups))
    return true;
  if (loop.getNumStages() < 2)
    return false;
  return onlyStagedWritesBefore(loop.getBody().front(), gemm,
                                /*topLevel=*/true);
}

void KernelLowering::storeGemmAccumulators(OpBuilder &b, GemmOp op,
                                           ArrayRef<Value> accumulators) {
  Location loc = op.getLoc();
  SmallVector<Value> &regs = registers[op.getC()];
  bool halfAccumulator =
      cast<FragmentType>(op.getC().getType()).getElementType().isF16();
  int64_t perRegister = halfAccumulator ? 2 : 1;
  int64_t perBlock = int64_t(regs.size()) / int64_t(accumulators.size());
  int64_t registersPerBlock = perBlock / perRegister;
  for (auto [block, accumulator] : llvm::enumerate(accumulators))
    for (int64_t i = 0; i < registersPerBlock; ++i) {
      Value word = LLVM::ExtractValueOp::create(b, loc, accumulator, i);
      int64_t first = block * perBlock + i * perRegister;
      if (!halfAccumulator) {
        memref::StoreOp::create(b, loc, word, regs[first]);
        continue;
      }
      auto [low, high] = unpackHalves(b, loc, word);
      memref::StoreOp::create(b, loc, low, regs[first]);
      memref::StoreOp::create(b, loc, high, regs[first + 1]);
    }
}

/// The four 32-bit registers of wgmma's A operand for k step `slice` (m64
/// block times steps plus step) of a fragment laid out by
/// getWgmmaOperandALayout: 4 / elementBytes consecutive values each.
SmallVector<Value> KernelLowering::packOperandA(OpBuilder &b, Location loc,
                                                Value fragment, int64_t slice,
                                                int64_t elementBytes) {
  SmallVector<Value> &values = registers[fragment];
  int64_t perRegister = 4 / elementBytes;
  Type i32 = b.getI32Type();
  SmallVector<Value> packed;
  for (int64_t j = 0; j < 4; ++j) {
    int64_t first = (slice * 4 + j) * perRegister;
    if (elementBytes == 2) {
      Type elementType =
          cast<MemRefType>(values[first].getType()).getElementType();
      Value pair = vector::FromElementsOp::create(
          b, loc, VectorType::get({2}, elementType),
          ValueRange{memref::LoadOp::create(b, loc, values[first]),
                     memref::LoadOp::create(b, loc, values[first + 1])});
      packed.push_back(LLVM::BitcastOp::create(b, loc, i32, pair));
      continue;
    }
    // Four fp8 bytes, the first in the lowest byte.
    Value word = arith::ConstantIntOp::create(b, loc, i32, 0);
    for (int64_t e = 0; e < 4; ++e) {
      Value byte = arith::BitcastOp::create(
          b, loc, b.getI8Type(),
          memref::LoadOp::create(b, loc, values[first + e]));
      Value wide = arith::ShLIOp::create(
          b, loc, arith::ExtUIOp::create(b, loc, i32, byte),
          arith::ConstantIntOp::create(b, loc, i32, 8 * e));
      word = arith::OrIOp::create(b, loc, word, wide);
    }
    packed.push_back(word);
  }
  return packed;
}

/// wgmma.mma_async with A from registers (the NVVM op takes A as a
/// descriptor only): inline PTX whose accumulator outputs are tied to
/// their inputs.
Value KernelLowering::emitWgmmaWithRegisterA(OpBuilder &b, Location loc,
                                             Value accumulator, Type structType,
                                             ArrayRef<Value> aRegisters,
                                             Value bDescriptor, int64_t n,
                                             Type elementType, bool overwrite,
                                             bool transposeB) {
  auto body = cast<LLVM::LLVMStructType>(structType).getBody();
  int64_t count = body.size();
  // f16 accumulators come in 32-bit registers of two.
  bool halfAccumulator = body.front().isInteger(32);
  bool fp8 = isa<Float8E4M3FNType>(elementType);
  std::string type = fp8 ? "e4m3" : elementType.isBF16() ? "bf16" : "f16";
  std::string ptx;
  llvm::raw_string_ostream os(ptx);
  os << "{\n.reg .pred p;\nsetp.ne.b32 p, $" << count + 5
     << ", 0;\nwgmma.mma_async.sync.aligned.m64n" << n << "k" << (fp8 ? 32 : 16)
     << (halfAccumulator ? ".f16." : ".f32.") << type << "." << type << " {";
  for (int64_t i = 0; i < count; ++i)
    os << (i ? ", " : "") << "$" << i;
  os << "}, {$" << count << ", $" << count + 1 << ", $" << count + 2 << ", $"
     << count + 3 << "}, $" << count + 4 << ", p, 1, 1"
     << (fp8          ? ""
         : transposeB ? ", 1"
                      : ", 0")
     << ";\n}";
  std::string constraints;
  for (int64_t i = 0; i < count; ++i)
    constraints += halfAccumulator ? "=r," : "=f,";
  constraints += "r,r,r,r,l,n";
  for (int64_t i = 0; i < count; ++i)
    constraints += "," + std::to_string(i);
  SmallVector<Value> operands(aRegisters.begin(), aRegisters.end());
  operands.push_back(bDescriptor);
  operands.push_back(
      arith::ConstantIntOp::create(b, loc, b.getI32Type(), overwrite ? 0 : 1));
  for (int64_t i = 0; i < count; ++i)
    operands.push_back(LLVM::ExtractValueOp::create(b, loc, accumulator, i));
  return LLVM::InlineAsmOp::create(
             b, loc, structType, operands, ptx, constraints,
             /*has_side_effects=*/true, /*is_align_stack=*/false,
             LLVM::TailCallKind::None, LLVM::AsmDialectAttr(),
             /*operand_attrs=*/ArrayAttr())
      .getResult(0);
}

LogicalResult KernelLowering::lowerGemm(GemmOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  auto bType = cast<SharedType>(op.getB().getType());
  auto cType = cast<FragmentType>(op.getC().getType());
  if (!cType.getElementType().isF32() &&
      !(cType.getElementType().isF16() && bType.getElementType().isF16()))
    return op.emitOpError("accumulates in ")
           << cType.getElementType() << ", which the tensor cores do not "
           << "for " << bType.getElementType()
           << " operands (f32, or f16 for f16 operands)";
  if (!hasWgmma(chip)) {
    if (isa<Float8E4M3FNType>(bType.getElementType()))
      return op.emitOpError("fp8 (f8E4M3FN) gemm needs wgmma, which target ")
             << chip
             << " does not have (mma.sync would emulate fp8); compile for "
                "sm_90a";
    if (std::optional<int64_t> sm = getSmVersion(chip); sm && *sm < 80)
      return op.emitOpError("needs tensor cores with bf16/f16 mma.sync "
                            "(sm_80 or newer); target ")
             << chip << " has none";
  }
  auto aFragment = dyn_cast<FragmentType>(op.getA().getType());
  if (aFragment && op.getTransposeA())
    return op.emitOpError("with A in registers takes A as [M, K] (wgmma's "
                          "register operand is K-major); drop transpose_a");
  if (aFragment && !hasWgmma(chip))
    return op.emitOpError("with A in registers needs wgmma (sm_90a); target ")
           << chip << " reads A from shared memory";
  AllocOp aAlloc = getRootAlloc(op.getA());
  AllocOp bAlloc = getRootAlloc(op.getB());
  if (!bAlloc || !bAlloc->hasAttr("tile.swizzle") ||
      (!aFragment && (!aAlloc || !aAlloc->hasAttr("tile.swizzle"))))
    return op.emitOpError("operands have no swizzled layout; run "
                          "tile-assign-layouts first");
  if (!hasWgmma(chip))
    return lowerMmaSyncGemm(op, b);
  SmallVector<int64_t> cShape = *cType.getTileShape().getStaticSizes();
  int64_t m = cShape[0], n = cShape[1];
  std::string reason;
  FailureOr<WgmmaPartition> partition =
      getWgmmaPartition(m, n, threads, op.getPolicy(), reason);
  if (failed(partition))
    return op.emitOpError(reason);
  MLIRContext *context = b.getContext();
  Type elementType = bType.getElementType();
  int64_t elementBytes = elementType.getIntOrFloatBitWidth() / 8;
  bool bKMajor = op.getTransposeB(), aKMajor = !op.getTransposeA();
  int64_t k = *bType.getTileShape().getStaticSize(bKMajor ? 1 : 0);
  auto geometryOf = [&](Value tile, bool kMajor) {
    auto type = cast<SharedType>(tile.getType());
    AllocOp alloc = getRootAlloc(tile);
    return OperandGeometry{
        kMajor, *type.getTileShape().getStaticSize(0),
        cast<IntegerAttr>(alloc->getAttr("tile.swizzle")).getInt(),
        elementBytes};
  };
  OperandGeometry bGeometry = geometryOf(op.getB(), bKMajor);
  std::optional<OperandGeometry> aGeometry;
  if (!aFragment)
    aGeometry = geometryOf(op.getA(), aKMajor);
  if (aFragment &&
      !areEquivalentLayouts(
          aFragment.getLayout(),
          getWgmmaOperandALayout(context, m, k, elementBytes, *partition)))
    return op.emitOpError("A fragment does not have wgmma's A-operand "
                          "layout; run tile-assign-layouts");
  if (!areEquivalentLayouts(cType.getLayout(), getWgmmaAccumulatorLayout(
                                                   context, m, n, *partition)))
    return op.emitOpError("accumulator does not have the wgmma layout of "
                          "target ")
           << chip << "; run tile-assign-layouts with chip=" << chip;
  for (Value tile : {aFragment ? Value() : op.getA(), Value(op.getB())}) {
    if (!tile)
      continue;
    auto type = cast<SharedType>(tile.getType());
    int64_t rowBytes = *type.getTileShape().getStaticSize(1) * elementBytes;
    int64_t swizzle =
        cast<IntegerAttr>(getRootAlloc(tile)->getAttr("tile.swizzle")).getInt();
    if (rowBytes <= 128 ? swizzle != rowBytes
                        : swizzle != 128 || rowBytes % 128 != 0)
      return op.emitOpError("operand swizzle does not match its ")
             << rowBytes << "-byte rows; run tile-assign-layouts";
  }
  // A warpgroup's part of a transposed operand must start at a panel.
  auto panelAligned = [&](const OperandGeometry &geometry, int64_t mn) {
    return geometry.kMajor || (mn * elementBytes) % geometry.swizzleBytes == 0;
  };
  if (!panelAligned(bGeometry,
                    partition->splitN ? partition->colsPerGroup : 0) ||
      (aGeometry &&
       !panelAligned(*aGeometry,
                     partition->splitN ? 0 : partition->rowsPerGroup)))
    return op.emitOpError("splits a transposed operand between warpgroups "
                          "inside a swizzle panel; use another policy");
  int64_t kPerInstruction = 32 / elementBytes;
  int64_t steps = k / kPerInstruction;
  int64_t groupN = partition->colsPerGroup;
  NVVM::WGMMATypes inputType = *getWgmmaType(elementType);
  NVVM::WGMMATypes accumulatorType = *getWgmmaType(cType.getElementType());
  Type i64 = b.getI64Type();

  // Stores through the generic proxy must be visible to wgmma's async proxy:
  // a fence in every thread, then a barrier. The top of a pipelined
  // iteration already has both when nothing before the gemm in the body
  // writes shared memory.
  if (!fencedGemms.contains(op)) {
    fenceSharedForAsyncProxy(b);
    gpu::BarrierOp::create(b, loc);
  }
  // Operand addresses are the shared base, moved here from the dynamic
  // shared-memory symbol by inline PTX, plus the tile's offset from it.
  // LLVM cannot hoist the move: otherwise the addresses (and descriptors)
  // of loop-invariant operands (single-buffered tiles) are all hoisted out
  // of a loop and spill (sparse_attn_wg: 64 descriptors, then 10 bases).
  // Naming the symbol itself, not a register holding it, lets ptxas build
  // the descriptors in uniform registers: from the per-thread copy of the
  // base that shared loads and stores use, it computed them per thread and
  // moved every word to a uniform register (8 instructions per wgmma
  // instead of 4 in HISA stage 2). tile-extern-dynamic-shared-memory puts
  // the symbol's name in place of the marker.
  auto pointerOf = [&](Value memref) -> Value {
    return arith::IndexCastOp::create(
        b, loc, i64,
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref));
  };
  Value base = pointerOf(sharedBase);
  Value pinnedBase =
      LLVM::InlineAsmOp::create(
          b, loc, TypeRange{i64}, ValueRange{},
          ("mov.b64 $0, " + hisa::kDynamicSharedBaseMarker + ";").str(), "=l",
          /*has_side_effects=*/true, /*is_align_stack=*/false,
          LLVM::TailCallKind::None, LLVM::AsmDialectAttr(),
          /*operand_attrs=*/ArrayAttr())
          .getResult(0);
  auto addressOf = [&](Value tile) -> Value {
    Value offset =
        arith::SubIOp::create(b, loc, pointerOf(memrefs.lookup(tile)), base);
    return arith::AddIOp::create(b, loc, pinnedBase, offset);
  };
  Value aAddress = aFragment ? Value() : addressOf(op.getA());
  Value bAddress = addressOf(op.getB());
  // Each warpgroup starts at its own rows of A (split M) or of B (split N).
  if (partition->warpgroups > 1) {
    // Warp-uniform for ptxas, so the descriptors built from it stay in
    // uniform registers (from threadId / 128 it moved each descriptor word
    // with R2UR before every wgmma).
    Value group =
        arith::ExtUIOp::create(b, loc, i64, getUniformWarpgroupIndex(b, loc));
    int64_t groupBytes =
        partition->splitN
            ? bGeometry.getOffset(groupN, 0)
            : (aGeometry ? aGeometry->getOffset(partition->rowsPerGroup, 0)
                         : 0);
    Value offset = arith::MulIOp::create(
        b, loc, group, arith::ConstantIntOp::create(b, loc, i64, groupBytes));
    Value &base = partition->splitN ? bAddress : aAddress;
    if (base) // A in registers: each warpgroup holds its own rows already
      base = arith::AddIOp::create(b, loc, base, offset);
  }

  SmallVector<Value> &regs = registers[op.getC()];
  // Accumulator values per m64 block; f16 ones go two to a 32-bit register.
  int64_t perBlock = groupN / 2;
  bool halfAccumulator = cType.getElementType().isF16();
  int64_t perRegister = halfAccumulator ? 2 : 1;
  int64_t registersPerBlock = perBlock / perRegister;
  auto structType = LLVM::LLVMStructType::getLiteral(
      context, SmallVector<Type>(registersPerBlock,
                                 halfAccumulator ? b.getI32Type()
                                                 : cType.getElementType()));
  // A registers are packed before the fence: wgmma must not see its
  // operand registers written between the fence and the instructions.
  SmallVector<SmallVector<Value>> aPacked;
  if (aFragment)
    for (int64_t slice = 0; slice < partition->rowsPerGroup / 64 * steps;
         ++slice)
      aPacked.push_back(packOperandA(b, loc, op.getA(), slice, elementBytes));
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  SmallVector<Value> results;
  // Each operand's descriptor is made once and every k step adds its
  // offset to it.
  Descriptor bBase = makeDescriptor(b, loc, bAddress, bGeometry.swizzleBytes,
                                    bGeometry.getLeadingBytes());
  Descriptor aBase =
      aAddress ? makeDescriptor(b, loc, aAddress, aGeometry->swizzleBytes,
                                aGeometry->getLeadingBytes())
               : Descriptor();
  for (int64_t block = 0; block < partition->rowsPerGroup / 64; ++block) {
    // A cleared accumulator's old values are never read (scale-d = 0):
    // passing them would keep them live, and whatever the previous
    // iteration last stored into the fragment computed, up to the next gemm.
    Value accumulator = LLVM::PoisonOp::create(b, loc, structType);
    for (int64_t i = 0; i < registersPerBlock && !op.getClearAccum(); ++i) {
      auto value = [&](int64_t j) -> Value {
        return memref::LoadOp::create(
            b, loc, regs[block * perBlock + i * perRegister + j]);
      };
      accumulator = LLVM::InsertValueOp::create(
          b, loc, accumulator,
          halfAccumulator ? packHalves(b, loc, value(0), value(1)) : value(0),
          i);
    }
    for (int64_t step = 0; step < steps; ++step) {
      Value bDescriptor =
          stepDescriptor(b, loc, bBase, bGeometry.getOffset(0, step));
      bool overwrite = op.getClearAccum() && step == 0;
      if (aFragment) {
        accumulator = emitWgmmaWithRegisterA(
            b, loc, accumulator, structType, aPacked[block * steps + step],
            bDescriptor, groupN, elementType, overwrite, !bKMajor);
        continue;
      }
      Value aDescriptor =
          stepDescriptor(b, loc, aBase, aGeometry->getOffset(block * 64, step));
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
          // row A and col B are K-major; the others set the trans bits.
          NVVM::MMALayoutAttr::get(context, aKMajor ? NVVM::MMALayout::row
                                                    : NVVM::MMALayout::col),
          NVVM::MMALayoutAttr::get(context, bKMajor ? NVVM::MMALayout::col
                                                    : NVVM::MMALayout::row),
          NVVM::MMAIntOverflowAttr());
    }
    results.push_back(accumulator);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  // An overlapped gemm's group stays in flight until its loop waits for it
  // (one iteration later); the loop stores its accumulators.
  if (asyncGemms.contains(op)) {
    gemmAccumulators[op] = results;
    return success();
  }
  // A deferred gemm keeps its group in flight; the loop waits after it.
  // An asynchronous one is waited for by a later tile.wait_gemms; its
  // accumulators are the wgmma's results already (ptxas keeps their
  // registers untouched until the wait).
  if (!op.getAsync())
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc,
                                       deferredGemms.contains(op) ? 1 : 0);
  storeGemmAccumulators(b, op, results);
  return success();
}

//===----------------------------------------------------------------------===//
// mma.sync (sm_80 and newer without wgmma)
//===----------------------------------------------------------------------===//

/// Each warp computes its piece of C (see getMmaSyncPartition) as 16x8
/// tiles with mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: per k16
/// step, thread (g = lane / 4, q = lane % 4) loads the 32-bit pairs
/// A[r, c..c+1] for r in {g, g+8} and c in {2q, 2q+8} of each 16-row tile
/// and B[n, c..c+1] for n = g of each 8-column tile, from the swizzled shared
/// tiles (the swizzle keeps the eight rows of a load in different banks). A
/// K pair of a K-major operand is one 32-bit load; of a transposed one, two.
LogicalResult KernelLowering::lowerMmaSyncGemm(GemmOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  MLIRContext *context = b.getContext();
  auto aType = cast<SharedType>(op.getA().getType());
  auto cType = cast<FragmentType>(op.getC().getType());
  Type elementType = aType.getElementType();
  SmallVector<int64_t> cShape = *cType.getTileShape().getStaticSizes();
  bool aKMajor = !op.getTransposeA(), bKMajor = op.getTransposeB();
  int64_t k = *aType.getTileShape().getStaticSize(aKMajor ? 1 : 0);
  std::string reason;
  FailureOr<MmaSyncPartition> partition = getMmaSyncPartition(
      cShape[0], cShape[1], threads, op.getPolicy(), reason);
  if (failed(partition))
    return op.emitOpError(reason);
  if (cType.getLayout() != getMmaSyncAccumulatorLayout(context, *partition))
    return op.emitOpError("accumulator does not have the mma.sync layout of "
                          "target ")
           << chip << "; run tile-assign-layouts with chip=" << chip;
  if (!fencedGemms.contains(op))
    gpu::BarrierOp::create(b, loc); // other threads' shared writes

  auto constant = [&](int64_t value) { return index(b, value); };
  Value warp = arith::DivUIOp::create(b, loc, threadId, constant(32));
  Value lane = arith::RemUIOp::create(b, loc, threadId, constant(32));
  Value group = arith::DivUIOp::create(b, loc, lane, constant(4));
  Value quad = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, lane, constant(4)), constant(2));
  Value warpRow = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, warp, constant(partition->warpsN)),
      constant(partition->rowsPerWarp));
  Value warpCol = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, warp, constant(partition->warpsN)),
      constant(partition->colsPerWarp));
  Type i32 = b.getI32Type();
  auto pairType = VectorType::get({2}, elementType);
  // The 32-bit pair of elements (mn, k) and (mn, k + 1) of an operand: one
  // load from a K-major tile, two from a transposed one ([K, M] / [K, N]).
  auto loadPair = [&](Value tile, bool kMajor, Value mn, int64_t mnOffset,
                      Value kIndex, int64_t kOffset) -> Value {
    Value r = arith::AddIOp::create(b, loc, mn, constant(mnOffset));
    Value c = arith::AddIOp::create(b, loc, kIndex, constant(kOffset));
    Value storage = memrefs.lookup(tile);
    Value pair;
    if (kMajor) {
      pair = vector::LoadOp::create(b, loc, pairType, storage,
                                    sharedIndices(b, tile, {r, c}));
    } else {
      Value next = arith::AddIOp::create(b, loc, c, constant(1));
      pair = vector::FromElementsOp::create(
          b, loc, pairType,
          ValueRange{memref::LoadOp::create(b, loc, storage,
                                            sharedIndices(b, tile, {c, r})),
                     memref::LoadOp::create(
                         b, loc, storage, sharedIndices(b, tile, {next, r}))});
    }
    return LLVM::BitcastOp::create(b, loc, i32, pair);
  };

  int64_t tilesM = partition->rowsPerWarp / 16;
  int64_t tilesN = partition->colsPerWarp / 8;
  SmallVector<Value> &regs = registers[op.getC()];
  // Four accumulator values per 16x8 tile: four f32 registers, or two
  // 32-bit registers of two f16 each.
  Type accumulatorType = cType.getElementType();
  bool halfAccumulator = accumulatorType.isF16();
  SmallVector<Value> accumulators;
  for (Value reg : regs)
    accumulators.push_back(
        op.getClearAccum() ? zero(b, accumulatorType)
                           : memref::LoadOp::create(b, loc, reg).getResult());
  std::string inputs = elementType.isBF16() ? "bf16.bf16" : "f16.f16";
  std::string ptx =
      halfAccumulator
          ? "mma.sync.aligned.m16n8k16.row.col.f16." + inputs +
                ".f16 {$0, $1}, {$2, $3, $4, $5}, {$6, $7}, {$8, $9};"
          : "mma.sync.aligned.m16n8k16.row.col.f32." + inputs +
                ".f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, "
                "{$10, $11, $12, $13};";
  std::string constraints = halfAccumulator ? "=r,=r,r,r,r,r,r,r,r,r"
                                            : "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f";
  int64_t resultRegisters = halfAccumulator ? 2 : 4;
  auto resultType = LLVM::LLVMStructType::getLiteral(
      context, SmallVector<Type>(resultRegisters,
                                 halfAccumulator ? i32 : accumulatorType));
  for (int64_t step = 0; step < k / 16; ++step) {
    Value kBase = arith::AddIOp::create(b, loc, quad, constant(16 * step));
    SmallVector<SmallVector<Value, 4>> aFragments, bFragments;
    for (int64_t mi = 0; mi < tilesM; ++mi) {
      Value row = arith::AddIOp::create(
          b, loc, arith::AddIOp::create(b, loc, warpRow, group),
          constant(16 * mi));
      aFragments.push_back({loadPair(op.getA(), aKMajor, row, 0, kBase, 0),
                            loadPair(op.getA(), aKMajor, row, 8, kBase, 0),
                            loadPair(op.getA(), aKMajor, row, 0, kBase, 8),
                            loadPair(op.getA(), aKMajor, row, 8, kBase, 8)});
    }
    for (int64_t ni = 0; ni < tilesN; ++ni) {
      Value column = arith::AddIOp::create(
          b, loc, arith::AddIOp::create(b, loc, warpCol, group),
          constant(8 * ni));
      bFragments.push_back({loadPair(op.getB(), bKMajor, column, 0, kBase, 0),
                            loadPair(op.getB(), bKMajor, column, 0, kBase, 8)});
    }
    for (int64_t mi = 0; mi < tilesM; ++mi)
      for (int64_t ni = 0; ni < tilesN; ++ni) {
        int64_t first = (mi * tilesN + ni) * 4;
        SmallVector<Value> operands(aFragments[mi].begin(),
                                    aFragments[mi].end());
        operands.append(bFragments[ni].begin(), bFragments[ni].end());
        if (halfAccumulator)
          for (int64_t r = 0; r < 4; r += 2)
            operands.push_back(packHalves(b, loc, accumulators[first + r],
                                          accumulators[first + r + 1]));
        else
          operands.append(accumulators.begin() + first,
                          accumulators.begin() + first + 4);
        Value result = LLVM::InlineAsmOp::create(
                           b, loc, resultType, operands, ptx, constraints,
                           /*has_side_effects=*/false, /*is_align_stack=*/false,
                           LLVM::TailCallKind::None, LLVM::AsmDialectAttr(),
                           /*operand_attrs=*/ArrayAttr())
                           .getResult(0);
        for (int64_t r = 0; r < resultRegisters; ++r) {
          Value word = LLVM::ExtractValueOp::create(b, loc, result, r);
          if (!halfAccumulator) {
            accumulators[first + r] = word;
            continue;
          }
          std::tie(accumulators[first + 2 * r],
                   accumulators[first + 2 * r + 1]) =
              unpackHalves(b, loc, word);
        }
      }
  }
  for (auto [reg, value] : llvm::zip(regs, accumulators))
    memref::StoreOp::create(b, loc, value, reg);
  return success();
}
