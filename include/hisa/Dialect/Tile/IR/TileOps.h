//===- TileOps.h - Tile dialect operations ----------------------*- C++ -*-===//

#ifndef HISA_DIALECT_TILE_IR_TILEOPS_H
#define HISA_DIALECT_TILE_IR_TILEOPS_H

#include "hisa/Dialect/Tile/IR/TileDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace hisa::tile {
class LaunchOp;
} // namespace hisa::tile

#define GET_OP_CLASSES
#include "hisa/Dialect/Tile/IR/TileOps.h.inc"

namespace hisa::tile {
/// The two-operand integer arith ops (names without "arith.") that may
/// compute a kernel's launch grid: the JIT evaluates exactly these on the
/// host, besides integer constants, casts, tile.param and tile.dim.
llvm::ArrayRef<llvm::StringRef> getGridBinaryOpNames();

/// `value` folded from constants and the values `known` gives (null where
/// it gives none) through the side-effect-free, region-free ops inside
/// `scope`, each by its own fold; null if it depends on anything else or
/// needs more than `maxDepth` ops.
mlir::Attribute
evaluateByFolding(mlir::Value value, mlir::Operation *scope,
                  llvm::function_ref<mlir::Attribute(mlir::Value)> known,
                  int maxDepth);

/// The tile.alloc behind a shared tile value: the value's own, or for a
/// tile.pick the first candidate's (all have its type and layout); null
/// for anything else.
AllocOp getRootAlloc(mlir::Value tile);

/// The tile.allocs a shared tile value may be: itself, or every candidate
/// of a tile.pick.
llvm::SmallVector<AllocOp> getPossibleAllocs(mlir::Value tile);

/// The warp_specialized tile.pipelined whose stage buffer a tile.release
/// hands back (through tile.per_warpgroup and scf.if), or null.
PipelinedOp getReleasingLoop(ReleaseOp op);

/// Whether a tile.release in `loop`'s body hands its buffers back one copy
/// at a time (then each copy has its own mbarriers).
bool releasesCopies(PipelinedOp loop);

/// Whether `loop`'s global-to-shared copies are staged (issued ahead into
/// per-stage buffers): with two stages or more, or copy by copy with
/// tile.release.
bool stagesCopies(PipelinedOp loop);

/// The name of the attribute that gives one staged copy of a
/// warp_specialized loop with tile.release its own number of stage buffers.
inline constexpr llvm::StringLiteral kCopyStagesAttrName = "tile.stages";

/// The stage buffers of staged copy `copy` of `loop`: its own
/// `tile.stages`, else the loop's num_stages.
int64_t getCopyStages(CopyOp copy, PipelinedOp loop);

/// Whether `op` is inside a tile.per_warpgroup body.
bool isInPerWarpgroup(mlir::Operation *op);

/// The threads a fragment value is spread over: a warpgroup's
/// (kWarpgroupThreads) when it is used inside tile.per_warpgroup bodies
/// (each warpgroup has its own copy), the launch's otherwise; nullopt when
/// it is used both inside and outside one.
std::optional<int64_t> getFragmentScopeThreads(mlir::Value fragment,
                                               int64_t launchThreads);

/// The tile `op` writes (its destination: store, atomic, copy, fill, clear,
/// cast, reduce, scan), or null.
mlir::Value getWrittenTile(mlir::Operation *op);

/// The tile `value` is a view of (tile.view chains), or `value` itself.
mlir::Value getViewedTile(mlir::Value value);

/// The most threads that run ops of `launch` at once: its threads, plus the
/// producer warpgroup where a tile.rejoin follows a warp-specialized loop.
int64_t getMostThreads(LaunchOp launch);
} // namespace hisa::tile

#endif // HISA_DIALECT_TILE_IR_TILEOPS_H
