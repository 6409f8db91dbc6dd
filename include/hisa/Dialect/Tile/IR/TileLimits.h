//===- TileLimits.h - Sizes the tile dialect accepts ------------*- C++ -*-===//
//
// Every size the compiler allocates or unrolls is bounded here, by what the
// largest supported target (sm_90) can hold, so that an absurd shape (written
// literally or reached through a parameter binding) is refused with a
// diagnostic before any lowering allocates per element. docs/design.md
// ("Limits") explains each bound.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_DIALECT_TILE_IR_TILELIMITS_H
#define HISA_DIALECT_TILE_IR_TILELIMITS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <optional>

namespace hisa::tile {

/// Shared memory one block may use on sm_90 (227 KiB).
inline constexpr int64_t kMaxSharedBytes = 232448;
/// A block's registers can never exceed one SM's register file: 65,536
/// 32-bit registers. A fragment value takes at least one 32-bit register.
inline constexpr int64_t kMaxFragmentRegisterBytes = 65536 * 4;
/// Local memory one thread may address (sm_90: 512 KiB).
inline constexpr int64_t kMaxLocalBytesPerThread = 512 * 1024;
/// Elements of a tile.parallel domain: enough for the largest shared tile
/// (227 KiB of 1-byte elements) and the largest fragment.
inline constexpr int64_t kMaxParallelElements = 1 << 18;
/// Bytes of the statically known part of a global tensor (256 TiB, far
/// beyond any GPU's memory; keeps every byte offset within int64).
inline constexpr int64_t kMaxGlobalBytes = int64_t(1) << 48;
/// Buffers in flight of a tile.pipelined loop.
inline constexpr int64_t kMaxPipelineStages = 32;
/// Threads of the producer warpgroup a warp-specialized pipeline adds.
inline constexpr int64_t kProducerThreads = 128;
/// Named barriers of a warp-specialized launch: the consumers' block
/// barriers (among the launch's threads) and the roles' rendezvous (every
/// thread of the block). Barrier 0 (__syncthreads) is not used there.
inline constexpr int64_t kConsumerBarrier = 1;
inline constexpr int64_t kRoleRendezvousBarrier = 2;
/// Threads of a warpgroup: what a tile.per_warpgroup body's fragments and
/// tile.parallel domains are spread over.
inline constexpr int64_t kWarpgroupThreads = 128;
/// Named barrier of warpgroup w's own synchronization inside a
/// tile.per_warpgroup body: kWarpgroupBarrierBase + w (ids 3 .. 3 + W - 1;
/// the hardware has 16).
inline constexpr int64_t kWarpgroupBarrierBase = 3;
/// `tile.barrier id = N` is named barrier kNamedBarrierBase + N over the
/// consumer threads (above the warpgroups' ids: at most 7 warpgroups of
/// consumers beside a producer, ids 3 .. 9).
inline constexpr int64_t kNamedBarrierBase = 10;
inline constexpr int64_t kNamedBarriers = 6;
/// Copies of one warp-specialized loop with tile.release: each has its own
/// full/empty mbarriers per stage and a bit in the consumers' wait and
/// release masks (32-bit).
inline constexpr int64_t kMaxReleasedCopies = 16;
/// Registers a producer thread keeps (setmaxnreg): the address arithmetic
/// of a 64-row gather of 1 KiB rows spills at 56 and fits at 72 (ptxas,
/// sparse_attn_ws). With two consumer warpgroups, 128 x 72 + 256 x 216 is
/// the 384 x 168 registers ptxas gives the block.
inline constexpr int64_t kProducerRegisters = 72;
/// The most elements a tile.all_of reads (each warp reads them all).
inline constexpr int64_t kMaxAllOfElements = 1024;

/// Most independent chains in the register part of a tile.reduce (a
/// thread holds up to 64 values of one row of a [64, 256] accumulator;
/// with more chains than values, each value starts its own chain).
inline constexpr int64_t kMaxReduceChains = 16;
/// The most asynchronous gemms a tile.wait_gemms may leave running
/// (wgmma.wait_group's operand; the hardware tracks a few groups).
inline constexpr int64_t kMaxPendingGemms = 7;
/// What the producer of an overlap_gemm loop keeps: it issues TMA boxes
/// alone (one thread, a few addresses), and the consumers hold two
/// accumulators. Also any producer whose copies are all TMA boxes when the
/// launch asks for several blocks per SM (or the pool is too small for
/// kProducerRegisters).
inline constexpr int64_t kTmaProducerRegisters = 40;

/// Bytes one element of `type` occupies in memory (sub-byte types: 1).
int64_t getElementBytes(mlir::Type type);

/// The product of the static sizes `dims` describes, or std::nullopt when a
/// dimension is symbolic or `?`, or the product overflows int64.
std::optional<int64_t> getStaticElementCount(mlir::ArrayAttr dims);

/// Bytes of a tile type with a fully static shape, or std::nullopt when the
/// type is no tile, a dimension is not static, or the size overflows int64.
std::optional<int64_t> getStaticTileBytes(mlir::Type type);

/// `count * bytes` (or any product of non-negative factors), or
/// std::nullopt on int64 overflow.
std::optional<int64_t> checkedMul(int64_t lhs, int64_t rhs);
std::optional<int64_t> checkedAdd(int64_t lhs, int64_t rhs);

/// Checks that a tile of kind `kind` ("global tensor", "shared tile",
/// "fragment", "local tile") with static `dims` and `elementType` fits what
/// the target can hold; symbolic shapes pass (they are checked once bound).
/// The diagnostic names the type, its size and the limit.
mlir::LogicalResult
verifyTileFootprint(llvm::function_ref<mlir::InFlightDiagnostic()> emitError,
                    llvm::StringRef kind, mlir::ArrayAttr dims,
                    mlir::Type elementType);

/// The same for a tile type (global, shared, fragment or local); other
/// types pass.
mlir::LogicalResult
verifyTileFootprint(llvm::function_ref<mlir::InFlightDiagnostic()> emitError,
                    mlir::Type type);

} // namespace hisa::tile

#endif // HISA_DIALECT_TILE_IR_TILELIMITS_H
