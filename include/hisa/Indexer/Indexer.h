//===- Indexer.h - The HISA and flat indexers, end to end -------*- C++ -*-===//
//
// Orchestration above the operator layer: the indexers run several
// operators (hisa/Ops/Operators.h) on the caller's stream, with every
// intermediate in a workspace the caller passes (its size from the matching
// *WorkspaceSize function), so no call allocates and a CUDA graph can
// capture one.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_INDEXER_INDEXER_H
#define HISA_INDEXER_INDEXER_H

#include "llvm/Support/Error.h"

#include <cstdint>

namespace hisa::indexer {

/// The sizes of one indexer call: q [m, heads, dim], k [n, dim], kb, and the
/// selections per query.
struct IndexerShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t heads = 0;
  int64_t dim = 0;
  int64_t kb = 128;
  int64_t blockTopk = 0;
  int64_t topkTokens = 0;
};

/// Workspace bytes of hisaIndexer: the pooled keys and scales and the stage-1
/// block indices (each piece 256-byte aligned). Checks the shape.
llvm::Expected<uint64_t> hisaIndexerWorkspaceSize(const IndexerShape &shape);

/// KERNELS.md HISA 1.1 -> 2.3: pooling, fused stage 1, fused stage 2.
/// out [m, topkTokens] int32 offsets from ks, -1 padded. ks, ke: [m] int32
/// token windows within [0, n].
llvm::Error hisaIndexer(const void *q, const void *k, const float *kScale,
                        const float *weights, const int32_t *ks,
                        const int32_t *ke, int32_t *out,
                        const IndexerShape &shape, void *workspace,
                        uint64_t workspaceBytes, void *stream);

/// Workspace bytes of flatIndexer: the [m, n] f32 logits.
llvm::Expected<uint64_t> flatIndexerWorkspaceSize(const IndexerShape &shape);

/// The flat V3.2 indexer: MQA logits over every token of each window, then
/// the exact top-topkTokens as offsets from ks, -1 padded (blockTopk and kb
/// of the shape are unused).
llvm::Error flatIndexer(const void *q, const void *k, const float *kScale,
                        const float *weights, const int32_t *ks,
                        const int32_t *ke, int32_t *out,
                        const IndexerShape &shape, void *workspace,
                        uint64_t workspaceBytes, void *stream);

} // namespace hisa::indexer

#endif // HISA_INDEXER_INDEXER_H
