// hbm_row_gather.cu -- how fast random 1 KiB rows come from HBM into shared
// memory, by the gather instruction used: the question behind decode
// attention at H = 64, which the forty-seventh session measured at 1.09x
// the time of its own gathers, and those at 71% of copy (H100).
//
// The access pattern is decode attention's (issue 11, B = 128, K = 640,
// Nkv = 65536): one block per token gathers the token's 640 rows of its
// batch's 64 MiB cache slice (uniform random rows, 1 KiB each) in 64-row
// tiles through STAGES shared-memory buffers, one block per SM (as the
// operator's kernel), with a trivial consumer (each thread adds two words
// of each tile). The cache is 8 GiB and every launch uses another index
// set, so L2 holds no row of a launch from the previous one.
//
// Variants (each checked: a block's sum of the words it read against the
// host's):
//   cp.async     128 threads, 16-byte cp.async.cg pieces (the DSL's gather
//                lowering): 32 pieces a thread a tile, wait_group per tile
//   bulk         one warp issues one cp.async.bulk (TMA, 1 KiB) per row,
//                completing on the stage's mbarrier (expect_tx 64 KiB)
//   ldg          no shared memory: 128 threads load their 32 pieces of a
//                tile into registers (ld.global.nc.v4), one tile in flight
//   empty        the launch alone (same grid and shared memory, no rows)
// and the device-to-device copy of 2 GiB as the ceiling. Each is timed
// alone (one launch between two events) and back to back (eight launches
// on eight index sets, per launch, as the benchmarks time kernels).
//
// First run (fiftieth session's version, H100, one launch alone): the three
// instructions within 3% of each other at every size; one wave (128 x 1)
// 76-78% of copy, 128 x 8 tokens 98-101%.
//
// Build (repo root): python/bench/probes/build.sh
// Run   (repo root): python/bench/probes/hbm_row_gather
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <vector>

#include "probe_common.cuh"

constexpr int kRowBytes = 1024;
constexpr int kRowWords = kRowBytes / 4;
constexpr int kTileRows = 64;
constexpr int kTileBytes = kTileRows * kRowBytes; // 64 KiB
constexpr int kRowsPerToken = 640;                // K
constexpr int kTiles = kRowsPerToken / kTileRows; // 10
constexpr int64_t kRowsPerBatch = 65536;          // Nkv
constexpr int kBatches = 128;                     // B
constexpr int kThreads = 128;
constexpr int kPiecesPerRow = kRowBytes / 16;                // 64
constexpr int kPiecesPerThread = kTileBytes / 16 / kThreads; // 32
constexpr int kSets = 8; // index sets, rotated
constexpr int kWarm = 2, kRuns = 9;

/// Word w of cache row r.
__host__ __device__ inline uint32_t cacheWord(uint64_t row, uint32_t w) {
  return hash32(uint32_t(row) * 2654435761u + w);
}

__global__ void fillCache(uint32_t *cache, uint64_t words) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < words;
       i += uint64_t(gridDim.x) * blockDim.x)
    cache[i] = cacheWord(i / kRowWords, uint32_t(i % kRowWords));
}

/// The two words thread t adds of tile row t % 64.
__host__ __device__ inline uint32_t wordOf(int t, int which) {
  return uint32_t((t / kTileRows) * 97 + which * 131) % kRowWords;
}

__device__ inline uint32_t consume(const uint8_t *tile, int t) {
  const uint32_t *row =
      reinterpret_cast<const uint32_t *>(tile + (t % kTileRows) * kRowBytes);
  return row[wordOf(t, 0)] + row[wordOf(t, 1)];
}

__device__ inline uint32_t sharedAddress(const void *p) {
  return uint32_t(__cvta_generic_to_shared(p));
}

/// The token's row numbers (in its batch's slice) into shared memory.
__device__ inline void loadRows(int *rows, const int *indices, int token) {
  for (int i = threadIdx.x; i < kRowsPerToken; i += kThreads)
    rows[i] = indices[int64_t(token) * kRowsPerToken + i];
}

/// The first cache row of the token's batch.
__device__ inline int64_t batchBase(int token, int tokensPerBatch) {
  return int64_t(token / tokensPerBatch) * kRowsPerBatch;
}

template <int STAGES>
__global__ void __launch_bounds__(kThreads, 1)
    gatherCpAsync(const uint8_t *cache, const int *indices, int tokensPerBatch,
                  uint32_t *sums) {
  extern __shared__ __align__(128) uint8_t smem[];
  int *rows = reinterpret_cast<int *>(smem + STAGES * kTileBytes);
  int token = blockIdx.x, t = threadIdx.x;
  int64_t base = batchBase(token, tokensPerBatch);
  loadRows(rows, indices, token);
  __syncthreads();
  auto issue = [&](int tile) {
    uint8_t *stage = smem + (tile % STAGES) * kTileBytes;
    for (int p = 0; p < kPiecesPerThread; ++p) {
      int piece = t + p * kThreads, r = piece / kPiecesPerRow,
          c = piece % kPiecesPerRow;
      const uint8_t *src =
          cache + (base + rows[tile * kTileRows + r]) * kRowBytes + c * 16;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(
                       sharedAddress(stage + r * kRowBytes + c * 16)),
                   "l"(src));
    }
    asm volatile("cp.async.commit_group;");
  };
  for (int tile = 0; tile < STAGES - 1; ++tile)
    issue(tile);
  uint32_t sum = 0;
  for (int tile = 0; tile < kTiles; ++tile) {
    if (tile + STAGES - 1 < kTiles)
      issue(tile + STAGES - 1);
    else
      asm volatile("cp.async.commit_group;");
    asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 1));
    __syncthreads();
    sum += consume(smem + (tile % STAGES) * kTileBytes, t);
    __syncthreads();
  }
  atomicAdd(&sums[token], sum);
}

__device__ inline void waitParity(uint32_t bar, uint32_t parity) {
  asm volatile("{\n.reg .pred p;\nwait:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               "@!p bra wait;\n}" ::"r"(bar),
               "r"(parity));
}

template <int STAGES>
__global__ void __launch_bounds__(kThreads, 1)
    gatherBulk(const uint8_t *cache, const int *indices, int tokensPerBatch,
               uint32_t *sums) {
  extern __shared__ __align__(128) uint8_t smem[];
  int *rows = reinterpret_cast<int *>(smem + STAGES * kTileBytes);
  uint64_t *bars = reinterpret_cast<uint64_t *>(rows + kRowsPerToken);
  int token = blockIdx.x, t = threadIdx.x;
  int64_t base = batchBase(token, tokensPerBatch);
  loadRows(rows, indices, token);
  if (t < STAGES)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(
        sharedAddress(&bars[t])));
  asm volatile("fence.mbarrier_init.release.cluster;");
  __syncthreads();
  // Warp 0 issues: lane 0 arms the stage's barrier, each lane two rows.
  auto issue = [&](int tile) {
    int stage = tile % STAGES;
    uint32_t bar = sharedAddress(&bars[stage]);
    if (t == 0)
      asm volatile(
          "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar),
          "r"(kTileBytes));
    __syncwarp();
    for (int r = t; r < kTileRows; r += 32) {
      const uint8_t *src =
          cache + (base + rows[tile * kTileRows + r]) * kRowBytes;
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_"
                   "tx::bytes [%0], [%1], %2, [%3];" ::"r"(sharedAddress(
                       smem + stage * kTileBytes + r * kRowBytes)),
                   "l"(src), "r"(kRowBytes), "r"(bar));
    }
  };
  if (t < 32)
    for (int tile = 0; tile < STAGES - 1 && tile < kTiles; ++tile)
      issue(tile);
  uint32_t sum = 0;
  for (int tile = 0; tile < kTiles; ++tile) {
    if (t < 32 && tile + STAGES - 1 < kTiles)
      issue(tile + STAGES - 1);
    waitParity(sharedAddress(&bars[tile % STAGES]), (tile / STAGES) & 1);
    sum += consume(smem + (tile % STAGES) * kTileBytes, t);
    // The stage is refilled STAGES - 1 tiles later, after every thread
    // read it.
    __syncthreads();
  }
  atomicAdd(&sums[token], sum);
}

__global__ void __launch_bounds__(kThreads, 1)
    gatherLdg(const uint8_t *cache, const int *indices, int tokensPerBatch,
              uint32_t *sums) {
  __shared__ int rows[kRowsPerToken];
  int token = blockIdx.x, t = threadIdx.x;
  int64_t base = batchBase(token, tokensPerBatch);
  loadRows(rows, indices, token);
  __syncthreads();
  // Thread t's pieces: rows 2p + t / kPiecesPerRow, 16-byte column
  // t % kPiecesPerRow.
  uint32_t sum = 0;
  for (int tile = 0; tile < kTiles; ++tile) {
    uint4 v[kPiecesPerThread];
#pragma unroll
    for (int p = 0; p < kPiecesPerThread; ++p) {
      int piece = t + p * kThreads, r = piece / kPiecesPerRow,
          c = piece % kPiecesPerRow;
      v[p] = __ldg(reinterpret_cast<const uint4 *>(
          cache + (base + rows[tile * kTileRows + r]) * kRowBytes + c * 16));
    }
#pragma unroll
    for (int p = 0; p < kPiecesPerThread; ++p)
      sum += v[p].x ^ v[p].y ^ v[p].z ^ v[p].w;
  }
  // (Not the other variants' words: checked as "ran", not by value.)
  atomicAdd(&sums[token], sum | 1u);
}

/// Launch cost alone: the same grid and shared memory, no rows read.
__global__ void __launch_bounds__(kThreads, 1)
    emptyLaunch(const uint8_t *, const int *, int, uint32_t *sums) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && sums == nullptr)
    __trap();
}

using Kernel = void (*)(const uint8_t *, const int *, int, uint32_t *);

int main() {
  int device = 0;
  CK(cudaSetDevice(device));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, device));
  printf("== hbm_row_gather on %s (%d SMs, L2 %d MiB)\n", prop.name,
         prop.multiProcessorCount, prop.l2CacheSize >> 20);

  uint64_t cacheRows = uint64_t(kBatches) * kRowsPerBatch;
  uint64_t cacheBytes = cacheRows * kRowBytes; // 8 GiB
  uint8_t *cache;
  CK(cudaMalloc(&cache, cacheBytes));
  fillCache<<<4 * prop.multiProcessorCount, 512>>>(
      reinterpret_cast<uint32_t *>(cache), cacheBytes / 4);
  CK(cudaGetLastError());

  cudaEvent_t start, stop;
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&stop));

  // The ceiling: a 2 GiB device-to-device copy.
  uint64_t copyBytes = uint64_t(2) << 30;
  uint8_t *copyDst;
  CK(cudaMalloc(&copyDst, copyBytes));
  std::vector<float> copyMs;
  for (int i = 0; i < kWarm + kRuns; ++i) {
    CK(cudaEventRecord(start));
    CK(cudaMemcpyAsync(copyDst, cache, copyBytes, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(stop));
    CK(cudaEventSynchronize(stop));
    float ms;
    CK(cudaEventElapsedTime(&ms, start, stop));
    if (i >= kWarm)
      copyMs.push_back(ms);
  }
  CK(cudaFree(copyDst));
  std::sort(copyMs.begin(), copyMs.end());
  double copyGBs = 2.0 * copyBytes / (copyMs[kRuns / 2] * 1e-3) / 1e9;
  printf("copy (read + write) %.0f GB/s\n\n", copyGBs);

  struct Variant {
    const char *name;
    Kernel kernel;
    int stages;
    bool checked;
  };
  Variant variants[] = {
      {"cp.async 16 B, 2 stages", gatherCpAsync<2>, 2, true},
      {"cp.async 16 B, 3 stages", gatherCpAsync<3>, 3, true},
      {"bulk 1 KiB rows, 2 stages", gatherBulk<2>, 2, true},
      {"bulk 1 KiB rows, 3 stages", gatherBulk<3>, 3, true},
      {"ldg to registers, 1 tile", gatherLdg, 0, false},
      {"empty launch (2-stage shared memory)", emptyLaunch, 2, false},
  };
  // "alone": one launch between two events (what the fiftieth session's
  // version printed; includes the launch's own latency). "back-to-back":
  // kSets launches on kSets index sets between two events, per launch, as
  // the benchmarks time kernels (the next launch queued behind the last).
  printf("| variant | tokens (B x S) | us alone | us back-to-back | GB/s of "
         "rows (back-to-back) | %% of copy | check |\n"
         "| --- | ---: | ---: | ---: | ---: | ---: | :-: |\n");
  int failures = 0;
  for (int perBatch : {1, 2, 8}) {
    int tokens = kBatches * perBatch;
    // kSets index sets of uniform rows in [0, Nkv) (the batch's offset is
    // the kernel's).
    std::vector<int> host(size_t(kSets) * tokens * kRowsPerToken);
    for (size_t i = 0; i < host.size(); ++i)
      host[i] =
          int(hash32(uint32_t(i) * 7919u + uint32_t(perBatch)) % kRowsPerBatch);
    int *indices;
    uint32_t *sums;
    CK(cudaMalloc(&indices, host.size() * sizeof(int)));
    CK(cudaMalloc(&sums, tokens * sizeof(uint32_t)));
    CK(cudaMemcpy(indices, host.data(), host.size() * sizeof(int),
                  cudaMemcpyHostToDevice));
    // Expected sums of set 0.
    std::vector<uint32_t> expected(tokens, 0);
    for (int token = 0; token < tokens; ++token) {
      uint64_t base = uint64_t(token / perBatch) * kRowsPerBatch;
      for (int tile = 0; tile < kTiles; ++tile)
        for (int t = 0; t < kThreads; ++t) {
          uint64_t row = base + host[size_t(token) * kRowsPerToken +
                                     tile * kTileRows + t % kTileRows];
          expected[token] +=
              cacheWord(row, wordOf(t, 0)) + cacheWord(row, wordOf(t, 1));
        }
    }
    for (const Variant &v : variants) {
      int shared = v.stages * kTileBytes + kRowsPerToken * 4 + 8 * 4;
      if (v.stages)
        CK(cudaFuncSetAttribute(
            v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
      else
        shared = 0;
      CK(cudaMemset(sums, 0, tokens * sizeof(uint32_t)));
      v.kernel<<<tokens, kThreads, shared>>>(cache, indices, perBatch, sums);
      CK(cudaGetLastError());
      std::vector<uint32_t> got(tokens);
      CK(cudaMemcpy(got.data(), sums, tokens * sizeof(uint32_t),
                    cudaMemcpyDeviceToHost));
      bool ok = true;
      bool empty = v.kernel == emptyLaunch;
      for (int token = 0; token < tokens && !empty; ++token)
        ok &= v.checked ? got[token] == expected[token] : got[token] != 0;
      failures += !ok;
      std::vector<float> ms;
      for (int i = 0; i < kWarm + kRuns; ++i) {
        const int *set = indices + size_t(i % kSets) * tokens * kRowsPerToken;
        CK(cudaEventRecord(start));
        v.kernel<<<tokens, kThreads, shared>>>(cache, set, perBatch, sums);
        CK(cudaEventRecord(stop));
        CK(cudaEventSynchronize(stop));
        float t;
        CK(cudaEventElapsedTime(&t, start, stop));
        if (i >= kWarm)
          ms.push_back(t);
      }
      std::vector<float> batchMs;
      for (int i = 0; i < kWarm + kRuns; ++i) {
        CK(cudaEventRecord(start));
        for (int s = 0; s < kSets; ++s)
          v.kernel<<<tokens, kThreads, shared>>>(
              cache, indices + size_t(s) * tokens * kRowsPerToken, perBatch,
              sums);
        CK(cudaEventRecord(stop));
        CK(cudaEventSynchronize(stop));
        float t;
        CK(cudaEventElapsedTime(&t, start, stop));
        if (i >= kWarm)
          batchMs.push_back(t / kSets);
      }
      CK(cudaGetLastError());
      std::sort(ms.begin(), ms.end());
      std::sort(batchMs.begin(), batchMs.end());
      double us = ms[kRuns / 2] * 1e3, batchUs = batchMs[kRuns / 2] * 1e3;
      double bytes = double(tokens) * kRowsPerToken * kRowBytes;
      double gbs = bytes / (batchUs * 1e-6) / 1e9;
      if (empty)
        printf("| %s | %d x %d | %.1f | %.1f | - | - | - |\n", v.name, kBatches,
               perBatch, us, batchUs);
      else
        printf("| %s | %d x %d | %.1f | %.1f | %.0f | %.0f%% | %s |\n", v.name,
               kBatches, perBatch, us, batchUs, gbs, 100.0 * gbs / copyGBs,
               ok ? (v.checked ? "ok" : "ran") : "FAIL");
    }
    CK(cudaFree(indices));
    CK(cudaFree(sums));
  }
  CK(cudaFree(cache));
  printf("\n%s\n", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
