//===- hisa.hpp - hisa's C++ interface for servers -------------*- C++ -*-===//
//
// Header-only C++ over the C ABI of libhisa_runtime.so (hisa_runtime.h): it
// needs no LLVM, MLIR or CUDA headers, only this directory and the library
// (CMake: find_package(hisa CONFIG) and target hisa::hisa_runtime).
//
// Every function works on raw device pointers, launches on the caller's
// stream (a CUstream / cudaStream_t passed as void *, nullptr = the legacy
// default stream) and returns a hisa::Status; nothing throws and nothing
// allocates: the indexers take a workspace whose size the matching
// *WorkspaceSize function gives, so a CUDA graph can capture a call.
//
//   hisa::IndexerShape shape{m, n, 64, 128, 128, 64, 2048};
//   uint64_t bytes = 0;
//   if (auto s = hisa::hisaIndexerWorkspaceSize(shape, bytes); !s) ...
//   // cudaMalloc(&workspace, bytes) once, reuse across calls
//   hisa::Status s = hisa::hisaIndexer(q, k, k_scale, weights, ks, ke, out,
//                                      shape, workspace, bytes, stream);
//   if (!s) log(s.message);
//
//===----------------------------------------------------------------------===//

#ifndef HISA_HISA_HPP
#define HISA_HISA_HPP

#include "hisa/Runtime/hisa_runtime.h"

#include <cstdint>
#include <memory>
#include <string>

namespace hisa {

/// The outcome of a call: code HISA_OK, or a HISA_ERROR_* code and the
/// runtime's message (naming the argument at fault).
struct [[nodiscard]] Status {
  int code = HISA_OK;
  std::string message;

  explicit operator bool() const { return code == HISA_OK; }
  bool ok() const { return code == HISA_OK; }
};

namespace detail {
inline Status status(int code) {
  if (code == HISA_OK)
    return {};
  return {code, hisa_last_error()};
}
} // namespace detail

/// The sizes of an indexer call: q [m, heads, dim] fp8 e4m3, k [n, dim] fp8
/// e4m3, the pool block size kb (64, 128 or 256), the key blocks kept per
/// query (blockTopk, HISA only) and the tokens kept (topkTokens).
struct IndexerShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t heads = 64;
  int64_t dim = 128;
  int64_t kb = 128;
  int64_t blockTopk = 64;
  int64_t topkTokens = 2048;
};

/// Workspace bytes of hisaIndexer for `shape` (also checks the shape).
inline Status hisaIndexerWorkspaceSize(const IndexerShape &shape,
                                       uint64_t &bytes) {
  return detail::status(hisa_hisa_indexer_workspace_size(
      shape.m, shape.n, shape.heads, shape.dim, shape.kb, shape.blockTopk,
      shape.topkTokens, &bytes));
}

/// The HISA indexer (KERNELS.md, HISA 1.1 -> 2.3): out [m, topkTokens] int32
/// offsets from ks, -1 padded. k_scale [n] f32, weights [m, heads] f32, ks
/// and ke [m] int32 token windows within [0, n].
inline Status hisaIndexer(const void *q, const void *k, const float *kScale,
                          const float *weights, const int32_t *ks,
                          const int32_t *ke, int32_t *out,
                          const IndexerShape &shape, void *workspace,
                          uint64_t workspaceBytes, void *stream) {
  return detail::status(
      hisa_hisa_indexer(q, k, kScale, weights, ks, ke, out, shape.m, shape.n,
                        shape.heads, shape.dim, shape.kb, shape.blockTopk,
                        shape.topkTokens, workspace, workspaceBytes, stream));
}

/// Workspace bytes of flatIndexer (the [m, n] f32 logits).
inline Status flatIndexerWorkspaceSize(const IndexerShape &shape,
                                       uint64_t &bytes) {
  return detail::status(hisa_flat_indexer_workspace_size(
      shape.m, shape.n, shape.heads, shape.dim, shape.topkTokens, &bytes));
}

/// The flat V3.2 indexer: MQA logits of every token of each window and their
/// exact top-topkTokens, as offsets from ks, -1 padded.
inline Status flatIndexer(const void *q, const void *k, const float *kScale,
                          const float *weights, const int32_t *ks,
                          const int32_t *ke, int32_t *out,
                          const IndexerShape &shape, void *workspace,
                          uint64_t workspaceBytes, void *stream) {
  return detail::status(hisa_flat_indexer(
      q, k, kScale, weights, ks, ke, out, shape.m, shape.n, shape.heads,
      shape.dim, shape.topkTokens, workspace, workspaceBytes, stream));
}

/// Exact top-k of each row of x [rows, columns] f32 into out [rows, k] int32
/// (KERNELS.md "Top-k, exactly"): columns in no order, ties to the lower
/// column, -inf/NaN never selected, -1 padded. With starts/ends ([rows]
/// int32 windows) only [starts[r], ends[r]) counts.
inline Status topk(const float *x, int32_t *out, int64_t rows, int64_t columns,
                   int64_t k, void *stream, const int32_t *starts = nullptr,
                   const int32_t *ends = nullptr) {
  return detail::status(
      hisa_topk(x, starts, ends, out, rows, columns, k, 0, stream));
}

/// topk of a bf16 x [rows, columns] (raw 2-byte elements, e.g. a
/// __nv_bfloat16 or at::BFloat16 array): the same selection as on the f32
/// values it widens to.
inline Status topkBf16(const void *x, int32_t *out, int64_t rows,
                       int64_t columns, int64_t k, void *stream,
                       const int32_t *starts = nullptr,
                       const int32_t *ends = nullptr) {
  return detail::status(
      hisa_topk_bf16(x, starts, ends, out, rows, columns, k, 0, stream));
}

/// Starts bringing bytes [0, bytes) of data (16-byte aligned device memory)
/// into the L2 cache on `stream`: a hint nothing waits for (issue it on a
/// side stream while the memory system idles, before a launch that streams
/// the range, such as the next layer's weights).
inline Status l2Prefetch(const void *data, uint64_t bytes, void *stream) {
  return detail::status(hisa_l2_prefetch(data, bytes, stream));
}

/// Sizes of a DeepSeek-V4 sparse attention call (D = 512).
struct SparseAttnShape {
  int64_t batch = 1;
  int64_t seqLen = 0;
  int64_t heads = 64;
  int64_t nkv = 0;
  int64_t topk = 640;
};

/// Workspace bytes a sparseAttn call of this shape needs (0: none; decode
/// with few tokens splits each token's indices over several blocks).
inline Status sparseAttnWorkspaceSize(const SparseAttnShape &shape,
                                      uint64_t &bytes) {
  return detail::status(hisa_sparse_attn_workspace_size(
      shape.batch, shape.seqLen, shape.heads, shape.topk, &bytes));
}

/// DeepSeek-V4 sparse attention (KERNELS.md): q [batch, seqLen, heads, 512]
/// bf16, kv [batch, nkv, 512] bf16, attnSink [heads] f32, topkIdxs [batch,
/// seqLen, topk] int32 (-1 padded) -> o [batch, seqLen, heads, 512] bf16;
/// lse [batch, seqLen, heads] f32 when not null. `workspace`: device memory
/// of sparseAttnWorkspaceSize bytes (256-byte aligned; may be null when 0).
inline Status sparseAttn(const void *q, const void *kv, const float *attnSink,
                         const int32_t *topkIdxs, void *o,
                         const SparseAttnShape &shape, float softmaxScale,
                         void *workspace, uint64_t workspaceBytes, void *stream,
                         float *lse = nullptr) {
  return detail::status(hisa_sparse_attn(
      q, kv, attnSink, topkIdxs, o, lse, shape.batch, shape.seqLen, shape.heads,
      shape.nkv, shape.topk, softmaxScale, workspace, workspaceBytes, stream));
}

/// Dense attention forward, bf16: q, k, v, o [batch, heads, seqLen, dim]
/// (dim 64 or 128); softmaxScale usually dim^-0.5.
inline Status flashAttn(const void *q, const void *k, const void *v, void *o,
                        int64_t batch, int64_t heads, int64_t seqLen,
                        int64_t dim, bool causal, float softmaxScale,
                        void *stream) {
  return detail::status(hisa_flash_attn(q, k, v, o, batch, heads, seqLen, dim,
                                        causal ? 1 : 0, softmaxScale, stream));
}

namespace v4 {

/// V4-Flash's attention layer dimensions (dim 4096, 64 heads, q_lora 1024,
/// 8 output groups, o_lora 1024, index_topk 512) with the given compress
/// ratio: 0 (window only), 4 (CSA) or 128 (HCA). V4-Pro: heads 128 and
/// index_topk 1024.
inline hisa_v4_config flashConfig(int64_t compressRatio) {
  hisa_v4_config config = {};
  config.dim = 4096;
  config.heads = 64;
  config.q_lora = 1024;
  config.o_groups = 8;
  config.o_lora = 1024;
  config.compress_ratio = compressRatio;
  config.index_heads = 64;
  config.index_topk = 512;
  config.eps = 1e-6f;
  config.rope_theta = 10000.0f;
  config.compress_rope_theta = 160000.0f;
  return config;
}

/// One DeepSeek-V4 attention layer with its caches (hisa_v4_attention_*):
/// created once for `batch` sequences of up to `maxSeq` tokens, then
/// prefill (x [batch, seq, dim] bf16 -> out) and decode steps (x [batch,
/// dim] -> out) on the caller's stream, allocating nothing. The weights
/// (device memory) must outlive it.
class Attention {
public:
  /// Creates the layer into `layer` (left empty on failure).
  static Status create(const hisa_v4_config &config,
                       const hisa_v4_weights &weights, int64_t batch,
                       int64_t maxSeq, std::unique_ptr<Attention> &layer,
                       int64_t maxPrefillTokens = 0) {
    layer.reset();
    // The wrapper first: if allocating it throws, no C handle is left
    // behind.
    std::unique_ptr<Attention> created(new Attention(nullptr));
    Status status = detail::status(hisa_v4_attention_create(
        &config, &weights, batch, maxSeq, maxPrefillTokens, &created->handle));
    if (status)
      layer = std::move(created);
    return status;
  }
  ~Attention() { hisa_v4_attention_destroy(handle); }
  Attention(const Attention &) = delete;
  Attention &operator=(const Attention &) = delete;

  Status prefill(const void *x, int64_t seq, void *out, void *stream) {
    return detail::status(
        hisa_v4_attention_prefill(handle, x, seq, out, stream));
  }
  /// One token per sequence at position length(); a step captured in a
  /// CUDA graph replays at the next position each time (setLength brings
  /// length() along after replays).
  Status decode(const void *x, void *out, void *stream) {
    return detail::status(hisa_v4_attention_decode(handle, x, out, stream));
  }
  Status setLength(int64_t length, void *stream) {
    return detail::status(hisa_v4_attention_set_length(handle, length, stream));
  }
  /// Decode's L2 prefetch of its next projection's weights: at most `bytes`
  /// per weight, -1 automatic, 0 off (the default).
  Status setL2Prefetch(int64_t bytes) {
    return detail::status(hisa_v4_attention_set_l2_prefetch(handle, bytes));
  }
  int64_t length() const {
    int64_t value = 0;
    (void)hisa_v4_attention_info(handle, &value, nullptr, nullptr, nullptr);
    return value;
  }
  /// CSA layers: the indexer's key cache (fp8 codes [batch, rows, 128],
  /// f32 scales [batch, rows]), writable; other ratios: nulls and 0 rows.
  struct IndexKeyCache {
    void *keys = nullptr;
    float *scales = nullptr;
    int64_t rowsPerSequence = 0;
  };
  IndexKeyCache indexKeyCache() const {
    IndexKeyCache cache;
    (void)hisa_v4_attention_index_keys(handle, &cache.keys, &cache.scales,
                                       &cache.rowsPerSequence);
    return cache;
  }

private:
  explicit Attention(hisa_v4_attention *handle) : handle(handle) {}
  hisa_v4_attention *handle;
};

} // namespace v4

/// The runtime's version string.
inline std::string version() { return hisa_version(); }

/// Whether kernels are launched as programmatic dependents of the previous
/// kernel in their stream (hisa_set_programmatic_launch); returns the
/// previous setting.
inline bool setProgrammaticLaunch(bool enabled) {
  return hisa_set_programmatic_launch(enabled ? 1 : 0) != 0;
}

} // namespace hisa

#endif // HISA_HISA_HPP
