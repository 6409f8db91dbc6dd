//===- PipelinedOp.cpp - Lower tile.pipelined (cp.async and TMA) ---------===//
//
// A pipelined loop with S > 1 stages fills S rotating buffers per staged
// tile: cp.async pieces of every thread (wait_group), or TMA boxes issued by
// thread 0 that complete on the stage's mbarrier (try_wait.parity). See
// convert-tile-to-gpu's description for the schedule.
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"

#include "hisa/Dialect/Tile/IR/TensorMaps.h"
#include "hisa/Dialect/Tile/IR/TileLimits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace hisa::tile;

/// Waits until the phase of parity `parity` (i32) of `mbarrier` (a shared
/// pointer) completes: mbarrier.try_wait.parity in a loop. The branch back
/// is a plain `bra`, not `bra.uni` (upstream's lowering): lanes of a warp
/// may see the phase complete at different tries.
void hisa::tile::waitForPhase(OpBuilder &b, Location loc, Value mbarrier,
                              Value parity) {
  // The suspend-time hint of each try, in ns (as CUTLASS uses).
  constexpr int64_t kSuspendHintNs = 10000000;
  Value address =
      LLVM::PtrToIntOp::create(b, loc, b.getI32Type(), mbarrier).getResult();
  std::string ptx =
      "{\n.reg .pred done;\nwait:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1, " +
      std::to_string(kSuspendHintNs) + ";\n@!done bra wait;\n}";
  LLVM::InlineAsmOp::create(b, loc, TypeRange(), ValueRange{address, parity},
                            ptx, "r,r,~{memory}", /*has_side_effects=*/true,
                            /*is_align_stack=*/false, LLVM::TailCallKind::None,
                            LLVM::AsmDialectAttr(),
                            /*operand_attrs=*/ArrayAttr());
}

/// The parity (i32) of round `iteration` / `stages` of a stage's mbarrier.
static Value getRoundParity(OpBuilder &b, Location loc, Value iteration,
                            int64_t stages) {
  Value round = arith::DivSIOp::create(
      b, loc, iteration, arith::ConstantIndexOp::create(b, loc, stages));
  return arith::IndexCastOp::create(
      b, loc, b.getI32Type(),
      arith::AndIOp::create(b, loc, round,
                            arith::ConstantIndexOp::create(b, loc, 1)));
}

void KernelLowering::arriveOncePerWarp(OpBuilder &b, Value mbarrier) {
  Location loc = func.getLoc();
  NVVM::SyncWarpOp::create(
      b, loc, arith::ConstantIntOp::create(b, loc, b.getI32Type(), -1));
  Value lane = arith::RemUIOp::create(b, loc, threadId, index(b, 32));
  Value leader = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                       index(b, 0));
  emitIf(b, leader, [&](OpBuilder &arriving) {
    NVVM::MBarrierArriveOp::create(
        arriving, loc, Type(), mbarrier, Value(),
        NVVM::MemScopeKindAttr::get(arriving.getContext(),
                                    NVVM::MemScopeKind::CTA));
  });
}

/// `op`'s upper bound, or its lower bound when a step computed at run time
/// is not positive (scf.for would never reach the upper bound; constant
/// steps are checked by the verifier): no iteration then.
static Value getEffectiveUpperBound(OpBuilder &b, Location loc,
                                    PipelinedOp op) {
  Value step = op.getStep(), upper = op.getUpperBound();
  if (matchPattern(step, m_Constant()))
    return upper;
  Value positive = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::sgt, step,
      arith::ConstantIndexOp::create(b, loc, 0).getResult());
  return arith::SelectOp::create(b, loc, positive, upper, op.getLowerBound());
}

void KernelLowering::markGemmsFencedByPipeline(PipelinedOp loop) {
  loop.getBody().walk([&](GemmOp gemm) {
    // (The warpgroup count is the launch's only outside tile.per_warpgroup.)
    std::optional<int64_t> settledWarpgroups;
    if (elideSync)
      settledWarpgroups = warpgroup ? 0 : threads / kWarpgroupThreads;
    if (isFencedByPipeline(loop, gemm, settledWarpgroups))
      fencedGemms.insert(gemm);
  });
}

/// Whether `body` has a tile.gemm, at any depth (a gemm nested in scf.if or
/// tile.per_warpgroup may count on the iteration's fence too).
static bool containsGemm(Block &body) {
  return body.walk([](GemmOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

/// Whether tile op `op` writes a shared tile other than by an atomic or a
/// scan (those alone never needed a barrier at the top of an iteration).
static bool writesSharedTile(Operation *op) {
  if (isa<AtomicOp, ScanOp>(op))
    return false;
  Value dest = getWrittenTile(op);
  return dest && isa<SharedType>(dest.getType());
}

/// Whether the shared writes of a pipelined body (`writers`, not its staged
/// copies) need a block barrier at the top of every iteration. They do not
/// when nothing in the body reads the tiles they write (so no thread can
/// overwrite what a slower one still reads, and wgmma never reads them) and
/// each writer ends with a block barrier of its own (a tile.parallel that
/// writes shared memory; a fill, clear or cast into it), which orders one
/// iteration's writes before the next's, or is a parallel whose iterations
/// write disjoint elements (markDeferredBarriers), which need no order.
/// Example: HISA stage 2 storing each tile's selection keys, read only after
/// the loop.
static bool writesNeedIterationBarrier(Block &body,
                                       ArrayRef<Operation *> writers) {
  SmallPtrSet<Value, 4> written;
  for (Operation *writer : writers) {
    // A fragment stored into shared memory waits for the previous
    // iteration's readers itself, and fences for wgmma before its trailing
    // barrier where its tile is a (swizzled) wgmma operand; a tile no gemm
    // reads needs no fence.
    if (auto copy = dyn_cast<CopyOp>(writer);
        copy && guardsOwnSharedWrites(copy)) {
      AllocOp alloc = getRootAlloc(copy.getDest());
      bool fenced = alloc && alloc->hasAttr("tile.swizzle");
      bool readByGemm =
          body.walk([&](GemmOp gemm) {
                return mayShareBytes(gemm.getA(), copy.getDest()) ||
                               mayShareBytes(gemm.getB(), copy.getDest())
                           ? WalkResult::interrupt()
                           : WalkResult::advance();
              })
              .wasInterrupted();
      if (fenced || !readByGemm)
        continue;
    }
    bool barriered = isa<FillOp, ClearOp, CastOp, ScanOp>(writer) ||
                     writer->getParentOfType<ParallelOp>();
    Value tile = getViewedTile(getWrittenTile(writer));
    if (!barriered || !tile.getDefiningOp<AllocOp>())
      return true; // no barrier of its own, or a tile.pick: assume the worst
    written.insert(tile);
  }
  WalkResult reads = body.walk([&](Operation *inside) {
    if (isa<AllocOp, ViewOp>(inside))
      return WalkResult::advance();
    // (A scan's destination may be its source: it reads it too.)
    Value dest = isa<ScanOp>(inside) ? Value() : getWrittenTile(inside);
    for (Value operand : inside->getOperands()) {
      if (operand == dest)
        continue;
      Value tile = getViewedTile(operand);
      if (written.contains(tile))
        return WalkResult::interrupt();
      if (auto pick = tile.getDefiningOp<PickOp>())
        for (Value candidate : pick.getTiles())
          if (written.contains(candidate))
            return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return reads.wasInterrupted();
}

/// Clones into `b` the ops of `body` that `value` depends on, with the
/// induction variable `inductionVar` replaced by `iteration`.
/// The clones are appended to `created`, in order.
static Value cloneSlice(OpBuilder &b, Value value, Block &body,
                        Value inductionVar, Value iteration, IRMapping &mapping,
                        SmallVectorImpl<Operation *> &created) {
  if (Value mapped = mapping.lookupOrNull(value))
    return mapped;
  if (value == inductionVar)
    return iteration;
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != &body)
    return value; // defined before the loop
  for (Value operand : def->getOperands())
    mapping.map(operand, cloneSlice(b, operand, body, inductionVar, iteration,
                                    mapping, created));
  Operation *clone = b.clone(*def, mapping);
  created.push_back(clone);
  return clone->getResult(cast<OpResult>(value).getResultNumber());
}

bool hisa::tile::isTmaCopy(CopyOp copy) { return copy->hasAttr(kTmaAttrName); }

SmallVector<CopyOp> hisa::tile::getStagedCopies(PipelinedOp loop) {
  SmallVector<CopyOp> copies;
  if (!stagesCopies(loop))
    return copies;
  for (auto copy : loop.getBody().front().getOps<CopyOp>())
    if (isa<GlobalType>(copy.getSource().getType()) &&
        isa<SharedType>(copy.getDest().getType()))
      copies.push_back(copy);
  return copies;
}

FailureOr<KernelLowering::StagedCopies>
KernelLowering::analyzeStagedCopies(PipelinedOp op) {
  Block &body = op.getBody().front();
  StagedCopies staged;
  // Producers: global-to-shared copies at the top level of the body.
  staged.copies = getStagedCopies(op);
  for (CopyOp copy : staged.copies) {
    if (copy.getDest().getDefiningOp<PickOp>())
      return copy.emitOpError("copies into a tile.pick in a pipelined loop; "
                              "a loop's stage buffers cannot be picked (copy "
                              "into the tile.alloc itself)");
    auto alloc = copy.getDest().getDefiningOp<AllocOp>();
    auto planned = alloc ? alloc->getAttrOfType<IntegerAttr>("tile.stages")
                         : IntegerAttr();
    int64_t copyStages = getCopyStages(copy, op);
    if (!planned || planned.getInt() < copyStages ||
        !alloc->hasAttr("tile.stage_bytes"))
      return copy.emitOpError("is not planned for ")
             << copyStages << " stages; run tile-plan-shared-memory first";
    // Copies marked by tile-use-tma are issued as one cp.async.bulk.tensor
    // per box and complete on their stage's mbarrier; the others are
    // cp.async pieces.
    if (!isTmaCopy(copy))
      continue;
    if (!tensorMaps.count(copy))
      return copy.emitOpError("is marked tile.tma, but TMA cannot copy it; "
                              "run tile-use-tma (its `report` option says "
                              "why a copy stays on cp.async)");
    staged.anyTma = true;
    staged.tmaBytes += getTileBytes(cast<SharedType>(copy.getDest().getType()));
  }
  staged.allTma = staged.anyTma && llvm::all_of(staged.copies, isTmaCopy);
  // Whether the body itself writes shared memory (then an iteration may
  // need a fence and a barrier at its top).
  // Writes in an unsynchronized tile.per_warpgroup body are the body's own
  // business (it synchronizes its warpgroups itself).
  SmallVector<Operation *> writers, atomicWriters;
  body.walk<WalkOrder::PreOrder>([&](Operation *inside) {
    if (auto region = dyn_cast<PerWarpgroupOp>(inside);
        region && region.getUnsynchronized())
      return WalkResult::skip();
    if (auto copy = dyn_cast<CopyOp>(inside);
        copy && llvm::is_contained(staged.copies, copy))
      return WalkResult::advance();
    if (writesSharedTile(inside))
      writers.push_back(inside);
    // Atomics and scans write shared tiles too (each ends with a barrier:
    // the parallel around the atomic, the scan itself).
    if (auto atomic = dyn_cast<AtomicOp>(inside);
        atomic && isa<SharedType>(atomic.getDest().getType()))
      atomicWriters.push_back(atomic);
    if (auto scan = dyn_cast<ScanOp>(inside))
      atomicWriters.push_back(scan);
    return WalkResult::advance();
  });
  staged.bodyWritesShared = !writers.empty();
  // (A body whose only shared writes are atomics or scans keeps what it had
  // before: no barrier at the top of an iteration.)
  writers.append(atomicWriters);
  staged.writesNeedIterationBarrier =
      staged.bodyWritesShared && writesNeedIterationBarrier(body, writers);
  return staged;
}

/// Moves a pipelined op's body, minus its staged copies (lowered already as
/// the stages' issue code), to the end of `loop`'s body with the induction
/// variable replaced, and lowers it there (the plain and the
/// warp-specialized consumers alike).
LogicalResult KernelLowering::lowerBodyInLoop(Block &body,
                                              ArrayRef<CopyOp> producers,
                                              scf::ForOp loop,
                                              Value inductionVar) {
  body.getTerminator()->erase();
  for (CopyOp copy : producers)
    copy.erase();
  Block *loopBody = loop.getBody();
  // Only the body's own ops: the issue code before them is lowered already.
  SmallVector<Operation *> roots;
  for (Operation &innerOp : body.getOperations())
    roots.push_back(&innerOp);
  loopBody->getOperations().splice(std::prev(loopBody->end()),
                                   body.getOperations());
  inductionVar.replaceAllUsesWith(loop.getInductionVar());
  for (Operation *root : roots)
    if (failed(lowerNested(root, nullptr)))
      return failure();
  return success();
}

LogicalResult KernelLowering::lowerPipelined(PipelinedOp op, OpBuilder &b) {
  if (op.getWarpSpecialized())
    return lowerWarpSpecialized(op, b);
  Location loc = op.getLoc();
  Block &body = op.getBody().front();
  int64_t stages = op.getNumStages();
  Value inductionVar = body.getArgument(0);

  FailureOr<StagedCopies> staged = analyzeStagedCopies(op);
  if (failed(staged))
    return failure();
  SmallVector<CopyOp> &producers = staged->copies;
  bool anyTma = staged->anyTma, allTma = staged->allTma;
  int64_t tmaBytes = staged->tmaBytes;
  bool bodyWritesShared = staged->bodyWritesShared;
  // A gemm that only accumulates along the loop (the last op of the body,
  // its accumulator used by nothing else in the body) need not wait for its
  // wgmma: one group stays in flight while the next iteration's copies are
  // issued. The copies for iteration k + S - 1 then go after the gemm of
  // iteration k, once the wgmma of k - 1 (which read that buffer) is done.
  GemmOp deferred = getDeferrableGemm(op);
  // Such a loop fed by TMA alone (no shared writes in the body) releases a
  // stage through its "empty" mbarrier instead of a block barrier at the
  // end of every iteration: each warp arrives once its wgmma no longer
  // reads the stage, and thread 0 waits for all of them before refilling
  // it, so the other warps run on. (Measured on the H200: +3 points for the
  // bf16 gemm; the MQA kernels, whose epilogue follows the gemm, lose 2-4
  // points with it and keep the barrier.)
  bool releaseByMbarrier = allTma && !bodyWritesShared && deferred;
  Value mbarriers; // !llvm.ptr<3> to the "full" mbarrier of stage 0
  if (anyTma) {
    FailureOr<Value> initialized =
        initStageMbarriers(op, b, releaseByMbarrier ? threads / 32 : 0);
    if (failed(initialized))
      return failure();
    mbarriers = *initialized;
  }
  // Issues the producers of iteration `iteration` into buffer `stage`;
  // with `releaseParity`, thread 0 first waits (when `releaseNeeded`) for
  // that phase of the stage's empty mbarrier.
  auto issue = [&](OpBuilder &nested, Value iteration, Value stage,
                   Value releaseNeeded = Value(),
                   Value releaseParity = Value()) -> LogicalResult {
    // The offsets of all producers are cloned together, so that a slice
    // they share (e.g. a block index read from memory) is cloned and
    // lowered once. The slice may hold tile ops: they are lowered with the
    // offsets kept as operands of a placeholder, where their replacements
    // show up.
    IRMapping mapping;
    SmallVector<Operation *> created;
    SmallVector<Value> offsets;
    // A gather's first row position counts as one more offset.
    auto offsetsOf = [](CopyOp copy) {
      SmallVector<Value> values(copy.getSourceOffsets());
      if (Value first = copy.getRowOffset())
        values.push_back(first);
      return values;
    };
    for (CopyOp copy : producers)
      for (Value offset : offsetsOf(copy))
        offsets.push_back(cloneSlice(nested, offset, body, inductionVar,
                                     iteration, mapping, created));
    auto holder =
        UnrealizedConversionCastOp::create(nested, loc, TypeRange(), offsets);
    for (Operation *clone : created)
      if (isa<TileDialect>(clone->getDialect()) &&
          failed(lowerNested(clone, nullptr)))
        return failure();
    offsets.assign(holder->operand_begin(), holder->operand_end());
    holder->erase();
    ArrayRef<Value> remaining = offsets;
    SmallVector<std::pair<CopyOp, ArrayRef<Value>>> tmaCopies;
    for (CopyOp copy : producers) {
      size_t count = offsetsOf(copy).size();
      if (isTmaCopy(copy))
        tmaCopies.push_back({copy, remaining.take_front(count)});
      else if (failed(emitAsyncCopy(copy, nested, remaining.take_front(count),
                                    stage)))
        return failure();
      remaining = remaining.drop_front(count);
    }
    if (tmaCopies.empty())
      return success();
    Value release;
    if (releaseParity)
      release = getEmptyStageMbarrier(nested, mbarriers, stage, stages);
    return issueTmaStage(nested, tmaCopies, stage,
                         getStageMbarrier(nested, mbarriers, stage), tmaBytes,
                         releaseNeeded, release, releaseParity);
  };

  auto commit = [&](OpBuilder &nested) {
    if (!allTma)
      NVVM::CpAsyncCommitGroupOp::create(nested, loc);
  };

  Value lower = op.getLowerBound(), step = op.getStep();
  Value upper = getEffectiveUpperBound(b, loc, op);
  // The stage buffers may reuse the bytes of tiles read before the loop
  // (tile-plan-shared-memory); cp.async copies start without a barrier, so
  // slower threads could still be reading them. (TMA stages start after
  // the barrier that publishes their mbarriers.)
  if (!anyTma) {
    SmallPtrSet<Value, 4> staged;
    for (CopyOp copy : producers)
      staged.insert(copy.getDest());
    if (mayOverwriteWhatOthersRead(op, staged))
      barrier(b);
  }
  // Prologue: the first stages - 1 iterations' copies.
  for (int64_t s = 0; s + 1 < stages; ++s) {
    Value iteration = arith::AddIOp::create(
        b, loc, lower, arith::MulIOp::create(b, loc, step, index(b, s)));
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                          iteration, upper);
    LogicalResult result = success();
    emitIf(b, inRange, [&](OpBuilder &nested) {
      result = issue(nested, iteration, index(nested, s));
    });
    if (failed(result))
      return failure();
    commit(b);
  }

  auto loop = scf::ForOp::create(b, loc, lower, upper, step);
  OpBuilder inner = OpBuilder::atBlockBegin(loop.getBody());
  Value iv = loop.getInductionVar();
  SmallVector<std::pair<Value, Value>> savedViews;
  SmallVector<Operation *> issueOps;
  Value iterationNumber, refilledStage;
  if (stages > 1) {
    // Iteration k fills buffer (k + stages - 1) % stages, then waits for
    // its own buffer k % stages.
    Value k = arith::DivSIOp::create(
        inner, loc, arith::SubIOp::create(inner, loc, iv, lower), step);
    Value ahead = arith::AddIOp::create(
        inner, loc, iv,
        arith::MulIOp::create(inner, loc, step, index(inner, stages - 1)));
    Value aheadStage = arith::RemSIOp::create(
        inner, loc,
        arith::AddIOp::create(inner, loc, k, index(inner, stages - 1)),
        index(inner, stages));
    Value inRange = arith::CmpIOp::create(inner, loc, arith::CmpIPredicate::slt,
                                          ahead, upper);
    // The buffer refilled here was read in iteration k - 1: released in
    // round (k - 1) / S of its empty mbarrier (none before k = 1).
    Value releaseNeeded, releaseParity;
    if (releaseByMbarrier) {
      releaseNeeded = arith::CmpIOp::create(
          inner, loc, arith::CmpIPredicate::sge, k, index(inner, 1));
      releaseParity = getRoundParity(
          inner, loc, arith::SubIOp::create(inner, loc, k, index(inner, 1)),
          stages);
    }
    LogicalResult result = success();
    Block::iterator before = std::prev(inner.getInsertionPoint());
    emitIf(inner, inRange, [&](OpBuilder &nested) {
      result = issue(nested, ahead, aheadStage, releaseNeeded, releaseParity);
    });
    if (failed(result))
      return failure();
    commit(inner);
    for (Operation &issued :
         llvm::make_range(std::next(before), inner.getInsertionPoint()))
      issueOps.push_back(&issued);
    Value stage = arith::RemSIOp::create(inner, loc, k, index(inner, stages));
    iterationNumber = k;
    refilledStage = aheadStage;
    // Deferred issue: this iteration's group is among the last S - 2.
    if (!allTma)
      NVVM::CpAsyncWaitGroupOp::create(inner, loc,
                                       deferred ? stages - 2 : stages - 1);
    if (anyTma) {
      // Phase k / S of the stage's mbarrier: its TMA boxes have landed.
      waitForPhase(inner, loc, getStageMbarrier(inner, mbarriers, stage),
                   getRoundParity(inner, loc, k, stages));
    }
    markGemmsFencedByPipeline(op);
    // With TMA alone, the mbarrier wait makes the stage visible to every
    // thread and to wgmma, and the fence and barrier before the loop cover
    // what was written before it; a body that writes shared memory itself
    // still needs them every iteration.
    if (!allTma || staged->writesNeedIterationBarrier) {
      // The staged tiles (and whatever else this thread wrote to shared
      // memory) become visible to wgmma's async proxy before the barrier,
      // so a gemm at the top of the body needs no fence and barrier of its
      // own.
      if (containsGemm(body) && hasWgmma(chip))
        fenceSharedForAsyncProxy(inner);
      gpu::BarrierOp::create(inner, loc);
    }
    for (CopyOp copy : producers) {
      Value tile = copy.getDest();
      savedViews.push_back({tile, memrefs.lookup(tile)});
      memrefs[tile] = getStageView(inner, tile, stage);
      stagedTiles.insert(tile);
    }
  }

  // The body, minus the producers, reading this iteration's buffers.
  if (failed(lowerBodyInLoop(body, producers, loop, inductionVar)))
    return failure();
  Block *loopBody = loop.getBody();
  if (stages > 1) {
    // Nobody may still read a buffer when a later iteration refills it.
    OpBuilder end(loopBody->getTerminator());
    if (!releaseByMbarrier) {
      barrier(end);
    } else {
      // The wgmma of iteration k - 1 is done (wait_group 1) in this warp's
      // warpgroup: its stage, the one refilled next, is released by one
      // arrival per warp once every lane is here.
      Value started = arith::CmpIOp::create(end, loc, arith::CmpIPredicate::sge,
                                            iterationNumber, index(end, 1));
      emitIf(end, started, [&](OpBuilder &nested) {
        arriveOncePerWarp(nested, getEmptyStageMbarrier(nested, mbarriers,
                                                        refilledStage, stages));
      });
    }
    if (deferred)
      for (Operation *issued : issueOps)
        issued->moveBefore(loopBody->getTerminator());
    for (auto [tile, view] : savedViews) {
      memrefs[tile] = view;
      stagedTiles.erase(tile);
    }
    if (!allTma)
      NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    // Every thread is done with the stages (their reads, waits and
    // arrivals) before the mbarriers are invalidated (then they may be
    // initialized again: a loop nested in another) and the buffers reused.
    if (releaseByMbarrier)
      gpu::BarrierOp::create(b, loc);
    if (anyTma)
      emitIf(b, isThreadZero(b), [&](OpBuilder &leader) {
        for (int64_t s = 0; s < (releaseByMbarrier ? 2 : 1) * stages; ++s)
          NVVM::MBarrierInvalOp::create(
              leader, loc,
              getStageMbarrier(leader, mbarriers, index(leader, s)));
      });
    if (deferred) {
      // The last wgmma of every warpgroup is done before anyone reuses the
      // stage buffers (a later loop's prologue, shared tiles that share
      // their bytes).
      NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
      gpu::BarrierOp::create(b, loc);
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Warp specialization
//===----------------------------------------------------------------------===//

/// `tile` is a shared tile.alloc itself, not a stage buffer, with no views
/// or picks of it anywhere (writes through an alias are not tracked, and an
/// alias's memref lives in the consumers' branch), and every user other than
/// a tile.load is a write `writerIsSafe` accepts.
static bool
isReadOnlySharedTile(Value tile, const llvm::DenseSet<Value> &stagedTiles,
                     llvm::function_ref<bool(Operation *)> writerIsSafe) {
  return isa<SharedType>(tile.getType()) && tile.getDefiningOp<AllocOp>() &&
         !stagedTiles.contains(tile) &&
         llvm::all_of(tile.getUsers(), [&](Operation *other) {
           if (isa<ViewOp, PickOp>(other))
             return false;
           return isa<LoadOp>(other) || writerIsSafe(other);
         });
}

FailureOr<Value> KernelLowering::cloneForProducer(OpBuilder &b, Value value,
                                                  IRMapping &mapping,
                                                  Operation *user) {
  if (Value known = mapping.lookupOrNull(value))
    return known;
  Region &consumer = roleSplit.getThenRegion();
  if (!consumer.isAncestor(value.getParentRegion()))
    return value; // a kernel argument or an entry-block value
  Operation *def = value.getDefiningOp();
  // An element of a shared tile the loop only reads (e.g. a block index
  // that says where a copy's rows start), read in the loop body: the
  // producer reads it too, in its loop. The consumers wrote it before the
  // loop, which the roles' rendezvous orders before the producer's loop;
  // writers after the loop wait for every stage, so for the producer's last
  // read.
  // (Not a peer block's element: the producer would read its own.)
  if (auto load = dyn_cast_or_null<LoadOp>(def); load && !load.getPeer()) {
    auto loop = dyn_cast<PipelinedOp>(user);
    Value tile = load.getSource();
    if (loop && loop->isAncestor(load) &&
        isReadOnlySharedTile(tile, stagedTiles, [&](Operation *writer) {
          return !loop->isAncestor(writer);
        })) {
      SmallVector<Value> indices;
      for (Value index : load.getIndices()) {
        FailureOr<Value> cloned = cloneForProducer(b, index, mapping, user);
        if (failed(cloned))
          return failure();
        indices.push_back(*cloned);
      }
      // (A gemm operand is read through its swizzle.)
      FailureOr<SmallVector<Value>> at =
          getElementIndices(load, b, tile, indices);
      if (failed(at))
        return failure();
      Value loaded = loadElements(b, memrefs.lookup(tile), *at, 1,
                                  /*checkBounds=*/false);
      mapping.map(value, loaded);
      return loaded;
    }
  }
  // A value the consumers read from a shared tile before the loop (a trip
  // count computed in the kernel): the producer reads it again after the
  // roles' rendezvous, which orders the consumers' writes before it. Only
  // when nothing writes the tile from the loop on (its later users are
  // reads), so both roles read the same value.
  bool rereadable = false;
  if (auto load = dyn_cast_or_null<memref::LoadOp>(def)) {
    Value tile;
    for (auto [candidate, memref] : memrefs)
      if (memref == load.getMemRef())
        tile = candidate;
    auto loop = dyn_cast<PipelinedOp>(user);
    rereadable =
        loop && tile &&
        isReadOnlySharedTile(tile, stagedTiles, [&](Operation *writer) {
          Operation *ancestor =
              loop->getBlock()->findAncestorOpInBlock(*writer);
          return ancestor && ancestor->isBeforeInBlock(loop);
        });
  }
  if (!def || def->getNumRegions() != 0 ||
      (!isMemoryEffectFree(def) && !rereadable) ||
      isa<TileDialect>(def->getDialect()))
    return user->emitOpError(
               "in a warp_specialized loop needs a value the producer "
               "warpgroup "
               "cannot recompute (it recomputes arithmetic of kernel "
               "arguments, block indices and the loop index, and reads "
               "shared tiles the loop does not write; this one comes from ")
           << (def ? def->getName().getStringRef()
                   : StringRef("a block argument"))
           << ")";
  for (Value operand : def->getOperands())
    if (failed(cloneForProducer(b, operand, mapping, user)))
      return failure();
  Operation *clone = b.clone(*def, mapping);
  return clone->getResult(cast<OpResult>(value).getResultNumber());
}

Operation *KernelLowering::findProducerStart(PipelinedOp loop) {
  SmallVector<Value> staged, read, pending;
  for (CopyOp copy : loop.getBody().front().getOps<CopyOp>()) {
    if (!isa<GlobalType>(copy.getSource().getType()) ||
        !isa<SharedType>(copy.getDest().getType()))
      continue;
    staged.push_back(copy.getDest());
    llvm::append_range(pending, copy.getSourceOffsets());
    if (Value rows = copy.getRowIndices())
      read.push_back(rows);
    if (Value first = copy.getRowOffset())
      pending.push_back(first);
  }
  pending.append({loop.getLowerBound(), loop.getUpperBound(), loop.getStep()});
  // The shared tiles the producer's recomputed values load from.
  DenseSet<Value> seen;
  while (!pending.empty()) {
    Value value = pending.pop_back_val();
    Operation *def = value.getDefiningOp();
    if (!seen.insert(value).second || !def)
      continue;
    def->walk([&](Operation *inner) {
      if (auto load = dyn_cast<LoadOp>(inner);
          load && isa<SharedType>(load.getSource().getType()))
        read.push_back(load.getSource());
      llvm::append_range(pending, inner->getOperands());
    });
  }
  auto conflicts = [&](Operation *op) {
    WalkResult walk = op->walk([&](Operation *inner) {
      if (isa<PipelinedOp, func::CallOp>(inner))
        return WalkResult::interrupt();
      // What is not a tile op and touches memory (griddepcontrol.wait: the
      // producer's reads must follow it) stays before the rendezvous.
      if (!isa<TileDialect>(inner->getDialect()) &&
          inner->getNumRegions() == 0 && !isMemoryEffectFree(inner))
        return WalkResult::interrupt();
      Value written;
      if (auto store = dyn_cast<StoreOp>(inner))
        written = store.getDest();
      else if (auto atomic = dyn_cast<AtomicOp>(inner))
        written = atomic.getDest();
      else if (auto copy = dyn_cast<CopyOp>(inner))
        written = copy.getDest();
      if (written && isa<GlobalType>(written.getType()))
        return WalkResult::interrupt();
      for (Value operand : inner->getOperands())
        if (isa<SharedType>(operand.getType()) &&
            llvm::any_of(llvm::concat<Value>(staged, read), [&](Value tile) {
              return mayShareBytes(operand, tile);
            }))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    return walk.wasInterrupted();
  };
  Operation *start = loop;
  for (Operation *previous = loop->getPrevNode();
       previous && !conflicts(previous); previous = previous->getPrevNode())
    start = previous;
  // Only values the consumers alone use may be computed after the
  // rendezvous: arithmetic at the start of the tail that the producer's
  // clones recompute anyway needs no overlap.
  while (start != loop && isMemoryEffectFree(start) &&
         start->getNumRegions() == 0)
    start = start->getNextNode();
  // Worth a second barrier at the loop only when the tail moves data (a
  // fill of registers is not).
  bool touchesMemory = false;
  for (Operation *op = start; op != loop; op = op->getNextNode())
    op->walk([&](Operation *inner) {
      touchesMemory |= llvm::any_of(inner->getOperandTypes(), [](Type type) {
        return isa<SharedType, GlobalType>(type);
      });
    });
  return touchesMemory ? start : loop.getOperation();
}

// The consumers (the launch's threads) run the loop body on stage k % S once
// the stage's "full" mbarrier completes its phase k / S, then each warp
// arrives on the stage's "empty" mbarrier; the producer warpgroup (threads
// past the launch's) waits for phase k / S - 1 of "empty" before refilling a
// stage, issues its copies (TMA boxes from its first thread, cp.async pieces
// from all 128, which then wait for them, fence them for the async proxy and
// arrive), and completes "full". The roles' rendezvous (named barrier 2,
// every thread) orders what the consumers wrote before the loop (index
// tiles, the mbarriers) before the producer starts.
LogicalResult KernelLowering::lowerWarpSpecialized(PipelinedOp op,
                                                   OpBuilder &b) {
  Location loc = op.getLoc();
  Block &body = op.getBody().front();
  int64_t stages = op.getNumStages();
  Value inductionVar = body.getArgument(0);
  if (!roleSplit)
    return op.emitOpError("is warp_specialized but its launch was not split "
                          "into roles");

  FailureOr<StagedCopies> staged = analyzeStagedCopies(op);
  if (failed(staged))
    return failure();
  SmallVector<CopyOp> &producers = staged->copies;
  bool anyTma = staged->anyTma, anyCpAsync = !staged->allTma;
  int64_t tmaBytes = staged->tmaBytes;

  auto offset = op->getAttrOfType<IntegerAttr>(kMbarrierOffsetAttrName);
  if (!offset)
    return op.emitOpError("has no mbarriers; run tile-plan-shared-memory "
                          "first");
  auto constantI32 = [&](OpBuilder &nested, int64_t value) -> Value {
    return arith::ConstantIntOp::create(nested, loc, nested.getI32Type(),
                                        value);
  };

  // With tile.release every copy has its own "full" and "empty" mbarriers
  // per stage (StageRelease.cpp); otherwise one pair per stage serves all.
  bool perCopy = releasesCopies(op);
  int64_t sets = perCopy ? int64_t(producers.size()) : 1;
  if (perCopy && sets > kMaxReleasedCopies)
    return op.emitOpError("has ")
           << sets << " copies and a tile.release; at most "
           << kMaxReleasedCopies << " copies can be released one by one";
  // Each set's stages: copy by copy, a copy's own `tile.stages` (its
  // buffers alternate on their own mbarriers), else the loop's.
  SmallVector<int64_t> copyStages;
  for (int64_t c = 0; c < sets; ++c)
    copyStages.push_back(perCopy ? getCopyStages(producers[c], op) : stages);

  // ---- The mbarriers, before the roles split -----------------------------
  // Thread 0 initializes them while every thread is still at the same
  // instruction, and a block-wide barrier (after the fence that makes them
  // visible to TMA) orders that before any role uses them, as CUTLASS
  // does. (Initialized in the consumers' part behind the roles' named
  // rendezvous, racecheck reported the producer's first arrive.expect_tx
  // against the init.) The loop runs once: it sits directly in the launch,
  // the only warp-specialized one.
  OpBuilder beforeRoles(roleSplit);
  Value initMbarriers = getMbarrierBase(beforeRoles, offset.getInt());
  int64_t fullCount = (anyCpAsync ? kProducerThreads : 0) + (anyTma ? 1 : 0);
  emitIf(beforeRoles, isThreadZero(beforeRoles), [&](OpBuilder &leader) {
    for (int64_t c = 0; c < sets; ++c) {
      // A copy of its own completes on one TMA arrival (with its bytes) or
      // on every producer thread's cp.async arrival.
      int64_t count = fullCount;
      if (perCopy)
        count = isTmaCopy(producers[c]) ? 1 : kProducerThreads;
      for (int64_t s = 0; s < copyStages[c]; ++s) {
        NVVM::MBarrierInitOp::create(
            leader, loc,
            getCopyMbarrier(leader, initMbarriers, index(leader, c),
                            index(leader, s), /*empty=*/false, copyStages),
            constantI32(leader, count), Value());
        NVVM::MBarrierInitOp::create(
            leader, loc,
            getCopyMbarrier(leader, initMbarriers, index(leader, c),
                            index(leader, s), /*empty=*/true, copyStages),
            constantI32(leader, threads / 32), Value());
      }
    }
  });
  fenceSharedForAsyncProxy(beforeRoles);
  gpu::BarrierOp::create(beforeRoles, loc);

  // ---- Consumers, in place of the loop -----------------------------------
  Value mbarriers = getMbarrierBase(b, offset.getInt());
  // The consumers' masks of copies waited for and released (registers
  // after mem2reg).
  Value waitedMask, releasedMask;
  if (perCopy) {
    // At the function's entry, where allocas are promoted to registers.
    OpBuilder entry = OpBuilder::atBlockBegin(&func.getBody().front());
    Type mask = MemRefType::get({}, entry.getI32Type());
    waitedMask = memref::AllocaOp::create(entry, loc, cast<MemRefType>(mask));
    releasedMask = memref::AllocaOp::create(entry, loc, cast<MemRefType>(mask));
  }
  // What the consumers wrote to shared memory so far (index tiles the
  // producer's gathers read, operands of wgmma) is visible to both proxies
  // and to the producer after the rendezvous.
  fenceSharedForAsyncProxy(b);
  if (producerStartsEarly)
    barrier(b);
  else
    roleRendezvous(b);

  Value lower = op.getLowerBound(), step = op.getStep();
  Value upper = getEffectiveUpperBound(b, loc, op);
  bool overlap = op.getOverlapGemm();
  if (overlap && perCopy)
    return op.emitOpError("overlap_gemm needs copies without tile.release "
                          "(the loop releases a stage when its iteration "
                          "ends)");
  // overlap_gemm: the consumers' loop is built after the producer's
  // (lowerOverlappedConsumers), here.
  OpBuilder::InsertPoint consumerPoint = b.saveInsertionPoint();
  scf::ForOp loop;
  Value stage;
  SmallVector<std::pair<Value, Value>> savedViews;
  if (!overlap) {
    loop = scf::ForOp::create(b, loc, lower, upper, step);
    OpBuilder inner = OpBuilder::atBlockBegin(loop.getBody());
    Value iv = loop.getInductionVar();
    Value k = arith::DivSIOp::create(
        inner, loc, arith::SubIOp::create(inner, loc, iv, lower), step);
    stage = arith::RemSIOp::create(inner, loc, k, index(inner, stages));
    // A body that writes shared memory itself (P of attention) must not
    // overwrite what a slower warp of the previous iteration still reads, and
    // what it wrote reaches wgmma's async proxy through a fence.
    if (staged->writesNeedIterationBarrier) {
      if (containsGemm(body) && hasWgmma(chip))
        fenceSharedForAsyncProxy(inner);
      barrier(inner);
    }
    if (perCopy) {
      // Copies are waited for where they are first read.
      Value none = constantI32(inner, 0);
      memref::StoreOp::create(inner, loc, none, waitedMask);
      memref::StoreOp::create(inner, loc, none, releasedMask);
      ReleasedCopies released;
      for (auto [c, copy] : llvm::enumerate(producers))
        released.copyOf[copy.getDest()] = c;
      released.copies = sets;
      released.copyStages = copyStages;
      released.anyCpAsync = anyCpAsync;
      released.mbarriers = mbarriers;
      // Copies with the loop's stage count share its stage and parity.
      Value parity = getRoundParity(inner, loc, k, stages);
      for (int64_t copyStageCount : copyStages) {
        bool own = copyStageCount != stages;
        released.stageOf.push_back(
            own ? arith::RemSIOp::create(inner, loc, k,
                                         index(inner, copyStageCount))
                      .getResult()
                : stage);
        released.parityOf.push_back(
            own ? getRoundParity(inner, loc, k, copyStageCount) : parity);
      }
      released.waitedMask = waitedMask;
      released.releasedMask = releasedMask;
      released.loop = loop;
      releasedCopies = std::move(released);
      // The same holds with per-copy waits: a gemm that only staged copies
      // precede in the body reads buffers its own await made visible (a
      // cp.async copy's await fences) and tiles fenced before the loop or
      // at the top of the iteration.
      markGemmsFencedByPipeline(op);
    } else {
      waitForPhase(inner, loc, getStageMbarrier(inner, mbarriers, stage),
                   getRoundParity(inner, loc, k, stages));
      // A gemm at the top of the body reads stages the "full" wait made
      // visible (the producer fenced its cp.async pieces; TMA writes through
      // the async proxy) and tiles written before the loop (fenced before
      // barrier 0) or in earlier iterations (fenced above): it needs no fence
      // and barrier of its own.
      markGemmsFencedByPipeline(op);
    }
    // (The consumers fenced what they wrote before the loop, above.)
    for (auto region : op.getBody().front().getOps<PerWarpgroupOp>())
      if (isFencedByPipeline(op, region, /*selfFencedWrites=*/elideSync))
        fencedWarpgroups.insert(region);
    for (auto [c, copy] : llvm::enumerate(producers)) {
      Value tile = copy.getDest();
      savedViews.push_back({tile, memrefs.lookup(tile)});
      memrefs[tile] = getStageView(
          inner, tile, perCopy ? releasedCopies->stageOf[c] : stage);
      stagedTiles.insert(tile);
    }
  }

  // ---- Producer, in the other branch (before its copies leave the body) --
  OpBuilder pb(roleSplit.elseBlock()->getTerminator());
  IRMapping mapping;
  auto producerValue = [&](Value value) -> FailureOr<Value> {
    return cloneForProducer(pb, value, mapping, op);
  };
  // The bounds after the rendezvous: they may read what the consumers
  // wrote to shared memory before the loop.
  roleRendezvous(pb);
  FailureOr<Value> pLower = producerValue(lower);
  FailureOr<Value> pUpper = producerValue(upper);
  FailureOr<Value> pStep = producerValue(step);
  if (failed(pLower) || failed(pUpper) || failed(pStep))
    return failure();
  Value pMbarriers = getMbarrierBase(pb, offset.getInt());
  // With TMA alone one thread issues everything: the others leave, since a
  // thread that waits on "empty" without arriving on "full" could fall two
  // phases behind and wait for a phase that never comes.
  if (!anyCpAsync) {
    Value first = arith::CmpIOp::create(pb, loc, arith::CmpIPredicate::eq,
                                        threadId, index(pb, threads));
    auto leader = scf::IfOp::create(pb, loc, first, /*withElseRegion=*/false);
    pb.setInsertionPoint(leader.thenBlock()->getTerminator());
  }
  auto pLoop = scf::ForOp::create(pb, loc, *pLower, *pUpper, *pStep);
  {
    OpBuilder pInner = OpBuilder::atBlockBegin(pLoop.getBody());
    Value pk = arith::DivSIOp::create(
        pInner, loc,
        arith::SubIOp::create(pInner, loc, pLoop.getInductionVar(), *pLower),
        *pStep);
    Value pStage =
        arith::RemSIOp::create(pInner, loc, pk, index(pInner, stages));
    Value round =
        arith::DivSIOp::create(pInner, loc, pk, index(pInner, stages));
    // The stage was read in round - 1: wait until every consumer warp
    // released it (each copy's buffer, with tile.release, just before the
    // copy is issued).
    Value refill = arith::CmpIOp::create(pInner, loc, arith::CmpIPredicate::sge,
                                         round, index(pInner, 1));
    Value releaseParity = getRoundParity(
        pInner, loc,
        arith::SubIOp::create(pInner, loc, pk, index(pInner, stages)), stages);
    if (!perCopy)
      emitIf(pInner, refill, [&](OpBuilder &waiting) {
        waitForPhase(waiting, loc,
                     getEmptyStageMbarrier(waiting, pMbarriers, pStage, stages),
                     releaseParity);
      });
    // The copies' offsets at this iteration, recomputed by the producer.
    mapping.map(inductionVar, pLoop.getInductionVar());
    pb.setInsertionPoint(pLoop.getBody()->getTerminator());
    SmallVector<std::pair<CopyOp, SmallVector<Value>>> issued;
    for (CopyOp copy : producers) {
      SmallVector<Value> offsets;
      SmallVector<Value> sources(copy.getSourceOffsets());
      if (Value first = copy.getRowOffset())
        sources.push_back(first);
      for (Value source : sources) {
        FailureOr<Value> value = producerValue(source);
        if (failed(value))
          return failure();
        offsets.push_back(*value);
      }
      issued.push_back({copy, offsets});
    }
    // The producer's own thread numbering while its copies are emitted.
    Value consumerThreadId = threadId;
    int64_t consumerThreads = threads;
    threadId = arith::SubIOp::create(pb, loc, consumerThreadId,
                                     index(pb, consumerThreads));
    threads = kProducerThreads;
    LogicalResult result = success();
    if (perCopy) {
      for (auto [c, entry] : llvm::enumerate(issued)) {
        auto &[copy, offsets] = entry;
        Value number = index(pb, c);
        // A copy with stages of its own: its stage, whether its buffer was
        // used before and the parity of that use's release.
        Value copyStage = pStage, copyRefill = refill,
              copyReleaseParity = releaseParity;
        if (int64_t own = copyStages[c]; own != stages) {
          copyStage = arith::RemSIOp::create(pb, loc, pk, index(pb, own));
          copyRefill = arith::CmpIOp::create(pb, loc, arith::CmpIPredicate::sge,
                                             pk, index(pb, own));
          copyReleaseParity = getRoundParity(
              pb, loc, arith::SubIOp::create(pb, loc, pk, index(pb, own)), own);
        }
        emitIf(pb, copyRefill, [&](OpBuilder &waiting) {
          waitForPhase(waiting, loc,
                       getCopyMbarrier(waiting, pMbarriers, number, copyStage,
                                       /*empty=*/true, copyStages),
                       copyReleaseParity);
        });
        Value full = getCopyMbarrier(pb, pMbarriers, number, copyStage,
                                     /*empty=*/false, copyStages);
        if (isTmaCopy(copy)) {
          std::pair<CopyOp, ArrayRef<Value>> one{copy, offsets};
          if (failed(issueTmaStage(
                  pb, one, copyStage, full,
                  getTileBytes(cast<SharedType>(copy.getDest().getType())))))
            result = failure();
          continue;
        }
        if (failed(emitAsyncCopy(copy, pb, offsets, copyStage)))
          result = failure();
        // The arrival happens once this thread's cp.async pieces so far
        // have landed (noinc: the count already has one per thread); the
        // consumers fence them for wgmma after their wait.
        NVVM::CpAsyncMBarrierArriveOp::create(pb, loc, full,
                                              /*noinc=*/true);
      }
    }
    SmallVector<std::pair<CopyOp, ArrayRef<Value>>> tmaCopies;
    for (auto &[copy, offsets] : issued) {
      if (perCopy)
        break;
      if (isTmaCopy(copy))
        tmaCopies.push_back({copy, offsets});
      else if (failed(emitAsyncCopy(copy, pb, offsets, pStage)))
        result = failure();
    }
    if (succeeded(result) && !tmaCopies.empty())
      result =
          issueTmaStage(pb, tmaCopies, pStage,
                        getStageMbarrier(pb, pMbarriers, pStage), tmaBytes);
    if (succeeded(result) && anyCpAsync && !perCopy) {
      // Each producer thread's pieces have landed and are visible to the
      // async proxy (wgmma) before it arrives.
      NVVM::CpAsyncCommitGroupOp::create(pb, loc);
      NVVM::CpAsyncWaitGroupOp::create(pb, loc, 0);
      fenceSharedForAsyncProxy(pb);
      NVVM::MBarrierArriveOp::create(
          pb, loc, Type(), getStageMbarrier(pb, pMbarriers, pStage), Value(),
          NVVM::MemScopeKindAttr::get(pb.getContext(),
                                      NVVM::MemScopeKind::CTA));
    }
    threadId = consumerThreadId;
    threads = consumerThreads;
    if (failed(result))
      return failure();
  }

  // ---- Consumers: the body, minus the copies -------------------------------
  if (overlap) {
    OpBuilder consumers(b.getContext());
    consumers.restoreInsertionPoint(consumerPoint);
    return lowerOverlappedConsumers(op, consumers, producers, mbarriers,
                                    staged->writesNeedIterationBarrier);
  }
  if (failed(lowerBodyInLoop(body, producers, loop, inductionVar))) {
    releasedCopies.reset();
    return failure();
  }
  Block *loopBody = loop.getBody();
  OpBuilder end(loopBody->getTerminator());
  if (perCopy) {
    // What the iteration did not release yet (waiting first for what it
    // never read, so that no warp runs a phase ahead).
    for (int64_t c = 0; c < sets; ++c)
      releaseCopy(end, index(end, c));
    releasedCopies.reset();
    for (auto [tile, view] : savedViews) {
      memrefs[tile] = view;
      stagedTiles.erase(tile);
    }
    return success();
  }
  // Every warp is done with the stage (the body's wgmma groups are waited
  // for): one arrival per warp releases it to the producer.
  arriveOncePerWarp(end, getEmptyStageMbarrier(end, mbarriers, stage, stages));
  for (auto [tile, view] : savedViews) {
    memrefs[tile] = view;
    stagedTiles.erase(tile);
  }
  return success();
}

// overlap_gemm: iteration k of the consumers' loop first issues the gemm
// of iteration k + 1 (its stage waited for, the ops before the gemm cloned
// for k + 1), runs the rest of the body for k on the accumulators of k
// while that gemm runs (later gemms of the body among it: their waits
// retire the gemm issued ahead too), releases stage k and waits for the
// gemm (FA3's intra-warpgroup overlap). A prologue runs the first iteration's
// gemm. The ops before the gemm are cloned once more for k, so that what the
// rest of the body uses of them (row numbers, loaded block indices) is k's. The
// loop runs two iterations a trip, so that the two accumulators keep their
// registers (a loop-carried struct that changed registers every iteration
// would be copied while its wgmma is in flight, and ptxas would serialize
// the wgmma).
LogicalResult KernelLowering::lowerOverlappedConsumers(
    PipelinedOp op, OpBuilder &b, ArrayRef<CopyOp> producers, Value mbarriers,
    bool iterationBarrier) {
  Location loc = op.getLoc();
  Block &body = op.getBody().front();
  int64_t stages = op.getNumStages();
  Value inductionVar = body.getArgument(0);
  GemmOp gemm = *body.getOps<GemmOp>().begin();
  bool fenced = isFencedByPipeline(op, gemm);
  SmallVector<Operation *> head, tail;
  bool afterGemm = false;
  for (Operation &inner : body.without_terminator()) {
    if (&inner == gemm.getOperation()) {
      afterGemm = true;
      continue;
    }
    if (auto copy = dyn_cast<CopyOp>(inner);
        copy && llvm::is_contained(producers, copy))
      continue;
    (afterGemm ? tail : head).push_back(&inner);
  }

  Value lower = op.getLowerBound(), step = op.getStep();
  Value upper = getEffectiveUpperBound(b, loc, op);
  SmallVector<std::pair<Value, Value>> savedViews;
  for (CopyOp copy : producers) {
    Value tile = copy.getDest();
    savedViews.push_back({tile, memrefs.lookup(tile)});
    stagedTiles.insert(tile);
  }
  auto useStage = [&](OpBuilder &at, Value stage) {
    for (CopyOp copy : producers)
      memrefs[copy.getDest()] = getStageView(at, copy.getDest(), stage);
  };
  auto lowerAll = [&](ArrayRef<Operation *> ops) {
    for (Operation *clone : ops)
      if (failed(lowerNested(clone, nullptr)))
        return failure();
    return success();
  };
  // Of the ops before the gemm, the ones the gemm's operands come from
  // (their nested ops' operands included): the others (e.g. a tile.all_of
  // read by the epilogue, whose warp vote LLVM cannot delete) run once,
  // with the rest of the iteration.
  llvm::SmallPtrSet<Operation *, 8> feedsGemm;
  auto markOperands = [&](Operation *user) {
    user->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (Operation *definer = operand.getDefiningOp();
            definer && definer->getBlock() == &body)
          feedsGemm.insert(definer);
    });
  };
  markOperands(gemm);
  for (Operation *headOp : llvm::reverse(head))
    if (feedsGemm.contains(headOp))
      markOperands(headOp);
  // The ops before the gemm that feed it and the gemm, issued, for
  // `iteration` (the current stage views); the gemm's accumulators in
  // flight.
  auto issueGemm = [&](OpBuilder &at,
                       Value iteration) -> FailureOr<SmallVector<Value>> {
    IRMapping mapping;
    mapping.map(inductionVar, iteration);
    SmallVector<Operation *> clones;
    for (Operation *headOp : head)
      if (feedsGemm.contains(headOp))
        clones.push_back(at.clone(*headOp, mapping));
    Operation *gemmClone = at.clone(*gemm, mapping);
    clones.push_back(gemmClone);
    asyncGemms.insert(gemmClone);
    if (fenced)
      fencedGemms.insert(gemmClone);
    if (failed(lowerAll(clones)))
      return failure();
    return gemmAccumulators.lookup(gemmClone);
  };
  auto waitStage = [&](OpBuilder &at, Value k) {
    Value stage = arith::RemSIOp::create(at, loc, k, index(at, stages));
    waitForPhase(at, loc, getStageMbarrier(at, mbarriers, stage),
                 getRoundParity(at, loc, k, stages));
    return stage;
  };

  // Prologue: the first iteration's gemm (a loop without iterations issues
  // it on whatever its stage holds and never reads the result).
  Value any =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, lower, upper);
  emitIf(b, any,
         [&](OpBuilder &waiting) { waitStage(waiting, index(waiting, 0)); });
  useStage(b, index(b, 0));
  FailureOr<SmallVector<Value>> first = issueGemm(b, lower);
  if (failed(first))
    return failure();
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);

  // Iteration `k` at `iv` (at the end of `at`'s block): the next gemm, then
  // the rest of the body on `current` (only while `iv` < upper when
  // `guarded`); returns the next gemm's accumulators. The next gemm is
  // issued unconditionally, past the last iteration on a stage it does not
  // wait for (its result is never read): a conditional issue would merge
  // the in-flight accumulators with nothing at the end of the branch, and
  // ptxas serializes every wgmma of a function that does that.
  auto iteration = [&](OpBuilder &at, Value iv, Value k, ValueRange current,
                       bool guarded,
                       Value valid) -> FailureOr<SmallVector<Value>> {
    Value stage = arith::RemSIOp::create(at, loc, k, index(at, stages));
    Value next = arith::AddIOp::create(at, loc, iv, step);
    Value hasNext =
        arith::CmpIOp::create(at, loc, arith::CmpIPredicate::slt, next, upper);
    Value nextK = arith::AddIOp::create(at, loc, k, index(at, 1));
    if (iterationBarrier) {
      fenceSharedForAsyncProxy(at);
      barrier(at);
    }
    emitIf(at, hasNext, [&](OpBuilder &waiting) { waitStage(waiting, nextK); });
    useStage(at, arith::RemSIOp::create(at, loc, nextK, index(at, stages)));
    // Past the last iteration the ops before the gemm run for `valid` (the
    // trip's first iteration: their loads stay inside their tiles, their
    // divisions defined); the
    // gemm then reads a stage nobody waited for, and its result is unused.
    Value issued = arith::SelectOp::create(at, loc, hasNext, next, valid);
    FailureOr<SmallVector<Value>> accumulators = issueGemm(at, issued);
    if (failed(accumulators))
      return failure();
    // The rest of iteration k, on stage k and the accumulators of k: the
    // ops before the gemm and after it cloned (the clones after it use the
    // clones before it, so both are cloned before either is lowered).
    auto rest = [&](OpBuilder &in) -> LogicalResult {
      useStage(in, stage);
      IRMapping mapping;
      mapping.map(inductionVar, iv);
      SmallVector<Operation *> headClones, tailClones;
      for (Operation *headOp : head)
        headClones.push_back(in.clone(*headOp, mapping));
      storeGemmAccumulators(in, gemm, SmallVector<Value>(current));
      for (Operation *tailOp : tail)
        tailClones.push_back(in.clone(*tailOp, mapping));
      if (failed(lowerAll(headClones)) || failed(lowerAll(tailClones)))
        return failure();
      // Every warp is done with stage k: one arrival per warp releases it.
      arriveOncePerWarp(in,
                        getEmptyStageMbarrier(in, mbarriers, stage, stages));
      return success();
    };
    LogicalResult result = success();
    if (!guarded) {
      result = rest(at);
    } else {
      Value exists =
          arith::CmpIOp::create(at, loc, arith::CmpIPredicate::slt, iv, upper);
      emitIf(at, exists, [&](OpBuilder &in) { result = rest(in); });
    }
    if (failed(result))
      return failure();
    // The next gemm is done before the iteration ends: no wgmma group stays
    // in flight across the loop's back edge (ptxas serializes every wgmma
    // of a function whose groups do).
    NVVM::WgmmaWaitGroupSyncOp::create(at, loc, 0);
    return *accumulators;
  };

  Value twoSteps = arith::MulIOp::create(b, loc, step, index(b, 2));
  auto loop = scf::ForOp::create(b, loc, lower, upper, twoSteps, *first);
  OpBuilder trip = OpBuilder::atBlockEnd(loop.getBody());
  Value iv = loop.getInductionVar();
  Value k = arith::DivSIOp::create(
      trip, loc, arith::SubIOp::create(trip, loc, iv, lower), step);
  SmallVector<Value> current(loop.getRegionIterArgs().begin(),
                             loop.getRegionIterArgs().end());
  FailureOr<SmallVector<Value>> second =
      iteration(trip, iv, k, current, /*guarded=*/false, /*valid=*/iv);
  if (failed(second))
    return failure();
  Value secondIv = arith::AddIOp::create(trip, loc, iv, step);
  Value secondK = arith::AddIOp::create(trip, loc, k, index(trip, 1));
  FailureOr<SmallVector<Value>> third =
      iteration(trip, secondIv, secondK, *second, /*guarded=*/true,
                /*valid=*/iv);
  if (failed(third))
    return failure();
  scf::YieldOp::create(trip, loc, *third);
  for (auto [tile, view] : savedViews) {
    memrefs[tile] = view;
    stagedTiles.erase(tile);
  }
  return success();
}

GemmOp KernelLowering::getDeferrableGemm(PipelinedOp loop) {
  Block &body = loop.getBody().front();
  if (loop.getNumStages() < 2 || !hasWgmma(chip))
    return {};
  auto gemms = body.getOps<GemmOp>();
  if (gemms.empty() || std::next(gemms.begin()) != gemms.end())
    return {};
  GemmOp gemm = *gemms.begin();
  if (gemm->getNextNode() != body.getTerminator() ||
      !isFencedByPipeline(loop, gemm))
    return {};
  for (Operation *user : gemm.getC().getUsers())
    if (user != gemm.getOperation() && loop->isAncestor(user))
      return {};
  deferredGemms.insert(gemm);
  return gemm;
}

Value KernelLowering::getStageView(OpBuilder &b, Value tile, Value stage) {
  auto alloc = tile.getDefiningOp<AllocOp>();
  int64_t base = alloc->getAttrOfType<IntegerAttr>("tile.offset").getInt();
  // tile-plan-shared-memory's stride between stages.
  int64_t stride =
      alloc->getAttrOfType<IntegerAttr>("tile.stage_bytes").getInt();
  auto type = cast<MemRefType>(memrefs.lookup(tile).getType());
  Location loc = func.getLoc();
  Value offset = arith::AddIOp::create(
      b, loc, index(b, base),
      arith::MulIOp::create(b, loc, stage, index(b, stride)));
  return memref::ViewOp::create(b, loc, type, sharedBase, offset, ValueRange());
}

/// cp.async of a global window into stage `stage` of a shared tile, in
/// 16-byte (or 8/4-byte) pieces; pieces past the tensor are zero-filled.
LogicalResult KernelLowering::emitAsyncCopy(CopyOp copy, OpBuilder &b,
                                            ValueRange offsets, Value stage) {
  Location loc = copy.getLoc();
  // A gather: its first row position comes last; it has no window offsets.
  Value gatherFirst;
  if (copy.getRowIndices()) {
    gatherFirst = offsets.back();
    offsets = offsets.drop_back();
  }
  Value source = memrefs.lookup(copy.getSource());
  Value tile = copy.getDest();
  auto tileType = cast<SharedType>(tile.getType());
  SmallVector<int64_t> shape = *tileType.getTileShape().getStaticSizes();
  Type elementType = tileType.getElementType();
  int64_t elementBytes = elementType.getIntOrFloatBitWidth() / 8;
  VectorLayout layout = getCooperativeLayout(shape, elementType);
  auto sourceType = cast<MemRefType>(source.getType());
  int64_t bytes = layout.vector * elementBytes;
  // Pieces must start 16/8/4-byte aligned in global memory: rows of a
  // static size that is a multiple of the piece, or a 1-D tensor. The last
  // piece of a 1-D tensor may straddle its end: it is copied element by
  // element (plain loads and shared stores), since cp.async with a source
  // size below the piece still reads the whole piece (SASS LDGSTS.ZFILL
  // only zeroes the rest: compute-sanitizer reports the bytes past the end).
  int64_t innermost = sourceType.getRank() - 1;
  bool wholePieces = !sourceType.isDynamicDim(innermost) &&
                     sourceType.getDimSize(innermost) % layout.vector == 0;
  bool alignedRows = wholePieces || sourceType.getRank() == 1;
  bool alignedOffset =
      offsets.empty() || isKnownMultipleOf(offsets.back(), layout.vector);
  if ((bytes != 4 && bytes != 8 && bytes != 16) || !alignedRows ||
      !alignedOffset)
    return copy.emitOpError("cannot be pipelined with cp.async: it needs "
                            "4, 8 or 16-byte runs that start aligned and "
                            "never straddle the end of a row (a 1-D tensor, "
                            "or a static innermost size that is a multiple "
                            "of the run, and an innermost offset known to "
                            "be a multiple of it); use num_stages = 1");
  Value buffer = getStageView(b, tile, stage);
  int64_t windowRank = sourceType.getRank();
  int64_t lead = windowRank - shape.size();
  auto windowOffset = [&](OpBuilder &nested, int64_t i) {
    return offsets.empty() ? index(nested, 0) : offsets[i];
  };
  // Issues every piece; `checked` guards each one against the tensor's
  // bounds (zero-filling what lies outside).
  auto emitPieces = [&](OpBuilder &nested, bool checked) {
    for (int64_t v = 0; v < layout.getValuesPerThread(); v += layout.vector) {
      SmallVector<Value> coords = coordinates(nested, layout, v);
      SmallVector<Value> indices;
      for (int64_t i = 0; i < windowRank; ++i)
        indices.push_back(i < lead ? windowOffset(nested, i)
                                   : arith::AddIOp::create(
                                         nested, loc, windowOffset(nested, i),
                                         coords[i - lead])
                                         .getResult());
      if (gatherFirst)
        indices[lead] = gatheredRow(nested, copy, gatherFirst, coords[0]);
      Value sourceElements = index(nested, layout.vector);
      SmallVector<Value> safe = indices;
      // Set when the piece may straddle the end: whether it does, and how
      // many of its elements lie before the end.
      Value straddles, left;
      if (checked) {
        Value inside;
        if (wholePieces) {
          inside = inBounds(nested, source, indices, layout.vector);
        } else {
          Value starts = inBounds(nested, source, indices, 1);
          Value size = memref::DimOp::create(nested, loc, source, innermost);
          left = arith::SubIOp::create(nested, loc, size, indices.back());
          Value shortPiece =
              arith::CmpIOp::create(nested, loc, arith::CmpIPredicate::slt,
                                    left, index(nested, layout.vector));
          straddles = arith::AndIOp::create(nested, loc, starts, shortPiece);
          inside = inBounds(nested, source, indices, layout.vector);
        }
        sourceElements = arith::SelectOp::create(
            nested, loc, inside, sourceElements, index(nested, 0));
        // A piece outside the tensor reads nothing, from a valid address.
        for (Value &idx : safe)
          idx = arith::SelectOp::create(nested, loc, inside, idx,
                                        index(nested, 0));
      }
      emitIf(nested, isInside(nested, layout, v), [&](OpBuilder &inner) {
        auto issue = [&](OpBuilder &at) {
          SmallVector<Value> destination = sharedIndices(at, tile, coords);
          nvgpu::DeviceAsyncCopyOp::create(
              at, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), buffer,
              destination, source, safe, at.getIndexAttr(layout.vector),
              sourceElements, bytes == 16 ? at.getUnitAttr() : UnitAttr());
        };
        if (!straddles)
          return issue(inner);
        auto split = scf::IfOp::create(inner, loc, straddles,
                                       /*withElseRegion=*/true);
        OpBuilder elementwise = split.getThenBodyBuilder();
        Value zero = arith::ConstantOp::create(
            elementwise, loc, elementwise.getZeroAttr(elementType));
        for (int64_t j = 0; j < layout.vector; ++j) {
          // Element j of the piece: loaded if before the end (the start is),
          // else 0.
          Value valid =
              arith::CmpIOp::create(elementwise, loc, arith::CmpIPredicate::slt,
                                    index(elementwise, j), left);
          SmallVector<Value> at = indices;
          at.back() = arith::SelectOp::create(
              elementwise, loc, valid,
              arith::AddIOp::create(elementwise, loc, indices.back(),
                                    index(elementwise, j)),
              indices.back());
          Value loaded = memref::LoadOp::create(elementwise, loc, source, at);
          Value value =
              arith::SelectOp::create(elementwise, loc, valid, loaded, zero);
          SmallVector<Value> element = coords;
          element.back() = arith::AddIOp::create(
              elementwise, loc, coords.back(), index(elementwise, j));
          memref::StoreOp::create(elementwise, loc, value, buffer,
                                  sharedIndices(elementwise, tile, element));
        }
        OpBuilder whole = split.getElseBodyBuilder();
        issue(whole);
      });
    }
  };
  // Gathered rows of 16-byte pieces: each thread takes whole 128-byte runs
  // of a few rows (8 threads a run, FlashMLA's producer layout), so it
  // reads a row number and checks it once per row rather than per piece,
  // and a warp's pieces still cover whole 128-byte lines of 4 rows.
  int64_t rowPieces = shape.size() == 2 ? shape[1] * elementBytes / 16 : 0;
  int64_t lanesPerRow = std::min<int64_t>(8, rowPieces);
  if (gatherFirst && bytes == 16 && wholePieces && lanesPerRow > 0 &&
      rowPieces % lanesPerRow == 0 && threads % lanesPerRow == 0 &&
      shape[0] % (threads / lanesPerRow) == 0) {
    int64_t rowGroups = threads / lanesPerRow;
    Value lane =
        arith::RemUIOp::create(b, loc, threadId, index(b, lanesPerRow));
    Value group =
        arith::DivUIOp::create(b, loc, threadId, index(b, lanesPerRow));
    Value column0 = offsets.empty() ? index(b, 0) : offsets.back();
    Value rows = memref::DimOp::create(b, loc, source, 0);
    for (int64_t i = 0; i < shape[0] / rowGroups; ++i) {
      Value r = arith::AddIOp::create(b, loc, group, index(b, i * rowGroups));
      Value row = gatheredRow(b, copy, gatherFirst, r);
      // Negative row numbers (-1: "no row") compare as huge.
      Value inside =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, rows);
      Value safeRow = arith::SelectOp::create(b, loc, inside, row, index(b, 0));
      Value sourceElements = arith::SelectOp::create(
          b, loc, inside, index(b, layout.vector), index(b, 0));
      for (int64_t c = 0; c < rowPieces / lanesPerRow; ++c) {
        Value column = arith::MulIOp::create(
            b, loc,
            arith::AddIOp::create(b, loc, lane, index(b, c * lanesPerRow)),
            index(b, layout.vector));
        SmallVector<Value> from = {
            safeRow, arith::AddIOp::create(b, loc, column0, column)};
        SmallVector<Value> destination = sharedIndices(b, tile, {r, column});
        nvgpu::DeviceAsyncCopyOp::create(
            b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), buffer,
            destination, source, from, b.getIndexAttr(layout.vector),
            sourceElements, b.getUnitAttr());
      }
    }
    return success();
  }
  // Other gathers are checked piece by piece (any row may be out of range).
  if (gatherFirst) {
    emitPieces(b, /*checked=*/true);
    return success();
  }
  // One check for the whole window: a tile inside the tensor (the common
  // case) issues its pieces without per-piece bounds checks.
  Value whole;
  for (int64_t i = 0; i < windowRank; ++i) {
    int64_t extent = i < lead ? 1 : shape[i - lead];
    Value size = memref::DimOp::create(b, loc, source, i);
    Value offset = windowOffset(b, i);
    Value from = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                       offset, index(b, 0));
    Value end = arith::AddIOp::create(b, loc, offset, index(b, extent));
    Value to =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, end, size);
    Value inside = arith::AndIOp::create(b, loc, from, to);
    whole = whole ? arith::AndIOp::create(b, loc, whole, inside).getResult()
                  : inside;
  }
  auto ifOp = scf::IfOp::create(b, loc, whole, /*withElseRegion=*/true);
  OpBuilder thenBuilder = ifOp.getThenBodyBuilder();
  emitPieces(thenBuilder, /*checked=*/false);
  OpBuilder elseBuilder = ifOp.getElseBodyBuilder();
  emitPieces(elseBuilder, /*checked=*/true);
  return success();
}

int64_t hisa::tile::getTileBytes(SharedType type) {
  // Bounded by the type's verifier (at most 227 KiB).
  return *getStaticTileBytes(type);
}

FailureOr<Value> KernelLowering::initStageMbarriers(PipelinedOp op,
                                                    OpBuilder &b,
                                                    int64_t releaseCount) {
  Location loc = op.getLoc();
  auto offset = op->getAttrOfType<IntegerAttr>(kMbarrierOffsetAttrName);
  if (!offset)
    return op.emitOpError("has TMA copies but no mbarriers; run "
                          "tile-plan-shared-memory first");
  Value mbarriers = getMbarrierBase(b, offset.getInt());
  emitIf(b, isThreadZero(b), [&](OpBuilder &leader) {
    Value one =
        arith::ConstantIntOp::create(leader, loc, leader.getI32Type(), 1);
    int64_t stages = op.getNumStages();
    for (int64_t s = 0; s < stages; ++s)
      NVVM::MBarrierInitOp::create(
          leader, loc, getStageMbarrier(leader, mbarriers, index(leader, s)),
          one, Value());
    if (releaseCount) {
      Value count = arith::ConstantIntOp::create(
          leader, loc, leader.getI32Type(), releaseCount);
      for (int64_t s = 0; s < stages; ++s)
        NVVM::MBarrierInitOp::create(
            leader, loc,
            getStageMbarrier(leader, mbarriers, index(leader, stages + s)),
            count, Value());
    }
  });
  // The initialized mbarriers, and whatever the block wrote to shared memory
  // before (operands a gemm in the body reads), are visible to the async
  // proxy and to every thread.
  fenceSharedForAsyncProxy(b);
  gpu::BarrierOp::create(b, loc);
  return mbarriers;
}

Value KernelLowering::getMbarrierBase(OpBuilder &b, int64_t offset) {
  return LLVM::GEPOp::create(
      b, func.getLoc(), LLVM::LLVMPointerType::get(b.getContext(), 3),
      b.getI8Type(), getSharedPointer(b, sharedBase),
      ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(offset)});
}

Value KernelLowering::getEmptyStageMbarrier(OpBuilder &b, Value mbarriers,
                                            Value stage, int64_t stages) {
  return getStageMbarrier(
      b, mbarriers,
      arith::AddIOp::create(b, func.getLoc(), stage, index(b, stages)));
}

Value KernelLowering::getStageMbarrier(OpBuilder &b, Value mbarriers,
                                       Value stage) {
  Location loc = func.getLoc();
  Value stage64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), stage);
  return LLVM::GEPOp::create(b, loc, mbarriers.getType(), b.getI64Type(),
                             mbarriers, ArrayRef<LLVM::GEPArg>{stage64});
}

LogicalResult KernelLowering::issueTmaStage(
    OpBuilder &b, ArrayRef<std::pair<CopyOp, ArrayRef<Value>>> copies,
    Value stage, Value mbarrier, int64_t bytes, Value releaseNeeded,
    Value release, Value releaseParity) {
  Location loc = func.getLoc();
  LogicalResult result = success();
  emitIf(b, isThreadZero(b), [&](OpBuilder &leader) {
    if (release)
      emitIf(leader, releaseNeeded, [&](OpBuilder &waiting) {
        waitForPhase(waiting, loc, release, releaseParity);
      });
    // The stage's phase completes once this arrival and all the boxes'
    // bytes (zero-filled ones included) are in.
    NVVM::MBarrierArriveExpectTxOp::create(
        leader, loc, Type(), mbarrier,
        arith::ConstantIntOp::create(leader, loc, leader.getI32Type(), bytes),
        NVVM::MemScopeKindAttr::get(leader.getContext(),
                                    NVVM::MemScopeKind::CTA),
        leader.getBoolAttr(false), Value());
    for (auto [copy, offsets] : copies)
      if (failed(emitTmaCopy(copy, leader, offsets, stage, mbarrier)))
        result = failure();
  });
  return result;
}

Value KernelLowering::getSharedPointer(OpBuilder &b, Value memref) {
  Location loc = func.getLoc();
  Value address = arith::IndexCastOp::create(
      b, loc, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref));
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), address);
}

/// One cp.async.bulk.tensor of the whole shared tile: TMA reads the box at
/// `offsets` (innermost coordinate first, signed 32-bit: boxes past either
/// end of the tensor are zero-filled) and swizzles it as the tensor map
/// says, which is the layout sharedIndices gives swizzled tiles.
LogicalResult KernelLowering::emitTmaCopy(CopyOp copy, OpBuilder &b,
                                          ValueRange offsets, Value stage,
                                          Value mbarrier) {
  Location loc = copy.getLoc();
  // lowerPipelined refused marked copies without one.
  Value tensorMap = tensorMaps.lookup(copy);
  assert(tensorMap && "a TMA copy without a tensor map");
  auto sourceType =
      cast<MemRefType>(memrefs.lookup(copy.getSource()).getType());
  SmallVector<Value> coordinates;
  for (int64_t i = sourceType.getRank() - 1; i >= 0; --i)
    coordinates.push_back(arith::IndexCastOp::create(
        b, loc, b.getI32Type(), offsets.empty() ? index(b, 0) : offsets[i]));
  Value buffer = getSharedPointer(b, getStageView(b, copy.getDest(), stage));
  // A swizzled tile whose rows span several panels is one box per panel
  // (see sharedIndices), `rows * swizzle` bytes apart.
  auto tileType = cast<SharedType>(copy.getDest().getType());
  int64_t elementBytes = tileType.getElementType().getIntOrFloatBitWidth() / 8;
  SmallVector<int64_t> shape = *tileType.getTileShape().getStaticSizes();
  int64_t panels = 1, panelBytes = 0, panelColumns = 0;
  if (auto swizzle =
          copy.getDest().getDefiningOp<AllocOp>()->getAttrOfType<IntegerAttr>(
              "tile.swizzle")) {
    panels = shape.back() * elementBytes / swizzle.getInt();
    panelBytes = shape.front() * swizzle.getInt();
    panelColumns = swizzle.getInt() / elementBytes;
  }
  for (int64_t panel = 0; panel < panels; ++panel) {
    SmallVector<Value> boxCoordinates = coordinates;
    Value destination = buffer;
    if (panel > 0) {
      boxCoordinates.front() = arith::AddIOp::create(
          b, loc, coordinates.front(),
          arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                       panel * panelColumns));
      destination = LLVM::GEPOp::create(
          b, loc, buffer.getType(), b.getI8Type(), buffer,
          ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(panel * panelBytes)});
    }
    // Without a cluster, the block's shared memory is its shared::cluster
    // window.
    destination = LLVM::AddrSpaceCastOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext(), 7), destination);
    NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
        b, loc, destination, tensorMap, boxCoordinates, mbarrier, ValueRange(),
        Value(), Value(),
        NVVM::TMALoadModeAttr::get(b.getContext(), NVVM::TMALoadMode::TILE),
        b.getBoolAttr(false), NVVM::CTAGroupKindAttr(), Value());
  }
  return success();
}
