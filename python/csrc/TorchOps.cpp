//===- TorchOps.cpp - hisa's hot operators as C++ torch kernels -----------===//
//
// CUDA kernels of torch.ops.hisa.{topk, hisa_indexer, flat_indexer,
// sparse_attn} (their
// schemas and fake implementations are defined in python/hisa/_torch_ops.py):
// the argument checks, the output and workspace allocation and the C ABI
// call of an eager call, without a Python frame, a ctypes call or a Python
// torch.empty. On the GPU machine's host those cost more than the launches
// themselves (docs/performance.md, host time).
//
// Argument errors throw c10::ValueError (Python ValueError), failures the
// runtime reports c10::Error (RuntimeError) whose message starts with the C
// function and its status name, as hisa's Python errors do; python/hisa/ops.py
// turns both into hisa's exception classes. The library is built against one
// torch version (its C++ ABI is not stable across versions) and records it
// beside itself; the Python package loads it only into that version.
//
//===----------------------------------------------------------------------===//

#include "hisa/Runtime/hisa_runtime.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/clamp.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/full.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/headeronly/version.h>
#include <torch/library.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

namespace {

constexpr int64_t kInt32Max = INT32_MAX;
/// The kernels' vector accesses (ops.VECTOR_ALIGNMENT).
constexpr int64_t kVectorAlignment = 16;

const char *statusName(int status) {
  switch (status) {
  case HISA_ERROR_INVALID_ARGUMENT:
    return "HISA_ERROR_INVALID_ARGUMENT";
  case HISA_ERROR_COMPILE:
    return "HISA_ERROR_COMPILE";
  case HISA_ERROR_CUDA:
    return "HISA_ERROR_CUDA";
  case HISA_ERROR_NO_DEVICE:
    return "HISA_ERROR_NO_DEVICE";
  default:
    return "status";
  }
}

/// Throws for a nonzero status of C function `function`, in the format of
/// hisa._lib.check: "function failed [STATUS]: message".
void checkStatus(int status, const char *function) {
  if (status == HISA_OK)
    return;
  std::string message = std::string(function) + " failed [" +
                        statusName(status) + "]: " + hisa_last_error();
  if (status == HISA_ERROR_INVALID_ARGUMENT)
    TORCH_CHECK_VALUE(false, message);
  TORCH_CHECK(false, message);
}

/// The runtime launches on the thread's current driver context: make the
/// device's primary context current once per thread and device (torch's
/// guard alone sets the runtime's device, which a thread that never ran a
/// torch CUDA op has not bound to a context yet).
void useDevice(c10::DeviceIndex index) {
  thread_local uint64_t ready = 0;
  uint64_t bit = uint64_t(1) << (index & 63);
  if (ready & bit)
    return;
  checkStatus(hisa_use_device(index), "hisa_use_device");
  // hisa's pointer queries per launch repeat what torch knows of its
  // tensors (as the ctypes binding, python/hisa/ops.py, also turns off).
  hisa_set_device_pointer_checks(0);
  ready |= bit;
}

void *streamOf(c10::DeviceIndex index) {
  return c10::cuda::getCurrentCUDAStream(index).stream();
}

std::string shapeString(c10::IntArrayRef shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

void checkCuda(const char *name, const at::Tensor &t) {
  TORCH_CHECK_VALUE(t.is_cuda(), name,
                    " must be a CUDA tensor, got a tensor on device '",
                    t.device(), "'");
}

void checkCudaOn(const char *name, const at::Tensor &t, const char *refName,
                 const at::Tensor &ref) {
  checkCuda(name, t);
  TORCH_CHECK_VALUE(t.get_device() == ref.get_device(), name,
                    " must be on the same device as ", refName, " (",
                    ref.device(), "), got '", t.device(), "'");
}

void checkDtype(const char *name, const at::Tensor &t, at::ScalarType dtype) {
  TORCH_CHECK_VALUE(t.scalar_type() == dtype, name, " must have dtype ", dtype,
                    ", got ", t.scalar_type());
}

void checkShape(const char *name, const at::Tensor &t,
                std::initializer_list<int64_t> expected, const char *symbolic) {
  TORCH_CHECK_VALUE(t.sizes().equals(expected), name, " must have shape ",
                    symbolic, "=", shapeString(expected), ", got ",
                    shapeString(t.sizes()));
}

void checkContiguous(const char *name, const at::Tensor &t) {
  TORCH_CHECK_VALUE(t.is_contiguous(), name,
                    " must be contiguous (row-major), got strides ",
                    t.strides(), " for shape ", shapeString(t.sizes()),
                    "; call .contiguous() first");
}

void checkAligned(const char *name, const at::Tensor &t) {
  TORCH_CHECK_VALUE(
      t.numel() == 0 ||
          reinterpret_cast<uintptr_t>(t.data_ptr()) % kVectorAlignment == 0,
      name, " data pointer must be ", kVectorAlignment,
      "-byte aligned (the kernel uses ", kVectorAlignment,
      "-byte vector accesses); it is a view at storage offset ",
      t.storage_offset(), ": pass a tensor that starts at an aligned address "
                          "(e.g. .clone())");
}

void checkIndexDtype(const char *name, const at::Tensor &t) {
  TORCH_CHECK_VALUE(t.scalar_type() == at::kInt || t.scalar_type() == at::kLong,
                    name, " must have dtype torch.int32 or torch.int64, got ",
                    t.scalar_type());
}

/// int32 as is; int64 clamped to [lo, hi] and converted on the device, as
/// ops._as_int32 does.
at::Tensor asInt32(const at::Tensor &t, int64_t lo, int64_t hi) {
  if (t.scalar_type() == at::kInt)
    return t;
  return at::clamp(t, lo, hi).to(at::kInt);
}

/// A workspace of `bytes` (at least one) beside `like`.
at::Tensor workspaceOf(uint64_t bytes, const at::Tensor &like) {
  return at::empty({int64_t(std::max<uint64_t>(bytes, 1))},
                   like.options().dtype(at::kByte));
}

/// [rows] int32 window bounds.
at::Tensor checkWindow(const char *name, const at::Tensor &t, int64_t rows,
                       const char *refName, const at::Tensor &ref, int64_t lo,
                       int64_t hi) {
  checkCudaOn(name, t, refName, ref);
  checkIndexDtype(name, t);
  checkShape(name, t, {rows}, "[M]");
  checkContiguous(name, t);
  return asInt32(t, lo, hi);
}

/// The shapes of q [M, H, D] fp8, k [N, D] fp8, k_scale [N] (or [N, 1]) f32
/// and weights [M, H] f32 (ops._check_keys).
struct Keys {
  int64_t m, heads, dim, n;
};

Keys checkKeys(const at::Tensor &q, const at::Tensor &k,
               const at::Tensor &kScale, const at::Tensor &weights) {
  checkCuda("q", q);
  checkCudaOn("k", k, "q", q);
  checkCudaOn("k_scale", kScale, "q", q);
  checkCudaOn("weights", weights, "q", q);
  checkDtype("q", q, at::kFloat8_e4m3fn);
  checkDtype("k", k, at::kFloat8_e4m3fn);
  checkDtype("k_scale", kScale, at::kFloat);
  checkDtype("weights", weights, at::kFloat);
  TORCH_CHECK_VALUE(q.dim() == 3, "q must be 3-D [M, H, D], got ", q.dim(),
                    "-D shape ", shapeString(q.sizes()));
  Keys keys{q.size(0), q.size(1), q.size(2), 0};
  TORCH_CHECK_VALUE(keys.heads == 16 || keys.heads == 32 || keys.heads == 64 ||
                        keys.heads == 128,
                    "q has H=", keys.heads, " heads (shape ",
                    shapeString(q.sizes()),
                    "), which is not supported by the MQA logits kernels "
                    "(supported: H in {16, 32, 64, 128})");
  TORCH_CHECK_VALUE(keys.dim == 64 || keys.dim == 128,
                    "q has head dimension D=", keys.dim, " (shape ",
                    shapeString(q.sizes()),
                    "), which is not supported by the MQA logits kernels "
                    "(supported: D in {64, 128})");
  TORCH_CHECK_VALUE(k.dim() == 2, "k must be 2-D [N, D], got ", k.dim(),
                    "-D shape ", shapeString(k.sizes()));
  keys.n = k.size(0);
  checkShape("k", k, {keys.n, keys.dim}, "[N, D]");
  if (kScale.dim() == 2 && kScale.size(1) == 1)
    checkShape("k_scale", kScale, {keys.n, 1}, "[N, 1]");
  else
    checkShape("k_scale", kScale, {keys.n}, "[N]");
  checkShape("weights", weights, {keys.m, keys.heads}, "[M, H]");
  TORCH_CHECK_VALUE(keys.n <= kInt32Max, "k has ", keys.n,
                    " rows; the windows are int32, so at most ", kInt32Max,
                    " are supported");
  for (auto [name, t] : {std::pair<const char *, const at::Tensor *>{"q", &q},
                         {"k", &k},
                         {"k_scale", &kScale},
                         {"weights", &weights}}) {
    checkContiguous(name, *t);
    checkAligned(name, *t);
  }
  return keys;
}

int64_t positive(const char *name, int64_t value) {
  TORCH_CHECK_VALUE(value >= 1, name, " must be >= 1, got ", value);
  return value;
}

/// Everything hisa_indexer and flat_indexer share: the checks, the device,
/// the int32 windows and the output.
struct IndexerCall {
  Keys keys;
  at::Tensor ks, ke;
  c10::DeviceIndex device;
};

IndexerCall prepareIndexer(const at::Tensor &q, const at::Tensor &k,
                           const at::Tensor &kScale, const at::Tensor &weights,
                           const at::Tensor &cuSeqlenKs,
                           const at::Tensor &cuSeqlenKe) {
  IndexerCall call{checkKeys(q, k, kScale, weights), {}, {}, q.get_device()};
  call.ks = checkWindow("cu_seqlen_ks", cuSeqlenKs, call.keys.m, "q", q, 0,
                        call.keys.n);
  call.ke = checkWindow("cu_seqlen_ke", cuSeqlenKe, call.keys.m, "q", q, 0,
                        call.keys.n);
  return call;
}

at::Tensor hisaIndexer(const at::Tensor &q, const at::Tensor &k,
                       const at::Tensor &kScale, const at::Tensor &weights,
                       const at::Tensor &cuSeqlenKs,
                       const at::Tensor &cuSeqlenKe, int64_t kBlockSize,
                       int64_t blockTopk, int64_t topkTokens) {
  TORCH_CHECK_VALUE(kBlockSize == 64 || kBlockSize == 128 || kBlockSize == 256,
                    "k_block_size=", kBlockSize,
                    " is not supported (supported: 64, 128, 256)");
  positive("block_topk", blockTopk);
  positive("topk_tokens", topkTokens);
  IndexerCall call =
      prepareIndexer(q, k, kScale, weights, cuSeqlenKs, cuSeqlenKe);
  const Keys &s = call.keys;
  c10::cuda::CUDAGuard guard(call.device);
  auto options = q.options().dtype(at::kInt);
  if (s.n == 0)
    return at::full({s.m, topkTokens}, -1, options);
  useDevice(call.device);
  uint64_t bytes = 0;
  // Also checks the sizes against the stages' on-chip limits.
  checkStatus(hisa_hisa_indexer_workspace_size(s.m, s.n, s.heads, s.dim,
                                               kBlockSize, blockTopk,
                                               topkTokens, &bytes),
              "hisa_hisa_indexer_workspace_size");
  at::Tensor out = at::empty({s.m, topkTokens}, options);
  if (s.m == 0)
    return out;
  at::Tensor workspace = workspaceOf(bytes, q);
  checkStatus(
      hisa_hisa_indexer(q.data_ptr(), k.data_ptr(), kScale.data_ptr<float>(),
                        weights.data_ptr<float>(), call.ks.data_ptr<int32_t>(),
                        call.ke.data_ptr<int32_t>(), out.data_ptr<int32_t>(),
                        s.m, s.n, s.heads, s.dim, kBlockSize, blockTopk,
                        topkTokens, workspace.data_ptr(), workspace.numel(),
                        streamOf(call.device)),
      "hisa_hisa_indexer");
  return out;
}

at::Tensor flatIndexer(const at::Tensor &q, const at::Tensor &k,
                       const at::Tensor &kScale, const at::Tensor &weights,
                       const at::Tensor &cuSeqlenKs,
                       const at::Tensor &cuSeqlenKe, int64_t topkTokens) {
  positive("topk_tokens", topkTokens);
  IndexerCall call =
      prepareIndexer(q, k, kScale, weights, cuSeqlenKs, cuSeqlenKe);
  const Keys &s = call.keys;
  c10::cuda::CUDAGuard guard(call.device);
  auto options = q.options().dtype(at::kInt);
  if (s.m == 0 || s.n == 0)
    return at::full({s.m, topkTokens}, -1, options);
  useDevice(call.device);
  uint64_t bytes = 0;
  checkStatus(hisa_flat_indexer_workspace_size(s.m, s.n, s.heads, s.dim,
                                               topkTokens, &bytes),
              "hisa_flat_indexer_workspace_size");
  at::Tensor out = at::empty({s.m, topkTokens}, options);
  at::Tensor workspace = workspaceOf(bytes, q);
  checkStatus(
      hisa_flat_indexer(q.data_ptr(), k.data_ptr(), kScale.data_ptr<float>(),
                        weights.data_ptr<float>(), call.ks.data_ptr<int32_t>(),
                        call.ke.data_ptr<int32_t>(), out.data_ptr<int32_t>(),
                        s.m, s.n, s.heads, s.dim, topkTokens,
                        workspace.data_ptr(), workspace.numel(),
                        streamOf(call.device)),
      "hisa_flat_indexer");
  return out;
}

at::Tensor topk(const at::Tensor &x, int64_t k,
                const std::optional<at::Tensor> &starts,
                const std::optional<at::Tensor> &ends) {
  checkCuda("x", x);
  bool bf16 = x.scalar_type() == at::kBFloat16;
  TORCH_CHECK_VALUE(bf16 || x.scalar_type() == at::kFloat,
                    "x must have dtype torch.float32 or torch.bfloat16, got ",
                    x.scalar_type());
  TORCH_CHECK_VALUE(x.dim() == 2, "x must be 2-D [R, C], got ", x.dim(),
                    "-D shape ", shapeString(x.sizes()));
  int64_t rows = x.size(0), columns = x.size(1);
  checkContiguous("x", x);
  TORCH_CHECK_VALUE(k >= 1 && k <= columns, "k must be in [1, C] = [1, ",
                    columns, "], got ", k);
  TORCH_CHECK_VALUE(columns <= kInt32Max, "x has ", columns,
                    " columns; indices are int32, so at most ", kInt32Max,
                    " are supported");
  TORCH_CHECK_VALUE(starts.has_value() == ends.has_value(),
                    "starts and ends must be given together (or neither)");
  at::Tensor startRows, endRows;
  if (starts.has_value()) {
    // ops.topk's names and messages; "[R]" is the rows of x.
    for (auto [name, t] :
         {std::pair<const char *, const at::Tensor *>{"starts", &*starts},
          {"ends", &*ends}}) {
      checkCudaOn(name, *t, "x", x);
      checkIndexDtype(name, *t);
      checkShape(name, *t, {rows}, "[R]");
      checkContiguous(name, *t);
    }
    startRows = asInt32(*starts, INT32_MIN, kInt32Max);
    endRows = asInt32(*ends, INT32_MIN, kInt32Max);
  }
  c10::DeviceIndex device = x.get_device();
  c10::cuda::CUDAGuard guard(device);
  at::Tensor out = at::empty({rows, k}, x.options().dtype(at::kInt));
  if (rows == 0)
    return out;
  useDevice(device);
  const int32_t *startData =
      startRows.defined() ? startRows.data_ptr<int32_t>() : nullptr;
  const int32_t *endData =
      endRows.defined() ? endRows.data_ptr<int32_t>() : nullptr;
  if (bf16)
    checkStatus(hisa_topk_bf16(x.data_ptr(), startData, endData,
                               out.data_ptr<int32_t>(), rows, columns, k, 0,
                               streamOf(device)),
                "hisa_topk_bf16");
  else
    checkStatus(hisa_topk(x.data_ptr<float>(), startData, endData,
                          out.data_ptr<int32_t>(), rows, columns, k, 0,
                          streamOf(device)),
                "hisa_topk");
  return out;
}

/// hisa's operators have no backward: an input that requires grad with
/// grad mode on would silently get no gradient (ops.check_no_grad).
void checkNoGrad(const char *op, const char *name, const at::Tensor &t) {
  TORCH_CHECK_VALUE(!(at::GradMode::is_enabled() && t.requires_grad()), op,
                    ": ", name, " requires grad, but hisa's ", op,
                    " has no backward, so ", name,
                    " would silently get no gradient through it; call it "
                    "under torch.no_grad() or torch.inference_mode(), or pass ",
                    name, ".detach()");
}

constexpr int64_t kSparseAttnDim = 512;

std::tuple<at::Tensor, at::Tensor>
sparseAttn(const at::Tensor &q, const at::Tensor &kv,
           const at::Tensor &attnSink, const at::Tensor &topkIdxs,
           double softmaxScale, bool returnLse) {
  checkNoGrad("sparse_attn", "q", q);
  checkNoGrad("sparse_attn", "kv", kv);
  checkNoGrad("sparse_attn", "attn_sink", attnSink);
  checkCuda("q", q);
  checkCudaOn("kv", kv, "q", q);
  checkCudaOn("attn_sink", attnSink, "q", q);
  checkCudaOn("topk_idxs", topkIdxs, "q", q);
  checkDtype("q", q, at::kBFloat16);
  checkDtype("kv", kv, at::kBFloat16);
  checkDtype("attn_sink", attnSink, at::kFloat);
  checkIndexDtype("topk_idxs", topkIdxs);
  TORCH_CHECK_VALUE(q.dim() == 4, "q must be 4-D [B, S, H, D], got ", q.dim(),
                    "-D shape ", shapeString(q.sizes()));
  int64_t batch = q.size(0), seqLen = q.size(1), heads = q.size(2);
  TORCH_CHECK_VALUE(q.size(3) == kSparseAttnDim, "q has D = ", q.size(3),
                    " (shape ", shapeString(q.sizes()),
                    "); sparse_attn supports D = 512 (DeepSeek-V4)");
  TORCH_CHECK_VALUE(kv.dim() == 3, "kv must be 3-D [B, Nkv, 512], got ",
                    kv.dim(), "-D shape ", shapeString(kv.sizes()));
  int64_t nkv = kv.size(1);
  checkShape("kv", kv, {batch, nkv, kSparseAttnDim}, "[B, Nkv, 512]");
  checkShape("attn_sink", attnSink, {heads}, "[H]");
  TORCH_CHECK_VALUE(topkIdxs.dim() == 3, "topk_idxs must be 3-D [B, S, K], "
                                         "got ",
                    topkIdxs.dim(), "-D shape ",
                    shapeString(topkIdxs.sizes()));
  int64_t topk = topkIdxs.size(2);
  checkShape("topk_idxs", topkIdxs, {batch, seqLen, topk}, "[B, S, K]");
  for (auto [name, t] :
       {std::pair<const char *, const at::Tensor *>{"q", &q},
        {"kv", &kv},
        {"attn_sink", &attnSink},
        {"topk_idxs", &topkIdxs}})
    checkContiguous(name, *t);
  c10::DeviceIndex device = q.get_device();
  c10::cuda::CUDAGuard guard(device);
  at::Tensor index = asInt32(topkIdxs, -1, kInt32Max);
  at::Tensor o = at::empty_like(q);
  // Without return_lse the kernel writes no lse and the second output is
  // empty (an op's outputs are fixed by its schema).
  at::Tensor lse =
      returnLse ? at::empty({batch, seqLen, heads}, q.options().dtype(at::kFloat))
                : at::empty({0}, q.options().dtype(at::kFloat));
  useDevice(device);
  uint64_t bytes = 0;
  // Sizes are checked by the size query, also when there is nothing to do.
  checkStatus(
      hisa_sparse_attn_workspace_size(batch, seqLen, heads, topk, &bytes),
      "hisa_sparse_attn_workspace_size");
  if (batch * seqLen == 0)
    return {o, lse};
  at::Tensor workspace = workspaceOf(bytes, q);
  checkStatus(hisa_sparse_attn(
                  q.data_ptr(), kv.data_ptr(), attnSink.data_ptr<float>(),
                  index.data_ptr<int32_t>(), o.data_ptr(),
                  returnLse ? lse.data_ptr<float>() : nullptr, batch, seqLen,
                  heads, nkv, topk, static_cast<float>(softmaxScale),
                  workspace.data_ptr(), workspace.numel(), streamOf(device)),
              "hisa_sparse_attn");
  return {o, lse};
}

} // namespace

extern "C" {
/// The torch version the library was built against ("2.11.0"): what the
/// Python package compares with the running torch's before it uses the ops.
__attribute__((visibility("default"))) const char *hisa_torch_built_for() {
  return TORCH_VERSION;
}
}

TORCH_LIBRARY_IMPL(hisa, CUDA, m) {
  m.impl("topk", &topk);
  m.impl("hisa_indexer", &hisaIndexer);
  m.impl("flat_indexer", &flatIndexer);
  m.impl("sparse_attn", &sparseAttn);
}
