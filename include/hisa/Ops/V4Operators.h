//===- V4Operators.h - The DeepSeek-V4 attention layer's operators -*- C++
//-*-===//
//
// The operators the V4 attention layer (hisa/V4/Attention.h) is built from,
// beside sparse attention (hisa/Ops/Operators.h): projections, RMSNorm,
// RoPE, quantize-dequantize steps, the Compressor and the index rows. Same
// conventions as Operators.h: raw device pointers, the caller's stream,
// arguments checked and named, nothing allocated. Semantics:
// python/hisa/v4/reference.py (KERNELS.md "The V4 attention layer").
//
//===----------------------------------------------------------------------===//

#ifndef HISA_OPS_V4OPERATORS_H
#define HISA_OPS_V4OPERATORS_H

#include "llvm/Support/Error.h"

#include <cstdint>

namespace hisa::ops {

/// The widest k `linear` and its split-k forms take (one specialization per
/// k, so bounded).
constexpr int64_t kLinearMaxK = 16384;

/// Whether v4Rmsnorm (and the split-k projection's fused norm) takes rows
/// of `dim` elements.
bool isSupportedNormDim(int64_t dim);

/// y = x * w^T per group (bf16 in and out, f32 accumulation): x [m, groups
/// * k], w [groups * n, k] (a Linear's [out, in] weight, the groups'
/// stacked), y [m, groups * n]. k: a multiple of 64 up to 16384; with
/// groups > 1, n a multiple of 256.
llvm::Error linear(const void *x, const void *w, void *y, int64_t m, int64_t n,
                   int64_t k, int64_t groups, void *stream);

/// The same product with the k steps split over `splits` blocks per
/// output tile (2 to 16; for decode-sized m, where whole-k tiles leave SMs
/// idle): f32 partial sums into `workspace` (splits * m * groups * n * 4
/// bytes), then one reduction into y. k / 64 (k / 128 when m <= 64) must
/// be a multiple of splits; m at most 65535.
llvm::Error linearSplitK(const void *x, const void *w, void *y, int64_t m,
                         int64_t n, int64_t k, int64_t groups, int64_t splits,
                         float *workspace, uint64_t workspaceBytes,
                         void *stream);

/// linearSplitK followed by v4Rmsnorm of y's rows, with the reduction and
/// the norm in one launch (linear_reduce_rmsnorm; bit-identical to the two
/// steps): one group, n a v4Rmsnorm dim, normWeight [n] f32.
llvm::Error linearSplitKRmsnorm(const void *x, const void *w, void *y,
                                int64_t m, int64_t n, int64_t k, int64_t splits,
                                float *workspace, uint64_t workspaceBytes,
                                const float *normWeight, float eps,
                                void *stream);

/// The number of k splits linearSplitK should use for this product, 1 when
/// linear's whole-k tiles are the faster choice. Split where whole-k tiles
/// would leave most SMs idle: m <= 64, one group, at most 64 output tiles
/// of 64 x 64 (measured on the H200 at m = 64: wq_a 20.2 -> 12.4 us, wkv
/// 20.1 -> 8.4, wo_b 40.6 -> 35.4; the grouped wo_a, 128 tiles, got
/// slower); the most splits of {16, 8, 4, 2} that divide the k steps with
/// at most 4 blocks per SM of 132. An error when the device's SM count
/// cannot be asked (the plan scales with it).
llvm::Expected<int64_t> linearSplits(int64_t m, int64_t n, int64_t k,
                                     int64_t groups);

/// out [rows, dim] = x * rsqrt(mean(x^2) + eps) * weight (bf16 rows, f32
/// weight [dim]); dim in {128, 256, 512, 1024, 2048, 4096}; out may be x.
llvm::Error v4Rmsnorm(const void *x, const float *weight, void *out,
                      int64_t rows, int64_t dim, float eps, void *stream);

/// In place on x [tokens, heads, dim] bf16 (dim 512 or 128): the last 64
/// dims of each head rotate by the angles of token t's position base[t /
/// seq] + t % seq (base: int32 device memory, one per sequence; a prefill
/// from 0: zeros; a decode step: seq = 1 and the current positions) from the
/// cos / sin tables [tablePositions, 32] f32; inverse rotates back.
/// Positions past the tables read their last row.
llvm::Error v4Rope(void *x, const float *cos, const float *sin,
                   const int32_t *base, int64_t tokens, int64_t heads,
                   int64_t dim, int64_t seq, int64_t tablePositions,
                   bool inverse, void *stream);

/// v4Rmsnorm of each head of x [tokens, heads, dim] bf16 (weight [dim] f32)
/// then v4Rope (not inverse) of it, in place and in one launch
/// (v4_norm_rope; bit-identical to the two steps); dim 512 or 128.
llvm::Error v4NormRope(void *x, const float *weight, const float *cos,
                       const float *sin, const int32_t *base, int64_t tokens,
                       int64_t heads, int64_t dim, int64_t seq,
                       int64_t tablePositions, float eps, void *stream);

/// In place on x [rows, 512] bf16: the fp8 (e4m3, blocks of 64, scale
/// amax / 448) quantize-dequantize of the first 448 dims.
llvm::Error v4Fp8Qdq(void *x, int64_t rows, void *stream);

/// In place on x [rows, 128] bf16: the Walsh-Hadamard transform, then the
/// fp4 (e2m1, blocks of 32, power-of-two scales) quantize-dequantize.
llvm::Error v4HadamardFp4(void *x, int64_t rows, void *stream);

/// One Compressor (kernels-dsl/v4_compress.mlir): entries of dim (128 or
/// 512) from groups of `ratio` tokens (4 with overlap, or 128), written to
/// out [batch, slots, dim] at slot firstSlot + j; the decode state
/// stateKv / stateScore [batch, 2 * ratio, width] f32 (width = dim, twice
/// with overlap); cos / sin [tablePositions, 32].
struct CompressShape {
  int64_t batch = 1;
  int64_t dim = 512;
  int64_t ratio = 4;
  bool overlap = true;
  /// 0: none; 1: fp8 of the first dim - 64 dims; 2 (dim 128): Hadamard +
  /// fp4 of the whole entry (the CSA indexer's keys).
  int quantize = 1;
  int64_t slots = 0;
  int64_t firstSlot = 0;
  int64_t tablePositions = 0;
};

/// Prefill of seq tokens per sequence: kv, score [batch * seq, width] bf16
/// (the projections); writes entries 0 .. seq / ratio - 1 and the state of
/// the last two groups. `zeros`: [batch] int32 device memory (read, unused).
llvm::Error v4CompressPrefill(const void *kv, const void *score,
                              const float *ape, const float *norm,
                              const float *cos, const float *sin,
                              float *stateKv, float *stateScore, void *out,
                              const int32_t *zeros, const CompressShape &shape,
                              int64_t seq, float eps, void *stream);

/// Decode of sequence b's token at position positions[b] (int32 device
/// memory): kv, score [batch, width] bf16; writes entry position / ratio
/// when the token completes it (not past out's slots).
llvm::Error v4CompressDecode(const void *kv, const void *score,
                             const float *ape, const float *norm,
                             const float *cos, const float *sin, float *stateKv,
                             float *stateScore, void *out,
                             const int32_t *positions,
                             const CompressShape &shape, float eps,
                             void *stream);

/// The index rows of sparse attention (kernels-dsl/v4_indices.mlir): out
/// [tokens, window + slots] int32. Prefill (decode = false): tokens =
/// batch * seq, token t at position t % seq; decode: one token per
/// sequence, at positions[t] (int32 device memory). ratio 0: window only (slots
/// = 0); csa: the compressed part is the indexer's selection `selected`
/// [tokens, slots] (entry numbers, -1 padded) plus the offset of the entries
/// (seq in prefill, the window in decode); otherwise `selected` is not read.
struct IndexShape {
  int64_t tokens = 0;
  int64_t window = 128;
  int64_t slots = 0;
  int64_t ratio = 0;
  bool decode = false;
  bool csa = false;
};
llvm::Error v4Indices(int32_t *out, const int32_t *selected,
                      const int32_t *positions, const IndexShape &shape,
                      int64_t seq, void *stream);

/// The CSA indexer's operands in fp8 (kernels-dsl/v4_to_fp8.mlir): rows
/// [firstSlot, endSlot) of x [batch, slots, 128] bf16 (Hadamard + fp4
/// values) to out (fp8 e4m3, same shape) and scale [batch, slots] f32 (a
/// power of two per row); with wIn (bf16 [batch, slots]), wOut = wIn *
/// scale * factor (f32). With decodePositions (int32 device memory
/// [batch]), instead: row positions[b] / 4 of each sequence when its token
/// completed that entry (the keys after a decode step).
llvm::Error v4ToFp8(const void *x, void *out, float *scale, const void *wIn,
                    float *wOut, const int32_t *decodePositions, int64_t batch,
                    int64_t slots, int64_t firstSlot, int64_t endSlot,
                    float factor, void *stream);

/// The CSA indexer's query in one launch (kernels-dsl/v4_index_query.mlir):
/// each head of q [tokens, heads, 128] bf16 (read only) rotated by RoPE as
/// v4Rope (dim 128) does, Walsh-Hadamard transformed and fp4
/// quantize-dequantized as v4HadamardFp4 does, then split as v4ToFp8 does
/// into q8 (fp8 e4m3, q's shape) and its row scale [tokens, heads] f32, with
/// wOut = wIn (bf16 [tokens, heads]) * scale * factor (f32): the bits of
/// the three launches, without their round trips through memory.
llvm::Error v4IndexQuery(const void *q, const float *cos, const float *sin,
                         const int32_t *base, const void *wIn, void *q8,
                         float *scale, float *wOut, int64_t tokens,
                         int64_t heads, int64_t seq, int64_t tablePositions,
                         float factor, void *stream);

/// The CSA indexer's windows over packed per-sequence keys: token t of
/// `tokens` (sequence b = t / seq, position base[b] + t % seq; base: int32
/// device memory) sees the entries [b * capacity, b * capacity + (position
/// + 1) / ratio): ks, ke [tokens] int32.
llvm::Error v4IndexWindows(int32_t *ks, int32_t *ke, const int32_t *base,
                           int64_t tokens, int64_t seq, int64_t capacity,
                           int64_t ratio, void *stream);

/// A decode step's kv [batch, 512] bf16 into the ring: cache [batch,
/// cacheRows, 512] row positions[b] % 128.
llvm::Error v4RingWrite(const void *kv, void *cache, const int32_t *positions,
                        int64_t batch, int64_t cacheRows, void *stream);

/// positions[b] += 1 for every sequence (set: positions[b] = value).
llvm::Error v4Advance(int32_t *positions, int64_t batch, bool set,
                      int32_t value, void *stream);

} // namespace hisa::ops

#endif // HISA_OPS_V4OPERATORS_H
