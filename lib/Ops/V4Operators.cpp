//===- V4Operators.cpp - The DeepSeek-V4 attention layer's operators ------===//

#include "hisa/Ops/V4Operators.h"

#include "OperatorSupport.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace llvm;
using namespace hisa::runtime;

namespace hisa::ops {
using namespace detail;
namespace {

/// linear's tile (kernels-dsl/linear.mlir defaults): groups other than one
/// need whole column tiles.
constexpr int64_t kLinearBlockN = 256;
constexpr int64_t kLinearBlockK = 64;

/// The width of the Compressor's rows: dim, twice with overlap.
int64_t compressWidth(const CompressShape &shape) {
  return (shape.overlap ? 2 : 1) * shape.dim;
}

Error checkCompress(const char *op, const CompressShape &shape) {
  if (shape.batch < 1)
    return argumentError(
        formatv("{0}: batch = {1} must be >= 1", op, shape.batch));
  if (shape.dim != 128 && shape.dim != 512)
    return argumentError(
        formatv("{0}: dim = {1}; supported: 128 (the indexer's keys), 512", op,
                shape.dim));
  if (shape.overlap ? shape.ratio != 4
                    : (shape.ratio < 1 || shape.ratio > 1024))
    return argumentError(formatv(
        "{0}: ratio = {1} with overlap = {2}; supported: 4 with overlap, 1 to "
        "1024 without",
        op, shape.ratio, shape.overlap ? 1 : 0));
  if (shape.quantize < 0 || shape.quantize > 2 ||
      (shape.quantize == 2 && shape.dim != 128))
    return argumentError(formatv(
        "{0}: quantize = {1}; supported: 0, 1 (fp8), 2 (Hadamard + fp4, dim "
        "128)",
        op, shape.quantize));
  if (shape.firstSlot < 0 || shape.slots < shape.firstSlot)
    return argumentError(
        formatv("{0}: first_slot = {1} must lie in [0, slots = {2}]", op,
                shape.firstSlot, shape.slots));
  if (shape.tablePositions < 1)
    return argumentError(formatv("{0}: the RoPE tables have {1} positions", op,
                                 shape.tablePositions));
  return Error::success();
}

SpecializationText compressParams(const CompressShape &shape, bool decode) {
  return specialization({{"blocks", shape.dim / 64},
                         {"decode", decode ? 1 : 0},
                         {"overlap", shape.overlap ? 1 : 0},
                         {"quantize", shape.quantize},
                         {"ratio", shape.ratio}});
}

Error runCompress(const char *op, const void *kv, const void *score,
                  const float *ape, const float *norm, const float *cos,
                  const float *sin, float *stateKv, float *stateScore,
                  void *out, const int32_t *base, const CompressShape &shape,
                  int64_t rows, int64_t seq, float eps, bool decode,
                  void *stream) {
  if (Error error = checkCompress(op, shape))
    return error;
  if (Error error =
          checkPointers(op, {{"kv", kv, 2},
                             {"score", score, 2},
                             {"ape", ape, 4},
                             {"norm", norm, 4},
                             {"cos", cos, 4},
                             {"sin", sin, 4},
                             {"state_kv", stateKv, 4},
                             {"state_score", stateScore, 4},
                             {"out", out, 2},
                             {decode ? "positions" : "zeros", base, 4}}))
    return error;
  int64_t width = compressWidth(shape);
  LaunchArgument arguments[] = {
      tensor(kv, {rows, width}),
      tensor(score, {rows, width}),
      tensor(ape, {shape.ratio, width}),
      tensor(norm, {shape.dim}),
      tensor(cos, {shape.tablePositions, 32}),
      tensor(sin, {shape.tablePositions, 32}),
      tensor(stateKv, {shape.batch, 2 * shape.ratio, width}),
      tensor(stateScore, {shape.batch, 2 * shape.ratio, width}),
      tensor(out, {shape.batch, shape.slots, shape.dim}),
      tensor(base, {shape.batch}),
      integer(seq),
      integer(shape.firstSlot),
      floatScalar(eps)};
  return runOperator("v4_compress", compressParams(shape, decode), arguments,
                     stream);
}

} // namespace

namespace {

/// linear's tile for m (and, at decode-sized m, n, k and groups). Prefill-
/// sized m: 128 x 256 tiles. Decode-sized m (one token per sequence) streams
/// the weights: 64-row tiles, 128 columns wide where the shape has enough
/// of them (half the re-reads of x per weight byte; two blocks per SM with
/// 64-deep k steps), else 64 wide with 128-deep steps. Measured on H200 at
/// m = 64 over block_n {64, 128, 256} x block_k {64, 128} x split-k
/// (python/bench/probes/linear_decode_sweep.py, docs/performance.md): this
/// rule picks the best or near-best configuration of each V4 projection.
struct LinearTile {
  int64_t blockM, blockN, blockK;
};
Expected<LinearTile> linearTile(int64_t m, int64_t n, int64_t k,
                                int64_t groups) {
  if (m > 64)
    return LinearTile{128, kLinearBlockN, kLinearBlockK};
  bool wide = groups == 1 && n >= 1024 && k >= 4096;
  if (groups == 1 && !wide) {
    Expected<int64_t> sms = getPlanningMultiprocessors(PlanFor::Launch);
    if (!sms)
      return sms.takeError();
    wide = n > 64 * *sms;
  }
  LinearTile tile{64, wide ? 128 : 64, wide ? 64 : 128};
  if (k % tile.blockK)
    tile.blockK = kLinearBlockK;
  return tile;
}

Error checkLinear(const char *op, int64_t m, int64_t n, int64_t k,
                  int64_t groups) {
  if (Error error = checkNonNegative(op, "m", m))
    return error;
  if (n < 1 || groups < 1)
    return argumentError(
        formatv("{0}: n = {1} and groups = {2} must be >= 1", op, n, groups));
  if (k < kLinearBlockK || k % kLinearBlockK || k > kLinearMaxK)
    return argumentError(formatv("{0}: k = {1} must be a multiple of {2} in "
                                 "[{2}, {3}]",
                                 op, k, kLinearBlockK, kLinearMaxK));
  if (groups > 1 && n % kLinearBlockN)
    return argumentError(
        formatv("{0}: with groups = {1}, n = {2} must be a multiple of {3} (a "
                "partial tile would write the next group's columns)",
                op, groups, n, kLinearBlockN));
  if (Error error = checkIndexRange(op, "m", m))
    return error;
  return checkIndexRange(op, "groups * n", groups * n);
}

SpecializationText linearParams(const LinearTile &tile, int64_t n, int64_t k,
                                int64_t groups, int64_t splits) {
  return specialization({{"block_k", tile.blockK},
                         {"block_m", tile.blockM},
                         {"block_n", tile.blockN},
                         {"groups", groups},
                         {"k", k},
                         {"n", n},
                         {"splits", splits},
                         {"x_cols", groups * k},
                         {"y_cols", groups * n}});
}

} // namespace

Error linear(const void *x, const void *w, void *y, int64_t m, int64_t n,
             int64_t k, int64_t groups, void *stream) {
  const char *op = "linear";
  if (Error error = checkLinear(op, m, n, k, groups))
    return error;
  if (m == 0)
    return Error::success();
  // Prefill-sized m stores y in 16-byte pieces (linear_staged, below),
  // decode-sized m in bf16 pairs.
  bool staged = m > 64;
  if (Error error = checkPointers(
          op, {{"x", x, 16}, {"w", w, 16}, {"y", y, staged ? 16u : 4u}}))
    return error;
  LaunchArgument arguments[] = {tensor(x, {m, groups * k}),
                                tensor(w, {groups * n, k}),
                                tensor(y, {m, groups * n})};
  // Prefill-sized m: the epilogue through a swizzled shared tile and
  // 16-byte stores (linear_staged; H200, V4-Flash's projections at M =
  // 65536: 89-93% -> 95-97% of cuBLAS, wq_b's 4.3 GB output 61% -> 70%).
  // Decode-sized 64 x 64 tiles keep the direct stores (not measured there).
  const char *kernel = staged ? "linear_staged" : "linear";
  Expected<LinearTile> tile = linearTile(m, n, k, groups);
  if (!tile)
    return tile.takeError();
  return runOperator(kernel, linearParams(*tile, n, k, groups, 1), arguments,
                     stream);
}

/// A split-k product's split count (it divides tile's k steps), m (the
/// reduction's grid) and, for m > 0, its f32 partial sums' workspace.
static Error checkSplitK(const char *op, const LinearTile &tile, int64_t m,
                         int64_t n, int64_t k, int64_t groups, int64_t splits,
                         const float *workspace, uint64_t workspaceBytes) {
  if (splits < 2 || splits > 16 || (k / tile.blockK) % splits)
    return argumentError(formatv(
        "{0}: splits = {1} must lie in [2, 16] and divide the {2} k steps of "
        "{3}",
        op, splits, k / tile.blockK, tile.blockK));
  if (m > 65535)
    return argumentError(
        formatv("{0}: m = {1} exceeds 65535 (the reduction's grid)", op, m));
  uint64_t needed = uint64_t(splits) * m * groups * n * 4;
  if (m > 0 && (!workspace || workspaceBytes < needed))
    return argumentError(formatv("{0}: workspace has {1} bytes, needs {2}", op,
                                 workspace ? workspaceBytes : 0, needed));
  return Error::success();
}

Error linearSplitK(const void *x, const void *w, void *y, int64_t m, int64_t n,
                   int64_t k, int64_t groups, int64_t splits, float *workspace,
                   uint64_t workspaceBytes, void *stream) {
  const char *op = "linear_split_k";
  if (Error error = checkLinear(op, m, n, k, groups))
    return error;
  Expected<LinearTile> planned = linearTile(m, n, k, groups);
  if (!planned)
    return planned.takeError();
  const LinearTile &tile = *planned;
  if (Error error = checkSplitK(op, tile, m, n, k, groups, splits, workspace,
                                workspaceBytes))
    return error;
  if (m == 0)
    return Error::success();
  if (Error error = checkPointers(op, {{"x", x, 16},
                                       {"w", w, 16},
                                       {"y", y, 2},
                                       {"workspace", workspace, 16}}))
    return error;
  LaunchArgument partial[] = {tensor(x, {m, groups * k}),
                              tensor(w, {groups * n, k}),
                              tensor(workspace, {splits, m, groups * n})};
  if (Error error = runOperator("linear_partial",
                                linearParams(tile, n, k, groups, splits),
                                partial, stream))
    return error;
  LaunchArgument reduce[] = {tensor(workspace, {splits, m, groups * n}),
                             tensor(y, {m, groups * n})};
  return runOperator("linear_reduce", "", reduce, stream);
}

/// dim is one v4_rmsnorm is specialized for.
bool isSupportedNormDim(int64_t dim) {
  return dim == 128 || dim == 256 || dim == 512 || dim == 1024 || dim == 2048 ||
         dim == 4096;
}

static Error checkNormDim(const char *op, int64_t dim) {
  if (!isSupportedNormDim(dim))
    return argumentError(formatv(
        "{0}: dim = {1}; supported: 128, 256, 512, 1024, 2048, 4096", op, dim));
  return Error::success();
}

static Error checkEps(const char *op, float eps) {
  if (!(eps >= 0) || !std::isfinite(eps))
    return argumentError(
        formatv("{0}: eps = {1} must be finite and >= 0", op, eps));
  return Error::success();
}

Error linearSplitKRmsnorm(const void *x, const void *w, void *y, int64_t m,
                          int64_t n, int64_t k, int64_t splits,
                          float *workspace, uint64_t workspaceBytes,
                          const float *normWeight, float eps, void *stream) {
  const char *op = "linear_split_k_rmsnorm";
  if (Error error = checkLinear(op, m, n, k, 1))
    return error;
  if (Error error = checkNormDim(op, n))
    return error;
  if (Error error = checkEps(op, eps))
    return error;
  Expected<LinearTile> planned = linearTile(m, n, k, 1);
  if (!planned)
    return planned.takeError();
  const LinearTile &tile = *planned;
  if (Error error =
          checkSplitK(op, tile, m, n, k, 1, splits, workspace, workspaceBytes))
    return error;
  if (m == 0)
    return Error::success();
  if (Error error = checkPointers(op, {{"x", x, 16},
                                       {"w", w, 16},
                                       {"y", y, 16},
                                       {"workspace", workspace, 16},
                                       {"norm_weight", normWeight, 16}}))
    return error;
  LaunchArgument partial[] = {tensor(x, {m, k}), tensor(w, {n, k}),
                              tensor(workspace, {splits, m, n})};
  if (Error error =
          runOperator("linear_partial", linearParams(tile, n, k, 1, splits),
                      partial, stream))
    return error;
  LaunchArgument reduce[] = {tensor(workspace, {splits, m, n}),
                             tensor(normWeight, {n}), tensor(y, {m, n}),
                             floatScalar(eps)};
  return runOperator("linear_reduce_rmsnorm", specialization({{"dim", n}}),
                     reduce, stream);
}

Expected<int64_t> linearSplits(int64_t m, int64_t n, int64_t k,
                               int64_t groups) {
  if (m < 1 || m > 64 || groups != 1 || n < 1 || k < kLinearBlockK ||
      k % kLinearBlockK)
    return 1;
  // Split k until the tiles fill about one wave of 128 blocks, or until the
  // f32 partial sums (written, then read by linear_reduce) reach a quarter
  // of the weight bytes: beyond that their traffic costs more than the
  // parallelism gains (H200, m = 64: splitting wq_a 16 ways took 14.0 us,
  // 8 ways 7.5; wo_b 8 ways 35.5 us, 4 ways 25.5).
  // (128 blocks on the H200's 132 SMs, where it was measured.)
  Expected<int64_t> sms = getPlanningMultiprocessors(PlanFor::Launch);
  if (!sms)
    return sms.takeError();
  const int64_t wave = *sms * 128 / kMeasuredMultiprocessors;
  Expected<LinearTile> tile = linearTile(m, n, k, groups);
  if (!tile)
    return tile.takeError();
  int64_t tiles = (n + tile->blockN - 1) / tile->blockN;
  int64_t steps = k / tile->blockK;
  int64_t weightBytes = n * k * 2;
  int64_t splits = 1;
  for (int64_t next : {2, 4, 8, 16}) {
    if (tiles * splits >= wave || 4 * splits * m * n * 4 >= weightBytes)
      break;
    if (steps % next)
      break;
    splits = next;
  }
  return splits;
}

Error v4Rmsnorm(const void *x, const float *weight, void *out, int64_t rows,
                int64_t dim, float eps, void *stream) {
  const char *op = "v4_rmsnorm";
  if (Error error = checkNormDim(op, dim))
    return error;
  if (Error error = checkEps(op, eps))
    return error;
  if (Error error = checkNonNegative(op, "rows", rows))
    return error;
  if (rows == 0)
    return Error::success();
  if (Error error = checkPointers(
          op, {{"x", x, 16}, {"weight", weight, 16}, {"out", out, 16}}))
    return error;
  LaunchArgument arguments[] = {tensor(x, {rows, dim}), tensor(weight, {dim}),
                                tensor(out, {rows, dim}), floatScalar(eps)};
  return runOperator("v4_rmsnorm", specialization({{"dim", dim}}), arguments,
                     stream);
}

/// The sizes of a RoPE over x [tokens, heads, dim] with tables of
/// tablePositions rows, tokens in sequences of seq.
static Error checkRopeShape(const char *op, int64_t tokens, int64_t heads,
                            int64_t dim, int64_t seq, int64_t tablePositions) {
  if (Error error = checkNonNegative(op, "tokens", tokens))
    return error;
  if (heads < 1 || (dim != 128 && dim != 512))
    return argumentError(
        formatv("{0}: heads = {1} must be >= 1 and dim = {2} 128 or 512", op,
                heads, dim));
  if (seq < 1 || tablePositions < 1)
    return argumentError(
        formatv("{0}: seq = {1} and the tables' positions = {2} must be >= 1",
                op, seq, tablePositions));
  return Error::success();
}

Error v4Rope(void *x, const float *cos, const float *sin, const int32_t *base,
             int64_t tokens, int64_t heads, int64_t dim, int64_t seq,
             int64_t tablePositions, bool inverse, void *stream) {
  const char *op = "v4_rope";
  if (Error error = checkRopeShape(op, tokens, heads, dim, seq, tablePositions))
    return error;
  if (tokens == 0)
    return Error::success();
  if (Error error = checkPointers(
          op,
          {{"x", x, 4}, {"cos", cos, 4}, {"sin", sin, 4}, {"base", base, 4}}))
    return error;
  LaunchArgument arguments[] = {
      tensor(x, {tokens, heads, dim}), tensor(cos, {tablePositions, 32}),
      tensor(sin, {tablePositions, 32}),
      tensor(base, {(tokens + seq - 1) / seq}), integer(seq)};
  return runOperator(
      "v4_rope", specialization({{"dim", dim}, {"inverse", inverse ? 1 : 0}}),
      arguments, stream);
}

Error v4NormRope(void *x, const float *weight, const float *cos,
                 const float *sin, const int32_t *base, int64_t tokens,
                 int64_t heads, int64_t dim, int64_t seq,
                 int64_t tablePositions, float eps, void *stream) {
  const char *op = "v4_norm_rope";
  if (Error error = checkRopeShape(op, tokens, heads, dim, seq, tablePositions))
    return error;
  if (Error error = checkEps(op, eps))
    return error;
  if (Error error = checkIndexRange(op, "tokens * heads", tokens * heads))
    return error;
  if (tokens == 0)
    return Error::success();
  if (Error error = checkPointers(op, {{"x", x, 16},
                                       {"weight", weight, 16},
                                       {"cos", cos, 4},
                                       {"sin", sin, 4},
                                       {"base", base, 4}}))
    return error;
  LaunchArgument arguments[] = {tensor(x, {tokens, heads, dim}),
                                tensor(weight, {dim}),
                                tensor(cos, {tablePositions, 32}),
                                tensor(sin, {tablePositions, 32}),
                                tensor(base, {(tokens + seq - 1) / seq}),
                                integer(seq),
                                floatScalar(eps)};
  return runOperator("v4_norm_rope", specialization({{"dim", dim}}), arguments,
                     stream);
}

Error v4Fp8Qdq(void *x, int64_t rows, void *stream) {
  const char *op = "v4_fp8_qdq";
  if (Error error = checkNonNegative(op, "rows", rows))
    return error;
  if (rows == 0)
    return Error::success();
  if (Error error = checkPointer(op, "x", x, 8))
    return error;
  LaunchArgument arguments[] = {tensor(x, {rows, 8, 64})};
  return runOperator("v4_fp8_qdq", "", arguments, stream);
}

Error v4HadamardFp4(void *x, int64_t rows, void *stream) {
  const char *op = "v4_hadamard_fp4";
  if (Error error = checkNonNegative(op, "rows", rows))
    return error;
  if (rows == 0)
    return Error::success();
  if (Error error = checkPointer(op, "x", x, 2))
    return error;
  LaunchArgument arguments[] = {tensor(x, {rows, 128})};
  return runOperator("v4_hadamard_fp4", "", arguments, stream);
}

Error v4IndexQuery(const void *q, const float *cos, const float *sin,
                   const int32_t *base, const void *wIn, void *q8, float *scale,
                   float *wOut, int64_t tokens, int64_t heads, int64_t seq,
                   int64_t tablePositions, float factor, void *stream) {
  const char *op = "v4_index_query";
  if (Error error = checkRopeShape(op, tokens, heads, 128, seq, tablePositions))
    return error;
  if (Error error = checkIndexRange(op, "tokens * heads", tokens * heads))
    return error;
  if (!std::isfinite(factor))
    return argumentError(
        formatv("{0}: factor = {1} is not finite", op, factor));
  if (tokens == 0)
    return Error::success();
  if (Error error = checkPointers(op, {{"q", q, 4},
                                       {"cos", cos, 4},
                                       {"sin", sin, 4},
                                       {"base", base, 4},
                                       {"w_in", wIn, 2},
                                       {"q8", q8, 4},
                                       {"scale", scale, 4},
                                       {"w_out", wOut, 4}}))
    return error;
  LaunchArgument arguments[] = {tensor(q, {tokens, heads, 128}),
                                tensor(cos, {tablePositions, 32}),
                                tensor(sin, {tablePositions, 32}),
                                tensor(base, {(tokens + seq - 1) / seq}),
                                tensor(wIn, {tokens, heads}),
                                tensor(q8, {tokens, heads, 128}),
                                tensor(scale, {tokens, heads}),
                                tensor(wOut, {tokens, heads}),
                                integer(seq),
                                floatScalar(factor)};
  return runOperator(op, "", arguments, stream);
}

Error v4CompressPrefill(const void *kv, const void *score, const float *ape,
                        const float *norm, const float *cos, const float *sin,
                        float *stateKv, float *stateScore, void *out,
                        const int32_t *zeros, const CompressShape &shape,
                        int64_t seq, float eps, void *stream) {
  const char *op = "v4_compress_prefill";
  if (seq < 1)
    return argumentError(formatv("{0}: seq = {1} must be >= 1", op, seq));
  if (shape.firstSlot + seq / std::max<int64_t>(shape.ratio, 1) > shape.slots)
    return argumentError(formatv(
        "{0}: {1} entries from slot {2} do not fit the {3} slots of out", op,
        seq / std::max<int64_t>(shape.ratio, 1), shape.firstSlot, shape.slots));
  if (seq > shape.tablePositions)
    return argumentError(formatv("{0}: seq = {1} exceeds the RoPE tables' {2} "
                                 "positions",
                                 op, seq, shape.tablePositions));
  return runCompress(op, kv, score, ape, norm, cos, sin, stateKv, stateScore,
                     out, zeros, shape, shape.batch * seq, seq, eps, false,
                     stream);
}

Error v4CompressDecode(const void *kv, const void *score, const float *ape,
                       const float *norm, const float *cos, const float *sin,
                       float *stateKv, float *stateScore, void *out,
                       const int32_t *positions, const CompressShape &shape,
                       float eps, void *stream) {
  // The positions are in device memory: the kernel writes no entry past
  // out's slots and reads no RoPE row past the tables.
  return runCompress("v4_compress_decode", kv, score, ape, norm, cos, sin,
                     stateKv, stateScore, out, positions, shape, shape.batch,
                     /*seq=*/1, eps, true, stream);
}

Error v4Indices(int32_t *out, const int32_t *selected, const int32_t *positions,
                const IndexShape &shape, int64_t seq, void *stream) {
  const char *op = "v4_indices";
  if (Error error = checkNonNegative(op, "tokens", shape.tokens))
    return error;
  if (shape.window < 1 || shape.slots < 0 || shape.ratio < 0 ||
      (shape.ratio == 0 && shape.slots != 0) || (shape.csa && shape.ratio != 4))
    return argumentError(formatv(
        "{0}: window = {1}, slots = {2}, ratio = {3}, csa = {4}: needs window "
        ">= 1, slots = 0 exactly when ratio = 0, csa only with ratio 4",
        op, shape.window, shape.slots, shape.ratio, shape.csa ? 1 : 0));
  if (!shape.decode && seq < 1)
    return argumentError(formatv("{0}: seq = {1} must be >= 1", op, seq));
  if (Error error =
          checkIndexRange(op, "seq + slots", seq + shape.slots + shape.window))
    return error;
  if (shape.tokens == 0)
    return Error::success();
  if (Error error = checkPointer(op, "out", out, 4))
    return error;
  if (shape.csa)
    if (Error error = checkPointer(op, "selected", selected, 4))
      return error;
  if (shape.decode)
    if (Error error = checkPointer(op, "positions", positions, 4))
      return error;
  LaunchArgument arguments[] = {
      tensor(out, {shape.tokens, shape.window + shape.slots}),
      // Without CSA the kernel never reads it: any valid pointer will do.
      shape.csa
          ? tensor(selected, {shape.tokens, std::max<int64_t>(shape.slots, 1)})
          : tensor(out, {1, 1}),
      shape.decode ? tensor(positions, {shape.tokens}) : tensor(out, {1}),
      integer(std::max<int64_t>(seq, 1))};
  return runOperator("v4_indices",
                     specialization({{"csa", shape.csa ? 1 : 0},
                                     {"decode", shape.decode ? 1 : 0},
                                     {"ratio", shape.ratio},
                                     {"window", shape.window}}),
                     arguments, stream);
}

Error v4ToFp8(const void *x, void *out, float *scale, const void *wIn,
              float *wOut, const int32_t *decodePositions, int64_t batch,
              int64_t slots, int64_t firstSlot, int64_t endSlot, float factor,
              void *stream) {
  const char *op = "v4_to_fp8";
  if (batch < 1 || firstSlot < 0 || endSlot < firstSlot || endSlot > slots)
    return argumentError(formatv(
        "{0}: rows [{1}, {2}) of {3} slots, batch {4}: need 0 <= first <= end "
        "<= slots and batch >= 1",
        op, firstSlot, endSlot, slots, batch));
  if (!std::isfinite(factor))
    return argumentError(
        formatv("{0}: factor = {1} is not finite", op, factor));
  bool decode = decodePositions != nullptr;
  if (decode) {
    // One block per sequence picks its row from its position.
    firstSlot = 0;
    endSlot = 1;
  }
  if (endSlot == firstSlot)
    return Error::success();
  if (Error error = checkPointers(
          op, {{"x", x, 4}, {"out", out, 4}, {"scale", scale, 4}}))
    return error;
  bool weights = wIn != nullptr;
  if (weights)
    if (Error error = checkPointers(op, {{"w_in", wIn, 2}, {"w_out", wOut, 4}}))
      return error;
  LaunchArgument arguments[] = {
      tensor(x, {batch, slots, 128}),
      tensor(out, {batch, slots, 128}),
      tensor(scale, {batch, slots}),
      weights ? tensor(wIn, {batch, slots}) : tensor(x, {1, 1}),
      weights ? tensor(wOut, {batch, slots}) : tensor(scale, {1, 1}),
      decode ? tensor(decodePositions, {batch}) : tensor(scale, {1}),
      integer(firstSlot),
      integer(endSlot),
      floatScalar(factor)};
  return runOperator("v4_to_fp8",
                     specialization({{"decode", decode ? 1 : 0},
                                     {"weights", weights ? 1 : 0}}),
                     arguments, stream);
}

Error v4IndexWindows(int32_t *ks, int32_t *ke, const int32_t *base,
                     int64_t tokens, int64_t seq, int64_t capacity,
                     int64_t ratio, void *stream) {
  const char *op = "v4_index_windows";
  if (tokens < 0 || seq < 1 || capacity < 0 || ratio < 1)
    return argumentError(
        formatv("{0}: tokens = {1}, seq = {2}, capacity = {3}, ratio = {4}", op,
                tokens, seq, capacity, ratio));
  if (Error error = checkIndexRange(op, "batch * capacity",
                                    (tokens / seq + 1) * capacity))
    return error;
  if (tokens == 0)
    return Error::success();
  if (Error error =
          checkPointers(op, {{"ks", ks, 4}, {"ke", ke, 4}, {"base", base, 4}}))
    return error;
  LaunchArgument arguments[] = {tensor(ks, {tokens}), tensor(ke, {tokens}),
                                tensor(base, {(tokens + seq - 1) / seq}),
                                integer(seq), integer(capacity)};
  return runOperator("v4_index_windows", specialization({{"ratio", ratio}}),
                     arguments, stream);
}

Error v4RingWrite(const void *kv, void *cache, const int32_t *positions,
                  int64_t batch, int64_t cacheRows, void *stream) {
  const char *op = "v4_ring_write";
  if (batch < 1 || cacheRows < 128)
    return argumentError(formatv(
        "{0}: batch = {1} must be >= 1 and the cache's {2} rows hold the "
        "128-token ring",
        op, batch, cacheRows));
  if (Error error = checkPointers(
          op,
          {{"kv", kv, 8}, {"cache", cache, 8}, {"positions", positions, 4}}))
    return error;
  LaunchArgument arguments[] = {tensor(kv, {batch, 512}),
                                tensor(cache, {batch, cacheRows, 512}),
                                tensor(positions, {batch})};
  return runOperator("v4_ring_write", "window=128", arguments, stream);
}

Error v4Advance(int32_t *positions, int64_t batch, bool set, int32_t value,
                void *stream) {
  const char *op = "v4_advance";
  if (batch < 1)
    return argumentError(formatv("{0}: batch = {1} must be >= 1", op, batch));
  if (Error error = checkPointer(op, "positions", positions, 4))
    return error;
  LaunchArgument arguments[] = {tensor(positions, {batch}), integer(value)};
  return runOperator("v4_advance", specialization({{"set", set ? 1 : 0}}),
                     arguments, stream);
}

} // namespace hisa::ops
