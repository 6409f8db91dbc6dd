//===- TileToGPU.cpp - Lower tile kernels to gpu.func ---------------------===//

#include "KernelLowering.h"
#include "UnrollBudget.h"

#include "hisa/Conversion/Passes.h"
#include "hisa/Dialect/Tile/IR/TensorMaps.h"
#include "hisa/Dialect/Tile/IR/TileLimits.h"
#include "hisa/Target/TargetSpec.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

namespace hisa {
#define GEN_PASS_DEF_CONVERTTILETOGPU
#include "hisa/Conversion/Passes.h.inc"
} // namespace hisa

using namespace mlir;
using namespace hisa::tile;

SmallVector<Value> hisa::tile::staticCoordinates(OpBuilder &b, Location loc,
                                                 ArrayRef<int64_t> shape,
                                                 int64_t element) {
  int64_t stride = 1;
  for (int64_t size : shape)
    stride *= size;
  SmallVector<Value> coords;
  for (int64_t size : shape) {
    stride /= size;
    coords.push_back(
        arith::ConstantIndexOp::create(b, loc, element / stride % size));
  }
  return coords;
}

bool hisa::tile::isKnownMultipleOf(Value value, int64_t divisor) {
  if (divisor == 1)
    return true;
  if (std::optional<int64_t> constant = getConstantIntValue(value))
    return *constant % divisor == 0;
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  if (isa<arith::MulIOp>(def))
    return isKnownMultipleOf(def->getOperand(0), divisor) ||
           isKnownMultipleOf(def->getOperand(1), divisor);
  if (isa<arith::AddIOp, arith::SubIOp>(def))
    return isKnownMultipleOf(def->getOperand(0), divisor) &&
           isKnownMultipleOf(def->getOperand(1), divisor);
  return false;
}

bool hisa::tile::isFloat8(Type type) {
  return isa<Float8E4M3FNType, Float8E5M2Type>(type);
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

Value KernelLowering::index(OpBuilder &b, int64_t value) {
  return arith::ConstantIndexOp::create(b, func.getLoc(), value);
}

Value KernelLowering::zero(OpBuilder &b, Type type) {
  if (auto vector = dyn_cast<VectorType>(type))
    return arith::ConstantOp::create(
        b, func.getLoc(), type,
        DenseElementsAttr::get(vector, b.getZeroAttr(vector.getElementType())));
  return arith::ConstantOp::create(b, func.getLoc(), type,
                                   cast<TypedAttr>(b.getZeroAttr(type)));
}

SmallVector<Value> KernelLowering::coordinates(OpBuilder &b,
                                               const VectorLayout &layout,
                                               int64_t v) {
  // linear = (v / V) * T * V + t * V + v % V with t * V + v % V < T * V.
  // A coordinate whose stride is a multiple of T * V depends on v / V only,
  // one that lives inside a run (stride * size divides V) on v % V only:
  // those are constants, which CSE and register promotion rely on.
  Location loc = func.getLoc();
  if (layout.isGeneral()) {
    SmallVector<Value> coords;
    Value value = index(b, v);
    for (AffineExpr expr : layout.generalMap.getResults())
      coords.push_back(
          affine::expandAffineExpr(b, loc, expr, {threadId, value}, {}));
    return coords;
  }
  int64_t sweep = layout.threads * layout.vector;
  Value linear;
  SmallVector<Value> coords;
  int64_t stride = layout.getNumElements();
  for (auto [i, size] : llvm::enumerate(layout.shape)) {
    stride /= size;
    int64_t span = stride * size;
    if (stride % sweep == 0) {
      int64_t coord = (v / layout.vector) * sweep / stride;
      coords.push_back(index(b, i == 0 ? coord : coord % size));
      continue;
    }
    if (layout.vector % span == 0) {
      coords.push_back(index(b, (v % layout.vector) / stride % size));
      continue;
    }
    if (!linear)
      linear = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, threadId, index(b, layout.vector)),
          index(b, layout.getLinearIndex(0, v)));
    Value coord = arith::DivUIOp::create(b, loc, linear, index(b, stride));
    if (i != 0)
      coord = arith::RemUIOp::create(b, loc, coord, index(b, size));
    coords.push_back(coord);
  }
  return coords;
}

Value KernelLowering::isInside(OpBuilder &b, const VectorLayout &layout,
                               int64_t v) {
  if (!layout.hasPartialCoverage())
    return Value();
  Location loc = func.getLoc();
  Value linear = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, threadId, index(b, layout.vector)),
      index(b, layout.getLinearIndex(0, v)));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, linear,
                               index(b, layout.getNumElements()));
}

FailureOr<VectorLayout> KernelLowering::getLayout(Operation *op,
                                                  FragmentType type) {
  std::optional<SmallVector<int64_t>> shape =
      type.getTileShape().getStaticSizes();
  if (!type.getLayout() || !shape)
    return op->emitOpError("fragment ")
           << type << " has no layout; run tile-assign-layouts first";
  return VectorLayout::fromAttr(type.getLayout(), *shape);
}

VectorLayout KernelLowering::getCooperativeLayout(ArrayRef<int64_t> shape,
                                                  Type elementType) {
  int64_t bytes = std::max<int64_t>(1, elementType.getIntOrFloatBitWidth() / 8);
  int64_t elements = 1;
  for (int64_t size : shape)
    elements *= size;
  int64_t vector = std::max<int64_t>(1, 16 / bytes);
  while (vector > 1 &&
         (shape.back() % vector != 0 || elements < threads * vector))
    vector /= 2;
  return VectorLayout{SmallVector<int64_t>(shape), threads, vector};
}

Value KernelLowering::inBounds(OpBuilder &b, Value memref, ValueRange indices,
                               int64_t vector) {
  Location loc = func.getLoc();
  auto type = cast<MemRefType>(memref.getType());
  Value all;
  for (auto [i, idx] : llvm::enumerate(indices)) {
    Value size = type.isDynamicDim(i)
                     ? memref::DimOp::create(b, loc, memref, i).getResult()
                     : index(b, type.getDimSize(i));
    Value last = idx;
    if (i + 1 == indices.size() && vector > 1)
      last = arith::AddIOp::create(b, loc, idx, index(b, vector - 1));
    Value inside =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, last, size);
    if (i + 1 == indices.size() && vector > 1) {
      // Guard the wrap-around of a negative start too.
      Value startInside =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, idx, size);
      inside = arith::AndIOp::create(b, loc, inside, startInside);
    }
    all = all ? arith::AndIOp::create(b, loc, all, inside).getResult() : inside;
  }
  return all;
}

Value KernelLowering::loadElements(OpBuilder &b, Value memref,
                                   ValueRange indices, int64_t vector,
                                   bool checkBounds) {
  Location loc = func.getLoc();
  Type elementType = cast<MemRefType>(memref.getType()).getElementType();
  Type resultType =
      vector == 1 ? elementType : VectorType::get({vector}, elementType);
  auto emitLoad = [&](OpBuilder &nested) -> Value {
    if (vector == 1)
      return memref::LoadOp::create(nested, loc, memref, indices);
    int64_t bytes = vector * elementType.getIntOrFloatBitWidth() / 8;
    return vector::LoadOp::create(
        nested, loc, cast<VectorType>(resultType), memref, indices,
        /*nontemporal=*/false, llvm::MaybeAlign(std::min<int64_t>(bytes, 16)));
  };
  if (!checkBounds)
    return emitLoad(b);
  Value inside = inBounds(b, memref, indices, vector);
  if (vector == 1) {
    // A masked load has no region, so CSE can merge the copies that the
    // unrolled tile.parallel bodies repeat (a per-row scale, say).
    auto oneElement = VectorType::get({1}, elementType);
    auto maskType = VectorType::get({1}, b.getI1Type());
    Value mask = vector::BroadcastOp::create(b, loc, maskType, inside);
    Value loaded = vector::MaskedLoadOp::create(
        b, loc, oneElement, memref, indices, mask, zero(b, oneElement));
    return vector::ExtractOp::create(b, loc, loaded, 0);
  }
  auto ifOp = scf::IfOp::create(
      b, loc, inside,
      [&](OpBuilder &nested, Location) {
        scf::YieldOp::create(nested, loc, emitLoad(nested));
      },
      [&](OpBuilder &nested, Location) {
        scf::YieldOp::create(nested, loc, zero(nested, resultType));
      });
  return ifOp.getResult(0);
}

void KernelLowering::storeElements(OpBuilder &b, Value value, Value memref,
                                   ValueRange indices, bool checkBounds,
                                   Value predicate) {
  Location loc = func.getLoc();
  int64_t vector = 1;
  if (auto vectorType = dyn_cast<VectorType>(value.getType()))
    vector = vectorType.getNumElements();
  Value condition = predicate;
  if (checkBounds) {
    Value inside = inBounds(b, memref, indices, vector);
    condition =
        condition ? arith::AndIOp::create(b, loc, condition, inside).getResult()
                  : inside;
  }
  emitIf(b, condition, [&](OpBuilder &nested) {
    if (vector == 1) {
      memref::StoreOp::create(nested, loc, value, memref, indices);
      return;
    }
    Type elementType = cast<MemRefType>(memref.getType()).getElementType();
    int64_t bytes = vector * elementType.getIntOrFloatBitWidth() / 8;
    vector::StoreOp::create(nested, loc, value, memref, indices,
                            /*nontemporal=*/false,
                            llvm::MaybeAlign(std::min<int64_t>(bytes, 16)));
  });
}

void KernelLowering::emitIf(OpBuilder &b, Value condition,
                            function_ref<void(OpBuilder &)> body) {
  if (!condition) {
    body(b);
    return;
  }
  auto ifOp = scf::IfOp::create(b, func.getLoc(), condition,
                                /*withElseRegion=*/false);
  OpBuilder nested = ifOp.getThenBodyBuilder();
  body(nested);
}

void KernelLowering::roleRendezvous(OpBuilder &b) {
  // barrier.sync without .aligned (llvm.nvvm.barrier.cta.sync.count, a
  // convergent intrinsic): the roles reach it at different instructions,
  // which `bar.sync` (= barrier.sync.aligned) leaves undefined
  // (compute-sanitizer's synccheck reported divergent threads).
  Location loc = func.getLoc();
  Type i32 = b.getI32Type();
  Value id = arith::ConstantIntOp::create(b, loc, i32, kRoleRendezvousBarrier);
  Value count =
      arith::ConstantIntOp::create(b, loc, i32, threads + kProducerThreads);
  LLVM::CallIntrinsicOp::create(
      b, loc, b.getStringAttr("llvm.nvvm.barrier.cta.sync.count"),
      ValueRange{id, count});
}

Value KernelLowering::getUniformWarpgroupIndex(OpBuilder &b, Location loc) {
  Type i32 = b.getI32Type();
  Value perThread = arith::IndexCastOp::create(
      b, loc, i32,
      arith::DivUIOp::create(b, loc, threadId, index(b, kWarpgroupThreads)));
  Value broadcast =
      gpu::ShuffleOp::create(
          b, loc, perThread, arith::ConstantIntOp::create(b, loc, i32, 0),
          arith::ConstantIntOp::create(b, loc, i32, 32), gpu::ShuffleMode::IDX)
          .getShuffleResult();
  return broadcast;
}

Value KernelLowering::readThreadIdAgain(OpBuilder &b, Location loc) {
  // A volatile asm: a second gpu.thread_id would be merged with the first.
  Value id = LLVM::InlineAsmOp::create(
                 b, loc, b.getI32Type(), ValueRange(), "mov.u32 $0, %tid.x;",
                 "=r", /*has_side_effects=*/true, /*is_align_stack=*/false,
                 LLVM::TailCallKind::None, LLVM::AsmDialectAttr(),
                 /*operand_attrs=*/ArrayAttr())
                 .getResult(0);
  return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), id);
}

void KernelLowering::barrier(OpBuilder &b) {
  // Adjacent barriers are redundant.
  Block *block = b.getInsertionBlock();
  Block::iterator point = b.getInsertionPoint();
  if (point != block->begin() && isa<gpu::BarrierOp>(*std::prev(point)))
    return;
  gpu::BarrierOp::create(b, func.getLoc());
}

SmallVector<Value> KernelLowering::sharedIndices(OpBuilder &b, Value tile,
                                                 ArrayRef<Value> coords) {
  AllocOp alloc = getRootAlloc(tile);
  if (!alloc || !alloc->hasAttr("tile.swizzle"))
    return SmallVector<Value>(coords);
  // The swizzled layout wgmma reads (S = 32, 64 or 128 bytes): the tile's
  // rows are cut into panels of S bytes, stored one after another (panel p
  // holds bytes [p*S, (p+1)*S) of every row; a row of at most S bytes is one
  // panel). Byte o of a panel lives at o ^ (((o >> 7) & (S/16 - 1)) << 4),
  // so 16-byte pieces stay whole and 8 consecutive rows spread over the
  // shared-memory banks; this is TMA's swizzle of a box of one panel.
  Location loc = func.getLoc();
  int64_t swizzleBytes =
      cast<IntegerAttr>(alloc->getAttr("tile.swizzle")).getInt();
  auto type = cast<SharedType>(tile.getType());
  int64_t rows = *type.getTileShape().getStaticSize(0);
  int64_t columns = *type.getTileShape().getStaticSize(1);
  int64_t bytes = type.getElementType().getIntOrFloatBitWidth() / 8;
  Value offset;
  if (columns * bytes <= swizzleBytes) {
    Value element = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, coords[0], index(b, columns)),
        coords[1]);
    offset = arith::MulIOp::create(b, loc, element, index(b, bytes));
  } else {
    Value column = arith::MulIOp::create(b, loc, coords[1], index(b, bytes));
    Value panel =
        arith::DivUIOp::create(b, loc, column, index(b, swizzleBytes));
    Value within =
        arith::RemUIOp::create(b, loc, column, index(b, swizzleBytes));
    offset = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, panel, index(b, rows * swizzleBytes)),
        arith::AddIOp::create(
            b, loc,
            arith::MulIOp::create(b, loc, coords[0], index(b, swizzleBytes)),
            within));
  }
  Value row = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, offset, index(b, 7)),
      index(b, swizzleBytes / 16 - 1));
  Value swizzled = arith::XOrIOp::create(
      b, loc, offset, arith::ShLIOp::create(b, loc, row, index(b, 4)));
  return {arith::DivUIOp::create(b, loc, swizzled, index(b, bytes))};
}

Value KernelLowering::isThreadZero(OpBuilder &b) {
  return arith::CmpIOp::create(b, func.getLoc(), arith::CmpIPredicate::eq,
                               threadId, index(b, 0));
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

LogicalResult KernelLowering::lowerNested(Operation *root,
                                          const ElementContext *context) {
  SmallVector<Operation *> tileOps;
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (!isa<TileDialect>(op->getDialect()))
      return WalkResult::advance();
    tileOps.push_back(op);
    // These lower their own bodies.
    if (isa<ParallelOp, PipelinedOp, PerWarpgroupOp, RejoinOp, AllOfOp>(op))
      return WalkResult::skip();
    return WalkResult::advance();
  });
  for (Operation *op : tileOps) {
    OpBuilder b(op);
    if (releasedCopies && failed(awaitCopiesReadBy(op, b)))
      return failure();
    LogicalResult result =
        llvm::TypeSwitch<Operation *, LogicalResult>(op)
            .Case([&](AllocOp alloc) { return lowerAlloc(alloc, b); })
            .Case([&](ViewOp view) { return lowerView(view, b); })
            .Case([&](PickOp pick) { return lowerPick(pick, b); })
            .Case([&](ReleaseOp release) { return lowerRelease(release, b); })
            .Case([&](BarrierOp barrier) {
              // Inside tile.per_warpgroup, where gpu.barrier becomes the
              // warpgroup's named barrier, the block's barrier itself: 0,
              // or the consumers' one beside a producer warpgroup.
              Location loc = barrier.getLoc();
              Type i32 = b.getI32Type();
              if (std::optional<int64_t> id = barrier.getId()) {
                // A named barrier over the consumers: each warpgroup
                // either waits at it or signals it.
                Value named = arith::ConstantIntOp::create(
                    b, loc, i32, kNamedBarrierBase + *id);
                Value count = arith::ConstantIntOp::create(b, loc, i32,
                                                           launch.getThreads());
                // What the threads wrote may be the other warpgroup's wgmma
                // operand (read through the async proxy). A body that
                // writes no shared memory in a warp-specialized loop whose
                // earlier writes the consumers' fence published has
                // nothing to fence: the fence (MEMBAR.ALL.CTA) would
                // otherwise sit between a turn's last wgmma and the arrive
                // that hands the turn over.
                if (hasWgmma(chip) && !warpgroupFencedByPipeline)
                  fenceSharedForAsyncProxy(b);
                if (barrier.getArriveOnly())
                  NVVM::BarrierArriveOp::create(b, loc, named, count);
                else
                  NVVM::BarrierOp::create(b, loc, TypeRange(), named, count,
                                          NVVM::BarrierReductionAttr(),
                                          Value());
              } else if (warpgroup && roleSplit) {
                NVVM::BarrierOp::create(
                    b, loc, TypeRange(),
                    arith::ConstantIntOp::create(b, loc, i32, kConsumerBarrier),
                    arith::ConstantIntOp::create(b, loc, i32,
                                                 launch.getThreads()),
                    NVVM::BarrierReductionAttr(), Value());
              } else if (warpgroup) {
                NVVM::BarrierOp::create(b, loc);
              } else {
                gpu::BarrierOp::create(b, loc);
              }
              return success();
            })
            .Case([&](ClusterRankOp rank) {
              Value id =
                  NVVM::ClusterId::create(b, rank.getLoc(), b.getI32Type());
              rank.replaceAllUsesWith(
                  arith::IndexCastUIOp::create(b, rank.getLoc(),
                                               b.getIndexType(), id)
                      .getResult());
              return success();
            })
            .Case([&](ClusterBarrierOp barrier) {
              // Release the block's shared writes to the cluster, acquire
              // the others'.
              NVVM::ClusterArriveOp::create(b, barrier.getLoc(),
                                            b.getUnitAttr());
              NVVM::ClusterWaitOp::create(b, barrier.getLoc(), b.getUnitAttr());
              return success();
            })
            .Case([&](CopyOp copy) { return lowerCopy(copy, b); })
            .Case([&](FillOp fill) {
              return lowerFill(fill, fill.getDest(), fill.getValue(), b);
            })
            .Case([&](ClearOp clear) {
              Type element =
                  getTileShapeAndElementType(clear.getDest().getType())->second;
              return lowerFill(clear, clear.getDest(), zero(b, element), b);
            })
            .Case([&](CastOp cast) { return lowerCast(cast, b); })
            .Case([&](LoadOp load) { return lowerLoad(load, b, context); })
            .Case([&](StoreOp store) { return lowerStore(store, b, context); })
            .Case([&](AtomicOp atomic) { return lowerAtomic(atomic, b); })
            .Case([&](FenceOp fence) {
              NVVM::MemScopeKind scope = fence.getScope() == FenceScope::Block
                                             ? NVVM::MemScopeKind::CTA
                                         : fence.getScope() == FenceScope::Gpu
                                             ? NVVM::MemScopeKind::GPU
                                             : NVVM::MemScopeKind::SYS;
              NVVM::MembarOp::create(b, fence.getLoc(), scope);
              return success();
            })
            .Case([&](PrefetchOp prefetch) {
              return lowerPrefetch(prefetch, b, context);
            })
            .Case(
                [&](ParallelOp parallel) { return lowerParallel(parallel, b); })
            .Case([&](PipelinedOp loop) -> LogicalResult {
              bool deferred = markDeferredBarriers(loop);
              if (failed(lowerPipelined(loop, b)))
                return failure();
              // The barrier the body's stores deferred to the loop's end.
              if (deferred)
                barrier(b);
              if (loop.getRecomputeAfter() && !warpgroup)
                threadId = readThreadIdAgain(b, loop.getLoc());
              return success();
            })
            .Case([&](PerWarpgroupOp region) {
              return lowerPerWarpgroup(region, b);
            })
            .Case([&](RejoinOp region) { return lowerRejoin(region, b); })
            .Case([&](ReduceOp reduce) { return lowerReduce(reduce, b); })
            .Case([&](ScanOp scan) { return lowerScan(scan, b); })
            .Case([&](WarpScanOp scan) {
              return lowerWarpScan(scan, b, context);
            })
            .Case([&](VoteOp vote) { return lowerVote(vote, b, context); })
            .Case([&](WarpMatchOp match) {
              return lowerWarpMatch(match, b, context);
            })
            .Case([&](AllOfOp allOf) { return lowerAllOf(allOf, b); })
            .Case([&](WarpBroadcastOp broadcast) {
              return lowerWarpBroadcast(broadcast, b, context);
            })
            .Case([&](GemmOp gemm) { return lowerGemm(gemm, b); })
            .Case([&](WaitGemmsOp wait) {
              // (mma.sync gemms are synchronous: nothing to wait for.)
              if (hasWgmma(chip))
                NVVM::WgmmaWaitGroupSyncOp::create(b, wait.getLoc(),
                                                   wait.getPending());
              return success();
            })
            .Case([&](DimOp dim) {
              Value memref = memrefs.lookup(dim.getSource());
              dim.replaceAllUsesWith(
                  memref::DimOp::create(b, dim.getLoc(), memref, dim.getIndex())
                      .getResult());
              return success();
            })
            .Case([&](YieldOp) { return success(); })
            .Default([&](Operation *other) {
              return other->emitOpError("cannot be lowered inside tile.launch");
            });
    if (failed(result))
      return failure();
    lowered.push_back(op);
  }
  return success();
}

LogicalResult KernelLowering::run() {
  Block &entry = func.getBody().front();
  OpBuilder b(&entry, entry.begin());
  Location loc = func.getLoc();
  // Programmatic dependent launch (the runtime launches hisa kernels with
  // it): wait for the grids this one depends on before touching memory,
  // then let the next grid be scheduled, so that its blocks start while
  // this grid's last wave runs and wait here in turn (a dependent grid is
  // only launched once every block of this one has started).
  // griddepcontrol is sm_90's; KernelMetadata records whether it is there.
  if (StringRef(chip).starts_with("sm_90")) {
    NVVM::GriddepcontrolOp::create(b, loc, NVVM::GridDepActionKind::wait);
    NVVM::GriddepcontrolOp::create(b, loc,
                                   NVVM::GridDepActionKind::launch_dependents);
  }
  threadId = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  auto sharedBytes = launch->getAttrOfType<IntegerAttr>("tile.shared_bytes");
  if (!sharedBytes)
    return launch.emitOpError("has no shared-memory plan; run "
                              "tile-plan-shared-memory first");
  if (sharedBytes.getInt() > 0) {
    auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                                gpu::AddressSpace::Workgroup);
    sharedBase = gpu::DynamicSharedMemoryOp::create(
        b, loc,
        MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                        MemRefLayoutAttrInterface(), workgroup));
  }
  // A warp-specialized launch first splits into its roles.
  // (The launch's body is in the function now.)
  if (llvm::any_of(
          entry.getOps<PipelinedOp>(),
          [](PipelinedOp loop) { return loop.getWarpSpecialized(); }) &&
      failed(splitRoles(b)))
    return failure();
  // Before any op is lowered, while every access of a shared tile is still
  // a tile op: the copies that hand a tile to another warpgroup.
  if (elideSync)
    func.walk([&](PerWarpgroupOp perWarpgroup) {
      markHandOverCopies(perWarpgroup, threads / kWarpgroupThreads);
    });
  // Allocations first: their storage goes to the entry block, where LLVM
  // promotes the per-value allocas to registers.
  SmallVector<Operation *> roots;
  for (Operation &op : entry)
    if (!llvm::is_contained(lowered, &op))
      roots.push_back(&op);
  for (Operation *root : roots)
    if (failed(lowerNested(root, nullptr)))
      return failure();
  for (Operation *op : llvm::reverse(lowered)) {
    op->dropAllUses();
    op->erase();
  }
  // fp8 conversions written in element-wise code (arith.truncf / extf, e.g.
  // a quantize-dequantize) go through the PTX cvt of tile.cast: LLVM has no
  // fp8 type to lower them to.
  SmallVector<Operation *> fp8Conversions;
  func.walk([&](Operation *op) {
    if (isa<arith::TruncFOp, arith::ExtFOp>(op) &&
        (isa<Float8E4M3FNType, Float8E5M2Type>(op->getOperand(0).getType()) ||
         isa<Float8E4M3FNType, Float8E5M2Type>(op->getResult(0).getType())))
      fp8Conversions.push_back(op);
  });
  for (Operation *op : fp8Conversions) {
    OpBuilder at(op);
    op->getResult(0).replaceAllUsesWith(
        convertElement(at, op->getOperand(0), op->getResult(0).getType()));
    op->erase();
  }
  // Op lowerings fence their own shared-memory use, so one that ends with a
  // barrier is often followed by one that begins with one: a barrier with
  // only side-effect-free ops since the previous one is dropped.
  // The roles' rendezvous counts as one (it includes every consumer). With
  // only async-proxy fences between two barriers, the first is dropped
  // instead: the fences' writes are then ordered by the second.
  auto isRendezvous = [](Operation *op) {
    auto call = dyn_cast<LLVM::CallIntrinsicOp>(op);
    return call && call.getIntrin() == "llvm.nvvm.barrier.cta.sync.count";
  };
  SmallVector<gpu::BarrierOp> repeated;
  func.walk([&](gpu::BarrierOp barrier) {
    Operation *previous = barrier->getPrevNode();
    bool fenced = false;
    while (previous && !isa<gpu::BarrierOp>(previous) &&
           !isRendezvous(previous) &&
           ((isMemoryEffectFree(previous) && previous->getNumRegions() == 0) ||
            isa<NVVM::FenceProxyOp>(previous))) {
      fenced |= isa<NVVM::FenceProxyOp>(previous);
      previous = previous->getPrevNode();
    }
    if (!fenced && previous &&
        (isa<gpu::BarrierOp>(previous) || isRendezvous(previous)))
      repeated.push_back(barrier);
    else if (fenced && isa_and_nonnull<gpu::BarrierOp>(previous) &&
             !llvm::is_contained(repeated, previous))
      repeated.push_back(cast<gpu::BarrierOp>(previous));
  });
  for (gpu::BarrierOp barrier : repeated)
    barrier->erase();
  // Dropping a barrier between two async-proxy fences (a copy into a wgmma
  // operand, then the gemm's own fence) leaves them adjacent: the second
  // orders nothing more and is one more MEMBAR.ALL.CTA in SASS.
  SmallVector<NVVM::FenceProxyOp> repeatedFences;
  func.walk([&](NVVM::FenceProxyOp fence) {
    Operation *previous = fence->getPrevNode();
    while (previous && isMemoryEffectFree(previous) &&
           previous->getNumRegions() == 0)
      previous = previous->getPrevNode();
    auto earlier = dyn_cast_or_null<NVVM::FenceProxyOp>(previous);
    if (earlier && earlier.getKind() == fence.getKind() &&
        earlier.getSpace() == fence.getSpace())
      repeatedFences.push_back(fence);
  });
  for (NVVM::FenceProxyOp fence : repeatedFences)
    fence->erase();
  // The consumers of a warp-specialized launch synchronize among
  // themselves: named barrier 1 of the launch's threads (barrier 0, all
  // threads of the block, is the rendezvous with the producer).
  // The producer runs alone after the rendezvous: a block barrier there
  // would wait for the consumers forever.
  if (roleSplit) {
    WalkResult producerBarrier = roleSplit.getElseRegion().walk(
        [](gpu::BarrierOp) { return WalkResult::interrupt(); });
    if (producerBarrier.wasInterrupted())
      return launch.emitOpError("internal error: a block barrier in the "
                                "producer warpgroup's code");
  }
  if (roleSplit) {
    SmallVector<gpu::BarrierOp> consumerBarriers;
    roleSplit.getThenRegion().walk(
        [&](gpu::BarrierOp barrier) { consumerBarriers.push_back(barrier); });
    for (gpu::BarrierOp barrier : consumerBarriers) {
      OpBuilder nb(barrier);
      Type i32 = nb.getI32Type();
      NVVM::BarrierOp::create(
          nb, barrier.getLoc(), TypeRange(),
          arith::ConstantIntOp::create(nb, barrier.getLoc(), i32,
                                       kConsumerBarrier),
          arith::ConstantIntOp::create(nb, barrier.getLoc(), i32, threads),
          NVVM::BarrierReductionAttr(), Value());
      barrier->erase();
    }
  }
  return success();
}

LogicalResult KernelLowering::splitRoles(OpBuilder &b) {
  Location loc = func.getLoc();
  // setmaxnreg, fence.proxy.async and mbarrier transaction counts are
  // sm_90a's (LLVM would abort selecting them for another chip).
  if (!hasWgmma(chip))
    return launch.emitOpError("has a warp_specialized tile.pipelined, which "
                              "needs sm_90a (setmaxnreg, mbarrier transaction "
                              "counts, the async proxy); the target is ")
           << chip;
  Block &entry = func.getBody().front();
  // (The launch's body is in the function now.)
  // An overlap_gemm loop's producer issues TMA boxes alone (one thread, a
  // few addresses) and its consumers hold two accumulators.
  bool overlapped =
      llvm::any_of(entry.getOps<PipelinedOp>(), [](PipelinedOp loop) {
        return loop.getWarpSpecialized() && loop.getOverlapGemm();
      });
  // A producer whose staged copies are all TMA boxes (no row gathers) needs
  // few registers too. It keeps the TMA producer's count where the block's
  // pool is small (several blocks per SM: stage 2's [128, H] accumulators
  // at three blocks, 120 registers a consumer instead of 88), and a
  // gatherer's where one block has the SM (attention: the consumers are at
  // or near the 240 cap either way).
  bool tmaOnlyProducer =
      llvm::any_of(entry.getOps<PipelinedOp>(), [](PipelinedOp loop) {
        SmallVector<CopyOp> staged = getStagedCopies(loop);
        return loop.getWarpSpecialized() && !staged.empty() &&
               llvm::all_of(staged, isTmaCopy);
      });
  // Allocations stay in the entry block (LLVM promotes fragment registers
  // there only) and are lowered first: both roles address the shared tiles.
  SmallVector<Operation *> moved;
  RejoinOp rejoin; // kept after the split: both roles run it
  for (Operation &op : entry) {
    if (auto alloc = dyn_cast<AllocOp>(&op)) {
      OpBuilder at(alloc);
      if (failed(lowerAlloc(alloc, at)))
        return failure();
      lowered.push_back(alloc);
      continue;
    }
    if (isa<UnrealizedConversionCastOp, gpu::ReturnOp>(op) ||
        &op == threadId.getDefiningOp() ||
        (sharedBase && &op == sharedBase.getDefiningOp()))
      continue;
    if (auto found = dyn_cast<RejoinOp>(&op)) {
      rejoin = found;
      continue;
    }
    moved.push_back(&op);
  }
  OpBuilder atEnd(entry.getTerminator());
  Value isConsumer = arith::CmpIOp::create(
      atEnd, loc, arith::CmpIPredicate::ult, threadId, index(atEnd, threads));
  roleSplit =
      scf::IfOp::create(atEnd, loc, isConsumer, /*withElseRegion=*/true);
  Block *consumer = roleSplit.thenBlock();
  for (Operation *op : moved)
    op->moveBefore(consumer->getTerminator());
  if (rejoin)
    rejoin->moveAfter(roleSplit);
  // The roles meet as early as the producer's inputs allow (the launch's
  // one warp-specialized loop sits directly in its body).
  auto loops = consumer->getOps<PipelinedOp>();
  auto found = llvm::find_if(loops, [](PipelinedOp candidate) {
    return candidate.getWarpSpecialized();
  });
  if (found != loops.end()) {
    PipelinedOp loop = *found;
    Operation *start = findProducerStart(loop);
    if (start != loop.getOperation()) {
      OpBuilder early(start);
      fenceSharedForAsyncProxy(early);
      roleRendezvous(early);
      producerStartsEarly = true;
    }
  }
  // setmaxnreg moves registers between the roles inside the block's pool,
  // which is what ptxas gives every thread at entry (R: the register file's
  // share of one thread at this occupancy, in units of 8) times the block's
  // threads. The producer keeps kProducerRegisters, the consumers take the
  // rest (at most 240): asking for more than the pool holds would stall
  // setmaxnreg.inc forever. (The JIT checks ptxas's R against the counts.)
  int64_t producerRegisters =
      overlapped ? kTmaProducerRegisters : kProducerRegisters;
  int64_t blocks =
      std::max<int64_t>(launch.getBoundBlocksPerSm().value_or(1), 1);
  int64_t blockThreads = threads + kProducerThreads;
  int64_t entryRegisters =
      std::min<int64_t>(255, 65536 / (blocks * blockThreads)) / 8 * 8;
  auto consumerShare = [&](int64_t producer) {
    return std::min<int64_t>(
        240, (blockThreads * entryRegisters - kProducerThreads * producer) /
                 threads / 8 * 8);
  };
  int64_t consumerRegisters = consumerShare(producerRegisters);
  if (tmaOnlyProducer && producerRegisters > kTmaProducerRegisters &&
      (blocks > 1 || entryRegisters < producerRegisters ||
       consumerRegisters < 64)) {
    producerRegisters = kTmaProducerRegisters;
    consumerRegisters = consumerShare(producerRegisters);
  }
  if (entryRegisters < producerRegisters || consumerRegisters < 64)
    return launch.emitOpError("a warp-specialized launch of ")
           << threads << " threads at " << blocks << " blocks per SM has "
           << entryRegisters << " registers a thread, which leaves its "
           << "consumers " << consumerRegisters << " beside the producer's "
           << producerRegisters
           << " (at least 64 are needed); ask for fewer blocks per SM";
  // Nothing to move when the consumers already have what they would get.
  if (consumerRegisters <= entryRegisters)
    return success();
  // tile.rejoin's body runs on both roles with the same code: each goes back
  // to the pool's even share first.
  rejoinRegisters = entryRegisters;
  OpBuilder cb = OpBuilder::atBlockBegin(consumer);
  NVVM::SetMaxRegisterOp::create(cb, loc, consumerRegisters,
                                 NVVM::SetMaxRegisterAction::increase);
  OpBuilder pb(roleSplit.elseBlock()->getTerminator());
  NVVM::SetMaxRegisterOp::create(pb, loc, producerRegisters,
                                 NVVM::SetMaxRegisterAction::decrease);
  return success();
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

namespace {

/// The memref a global tensor argument becomes.
MemRefType getGlobalMemRefType(GlobalType type) {
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < type.getRank(); ++i)
    shape.push_back(
        type.getTileShape().getStaticSize(i).value_or(ShapedType::kDynamic));
  return MemRefType::get(shape, type.getElementType());
}

LogicalResult convertKernel(KernelOp kernel, StringRef chip,
                            int64_t maxUnrolledOps, bool elideSync) {
  LaunchOp launch = kernel.getLaunch();
  Location loc = kernel.getLoc();
  for (Type type : kernel.getArgumentTypes())
    if (auto global = dyn_cast<GlobalType>(type))
      for (int64_t i = 0; i < global.getRank(); ++i)
        if (global.getTileShape().isSymbolic(i))
          return kernel.emitOpError("has unbound parameters; run "
                                    "tile-bind-params first");

  if (isa_and_nonnull<StringAttr>(launch.getBlocksPerSmAttr()))
    return launch.emitOpError("blocks_per_sm names a parameter that is not "
                              "bound; run tile-bind-params first");
  std::optional<int64_t> clusterBlocks = launch.getBoundClusterBlocks();
  if (!clusterBlocks)
    return launch.emitOpError("cluster names a parameter that is not bound; "
                              "run tile-bind-params first");
  if (failed(checkUnrollBudget(launch, maxUnrolledOps)))
    return failure();
  OpBuilder b(kernel);
  auto gpuModule =
      gpu::GPUModuleOp::create(b, loc, (kernel.getSymName() + "_module").str());
  b.setInsertionPointToStart(gpuModule.getBody());
  SmallVector<Type> argumentTypes;
  for (Type type : kernel.getArgumentTypes())
    argumentTypes.push_back(isa<GlobalType>(type)
                                ? getGlobalMemRefType(cast<GlobalType>(type))
                                : type);
  // The tensor maps of TMA copies follow the kernel's own arguments.
  DenseMap<Operation *, unsigned> mapOfCopy;
  size_t tensorMapCount = getTensorMaps(kernel, &mapOfCopy).size();
  argumentTypes.append(tensorMapCount,
                       LLVM::LLVMPointerType::get(b.getContext()));
  auto func = gpu::GPUFuncOp::create(b, loc, kernel.getSymName(),
                                     b.getFunctionType(argumentTypes, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {static_cast<int32_t>(launch.getBlockThreads()), 1, 1}));
  // PTX .minnctapersm: ptxas limits registers so that many blocks fit. A
  // warp-specialized block splits the register file between its roles
  // (setmaxnreg) and runs alone on its SM.
  if (std::optional<int64_t> blocks = launch.getBoundBlocksPerSm())
    func->setAttr("nvvm.minctasm", b.getI32IntegerAttr(*blocks));
  else if (launch.getWarpSpecializedLoop())
    func->setAttr("nvvm.minctasm", b.getI32IntegerAttr(1));
  // PTX .reqnctapercluster: a plain launch then forms the clusters.
  if (*clusterBlocks > 1)
    func->setAttr(
        NVVM::NVVMDialect::getClusterDimAttrName(),
        b.getDenseI32ArrayAttr({static_cast<int32_t>(*clusterBlocks), 1, 1}));
  if (tensorMapCount)
    func->setAttr(kTensorMapCountAttrName, b.getI64IntegerAttr(tensorMapCount));
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);

  // Global arguments keep their tile type inside the body (the tile ops still
  // need it) through a cast from the memref argument; the lowering then uses
  // the memref.
  KernelLowering lowering(launch, func, chip);
  lowering.elideSync = elideSync;
  for (auto [copy, map] : mapOfCopy)
    lowering.tensorMaps[copy] =
        entry.getArgument(kernel.getNumArguments() + map);
  IRMapping mapping;
  SmallVector<Operation *> argumentCasts;
  for (auto [from, to] :
       llvm::zip(kernel.getBody().getArguments(), entry.getArguments())) {
    if (!isa<GlobalType>(from.getType())) {
      mapping.map(from, to);
      continue;
    }
    auto cast = UnrealizedConversionCastOp::create(b, loc, from.getType(), to);
    mapping.map(from, cast.getResult(0));
    lowering.memrefs[cast.getResult(0)] = to;
    argumentCasts.push_back(cast);
  }
  // The host side (grid arithmetic) is recomputed where the device needs it.
  for (Operation &op : kernel.getBody().front()) {
    if (isa<LaunchOp, ReturnOp>(op))
      continue;
    if (auto dim = dyn_cast<DimOp>(op)) {
      Value memref = lowering.memrefs.lookup(mapping.lookup(dim.getSource()));
      mapping.map(
          dim.getResult(),
          memref::DimOp::create(b, loc, memref, dim.getIndex()).getResult());
      continue;
    }
    b.clone(op, mapping);
  }
  static constexpr gpu::Dimension dims[] = {
      gpu::Dimension::x, gpu::Dimension::y, gpu::Dimension::z};
  for (auto [i, blockIndex] : llvm::enumerate(launch.getBlockIndices()))
    mapping.map(blockIndex,
                gpu::BlockIdOp::create(b, loc, dims[i]).getResult());
  auto ret = gpu::ReturnOp::create(b, loc);

  Block &body = launch.getBody().front();
  body.getTerminator()->erase();
  entry.getOperations().splice(Block::iterator(ret), body.getOperations());
  for (auto [from, to] : mapping.getValueMap())
    from.replaceUsesWithIf(to, [&](OpOperand &use) {
      return func->isProperAncestor(use.getOwner());
    });

  if (failed(lowering.run()))
    return failure();
  for (Operation *cast : argumentCasts)
    cast->erase();
  // Record what the host needs to launch.
  func->setAttr("tile.shared_bytes", launch->getAttr("tile.shared_bytes"));
  kernel.erase();
  return success();
}

struct ConvertTileToGPUPass
    : public hisa::impl::ConvertTileToGPUBase<ConvertTileToGPUPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<KernelOp> kernels(module.getOps<KernelOp>());
    if (kernels.empty())
      return;
    // What this pass emits (cp.async, PTX 8.0 features) exists only there;
    // LLVM would abort the process later on other chips.
    if (!hisa::isSupportedChip(chip)) {
      module.emitError("convert-tile-to-gpu: unsupported target '")
          << chip << "' (hisa compiles for " << hisa::getSupportedChips()
          << ")";
      return signalPassFailure();
    }
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(module.getContext()));
    for (KernelOp kernel : kernels)
      if (failed(convertKernel(kernel, chip, maxUnrolledOps, elideSync)))
        return signalPassFailure();
    if (fpContract)
      allowContraction(module);
  }

  /// Marks the float arithmetic of the kernels contractible, so that LLVM
  /// fuses multiplies into adds as nvcc does by default. Conversions stay
  /// exact: with `contract`, MLIR folds extf(truncf(x)) to x, which would
  /// silently drop a deliberate rounding (an fp8 quantize-dequantize).
  static void allowContraction(ModuleOp module) {
    module.walk([](gpu::GPUFuncOp func) {
      func.walk([](arith::ArithFastMathInterface op) {
        if (isa<arith::TruncFOp, arith::ExtFOp>(op.getOperation()))
          return;
        arith::FastMathFlagsAttr known = op.getFastMathFlagsAttr();
        arith::FastMathFlags flags =
            known ? known.getValue() : arith::FastMathFlags::none;
        op->setAttr(
            op.getFastMathAttrName(),
            arith::FastMathFlagsAttr::get(
                op->getContext(), flags | arith::FastMathFlags::contract));
      });
    });
  }
};

} // namespace
