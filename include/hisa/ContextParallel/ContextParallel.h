//===- ContextParallel.h - Context-parallel prefill over NCCL ---*- C++ -*-===//
//
// Orchestration above the operators and the indexers: the HISA indexer and
// DeepSeek-V4 sparse attention of one long causal sequence split across the
// ranks of an NCCL communicator (python/hisa/distributed.py is the same
// scheme over torch.distributed). The sequence of `total` tokens is cut
// into 2W chunks (W ranks, sizes as equal as integers allow); rank r holds
// chunks r and 2W - 1 - r, balancing causal work, and its keys / kv rows.
// One ncclAllGather per call puts every rank's rows in global order; the
// rank then runs the single-GPU operator on its own queries. NCCL is opened
// at run time (libnccl.so.2, or $HISA_NCCL_LIB): hisa does not link it.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_CONTEXTPARALLEL_CONTEXTPARALLEL_H
#define HISA_CONTEXTPARALLEL_CONTEXTPARALLEL_H

#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <utility>

namespace hisa::cp {

/// Rank `rank`'s position ranges [start, end) of a sequence of `total`
/// tokens over `world` ranks: chunks rank and 2 * world - 1 - rank.
std::array<std::pair<int64_t, int64_t>, 2>
rankRanges(int64_t total, int64_t world, int64_t rank);

/// The number of tokens rank `rank` holds.
int64_t localTokens(int64_t total, int64_t world, int64_t rank);

/// Workspace bytes of gatherTokens: every rank's rows padded to the largest
/// rank's count.
uint64_t gatherWorkspaceSize(int64_t total, int64_t world, uint64_t rowBytes);

/// Every rank's rows (`local`, rowBytes each, in its zigzag order) at
/// their global positions in `global` [total rows]; one ncclAllGather on
/// `stream` through `workspace`, then stream-ordered copies. `comm` is an
/// ncclComm_t. 0 <= total <= INT32_MAX, 1 <= rowBytes <= 1 MiB; `local`
/// may be NULL on a rank without tokens, `workspace` where it needs none.
llvm::Error gatherTokens(const void *local, void *global, int64_t total,
                         uint64_t rowBytes, void *comm, void *workspace,
                         uint64_t workspaceBytes, void *stream);

/// The sizes of a context-parallel indexer call: one sequence of `total`
/// tokens, q [local, heads, dim] fp8, weights [local, heads] f32, keys
/// [local, dim] fp8 and scales [local] of this rank's tokens.
struct IndexerCpShape {
  int64_t total = 0;
  int64_t world = 1;
  int64_t heads = 64;
  int64_t dim = 128;
  int64_t kb = 128;
  int64_t blockTopk = 64;
  int64_t topkTokens = 2048;
};

/// Workspace bytes of hisaIndexerCp on rank `rank`.
llvm::Expected<uint64_t> hisaIndexerCpWorkspaceSize(const IndexerCpShape &shape,
                                                    int64_t rank);

/// The HISA indexer for this rank's queries over every key of the sequence
/// (windows [0, position + 1)): out [local, topkTokens] int32 positions, -1
/// padded. The communicator's size must be shape.world.
llvm::Error hisaIndexerCp(const void *q, const void *k, const float *kScale,
                          const float *weights, int32_t *out,
                          const IndexerCpShape &shape, void *comm,
                          void *workspace, uint64_t workspaceBytes,
                          void *stream);

/// Workspace bytes of sparseAttnCp on rank `rank` (heads, topk: the
/// attention call's).
llvm::Expected<uint64_t> sparseAttnCpWorkspaceSize(int64_t total, int64_t world,
                                                   int64_t rank, int64_t heads,
                                                   int64_t topk);

/// V4 sparse attention for this rank's queries: q [local, heads, 512] bf16,
/// kv [local, 512] bf16 of its tokens, topkIdxs [local, topk] int32 global
/// positions (-1 = none) -> o [local, heads, 512].
llvm::Error sparseAttnCp(const void *q, const void *kv, const float *attnSink,
                         const int32_t *topkIdxs, void *o, int64_t total,
                         int64_t heads, int64_t topk, float softmaxScale,
                         void *comm, void *workspace, uint64_t workspaceBytes,
                         void *stream);

} // namespace hisa::cp

#endif // HISA_CONTEXTPARALLEL_CONTEXTPARALLEL_H
