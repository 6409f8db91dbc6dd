//===- HostOverheadBench.cpp - Host time per call of the C ABI ------------===//
//
// The host time of hisa's calls with whatever libcuda.so.1 the runtime
// loads: the fake driver (FakeCuda.h, whose cuLaunchKernel only records:
// hisa's own code per call, on a machine without a GPU), or the real one
// on a GPU machine (hisa's code plus the driver's: what a C++ server pays
// per call; the GPU's work is only waited for between rounds); with the
// fake, the driver entry points each call uses are listed too. Prints a
// markdown table.
//
//   build/test/FakeDriver/HisaHostOverheadBench [rounds]
//
// It links libhisa_runtime.so (the C ABI only) and finds libcuda.so.1 on
// its run path (the fake's folder, here) or the system's (on a GPU machine
// where that folder does not exist; LD_LIBRARY_PATH also comes first).
//
//===----------------------------------------------------------------------===//

#include "hisa/Runtime/hisa_runtime.h"
#include "hisa/hisa.hpp"

#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

namespace {

/// The few driver functions the benchmark itself needs (memory, a stream),
/// from the libcuda.so.1 it loads first: this binary's run path has the
/// fake; without it (a GPU machine) the system's driver. The runtime, which
/// opens the same soname, then gets the same library.
struct Driver {
  void *library = nullptr;
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) retain = nullptr;
  decltype(&::cuCtxSetCurrent) setCurrent = nullptr;
  decltype(&::cuMemAlloc) memAlloc = nullptr;
  decltype(&::cuMemcpyHtoD) memcpyHtoD = nullptr;
  decltype(&::cuStreamCreate) streamCreate = nullptr;
  decltype(&::cuStreamSynchronize) streamSynchronize = nullptr;
};

Driver &driver() {
  static Driver *loaded = [] {
    auto *d = new Driver;
    d->library = dlopen("libcuda.so.1", RTLD_NOW);
    if (!d->library) {
      std::fprintf(stderr, "no libcuda.so.1: %s\n", dlerror());
      std::exit(1);
    }
    auto get = [&](auto &slot, const char *name) {
      slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(
          dlsym(d->library, name));
      if (!slot) {
        std::fprintf(stderr, "libcuda.so.1 lacks %s\n", name);
        std::exit(1);
      }
    };
    get(d->init, "cuInit");
    get(d->retain, "cuDevicePrimaryCtxRetain");
    get(d->setCurrent, "cuCtxSetCurrent");
    get(d->memAlloc, "cuMemAlloc_v2");
    get(d->memcpyHtoD, "cuMemcpyHtoD_v2");
    get(d->streamCreate, "cuStreamCreate");
    get(d->streamSynchronize, "cuStreamSynchronize");
    CUcontext context = nullptr;
    if (d->init(0) != CUDA_SUCCESS || d->retain(&context, 0) != CUDA_SUCCESS ||
        d->setCurrent(context) != CUDA_SUCCESS) {
      std::fprintf(stderr, "no CUDA context on device 0\n");
      std::exit(1);
    }
    return d;
  }();
  return *loaded;
}

/// Device memory of zeros (valid inputs: top-k of equal values, attention
/// of zeros, empty windows).
void *deviceBuffer(size_t bytes) {
  CUdeviceptr pointer = 0;
  if (driver().memAlloc(&pointer, bytes) != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuMemAlloc of %zu bytes failed\n", bytes);
    std::exit(1);
  }
  std::vector<char> zeros(std::min<size_t>(bytes, 1 << 20), 0);
  for (size_t at = 0; at < bytes; at += zeros.size())
    if (driver().memcpyHtoD(pointer + at, zeros.data(),
                            std::min(zeros.size(), bytes - at)) !=
        CUDA_SUCCESS) {
      std::fprintf(stderr, "cuMemcpyHtoD failed\n");
      std::exit(1);
    }
  return reinterpret_cast<void *>(pointer);
}

void check(int status, const char *what) {
  if (status != HISA_OK) {
    std::fprintf(stderr, "%s: %s\n", what, hisa_last_error());
    std::exit(1);
  }
}

/// A function of the loaded libcuda.so.1 that only the fake driver has
/// (null with the real one).
void *fakeDriverSymbol(const char *name) {
  return dlsym(driver().library, name);
}

/// The fake driver's calls of each entry point so far (empty with the real
/// driver).
std::map<std::string, int64_t> entryPointCalls() {
  using Count = int64_t (*)(const char *);
  using Names = void (*)(char *, size_t);
  static auto count =
      reinterpret_cast<Count>(fakeDriverSymbol("hisa_fake_cuda_entry_calls"));
  static auto names =
      reinterpret_cast<Names>(fakeDriverSymbol("hisa_fake_cuda_entry_names"));
  std::map<std::string, int64_t> calls;
  if (!count || !names)
    return calls;
  std::vector<char> buffer(8192);
  names(buffer.data(), buffer.size());
  std::string list(buffer.data());
  for (size_t start = 0; start < list.size();) {
    size_t end = std::min(list.find(',', start), list.size());
    std::string name = list.substr(start, end - start);
    calls[name] = count(name.c_str());
    start = end + 1;
  }
  return calls;
}

/// The driver entry points one call uses, "name count, ..." ("-" with the
/// real driver).
std::string entriesPerCall(const std::function<void()> &call) {
  std::map<std::string, int64_t> before = entryPointCalls();
  call();
  std::string entries;
  for (auto &[name, count] : entryPointCalls())
    if (int64_t used = count - before[name])
      entries +=
          (entries.empty() ? "" : ", ") + name + " " + std::to_string(used);
  return entries.empty() ? "-" : entries;
}

/// Median over `rounds` rounds of the mean host time of `perRound` calls,
/// in us. The GPU catches up between rounds, and a round is short enough
/// that its launches fit the driver's queue (a full queue would make
/// cuLaunchKernel wait for the GPU: GPU time, not host time).
double timeCall(int rounds, int perRound, const std::function<void()> &call,
                CUstream stream) {
  std::vector<double> times;
  for (int round = 0; round < rounds; ++round) {
    driver().streamSynchronize(stream);
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < perRound; ++i)
      call();
    auto stop = std::chrono::steady_clock::now();
    times.push_back(
        std::chrono::duration<double, std::micro>(stop - start).count() /
        perRound);
  }
  driver().streamSynchronize(stream);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
  CUstream stream = nullptr;
  if (driver().streamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuStreamCreate failed\n");
    return 1;
  }
  bool fake = fakeDriverSymbol("hisa_fake_cuda_entry_calls") != nullptr;

  struct Row {
    const char *what;
    int perRound; ///< calls a round: their launches fit the driver's queue
    std::function<void()> call;
  };
  std::vector<Row> rows;

  // hisa_topk [64, 1024], k = 64 (the sixth session's host probe shape).
  const int64_t rowsTopk = 64, columns = 1024, k = 64;
  auto *x = static_cast<float *>(deviceBuffer(rowsTopk * columns * 4));
  auto *topkOut = static_cast<int32_t *>(deviceBuffer(rowsTopk * k * 4));
  rows.push_back({"hisa_topk [64, 1024], k = 64", 64, [&] {
                    check(hisa_topk(x, nullptr, nullptr, topkOut, rowsTopk,
                                    columns, k, 0, stream),
                          "hisa_topk");
                  }});

  // hisa_hisa_indexer, M = N = 1024, H = 64, D = 128.
  const int64_t m = 1024, n = 1024, heads = 64, dim = 128, kb = 128,
                blockTopk = 16, topkTokens = 256;
  void *q = deviceBuffer(m * heads * dim), *kKeys = deviceBuffer(n * dim);
  auto *kScale = static_cast<float *>(deviceBuffer(n * 4));
  auto *weights = static_cast<float *>(deviceBuffer(m * heads * 4));
  auto *ks = static_cast<int32_t *>(deviceBuffer(m * 4));
  auto *ke = static_cast<int32_t *>(deviceBuffer(m * 4));
  auto *indexerOut = static_cast<int32_t *>(deviceBuffer(m * topkTokens * 4));
  uint64_t indexerBytes = 0;
  check(hisa_hisa_indexer_workspace_size(m, n, heads, dim, kb, blockTopk,
                                         topkTokens, &indexerBytes),
        "hisa_hisa_indexer_workspace_size");
  void *indexerWorkspace = deviceBuffer(indexerBytes);
  rows.push_back(
      {"hisa_hisa_indexer M = N = 1024", 32, [&] {
         check(hisa_hisa_indexer(q, kKeys, kScale, weights, ks, ke, indexerOut,
                                 m, n, heads, dim, kb, blockTopk, topkTokens,
                                 indexerWorkspace, indexerBytes, stream),
               "hisa_hisa_indexer");
       }});

  // The same with the device-pointer queries off, as the C++ torch kernels
  // (python/csrc/TorchOps.cpp) and the ctypes binding call it.
  rows.push_back(
      {"hisa_hisa_indexer M = N = 1024, pointer checks off", 32, [&] {
         int previous = hisa_set_device_pointer_checks(0);
         check(hisa_hisa_indexer(q, kKeys, kScale, weights, ks, ke, indexerOut,
                                 m, n, heads, dim, kb, blockTopk, topkTokens,
                                 indexerWorkspace, indexerBytes, stream),
               "hisa_hisa_indexer");
         hisa_set_device_pointer_checks(previous);
       }});

  // hisa_sparse_attn prefill-shaped, B = 1, S = 128, H = 64, K = 640.
  const int64_t seq = 128, attnHeads = 64, topk = 640, nkv = 4096;
  void *qa = deviceBuffer(seq * attnHeads * 512 * 2);
  void *kv = deviceBuffer(nkv * 512 * 2);
  auto *sink = static_cast<float *>(deviceBuffer(attnHeads * 4));
  auto *idx = static_cast<int32_t *>(deviceBuffer(seq * topk * 4));
  void *o = deviceBuffer(seq * attnHeads * 512 * 2);
  rows.push_back({"hisa_sparse_attn S = 128, H = 64, K = 640", 64, [&] {
                    check(hisa_sparse_attn(qa, kv, sink, idx, o, nullptr, 1,
                                           seq, attnHeads, nkv, topk, 0.044f,
                                           nullptr, 0, stream),
                          "hisa_sparse_attn");
                  }});

  // hisa_sparse_attn decode, B = 1 (split over blocks + combine: two
  // kernels, one graph launch).
  uint64_t splitBytes = 0;
  check(hisa_sparse_attn_workspace_size(1, 1, attnHeads, topk, &splitBytes),
        "hisa_sparse_attn_workspace_size");
  void *splitWorkspace = deviceBuffer(splitBytes);
  rows.push_back({"hisa_sparse_attn decode B = 1, H = 64, K = 640", 64, [&] {
                    check(hisa_sparse_attn(qa, kv, sink, idx, o, nullptr, 1, 1,
                                           attnHeads, nkv, topk, 0.044f,
                                           splitWorkspace, splitBytes, stream),
                          "hisa_sparse_attn");
                  }});

  // A V4 layer decode step (CSA, V4-Flash dims, B = 64), eager.
  hisa_v4_config config = hisa::v4::flashConfig(4);
  hisa_v4_weights w = {};
  constexpr size_t kWeightBytes = 64 << 20;
  for (const void **matrix :
       {&w.wq_a, &w.wq_b, &w.wkv, &w.wo_a, &w.wo_b, &w.c_wkv, &w.c_wgate,
        &w.i_wq, &w.i_weights, &w.i_wkv, &w.i_wgate})
    *matrix = deviceBuffer(kWeightBytes);
  for (const float **vector : {&w.q_norm, &w.kv_norm, &w.attn_sink, &w.c_ape,
                               &w.c_norm, &w.i_ape, &w.i_norm})
    *vector = static_cast<const float *>(deviceBuffer(1 << 20));
  const int64_t batch = 64, maxSeq = 4096;
  hisa_v4_attention *layer = nullptr;
  check(hisa_v4_attention_create(&config, &w, batch, maxSeq, batch, &layer),
        "hisa_v4_attention_create");
  void *xDecode = deviceBuffer(batch * config.dim * 2);
  void *outDecode = deviceBuffer(batch * config.dim * 2);
  check(hisa_v4_attention_set_length(layer, 1000, stream), "set_length");
  rows.push_back(
      {"V4 layer decode step (CSA, B = 64) + set_length", 8, [&] {
         check(hisa_v4_attention_decode(layer, xDecode, outDecode, stream),
               "hisa_v4_attention_decode");
         check(hisa_v4_attention_set_length(layer, 1000, stream), "set_length");
       }});

  std::printf("# Host time per call, %s (median of %d rounds of a few "
              "calls)\n\n",
              fake ? "fake driver: hisa's own code" : "real driver", rounds);
  std::printf("| call | host us / call | driver calls per call |\n");
  std::printf("| --- | ---: | --- |\n");
  // HISA_BENCH_ONLY=TEXT: only the rows whose name contains TEXT (for a
  // profile of one operator's calls).
  const char *only = std::getenv("HISA_BENCH_ONLY");
  for (Row &row : rows) {
    if (only && !std::strstr(row.what, only))
      continue;
    row.call(); // compiles and loads what the call needs
    driver().streamSynchronize(stream);
    std::string entries = entriesPerCall(row.call);
    double us = timeCall(rounds, row.perRound, row.call, stream);
    std::printf("| %s | %.2f | %s |\n", row.what, us, entries.c_str());
  }
  hisa_v4_attention_destroy(layer);
  return 0;
}
