//===- ElideProxyFences.cpp - Drop fences that order nothing new ----------===//
//
// A forward "may have accessed shared memory since the last fence" analysis
// over each kernel's control-flow graph, on its LLVM form: a
// `fence.proxy.async.shared::cta` reached on every path without such an
// access is erased (see the pass description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "hisa/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

namespace hisa {
#define GEN_PASS_DEF_TILEELIDEPROXYFENCES
#include "hisa/Conversion/Passes.h.inc"
} // namespace hisa

using namespace mlir;

namespace {

/// What an op means for the fences after it.
enum class FenceEffect {
  /// Leaves the thread's view of shared memory as it is.
  None,
  /// Accesses shared memory through the generic proxy, or makes other
  /// accesses visible to this thread (an mbarrier wait), or is not known.
  Access,
  /// An async-proxy fence of the CTA's shared memory.
  Fence,
};

/// Whether `address` may point into shared memory: address space 3, or a
/// generic pointer not derived from a private alloca.
bool mayAddressSharedMemory(Value address) {
  while (true) {
    auto type = dyn_cast<LLVM::LLVMPointerType>(address.getType());
    if (!type)
      return true;
    switch (type.getAddressSpace()) {
    case 0:
      break; // generic: follow it to its origin
    case 3:
    case 7: // shared::cluster
      return true;
    default:
      return false; // global, constant, local, parameter
    }
    Operation *def = address.getDefiningOp();
    if (!def)
      return true;
    if (isa<LLVM::AllocaOp>(def))
      return false;
    if (auto gep = dyn_cast<LLVM::GEPOp>(def)) {
      address = gep.getBase();
      continue;
    }
    if (auto cast = dyn_cast<LLVM::AddrSpaceCastOp>(def)) {
      address = cast.getArg();
      continue;
    }
    return true;
  }
}

/// Opcodes of inline PTX that touch no shared-memory data: arithmetic and
/// moves, branches, barriers and mbarrier arrivals (synchronization, not
/// data), wgmma (async proxy) and register reconfiguration. Anything else,
/// mbarrier waits included, counts as an access.
bool isInertPtxOpcode(StringRef opcode) {
  static constexpr StringLiteral kInert[] = {
      "wgmma.",         "bar.sync",     "bar.arrive",     "barrier.sync",
      "barrier.arrive", "barrier.cta.", "mov.",           "setp.",
      "selp.",          "bra",          "elect.",         "setmaxnreg.",
      "createpolicy.",  "shfl.",        "vote.",          "griddepcontrol.",
      "cvt.",           "add.",         "sub.",           "mul.",
      "and.",           "or.",          "mbarrier.arrive"};
  if (opcode.starts_with("mbarrier.arrive") &&
      opcode.contains(".shared::cluster"))
    return false; // (remote arrivals: keep them conservative)
  return llvm::any_of(
      kInert, [&](StringRef inert) { return opcode.starts_with(inert); });
}

FenceEffect classifyInlinePtx(LLVM::InlineAsmOp op) {
  SmallVector<StringRef> lines;
  StringRef(op.getAsmString()).split(lines, '\n');
  for (StringRef line : lines) {
    SmallVector<StringRef> statements;
    line.split(statements, ';');
    for (StringRef statement : statements) {
      statement = statement.trim();
      if (statement.empty() || statement == "{" || statement == "}" ||
          statement.starts_with(".reg") || statement.ends_with(":"))
        continue;
      if (statement.starts_with("@")) // a guard predicate
        statement = statement.split(' ').second.trim();
      StringRef opcode = statement.split(' ').first.trim();
      if (!isInertPtxOpcode(opcode))
        return FenceEffect::Access;
    }
  }
  return FenceEffect::None;
}

FenceEffect classify(Operation *op) {
  if (auto fence = dyn_cast<NVVM::FenceProxyOp>(op)) {
    if (fence.getKind() == NVVM::ProxyKind::async_shared &&
        fence.getSpace() == NVVM::SharedSpace::shared_cta)
      return FenceEffect::Fence;
    return FenceEffect::None; // another proxy's fence orders none of these
  }
  if (isa<LLVM::AllocaOp>(op)) // private memory
    return FenceEffect::None;
  Value address =
      llvm::TypeSwitch<Operation *, Value>(op)
          .Case([](LLVM::LoadOp load) { return load.getAddr(); })
          .Case([](LLVM::StoreOp store) { return store.getAddr(); })
          .Case([](LLVM::AtomicRMWOp rmw) { return rmw.getPtr(); })
          .Case([](LLVM::AtomicCmpXchgOp cmpxchg) { return cmpxchg.getPtr(); })
          .Default([](Operation *) { return Value(); });
  if (address)
    return mayAddressSharedMemory(address) ? FenceEffect::Access
                                           : FenceEffect::None;
  if (auto asmOp = dyn_cast<LLVM::InlineAsmOp>(op))
    return classifyInlinePtx(asmOp);
  if (auto intrinsic = dyn_cast<LLVM::CallIntrinsicOp>(op)) {
    StringRef name = intrinsic.getIntrin();
    bool inert = name.starts_with("llvm.nvvm.barrier") ||
                 name.starts_with("llvm.nvvm.ex2.") ||
                 name.starts_with("llvm.nvvm.read.ptx.sreg.");
    return inert ? FenceEffect::None : FenceEffect::Access;
  }
  // Synchronization, the async proxy's own instructions and register-only
  // warp collectives (NVVM declares no effects for the latter).
  if (isa<NVVM::BarrierOp, NVVM::Barrier0Op, NVVM::BarrierArriveOp,
          NVVM::SyncWarpOp, NVVM::ShflOp, NVVM::VoteSyncOp,
          NVVM::WgmmaFenceAlignedOp, NVVM::WgmmaGroupSyncAlignedOp,
          NVVM::WgmmaWaitGroupSyncOp, NVVM::MBarrierArriveOp,
          NVVM::SetMaxRegisterOp, NVVM::GriddepcontrolOp>(op))
    return FenceEffect::None;
  if (op->getNumRegions() == 0 && isMemoryEffectFree(op))
    return FenceEffect::None;
  return FenceEffect::Access;
}

/// Whether `block` leaves an access unfenced, given whether one is
/// unfenced on entry; erases the fences it finds redundant if `erase`.
bool transfer(Block &block, bool unfenced, bool erase) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    switch (classify(&op)) {
    case FenceEffect::None:
      break;
    case FenceEffect::Access:
      unfenced = true;
      break;
    case FenceEffect::Fence:
      if (!unfenced && erase)
        op.erase();
      unfenced = false;
      break;
    }
  }
  return unfenced;
}

void elideRedundantFences(Region &body) {
  if (body.empty())
    return;
  // Least fixed point of "unfenced on entry": false everywhere but the
  // entry block (what ran before the kernel is not known here), raised
  // until stable.
  llvm::DenseMap<Block *, bool> unfencedOnEntry;
  llvm::SetVector<Block *> worklist;
  for (Block &block : body)
    unfencedOnEntry[&block] = false;
  unfencedOnEntry[&body.front()] = true;
  for (Block &block : body)
    worklist.insert(&block);
  while (!worklist.empty()) {
    Block *block = worklist.pop_back_val();
    bool unfencedOnExit =
        transfer(*block, unfencedOnEntry[block], /*erase=*/false);
    if (!unfencedOnExit)
      continue;
    for (Block *successor : block->getSuccessors())
      if (!unfencedOnEntry[successor]) {
        unfencedOnEntry[successor] = true;
        worklist.insert(successor);
      }
  }
  for (Block &block : body)
    transfer(block, unfencedOnEntry[&block], /*erase=*/true);
}

struct TileElideProxyFencesPass
    : public hisa::impl::TileElideProxyFencesBase<TileElideProxyFencesPass> {
  void runOnOperation() override {
    getOperation().walk(
        [](LLVM::LLVMFuncOp func) { elideRedundantFences(func.getBody()); });
  }
};

} // namespace
