//===- Operators.h - hisa's operators on raw device pointers ----*- C++ -*-===//
//
// The operator layer: one function per operator of kernels-dsl/, on raw
// device pointers and sizes, launched on the caller's stream. Each checks its
// sizes and pointers (naming the argument), picks the kernel's
// specialization (block sizes, blocks per SM) and launches it through the
// JIT. The C ABI (hisa_runtime.h) and the Python package are thin bindings
// over these; orchestration of several operators lives a layer above
// (hisa/Indexer). None allocates memory.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_OPS_OPERATORS_H
#define HISA_OPS_OPERATORS_H

#include "llvm/Support/Error.h"

#include <cstdint>

namespace hisa::ops {

/// The limits of the fused stages: a query's logits stay in shared memory.
constexpr int64_t kMaxStage1Blocks = 32768; ///< pooled keys per window
constexpr int64_t kMaxStage2Slots = 32768;  ///< block_topk * kb
/// The longest row the exact top-k selects from (its column arithmetic is
/// 32-bit).
constexpr int64_t kTopkMaxColumns = int64_t(1) << 30;

/// The MQA operators' head counts and dimensions (H in {16, 32, 64, 128}, D
/// in {64, 128}); the error names `op`.
llvm::Error checkMqaShape(const char *op, int64_t heads, int64_t dim);

/// KERNELS.md 1.1. k: [n, dim] fp8; k_scale: [n]; blocked_k: [ceil(n/kb),
/// dim] fp8; blocked_scale: [ceil(n/kb)].
llvm::Error fp8BlockMeanPooling(const void *k, const float *kScale,
                                void *blockedK, float *blockedScale, int64_t n,
                                int64_t dim, int64_t kb, void *stream);

/// KERNELS.md 1.3, in place on logits [m, n].
llvm::Error cleanAndMaintainLogits(float *logits, const int32_t *s,
                                   const int32_t *e, int64_t m, int64_t n,
                                   void *stream);

/// KERNELS.md 1.2 (raw keys: the flat indexer's logits). logits [m, nb].
llvm::Error poolMqaLogits(const void *q, const void *blockedK,
                          const float *blockedKScale, const float *weights,
                          const int32_t *bks, const int32_t *bke, float *logits,
                          int64_t m, int64_t nb, int64_t heads, int64_t dim,
                          void *stream);

/// The most block indices a query of blockSparseMqaLogits takes (they stay
/// in shared memory).
constexpr int64_t kMaxBlockSparseTopk = 32768;

/// The most queries mqaLogitsDecode takes (one grid row each).
constexpr int64_t kMaxDecodeQueries = 65535;

/// The logits of decode: query m (one per sequence) over its own keys, rows
/// [m * rowLength, (m + 1) * rowLength) of k, in its window [starts[m],
/// ends[m]) (offsets in those rows) into logits [m, rowLength]; entries
/// outside the window are not written. rowLength is a multiple of 4.
llvm::Error mqaLogitsDecode(const void *q, const void *k, const float *kScale,
                            const float *weights, const int32_t *starts,
                            const int32_t *ends, float *logits, int64_t m,
                            int64_t rowLength, int64_t heads, int64_t dim,
                            void *stream);

/// KERNELS.md 2.1. out [m, topk * kb].
llvm::Error blockSparseMqaLogits(const void *q, const void *k,
                                 const float *kScale,
                                 const int32_t *topkBlockIndex,
                                 const float *weights, const int32_t *ks,
                                 const int32_t *ke, float *out, int64_t m,
                                 int64_t n, int64_t topk, int64_t kb,
                                 int64_t heads, int64_t dim, void *stream);

/// Exact top-k of each row of x [rows, columns] (KERNELS.md "Top-k,
/// exactly") into out [rows, k]: columns, or with `relative` offsets from
/// starts[r]; -1 padded (also every slot past C when k > C). starts/ends:
/// [rows] windows, both or neither.
llvm::Error topk(const float *x, const int32_t *starts, const int32_t *ends,
                 int32_t *out, int64_t rows, int64_t columns, int64_t k,
                 bool relative, void *stream);

/// topk of a bf16 x [rows, columns] (2-byte elements, the same selection as
/// the f32 it widens to): kernels-dsl's topk_bf16 variant of topk_f32.
llvm::Error topkBf16(const void *x, const int32_t *starts, const int32_t *ends,
                     int32_t *out, int64_t rows, int64_t columns, int64_t k,
                     bool relative, void *stream);

/// Fused stage 1: pooled logits + clean + exact top blocks. The windows are
/// token windows pooled by `windowKb` (1: block windows bks/bke). out [m,
/// outColumns] block indices, -1 padded; outColumns = min(block_topk, nb).
llvm::Error poolTopkBlocks(const void *q, const void *blockedK,
                           const float *blockedKScale, const float *weights,
                           const int32_t *starts, const int32_t *ends,
                           int32_t *out, int64_t m, int64_t nb, int64_t heads,
                           int64_t dim, int64_t outColumns, int64_t windowKb,
                           void *stream);

/// Fused stage 2: block-sparse logits + exact top tokens + offsets from ks.
/// out [m, topkTokens], -1 padded.
llvm::Error blockSparseTopkTokens(
    const void *q, const void *k, const float *kScale,
    const int32_t *topkBlockIndex, const float *weights, const int32_t *ks,
    const int32_t *ke, int32_t *out, int64_t m, int64_t n, int64_t topk,
    int64_t kb, int64_t heads, int64_t dim, int64_t topkTokens, void *stream);

/// DeepSeek-V4 sparse attention (KERNELS.md): q [batch, seqLen, heads, 512]
/// bf16, kv [batch, nkv, 512] bf16, attnSink [heads] f32, topkIdxs [batch,
/// seqLen, topk] int32 (-1 and indices outside [0, nkv) contribute nothing)
/// -> o [batch, seqLen, heads, 512] bf16 and, when lse is not null, lse
/// [batch, seqLen, heads] f32 (natural log of the softmax denominator, sink
/// included). heads >= 1 (padded to blocks of 64), topk in [1,
/// kMaxSparseAttnTopk].
constexpr int64_t kSparseAttnDim = 512;
constexpr int64_t kMaxSparseAttnTopk = 4096;
/// With few tokens (decode), each token's indices are split over several
/// blocks whose partial results are merged by a second kernel
/// (sparse_attn_combine) through `workspace`, of at least
/// sparseAttnWorkspaceSize bytes (0 when the call does not split).
/// The V4 layer's RoPE around sparseAttn. The output's last 64 dims of
/// each head rotate back by the angles of token t's position base[t /
/// seqLen] + t % seqLen, from cos / sin tables [tablePositions, 32] f32
/// (v4Rope with inverse = 1, the same bits): a split call does it in its
/// combine, a whole one in the attention kernel's epilogue. With
/// normalizeQuery, the kernel first prepares each block's queries as
/// v4NormRope does (per-head RMSNorm with weight 1 and queryEps, then RoPE
/// at the same position; not its bits: the squares add in another order),
/// in shared memory: q in memory is read as given. Such calls run
/// sparse_attn_ws rather than FlashMLA's schedule.
struct LayerRope {
  const float *cos = nullptr, *sin = nullptr;
  const int32_t *base = nullptr;
  int64_t tablePositions = 0;
  bool normalizeQuery = false;
  float queryEps = 0.0f;
};
llvm::Error sparseAttn(const void *q, const void *kv, const float *attnSink,
                       const int32_t *topkIdxs, void *o, float *lse,
                       int64_t batch, int64_t seqLen, int64_t heads,
                       int64_t nkv, int64_t topk, float softmaxScale,
                       void *workspace, uint64_t workspaceBytes, void *stream,
                       const LayerRope *rope = nullptr);
llvm::Error sparseAttnWorkspaceSize(int64_t batch, int64_t seqLen,
                                    int64_t heads, int64_t topk,
                                    uint64_t *bytes);

/// Dense attention forward, bf16, layout [batch, heads, seqLen, dim] for q,
/// k, v and o (torch's scaled_dot_product_attention): o = softmax(q k^T *
/// softmaxScale [+ causal mask]) v. dim in {64, 128}.
llvm::Error flashAttn(const void *q, const void *k, const void *v, void *o,
                      int64_t batch, int64_t heads, int64_t seqLen, int64_t dim,
                      bool causal, float softmaxScale, void *stream);

/// A context-parallel rank's query windows over the gathered keys of one
/// causal sequence (kernels-dsl/cp_windows.mlir): its tokens are positions
/// [start0, start0 + count0) then [start1, ...); ks[t] = 0, ke[t] = position
/// + 1, for `tokens` queries.
llvm::Error cpWindows(int32_t *ks, int32_t *ke, int64_t tokens, int64_t start0,
                      int64_t count0, int64_t start1, void *stream);

/// Starts bringing bytes [0, bytes) of `data` (16-byte aligned device
/// memory) into the L2 cache (kernels-dsl/l2_prefetch.mlir): a hint that
/// nothing waits for, for a side stream while the memory system idles (the
/// V4 layer's decode warms its next projection's weights this way). Bytes
/// past the last whole 16 are not prefetched; 0 bytes launches nothing.
llvm::Error l2Prefetch(const void *data, uint64_t bytes, void *stream);

} // namespace hisa::ops

#endif // HISA_OPS_OPERATORS_H
