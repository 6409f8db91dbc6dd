//===- KernelLowering.h - Lowering one tile kernel to gpu.func --*- C++ -*-===//
//
// State shared by the per-op-family lowerings of convert-tile-to-gpu. The
// body of a tile.launch has been moved into a gpu.func; KernelLowering then
// replaces every tile op in place. Implementations live in one file per op
// family (MemoryOps.cpp, ParallelOp.cpp, PipelinedOp.cpp, ReduceOp.cpp,
// ScanOps.cpp, GemmOp.cpp, Conversions.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef HISA_LIB_CONVERSION_TILETOGPU_KERNELLOWERING_H
#define HISA_LIB_CONVERSION_TILETOGPU_KERNELLOWERING_H

#include "hisa/Dialect/Tile/IR/TileLayouts.h"
#include "hisa/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <map>
#include <optional>

namespace hisa::tile {

/// Lowering a tile.parallel body for one register index of its layout.
struct ElementContext {
  ParallelOp parallel;
  int64_t value;
  /// The value's coordinates (what the body's induction variables became).
  llvm::ArrayRef<mlir::Value> coords;
};

/// Whether `gemm` sits in the body of the multi-stage `loop` after nothing
/// that writes shared memory (only staged copies, which become cp.async
/// waited for at the top of the iteration, scalar math and loads): the fence
/// and barrier at the top of each iteration then serve the gemm too. With
/// `settledWarpgroups` (elide-sync's rule; nullopt leaves it out), also when
/// `loop` is warp-specialized and nothing in its body but the staged copies
/// writes the gemm's shared operands (tiles written before the loop,
/// published before the consumers' rendezvous, and stages each thread waits
/// for itself); given the consumers' warpgroup count (0: not known), a gemm
/// in tile.per_warpgroup also ignores writes that its own warpgroup never
/// runs (another warpgroup's, ordered by the kernel's named barriers).
bool isFencedByPipeline(PipelinedOp loop, GemmOp gemm,
                        std::optional<int64_t> settledWarpgroups = {});

/// `value` for warpgroup `index` of `perWarpgroup`, folded from constants
/// and the warpgroup index; null if it depends on anything else.
mlir::Attribute evaluateForWarpgroup(mlir::Value value,
                                     PerWarpgroupOp perWarpgroup,
                                     int64_t index);

/// Whether warpgroup `index` may run `op`, nested in `perWarpgroup`'s body
/// (false where an enclosing scf.if of the body takes the other branch for
/// that index).
bool mayRunInWarpgroup(mlir::Operation *op, PerWarpgroupOp perWarpgroup,
                       int64_t index);

/// The shared tiles `tile` may be in warpgroup `index` of `perWarpgroup`:
/// a tile.pick by a value known for that index chooses one candidate.
void collectTilesForWarpgroup(mlir::Value tile, PerWarpgroupOp perWarpgroup,
                              int64_t index,
                              llvm::SmallVectorImpl<mlir::Value> &tiles);

/// The unit attribute on a fragment-to-shared copy that hands its tile to
/// another warpgroup (KernelLowering::markHandOverCopies).
inline constexpr llvm::StringLiteral kHandOverAttr = "tile.hand_over";

/// Whether `perWarpgroup` sits in the body of the warp-specialized `loop`
/// after nothing but staged copies and ops that leave shared memory as it
/// is, and its own body writes no tile a gemm reads except through copies
/// that fence themselves (a fragment copied into a swizzled tile; gemms
/// write registers; loads, barriers, waits and register math write
/// nothing): its threads then have no generic-proxy stores for wgmma that
/// the consumers' fence before the loop or their own fence did not
/// publish, and its named barriers need no fence of their own. (Without
/// `selfFencedWrites`, elide-sync's rule, the body may write no shared
/// memory at all.)
bool isFencedByPipeline(PipelinedOp loop, PerWarpgroupOp perWarpgroup,
                        bool selfFencedWrites = false);

/// The copies a pipelined loop stages (global to shared, at the top level
/// of its body; none when it stages nothing), in body order.
llvm::SmallVector<CopyOp> getStagedCopies(PipelinedOp loop);

/// Whether tile-use-tma marked `copy` to go through TMA.
bool isTmaCopy(CopyOp copy);

/// Whether shared tiles `a` and `b` may occupy the same bytes: the same
/// tile, or tiles tile-plan-shared-memory placed at overlapping offsets
/// (it reuses the bytes of a tile whose uses have all come before another
/// tile's first use). Tiles it cannot place (not a planned tile.alloc)
/// count as overlapping everything.
bool mayShareBytes(mlir::Value a, mlir::Value b);

/// Whether a thread reaching `op` may run ahead of slower threads that
/// still read what `op` writes: scanning back from `op` (and around
/// enclosing loops) for an op that `readsWritten` before one whose
/// lowering ends with a block barrier. Around a loop, a branch holding
/// `op` counts as a whole (the ops after `op` in it, its other branches),
/// its barriers for nothing.
bool mayRaceWithEarlierReads(
    mlir::Operation *op,
    llvm::function_ref<bool(mlir::Operation *)> readsWritten);

/// Whether the backward scan of mayRaceWithEarlierReads sees each op that
/// ran since `op`'s previous execution on its own: no branch (or while
/// loop) between `op` and a loop around it, which the scan could only count
/// as a whole. (A branch above every loop, such as the consumers' role,
/// runs once.) Reductions and fragment copies keep their barrier otherwise.
bool isScannedCompletely(mlir::Operation *op);

/// Whether an asynchronous gemm (`tile.gemm ... async`) anywhere in `op`'s
/// kernel reads a shared tile sharing bytes with `tile`: its reads go on
/// past the barriers that mayRaceWithEarlierReads looks for, until its
/// wait.
bool mayBeReadAsynchronously(mlir::Operation *op, mlir::Value tile);

/// Whether copy `op` (a fragment stored into a shared tile) waits for
/// earlier readers of its destination only where mayOverwriteWhatOthersRead
/// finds one, and so guards its own write-after-read hazards, the previous
/// iteration's included: outside tile.per_warpgroup, scanned completely,
/// read by no asynchronous gemm. (It always ends with a barrier.)
bool guardsOwnSharedWrites(CopyOp op);

/// Marks (tile.deferred_barrier) each tile.parallel directly in `loop`'s
/// body whose trailing barrier may wait until the loop has ended, and says
/// whether there is one. Such a parallel writes its shared tiles by plain
/// stores only (none into global memory), each at a first index `iv * c +
/// e + d` (iv the loop's induction variable, c a constant, the same for
/// every store into a tile, e an induction variable of the parallel, d >= 0
/// a constant, d plus e's extent at most c), so that no two iterations
/// write the same element, and
/// nothing else in the loop (nor the parallel itself) reads or writes those
/// tiles or their bytes: no thread of the loop waits for another's stores,
/// and one barrier after the loop orders them all before any later reader.
/// (HISA stage 2 stores each key tile's selection keys this way.) Run on the
/// loop before its body is lowered (which moves the body out of it).
bool markDeferredBarriers(PipelinedOp loop);

/// Whether markDeferredBarriers marked `op`: its lowering leaves out the
/// trailing barrier, which its loop's end provides.
bool defersTrailingBarrier(ParallelOp op);

/// Whether an op before `op` may still be reading shared memory that `op`
/// writes into `written` (tiles) when a faster thread starts writing
/// (write after read): since the last block barrier, some op reads one of
/// those tiles or a tile sharing its bytes. Scans the ops before `op` in
/// its block; inside a loop, also the body's ops after `op` (the previous
/// iteration's); then the ops before each enclosing op up to the launch.
bool mayOverwriteWhatOthersRead(
    mlir::Operation *op, const llvm::SmallPtrSetImpl<mlir::Value> &written);

class KernelLowering {
public:
  KernelLowering(LaunchOp launch, mlir::gpu::GPUFuncOp func,
                 llvm::StringRef chip)
      : launch(launch), func(func), threads(launch.getThreads()),
        chip(chip.str()) {}

  /// Lowers every tile op of the function body (moved from the launch).
  mlir::LogicalResult run();

  // Per-op-family entry points; the builder is placed before `op`.
  mlir::LogicalResult lowerAlloc(AllocOp op, mlir::OpBuilder &b);
  mlir::LogicalResult lowerView(ViewOp op, mlir::OpBuilder &b);
  mlir::LogicalResult lowerCopy(CopyOp op, mlir::OpBuilder &b);
  mlir::LogicalResult lowerFill(mlir::Operation *op, mlir::Value dest,
                                mlir::Value value, mlir::OpBuilder &b);
  mlir::LogicalResult lowerCast(CastOp op, mlir::OpBuilder &b);
  mlir::LogicalResult lowerLoad(LoadOp op, mlir::OpBuilder &b,
                                const ElementContext *context);
  mlir::LogicalResult lowerAtomic(AtomicOp op, mlir::OpBuilder &b);
  mlir::LogicalResult lowerPrefetch(PrefetchOp op, mlir::OpBuilder &b,
                                    const ElementContext *context);
  /// One element of `memref` (a shared tile) in the cluster's block `peer`.
  mlir::FailureOr<mlir::Value> loadPeerElement(LoadOp op, mlir::OpBuilder &b,
                                               mlir::Value memref,
                                               mlir::ValueRange indices,
                                               mlir::Value peer);
  mlir::LogicalResult lowerStore(StoreOp op, mlir::OpBuilder &b,
                                 const ElementContext *context);
  mlir::LogicalResult lowerParallel(ParallelOp op, mlir::OpBuilder &b);
  mlir::LogicalResult lowerPipelined(PipelinedOp op, mlir::OpBuilder &b);
  /// The staged (global-to-shared) copies of a pipelined loop, checked
  /// against the shared-memory plan and the tensor maps, and what the
  /// lowerings need to know about them.
  struct StagedCopies {
    llvm::SmallVector<CopyOp> copies;
    bool anyTma = false, allTma = false;
    int64_t tmaBytes = 0;          // bytes of one stage's TMA boxes
    bool bodyWritesShared = false; // besides the staged copies
    /// Whether those writes need a fence and a barrier at the top of every
    /// iteration (writesNeedIterationBarrier in PipelinedOp.cpp).
    bool writesNeedIterationBarrier = false;
  };
  mlir::FailureOr<StagedCopies> analyzeStagedCopies(PipelinedOp op);
  /// Of the consumers' ops before the warp_specialized `loop` (in its
  /// block), the first from which on none writes what the producer reads
  /// (the loop's bounds, its copies' offsets and index tiles), touches a
  /// staged tile or writes global memory: the roles can meet before it,
  /// and the consumers' remaining prologue (a query's normalization)
  /// overlaps the producer's first stages. `loop` itself when none is.
  mlir::Operation *findProducerStart(PipelinedOp loop);
  /// Whether the roles met before the warp_specialized loop's prologue
  /// (findProducerStart): the consumers then synchronize among themselves
  /// at the loop.
  bool producerStartsEarly = false;
  /// A warp_specialized tile.pipelined: the consumers' loop here, the
  /// producer warpgroup's into the else-block of `roleSplit`.
  mlir::LogicalResult lowerWarpSpecialized(PipelinedOp op, mlir::OpBuilder &b);
  /// The consumers' state of a warp-specialized loop with tile.release
  /// (StageRelease.cpp): each copy has its own full/empty mbarriers per
  /// stage.
  struct ReleasedCopies {
    /// The copy (its number in the body) that fills each stage buffer.
    llvm::DenseMap<mlir::Value, int64_t> copyOf;
    int64_t copies = 0;
    /// Each copy's stage buffers (the loop's num_stages or its own).
    llvm::SmallVector<int64_t> copyStages;
    bool anyCpAsync = false;
    mlir::Value mbarriers; // !llvm.ptr<3>
    /// Each copy's stage in this iteration (index) and round parity (i32).
    llvm::SmallVector<mlir::Value> stageOf, parityOf;
    mlir::Value waitedMask;          // memref<i32>: copies waited for
    mlir::Value releasedMask;        // memref<i32>: copies released
    mlir::Operation *loop = nullptr; // the consumers' scf.for
    /// Copies waited for on every path so far in this iteration.
    llvm::SmallDenseSet<int64_t> awaited;
  };
  std::optional<ReleasedCopies> releasedCopies;
  /// One mbarrier arrival per warp (lane 0, after a __syncwarp): how
  /// consumer warps release a stage buffer.
  void arriveOncePerWarp(mlir::OpBuilder &b, mlir::Value mbarrier);
  /// Copy `copy`'s "full" (or "empty") mbarrier of stage `stage`, copy c
  /// having copyStages[c] stages.
  mlir::Value getCopyMbarrier(mlir::OpBuilder &b, mlir::Value mbarriers,
                              mlir::Value copy, mlir::Value stage, bool empty,
                              llvm::ArrayRef<int64_t> copyStages);
  /// values[copy] for an index `copy` (a select chain unless constant).
  mlir::Value selectByCopy(mlir::OpBuilder &b, mlir::Value copy,
                           llvm::ArrayRef<mlir::Value> values);
  /// The copy (an index value) whose buffer `tile` is (through views and
  /// picks), null when it is none.
  mlir::FailureOr<mlir::Value> getReleasedCopyIndex(mlir::OpBuilder &b,
                                                    mlir::Operation *user,
                                                    mlir::Value tile);
  /// Waits for copy `copy`'s data unless this thread did already in this
  /// iteration: `forReading` (then fenced for wgmma if cp.async filled it)
  /// or only to release the buffer.
  void awaitCopy(mlir::OpBuilder &b, mlir::Value copy, bool forReading = true);
  /// Releases copy `copy`'s buffer (after waiting for it) unless this
  /// thread did already in this iteration.
  void releaseCopy(mlir::OpBuilder &b, mlir::Value copy);
  mlir::LogicalResult lowerRelease(ReleaseOp op, mlir::OpBuilder &b);
  /// Waits for the copies whose buffers `op` reads, before it.
  mlir::LogicalResult awaitCopiesReadBy(mlir::Operation *op,
                                        mlir::OpBuilder &b);
  mlir::LogicalResult lowerBodyInLoop(mlir::Block &body,
                                      llvm::ArrayRef<CopyOp> producers,
                                      mlir::scf::ForOp loop,
                                      mlir::Value inductionVar);
  /// Splits the body of a launch with a warp-specialized loop into the
  /// consumers' branch (the launch's threads) and the producer's.
  mlir::LogicalResult splitRoles(mlir::OpBuilder &b);
  /// `value` usable in the producer's branch (or after both, in
  /// tile.rejoin's body): arithmetic of the consumers' branch it depends on
  /// is cloned (a value from memory or a tile op is refused); `mapping`
  /// holds what was cloned so far.
  mlir::FailureOr<mlir::Value> cloneForProducer(mlir::OpBuilder &b,
                                                mlir::Value value,
                                                mlir::IRMapping &mapping,
                                                mlir::Operation *user);
  /// cp.async of `copy`'s window (at `offsets`) into buffer `stage`.
  /// The source row that row `row` of a gather's destination reads: the
  /// row number at position `first + row` of its index tile, or -1 (read as
  /// zeros) past the tile's end.
  mlir::Value gatheredRow(mlir::OpBuilder &b, CopyOp copy, mlir::Value first,
                          mlir::Value row);
  mlir::LogicalResult emitAsyncCopy(CopyOp copy, mlir::OpBuilder &b,
                                    mlir::ValueRange offsets,
                                    mlir::Value stage);
  /// cp.async.bulk.tensor of `copy`'s box (at `offsets`) into buffer `stage`
  /// through its tensor map, completing on `mbarrier` (thread 0 only).
  mlir::LogicalResult emitTmaCopy(CopyOp copy, mlir::OpBuilder &b,
                                  mlir::ValueRange offsets, mlir::Value stage,
                                  mlir::Value mbarrier);
  /// The mbarriers of a pipelined loop with TMA copies (at its
  /// tile.mbarrier_offset; a !llvm.ptr<3> to the first): one "full" per
  /// stage (count 1), then, with `releaseCount`, one "empty" per stage that
  /// many threads arrive on; initialized by thread 0 behind a proxy fence
  /// and a barrier.
  mlir::FailureOr<mlir::Value>
  initStageMbarriers(PipelinedOp op, mlir::OpBuilder &b, int64_t releaseCount);
  /// The mbarriers at byte `offset` of shared memory (a !llvm.ptr<3>).
  mlir::Value getMbarrierBase(mlir::OpBuilder &b, int64_t offset);
  /// Stage `stage`'s "full" mbarrier.
  mlir::Value getStageMbarrier(mlir::OpBuilder &b, mlir::Value mbarriers,
                               mlir::Value stage);
  /// Stage `stage`'s "empty" mbarrier, which follows the `stages` "full"
  /// ones.
  mlir::Value getEmptyStageMbarrier(mlir::OpBuilder &b, mlir::Value mbarriers,
                                    mlir::Value stage, int64_t stages);
  /// Thread 0 expects `bytes` on `mbarrier`, then issues the TMA copies of
  /// one stage (each with its source offsets); with `release` (the stage's
  /// empty mbarrier) it first waits, when `releaseNeeded`, for the phase of
  /// parity `releaseParity`.
  mlir::LogicalResult issueTmaStage(
      mlir::OpBuilder &b,
      llvm::ArrayRef<std::pair<CopyOp, llvm::ArrayRef<mlir::Value>>> copies,
      mlir::Value stage, mlir::Value mbarrier, int64_t bytes,
      mlir::Value releaseNeeded = {}, mlir::Value release = {},
      mlir::Value releaseParity = {});
  /// The address of a shared-memory memref's first element (!llvm.ptr<3>).
  mlir::Value getSharedPointer(mlir::OpBuilder &b, mlir::Value memref);
  /// The buffer of pipeline stage `stage` of a multi-buffered shared tile.
  mlir::Value getStageView(mlir::OpBuilder &b, mlir::Value tile,
                           mlir::Value stage);
  mlir::LogicalResult lowerReduce(ReduceOp op, mlir::OpBuilder &b);
  mlir::LogicalResult lowerPerWarpgroup(PerWarpgroupOp op, mlir::OpBuilder &b);
  /// tile.rejoin: the body on the consumers' and the producer's threads,
  /// after the roles trade registers back (RejoinOp.cpp).
  mlir::LogicalResult lowerRejoin(RejoinOp op, mlir::OpBuilder &b);
  mlir::LogicalResult lowerPick(PickOp op, mlir::OpBuilder &b);
  mlir::LogicalResult lowerScan(ScanOp op, mlir::OpBuilder &b);
  mlir::LogicalResult lowerWarpScan(WarpScanOp op, mlir::OpBuilder &b,
                                    const ElementContext *context);
  mlir::LogicalResult lowerWarpBroadcast(WarpBroadcastOp op, mlir::OpBuilder &b,
                                         const ElementContext *context);
  mlir::LogicalResult lowerVote(VoteOp op, mlir::OpBuilder &b,
                                const ElementContext *context);
  mlir::LogicalResult lowerWarpMatch(WarpMatchOp op, mlir::OpBuilder &b,
                                     const ElementContext *context);
  mlir::LogicalResult lowerAllOf(AllOfOp op, mlir::OpBuilder &b);
  mlir::LogicalResult lowerFragmentAllOf(AllOfOp op, mlir::OpBuilder &b);
  mlir::LogicalResult lowerGemm(GemmOp op, mlir::OpBuilder &b);

  /// Lowers the tile ops nested in `root` (root included), in order.
  mlir::LogicalResult lowerNested(mlir::Operation *root,
                                  const ElementContext *context);

  //===--------------------------------------------------------------------===//
  // Helpers shared by the op families.
  //===--------------------------------------------------------------------===//

  mlir::Value index(mlir::OpBuilder &b, int64_t value);
  mlir::Value zero(mlir::OpBuilder &b, mlir::Type type);
  /// Coordinates of value `v` of this thread in a layout.
  llvm::SmallVector<mlir::Value>
  coordinates(mlir::OpBuilder &b, const VectorLayout &layout, int64_t v);
  /// Whether value `v` of this thread lies inside the tile (null: always).
  mlir::Value isInside(mlir::OpBuilder &b, const VectorLayout &layout,
                       int64_t v);
  /// The layout of a fragment type (assigned by tile-assign-layouts).
  mlir::FailureOr<VectorLayout> getLayout(mlir::Operation *op,
                                          FragmentType type);
  /// A cooperative layout for moving a whole shared tile with all threads.
  VectorLayout getCooperativeLayout(llvm::ArrayRef<int64_t> shape,
                                    mlir::Type elementType);
  /// All-true if every index is inside `memref` (unsigned compare, so
  /// negative indices are outside); `vector` elements along the innermost.
  mlir::Value inBounds(mlir::OpBuilder &b, mlir::Value memref,
                       mlir::ValueRange indices, int64_t vector = 1);
  /// Loads `vector` elements (1: a scalar); out-of-bounds reads give zero
  /// when `checkBounds`.
  mlir::Value loadElements(mlir::OpBuilder &b, mlir::Value memref,
                           mlir::ValueRange indices, int64_t vector,
                           bool checkBounds);
  /// Stores `value` (scalar or vector); out-of-bounds writes are dropped
  /// when `checkBounds`. `predicate` (may be null) guards the store too.
  void storeElements(mlir::OpBuilder &b, mlir::Value value, mlir::Value memref,
                     mlir::ValueRange indices, bool checkBounds,
                     mlir::Value predicate);
  /// Runs `body` under `condition` (or unconditionally when null).
  void emitIf(mlir::OpBuilder &b, mlir::Value condition,
              llvm::function_ref<void(mlir::OpBuilder &)> body);
  void barrier(mlir::OpBuilder &b);
  /// The block's thread index read again, opaquely: LLVM cannot prove it
  /// equal to the first read, so addresses formed from it are not merged
  /// with (and kept live from) those formed before (tile.pipelined
  /// recompute_after).
  mlir::Value readThreadIdAgain(mlir::OpBuilder &b, mlir::Location loc);
  /// The rendezvous of a warp-specialized launch's two roles: named barrier
  /// 2 over every thread of the block (consumers and producer), each role
  /// at its own instruction, so non-aligned (`barrier.sync`; `bar.sync` and
  /// barrier 0 require one instruction for all).
  void roleRendezvous(mlir::OpBuilder &b);
  /// fence.proxy.async.shared::cta: this thread's shared-memory writes
  /// become visible to the async proxy (wgmma operands).
  void fenceSharedForAsyncProxy(mlir::OpBuilder &b);
  /// Indices into the storage of a shared tile for element coordinates
  /// (a 1-D swizzled position for tiles that wgmma reads).
  llvm::SmallVector<mlir::Value>
  sharedIndices(mlir::OpBuilder &b, mlir::Value tile,
                llvm::ArrayRef<mlir::Value> coords);
  /// The storage indices of element `indices` of `tile` for a tile.load or
  /// tile.store `op`: sharedIndices for a whole swizzled tile, an error for
  /// a view into one, the indices themselves otherwise.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  getElementIndices(mlir::Operation *op, mlir::OpBuilder &b, mlir::Value tile,
                    mlir::ValueRange indices);
  mlir::Value isThreadZero(mlir::OpBuilder &b);
  /// threadId / 128 (i32), broadcast from lane 0 so that ptxas knows it
  /// is warp-uniform and keeps what is built from it (wgmma descriptors)
  /// in uniform registers. Emitted where the whole warp runs; gpu.shuffle
  /// is Pure in MLIR, so no pass between this lowering and NVVM may sink it
  /// into thread-dependent control flow (only canonicalize and CSE run
  /// there; LLVM treats it as convergent).
  mlir::Value getUniformWarpgroupIndex(mlir::OpBuilder &b, mlir::Location loc);
  /// Element conversion, with fp8 through PTX cvt.
  mlir::Value convertElement(mlir::OpBuilder &b, mlir::Value value,
                             mlir::Type to);
  /// Converts a pair of elements (faster for fp8, which packs two).
  std::pair<mlir::Value, mlir::Value> convertPair(mlir::OpBuilder &b,
                                                  mlir::Value first,
                                                  mlir::Value second,
                                                  mlir::Type to);

  /// getPartnerValues of each (parallel, dimension, mask) that a fragment
  /// load reads the partner of its element at.
  std::map<std::tuple<mlir::Operation *, int64_t, int64_t>,
           llvm::SmallVector<int64_t>>
      partnerValues;

  LaunchOp launch;
  mlir::gpu::GPUFuncOp func;
  /// convert-tile-to-gpu's elide-sync: the synchronization rules of the
  /// fifty-second session (hand-overs, settled gemm operands, fences of
  /// releases and named barriers), off until GPU-checked.
  bool elideSync = false;
  int64_t threads;
  std::string chip;
  mlir::Value threadId;
  /// The warpgroup index while a tile.per_warpgroup body is lowered (then
  /// `threadId` and `threads` are the warpgroup's own); null elsewhere.
  mlir::Value warpgroup;
  /// Whether the tile.per_warpgroup body being lowered is fenced by its
  /// warp-specialized loop (isFencedByPipeline): its named barriers need no
  /// fence.
  bool warpgroupFencedByPipeline = false;
  /// The tile.per_warpgroup ops of warp-specialized loop bodies that
  /// isFencedByPipeline, marked before the bodies are lowered.
  llvm::SmallPtrSet<mlir::Operation *, 4> fencedWarpgroups;
  /// Marks with kHandOverAttr the fragment-to-shared copies of
  /// `perWarpgroup`'s body whose destination no other op that their own
  /// warpgroup runs accesses, for every one of `warpgroups` warpgroup
  /// indices (decided before the body is lowered): a hand-over to another
  /// warpgroup, which the kernel's named barriers order. They need no
  /// warpgroup barrier before or after their stores (and so end with none:
  /// mayRaceWithEarlierReads).
  void markHandOverCopies(PerWarpgroupOp perWarpgroup, int64_t warpgroups);
  /// Bytes of the reduction scratch each warpgroup owns inside a
  /// tile.per_warpgroup body: the plan's scratch split evenly between the
  /// warpgroups, the same for every reduction so that the warpgroups'
  /// slices never overlap.
  int64_t warpgroupScratchBytes = 0;
  /// Gemms of a pipelined body (maybe nested in scf.if or per_warpgroup)
  /// that count on the fence and barrier the pipeline emits (see
  /// isFencedByPipeline).
  llvm::SmallPtrSet<mlir::Operation *, 4> fencedGemms;
  /// Adds the gemms of `loop`'s body (at any depth) that isFencedByPipeline
  /// to fencedGemms.
  void markGemmsFencedByPipeline(PipelinedOp loop);
  /// Gemms whose wgmma group stays in flight (wait_group 1) across the
  /// iterations of their pipelined loop (see getDeferrableGemm).
  llvm::SmallPtrSet<mlir::Operation *, 4> deferredGemms;
  /// Gemms of an overlap_gemm loop: issued and committed, not waited for;
  /// their accumulators (one struct per m64 block) go to gemmAccumulators
  /// instead of the fragment's registers.
  llvm::SmallPtrSet<mlir::Operation *, 4> asyncGemms;
  /// Global-to-shared copies whose leading barrier the previous copy's
  /// covers: that copy left out its trailing barrier, so that both copies'
  /// loads are in flight at once (one round trip, one barrier).
  llvm::SmallPtrSet<mlir::Operation *, 4> joinedCopies;
  /// The destinations of the copies since the last one that had its
  /// leading barrier (a chain of joined copies must not share bytes).
  llvm::SmallVector<mlir::Value> copyChain;
  llvm::DenseMap<mlir::Operation *, llvm::SmallVector<mlir::Value>>
      gemmAccumulators;
  /// Writes wgmma accumulator structs into `op`'s fragment registers.
  void storeGemmAccumulators(mlir::OpBuilder &b, GemmOp op,
                             mlir::ArrayRef<mlir::Value> accumulators);
  /// The consumers' loop of a warp_specialized overlap_gemm loop
  /// (PipelinedOp.cpp).
  mlir::LogicalResult lowerOverlappedConsumers(PipelinedOp op,
                                               mlir::OpBuilder &b,
                                               mlir::ArrayRef<CopyOp> producers,
                                               mlir::Value mbarriers,
                                               bool iterationBarrier);
  /// wgmma's A operand from a register fragment, and wgmma with it.
  llvm::SmallVector<mlir::Value>
  packOperandA(mlir::OpBuilder &b, mlir::Location loc, mlir::Value fragment,
               int64_t slice, int64_t elementBytes);
  mlir::Value emitWgmmaWithRegisterA(mlir::OpBuilder &b, mlir::Location loc,
                                     mlir::Value accumulator,
                                     mlir::Type structType,
                                     llvm::ArrayRef<mlir::Value> aRegisters,
                                     mlir::Value bDescriptor, int64_t n,
                                     mlir::Type elementType, bool overwrite,
                                     bool transposeB);
  /// tile.gemm on mma.sync (targets without wgmma).
  mlir::LogicalResult lowerMmaSyncGemm(GemmOp op, mlir::OpBuilder &b);
  /// The gemm of `loop` that may leave its wgmma in flight, if any.
  GemmOp getDeferrableGemm(PipelinedOp loop);
  mlir::Value sharedBase; // memref<?xi8, workgroup>
  /// The consumers' / producer's branches of a warp-specialized launch.
  mlir::scf::IfOp roleSplit;
  /// The registers both roles go back to before the launch's tile.rejoin
  /// (0: setmaxnreg never moved any).
  int64_t rejoinRegisters = 0;
  /// The tensor-map parameter each TMA copy (tile.tma) reads through.
  llvm::DenseMap<mlir::Operation *, mlir::Value> tensorMaps;
  /// Stage buffers whose memref is the current iteration's stage (inside
  /// their pipelined loop's body).
  llvm::DenseSet<mlir::Value> stagedTiles;
  /// Lowered storage of global, shared and local tiles.
  llvm::DenseMap<mlir::Value, mlir::Value> memrefs;
  /// Byte offset of each shared tile in the shared buffer.
  llvm::DenseMap<mlir::Value, int64_t> sharedOffsets;
  /// One rank-0 memref (a register after mem2reg) per fragment value.
  llvm::DenseMap<mlir::Value, llvm::SmallVector<mlir::Value>> registers;
  /// Tile ops lowered so far, erased at the end.
  llvm::SmallVector<mlir::Operation *> lowered;
};

/// Bytes of a shared tile of static shape.
int64_t getTileBytes(SharedType type);

/// Whether a type is a float8 type (stored as bytes, converted with cvt).
bool isFloat8(mlir::Type type);

/// Constant row-major coordinates of element `element` of a static shape.
llvm::SmallVector<mlir::Value> staticCoordinates(mlir::OpBuilder &b,
                                                 mlir::Location loc,
                                                 llvm::ArrayRef<int64_t> shape,
                                                 int64_t element);

/// Waits until the phase of parity `parity` (i32) of `mbarrier` (a shared
/// pointer) completes.
void waitForPhase(mlir::OpBuilder &b, mlir::Location loc, mlir::Value mbarrier,
                  mlir::Value parity);

/// Whether `value` is provably a multiple of `divisor` (constants, and sums
/// and products of multiples), e.g. a k-loop offset `t * block_k`.
bool isKnownMultipleOf(mlir::Value value, int64_t divisor);

} // namespace hisa::tile

#endif // HISA_LIB_CONVERSION_TILETOGPU_KERNELLOWERING_H
