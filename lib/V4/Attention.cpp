//===- Attention.cpp - The DeepSeek-V4 attention layer --------------------===//
//
// The layer's prefill and decode as sequences of operators (hisa/Ops) on the
// caller's stream; the order of python/hisa/v4/reference.py's Attention.
//
//===----------------------------------------------------------------------===//

#include "hisa/V4/Attention.h"

#include "hisa/Indexer/Indexer.h"
#include "hisa/Ops/Operators.h"
#include "hisa/Ops/V4Operators.h"
#include "hisa/Runtime/CudaDriver.h"
#include "hisa/Runtime/Jit.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <vector>

using namespace llvm;
using hisa::runtime::CudaDriver;

namespace hisa::v4 {
namespace {

Error argumentError(const Twine &message) {
  return createStringError(std::make_error_code(std::errc::invalid_argument),
                           message);
}

/// Device memory owned by the layer (cuMemAlloc / cuMemFree).
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() {
    if (pointer)
      if (CudaDriver *driver = CudaDriver::getIfLoaded())
        (void)driver->memFree(pointer);
  }

  Error allocate(CudaDriver &driver, uint64_t bytes, const char *what) {
    bytes_ = std::max<uint64_t>(bytes, 256);
    CUresult result = driver.memAlloc(&pointer, bytes_);
    if (result != CUDA_SUCCESS)
      return createStringError(
          std::make_error_code(std::errc::not_enough_memory),
          formatv("v4 attention: allocating {0} ({1} bytes) failed: {2}", what,
                  bytes_, driver.describe(result)));
    // Zeroed once, so that nothing the layer owns is ever read
    // uninitialized (a slot past what a kernel wrote is 0, not garbage).
    result = driver.memsetD8(pointer, 0, bytes_);
    if (result != CUDA_SUCCESS)
      return createStringError(
          std::make_error_code(std::errc::io_error),
          formatv("v4 attention: zeroing {0} ({1} bytes) failed: {2}", what,
                  bytes_, driver.describe(result)));
    return Error::success();
  }

  void *get() const { return reinterpret_cast<void *>(pointer); }
  template <typename T> T *as() const { return static_cast<T *>(get()); }
  uint64_t bytes() const { return bytes_; }

private:
  CUdeviceptr pointer = 0;
  uint64_t bytes_ = 0;
};

/// Copies `rows` rows of `rowBytes` between pitched device buffers on
/// `stream` (stream-ordered: capturable).
Error copyRows(CudaDriver &driver, void *dst, uint64_t dstPitch,
               const void *src, uint64_t srcPitch, uint64_t rowBytes,
               uint64_t rows, void *stream) {
  if (rows == 0 || rowBytes == 0)
    return Error::success();
  CUDA_MEMCPY2D copy = {};
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = reinterpret_cast<CUdeviceptr>(src);
  copy.srcPitch = srcPitch;
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = reinterpret_cast<CUdeviceptr>(dst);
  copy.dstPitch = dstPitch;
  copy.WidthInBytes = rowBytes;
  copy.Height = rows;
  CUresult result = driver.memcpy2DAsync(&copy, static_cast<CUstream>(stream));
  if (result != CUDA_SUCCESS)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("v4 attention: cuMemcpy2DAsync of {0} rows of {1} bytes "
                "failed: {2}",
                rows, rowBytes, driver.describe(result)));
  return Error::success();
}

char *offsetBytes(const void *base, uint64_t bytes) {
  return static_cast<char *>(const_cast<void *>(base)) + bytes;
}

/// The CSA indexer's keys a prefill of `seq` tokens (from position 0) can
/// see: the entries its prompt completes (token i sees (i + 1) / 4 of them),
/// at least one column (the flat indexer's least n).
int64_t prefillIndexKeys(int64_t seq) { return std::max<int64_t>(seq / 4, 1); }

} // namespace

/// The side streams of a forward: the kv, compressor and indexer branches
/// run beside the q branch on the caller's stream, forked from it and
/// joined back before the index rows (events record the fork, q_lora's
/// readiness for the indexer's q, and each branch's end). Created once with
/// the layer; a forward only records and waits, which a CUDA graph
/// captures as parallel branches.
struct SideStreams {
  static constexpr int kLanes = 4;
  /// The kv branch, the compressor's, the indexer's q and scores, the
  /// indexer's keys (its compressor and fp8 conversion).
  enum Lane { KvLane = 0, CompressLane = 1, IndexLane = 2, IndexKeysLane = 3 };
  CudaDriver *driver = nullptr;
  CUstream lanes[kLanes] = {};
  CUevent fork = nullptr, qrReady = nullptr, keysReady = nullptr,
          done[kLanes] = {};
  /// Decode: the indexer's scores are computed (wq_b waits for them, so
  /// that it streams beside the top-k rather than ahead of the scores).
  CUevent scored = nullptr;
  /// The indexer's head weights and windows (x and the positions only) are
  /// computed, on the keys' lane.
  CUevent weighted = nullptr;
  /// Decode's L2 prefetches of the weights (Attention::setL2Prefetch): a
  /// lane of their own, joined at the step's end; qProjected marks wq_b's
  /// launch on the caller's stream.
  CUstream prefetch = nullptr;
  CUevent qProjected = nullptr, prefetched = nullptr;
  /// The positions' advance: nothing after attention reads them, so it
  /// runs beside the output projections (attended marks attention's
  /// launch), joined at the forward's end.
  CUstream advance = nullptr;
  CUevent attended = nullptr, advanced = nullptr;

  SideStreams() = default;
  SideStreams(const SideStreams &) = delete;
  SideStreams &operator=(const SideStreams &) = delete;
  ~SideStreams() {
    if (!driver || !CudaDriver::getIfLoaded())
      return;
    for (CUstream lane : lanes)
      if (lane)
        (void)driver->streamDestroy(lane);
    for (CUstream tail : {prefetch, advance})
      if (tail)
        (void)driver->streamDestroy(tail);
    for (CUevent event :
         {fork, qrReady, keysReady, done[0], done[1], done[2], done[3],
          qProjected, prefetched, attended, advanced, scored, weighted})
      if (event)
        (void)driver->eventDestroy(event);
  }

  Error check(CUresult result, const char *call) const {
    if (result == CUDA_SUCCESS)
      return Error::success();
    return createStringError(inconvertibleErrorCode(),
                             formatv("v4 attention: {0} failed: {1}", call,
                                     driver->describe(result)));
  }

  Error create(CudaDriver &cuda) {
    driver = &cuda;
    for (CUstream &lane : lanes)
      if (Error error = check(cuda.streamCreate(&lane, CU_STREAM_NON_BLOCKING),
                              "cuStreamCreate"))
        return error;
    for (CUstream *tail : {&prefetch, &advance})
      if (Error error = check(cuda.streamCreate(tail, CU_STREAM_NON_BLOCKING),
                              "cuStreamCreate"))
        return error;
    for (CUevent *event :
         {&fork, &qrReady, &keysReady, &done[0], &done[1], &done[2], &done[3],
          &qProjected, &prefetched, &attended, &advanced, &scored, &weighted})
      if (Error error = check(cuda.eventCreate(event, CU_EVENT_DISABLE_TIMING),
                              "cuEventCreate"))
        return error;
    return Error::success();
  }

  void *lane(Lane which) const { return lanes[which]; }

  /// The lanes `used` start after what `stream` has queued so far.
  Error forkFrom(void *stream, ArrayRef<Lane> used) {
    if (Error error =
            check(driver->eventRecord(fork, static_cast<CUstream>(stream)),
                  "cuEventRecord"))
      return error;
    for (Lane which : used)
      if (Error error = check(driver->streamWaitEvent(lanes[which], fork, 0),
                              "cuStreamWaitEvent"))
        return error;
    return Error::success();
  }

  /// `event` marks what `stream` has queued so far.
  Error record(CUevent event, void *stream) {
    return check(driver->eventRecord(event, static_cast<CUstream>(stream)),
                 "cuEventRecord");
  }

  /// What `waiter` queues next runs after the last record of `event`.
  Error wait(void *waiter, CUevent event) {
    return check(
        driver->streamWaitEvent(static_cast<CUstream>(waiter), event, 0),
        "cuStreamWaitEvent");
  }

  /// `stream` continues after the lanes `used`.
  /// Every lane is tried, also after one failed: a lane left unjoined
  /// fails a capture and races with the next forward.
  Error joinInto(void *stream, ArrayRef<Lane> used) {
    Error failed = Error::success();
    for (Lane which : used) {
      Error error = record(done[which], lanes[which]);
      if (!error)
        error = wait(stream, done[which]);
      failed = joinErrors(std::move(failed), std::move(error));
    }
    return failed;
  }
};

struct Attention::Buffers {
  CudaDriver *driver = nullptr;
  SideStreams streams;
  DeviceBuffer cos, sin, ones;
  /// Each sequence's decode position (int32, device memory: every decode
  /// kernel up to attention reads it and the step advances it after them,
  /// so that a captured decode step replays at the next position), and
  /// zeros (the
  /// base position of a prefill).
  DeviceBuffer positions, zeros;
  DeviceBuffer kvCache, stateKv, stateScore;
  // The workspace, one buffer per intermediate (sized for the largest call).
  DeviceBuffer qr, q, kv, kvAll, compressKv, compressScore, indices, o, low,
      attnWorkspace;
  /// f32 partial sums of the projections split over k (decode): one per
  /// stream (the caller's, then the side lanes), as branches run at once.
  DeviceBuffer splitK[1 + SideStreams::kLanes];
  // The CSA indexer (ratio 4): its compressed keys (bf16 after Hadamard +
  // fp4, and as fp8 codes with power-of-two row scales), its compressor's
  // state and projections, its q, weights, windows and selection.
  DeviceBuffer indexKeys, indexKeys8, indexKeyScale, indexStateKv,
      indexStateScore, indexKv, indexScore, indexQ, indexQ8, indexQScale,
      indexWeights, indexWeights32, indexStarts, indexEnds, selected,
      indexerWorkspace;
  int64_t compressedCapacity = 0; ///< maxSeq / ratio (0: window only)
  /// Rows per sequence of the indexer's keys: the capacity rounded up to 4,
  /// so that each sequence's key scales start 16-byte aligned.
  int64_t indexKeyStride = 0;
  int64_t compressWidth = 0; ///< the compressor's row width
  int64_t l2Bytes = 0;       ///< the device's L2 cache
};

Attention::Attention(const Config &config, const Weights &weights,
                     int64_t batch, int64_t maxSeq, int64_t maxPrefillTokens)
    : config_(config), weights_(weights), batch_(batch), maxSeq_(maxSeq),
      maxPrefillTokens_(maxPrefillTokens),
      buffers_(std::make_unique<Buffers>()) {}

Error Attention::setLength(int64_t length, void *stream) {
  if (length < 1 || length > maxSeq_)
    return argumentError(formatv(
        "v4_attention_set_length: length = {0} must lie in [1, max_seq = {1}]",
        length, maxSeq_));
  if (Error error = ops::v4Advance(buffers_->positions.as<int32_t>(), batch_,
                                   /*set=*/true, int32_t(length), stream))
    return error;
  length_ = length;
  return Error::success();
}

Attention::~Attention() = default;

int64_t Attention::indexColumns() const {
  // reference.Attention.compressed_slots: CSA sees the indexer's top
  // index_topk entries, HCA every entry it may hold.
  return kWindow + (config_.compressRatio == 4 ? config_.indexTopk
                                               : buffers_->compressedCapacity);
}

const void *Attention::kvCache() const { return buffers_->kvCache.get(); }

Attention::IndexKeyCache Attention::indexKeyCache() const {
  const Buffers &b = *buffers_;
  if (config_.compressRatio != 4)
    return {};
  return {b.indexKeys8.get(), b.indexKeyScale.as<float>(), b.indexKeyStride};
}

const int32_t *Attention::lastIndices() const {
  return buffers_->indices.as<int32_t>();
}

Expected<std::unique_ptr<Attention>>
Attention::create(const Config &config, const Weights &weights, int64_t batch,
                  int64_t maxSeq, int64_t maxPrefillTokens) {
  const char *op = "v4_attention_create";
  const Config &c = config;
  if (c.compressRatio != 0 && c.compressRatio != 128 && c.compressRatio != 4)
    return argumentError(
        formatv("{0}: compress_ratio = {1}; supported: 0, 4 (CSA), 128 (HCA)",
                op, c.compressRatio));
  // Sparse attention takes at most 4096 indices a token: the window's
  // and the selected compressed entries.
  constexpr int64_t kMaxIndexTopk = 4096 - kWindow;
  if (c.compressRatio == 4 && (c.indexHeads != 64 || c.indexTopk < 1 ||
                               c.indexTopk > kMaxIndexTopk || maxSeq < 4))
    return argumentError(
        formatv("{0}: the CSA indexer needs index_heads = 64 (got {1}), 1 <= "
                "index_topk <= {4} (got {2}; with the {5}-token window, sparse "
                "attention's 4096 indices a token) and max_seq >= 4 (got {3})",
                op, c.indexHeads, c.indexTopk, maxSeq, kMaxIndexTopk, kWindow));
  // (Each bound before the product, which must not wrap.)
  if (batch < 1 || maxSeq < 1 || batch > INT32_MAX || maxSeq > INT32_MAX ||
      batch * maxSeq > INT32_MAX)
    return argumentError(formatv(
        "{0}: batch = {1}, max_seq = {2}: need batch, max_seq >= 1 and batch "
        "* max_seq <= {3}",
        op, batch, maxSeq, INT32_MAX));
  if (c.heads < 1 || c.heads > 128 || c.oGroups < 1 || c.heads % c.oGroups)
    return argumentError(
        formatv("{0}: heads = {1} (1 to 128) must split into o_groups = {2}",
                op, c.heads, c.oGroups));
  // Bounded so that no buffer size below wraps (tokens < 2^31, heads <=
  // 128: each product stays below 2^64).
  constexpr int64_t kMaxWidth = 65536;
  if (c.dim % 64 || c.dim < 64 || c.qLora % 128 || c.qLora < 128 ||
      c.oLora % 256 || c.oLora < 256 || c.dim > kMaxWidth ||
      c.qLora > kMaxWidth || c.oLora > kMaxWidth)
    return argumentError(formatv(
        "{0}: dim = {1} must be a positive multiple of 64, q_lora = {2} of "
        "128 (a norm dim), o_lora = {3} of 256 (the grouped projection's "
        "tile), each at most {4}",
        op, c.dim, c.qLora, c.oLora, kMaxWidth));
  if (!(c.eps >= 0) || !std::isfinite(c.eps))
    return argumentError(
        formatv("{0}: eps = {1} must be finite and >= 0", op, c.eps));
  // What the forwards' kernels take, checked once here: a layer that is
  // created runs (a forward refused halfway would leave its caches and
  // positions ahead of its length).
  if (!ops::isSupportedNormDim(c.qLora))
    return argumentError(
        formatv("{0}: q_lora = {1}; q's RMSNorm takes 128, 256, 512, 1024, "
                "2048 or 4096",
                op, c.qLora));
  struct Projection {
    const char *name;
    int64_t k;
  } projections[] = {
      {"wq_a, wkv and the compressors (k = dim)", c.dim},
      {"wq_b (k = q_lora)", c.qLora},
      {"wo_a (k = heads / o_groups * 512)", c.heads / c.oGroups * kHeadDim},
      {"wo_b (k = o_groups * o_lora)", c.oGroups * c.oLora}};
  for (const Projection &projection : projections)
    if (projection.k > ops::kLinearMaxK)
      return argumentError(formatv("{0}: {1} reads rows of {2} elements; the "
                                   "projections take at most {3}",
                                   op, projection.name, projection.k,
                                   ops::kLinearMaxK));
  // An HCA token sees every compressed entry: the window's indices and
  // max_seq / 128 more, at most sparse attention's 4096.
  if (c.compressRatio == 128 &&
      kWindow + maxSeq / 128 > ops::kMaxSparseAttnTopk)
    return argumentError(formatv(
        "{0}: max_seq = {1}: an HCA layer's tokens see the {2}-token window "
        "and up to max_seq / 128 = {3} compressed entries, more than sparse "
        "attention's {4} indices (max_seq <= {5})",
        op, maxSeq, kWindow, maxSeq / 128, ops::kMaxSparseAttnTopk,
        (ops::kMaxSparseAttnTopk - kWindow) * 128 + 127));
  // A prefill moves each sequence's kv rows with 2D copies whose pitch is a
  // sequence's rows (the prompt's, or the prompt's and its compressed
  // entries', of 1 KiB each); the driver refuses pitches from 2^31 bytes.
  int64_t sequenceRows =
      maxSeq + (c.compressRatio ? maxSeq / c.compressRatio : 0);
  if (sequenceRows > INT32_MAX / (kHeadDim * 2))
    return argumentError(formatv(
        "{0}: max_seq = {1}: a sequence's {2} kv rows of {3} bytes exceed the "
        "2D copies' 2^31-byte pitch",
        op, maxSeq, sequenceRows, kHeadDim * 2));
  if (c.compressRatio == 4 && batch > ops::kMaxDecodeQueries)
    return argumentError(
        formatv("{0}: batch = {1}; the CSA indexer's decode scores at most "
                "{2} sequences",
                op, batch, ops::kMaxDecodeQueries));
  // The RoPE tables' base (the compressed positions' when compressing).
  float ropeTheta = c.compressRatio ? c.compressRopeTheta : c.ropeTheta;
  if (!(ropeTheta > 0) || !std::isfinite(ropeTheta))
    return argumentError(formatv(
        "{0}: {1} = {2} must be finite and > 0", op,
        c.compressRatio ? "compress_rope_theta" : "rope_theta", ropeTheta));
  // What the kernels that read them need: the projections (linear) and
  // the RMSNorms read 16-byte pieces; the compressors' positional terms
  // and the sink are read element by element.
  struct Named {
    const char *name;
    const void *pointer;
    unsigned alignment;
  };
  std::vector<Named> needed = {
      {"wq_a", weights.wqA, 16},       {"wq_b", weights.wqB, 16},
      {"wkv", weights.wkv, 16},        {"wo_a", weights.woA, 16},
      {"wo_b", weights.woB, 16},       {"q_norm", weights.qNorm, 16},
      {"kv_norm", weights.kvNorm, 16}, {"attn_sink", weights.attnSink, 4}};
  if (c.compressRatio)
    needed.insert(needed.end(), {{"c_wkv", weights.cWkv, 16},
                                 {"c_wgate", weights.cWgate, 16},
                                 {"c_ape", weights.cApe, 4},
                                 {"c_norm", weights.cNorm, 16}});
  if (c.compressRatio == 4)
    needed.insert(needed.end(), {{"i_wq", weights.iWq, 16},
                                 {"i_weights", weights.iWeights, 16},
                                 {"i_wkv", weights.iWkv, 16},
                                 {"i_wgate", weights.iWgate, 16},
                                 {"i_ape", weights.iApe, 4},
                                 {"i_norm", weights.iNorm, 16}});
  for (const Named &weight : needed) {
    if (!weight.pointer)
      return argumentError(
          formatv("{0}: weight {1} must not be NULL", op, weight.name));
    if (reinterpret_cast<uintptr_t>(weight.pointer) % weight.alignment)
      return argumentError(formatv("{0}: weight {1} ({2}) must be {3}-byte "
                                   "aligned",
                                   op, weight.name, weight.pointer,
                                   weight.alignment));
  }

  Expected<CudaDriver &> driverOr = CudaDriver::get();
  if (!driverOr)
    return driverOr.takeError();
  CudaDriver &driver = *driverOr;
  if (Expected<CUcontext> context = driver.ensureContext(); !context)
    return context.takeError();
  // The weights are device memory, checked once: the forwards' launches
  // skip the per-launch pointer queries (runtime::TrustedPointersScope).
  std::vector<std::pair<const char *, const void *>> weightPointers;
  for (const Named &weight : needed)
    weightPointers.push_back({weight.name, weight.pointer});
  if (Error error = runtime::checkDevicePointers(op, weightPointers))
    return std::move(error);

  if (maxPrefillTokens < 0)
    return argumentError(formatv("{0}: max_prefill_tokens = {1} is negative",
                                 op, maxPrefillTokens));
  // At least one token per sequence (decode's), at most every position.
  int64_t prefillTokens =
      maxPrefillTokens == 0
          ? batch * maxSeq
          : std::clamp<int64_t>(maxPrefillTokens, batch, batch * maxSeq);
  std::unique_ptr<Attention> layer(
      new Attention(config, weights, batch, maxSeq, prefillTokens));
  Buffers &b = *layer->buffers_;
  b.driver = &driver;
  if (Error error = b.streams.create(driver))
    return std::move(error);
  Expected<CUdevice> device = driver.getCurrentDevice();
  if (!device)
    return device.takeError();
  int l2Bytes = 0;
  if (Error error = b.streams.check(
          driver.deviceGetAttribute(&l2Bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
                                    *device),
          "cuDeviceGetAttribute"))
    return std::move(error);
  b.l2Bytes = l2Bytes;
  b.compressedCapacity = c.compressRatio ? maxSeq / c.compressRatio : 0;
  b.compressWidth = (c.compressRatio == 4 ? 2 : 1) * kHeadDim;
  int64_t tokens = prefillTokens;
  int64_t columns = layer->indexColumns();
  // Sparse attention splits the indices of few tokens over several blocks
  // through a workspace: the largest need over every prompt length (short
  // prompts split, long ones do not) and decode (one token).
  uint64_t attnBytes = 0;
  for (int64_t seq = 1; seq <= std::min<int64_t>(tokens / batch, 4096); ++seq) {
    uint64_t bytes = 0;
    if (Error error =
            ops::sparseAttnWorkspaceSize(batch, seq, c.heads, columns, &bytes))
      return std::move(error);
    attnBytes = std::max(attnBytes, bytes);
  }
  // The projections of a decode step that split over k (ops::linearSplits):
  // the largest partial sums among them.
  uint64_t splitBytes = 0;
  {
    int64_t width = b.compressWidth;
    int64_t shapes[][2] = {
        {c.qLora, c.dim},       {c.heads * kHeadDim, c.qLora},
        {kHeadDim, c.dim},      {width, c.dim},
        {2 * kIndexDim, c.dim}, {c.indexHeads * kIndexDim, c.qLora},
        {c.indexHeads, c.dim},  {c.dim, c.oGroups * c.oLora}};
    for (auto [n, k] : shapes) {
      if (n <= 0)
        continue;
      Expected<int64_t> splits = ops::linearSplits(batch, n, k, 1);
      if (!splits)
        return splits.takeError();
      if (*splits > 1)
        splitBytes = std::max(splitBytes, uint64_t(*splits) * batch * n * 4);
    }
  }
  struct Piece {
    DeviceBuffer *buffer;
    uint64_t bytes;
    const char *what;
  };
  uint64_t bf16 = 2;
  Piece pieces[] = {
      {&b.cos, uint64_t(maxSeq) * 32 * 4, "the RoPE cos table"},
      {&b.sin, uint64_t(maxSeq) * 32 * 4, "the RoPE sin table"},
      {&b.ones, kHeadDim * 4, "the q head norm's weight"},
      {&b.positions, uint64_t(batch) * 4, "the decode positions"},
      {&b.zeros, uint64_t(batch) * 4, "the prefill positions"},
      {&b.kvCache,
       uint64_t(batch) * (kWindow + b.compressedCapacity) * kHeadDim * bf16,
       "the kv cache"},
      {&b.stateKv, uint64_t(batch) * 2 * c.compressRatio * b.compressWidth * 4,
       "the compressor state"},
      {&b.stateScore,
       uint64_t(batch) * 2 * c.compressRatio * b.compressWidth * 4,
       "the compressor state"},
      {&b.qr, uint64_t(tokens) * c.qLora * bf16, "q_lora activations"},
      {&b.q, uint64_t(tokens) * c.heads * kHeadDim * bf16, "q"},
      {&b.kv, uint64_t(tokens) * kHeadDim * bf16, "kv"},
      {&b.kvAll,
       uint64_t(tokens + batch * b.compressedCapacity) * kHeadDim * bf16,
       "the prefill kv"},
      {&b.compressKv,
       c.compressRatio ? uint64_t(tokens) * b.compressWidth * bf16 : 0,
       "compressor kv"},
      {&b.compressScore,
       c.compressRatio ? uint64_t(tokens) * b.compressWidth * bf16 : 0,
       "compressor scores"},
      {&b.indices, uint64_t(tokens) * columns * 4, "index rows"},
      {&b.o, uint64_t(tokens) * c.heads * kHeadDim * bf16, "attention output"},
      {&b.low, uint64_t(tokens) * c.oGroups * c.oLora * bf16,
       "o_lora activations"},
      {&b.attnWorkspace, attnBytes, "the sparse attention workspace"},
      {&b.splitK[0], splitBytes, "the split-k projections' partial sums"},
      {&b.splitK[1], splitBytes, "the split-k projections' partial sums"},
      {&b.splitK[2], splitBytes, "the split-k projections' partial sums"},
      {&b.splitK[3], splitBytes, "the split-k projections' partial sums"},
      {&b.splitK[4], splitBytes, "the split-k projections' partial sums"}};
  for (Piece &piece : pieces)
    if (Error error = piece.buffer->allocate(driver, piece.bytes, piece.what))
      return std::move(error);
  if (c.compressRatio == 4) {
    int64_t capacity = b.compressedCapacity;
    b.indexKeyStride = (capacity + 3) / 4 * 4;
    int64_t keyRows = batch * b.indexKeyStride;
    int64_t headRows = tokens * c.indexHeads;
    // The indexer's logits: prefill runs one sequence at a time ([seq,
    // seq / 4]: a prompt from position 0 has completed seq / 4 entries, so
    // no token sees more); decode all sequences at once, each over its own
    // keys ([batch, stride]).
    indexer::IndexerShape prefillShape{tokens / batch,
                                       prefillIndexKeys(tokens / batch),
                                       c.indexHeads,
                                       kIndexDim,
                                       1,
                                       0,
                                       c.indexTopk};
    Expected<uint64_t> prefillBytes =
        indexer::flatIndexerWorkspaceSize(prefillShape);
    if (!prefillBytes)
      return prefillBytes.takeError();
    uint64_t decodeBytes = uint64_t(keyRows) * 4;
    Piece indexPieces[] = {
        {&b.indexKeys, uint64_t(keyRows) * kIndexDim * bf16, "indexer keys"},
        {&b.indexKeys8, uint64_t(keyRows) * kIndexDim, "indexer fp8 keys"},
        {&b.indexKeyScale, uint64_t(keyRows) * 4, "indexer key scales"},
        {&b.indexStateKv, uint64_t(batch) * 8 * 2 * kIndexDim * 4,
         "the indexer compressor state"},
        {&b.indexStateScore, uint64_t(batch) * 8 * 2 * kIndexDim * 4,
         "the indexer compressor state"},
        {&b.indexKv, uint64_t(tokens) * 2 * kIndexDim * bf16,
         "indexer compressor kv"},
        {&b.indexScore, uint64_t(tokens) * 2 * kIndexDim * bf16,
         "indexer compressor scores"},
        {&b.indexQ, uint64_t(headRows) * kIndexDim * bf16, "indexer q"},
        {&b.indexQ8, uint64_t(headRows) * kIndexDim, "indexer fp8 q"},
        {&b.indexQScale, uint64_t(headRows) * 4, "indexer q scales"},
        {&b.indexWeights, uint64_t(headRows) * bf16, "indexer weights"},
        {&b.indexWeights32, uint64_t(headRows) * 4, "indexer weights"},
        {&b.indexStarts, uint64_t(tokens) * 4, "indexer windows"},
        {&b.indexEnds, uint64_t(tokens) * 4, "indexer windows"},
        {&b.selected, uint64_t(tokens) * c.indexTopk * 4,
         "the indexer's selection"},
        {&b.indexerWorkspace, std::max(*prefillBytes, decodeBytes),
         "the indexer's logits"}};
    for (Piece &piece : indexPieces)
      if (Error error = piece.buffer->allocate(driver, piece.bytes, piece.what))
        return std::move(error);
  }
  // RoPE tables as the reference computes them: angles in double, then
  // cos / sin rounded to f32.
  double theta = c.compressRatio ? c.compressRopeTheta : c.ropeTheta;
  std::vector<float> cosTable(maxSeq * 32), sinTable(maxSeq * 32);
  for (int64_t p = 0; p < maxSeq; ++p)
    for (int64_t i = 0; i < 32; ++i) {
      double inverse = std::pow(theta, -double(2 * i) / kRopeDim);
      double angle = double(p) * inverse;
      cosTable[p * 32 + i] = static_cast<float>(std::cos(angle));
      sinTable[p * 32 + i] = static_cast<float>(std::sin(angle));
    }
  std::vector<float> ones(kHeadDim, 1.0f);
  auto upload = [&](DeviceBuffer &buffer,
                    const std::vector<float> &host) -> Error {
    CUresult result =
        driver.memcpyHtoD(reinterpret_cast<CUdeviceptr>(buffer.get()),
                          host.data(), host.size() * sizeof(float));
    if (result != CUDA_SUCCESS)
      return createStringError(inconvertibleErrorCode(),
                               formatv("v4 attention: uploading a table "
                                       "failed: {0}",
                                       driver.describe(result)));
    return Error::success();
  };
  if (Error error = upload(b.cos, cosTable))
    return std::move(error);
  if (Error error = upload(b.sin, sinTable))
    return std::move(error);
  if (Error error = upload(b.ones, ones))
    return std::move(error);
  // Zero bits are zero integers: the prefill base positions and the decode
  // positions before a prefill.
  std::vector<float> zeroWords(batch, 0.0f);
  if (Error error = upload(b.zeros, zeroWords))
    return std::move(error);
  if (Error error = upload(b.positions, zeroWords))
    return std::move(error);
  return layer;
}

Error Attention::prefill(const void *x, int64_t seq, void *out, void *stream) {
  if (seq < 1 || seq > maxSeq_ || batch_ * seq > maxPrefillTokens_)
    return argumentError(formatv(
        "v4_attention_prefill: seq = {0} must lie in [1, max_seq = {1}] with "
        "batch * seq <= max_prefill_tokens = {2} (batch {3})",
        seq, maxSeq_, maxPrefillTokens_, batch_));
  return forward(x, seq, out, /*decode=*/false, stream);
}

Error Attention::decode(const void *x, void *out, void *stream) {
  if (length_ < 1)
    return argumentError(
        "v4_attention_decode: no prefill yet (decode continues a prompt)");
  if (length_ >= maxSeq_)
    return argumentError(formatv(
        "v4_attention_decode: the sequences hold max_seq = {0} tokens already",
        maxSeq_));
  return forward(x, 1, out, /*decode=*/true, stream);
}

Error Attention::forward(const void *x, int64_t seq, void *out, bool decode,
                         void *stream) {
  const char *op = decode ? "v4_attention_decode" : "v4_attention_prefill";
  if (!x || !out)
    return argumentError(
        formatv("{0}: {1} must not be NULL", op, !x ? "x" : "out"));
  // The projections read x and write out in 16-byte pieces.
  for (auto [name, pointer] :
       {std::pair<const char *, const void *>{"x", x},
        std::pair<const char *, const void *>{"out", out}})
    if (reinterpret_cast<uintptr_t>(pointer) % 16)
      return argumentError(
          formatv("{0}: {1} ({2}) must be 16-byte aligned", op, name, pointer));
  // x and out are checked here; everything else the launches read is the
  // layer's own memory or the weights checked at creation, so the launches
  // skip the driver's pointer queries (~140 a decode step).
  if (Error error = runtime::checkDevicePointers(op, {{"x", x}, {"out", out}}))
    return error;
  runtime::TrustedPointersScope trustedPointers;
  // Its ~33 launches ask the driver for the context once.
  runtime::CurrentContextScope currentContext;
  const Config &c = config_;
  const Weights &w = weights_;
  Buffers &b = *buffers_;
  CudaDriver &driver = *b.driver;
  int64_t tokens = batch_ * seq;
  int64_t start = decode ? length_ : 0;
  int64_t ratio = c.compressRatio;
  int64_t capacity = b.compressedCapacity;
  int64_t cacheRows = kWindow + capacity;
  uint64_t rowBytes = kHeadDim * 2;
  float eps = c.eps;
  const float *cos = b.cos.as<float>(), *sin = b.sin.as<float>();
  // Positions of the tokens: base[b] + t % seq.
  int32_t *positions = b.positions.as<int32_t>();
  const int32_t *base = decode ? positions : b.zeros.as<int32_t>();

  // The branches: q on the caller's stream; kv, the compressor and the
  // indexer on side streams, joined back before the index rows.
  SideStreams &streams = b.streams;
  SmallVector<SideStreams::Lane, 4> lanes = {SideStreams::KvLane};
  if (ratio)
    lanes.push_back(SideStreams::CompressLane);
  if (ratio == 4) {
    lanes.push_back(SideStreams::IndexLane);
    lanes.push_back(SideStreams::IndexKeysLane);
  }
  // A step captured into a CUDA graph runs nothing now: the device
  // positions move when it is replayed, and the caller brings the host
  // count along then (set_length), so a capture leaves the count alone.
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  bool capturing = driver.streamIsCapturing &&
                   driver.streamIsCapturing(static_cast<CUstream>(stream),
                                            &capture) == CUDA_SUCCESS &&
                   capture != CU_STREAM_CAPTURE_STATUS_NONE;
  if (Error error = streams.forkFrom(stream, lanes))
    return error;
  // A prefill replaces the prompt from its first launch on: if it fails
  // partway, the layer has none (decode refuses until a prefill succeeds)
  // rather than the previous prompt with caches partly overwritten.
  if (!decode && !capturing)
    length_ = 0;
  // Once forked, the branches are joined on every exit, errors included:
  // an unjoined branch fails a CUDA graph capture, and outside one the
  // next forward's q branch would race with it.
  struct JoinOnExit {
    SideStreams &streams;
    void *stream;
    ArrayRef<SideStreams::Lane> lanes;
    bool joined = false;
    ~JoinOnExit() {
      if (!joined)
        consumeError(streams.joinInto(stream, lanes));
    }
  } joinOnExit{streams, stream, lanes};
  void *kvStream = streams.lane(SideStreams::KvLane);
  void *compressStream = streams.lane(SideStreams::CompressLane);
  void *indexStream = streams.lane(SideStreams::IndexLane);

  // Opt-in (setL2Prefetch): a decode step reads each weight once, and the q
  // branch's chain of small launches leaves the memory system mostly idle;
  // a lane of its own can warm L2 with the head of the next big
  // projection's weights meanwhile, wq_b's during wq_a and wo_a's from wq_b
  // to wo_a. Measured slower on the H200 (docs/performance.md), so off.
  uint64_t prefetchBytes = decode ? l2PrefetchBytes() : 0;
  // A lane that runs to the forward's end (the prefetches, the positions'
  // advance): `stream` waits for it there, and on every exit once used.
  struct TailLane {
    SideStreams &streams;
    void *stream;
    CUstream lane;
    CUevent done;
    bool pending = false;
    Error join() {
      if (Error error = streams.record(done, lane))
        return error;
      if (Error error = streams.wait(stream, done))
        return error;
      pending = false; // (still joined on exit if this failed)
      return Error::success();
    }
    ~TailLane() {
      if (pending)
        consumeError(join());
    }
  } prefetchLane{streams, stream, streams.prefetch, streams.prefetched},
      advanceLane{streams, stream, streams.advance, streams.advanced};
  auto prefetch = [&](const void *weight, uint64_t bytes) -> Error {
    return ops::l2Prefetch(weight, std::min(bytes, prefetchBytes),
                           streams.prefetch);
  };
  if (prefetchBytes) {
    if (Error error = streams.wait(streams.prefetch, streams.fork))
      return error;
    prefetchLane.pending = true;
    if (Error error =
            prefetch(w.wqB, uint64_t(c.heads) * kHeadDim * c.qLora * 2))
      return error;
  }

  // Without the CSA indexer the index rows follow from the positions
  // alone: first on the kv branch, off the critical path.
  if (ratio != 4)
    if (Error error = indexRows(decode, seq, kvStream))
      return error;

  // kv: wkv, kv_norm, fp8 of the first 448 dims, RoPE.
  if (Error error = projectNormed(x, w.wkv, b.kv.get(), tokens, kHeadDim, c.dim,
                                  w.kvNorm, kvStream))
    return error;
  if (Error error = ops::v4Fp8Qdq(b.kv.get(), tokens, kvStream))
    return error;
  if (Error error = ops::v4Rope(b.kv.get(), cos, sin, base, tokens, 1, kHeadDim,
                                seq, maxSeq_, false, kvStream))
    return error;

  // What sparse attention reads: prefill, the prompt's kv then its
  // compressed entries ([batch, seq + entries] rows); decode, the cache.
  int64_t entries = ratio && !decode ? seq / ratio : 0;
  int64_t nkv = decode ? cacheRows : seq + entries;
  void *attnKv = decode ? b.kvCache.get() : b.kvAll.get();
  if (decode) {
    // The token's ring slot (from the device positions).
    if (Error error = ops::v4RingWrite(b.kv.get(), b.kvCache.get(), positions,
                                       batch_, cacheRows, kvStream))
      return error;
  } else {
    if (Error error =
            copyRows(driver, b.kvAll.get(), nkv * rowBytes, b.kv.get(),
                     seq * rowBytes, seq * rowBytes, batch_, kvStream))
      return error;
  }

  if (ratio) {
    int64_t width = b.compressWidth;
    if (Error error = project(x, w.cWkv, b.compressKv.get(), tokens, width,
                              c.dim, 1, compressStream))
      return error;
    if (Error error = project(x, w.cWgate, b.compressScore.get(), tokens, width,
                              c.dim, 1, compressStream))
      return error;
    ops::CompressShape shape;
    shape.batch = batch_;
    shape.dim = kHeadDim;
    shape.ratio = ratio;
    shape.overlap = ratio == 4;
    shape.quantize = 1;
    shape.tablePositions = maxSeq_;
    if (decode) {
      shape.slots = cacheRows;
      shape.firstSlot = kWindow;
      if (Error error = ops::v4CompressDecode(
              b.compressKv.get(), b.compressScore.get(), w.cApe, w.cNorm, cos,
              sin, b.stateKv.as<float>(), b.stateScore.as<float>(),
              b.kvCache.get(), positions, shape, eps, compressStream))
        return error;
    } else {
      shape.slots = nkv;
      shape.firstSlot = seq;
      if (Error error = ops::v4CompressPrefill(
              b.compressKv.get(), b.compressScore.get(), w.cApe, w.cNorm, cos,
              sin, b.stateKv.as<float>(), b.stateScore.as<float>(),
              b.kvAll.get(), b.zeros.as<int32_t>(), shape, seq, eps,
              compressStream))
        return error;
      // The entries also go to the cache's compressed region.
      if (Error error = copyRows(
              driver, offsetBytes(b.kvCache.get(), kWindow * rowBytes),
              cacheRows * rowBytes, offsetBytes(b.kvAll.get(), seq * rowBytes),
              nkv * rowBytes, entries * rowBytes, batch_, compressStream))
        return error;
    }
  }

  if (ratio == 4)
    if (Error error = indexerKeys(x, seq, decode))
      return error;

  // q: wq_a, q_norm, wq_b, the per-head norm, RoPE; issued after the side
  // branches so that their short grids are not queued behind q's (not
  // measurable in isolation: docs/design.md, "Streams").
  if (Error error = projectNormed(x, w.wqA, b.qr.get(), tokens, c.qLora, c.dim,
                                  w.qNorm, stream))
    return error;
  // The indexer's q starts from q_lora. Decode: its chain (q, scores,
  // top-k) is the step's critical path, so it runs on the caller's stream,
  // each launch a programmatic dependent of the one before, and wq_b (only
  // attention needs it) streams beside the top-k on the scoring lane:
  // launched with q_lora, wq_b's blocks took every SM ahead of the chain's
  // (GPU run 63). Prefill: the indexer beside q, wq_b on the caller's.
  bool indexerFirst = ratio == 4 && decode;
  if (ratio == 4) {
    if (Error error = streams.record(streams.qrReady, stream))
      return error;
    if (Error error =
            indexerScores(x, seq, decode, indexerFirst ? stream : indexStream))
      return error;
  }
  void *qStream = indexerFirst ? indexStream : stream;
  if (indexerFirst)
    if (Error error = streams.wait(qStream, streams.scored))
      return error;
  if (Error error = project(b.qr.get(), w.wqB, b.q.get(), tokens,
                            c.heads * kHeadDim, c.qLora, 1, qStream))
    return error;
  if (prefetchBytes) {
    if (Error error = streams.record(streams.qProjected, qStream))
      return error;
    if (Error error = streams.wait(streams.prefetch, streams.qProjected))
      return error;
    if (Error error =
            prefetch(w.woA, uint64_t(c.oLora) * c.heads * kHeadDim * 2))
      return error;
  }
  // q's per-head norm and RoPE happen in the attention kernel (below).
  joinOnExit.joined = true;
  if (Error error = streams.joinInto(stream, lanes))
    return error;

  // Index rows (CSA: from the indexer's selection), sparse attention, the
  // inverse RoPE, wo_a (grouped), wo_b.
  if (ratio == 4)
    if (Error error = indexRows(decode, seq, stream))
      return error;
  // q's per-head RMSNorm and RoPE in the kernel's prologue, the inverse
  // RoPE of the output in its epilogue (in the combine when decode splits
  // the indices): no launch of their own on the critical path.
  ops::LayerRope rope;
  rope.cos = cos;
  rope.sin = sin;
  rope.base = base;
  rope.tablePositions = maxSeq_;
  rope.normalizeQuery = true;
  rope.queryEps = eps;
  if (Error error = ops::sparseAttn(
          b.q.get(), attnKv, w.attnSink, b.indices.as<int32_t>(), b.o.get(),
          nullptr, batch_, seq, c.heads, nkv, indexColumns(),
          1.0f / std::sqrt(float(kHeadDim)), b.attnWorkspace.get(),
          b.attnWorkspace.bytes(), stream, &rope))
    return error;
  // The step's last use of the positions was attention's (prologue and
  // epilogue RoPE): decode advances every position, prefill sets them to
  // the prompt length, beside the output projections.
  if (Error error = streams.record(streams.attended, stream))
    return error;
  if (Error error = streams.wait(streams.advance, streams.attended))
    return error;
  advanceLane.pending = true;
  if (Error error = ops::v4Advance(positions, batch_, /*set=*/!decode,
                                   int32_t(seq), streams.advance))
    return error;
  // From here the positions have moved on: a failure below puts them back,
  // on the lane that moved them (so in order). Decode at length_: a retry
  // rewrites the step's ring, compressed and state slots, which the
  // position indexes. Prefill at 0 (length_ is 0 until it succeeds).
  auto rollBack = [&](Error error) -> Error {
    advanceLane.pending = true; // the advance back is joined on exit too
    return joinErrors(std::move(error),
                      ops::v4Advance(positions, batch_, /*set=*/true,
                                     int32_t(length_), streams.advance));
  };
  int64_t groupWidth = c.heads / c.oGroups * kHeadDim;
  if (Error error = project(b.o.get(), w.woA, b.low.get(), tokens, c.oLora,
                            groupWidth, c.oGroups, stream))
    return rollBack(std::move(error));
  if (Error error = project(b.low.get(), w.woB, out, tokens, c.dim,
                            c.oGroups * c.oLora, 1, stream))
    return rollBack(std::move(error));

  if (!decode) {
    // The ring: token p of the prompt's last 128 at slot p % 128 (two runs
    // when they wrap).
    int64_t first = std::max<int64_t>(0, seq - kWindow);
    int64_t firstSlot = first % kWindow;
    int64_t run = std::min(seq - first, kWindow - firstSlot);
    if (Error error = copyRows(
            driver, offsetBytes(b.kvCache.get(), firstSlot * rowBytes),
            cacheRows * rowBytes, offsetBytes(b.kv.get(), first * rowBytes),
            seq * rowBytes, run * rowBytes, batch_, stream))
      return rollBack(std::move(error));
    if (Error error = copyRows(
            driver, b.kvCache.get(), cacheRows * rowBytes,
            offsetBytes(b.kv.get(), (first + run) * rowBytes), seq * rowBytes,
            (seq - first - run) * rowBytes, batch_, stream))
      return rollBack(std::move(error));
  }
  if (prefetchLane.pending)
    if (Error error = prefetchLane.join())
      return rollBack(std::move(error));
  if (Error error = advanceLane.join())
    return rollBack(std::move(error));
  if (!capturing)
    length_ = start + seq;
  return Error::success();
}

Error Attention::indexRows(bool decode, int64_t seq, void *stream) {
  Buffers &b = *buffers_;
  ops::IndexShape shape;
  shape.tokens = batch_ * seq;
  shape.window = kWindow;
  shape.slots = indexColumns() - kWindow;
  shape.ratio = config_.compressRatio;
  shape.decode = decode;
  shape.csa = shape.ratio == 4;
  return ops::v4Indices(b.indices.as<int32_t>(), b.selected.as<int32_t>(),
                        b.positions.as<int32_t>(), shape, seq, stream);
}

Error Attention::setL2Prefetch(int64_t bytes) {
  if (bytes < -1)
    return argumentError(formatv("v4_attention_set_l2_prefetch: bytes = {0} "
                                 "must be -1 (automatic), 0 (off) or a size",
                                 bytes));
  l2Prefetch_ = bytes;
  return Error::success();
}

uint64_t Attention::l2PrefetchBytes() const {
  if (l2Prefetch_ >= 0)
    return uint64_t(l2Prefetch_);
  // Automatic: most of L2, the rest left to what the step's kernels keep
  // there meanwhile.
  return uint64_t(buffers_->l2Bytes) * kAutoL2PrefetchEighths / 8;
}

/// The split-k workspace of the stream a projection runs on (branches run
/// at once).
static DeviceBuffer &
splitKWorkspace(const SideStreams &streams,
                DeviceBuffer (&splitK)[1 + SideStreams::kLanes], void *stream) {
  for (int lane = 0; lane < SideStreams::kLanes; ++lane)
    if (stream == streams.lanes[lane])
      return splitK[1 + lane];
  return splitK[0];
}

Error Attention::projectNormed(const void *x, const void *w, void *y, int64_t m,
                               int64_t n, int64_t k, const float *normWeight,
                               void *stream) {
  Buffers &b = *buffers_;
  DeviceBuffer &workspace = splitKWorkspace(b.streams, b.splitK, stream);
  Expected<int64_t> planned = ops::linearSplits(m, n, k, 1);
  if (!planned)
    return planned.takeError();
  int64_t splits = *planned;
  // Split over k, the reduction and the norm are one launch.
  if (splits > 1 && uint64_t(splits) * m * n * 4 <= workspace.bytes())
    return ops::linearSplitKRmsnorm(x, w, y, m, n, k, splits,
                                    workspace.as<float>(), workspace.bytes(),
                                    normWeight, config_.eps, stream);
  if (Error error = project(x, w, y, m, n, k, 1, stream))
    return error;
  return ops::v4Rmsnorm(y, normWeight, y, m, n, config_.eps, stream);
}

Error Attention::project(const void *x, const void *w, void *y, int64_t m,
                         int64_t n, int64_t k, int64_t groups, void *stream) {
  Buffers &b = *buffers_;
  DeviceBuffer *workspace = &splitKWorkspace(b.streams, b.splitK, stream);
  Expected<int64_t> planned = ops::linearSplits(m, n, k, groups);
  if (!planned)
    return planned.takeError();
  int64_t splits = *planned;
  uint64_t bytes = uint64_t(splits) * m * groups * n * 4;
  // Whole-k where splitting does not pay (and for prefills of few tokens
  // whose partial sums the decode-sized workspace does not hold).
  if (splits == 1 || bytes > workspace->bytes())
    return ops::linear(x, w, y, m, n, k, groups, stream);
  return ops::linearSplitK(x, w, y, m, n, k, groups, splits,
                           workspace->as<float>(), workspace->bytes(), stream);
}

Error Attention::indexerKeys(const void *x, int64_t seq, bool decode) {
  const Config &c = config_;
  const Weights &w = weights_;
  Buffers &b = *buffers_;
  int64_t tokens = batch_ * seq;
  int64_t stride = b.indexKeyStride;
  float eps = c.eps;
  const float *cos = b.cos.as<float>(), *sin = b.sin.as<float>();
  int32_t *positions = b.positions.as<int32_t>();

  // Two branches meet at the scores: the keys (on their own stream) and
  // the q (indexerScores, which also scores).
  void *keysStream = b.streams.lane(SideStreams::IndexKeysLane);

  // First on this lane, what needs only x and the positions: the head
  // weights (x * i_weights) and the scores' windows, so that the q's chain
  // starts at i_wq as soon as q_lora is there.
  if (Error error = project(x, w.iWeights, b.indexWeights.get(), tokens,
                            c.indexHeads, c.dim, 1, keysStream))
    return error;
  int32_t *starts = b.indexStarts.as<int32_t>();
  int32_t *ends = b.indexEnds.as<int32_t>();
  // Decode: each sequence's window over its own keys at its position;
  // prefill: every sequence has the same windows over its own keys, one
  // sequence's worth, shared by the per-sequence calls (and aligned).
  const int32_t *windowBase = decode ? positions : b.zeros.as<int32_t>();
  if (Error error = ops::v4IndexWindows(starts, ends, windowBase,
                                        decode ? tokens : seq, seq,
                                        /*capacity=*/0, 4, keysStream))
    return error;
  if (Error error = b.streams.record(b.streams.weighted, keysStream))
    return error;

  // Its compressor (ratio 4 with overlap, 128 dims): entries Hadamard + fp4
  // quantized in the kernel, into the key cache [batch, capacity, 128].
  if (Error error = project(x, w.iWkv, b.indexKv.get(), tokens, 2 * kIndexDim,
                            c.dim, 1, keysStream))
    return error;
  if (Error error = project(x, w.iWgate, b.indexScore.get(), tokens,
                            2 * kIndexDim, c.dim, 1, keysStream))
    return error;
  ops::CompressShape shape;
  shape.batch = batch_;
  shape.dim = kIndexDim;
  shape.ratio = 4;
  shape.overlap = true;
  shape.quantize = 2;
  shape.slots = stride;
  shape.firstSlot = 0;
  shape.tablePositions = maxSeq_;
  if (decode) {
    if (Error error = ops::v4CompressDecode(
            b.indexKv.get(), b.indexScore.get(), w.iApe, w.iNorm, cos, sin,
            b.indexStateKv.as<float>(), b.indexStateScore.as<float>(),
            b.indexKeys.get(), positions, shape, eps, keysStream))
      return error;
  } else {
    if (Error error = ops::v4CompressPrefill(
            b.indexKv.get(), b.indexScore.get(), w.iApe, w.iNorm, cos, sin,
            b.indexStateKv.as<float>(), b.indexStateScore.as<float>(),
            b.indexKeys.get(), b.zeros.as<int32_t>(), shape, seq, eps,
            keysStream))
      return error;
  }
  // The new keys in fp8: prefill all, decode the entry a token completed
  // (chosen on the device from its position).
  if (Error error = ops::v4ToFp8(b.indexKeys.get(), b.indexKeys8.get(),
                                 b.indexKeyScale.as<float>(), nullptr, nullptr,
                                 decode ? positions : nullptr, batch_, stride,
                                 0, decode ? 1 : seq / 4, 1.0f, keysStream))
    return error;
  return b.streams.record(b.streams.keysReady, keysStream);
}

Error Attention::indexerScores(const void *x, int64_t seq, bool decode,
                               void *stream) {
  const Config &c = config_;
  const Weights &w = weights_;
  Buffers &b = *buffers_;
  int64_t tokens = batch_ * seq;
  int64_t stride = b.indexKeyStride;
  int64_t heads = c.indexHeads;
  const float *cos = b.cos.as<float>(), *sin = b.sin.as<float>();
  int32_t *positions = b.positions.as<int32_t>();
  const int32_t *base = decode ? positions : b.zeros.as<int32_t>();

  // Its q: qr * i_wq, RoPE on each head's last 64 dims, Hadamard + fp4,
  // fp8 with the row scales folded into the head weights (x * i_weights *
  // index_dim^-1/2 * heads^-1/2; computed on the keys' lane).
  if (Error error = b.streams.wait(stream, b.streams.qrReady))
    return error;
  if (Error error = project(b.qr.get(), w.iWq, b.indexQ.get(), tokens,
                            heads * kIndexDim, c.qLora, 1, stream))
    return error;
  // RoPE, Hadamard + fp4 and fp8 in one launch (the bits of v4Rope,
  // v4HadamardFp4 and v4ToFp8 in turn).
  float factor = 1.0f / std::sqrt(float(kIndexDim) * float(heads));
  if (Error error = b.streams.wait(stream, b.streams.weighted))
    return error;
  if (Error error = ops::v4IndexQuery(
          b.indexQ.get(), cos, sin, base, b.indexWeights.get(), b.indexQ8.get(),
          b.indexQScale.as<float>(), b.indexWeights32.as<float>(), tokens,
          heads, seq, maxSeq_, factor, stream))
    return error;

  // Scores and the exact top index_topk of the visible entries: hisa's flat
  // indexer's MQA logits (fp8) and exact top-k. Decode: every sequence's
  // one query over its own keys (windows relative to the sequence's rows,
  // logits [batch, stride]: a grid of key chunks x sequences); prefill: the
  // flat indexer, one call per sequence.
  int32_t *starts = b.indexStarts.as<int32_t>();
  int32_t *ends = b.indexEnds.as<int32_t>();
  if (decode) {
    if (Error error = b.streams.wait(stream, b.streams.keysReady))
      return error;
    auto *logits = static_cast<float *>(b.indexerWorkspace.get());
    if (Error error = ops::mqaLogitsDecode(
            b.indexQ8.get(), b.indexKeys8.get(), b.indexKeyScale.as<float>(),
            b.indexWeights32.as<float>(), starts, ends, logits, batch_, stride,
            heads, kIndexDim, stream))
      return error;
    if (Error error = b.streams.record(b.streams.scored, stream))
      return error;
    return ops::topk(logits, starts, ends, b.selected.as<int32_t>(), batch_,
                     stride, c.indexTopk, /*relative=*/true, stream);
  }
  indexer::IndexerShape indexShape;
  indexShape.heads = heads;
  indexShape.dim = kIndexDim;
  indexShape.topkTokens = c.indexTopk;
  if (Error error = b.streams.wait(stream, b.streams.keysReady))
    return error;
  indexShape.m = seq;
  indexShape.n = prefillIndexKeys(seq);
  for (int64_t s = 0; s < batch_; ++s) {
    int64_t firstToken = s * seq;
    if (Error error = indexer::flatIndexer(
            offsetBytes(b.indexQ8.get(), firstToken * heads * kIndexDim),
            offsetBytes(b.indexKeys8.get(), s * stride * kIndexDim),
            b.indexKeyScale.as<float>() + s * stride,
            b.indexWeights32.as<float>() + firstToken * heads, starts, ends,
            b.selected.as<int32_t>() + firstToken * c.indexTopk, indexShape,
            b.indexerWorkspace.get(), b.indexerWorkspace.bytes(), stream))
      return error;
  }
  return Error::success();
}

} // namespace hisa::v4
