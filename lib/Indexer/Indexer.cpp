//===- Indexer.cpp - The HISA and flat indexers, end to end ---------------===//

#include "hisa/Indexer/Indexer.h"

#include "hisa/Ops/Operators.h"
#include "hisa/Runtime/Jit.h"
#include "hisa/Runtime/LaunchGraph.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace llvm;

namespace hisa::indexer {
namespace {

constexpr uint64_t kWorkspaceAlignment = 256;
/// The largest tensor (docs/design.md, Limits), as the operators bound it.
constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 48;

Error argumentError(const Twine &message) {
  return createStringError(std::make_error_code(std::errc::invalid_argument),
                           message);
}

Error checkShape(const char *op, const IndexerShape &shape, bool hierarchical) {
  // A block per query; int32 offsets and windows into k.
  if (shape.m < 0 || shape.m > INT32_MAX || shape.n < 1 || shape.n > INT32_MAX)
    return argumentError(formatv("{0}: needs 0 <= m <= {1} and 1 <= n <= {1} "
                                 "(m = {2}, n = {3})",
                                 op, INT32_MAX, shape.m, shape.n));
  if (Error error = ops::checkMqaShape(op, shape.heads, shape.dim))
    return error;
  if (shape.topkTokens < 1 || shape.topkTokens > INT32_MAX)
    return argumentError(formatv("{0}: topk_tokens must lie in [1, {1}], got "
                                 "{2}",
                                 op, INT32_MAX, shape.topkTokens));
  // (Both factors are below 2^31: the products cannot overflow.)
  if (uint64_t(shape.m) * uint64_t(shape.topkTokens) * 4 > kMaxTensorBytes)
    return argumentError(formatv("{0}: out [m, topk_tokens] = [{1}, {2}] "
                                 "int32 holds more than 2^48 bytes (the "
                                 "largest tensor supported)",
                                 op, shape.m, shape.topkTokens));
  if (!hierarchical) {
    // The exact top-k walks each row of n logits with 32-bit column
    // arithmetic.
    if (shape.n > ops::kTopkMaxColumns)
      return argumentError(formatv("{0}: n = {1} keys exceed the {2} columns "
                                   "the exact top-k selects from",
                                   op, shape.n, ops::kTopkMaxColumns));
    // The workspace holds the [m, n] f32 logits.
    if (uint64_t(shape.m) * uint64_t(shape.n) * 4 > kMaxTensorBytes)
      return argumentError(formatv("{0}: the logits [m, n] = [{1}, {2}] f32 "
                                   "hold more than 2^48 bytes (the largest "
                                   "tensor supported)",
                                   op, shape.m, shape.n));
    return Error::success();
  }
  if (shape.kb != 64 && shape.kb != 128 && shape.kb != 256)
    return argumentError(
        formatv("{0}: k_block_size = {1} is not supported (64, 128 or 256)", op,
                shape.kb));
  if (shape.blockTopk < 1)
    return argumentError(
        formatv("{0}: block_topk must be >= 1, got {1}", op, shape.blockTopk));
  if (shape.blockTopk > ops::kMaxStage2Slots / shape.kb)
    return argumentError(formatv(
        "{0}: block_topk * k_block_size = {1} * {2} exceeds {3}: stage 2 "
        "keeps a query's block_topk * kb logits on chip",
        op, shape.blockTopk, shape.kb, ops::kMaxStage2Slots));
  int64_t blocks = (shape.n + shape.kb - 1) / shape.kb;
  if (blocks > ops::kMaxStage1Blocks)
    return argumentError(formatv(
        "{0}: k has N = {1} rows: ceil(N / k_block_size) = {2} pooled keys "
        "exceed the {3} the fused stage 1 keeps on chip",
        op, shape.n, blocks, ops::kMaxStage1Blocks));
  return Error::success();
}

/// The workspace pieces of hisaIndexer, as byte offsets.
struct HisaLayout {
  int64_t blocks;        ///< Nb pooled keys
  int64_t blockTopk;     ///< min(block_topk, Nb)
  uint64_t blockedK;     ///< [Nb, dim] fp8
  uint64_t blockedScale; ///< [Nb] f32
  uint64_t blockIndex;   ///< [m, blockTopk] int32
  uint64_t total;
};

HisaLayout layoutOf(const IndexerShape &shape) {
  HisaLayout layout;
  layout.blocks = (shape.n + shape.kb - 1) / shape.kb;
  layout.blockTopk = std::min(shape.blockTopk, layout.blocks);
  uint64_t offset = 0;
  auto place = [&](uint64_t bytes) {
    uint64_t at = offset;
    offset += alignTo(bytes, kWorkspaceAlignment);
    return at;
  };
  layout.blockedK = place(layout.blocks * shape.dim);
  layout.blockedScale = place(layout.blocks * 4);
  layout.blockIndex = place(shape.m * layout.blockTopk * 4);
  layout.total = offset;
  return layout;
}

Error checkWorkspace(const char *op, void *workspace, uint64_t bytes,
                     uint64_t needed) {
  if (bytes < needed)
    return argumentError(formatv("{0}: the workspace has {1} bytes; this call "
                                 "needs {2} (ask the workspace size function)",
                                 op, bytes, needed));
  if (needed && !workspace)
    return argumentError(formatv("{0}: workspace must not be NULL", op));
  if (reinterpret_cast<uintptr_t>(workspace) % kWorkspaceAlignment)
    return argumentError(
        formatv("{0}: workspace ({1}) must be {2}-byte aligned", op, workspace,
                kWorkspaceAlignment));
  return Error::success();
}

/// The device pointers both indexers take, checked once per call under
/// their names here (their operators call them otherwise: blocked_k,
/// starts...) and the alignment the operators need; their launches then
/// skip the per-launch queries.
Error checkIndexerPointers(const char *op, const void *q, const void *k,
                           const float *kScale, const float *weights,
                           const int32_t *ks, const int32_t *ke,
                           const int32_t *out, const void *workspace) {
  struct Named {
    const char *name;
    const void *pointer;
    uint64_t alignment;
  };
  for (const Named &argument :
       {Named{"q", q, 16}, Named{"k", k, 16}, Named{"k_scale", kScale, 16},
        Named{"weights", weights, 16}, Named{"ks", ks, 4}, Named{"ke", ke, 4},
        Named{"out", out, 4}}) {
    if (!argument.pointer)
      return argumentError(
          formatv("{0}: {1} must not be NULL", op, argument.name));
    if (reinterpret_cast<uintptr_t>(argument.pointer) % argument.alignment)
      return argumentError(formatv("{0}: {1} ({2}) must be {3}-byte aligned",
                                   op, argument.name, argument.pointer,
                                   argument.alignment));
  }
  return runtime::checkDevicePointers(op, {{"q", q},
                                           {"k", k},
                                           {"k_scale", kScale},
                                           {"weights", weights},
                                           {"ks", ks},
                                           {"ke", ke},
                                           {"out", out},
                                           {"workspace", workspace}});
}

} // namespace

Expected<uint64_t> hisaIndexerWorkspaceSize(const IndexerShape &shape) {
  if (Error error = checkShape("hisa_indexer", shape, /*hierarchical=*/true))
    return std::move(error);
  return layoutOf(shape).total;
}

Error hisaIndexer(const void *q, const void *k, const float *kScale,
                  const float *weights, const int32_t *ks, const int32_t *ke,
                  int32_t *out, const IndexerShape &shape, void *workspace,
                  uint64_t workspaceBytes, void *stream) {
  const char *op = "hisa_indexer";
  if (Error error = checkShape(op, shape, /*hierarchical=*/true))
    return error;
  HisaLayout layout = layoutOf(shape);
  if (Error error = checkWorkspace(op, workspace, workspaceBytes, layout.total))
    return error;
  if (shape.m == 0)
    return Error::success();
  if (Error error = checkIndexerPointers(op, q, k, kScale, weights, ks, ke, out,
                                         workspace))
    return error;
  runtime::TrustedPointersScope trustedPointers;
  auto *base = static_cast<char *>(workspace);
  void *blockedK = base + layout.blockedK;
  auto *blockedScale = reinterpret_cast<float *>(base + layout.blockedScale);
  auto *blockIndex = reinterpret_cast<int32_t *>(base + layout.blockIndex);
  // The three launches as one graph launch (runtime/LaunchGraph.h): the
  // driver's cost per launch is most of this call's host time.
  runtime::GraphLaunchScope graph(stream);
  if (Error error =
          ops::fp8BlockMeanPooling(k, kScale, blockedK, blockedScale, shape.n,
                                   shape.dim, shape.kb, stream))
    return error;
  if (Error error =
          ops::poolTopkBlocks(q, blockedK, blockedScale, weights, ks, ke,
                              blockIndex, shape.m, layout.blocks, shape.heads,
                              shape.dim, layout.blockTopk, shape.kb, stream))
    return error;
  if (Error error = ops::blockSparseTopkTokens(
          q, k, kScale, blockIndex, weights, ks, ke, out, shape.m, shape.n,
          layout.blockTopk, shape.kb, shape.heads, shape.dim, shape.topkTokens,
          stream))
    return error;
  return graph.finish();
}

Expected<uint64_t> flatIndexerWorkspaceSize(const IndexerShape &shape) {
  if (Error error = checkShape("flat_indexer", shape, /*hierarchical=*/false))
    return std::move(error);
  return alignTo(static_cast<uint64_t>(shape.m) * shape.n * 4,
                 kWorkspaceAlignment);
}

Error flatIndexer(const void *q, const void *k, const float *kScale,
                  const float *weights, const int32_t *ks, const int32_t *ke,
                  int32_t *out, const IndexerShape &shape, void *workspace,
                  uint64_t workspaceBytes, void *stream) {
  const char *op = "flat_indexer";
  Expected<uint64_t> needed = flatIndexerWorkspaceSize(shape);
  if (!needed)
    return needed.takeError();
  if (Error error = checkWorkspace(op, workspace, workspaceBytes, *needed))
    return error;
  if (shape.m == 0)
    return Error::success();
  if (Error error = checkIndexerPointers(op, q, k, kScale, weights, ks, ke, out,
                                         workspace))
    return error;
  runtime::TrustedPointersScope trustedPointers;
  auto *logits = static_cast<float *>(workspace);
  runtime::GraphLaunchScope graph(stream);
  if (Error error =
          ops::poolMqaLogits(q, k, kScale, weights, ks, ke, logits, shape.m,
                             shape.n, shape.heads, shape.dim, stream))
    return error;
  if (Error error = ops::topk(logits, ks, ke, out, shape.m, shape.n,
                              shape.topkTokens, /*relative=*/true, stream))
    return error;
  return graph.finish();
}

} // namespace hisa::indexer
