//===- Attention.h - The DeepSeek-V4 attention layer ------------*- C++ -*-===//
//
// Orchestration above the operator layer (hisa/Ops): one DeepSeek-V4
// attention layer (KERNELS.md "The V4 attention layer around the kernel";
// python/hisa/v4/reference.py is its specification) with its caches, on the
// caller's stream. The layer allocates its caches and a workspace once, at
// create, for `batch` sequences of at most `maxSeq` tokens; prefill and
// decode allocate nothing. Weights are the caller's device tensors.
//
// All sequences of a batch have the same length: prefill takes the prompt
// of every sequence at once (seq tokens each, positions 0 .. seq - 1),
// decode one token per sequence at position length().
//
//===----------------------------------------------------------------------===//

#ifndef HISA_V4_ATTENTION_H
#define HISA_V4_ATTENTION_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>

namespace hisa::v4 {

/// The layer's dimensions (reference.Config). Fixed by the kernels:
/// headDim 512, ropeDim 64, window 128, indexDim 128.
struct Config {
  int64_t dim = 4096;
  int64_t heads = 64;
  int64_t qLora = 1024;
  int64_t oGroups = 8;
  int64_t oLora = 1024;
  int64_t compressRatio = 4; ///< 0 (window only), 4 (CSA), 128 (HCA)
  int64_t indexHeads = 64;
  int64_t indexTopk = 512;
  float eps = 1e-6f;
  float ropeTheta = 10000.0f;
  float compressRopeTheta = 160000.0f;
};

constexpr int64_t kHeadDim = 512;
constexpr int64_t kRopeDim = 64;
constexpr int64_t kWindow = 128;
constexpr int64_t kIndexDim = 128;

/// Device pointers of the layer's weights (reference.random_weights): bf16
/// matrices in [out, in] layout (wo_a: [oGroups, oLora, heads / oGroups *
/// 512]), f32 vectors (norms, attnSink, ape). The compressor's are needed
/// when compressRatio > 0, the indexer's (i*) when it is 4.
struct Weights {
  const void *wqA = nullptr, *wqB = nullptr, *wkv = nullptr;
  const void *woA = nullptr, *woB = nullptr;
  const float *qNorm = nullptr, *kvNorm = nullptr, *attnSink = nullptr;
  const void *cWkv = nullptr, *cWgate = nullptr;
  const float *cApe = nullptr, *cNorm = nullptr;
  const void *iWq = nullptr, *iWeights = nullptr, *iWkv = nullptr,
             *iWgate = nullptr;
  const float *iApe = nullptr, *iNorm = nullptr;
};

class Attention {
public:
  /// Checks the configuration and weights, allocates the caches and the
  /// workspace (for prefills of up to maxPrefillTokens = batch * seq
  /// tokens; 0: batch * maxSeq) on the current device and fills the RoPE
  /// tables.
  static llvm::Expected<std::unique_ptr<Attention>>
  create(const Config &config, const Weights &weights, int64_t batch,
         int64_t maxSeq, int64_t maxPrefillTokens = 0);
  ~Attention();

  /// x [batch, seq, dim] bf16 -> out [batch, seq, dim] bf16; resets the
  /// caches to the prompt (start_pos 0). x and out (here and in decode) are
  /// 16-byte aligned device memory: the projections move 16-byte pieces.
  llvm::Error prefill(const void *x, int64_t seq, void *out, void *stream);

  /// x [batch, dim] bf16, the token at position length() of every sequence
  /// -> out [batch, dim] bf16.
  llvm::Error decode(const void *x, void *out, void *stream);

  int64_t length() const { return length_; }
  /// The sequences hold `length` tokens (the caches keep whatever they
  /// hold): after replays of a captured decode step, or to time decode at a
  /// long context without its prefill. The device positions are set on
  /// `stream`, which the next forward's stream must follow (no default: the
  /// legacy stream would not order against a non-blocking one). 1 <=
  /// length <= maxSeq.
  llvm::Error setLength(int64_t length, void *stream);
  int64_t batch() const { return batch_; }
  /// Columns of the index rows (window + compressed slots).
  int64_t indexColumns() const;
  /// The kv cache [batch, 128 + maxSeq / ratio, 512] bf16 (the ring, then
  /// the compressed entries) and the last call's index rows [tokens,
  /// indexColumns()] int32, for tests and inspection.
  const void *kvCache() const;
  const int32_t *lastIndices() const;
  /// CSA layers (ratio 4): the indexer's key cache, fp8 e4m3 codes [batch,
  /// rowsPerSequence, 128] and their power-of-two scales [batch,
  /// rowsPerSequence] f32, entry j of sequence b at row j. Writable: for
  /// tests, and for benchmarks that time decode at a long context without
  /// its prefill (setLength), whose entries are otherwise zeros (every
  /// score tied). Other ratios: null pointers and 0 rows.
  struct IndexKeyCache {
    void *keys = nullptr;
    float *scales = nullptr;
    int64_t rowsPerSequence = 0;
  };
  IndexKeyCache indexKeyCache() const;

  /// Opt-in: decode warms L2 with the head of its next big projection's
  /// weights on a side stream while the q branch's small launches leave the
  /// memory system idle: at most `bytes` per weight; -1 picks a share of
  /// the device's L2, 0 (the default) turns it off. Off by default because
  /// it measured slower on the H200 at B = 64 (docs/performance.md,
  /// 2026-12-03, seventeenth session). Takes effect at the next forward (a
  /// captured graph keeps what it captured).
  llvm::Error setL2Prefetch(int64_t bytes);
  /// The bytes per weight decode prefetches now.
  uint64_t l2PrefetchBytes() const;

  Attention(const Attention &) = delete;
  Attention &operator=(const Attention &) = delete;

private:
  struct Buffers;
  Attention(const Config &config, const Weights &weights, int64_t batch,
            int64_t maxSeq, int64_t maxPrefillTokens);
  llvm::Error forward(const void *x, int64_t seq, void *out, bool decode,
                      void *stream);
  /// CSA: the indexer's selection of compressed entries for every token
  /// (buffers' `selected`), before the index rows are assembled.
  /// The CSA indexer's keys (its compressor and their fp8 codes), on their
  /// side stream; records keysReady.
  llvm::Error indexerKeys(const void *x, int64_t seq, bool decode);
  /// Its q, scores and top-k on `stream`, after qrReady, `weighted` (its
  /// head weights and windows, on the keys' stream) and keysReady.
  llvm::Error indexerScores(const void *x, int64_t seq, bool decode,
                            void *stream);
  /// The index rows of the `batch * seq` tokens (window part, then the
  /// compressed part: all visible entries, or CSA's selection) on `stream`.
  llvm::Error indexRows(bool decode, int64_t seq, void *stream);
  /// y = x w^T of one projection (ops::linear), split over k through the
  /// buffers' splitK workspace where ops::linearSplits chooses it (decode).
  llvm::Error project(const void *x, const void *w, void *y, int64_t m,
                      int64_t n, int64_t k, int64_t groups, void *stream);
  /// project (one group) then the RMSNorm of y's rows with normWeight.
  llvm::Error projectNormed(const void *x, const void *w, void *y, int64_t m,
                            int64_t n, int64_t k, const float *normWeight,
                            void *stream);

  Config config_;
  Weights weights_;
  int64_t batch_, maxSeq_, maxPrefillTokens_, length_ = 0;
  int64_t l2Prefetch_ = 0;
  /// The automatic prefetch per weight, in eighths of L2.
  static constexpr uint64_t kAutoL2PrefetchEighths = 5;
  std::unique_ptr<Buffers> buffers_;
};

} // namespace hisa::v4

#endif // HISA_V4_ATTENTION_H
