//===- Operators.cpp - hisa's operators on raw device pointers ------------===//

#include "hisa/Ops/Operators.h"
#include "hisa/Ops/V4Operators.h"

#include "OperatorSupport.h"

#include "hisa/Runtime/CudaDriver.h"
#include "hisa/Runtime/LaunchGraph.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <optional>
#include <string>

using namespace llvm;
using namespace hisa::runtime;

namespace hisa::ops {
using namespace detail;
namespace {

bool isSupportedMqaShape(int64_t heads, int64_t dim) {
  return (heads == 16 || heads == 32 || heads == 64 || heads == 128) &&
         (dim == 64 || dim == 128);
}

bool isSupportedBlockSize(int64_t kb) {
  return kb == 64 || kb == 128 || kb == 256;
}

/// Queries per block of pool_mqa_logits: 256 query rows (the widest wgmma).
int64_t poolMqaBlockQ(int64_t heads) { return 256 / heads; }

/// Blocks per SM for block_sparse_mqa_logits, which reads its key blocks in
/// tiles of kStage2TileRows (64) rows: five fit while the [64, heads]
/// accumulator is at most 32 registers a thread; H = 128's needs 64 (ptxas:
/// no spills at three).
int64_t blockSparseMinBlocks(int64_t heads) { return heads <= 64 ? 5 : 3; }

/// topk_f32's cluster split (`splits`): rows of at least this many
/// columns, no more rows than SMs, get a cluster of blocks per row, one
/// block per kClusterPart columns up to kClusterBlocks (the portable
/// cluster size). Measured on an H100 (probes/topk_splits_sweep.py): 2 at
/// [64, 16384], 8 at [64 or 128, 65536] and past.
constexpr int64_t kClusterColumns = 16384;
constexpr int64_t kClusterPart = 8192;
constexpr int64_t kClusterBlocks = 8;

/// The largest top-k key cache: 192 KiB of keys.
constexpr int64_t kLargestTopkCache = 49152;

/// The smallest top-k key cache (8192 keys and up) that holds `columns`
/// keys, or 256 (none: the row is re-read at every pass) past the largest.
int64_t topkCacheFor(int64_t columns) {
  for (int64_t size :
       {int64_t(8192), int64_t(16384), int64_t(32768), kLargestTopkCache})
    if (columns <= size)
      return size;
  return 256;
}

/// The top-k specialization for rows of `columns`: the key cache (rows,
/// or windows, of at most that many columns keep their keys in shared
/// memory; longer ones re-read x at every pass), the candidate list that
/// the threshold's 16-bit bin moves to after the second pass when it fits
/// (so that the last passes and the selection read the candidates, not the
/// row), and the blocks per SM the registers are bounded for. Measured on
/// the H200 (docs/performance.md, ninth session): past 8192 columns,
/// re-reading rows with five blocks per SM (the re-reads mostly hit L2)
/// beats one to three blocks per SM holding 64-192 KiB caches, e.g. causal
/// rows of 32768 columns 6.35 -> 2.99 ms, unless there are too few rows to
/// fill the GPU twice over: then each block keeps its row (decode's 64 rows
/// of 16388 columns: 26.5 -> 22.3 us).
Expected<SpecializationText> topkParams(int64_t rows, int64_t columns,
                                        bool windowed, bool relative) {
  int64_t cache, candidates, compact, minBlocks, splits = 1;
  // Two blocks per SM; measured at decode's 64 rows only.
  bool fewRows = false, clusterRows = false;
  if (columns > 8192) {
    Expected<int64_t> sms = getPlanningMultiprocessors(PlanFor::Launch);
    if (!sms)
      return sms.takeError();
    fewRows = columns <= kLargestTopkCache && rows <= 2 * *sms;
    // Long rows, too few for several blocks per SM: a cluster of blocks per
    // row, each walking a contiguous part (cached when it fits). H100, k =
    // 2048: [64, 131072] 278.6 us with one block per row, 81.0 with 8;
    // [128, 65536] 112.5 with today's single-block plan, 67.2 with 8.
    clusterRows = columns >= kClusterColumns && rows <= *sms;
  }
  if (clusterRows) {
    while (splits < kClusterBlocks && columns / (2 * splits) >= kClusterPart)
      splits *= 2;
    int64_t part = (columns + splits - 1) / splits;
    cache = topkCacheFor(part);
    // No compaction with splits (the kernel turns it off: a compacting
    // block would write before the lower blocks have counted their keys);
    // the candidate lists hold the cluster's histograms instead (512 at
    // least).
    candidates = 512, compact = 0, minBlocks = 1;
  } else if (columns <= 2048) {
    // Short rows: four passes over 8 KiB of keys cost less than the
    // compaction's code, which would cost them a block per SM.
    cache = 2048, candidates = 32, compact = 0, minBlocks = 6;
  } else if (columns <= 8192) {
    cache = 8192, candidates = 128, compact = 1, minBlocks = 5;
  } else if (fewRows) {
    cache = topkCacheFor(columns);
    candidates = 128, compact = 1, minBlocks = 1;
  } else {
    // No row is cached: the cache is minimal and the candidate list takes
    // its place (compacted ties are ranked pairwise, so it stays short).
    cache = 256, candidates = 1024, compact = 1, minBlocks = 5;
  }
  return specialization({{"cache", cache},
                         {"candidates", candidates},
                         {"compact", compact},
                         {"min_blocks", minBlocks},
                         {"relative", relative ? 1 : 0},
                         {"windowed", windowed ? 1 : 0},
                         {"splits", splits}});
}

/// Shared memory a block of the fused stages may take (the H200 allows
/// 227 KiB; a little is left for the runtime's reduction scratch).
constexpr int64_t kStageSharedBudget = 220 * 1024;
constexpr int64_t kStage1CacheSizes[] = {256, 1024, 4096, 8192, 16384, 32768};
/// How many blocks of `sharedBytes` each an SM holds by shared memory: 228
/// KiB an SM (H100, H200), of which it reserves 1 KiB per block.
int64_t blocksPerSmByShared(int64_t sharedBytes) {
  return (228 * 1024) / (sharedBytes + 1024);
}

/// Key rows per gemm tile of block_sparse_topk_tokens (divides every kb):
/// small tiles leave room for three blocks per SM beside the T*kb keys.
constexpr int64_t kStage2TileRows = 64;
/// The warp-specialized stage 2 takes tiles of this many rows where three
/// blocks per SM still fit with them: two m64 wgmma chains a tile, half the
/// iterations and stage hand-overs (6-7% faster at H = 64, T*kb = 8192,
/// thirty-seventh session, H100).
constexpr int64_t kStage2WideTileRows = 128;

} // namespace

Error checkMqaShape(const char *op, int64_t heads, int64_t dim) {
  if (!isSupportedMqaShape(heads, dim))
    return argumentError(
        formatv("{0}: q has H = {1} heads of D = {2}, which is "
                "not supported (H in {{16, 32, 64, 128}, D in "
                "{{64, 128})",
                op, heads, dim));
  return Error::success();
}

Error fp8BlockMeanPooling(const void *k, const float *kScale, void *blockedK,
                          float *blockedScale, int64_t n, int64_t dim,
                          int64_t kb, void *stream) {
  const char *op = "fp8_block_mean_pooling";
  if (n < 0 || (dim != 64 && dim != 128) || !isSupportedBlockSize(kb))
    return argumentError(formatv("{0}: unsupported n = {1}, dim = {2}, kb = "
                                 "{3} (dim in {{64, 128}, kb in {{64, 128, "
                                 "256})",
                                 op, n, dim, kb));
  if (Error error = checkIndexRange(op, "n", n))
    return error;
  if (n == 0)
    return Error::success();
  if (Error error = checkPointers(op, {{"k", k, 16},
                                       {"k_scale", kScale, 4},
                                       {"blocked_k", blockedK, 16},
                                       {"blocked_scale", blockedScale, 4}}))
    return error;
  int64_t blocks = (n + kb - 1) / kb;
  LaunchArgument arguments[] = {tensor(k, {n, dim}), tensor(kScale, {n}),
                                tensor(blockedK, {blocks, dim}),
                                tensor(blockedScale, {blocks})};
  return runOperator(op, specialization({{"dim", dim}, {"kb", kb}}), arguments,
                     stream);
}

Error cleanAndMaintainLogits(float *logits, const int32_t *s, const int32_t *e,
                             int64_t m, int64_t n, void *stream) {
  const char *op = "clean_and_maintain_logits";
  if (m < 0 || n < 0)
    return argumentError(
        formatv("{0}: negative size m = {1}, n = {2}", op, m, n));
  // s and e are int32 columns; a block per row range in x.
  if (Error error = checkIndexRange(op, "m", m))
    return error;
  if (Error error = checkIndexRange(op, "n", n))
    return error;
  if (Error error = checkTensorBytes(op, "logits [m, n]", {m, n}, 4))
    return error;
  LaunchArgument arguments[] = {tensor(logits, {m, n}), tensor(s, {m}),
                                tensor(e, {m})};
  return runOperator(op, "", arguments, stream);
}

Error poolMqaLogits(const void *q, const void *blockedK,
                    const float *blockedKScale, const float *weights,
                    const int32_t *bks, const int32_t *bke, float *logits,
                    int64_t m, int64_t nb, int64_t heads, int64_t dim,
                    void *stream) {
  const char *op = "pool_mqa_logits";
  if (m < 0 || nb < 0 || !isSupportedMqaShape(heads, dim))
    return argumentError(formatv("{0}: unsupported m = {1}, nb = {2}, heads = "
                                 "{3}, dim = {4} (heads in {{16, 32, 64, 128}, "
                                 "dim in {{64, 128})",
                                 op, m, nb, heads, dim));
  if (Error error = checkIndexRange(op, "m", m))
    return error;
  if (Error error = checkIndexRange(op, "nb", nb))
    return error;
  if (Error error = checkTensorBytes(op, "logits [m, nb]", {m, nb}, 4))
    return error;
  if (m == 0 || nb == 0)
    return Error::success();
  // Checked here under the C ABI's names (the kernel's differ), once.
  if (Error error = checkDevicePointerArguments(
          op, {{"q", q, 16},
               {"blocked_k", blockedK, 16},
               {"blocked_k_scale", blockedKScale, 16},
               {"weights", weights, 16},
               {"bks", bks, 4},
               {"bke", bke, 4},
               {"logits", logits, 4}}))
    return error;
  TrustedPointersScope checkedPointers;
  LaunchArgument arguments[] = {tensor(q, {m * heads, dim}),
                                tensor(blockedK, {nb, dim}),
                                tensor(blockedKScale, {nb}),
                                tensor(weights, {m, heads}),
                                tensor(bks, {m}),
                                tensor(bke, {m}),
                                tensor(logits, {m, nb})};
  return runOperator(
      op,
      specialization(
          {{"block_q", poolMqaBlockQ(heads)}, {"dim", dim}, {"heads", heads}}),
      arguments, stream);
}

Error mqaLogitsDecode(const void *q, const void *k, const float *kScale,
                      const float *weights, const int32_t *starts,
                      const int32_t *ends, float *logits, int64_t m,
                      int64_t rowLength, int64_t heads, int64_t dim,
                      void *stream) {
  const char *op = "mqa_logits_decode";
  if (m < 0 || rowLength < 0 || !isSupportedMqaShape(heads, dim))
    return argumentError(formatv("{0}: unsupported m = {1}, row_length = {2}, "
                                 "heads = {3}, dim = {4} (heads in {{16, 32, "
                                 "64, 128}, dim in {{64, 128})",
                                 op, m, rowLength, heads, dim));
  // Each tile's keys start at a multiple of 4 of its query's rows: 16-byte
  // aligned scale pieces.
  if (rowLength % 4 != 0)
    return argumentError(
        formatv("{0}: row_length = {1} is not a multiple of 4", op, rowLength));
  // One grid row per query. (Each factor bounded before the product.)
  if (m > kMaxDecodeQueries)
    return argumentError(
        formatv("{0}: m = {1} exceeds {2} (the grid's second dimension)", op, m,
                kMaxDecodeQueries));
  if (Error error = checkIndexRange(op, "row_length", rowLength))
    return error;
  if (Error error = checkIndexRange(op, "m * row_length", m * rowLength))
    return error;
  if (m == 0 || rowLength == 0)
    return Error::success();
  LaunchArgument arguments[] = {tensor(q, {m * heads, dim}),
                                tensor(k, {m * rowLength, dim}),
                                tensor(kScale, {m * rowLength}),
                                tensor(weights, {m, heads}),
                                tensor(starts, {m}),
                                tensor(ends, {m}),
                                tensor(logits, {m, rowLength})};
  // Eight blocks per SM hold V4 decode's whole grid (64 sequences x 17
  // chunks) in one wave: 50.4 -> 39.7 us, 64 -> 81% of copy on its 138 MB
  // of keys (probes/mqa_logits_decode_sweep.py, H200). H = 128's [64, 128]
  // accumulator needs more registers than that allows.
  return runOperator(op,
                     specialization({{"dim", dim},
                                     {"heads", heads},
                                     {"min_blocks", heads <= 64 ? 8 : 4}}),
                     arguments, stream);
}

Error blockSparseMqaLogits(const void *q, const void *k, const float *kScale,
                           const int32_t *topkBlockIndex, const float *weights,
                           const int32_t *ks, const int32_t *ke, float *out,
                           int64_t m, int64_t n, int64_t topk, int64_t kb,
                           int64_t heads, int64_t dim, void *stream) {
  const char *op = "block_sparse_mqa_logits";
  if (m < 0 || n < 0 || topk < 0 || !isSupportedBlockSize(kb) ||
      !isSupportedMqaShape(heads, dim))
    return argumentError(formatv("{0}: unsupported m = {1}, n = {2}, topk = "
                                 "{3}, kb = {4}, heads = {5}, dim = {6} (kb in "
                                 "{{64, 128, 256}, heads in {{16, 32, 64, "
                                 "128}, dim in {{64, 128})",
                                 op, m, n, topk, kb, heads, dim));
  // A block per query; k's rows are TMA coordinates (int32).
  if (Error error = checkIndexRange(op, "m", m))
    return error;
  if (Error error = checkIndexRange(op, "n", n))
    return error;
  // Checked also when there is nothing to compute (m = 0): out's columns
  // are int32 indices.
  if (Error error = checkIndexRange(op, "topk", topk))
    return error;
  if (Error error = checkIndexRange(op, "topk * kb", topk * kb))
    return error;
  // The block indices stay in shared memory ([topk] int32) and topk is a
  // specialization parameter: past this the kernel cannot be planned.
  if (topk > kMaxBlockSparseTopk)
    return argumentError(
        formatv("{0}: topk = {1} exceeds {2} (the kernel keeps a query's block "
                "indices in shared memory)",
                op, topk, kMaxBlockSparseTopk));
  if (Error error =
          checkTensorBytes(op, "out [m, topk * kb]", {m, topk, kb}, 4))
    return error;
  if (m == 0 || topk == 0)
    return Error::success();
  LaunchArgument arguments[] = {tensor(q, {m, heads, dim}),
                                tensor(k, {n, dim}),
                                tensor(kScale, {n}),
                                tensor(topkBlockIndex, {m, topk}),
                                tensor(weights, {m, heads}),
                                tensor(ks, {m}),
                                tensor(ke, {m}),
                                tensor(out, {m, topk * kb})};
  return runOperator(
      op,
      specialization({{"dim", dim},
                      {"heads", heads},
                      {"kb", kb},
                      {"kt", kStage2TileRows},
                      {"min_blocks", blockSparseMinBlocks(heads)},
                      {"topk", topk}}),
      arguments, stream);
}

/// topk and topkBf16: `kernel` reads x's elements of `elementBytes`.
static Error runTopk(const char *op, const char *kernel, const void *x,
                     int64_t elementBytes, const int32_t *starts,
                     const int32_t *ends, int32_t *out, int64_t rows,
                     int64_t columns, int64_t k, bool relative, void *stream) {
  if (Error error = checkNonNegative(op, "rows", rows))
    return error;
  if (Error error = checkNonNegative(op, "columns", columns))
    return error;
  // The kernel's column arithmetic is 32-bit and steps 1024 columns past
  // the last one (kernels-dsl/topk_f32.mlir, @topk_keys4).
  if (columns > kTopkMaxColumns)
    return argumentError(formatv("{0}: columns = {1} exceeds {2} (the "
                                 "kernel's 32-bit column arithmetic)",
                                 op, columns, kTopkMaxColumns));
  // k > C is allowed: the slots past the row's values hold -1.
  if (k < 1)
    return argumentError(formatv("{0}: k must be >= 1, got {1}", op, k));
  // A block per row; the kernel counts k in 32 bits.
  if (Error error = checkIndexRange(op, "rows", rows))
    return error;
  if (Error error = checkIndexRange(op, "k", k))
    return error;
  if (Error error = checkTensorBytes(op, "x [rows, columns]", {rows, columns},
                                     elementBytes))
    return error;
  if (Error error = checkTensorBytes(op, "out [rows, k]", {rows, k}, 4))
    return error;
  if ((starts == nullptr) != (ends == nullptr))
    return argumentError(formatv(
        "{0}: starts and ends must be given together (or neither)", op));
  bool windowed = starts != nullptr;
  if (relative && !windowed)
    return argumentError(formatv("{0}: relative columns need windows", op));
  if (rows == 0)
    return Error::success();
  if (Error error = checkPointer(op, "x", x, elementBytes))
    return error;
  if (Error error = checkPointer(op, "out", out, 4))
    return error;
  // Without windows the kernel never reads them: any valid pointer will do.
  const int32_t *windowStarts = windowed ? starts : out;
  const int32_t *windowEnds = windowed ? ends : out;
  LaunchArgument arguments[] = {
      tensor(x, {rows, columns}), tensor(windowStarts, {windowed ? rows : 1}),
      tensor(windowEnds, {windowed ? rows : 1}), tensor(out, {rows, k})};
  Expected<SpecializationText> params =
      topkParams(rows, columns, windowed, relative);
  if (!params)
    return params.takeError();
  return runOperator(kernel, *params, arguments, stream);
}

Error topk(const float *x, const int32_t *starts, const int32_t *ends,
           int32_t *out, int64_t rows, int64_t columns, int64_t k,
           bool relative, void *stream) {
  return runTopk("topk", "topk_f32", x, 4, starts, ends, out, rows, columns, k,
                 relative, stream);
}

Error topkBf16(const void *x, const int32_t *starts, const int32_t *ends,
               int32_t *out, int64_t rows, int64_t columns, int64_t k,
               bool relative, void *stream) {
  return runTopk("topk_bf16", "topk_bf16", x, 2, starts, ends, out, rows,
                 columns, k, relative, stream);
}

Error poolTopkBlocks(const void *q, const void *blockedK,
                     const float *blockedKScale, const float *weights,
                     const int32_t *starts, const int32_t *ends, int32_t *out,
                     int64_t m, int64_t nb, int64_t heads, int64_t dim,
                     int64_t outColumns, int64_t windowKb, void *stream) {
  const char *op = "pool_topk_blocks";
  if (Error error = checkMqaShape(op, heads, dim))
    return error;
  if (Error error = checkNonNegative(op, "m", m))
    return error;
  if (Error error = checkNonNegative(op, "nb", nb))
    return error;
  if (Error error = checkIndexRange(op, "m", m))
    return error;
  // With no pooled keys there is nothing to select and no column to fill
  // (out_columns = min(block_topk, 0)): a column would stay unwritten.
  if (nb == 0 ? outColumns != 0 : outColumns < 1 || outColumns > nb)
    return argumentError(formatv("{0}: the output has out_columns = {1}; it "
                                 "needs min(block_topk, Nb) columns, 1 to Nb "
                                 "(Nb = {2}; 0 when Nb = 0)",
                                 op, outColumns, nb));
  if (windowKb != 1 && !isSupportedBlockSize(windowKb))
    return argumentError(
        formatv("{0}: window_kb = {1} is not 1, 64, 128 or 256", op, windowKb));
  if (nb > kMaxStage1Blocks)
    return argumentError(formatv(
        "{0}: blocked_k has Nb = {1} pooled keys; the fused stage 1 keeps a "
        "query's window of logits on chip, up to {2} blocks (N up to {2} * kb "
        "tokens)",
        op, nb, kMaxStage1Blocks));
  if (m == 0 || nb == 0)
    return Error::success();
  // The kernel's names differ (ks, ke, blocked_scale): checked here, once.
  if (Error error = checkDevicePointerArguments(
          op, {{"q", q, 16},
               {"blocked_k", blockedK, 16},
               {"blocked_k_scale", blockedKScale, 16},
               {"weights", weights, 16},
               {"starts", starts, 4},
               {"ends", ends, 4},
               {"out", out, 4}}))
    return error;
  TrustedPointersScope checkedPointers;
  int64_t cache =
      *std::find_if(std::begin(kStage1CacheSizes), std::end(kStage1CacheSizes),
                    [&](int64_t size) { return nb <= size; });
  // The widest gemm (block_q * heads = 256 query rows) while block_q windows
  // of `cache` keys fit in shared memory; fewer queries per block otherwise.
  int64_t blockQ = 256 / heads;
  while (blockQ > 1 && blockQ * (heads * dim + 4 * cache + 4 * heads) +
                               2 * 64 * (dim + 4) + 8192 >
                           kStageSharedBudget)
    blockQ /= 2;
  LaunchArgument arguments[] = {
      tensor(q, {m * heads, dim}), tensor(blockedK, {nb, dim}),
      tensor(blockedKScale, {nb}), tensor(weights, {m, heads}),
      tensor(starts, {m}),         tensor(ends, {m}),
      tensor(out, {m, outColumns})};
  return runOperator(op,
                     specialization({{"block_q", blockQ},
                                     {"dim", dim},
                                     {"heads", heads},
                                     {"kb", windowKb},
                                     {"nb_cache", cache}}),
                     arguments, stream);
}

Error blockSparseTopkTokens(const void *q, const void *k, const float *kScale,
                            const int32_t *topkBlockIndex, const float *weights,
                            const int32_t *ks, const int32_t *ke, int32_t *out,
                            int64_t m, int64_t n, int64_t topk, int64_t kb,
                            int64_t heads, int64_t dim, int64_t topkTokens,
                            void *stream) {
  const char *op = "block_sparse_topk_tokens";
  if (Error error = checkMqaShape(op, heads, dim))
    return error;
  if (!isSupportedBlockSize(kb))
    return argumentError(formatv(
        "{0}: k_block_size = {1} is not supported (64, 128 or 256)", op, kb));
  if (Error error = checkNonNegative(op, "m", m))
    return error;
  if (Error error = checkNonNegative(op, "n", n))
    return error;
  if (Error error = checkIndexRange(op, "m", m)) // a block per query
    return error;
  if (Error error = checkIndexRange(op, "n", n))
    return error;
  // (Every slot would be -inf: the caller fills -1 without a launch.)
  if (n == 0)
    return argumentError(formatv("{0}: k has no rows (N = 0)", op));
  if (topk < 1)
    return argumentError(formatv(
        "{0}: topk_block_index has T = {1} blocks; need T >= 1", op, topk));
  if (topkTokens < 1)
    return argumentError(
        formatv("{0}: topk_tokens must be >= 1, got {1}", op, topkTokens));
  if (Error error = checkIndexRange(op, "topk_tokens", topkTokens))
    return error;
  if (Error error =
          checkTensorBytes(op, "out [m, topk_tokens]", {m, topkTokens}, 4))
    return error;
  if (topk > kMaxStage2Slots / kb)
    return argumentError(formatv(
        "{0}: T * k_block_size = {1} * {2} exceeds {3}: the fused stage 2 "
        "keeps a query's T * kb logits on chip",
        op, topk, kb, kMaxStage2Slots));
  if (m == 0)
    return Error::success();
  if (Error error = checkPointers(op, {{"q", q, 16},
                                       {"k", k, 16},
                                       {"k_scale", kScale, 16},
                                       {"topk_block_index", topkBlockIndex, 16},
                                       {"weights", weights, 16},
                                       {"ks", ks, 4},
                                       {"ke", ke, 4},
                                       {"out", out, 4}}))
    return error;
  // Blocks per SM: what the T*kb keys and the double-buffered key tiles
  // leave of shared memory, and the registers of the [64, H] accumulator.
  int64_t shared =
      heads * dim + 2 * kStage2TileRows * (dim + 4) + 4 * topk * kb + 8192;
  int64_t minBlocks = std::max<int64_t>(
      1, std::min(blockSparseMinBlocks(heads), blocksPerSmByShared(shared)));
  LaunchArgument arguments[] = {tensor(q, {m, heads, dim}),
                                tensor(k, {n, dim}),
                                tensor(kScale, {n}),
                                tensor(topkBlockIndex, {m, topk}),
                                tensor(weights, {m, heads}),
                                tensor(ks, {m}),
                                tensor(ke, {m}),
                                tensor(out, {m, topkTokens})};
  // At three blocks per SM (the 64 x 128 key blocks of the benchmark shape),
  // a producer warpgroup issuing the key tiles is 3.6-3.8% faster
  // (docs/performance.md, twelfth session). Its registers leave the
  // consumers too few for more blocks per SM, or for H = 128's [64, 128]
  // accumulator (ptxas needs 95 a thread, 80 are left); with fewer blocks per
  // SM it was slower.
  const char *kernel = minBlocks == 3 && heads <= 64
                           ? "block_sparse_topk_tokens_ws"
                           : "block_sparse_topk_tokens";
  auto stageTwoParams = [&](int64_t rows) {
    return specialization({{"dim", dim},
                           {"heads", heads},
                           {"kb", kb},
                           {"kt", rows},
                           {"min_blocks", minBlocks},
                           {"topk", topk}});
  };
  // Where the warp-specialized kernel runs three blocks per SM, 128-row
  // tiles if its plan with them keeps three: 75920 bytes at H = 64, D =
  // 128, T*kb = 8192 against the 76800 a block may take (228 KiB / 3 less
  // the 1 KiB the SM reserves per block), too close for an estimate (the
  // index tiles and alignment move it by a KiB), so the planned size of the
  // specialization decides (compiled once per process and kept in the disk
  // cache; where it does not fit, the 64-row specialization is compiled
  // too, once).
  int64_t tileRows = kStage2TileRows;
  if (minBlocks == 3 && heads <= 64 && kb % kStage2WideTileRows == 0) {
    Expected<int64_t> wideShared = getBuiltinKernelSharedBytes(
        kernel, stageTwoParams(kStage2WideTileRows));
    if (!wideShared)
      return wideShared.takeError();
    if (blocksPerSmByShared(*wideShared) >= 3)
      tileRows = kStage2WideTileRows;
  }
  return runOperator(kernel, stageTwoParams(tileRows), arguments, stream);
}

namespace {

/// Blocks that fill an H100/H200 (132 SMs, one ~209 KiB block each): decode
/// with fewer than SparseAttnWave::splitBelow (token, 64 heads) blocks splits
/// each token's index tiles. From half the SMs on, one block per token is
/// faster than splits plus the combine's launch (H200, GPU run 56,
/// probes/decode_attn_splits.py, 64 tokens x 64 heads: 128 indices 13.1
/// us whole against 21.6 split in two and combined; 640 indices 32.1
/// against 34.1; GPU runs 70-71, probes/decode_attn_prologue.py, with the
/// V4 layer's query norm and rotations: 640 indices 35.6 us whole against
/// 26.2 split in two + 9.2 for the combine, whose ~6 us of load latency a
/// rewrite with static splits and the rotation in registers did not cut).
constexpr int64_t kSparseAttnMaxSplits = 32;

/// The blocks that fill the GPU (one per SM) and, below sms * 64 / 132 (64
/// on the H200, where it was measured), the blocks that split.
struct SparseAttnWave {
  int64_t targetBlocks, splitBelow;
  explicit SparseAttnWave(int64_t sms)
      : targetBlocks(sms), splitBelow(sms * 64 / kMeasuredMultiprocessors) {}
};

/// Decode whose (token, 64 heads) blocks fill at most half the SMs, but
/// not so few that more than two splits would pay (from 45 blocks, 132 /
/// blocks < 3): each token's tiles go to a cluster of two blocks, which
/// merge their halves through distributed shared memory (no workspace, no
/// combine launch).
bool sparseAttnClusterPair(int64_t tokens, int64_t heads, int64_t topk,
                           const SparseAttnWave &wave) {
  int64_t blocks = tokens * ((heads + 63) / 64);
  int64_t tiles = (topk + 63) / 64;
  return tiles >= 2 && blocks > 0 && 2 * blocks <= wave.targetBlocks &&
         wave.targetBlocks / blocks < 3;
}

/// Splits whose partials sparse_attn_combine merges (1: none).
int64_t sparseAttnSplits(int64_t tokens, int64_t heads, int64_t topk,
                         const SparseAttnWave &wave) {
  int64_t blocks = tokens * ((heads + 63) / 64);
  int64_t tiles = (topk + 63) / 64;
  if (blocks <= 0 || blocks >= wave.splitBelow || tiles < 2 ||
      sparseAttnClusterPair(tokens, heads, topk, wave))
    return 1;
  return std::max<int64_t>(
      1, std::min({tiles, wave.targetBlocks / blocks, kSparseAttnMaxSplits}));
}

uint64_t alignPiece(uint64_t bytes) { return (bytes + 255) / 256 * 256; }

/// Bytes of the split partials: outputs [tokens, splits, heads, 512] f32,
/// then lse [tokens, splits, heads] f32.
uint64_t sparseAttnPartialBytes(int64_t tokens, int64_t heads, int64_t splits) {
  uint64_t rows = static_cast<uint64_t>(tokens * splits * heads);
  return alignPiece(rows * kSparseAttnDim * 4) + alignPiece(rows * 4);
}

Error checkSparseAttnSizes(const char *op, int64_t batch, int64_t seqLen,
                           int64_t heads, int64_t nkv, int64_t topk) {
  if (Error error = checkNonNegative(op, "batch", batch))
    return error;
  if (Error error = checkNonNegative(op, "seq_len", seqLen))
    return error;
  if (Error error = checkNonNegative(op, "nkv", nkv))
    return error;
  if (heads < 1 || heads > 1024)
    return argumentError(
        formatv("{0}: heads = {1} is not in [1, 1024]", op, heads));
  if (topk < 1 || topk > kMaxSparseAttnTopk)
    return argumentError(formatv("{0}: topk_idxs has K = {1} indices per "
                                 "token; supported: 1 <= K <= {2} (the "
                                 "token's indices stay in shared memory)",
                                 op, topk, kMaxSparseAttnTopk));
  if (Error error = checkIndexRange(op, "seq_len", seqLen))
    return error;
  // kv rows are addressed as b * nkv + index in 32 bits. (Each factor is
  // bounded first, so the products cannot overflow.)
  if (batch > INT32_MAX || nkv > INT32_MAX || batch * nkv > INT32_MAX)
    return argumentError(formatv("{0}: kv has batch * nkv = {1} * {2} rows; at "
                                 "most {3} are supported (int32 row numbers)",
                                 op, batch, nkv, INT32_MAX));
  if (batch * seqLen > INT32_MAX)
    return argumentError(formatv("{0}: batch * seq_len = {1} * {2} tokens; at "
                                 "most {3} are supported",
                                 op, batch, seqLen, INT32_MAX));
  // A block per token and 64 heads (times the splits, at most
  // kSparseAttnMaxSplits, of calls with few tokens).
  int64_t tokens = batch * seqLen, headBlocks = (heads + 63) / 64;
  if (tokens * headBlocks > kMaxGridBlocks)
    return argumentError(formatv("{0}: batch * seq_len * ceil(heads / 64) = "
                                 "{1} * {2} blocks exceed the grid's {3}",
                                 op, tokens, headBlocks, kMaxGridBlocks));
  return Error::success();
}

} // namespace

Error sparseAttnWorkspaceSize(int64_t batch, int64_t seqLen, int64_t heads,
                              int64_t topk, uint64_t *bytes) {
  const char *op = "sparse_attn_workspace_size";
  if (!bytes)
    return argumentError(formatv("{0}: bytes must not be NULL", op));
  if (Error error = checkSparseAttnSizes(op, batch, seqLen, heads, 0, topk))
    return error;
  int64_t tokens = batch * seqLen;
  Expected<int64_t> sms = getPlanningMultiprocessors(PlanFor::SizeQuery);
  if (!sms)
    return sms.takeError();
  int64_t splits = sparseAttnSplits(tokens, heads, topk, SparseAttnWave(*sms));
  *bytes = splits > 1 ? sparseAttnPartialBytes(tokens, heads, splits) : 0;
  return Error::success();
}

Error sparseAttn(const void *q, const void *kv, const float *attnSink,
                 const int32_t *topkIdxs, void *o, float *lse, int64_t batch,
                 int64_t seqLen, int64_t heads, int64_t nkv, int64_t topk,
                 float softmaxScale, void *workspace, uint64_t workspaceBytes,
                 void *stream, const LayerRope *layerRope) {
  const char *op = "sparse_attn";
  // The plan and the launches ask the driver for the context once.
  CurrentContextScope currentContext;
  if (Error error = checkSparseAttnSizes(op, batch, seqLen, heads, nkv, topk))
    return error;
  if (!std::isfinite(softmaxScale))
    return argumentError(
        formatv("{0}: softmax_scale = {1} is not finite", op, softmaxScale));
  int64_t tokens = batch * seqLen;
  if (tokens == 0)
    return Error::success();
  // An empty cache (nkv = 0; torch's empty tensors have no address) has no
  // row to read: every index is invalid. The kernel gets valid memory (o's,
  // checked as o: an error names the pointer the caller passed).
  if (Error error = checkPointers(op, {{"q", q, 16},
                                       {"o", o, 16},
                                       {"attn_sink", attnSink, 4},
                                       {"topk_idxs", topkIdxs, 4}}))
    return error;
  if (nkv == 0)
    kv = o;
  else if (Error error = checkPointer(op, "kv", kv, 16))
    return error;
  if (lse)
    if (Error error = checkPointer(op, "lse", lse, 4))
      return error;
  if (layerRope) {
    if (layerRope->tablePositions < 1)
      return argumentError(formatv("{0}: the RoPE tables' positions = {1} "
                                   "must be >= 1",
                                   op, layerRope->tablePositions));
    if (Error error = checkPointers(op, {{"rope cos", layerRope->cos, 4},
                                         {"rope sin", layerRope->sin, 4},
                                         {"rope base", layerRope->base, 4}}))
      return error;
    if (layerRope->normalizeQuery &&
        (!(layerRope->queryEps >= 0) || !std::isfinite(layerRope->queryEps)))
      return argumentError(
          formatv("{0}: the query norm's eps = {1} must be finite and >= 0", op,
                  layerRope->queryEps));
  }
  bool normalizeQuery = layerRope && layerRope->normalizeQuery;
  Expected<int64_t> sms = getPlanningMultiprocessors(PlanFor::Launch);
  if (!sms)
    return sms.takeError();
  SparseAttnWave wave(*sms);
  bool pair = sparseAttnClusterPair(tokens, heads, topk, wave);
  int64_t splits = sparseAttnSplits(tokens, heads, topk, wave);
  void *partialOut = o;
  void *partialLse = o;
  if (splits > 1) {
    uint64_t needed = sparseAttnPartialBytes(tokens, heads, splits);
    if (!workspace || workspaceBytes < needed)
      return argumentError(
          formatv("{0}: workspace has {1} bytes; this call splits each token's "
                  "indices over {2} blocks and needs {3} "
                  "(hisa_sparse_attn_workspace_size)",
                  op, workspace ? workspaceBytes : 0, splits, needed));
    if (Error error = checkPointer(op, "workspace", workspace, 256))
      return error;
    partialOut = workspace;
    partialLse = static_cast<char *>(workspace) +
                 alignPiece(static_cast<uint64_t>(tokens * splits * heads) *
                            kSparseAttnDim * 4);
  }
  // lse is named as the C ABI names it (the kernels' lse_out), once; the
  // workspace where this call uses it; kv only where it is the caller's
  // (over an empty cache it is o, which an error must name as o).
  if (Error error = checkDevicePointers(
          op, {{"q", q},
               {"kv", nkv == 0 ? nullptr : kv},
               {"attn_sink", attnSink},
               {"topk_idxs", topkIdxs},
               {"o", o},
               {"lse", lse},
               {"workspace", splits > 1 ? workspace : nullptr}}))
    return error;
  TrustedPointersScope checkedPointers;
  int64_t topkPad = (topk + 63) / 64 * 64;
  int64_t headBlocks = (heads + 63) / 64;
  // Unused buffers (no lse; no split; no rotation) point at valid memory
  // the kernel never touches, aligned for any of them (o: 16 bytes; the
  // rotation tables need that, attn_sink is only 4-byte aligned).
  const void *lseOut = lse ? static_cast<const void *>(lse) : o;
  LayerRope none;
  none.cos = none.sin = static_cast<const float *>(o);
  none.base = static_cast<const int32_t *>(o);
  none.tablePositions = 1;
  const LayerRope &rope = layerRope ? *layerRope : none;
  LaunchArgument arguments[] = {
      tensor(q, {tokens, heads, kSparseAttnDim}),
      // nkv = 0: every index is invalid and no row is read.
      tensor(kv, {std::max<int64_t>(batch * nkv, 1), kSparseAttnDim}),
      tensor(attnSink, {heads}), tensor(topkIdxs, {tokens, topk}),
      tensor(o, {tokens, heads, kSparseAttnDim}),
      tensor(lseOut, {lse ? tokens : 1, lse ? heads : 1}),
      tensor(partialOut, {splits > 1 ? tokens : 1, splits,
                          splits > 1 ? heads : 1, kSparseAttnDim}),
      tensor(partialLse,
             {splits > 1 ? tokens : 1, splits, splits > 1 ? heads : 1}),
      tensor(rope.cos, {rope.tablePositions, 32}),
      tensor(rope.sin, {rope.tablePositions, 32}),
      tensor(rope.base, {layerRope ? batch : 1}), integer(seqLen),
      integer(std::max<int64_t>(nkv, 0)), floatScalar(softmaxScale),
      floatScalar(rope.queryEps)};
  // The warp-specialized variant (a producer warpgroup gathers the rows)
  // with per-warpgroup row sums (partial_sums: one exchange after the loop)
  // measured fastest on H = 64 and on decode shapes (docs/performance.md,
  // 2026-12-02, eleventh session: 2-3% over partial_sums=0, 4-8% over the
  // plain kernel). FlashMLA's schedule (sparse_attn_wg: each consumer
  // warpgroup its own 64 keys, so 128 keys an iteration) is faster with
  // many tokens: 1-2% at H = 128 (twelfth session), and since its gemms
  // are asynchronous 9% at H = 64 (twenty-third session: 0.878 against
  // 0.965 ms at S = 4096, K = 640); slower on decode's few tokens. Split
  // calls use the warp-specialized kernel too (64 tokens x 64 heads x 640
  // indices in two splits: 26.2 us against the plain kernel's 27.2, GPU run
  // 70). (Whole head blocks only, like the measured shapes.)
  bool flashMlaSchedule = splits == 1 && !pair && heads >= 64 &&
                          heads % 64 == 0 && tokens >= 1024 && !normalizeQuery;
  const char *kernel = flashMlaSchedule ? "sparse_attn_wg" : "sparse_attn_ws";
  if (flashMlaSchedule)
    topkPad = (topk + 127) / 128 * 128;
  // A cluster pair finishes the output itself (lse and rotation too).
  bool finishes = splits == 1;
  // (sparse_attn_wg has no cluster or query-norm parameters.)
  SpecializationText params(flashMlaSchedule ? ""
                            : pair           ? "cluster_blocks=2,"
                                             : "cluster_blocks=1,");
  params += specialization({{"head_blocks", headBlocks},
                            {"lse", lse && finishes ? 1 : 0},
                            {"partial_sums", finishes ? 1 : 0}});
  params += flashMlaSchedule ? ","
            : normalizeQuery ? ",q_norm=1,"
                             : ",q_norm=0,";
  params += specialization({{"rope", layerRope && finishes ? 1 : 0},
                            {"splits", pair ? 2 : splits},
                            {"topk_pad", topkPad}});
  // Split decode is two launches (the splits, then their combine): for a
  // direct call one graph launch (runtime/LaunchGraph.h; the driver's launch
  // is most of a small decode call's host time). The V4 layer's calls
  // (layerRope) stay launches of its step's programmatic chain, where the
  // split kernel's start overlaps the previous kernel's end (a graph's
  // first node waits for the stream's earlier work in full).
  // (Scopes do not nest: inside another operator's scope the two launches
  // are that scope's.)
  std::optional<runtime::GraphLaunchScope> graph;
  if (splits > 1 && !layerRope && !runtime::activeGraphLaunchScope())
    graph.emplace(stream);
  if (Error error = runOperator(kernel, params, arguments, stream))
    return error;
  // Whole: the kernel rotated its output back itself.
  if (splits == 1)
    return Error::success();
  LaunchArgument combine[] = {
      tensor(partialOut, {tokens, splits, heads, kSparseAttnDim}),
      tensor(partialLse, {tokens, splits, heads}),
      tensor(attnSink, {heads}),
      tensor(o, {tokens, heads, kSparseAttnDim}),
      tensor(lseOut, {lse ? tokens : 1, lse ? heads : 1}),
      tensor(rope.cos, {rope.tablePositions, 32}),
      tensor(rope.sin, {rope.tablePositions, 32}),
      tensor(rope.base, {layerRope ? batch : 1}),
      integer(seqLen)};
  if (Error error = runOperator(
          "sparse_attn_combine",
          specialization({{"lse", lse ? 1 : 0}, {"rope", layerRope ? 1 : 0}}),
          combine, stream))
    return error;
  return graph ? graph->finish() : Error::success();
}

Error flashAttn(const void *q, const void *k, const void *v, void *o,
                int64_t batch, int64_t heads, int64_t seqLen, int64_t dim,
                bool causal, float softmaxScale, void *stream) {
  const char *op = "flash_attn";
  if (Error error = checkNonNegative(op, "batch", batch))
    return error;
  if (Error error = checkNonNegative(op, "heads", heads))
    return error;
  if (Error error = checkNonNegative(op, "seq_len", seqLen))
    return error;
  if (dim != 64 && dim != 128)
    return argumentError(
        formatv("{0}: head dimension D = {1}; supported: 64, 128", op, dim));
  if (!std::isfinite(softmaxScale))
    return argumentError(
        formatv("{0}: softmax_scale = {1} is not finite", op, softmaxScale));
  // Each size is a TMA coordinate (int32); their product, the tensors'
  // elements, is bounded before the grid multiplies it.
  if (Error error = checkIndexRange(op, "batch", batch))
    return error;
  if (Error error = checkIndexRange(op, "heads", heads))
    return error;
  if (Error error = checkIndexRange(op, "seq_len", seqLen))
    return error;
  if (Error error = checkTensorBytes(op, "q [batch, heads, seq_len, dim]",
                                     {batch, heads, seqLen, dim}, 2))
    return error;
  if (batch == 0 || heads == 0 || seqLen == 0)
    return Error::success();
  // A block per 128 queries of each (batch, head).
  int64_t blocks = batch * heads * ((seqLen + 127) / 128);
  if (blocks > kMaxGridBlocks)
    return argumentError(formatv("{0}: batch * heads * ceil(seq_len / 128) = "
                                 "{1} blocks exceed the grid's {2}",
                                 op, blocks, kMaxGridBlocks));
  if (Error error = checkPointers(
          op, {{"q", q, 16}, {"k", k, 16}, {"v", v, 16}, {"o", o, 16}}))
    return error;
  LaunchArgument arguments[] = {tensor(q, {batch, heads, seqLen, dim}),
                                tensor(k, {batch, heads, seqLen, dim}),
                                tensor(v, {batch, heads, seqLen, dim}),
                                tensor(o, {batch, heads, seqLen, dim}),
                                floatScalar(softmaxScale)};
  // Long sequences: FlashAttention-3's schedule (kernels-dsl/
  // flash_attn_pp.mlir: a TMA producer, two consumer warpgroups taking turns
  // on the tensor cores, 128-key tiles, one block per SM), 2-8% faster than
  // the plain kernel from S = 4096 (D = 128) / 8192 (D = 64) on. Shorter
  // ones: the plain kernel (64-key tiles, two blocks per SM, so one block's
  // start and end overlap the other's work), up to 19% faster there
  // (docs/performance.md, twenty-third session, probes/flash_attn_shapes.py).
  // A positive scale enters the exponent (fold_scale); a negative one would
  // move the row maximum.
  bool pingPong = seqLen >= (dim == 128 ? 4096 : 8192);
  return runOperator(pingPong ? "flash_attn_pp" : "flash_attn",
                     specialization({{"causal", causal ? 1 : 0},
                                     {"dim", dim},
                                     {"fold_scale", softmaxScale > 0 ? 1 : 0}}),
                     arguments, stream);
}

Error cpWindows(int32_t *ks, int32_t *ke, int64_t tokens, int64_t start0,
                int64_t count0, int64_t start1, void *stream) {
  const char *op = "cp_windows";
  if (tokens < 0 || start0 < 0 || count0 < 0 || count0 > tokens || start1 < 0)
    return argumentError(
        formatv("{0}: tokens = {1}, start0 = {2}, count0 = {3}, start1 = {4}",
                op, tokens, start0, count0, start1));
  if (Error error =
          checkIndexRange(op, "the last position + 1",
                          std::max(start0 + count0, start1 + tokens - count0)))
    return error;
  if (tokens == 0)
    return Error::success();
  if (Error error = checkPointers(op, {{"ks", ks, 4}, {"ke", ke, 4}}))
    return error;
  LaunchArgument arguments[] = {tensor(ks, {tokens}), tensor(ke, {tokens}),
                                integer(start0), integer(count0),
                                integer(start1)};
  return runOperator("cp_windows", "", arguments, stream);
}

Error l2Prefetch(const void *data, uint64_t bytes, void *stream) {
  const char *op = "l2_prefetch";
  if (bytes > uint64_t(kMaxTensorBytes))
    return argumentError(formatv("{0}: bytes = {1} is more than 2^48 bytes "
                                 "(the largest range supported)",
                                 op, bytes));
  if (bytes == 0)
    return Error::success();
  if (Error error = checkPointer(op, "data", data, 16))
    return error;
  LaunchArgument arguments[] = {tensor(data, {int64_t(bytes)})};
  return runOperator("l2_prefetch", "", arguments, stream);
}

} // namespace hisa::ops
