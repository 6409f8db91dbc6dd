//===- CAPI.cpp - The C ABI of the runtime (hisa_runtime.h) ---------------===//
//
// Thin bindings: the JIT (hisa/Runtime), the operators (hisa/Ops) and the
// indexers (hisa/Indexer), with errors turned into status codes and
// hisa_last_error() messages.
//
//===----------------------------------------------------------------------===//

#include "hisa/Runtime/hisa_runtime.h"

#include "hisa/ContextParallel/ContextParallel.h"
#include "hisa/Indexer/Indexer.h"
#include "hisa/Ops/Operators.h"
#include "hisa/Runtime/CudaDriver.h"
#include "hisa/Runtime/Jit.h"
#include "hisa/Runtime/LaunchGraph.h"
#include "hisa/V4/Attention.h"

#include "llvm/Support/FormatVariadic.h"

#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>

using namespace llvm;
using namespace hisa::runtime;

struct hisa_kernel {}; // LoadedKernel is handed out as this opaque type

namespace {

thread_local std::string lastError;

/// Records `error` and returns its status code.
int fail(Error error) {
  int status = HISA_ERROR_INVALID_ARGUMENT;
  std::string message;
  handleAllErrors(
      std::move(error),
      [&](const NoDeviceError &noDevice) {
        status = HISA_ERROR_NO_DEVICE;
        message = noDevice.getMessage();
      },
      [&](const CudaError &cuda) {
        status = HISA_ERROR_CUDA;
        message = cuda.getMessage();
      },
      [&](const CompileError &compile) {
        status = HISA_ERROR_COMPILE;
        message = compile.getMessage();
      },
      [&](const ParameterError &parameters) {
        status = HISA_ERROR_INVALID_ARGUMENT;
        message = parameters.getMessage();
      },
      [&](const ErrorInfoBase &other) { message = other.message(); });
  lastError = message;
  return status;
}

int failWith(int status, const Twine &message) {
  lastError = message.str();
  return status;
}

int succeed() {
  lastError.clear();
  return HISA_OK;
}

/// The source to compile: the given text or the built-in kernel.
Expected<StringRef> resolveSource(const char *source, const char *kernelName) {
  if (!kernelName || !*kernelName)
    return createStringError(std::make_error_code(std::errc::invalid_argument),
                             "kernel_name must be given");
  if (source)
    return StringRef(source);
  StringRef builtin = getBuiltinKernelSource(kernelName);
  if (builtin.empty())
    return createStringError(std::make_error_code(std::errc::invalid_argument),
                             "no built-in kernel named '" + Twine(kernelName) +
                                 "' (and no source given)");
  return builtin;
}

/// The status of `error` (success: HISA_OK).
int statusOf(Error error) {
  if (error)
    return fail(std::move(error));
  return succeed();
}

} // namespace

extern "C" {

const char *hisa_last_error(void) { return lastError.c_str(); }

const char *hisa_version(void) { return Jit::getVersion().data(); }

int hisa_set_device_pointer_checks(int enabled) {
  return setDevicePointerChecks(enabled != 0) ? 1 : 0;
}

int hisa_use_device(int32_t ordinal) {
  Expected<CudaDriver &> driver = CudaDriver::get();
  if (!driver)
    return statusOf(driver.takeError());
  return statusOf(driver->usePrimaryContext(ordinal));
}

int hisa_set_programmatic_launch(int enabled) {
  return setProgrammaticLaunch(enabled != 0) ? 1 : 0;
}

int hisa_set_launch_graphs(int enabled) {
  return setLaunchGraphs(enabled != 0) ? 1 : 0;
}

void hisa_launch_graph_stats(int64_t *instantiated, int64_t *launched,
                             int64_t *node_updates) {
  LaunchGraphStats stats = getLaunchGraphStats();
  if (instantiated)
    *instantiated = stats.instantiated;
  if (launched)
    *launched = stats.launched;
  if (node_updates)
    *node_updates = stats.nodeUpdates;
}

const char *hisa_builtin_kernel_source(const char *name) {
  if (!name)
    return nullptr;
  StringRef source = getBuiltinKernelSource(name);
  return source.empty() ? nullptr : source.data();
}

int hisa_kernel_get(const char *source, const char *kernel_name,
                    const char *params, const char *target, hisa_kernel **out) {
  if (!out)
    return failWith(HISA_ERROR_INVALID_ARGUMENT, "out must not be NULL");
  Expected<StringRef> text = resolveSource(source, kernel_name);
  if (!text)
    return fail(text.takeError());
  Expected<LoadedKernel *> kernel = Jit::get().getKernel(
      *text, kernel_name, params ? params : "", target ? target : "sm_90a");
  if (!kernel)
    return fail(kernel.takeError());
  *out = reinterpret_cast<hisa_kernel *>(*kernel);
  return succeed();
}

int hisa_kernel_compile(const char *source, const char *kernel_name,
                        const char *params, const char *target, char *out_path,
                        int64_t path_capacity) {
  Expected<StringRef> text = resolveSource(source, kernel_name);
  if (!text)
    return fail(text.takeError());
  auto compiled = Jit::get().compile(*text, kernel_name, params ? params : "",
                                     target ? target : "sm_90a");
  if (!compiled)
    return fail(compiled.takeError());
  // The binary must be somewhere outside this process: that is the point.
  const std::string &path = (*compiled)->binaryPath;
  if (path.empty())
    return failWith(HISA_ERROR_COMPILE,
                    "kernel '" + Twine(kernel_name) +
                        "' compiled, but its binary could not be written: " +
                        (*compiled)->binaryPathError);
  if (out_path) {
    if (static_cast<int64_t>(path.size()) >= path_capacity)
      return failWith(HISA_ERROR_INVALID_ARGUMENT,
                      formatv("out_path is too small (path_capacity = {0}) "
                              "for {1}",
                              path_capacity, path));
    std::memcpy(out_path, path.c_str(), path.size() + 1);
  }
  return succeed();
}

int hisa_kernel_argument_type(hisa_kernel *kernel, int32_t index,
                              const char **element_type,
                              int32_t *element_bytes) {
  if (!kernel || !element_type || !element_bytes)
    return failWith(HISA_ERROR_INVALID_ARGUMENT,
                    "kernel, element_type and element_bytes must not be NULL");
  const KernelMetadata &metadata =
      reinterpret_cast<LoadedKernel *>(kernel)->getMetadata();
  if (index < 0 || index >= static_cast<int64_t>(metadata.arguments.size()))
    return failWith(HISA_ERROR_INVALID_ARGUMENT,
                    formatv("index = {0}, but kernel '{1}' takes {2} "
                            "arguments",
                            index, metadata.kernelName,
                            metadata.arguments.size()));
  const KernelMetadata::Argument &argument = metadata.arguments[index];
  bool tensor = argument.kind == KernelMetadata::Argument::Tensor;
  *element_type = tensor ? argument.elementType.c_str() : "";
  *element_bytes = tensor ? static_cast<int32_t>(argument.elementBytes) : 0;
  return succeed();
}

int hisa_kernel_launch(hisa_kernel *kernel, const hisa_arg *args,
                       int32_t num_args, void *stream) {
  if (!kernel)
    return failWith(HISA_ERROR_INVALID_ARGUMENT, "kernel must not be NULL");
  auto *loaded = reinterpret_cast<LoadedKernel *>(kernel);
  const KernelMetadata &metadata = loaded->getMetadata();
  // Before reading args: a count the kernel does not take would read past
  // the caller's array.
  if (num_args != static_cast<int64_t>(metadata.arguments.size()))
    return failWith(HISA_ERROR_INVALID_ARGUMENT,
                    formatv("num_args = {0}, but kernel '{1}' takes {2} "
                            "arguments",
                            num_args, metadata.kernelName,
                            metadata.arguments.size()));
  if (num_args > 0 && !args)
    return failWith(HISA_ERROR_INVALID_ARGUMENT, "args must not be NULL");
  SmallVector<LaunchArgument, 16> arguments;
  for (int32_t i = 0; i < num_args; ++i) {
    const hisa_arg &arg = args[i];
    LaunchArgument launch;
    if (arg.kind == 0) {
      if (arg.rank < 0 || arg.rank > 8)
        return failWith(
            HISA_ERROR_INVALID_ARGUMENT,
            formatv("argument #{0}: rank {1} is not in [0, 8]", i, arg.rank));
      // Elements times their bytes within 2^48 (docs/design.md, Limits),
      // computed without overflow: a product that wrapped to 0 would let a
      // NULL or stray pointer through the runtime's checks.
      uint64_t bytes = std::max(1u, metadata.arguments[i].elementBytes);
      bool empty = false, tooLarge = false;
      for (int32_t d = 0; d < arg.rank; ++d) {
        int64_t size = arg.sizes[d]; // (negative: the runtime names it)
        empty = empty || size == 0;
        if (size > 0 && bytes > (uint64_t(1) << 48) / uint64_t(size))
          tooLarge = true;
        else if (size > 0)
          bytes *= uint64_t(size);
      }
      if (tooLarge && !empty)
        return failWith(HISA_ERROR_INVALID_ARGUMENT,
                        formatv("argument #{0} ('{1}'): its sizes hold more "
                                "than 2^48 bytes (the largest tensor "
                                "supported)",
                                i, metadata.arguments[i].name));
      launch.kind = KernelMetadata::Argument::Tensor;
      launch.data = arg.data;
      launch.sizes.assign(arg.sizes, arg.sizes + arg.rank);
    } else if (arg.kind == 1) {
      launch.kind = KernelMetadata::Argument::Int;
      launch.intValue = arg.int_value;
    } else if (arg.kind == 2) {
      launch.kind = KernelMetadata::Argument::Float;
      launch.floatValue = arg.float_value;
    } else {
      return failWith(HISA_ERROR_INVALID_ARGUMENT,
                      formatv("argument #{0}: unknown kind {1}", i, arg.kind));
    }
    arguments.push_back(std::move(launch));
  }
  if (Error error = loaded->launch(arguments, stream))
    return fail(std::move(error));
  return succeed();
}

void hisa_cache_stats(int64_t *compiles, int64_t *disk_hits,
                      int64_t *memory_hits) {
  CacheStatistics statistics = Jit::get().getStatistics();
  if (compiles)
    *compiles = statistics.compiles;
  if (disk_hits)
    *disk_hits = statistics.diskHits;
  if (memory_hits)
    *memory_hits = statistics.memoryHits;
}

void hisa_cache_stats2(int64_t *compiles, int64_t *disk_hits,
                       int64_t *memory_hits, int64_t *rejected_entries) {
  CacheStatistics statistics = Jit::get().getStatistics();
  if (compiles)
    *compiles = statistics.compiles;
  if (disk_hits)
    *disk_hits = statistics.diskHits;
  if (memory_hits)
    *memory_hits = statistics.memoryHits;
  if (rejected_entries)
    *rejected_entries = statistics.rejectedEntries;
}

int hisa_fp8_block_mean_pooling(const void *k, const float *k_scale,
                                void *blocked_k, float *blocked_scale,
                                int64_t n, int64_t dim, int64_t kb,
                                void *stream) {
  return statusOf(hisa::ops::fp8BlockMeanPooling(
      k, k_scale, blocked_k, blocked_scale, n, dim, kb, stream));
}

int hisa_clean_and_maintain_logits(float *logits, const int32_t *s,
                                   const int32_t *e, int64_t m, int64_t n,
                                   void *stream) {
  return statusOf(
      hisa::ops::cleanAndMaintainLogits(logits, s, e, m, n, stream));
}

int hisa_pool_mqa_logits(const void *q, const void *blocked_k,
                         const float *blocked_k_scale, const float *weights,
                         const int32_t *bks, const int32_t *bke, float *logits,
                         int64_t m, int64_t nb, int64_t heads, int64_t dim,
                         void *stream) {
  return statusOf(hisa::ops::poolMqaLogits(q, blocked_k, blocked_k_scale,
                                           weights, bks, bke, logits, m, nb,
                                           heads, dim, stream));
}

int hisa_block_sparse_mqa_logits(const void *q, const void *k,
                                 const float *k_scale,
                                 const int32_t *topk_block_index,
                                 const float *weights, const int32_t *ks,
                                 const int32_t *ke, float *out, int64_t m,
                                 int64_t n, int64_t topk, int64_t kb,
                                 int64_t heads, int64_t dim, void *stream) {
  return statusOf(hisa::ops::blockSparseMqaLogits(
      q, k, k_scale, topk_block_index, weights, ks, ke, out, m, n, topk, kb,
      heads, dim, stream));
}

int hisa_topk(const float *x, const int32_t *starts, const int32_t *ends,
              int32_t *out, int64_t rows, int64_t columns, int64_t k,
              int32_t relative, void *stream) {
  return statusOf(hisa::ops::topk(x, starts, ends, out, rows, columns, k,
                                  relative != 0, stream));
}

int hisa_l2_prefetch(const void *data, uint64_t bytes, void *stream) {
  return statusOf(hisa::ops::l2Prefetch(data, bytes, stream));
}

int hisa_topk_bf16(const void *x, const int32_t *starts, const int32_t *ends,
                   int32_t *out, int64_t rows, int64_t columns, int64_t k,
                   int32_t relative, void *stream) {
  return statusOf(hisa::ops::topkBf16(x, starts, ends, out, rows, columns, k,
                                      relative != 0, stream));
}

int hisa_sparse_attn_workspace_size(int64_t batch, int64_t seq_len,
                                    int64_t heads, int64_t topk,
                                    uint64_t *bytes) {
  return statusOf(
      hisa::ops::sparseAttnWorkspaceSize(batch, seq_len, heads, topk, bytes));
}

int hisa_sparse_attn(const void *q, const void *kv, const float *attn_sink,
                     const int32_t *topk_idxs, void *o, float *lse,
                     int64_t batch, int64_t seq_len, int64_t heads, int64_t nkv,
                     int64_t topk, float softmax_scale, void *workspace,
                     uint64_t workspace_bytes, void *stream) {
  return statusOf(hisa::ops::sparseAttn(
      q, kv, attn_sink, topk_idxs, o, lse, batch, seq_len, heads, nkv, topk,
      softmax_scale, workspace, workspace_bytes, stream));
}

struct hisa_v4_attention {
  std::unique_ptr<hisa::v4::Attention> layer;
};

int hisa_v4_attention_create(const hisa_v4_config *config,
                             const hisa_v4_weights *weights, int64_t batch,
                             int64_t max_seq, int64_t max_prefill_tokens,
                             hisa_v4_attention **layer) {
  if (!config || !weights || !layer)
    return statusOf(createStringError(
        std::make_error_code(std::errc::invalid_argument),
        "v4_attention_create: config, weights and layer must not be NULL"));
  *layer = nullptr;
  hisa::v4::Config c;
  c.dim = config->dim;
  c.heads = config->heads;
  c.qLora = config->q_lora;
  c.oGroups = config->o_groups;
  c.oLora = config->o_lora;
  c.compressRatio = config->compress_ratio;
  c.indexHeads = config->index_heads;
  c.indexTopk = config->index_topk;
  c.eps = config->eps;
  c.ropeTheta = config->rope_theta;
  c.compressRopeTheta = config->compress_rope_theta;
  hisa::v4::Weights w;
  w.wqA = weights->wq_a;
  w.wqB = weights->wq_b;
  w.wkv = weights->wkv;
  w.woA = weights->wo_a;
  w.woB = weights->wo_b;
  w.qNorm = weights->q_norm;
  w.kvNorm = weights->kv_norm;
  w.attnSink = weights->attn_sink;
  w.cWkv = weights->c_wkv;
  w.cWgate = weights->c_wgate;
  w.cApe = weights->c_ape;
  w.cNorm = weights->c_norm;
  w.iWq = weights->i_wq;
  w.iWeights = weights->i_weights;
  w.iWkv = weights->i_wkv;
  w.iWgate = weights->i_wgate;
  w.iApe = weights->i_ape;
  w.iNorm = weights->i_norm;
  Expected<std::unique_ptr<hisa::v4::Attention>> created =
      hisa::v4::Attention::create(c, w, batch, max_seq, max_prefill_tokens);
  if (!created)
    return statusOf(created.takeError());
  *layer = new hisa_v4_attention{std::move(*created)};
  return succeed();
}

static Error checkLayer(const hisa_v4_attention *layer, const char *op) {
  if (!layer)
    return createStringError(std::make_error_code(std::errc::invalid_argument),
                             Twine(op) + ": layer must not be NULL");
  return Error::success();
}

int hisa_v4_attention_prefill(hisa_v4_attention *layer, const void *x,
                              int64_t seq, void *out, void *stream) {
  if (Error error = checkLayer(layer, "v4_attention_prefill"))
    return statusOf(std::move(error));
  return statusOf(layer->layer->prefill(x, seq, out, stream));
}

int hisa_v4_attention_decode(hisa_v4_attention *layer, const void *x, void *out,
                             void *stream) {
  if (Error error = checkLayer(layer, "v4_attention_decode"))
    return statusOf(std::move(error));
  return statusOf(layer->layer->decode(x, out, stream));
}

int hisa_v4_attention_info(const hisa_v4_attention *layer, int64_t *length,
                           int64_t *index_columns, const void **kv_cache,
                           const int32_t **last_indices) {
  if (Error error = checkLayer(layer, "v4_attention_info"))
    return statusOf(std::move(error));
  if (length)
    *length = layer->layer->length();
  if (index_columns)
    *index_columns = layer->layer->indexColumns();
  if (kv_cache)
    *kv_cache = layer->layer->kvCache();
  if (last_indices)
    *last_indices = layer->layer->lastIndices();
  return succeed();
}

int hisa_v4_attention_index_keys(const hisa_v4_attention *layer, void **keys,
                                 float **scales, int64_t *rows_per_sequence) {
  if (Error error = checkLayer(layer, "v4_attention_index_keys"))
    return statusOf(std::move(error));
  hisa::v4::Attention::IndexKeyCache cache = layer->layer->indexKeyCache();
  if (keys)
    *keys = cache.keys;
  if (scales)
    *scales = cache.scales;
  if (rows_per_sequence)
    *rows_per_sequence = cache.rowsPerSequence;
  return succeed();
}

int hisa_v4_attention_set_length(hisa_v4_attention *layer, int64_t length,
                                 void *stream) {
  if (Error error = checkLayer(layer, "v4_attention_set_length"))
    return statusOf(std::move(error));
  return statusOf(layer->layer->setLength(length, stream));
}

int hisa_v4_attention_set_l2_prefetch(hisa_v4_attention *layer, int64_t bytes) {
  if (Error error = checkLayer(layer, "v4_attention_set_l2_prefetch"))
    return statusOf(std::move(error));
  return statusOf(layer->layer->setL2Prefetch(bytes));
}

void hisa_v4_attention_destroy(hisa_v4_attention *layer) { delete layer; }

int hisa_cp_rank_ranges(int64_t total, int64_t world, int64_t rank,
                        int64_t ranges[4]) {
  // The limits of lib/ContextParallel (int32 positions, at most 65536
  // ranks): total * 2 * world stays within int64.
  if (!ranges || total < 0 || total > INT32_MAX || world < 1 || world > 65536 ||
      rank < 0 || rank >= world)
    return statusOf(createStringError(
        std::make_error_code(std::errc::invalid_argument),
        formatv("cp_rank_ranges: total = {0}, world = {1}, rank = {2}, "
                "ranges {3}: need 0 <= total <= {4}, 1 <= world <= 65536, 0 "
                "<= rank < world and ranges",
                total, world, rank, ranges ? "given" : "NULL", INT32_MAX)));
  auto pairs = hisa::cp::rankRanges(total, world, rank);
  ranges[0] = pairs[0].first;
  ranges[1] = pairs[0].second;
  ranges[2] = pairs[1].first;
  ranges[3] = pairs[1].second;
  return succeed();
}

int hisa_cp_hisa_indexer_workspace_size(int64_t total, int64_t world,
                                        int64_t rank, int64_t heads,
                                        int64_t dim, int64_t kb,
                                        int64_t block_topk, int64_t topk_tokens,
                                        uint64_t *bytes) {
  if (!bytes)
    return statusOf(createStringError(
        std::make_error_code(std::errc::invalid_argument),
        "cp_hisa_indexer_workspace_size: bytes must not be NULL"));
  hisa::cp::IndexerCpShape shape{total, world,      heads,      dim,
                                 kb,    block_topk, topk_tokens};
  Expected<uint64_t> size = hisa::cp::hisaIndexerCpWorkspaceSize(shape, rank);
  if (!size)
    return statusOf(size.takeError());
  *bytes = *size;
  return succeed();
}

int hisa_cp_hisa_indexer(const void *q, const void *k, const float *k_scale,
                         const float *weights, int32_t *out, int64_t total,
                         int64_t world, int64_t heads, int64_t dim, int64_t kb,
                         int64_t block_topk, int64_t topk_tokens,
                         void *nccl_comm, void *workspace,
                         uint64_t workspace_bytes, void *stream) {
  hisa::cp::IndexerCpShape shape{total, world,      heads,      dim,
                                 kb,    block_topk, topk_tokens};
  return statusOf(hisa::cp::hisaIndexerCp(q, k, k_scale, weights, out, shape,
                                          nccl_comm, workspace, workspace_bytes,
                                          stream));
}

int hisa_cp_sparse_attn_workspace_size(int64_t total, int64_t world,
                                       int64_t rank, int64_t heads,
                                       int64_t topk, uint64_t *bytes) {
  if (!bytes)
    return statusOf(createStringError(
        std::make_error_code(std::errc::invalid_argument),
        "cp_sparse_attn_workspace_size: bytes must not be NULL"));
  Expected<uint64_t> size =
      hisa::cp::sparseAttnCpWorkspaceSize(total, world, rank, heads, topk);
  if (!size)
    return statusOf(size.takeError());
  *bytes = *size;
  return succeed();
}

int hisa_cp_sparse_attn(const void *q, const void *kv, const float *attn_sink,
                        const int32_t *topk_idxs, void *o, int64_t total,
                        int64_t heads, int64_t topk, float softmax_scale,
                        void *nccl_comm, void *workspace,
                        uint64_t workspace_bytes, void *stream) {
  return statusOf(hisa::cp::sparseAttnCp(q, kv, attn_sink, topk_idxs, o, total,
                                         heads, topk, softmax_scale, nccl_comm,
                                         workspace, workspace_bytes, stream));
}

int hisa_flash_attn(const void *q, const void *k, const void *v, void *o,
                    int64_t batch, int64_t heads, int64_t seq_len, int64_t dim,
                    int32_t causal, float softmax_scale, void *stream) {
  return statusOf(hisa::ops::flashAttn(q, k, v, o, batch, heads, seq_len, dim,
                                       causal != 0, softmax_scale, stream));
}

int hisa_pool_topk_blocks(const void *q, const void *blocked_k,
                          const float *blocked_k_scale, const float *weights,
                          const int32_t *starts, const int32_t *ends,
                          int32_t *out, int64_t m, int64_t nb, int64_t heads,
                          int64_t dim, int64_t out_columns, int64_t window_kb,
                          void *stream) {
  return statusOf(hisa::ops::poolTopkBlocks(
      q, blocked_k, blocked_k_scale, weights, starts, ends, out, m, nb, heads,
      dim, out_columns, window_kb, stream));
}

int hisa_block_sparse_topk_tokens(
    const void *q, const void *k, const float *k_scale,
    const int32_t *topk_block_index, const float *weights, const int32_t *ks,
    const int32_t *ke, int32_t *out, int64_t m, int64_t n, int64_t topk,
    int64_t kb, int64_t heads, int64_t dim, int64_t topk_tokens, void *stream) {
  return statusOf(hisa::ops::blockSparseTopkTokens(
      q, k, k_scale, topk_block_index, weights, ks, ke, out, m, n, topk, kb,
      heads, dim, topk_tokens, stream));
}

static hisa::indexer::IndexerShape indexerShape(int64_t m, int64_t n,
                                                int64_t heads, int64_t dim,
                                                int64_t kb, int64_t block_topk,
                                                int64_t topk_tokens) {
  hisa::indexer::IndexerShape shape;
  shape.m = m;
  shape.n = n;
  shape.heads = heads;
  shape.dim = dim;
  shape.kb = kb;
  shape.blockTopk = block_topk;
  shape.topkTokens = topk_tokens;
  return shape;
}

static int writeSize(const char *op, Expected<uint64_t> size, uint64_t *out) {
  if (!out) {
    consumeError(size.takeError());
    return failWith(HISA_ERROR_INVALID_ARGUMENT,
                    Twine(op) + ": bytes must not be NULL");
  }
  if (!size)
    return fail(size.takeError());
  *out = *size;
  return succeed();
}

int hisa_hisa_indexer_workspace_size(int64_t m, int64_t n, int64_t heads,
                                     int64_t dim, int64_t kb,
                                     int64_t block_topk, int64_t topk_tokens,
                                     uint64_t *bytes) {
  return writeSize("hisa_indexer_workspace_size",
                   hisa::indexer::hisaIndexerWorkspaceSize(indexerShape(
                       m, n, heads, dim, kb, block_topk, topk_tokens)),
                   bytes);
}

int hisa_hisa_indexer(const void *q, const void *k, const float *k_scale,
                      const float *weights, const int32_t *ks,
                      const int32_t *ke, int32_t *out, int64_t m, int64_t n,
                      int64_t heads, int64_t dim, int64_t kb,
                      int64_t block_topk, int64_t topk_tokens, void *workspace,
                      uint64_t workspace_bytes, void *stream) {
  return statusOf(hisa::indexer::hisaIndexer(
      q, k, k_scale, weights, ks, ke, out,
      indexerShape(m, n, heads, dim, kb, block_topk, topk_tokens), workspace,
      workspace_bytes, stream));
}

int hisa_flat_indexer_workspace_size(int64_t m, int64_t n, int64_t heads,
                                     int64_t dim, int64_t topk_tokens,
                                     uint64_t *bytes) {
  return writeSize("flat_indexer_workspace_size",
                   hisa::indexer::flatIndexerWorkspaceSize(
                       indexerShape(m, n, heads, dim, 128, 1, topk_tokens)),
                   bytes);
}

int hisa_flat_indexer(const void *q, const void *k, const float *k_scale,
                      const float *weights, const int32_t *ks,
                      const int32_t *ke, int32_t *out, int64_t m, int64_t n,
                      int64_t heads, int64_t dim, int64_t topk_tokens,
                      void *workspace, uint64_t workspace_bytes, void *stream) {
  return statusOf(hisa::indexer::flatIndexer(
      q, k, k_scale, weights, ks, ke, out,
      indexerShape(m, n, heads, dim, 128, 1, topk_tokens), workspace,
      workspace_bytes, stream));
}

} // extern "C"
