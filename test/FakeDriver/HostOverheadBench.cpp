//===- HostOverheadBench.cpp - Host time per call, without a GPU ----------===//
//
// The host side of hisa's calls on the fake driver (FakeCuda.h), whose
// cuLaunchKernel only records: what the C ABI, the operators and the JIT
// runtime cost per call, before the real driver's launch (~2-3 us on the
// H200 machine) and before Python's binding. Prints a markdown table.
//
//   build/test/FakeDriver/HisaHostOverheadBench [calls]
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"

#include "hisa/Runtime/hisa_runtime.h"
#include "hisa/hisa.hpp"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace {

void *deviceBuffer(size_t bytes) {
  CUdeviceptr pointer = 0;
  if (cuMemAlloc(&pointer, bytes) != CUDA_SUCCESS) {
    std::fprintf(stderr, "fake cuMemAlloc failed\n");
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

/// Median over 5 rounds of the mean host time of `calls` calls, in us.
double timeCall(int calls, const std::function<void()> &call) {
  call(); // compiles and loads what the call needs
  std::vector<double> rounds;
  for (int round = 0; round < 5; ++round) {
    hisa::fake_cuda::resetCalls();
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i)
      call();
    auto stop = std::chrono::steady_clock::now();
    rounds.push_back(
        std::chrono::duration<double, std::micro>(stop - start).count() /
        calls);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

size_t launchesPerCall(const std::function<void()> &call) {
  hisa::fake_cuda::resetCalls();
  call();
  size_t launches = 0;
  for (const hisa::fake_cuda::Call &recorded : hisa::fake_cuda::calls())
    launches += recorded.kind == hisa::fake_cuda::Call::Launch;
  return launches;
}

} // namespace

int main(int argc, char **argv) {
  int calls = argc > 1 ? std::atoi(argv[1]) : 2000;
  CUstream stream = nullptr;
  cuStreamCreate(&stream, 0);

  struct Row {
    const char *what;
    std::function<void()> call;
  };
  std::vector<Row> rows;

  // hisa_topk [64, 1024], k = 64 (the sixth session's host probe shape).
  const int64_t rowsTopk = 64, columns = 1024, k = 64;
  auto *x = static_cast<float *>(deviceBuffer(rowsTopk * columns * 4));
  auto *topkOut = static_cast<int32_t *>(deviceBuffer(rowsTopk * k * 4));
  rows.push_back({"hisa_topk [64, 1024], k = 64", [&] {
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
      {"hisa_hisa_indexer M = N = 1024", [&] {
         check(hisa_hisa_indexer(q, kKeys, kScale, weights, ks, ke, indexerOut,
                                 m, n, heads, dim, kb, blockTopk, topkTokens,
                                 indexerWorkspace, indexerBytes, stream),
               "hisa_hisa_indexer");
       }});

  // hisa_sparse_attn prefill-shaped, B = 1, S = 128, H = 64, K = 640.
  const int64_t seq = 128, attnHeads = 64, topk = 640, nkv = 4096;
  void *qa = deviceBuffer(seq * attnHeads * 512 * 2);
  void *kv = deviceBuffer(nkv * 512 * 2);
  auto *sink = static_cast<float *>(deviceBuffer(attnHeads * 4));
  auto *idx = static_cast<int32_t *>(deviceBuffer(seq * topk * 4));
  void *o = deviceBuffer(seq * attnHeads * 512 * 2);
  rows.push_back({"hisa_sparse_attn S = 128, H = 64, K = 640", [&] {
                    check(hisa_sparse_attn(qa, kv, sink, idx, o, nullptr, 1,
                                           seq, attnHeads, nkv, topk, 0.044f,
                                           nullptr, 0, stream),
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
      {"V4 layer decode step (CSA, B = 64)", [&] {
         check(hisa_v4_attention_decode(layer, xDecode, outDecode, stream),
               "hisa_v4_attention_decode");
         check(hisa_v4_attention_set_length(layer, 1000, stream), "set_length");
       }});

  std::printf("# Host time per call on the fake driver (%d calls, median of 5 "
              "rounds)\n\n",
              calls);
  std::printf("| call | launches | host us / call | us / launch | driver "
              "calls per call |\n");
  std::printf("| --- | ---: | ---: | ---: | --- |\n");
  for (Row &row : rows) {
    size_t launches = launchesPerCall(row.call);
    // The driver entry points one call uses (what the real driver charges
    // for beyond this table's time).
    std::map<std::string, int64_t> before = hisa::fake_cuda::entryPointCalls();
    row.call();
    std::string entries;
    for (auto &[name, count] : hisa::fake_cuda::entryPointCalls()) {
      int64_t used = count - before[name];
      if (used)
        entries +=
            (entries.empty() ? "" : ", ") + name + " " + std::to_string(used);
    }
    double us = timeCall(calls, row.call);
    std::printf("| %s | %zu | %.2f | %.2f | %s |\n", row.what, launches, us,
                launches ? us / double(launches) : 0.0, entries.c_str());
  }
  hisa_v4_attention_destroy(layer);
  return 0;
}
