//===- CAPI.cpp - The C ABI of the runtime (hisa_runtime.h) ---------------===//

#include "hisa/Runtime/hisa_runtime.h"

#include "hisa/Runtime/CudaDriver.h"
#include "hisa/Runtime/Jit.h"

#include "llvm/Support/FormatVariadic.h"

#include "llvm/ADT/StringMap.h"

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

LaunchArgument tensor(const void *data, std::initializer_list<int64_t> sizes) {
  LaunchArgument arg;
  arg.kind = KernelMetadata::Argument::Tensor;
  arg.data = const_cast<void *>(data);
  arg.sizes.assign(sizes.begin(), sizes.end());
  return arg;
}

int runOperator(const char *kernelName, const std::string &params,
                ArrayRef<LaunchArgument> arguments, void *stream) {
  // Operators call the same few specializations over and over: skip hashing
  // the source for the cache key after the first call.
  static std::mutex mutex;
  static StringMap<LoadedKernel *> operators;
  std::string key = (Twine(kernelName) + "/" + params).str();
  LoadedKernel *kernel;
  {
    std::lock_guard<std::mutex> lock(mutex);
    kernel = operators.lookup(key);
  }
  if (!kernel) {
    Expected<LoadedKernel *> loaded = Jit::get().getKernel(
        getBuiltinKernelSource(kernelName), kernelName, params, "sm_90a");
    if (!loaded)
      return fail(loaded.takeError());
    kernel = *loaded;
    std::lock_guard<std::mutex> lock(mutex);
    operators[key] = kernel;
  }
  if (Error error = kernel->launch(arguments, stream))
    return fail(std::move(error));
  return succeed();
}

} // namespace

extern "C" {

const char *hisa_last_error(void) { return lastError.c_str(); }

const char *hisa_version(void) { return Jit::getVersion().data(); }

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
  if (out_path && path_capacity > 0) {
    if (static_cast<int64_t>(path.size()) >= path_capacity)
      return failWith(HISA_ERROR_INVALID_ARGUMENT,
                      "out_path is too small for " + path);
    std::memcpy(out_path, path.c_str(), path.size() + 1);
  }
  return succeed();
}

int hisa_kernel_launch(hisa_kernel *kernel, const hisa_arg *args,
                       int32_t num_args, void *stream) {
  if (!kernel)
    return failWith(HISA_ERROR_INVALID_ARGUMENT, "kernel must not be NULL");
  if (num_args < 0 || (num_args > 0 && !args))
    return failWith(HISA_ERROR_INVALID_ARGUMENT, "args must not be NULL");
  auto *loaded = reinterpret_cast<LoadedKernel *>(kernel);
  SmallVector<LaunchArgument, 16> arguments;
  for (int32_t i = 0; i < num_args; ++i) {
    const hisa_arg &arg = args[i];
    LaunchArgument launch;
    if (arg.kind == 0) {
      if (arg.rank < 0 || arg.rank > 8)
        return failWith(
            HISA_ERROR_INVALID_ARGUMENT,
            formatv("argument #{0}: rank {1} is not in [0, 8]", i, arg.rank));
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
  if (n < 0 || (dim != 64 && dim != 128) ||
      (kb != 64 && kb != 128 && kb != 256))
    return failWith(HISA_ERROR_INVALID_ARGUMENT,
                    formatv("fp8_block_mean_pooling: unsupported n = {0}, dim "
                            "= {1}, kb = {2} (dim in {{64, 128}, kb in {{64, "
                            "128, 256})",
                            n, dim, kb));
  int64_t blocks = (n + kb - 1) / kb;
  LaunchArgument arguments[] = {tensor(k, {n, dim}), tensor(k_scale, {n}),
                                tensor(blocked_k, {blocks, dim}),
                                tensor(blocked_scale, {blocks})};
  return runOperator("fp8_block_mean_pooling",
                     formatv("dim={0},kb={1}", dim, kb), arguments, stream);
}

int hisa_clean_and_maintain_logits(float *logits, const int32_t *s,
                                   const int32_t *e, int64_t m, int64_t n,
                                   void *stream) {
  if (m < 0 || n < 0)
    return failWith(HISA_ERROR_INVALID_ARGUMENT,
                    formatv("clean_and_maintain_logits: negative size m = {0}, "
                            "n = {1}",
                            m, n));
  LaunchArgument arguments[] = {tensor(logits, {m, n}), tensor(s, {m}),
                                tensor(e, {m})};
  return runOperator("clean_and_maintain_logits", "", arguments, stream);
}

/// Queries per block of pool_mqa_logits: 256 query rows (the widest wgmma),
/// as the Python op (_pool_mqa_block_q) chooses.
static int64_t poolMqaBlockQ(int64_t heads) { return 256 / heads; }

/// Blocks per SM for block_sparse_mqa_logits: five fit while the [kb, heads]
/// accumulator needs at most ~100 registers a thread (measured with ptxas:
/// no spills); H = 128 tiles need more (kb = 128: 163, kb = 256: 255).
static int64_t blockSparseMinBlocks(int64_t heads, int64_t kb) {
  if (heads <= 64 || kb <= 64)
    return 5;
  return kb == 128 ? 3 : 1;
}

static bool isSupportedMqaShape(int64_t heads, int64_t dim) {
  return (heads == 16 || heads == 32 || heads == 64 || heads == 128) &&
         (dim == 64 || dim == 128);
}

int hisa_pool_mqa_logits(const void *q, const void *blocked_k,
                         const float *blocked_k_scale, const float *weights,
                         const int32_t *bks, const int32_t *bke, float *logits,
                         int64_t m, int64_t nb, int64_t heads, int64_t dim,
                         void *stream) {
  if (m < 0 || nb < 0 || !isSupportedMqaShape(heads, dim))
    return failWith(HISA_ERROR_INVALID_ARGUMENT,
                    formatv("pool_mqa_logits: unsupported m = {0}, nb = {1}, "
                            "heads = {2}, dim = {3} (heads in {{16, 32, 64, "
                            "128}, dim in {{64, 128})",
                            m, nb, heads, dim));
  if (m == 0 || nb == 0)
    return succeed();
  LaunchArgument arguments[] = {tensor(q, {m * heads, dim}),
                                tensor(blocked_k, {nb, dim}),
                                tensor(blocked_k_scale, {nb}),
                                tensor(weights, {m, heads}),
                                tensor(bks, {m}),
                                tensor(bke, {m}),
                                tensor(logits, {m, nb})};
  return runOperator("pool_mqa_logits",
                     formatv("block_q={0},dim={1},heads={2}",
                             poolMqaBlockQ(heads), dim, heads),
                     arguments, stream);
}

int hisa_block_sparse_mqa_logits(const void *q, const void *k,
                                 const float *k_scale,
                                 const int32_t *topk_block_index,
                                 const float *weights, const int32_t *ks,
                                 const int32_t *ke, float *out, int64_t m,
                                 int64_t n, int64_t topk, int64_t kb,
                                 int64_t heads, int64_t dim, void *stream) {
  if (m < 0 || n < 0 || topk < 0 || (kb != 64 && kb != 128 && kb != 256) ||
      !isSupportedMqaShape(heads, dim))
    return failWith(HISA_ERROR_INVALID_ARGUMENT,
                    formatv("block_sparse_mqa_logits: unsupported m = {0}, n = "
                            "{1}, topk = {2}, kb = {3}, heads = {4}, dim = {5} "
                            "(kb in {{64, 128, 256}, heads in {{16, 32, 64, "
                            "128}, dim in {{64, 128})",
                            m, n, topk, kb, heads, dim));
  if (m == 0 || topk == 0)
    return succeed();
  LaunchArgument arguments[] = {tensor(q, {m, heads, dim}),
                                tensor(k, {n, dim}),
                                tensor(k_scale, {n}),
                                tensor(topk_block_index, {m, topk}),
                                tensor(weights, {m, heads}),
                                tensor(ks, {m}),
                                tensor(ke, {m}),
                                tensor(out, {m, topk * kb})};
  return runOperator("block_sparse_mqa_logits",
                     formatv("dim={0},heads={1},kb={2},min_blocks={3},topk={4}",
                             dim, heads, kb, blockSparseMinBlocks(heads, kb),
                             topk),
                     arguments, stream);
}

} // extern "C"
