//===- OperatorPlansTest.cpp - What the operators launch, without a GPU ---===//
//
// The C ABI operators on the fake driver (FakeCuda.h): which kernels a call
// launches, in what order, on the caller's stream, with which grids, and
// that none allocates or blocks (so a CUDA graph can capture it). The GPU
// tests check the numbers; these check the plans, in CI.
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"

#include "hisa/Ops/Operators.h"
#include "hisa/Ops/V4Operators.h"
#include "hisa/Runtime/hisa_runtime.h"

#include "gtest/gtest.h"

#include <cuda.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

using hisa::fake_cuda::Call;
using hisa::fake_cuda::deviceBuffer;

namespace {

CUstream someStream() {
  CUstream stream = nullptr;
  EXPECT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  return stream;
}

/// The launches among the calls recorded since the last reset, after
/// checking that every call ran on `stream` and none blocked the host.
std::vector<Call> launchesOn(CUstream stream) {
  std::vector<Call> launches;
  for (const Call &call : hisa::fake_cuda::calls()) {
    EXPECT_EQ(call.stream, reinterpret_cast<uintptr_t>(stream))
        << call.name << " is not on the caller's stream";
    EXPECT_NE(call.kind, Call::Synchronizing) << call.name << " blocks";
    if (call.kind == Call::Launch)
      launches.push_back(call);
  }
  return launches;
}

std::vector<std::string> names(const std::vector<Call> &launches) {
  std::vector<std::string> result;
  for (const Call &call : launches)
    result.push_back(call.name);
  return result;
}

/// One hisa_indexer call's shape and buffers (fake device memory), on a
/// stream of its own.
struct IndexerCall {
  int64_t m, n, heads, dim, kb, blockTopk, topkTokens;
  uint64_t bytes = 0;
  void *q = nullptr, *k = nullptr, *workspace = nullptr;
  float *scale = nullptr, *weights = nullptr;
  int32_t *ks = nullptr, *ke = nullptr, *out = nullptr;
  CUstream stream = nullptr;

  /// Queries the workspace size and allocates every buffer; the status of
  /// the query.
  int prepare() {
    int status = hisa_hisa_indexer_workspace_size(
        m, n, heads, dim, kb, blockTopk, topkTokens, &bytes);
    q = deviceBuffer(m * heads * dim);
    k = deviceBuffer(n * dim);
    scale = static_cast<float *>(deviceBuffer(n * 4));
    weights = static_cast<float *>(deviceBuffer(m * heads * 4));
    ks = static_cast<int32_t *>(deviceBuffer(m * 4));
    ke = static_cast<int32_t *>(deviceBuffer(m * 4));
    out = static_cast<int32_t *>(deviceBuffer(m * topkTokens * 4));
    workspace = deviceBuffer(bytes);
    stream = someStream();
    return status;
  }
  int run(uint64_t workspaceBytes) const {
    return hisa_hisa_indexer(q, k, scale, weights, ks, ke, out, m, n, heads,
                             dim, kb, blockTopk, topkTokens, workspace,
                             workspaceBytes, stream);
  }
};

TEST(OperatorPlans, HisaIndexerIsThreeLaunchesInItsWorkspace) {
  IndexerCall indexer{1000, 3000, 64, 128, 128, 16, 256};
  ASSERT_EQ(indexer.prepare(), HISA_OK) << hisa_last_error();
  const int64_t m = indexer.m;
  const uint64_t bytes = indexer.bytes;
  ASSERT_EQ(indexer.run(bytes), HISA_OK) << hisa_last_error(); // compiles
  int64_t allocations = hisa::fake_cuda::counters().allocations;
  hisa::fake_cuda::resetCalls();
  ASSERT_EQ(indexer.run(bytes), HISA_OK) << hisa_last_error();
  std::vector<Call> launches = launchesOn(indexer.stream);
  EXPECT_EQ(names(launches), (std::vector<std::string>{
                                 "fp8_block_mean_pooling", "pool_topk_blocks",
                                 "block_sparse_topk_tokens"}));
  EXPECT_EQ(hisa::fake_cuda::counters().allocations, allocations);
  // Stage 2: one block per query.
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[2].grid[0] * launches[2].grid[1] * launches[2].grid[2],
            unsigned(m));
  // A workspace one byte short is refused, naming the size it needs.
  EXPECT_EQ(indexer.run(bytes - 1), HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hisa_last_error()).find(std::to_string(bytes)),
            std::string::npos)
      << hisa_last_error();
}

TEST(OperatorPlans, HisaIndexerStageTwoWarpSpecializedAtThreeBlocksPerSm) {
  // 64 x 128 key slots leave three stage-2 blocks per SM: at H = 64 the
  // warp-specialized variant (a producer warpgroup beside the 128
  // consumers), at H = 128 (too few registers beside a producer) the plain
  // kernel.
  const int64_t m = 100;
  auto stageTwo = [&](int64_t heads) {
    IndexerCall indexer{m, 9000, heads, 128, 128, 64, 2048};
    EXPECT_EQ(indexer.prepare(), HISA_OK) << hisa_last_error();
    EXPECT_EQ(indexer.run(indexer.bytes), HISA_OK) << hisa_last_error();
    hisa::fake_cuda::resetCalls();
    EXPECT_EQ(indexer.run(indexer.bytes), HISA_OK) << hisa_last_error();
    std::vector<Call> launches = launchesOn(indexer.stream);
    return launches.empty() ? Call{} : launches.back();
  };
  Call h64 = stageTwo(64);
  EXPECT_EQ(h64.name, "block_sparse_topk_tokens_ws");
  EXPECT_EQ(h64.block[0], 256u);
  EXPECT_EQ(h64.grid[0], unsigned(m));
  // With 128-row key tiles, whose plan (75920 bytes) keeps three blocks
  // per SM (64-row tiles: 59024).
  EXPECT_EQ(h64.sharedBytes, 75920u);
  Call h128 = stageTwo(128);
  EXPECT_EQ(h128.name, "block_sparse_topk_tokens");
  EXPECT_EQ(h128.block[0], 128u);
}

TEST(OperatorPlans,
     HisaIndexerStageTwoKeepsNarrowTilesWhereWideOnesCostABlock) {
  // H = 16, D = 64, kb = 128, T = 110: three blocks per SM with 64-row key
  // tiles (67728 bytes), but the 128-row specialization plans 76944 bytes,
  // more than the 76800 a third block leaves: the operator keeps 64 rows.
  IndexerCall indexer{100, 16000, 16, 64, 128, 110, 2048};
  ASSERT_EQ(indexer.prepare(), HISA_OK) << hisa_last_error();
  ASSERT_EQ(indexer.run(indexer.bytes), HISA_OK) << hisa_last_error();
  hisa::fake_cuda::resetCalls();
  ASSERT_EQ(indexer.run(indexer.bytes), HISA_OK) << hisa_last_error();
  std::vector<Call> launches = launchesOn(indexer.stream);
  ASSERT_FALSE(launches.empty());
  EXPECT_EQ(launches.back().name, "block_sparse_topk_tokens_ws");
  EXPECT_EQ(launches.back().sharedBytes, 67728u);
}

/// Device buffers of a sparse attention call over `tokens` tokens (kv rows
/// for `batch` sequences).
struct SparseAttnBuffers {
  SparseAttnBuffers(int64_t tokens, int64_t batch, int64_t heads, int64_t topk,
                    int64_t nkv)
      : q(deviceBuffer(tokens * heads * 512 * 2)),
        kv(deviceBuffer(batch * nkv * 512 * 2)),
        sink(static_cast<float *>(deviceBuffer(heads * 4))),
        idx(static_cast<int32_t *>(deviceBuffer(tokens * topk * 4))),
        o(deviceBuffer(tokens * heads * 512 * 2)) {}
  void *q, *kv;
  float *sink;
  int32_t *idx;
  void *o;
};

/// The launches of a decode-shaped hisa_sparse_attn call (one token per
/// sequence), the second of two identical calls (the first compiles).
std::vector<Call> sparseAttnDecodePlan(int64_t batch, int64_t heads,
                                       int64_t topk, int64_t nkv) {
  CUstream stream = someStream();
  uint64_t bytes = 0;
  EXPECT_EQ(hisa_sparse_attn_workspace_size(batch, 1, heads, topk, &bytes),
            HISA_OK)
      << hisa_last_error();
  void *q = deviceBuffer(batch * heads * 512 * 2);
  void *kv = deviceBuffer(batch * nkv * 512 * 2);
  auto *sink = static_cast<float *>(deviceBuffer(heads * 4));
  auto *idx = static_cast<int32_t *>(deviceBuffer(batch * topk * 4));
  void *o = deviceBuffer(batch * heads * 512 * 2);
  void *workspace = bytes ? deviceBuffer(bytes) : nullptr;
  auto call = [&] {
    return hisa_sparse_attn(q, kv, sink, idx, o, nullptr, batch, 1, heads, nkv,
                            topk, 0.044f, workspace, bytes, stream);
  };
  EXPECT_EQ(call(), HISA_OK) << hisa_last_error();
  hisa::fake_cuda::resetCalls();
  EXPECT_EQ(call(), HISA_OK) << hisa_last_error();
  return launchesOn(stream);
}

TEST(OperatorPlans, SparseAttnSplitsFewTokensAndCombines) {
  // One token: its 10 index tiles split over blocks, then combined.
  std::vector<Call> few = sparseAttnDecodePlan(1, 64, 640, 4096);
  ASSERT_EQ(names(few), (std::vector<std::string>{"sparse_attn_ws",
                                                  "sparse_attn_combine"}));
  EXPECT_EQ(few[0].grid[0], 10u);
  // 128 tokens fill the GPU: one warp-specialized launch, a block each.
  std::vector<Call> many = sparseAttnDecodePlan(128, 64, 640, 4096);
  ASSERT_EQ(names(many), (std::vector<std::string>{"sparse_attn_ws"}));
  EXPECT_EQ(many[0].grid[0], 128u);
  EXPECT_EQ(many[0].block[0], 384u); // two consumer warpgroups + a producer
}

TEST(OperatorPlans, SparseAttnPairsBlocksInClustersFromAThirdOfTheSms) {
  // 45 to 66 (token, 64 heads) blocks: each token's index tiles go to a
  // cluster of two blocks that merge through distributed shared memory:
  // one launch of twice the blocks, no workspace, no combine.
  for (int64_t batch : {45, 63, 64, 66}) {
    uint64_t bytes = 1;
    ASSERT_EQ(hisa_sparse_attn_workspace_size(batch, 1, 64, 640, &bytes),
              HISA_OK);
    EXPECT_EQ(bytes, 0u) << batch;
    std::vector<Call> paired = sparseAttnDecodePlan(batch, 64, 640, 4096);
    ASSERT_EQ(names(paired), (std::vector<std::string>{"sparse_attn_ws"}))
        << batch;
    EXPECT_EQ(paired[0].grid[0], static_cast<unsigned>(2 * batch));
  }
  // One index tile has nothing to split; 67 blocks and more run whole;
  // at 44 blocks and below, three or more splits and the combine.
  EXPECT_EQ(sparseAttnDecodePlan(64, 64, 64, 1024)[0].grid[0], 64u);
  EXPECT_EQ(sparseAttnDecodePlan(67, 64, 640, 4096)[0].grid[0], 67u);
  std::vector<Call> split = sparseAttnDecodePlan(44, 64, 640, 4096);
  EXPECT_EQ(names(split), (std::vector<std::string>{"sparse_attn_ws",
                                                    "sparse_attn_combine"}));
  EXPECT_EQ(split[0].grid[0], 44u * 3);
}

/// For a test's scope: device `device` reports `count` SMs.
struct ScopedSmCount {
  int device;
  ScopedSmCount(int device, int count) : device(device) {
    hisa::fake_cuda::setMultiprocessorCount(device, count);
  }
  ~ScopedSmCount() { hisa::fake_cuda::setMultiprocessorCount(device, 132); }
};

/// linearSplits' answer, or -1 with the error printed.
int64_t splitsOf(int64_t m, int64_t n, int64_t k, int64_t groups) {
  llvm::Expected<int64_t> splits = hisa::ops::linearSplits(m, n, k, groups);
  if (!splits) {
    ADD_FAILURE() << llvm::toString(splits.takeError());
    return -1;
  }
  return *splits;
}

TEST(OperatorPlans, SplitKWhereWholeKTilesLeaveTheGpuIdle) {
  // Decode-sized m, few output tiles: split until about 128 blocks (of 132
  // SMs), or until the f32 partial sums reach a quarter of the weight
  // bytes, with splits that divide the k steps.
  EXPECT_EQ(splitsOf(64, 1024, 4096, 1), 8); // wq_a: 8 x 8, 2 of 8 MB
  EXPECT_EQ(splitsOf(64, 4096, 8192, 1), 4); // wo_b: 32 tiles x 4
  EXPECT_EQ(splitsOf(64, 512, 4096, 1), 8);  // wkv: 8 x 8, 1 of 4 MB
  EXPECT_EQ(splitsOf(2, 512, 256, 1), 2);    // 2 k steps
  EXPECT_EQ(splitsOf(64, 8192, 1024, 1), 1); // i_wq: 128 tiles
  // Whole k: many tiles, groups, prefill-sized m, one k step.
  EXPECT_EQ(splitsOf(64, 32768, 1024, 1), 1); // wq_b
  EXPECT_EQ(splitsOf(64, 1024, 4096, 8), 1);  // the grouped wo_a
  EXPECT_EQ(splitsOf(65, 1024, 4096, 1), 1);
  EXPECT_EQ(splitsOf(64, 1024, 128, 1), 1);
  EXPECT_EQ(splitsOf(0, 1024, 4096, 1), 1);
}

TEST(OperatorPlans, TopkClusterOfBlocksPerLongRowWhenRowsAreFewerThanSms) {
  // Rows of 16384 columns and more, no more rows than SMs (132): a cluster
  // of blocks per row, a block per 8192 columns up to 8; otherwise one
  // block per row.
  auto blocksPerRow = [](int64_t rows, int64_t columns) -> int64_t {
    CUstream stream = someStream();
    auto *x = static_cast<float *>(deviceBuffer(rows * columns * 4));
    auto *out = static_cast<int32_t *>(deviceBuffer(rows * 64 * 4));
    hisa::fake_cuda::resetCalls();
    if (hisa_topk(x, nullptr, nullptr, out, rows, columns, 64, 0, stream) !=
        HISA_OK) {
      ADD_FAILURE() << hisa_last_error();
      return -1;
    }
    std::vector<Call> launches = launchesOn(stream);
    if (launches.size() != 1u || launches[0].name != "topk_f32") {
      ADD_FAILURE() << launches.size() << " launches";
      return -1;
    }
    return launches[0].grid[0] / rows;
  };
  EXPECT_EQ(blocksPerRow(64, 131072), 8);
  EXPECT_EQ(blocksPerRow(3, 1 << 20), 8);
  EXPECT_EQ(blocksPerRow(132, 65536), 8);
  EXPECT_EQ(blocksPerRow(64, 32768), 4);
  EXPECT_EQ(blocksPerRow(64, 16384), 2);
  EXPECT_EQ(blocksPerRow(133, 131072), 1);
  EXPECT_EQ(blocksPerRow(64, 16383), 1);
}

TEST(OperatorPlans, AnSmCountTheDriverCannotGiveIsAnErrorNotAGuess) {
  // Device 0 reports 0 SMs (a failed attribute query): every plan that
  // scales with the SM count refuses with the driver's answer instead of
  // planning for 132. In a new thread: the answers are remembered per
  // thread and context.
  ScopedSmCount broken(0, 0);
  std::thread([] {
    auto refusedWithTheCount = [](int status, const char *what) {
      EXPECT_NE(status, HISA_OK) << what;
      EXPECT_NE(std::string(hisa_last_error()).find("reports 0 SMs"),
                std::string::npos)
          << what << ": " << hisa_last_error();
    };
    uint64_t bytes = 0;
    refusedWithTheCount(hisa_sparse_attn_workspace_size(1, 1, 64, 640, &bytes),
                        "sparse_attn_workspace_size");
    CUstream stream = someStream();
    void *q = deviceBuffer(64 * 512 * 2), *kv = deviceBuffer(4096 * 512 * 2);
    auto *sink = static_cast<float *>(deviceBuffer(64 * 4));
    auto *idx = static_cast<int32_t *>(deviceBuffer(640 * 4));
    void *o = deviceBuffer(64 * 512 * 2);
    hisa::fake_cuda::resetCalls();
    refusedWithTheCount(hisa_sparse_attn(q, kv, sink, idx, o, nullptr, 1, 1, 64,
                                         4096, 640, 0.044f, nullptr, 0, stream),
                        "sparse_attn");
    // Top-k of few long rows (the plan caches a row per block when the
    // rows fill at most two blocks per SM).
    auto *x = static_cast<float *>(deviceBuffer(64 * 16384 * 4));
    auto *out = static_cast<int32_t *>(deviceBuffer(64 * 64 * 4));
    refusedWithTheCount(
        hisa_topk(x, nullptr, nullptr, out, 64, 16384, 64, 0, stream), "topk");
    EXPECT_TRUE(launchesOn(stream).empty());
    llvm::Expected<int64_t> splits = hisa::ops::linearSplits(64, 1024, 4096, 1);
    ASSERT_FALSE(bool(splits));
    EXPECT_NE(llvm::toString(splits.takeError()).find("reports 0 SMs"),
              std::string::npos);
    // Plans that do not depend on the SM count still go ahead.
    EXPECT_EQ(hisa_topk(x, nullptr, nullptr, out, 64, 8192, 64, 0, stream),
              HISA_OK)
        << hisa_last_error();
  }).join();
}

TEST(OperatorPlans, SparseAttnPlansForTheCurrentDevicesSms) {
  // An H20 (78 SMs) as device 1 beside an H200: the same call plans for
  // the device whose context is current, and its workspace query agrees.
  hisa::fake_cuda::ScopedDevices devices(2);
  ScopedSmCount h20Sms(1, 78);
  CUcontext h200 = nullptr, h20 = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&h200, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&h20, 1), CUDA_SUCCESS);
  // 60 blocks: a pair of blocks per token on 132 SMs (120 blocks, one
  // wave); on 78 SMs that would be two waves, and 60 fill more than half of
  // them: one block per token.
  ASSERT_EQ(cuCtxSetCurrent(h200), CUDA_SUCCESS);
  EXPECT_EQ(sparseAttnDecodePlan(60, 64, 640, 4096)[0].grid[0], 120u);
  ASSERT_EQ(cuCtxSetCurrent(h20), CUDA_SUCCESS);
  EXPECT_EQ(sparseAttnDecodePlan(60, 64, 640, 4096)[0].grid[0], 60u);
  // 20 tokens: 132 / 20 = 6 splits on the H200, 78 / 20 = 3 on the H20,
  // each with the workspace its own query asked for.
  std::vector<Call> split = sparseAttnDecodePlan(20, 64, 640, 4096);
  ASSERT_EQ(names(split), (std::vector<std::string>{"sparse_attn_ws",
                                                    "sparse_attn_combine"}));
  EXPECT_EQ(split[0].grid[0], 20u * 3);
  EXPECT_EQ(split[0].device, 1);
  ASSERT_EQ(cuCtxSetCurrent(h200), CUDA_SUCCESS);
  EXPECT_EQ(sparseAttnDecodePlan(20, 64, 640, 4096)[0].grid[0], 20u * 6);
}

TEST(OperatorPlans, UseDeviceMakesItsPrimaryContextCurrentWithoutASync) {
  // What hisa's Python package does once per thread and device (it called
  // torch.cuda.synchronize before, which stalls every stream).
  hisa::fake_cuda::ScopedDevices devices(2);
  hisa::fake_cuda::resetCalls();
  ASSERT_EQ(hisa_use_device(1), HISA_OK) << hisa_last_error();
  CUdevice device = -1;
  ASSERT_EQ(cuCtxGetDevice(&device), CUDA_SUCCESS);
  EXPECT_EQ(device, 1);
  CUcontext primary = nullptr, current = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&primary, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, primary);
  for (const Call &call : hisa::fake_cuda::calls())
    EXPECT_NE(call.kind, Call::Synchronizing) << call.name;
  EXPECT_EQ(hisa_use_device(2), HISA_ERROR_CUDA);
  EXPECT_NE(std::string(hisa_last_error()).find("cuDeviceGet"),
            std::string::npos)
      << hisa_last_error();
  EXPECT_NE(hisa_use_device(-1), HISA_OK);
  ASSERT_EQ(hisa_use_device(0), HISA_OK) << hisa_last_error();
  ASSERT_EQ(cuCtxGetDevice(&device), CUDA_SUCCESS);
  EXPECT_EQ(device, 0);
}

TEST(OperatorPlans, SparseAttnFromAThreadWithoutAContextPlansForDeviceZero) {
  // A server thread that has not used CUDA yet: the size query (no
  // context) answers for 132 SMs, which covers any Hopper; the launch makes
  // device 0's context current, as it would anyway, and plans for its SMs
  // (an H20's 78: 3 splits of 20 tokens, within the queried workspace).
  ScopedSmCount h20Sms(0, 78);
  std::thread fresh([] {
    hisa::fake_cuda::clearCurrentContext();
    uint64_t bytes = 0;
    ASSERT_EQ(hisa_sparse_attn_workspace_size(20, 1, 64, 640, &bytes), HISA_OK)
        << hisa_last_error();
    uint64_t perSplit = 20 * 64 * (512 * 4 + 4);
    EXPECT_GE(bytes, 6 * perSplit); // the 132-SM plan's 6 splits
    void *q = deviceBuffer(20 * 64 * 512 * 2);
    void *kv = deviceBuffer(20 * 4096 * 512 * 2);
    auto *sink = static_cast<float *>(deviceBuffer(64 * 4));
    auto *idx = static_cast<int32_t *>(deviceBuffer(20 * 640 * 4));
    void *o = deviceBuffer(20 * 64 * 512 * 2);
    void *workspace = deviceBuffer(bytes);
    hisa::fake_cuda::clearCurrentContext();
    hisa::fake_cuda::resetCalls();
    ASSERT_EQ(hisa_sparse_attn(q, kv, sink, idx, o, nullptr, 20, 1, 64, 4096,
                               640, 0.044f, workspace, bytes, nullptr),
              HISA_OK)
        << hisa_last_error();
    std::vector<Call> launches;
    for (const Call &call : hisa::fake_cuda::calls())
      if (call.kind == Call::Launch)
        launches.push_back(call);
    ASSERT_EQ(names(launches), (std::vector<std::string>{
                                   "sparse_attn_ws", "sparse_attn_combine"}));
    EXPECT_EQ(launches[0].grid[0], 20u * 3);
  });
  fresh.join();
}

TEST(OperatorPlans, FirstCallOfASpecializationInACaptureIsRefused) {
  // Its first call compiles and loads the kernel: loading inside a stream
  // capture would break the capture, so the call says so instead. (In a
  // fresh context: the kernel is loaded nowhere there yet.)
  hisa::fake_cuda::ScopedDevices devices(2);
  hisa::fake_cuda::useFreshContext(1);
  CUstream stream = someStream();
  const int64_t n = 300, dim = 64, kb = 64;
  void *k = deviceBuffer(n * dim);
  auto *scale = static_cast<float *>(deviceBuffer(n * 4));
  void *blocked = deviceBuffer(5 * dim);
  auto *blockedScale = static_cast<float *>(deviceBuffer(5 * 4));
  hisa::fake_cuda::setStreamCapturing(stream, true);
  EXPECT_EQ(hisa_fp8_block_mean_pooling(k, scale, blocked, blockedScale, n, dim,
                                        kb, stream),
            HISA_ERROR_INVALID_ARGUMENT);
  std::string message = hisa_last_error();
  EXPECT_NE(message.find("captured"), std::string::npos) << message;
  hisa::fake_cuda::setStreamCapturing(stream, false);
  // Warmed up outside the capture, the call is captured like any other.
  ASSERT_EQ(hisa_fp8_block_mean_pooling(k, scale, blocked, blockedScale, n, dim,
                                        kb, stream),
            HISA_OK)
      << hisa_last_error();
  hisa::fake_cuda::setStreamCapturing(stream, true);
  EXPECT_EQ(hisa_fp8_block_mean_pooling(k, scale, blocked, blockedScale, n, dim,
                                        kb, stream),
            HISA_OK)
      << hisa_last_error();
  hisa::fake_cuda::setStreamCapturing(stream, false);
}

TEST(OperatorPlans, SparseAttnDoesTheLayersRopeInItsOwnLaunch) {
  // The V4 layer's RoPE (ops::LayerRope): q's norm and RoPE in the
  // prologue, the output's inverse RoPE in the epilogue: one launch, and
  // sparse_attn_ws even where FlashMLA's schedule (no query norm) would
  // run; split decode rotates in its combine.
  const int64_t seqLen = 1024, heads = 128, topk = 256, nkv = 64;
  CUstream stream = someStream();
  SparseAttnBuffers b(seqLen, 1, heads, topk, nkv);
  auto *table = static_cast<float *>(deviceBuffer(2048 * 32 * 4));
  auto *base = static_cast<int32_t *>(deviceBuffer(4 * 4));
  hisa::ops::LayerRope rope;
  rope.cos = rope.sin = table;
  rope.base = base;
  rope.tablePositions = 2048;
  rope.normalizeQuery = true;
  rope.queryEps = 1e-6f;
  uint64_t bytes = 0;
  ASSERT_EQ(hisa_sparse_attn_workspace_size(1, 1, heads, topk, &bytes),
            HISA_OK);
  void *workspace = deviceBuffer(bytes);
  auto plan = [&](int64_t tokens, uint64_t workspaceBytes) {
    auto call = [&] {
      return hisa::ops::sparseAttn(b.q, b.kv, b.sink, b.idx, b.o, nullptr, 1,
                                   tokens, heads, nkv, topk, 0.044f, workspace,
                                   workspaceBytes, stream, &rope);
    };
    llvm::Error first = call();
    EXPECT_FALSE(bool(first)) << llvm::toString(std::move(first));
    hisa::fake_cuda::resetCalls();
    llvm::Error second = call();
    EXPECT_FALSE(bool(second)) << llvm::toString(std::move(second));
    return names(launchesOn(stream));
  };
  EXPECT_EQ(plan(seqLen, 0), (std::vector<std::string>{"sparse_attn_ws"}));
  EXPECT_EQ(plan(1, bytes), (std::vector<std::string>{"sparse_attn_ws",
                                                      "sparse_attn_combine"}));
  // A bad eps is refused, naming it.
  rope.queryEps = std::nanf("");
  llvm::Error refused = hisa::ops::sparseAttn(
      b.q, b.kv, b.sink, b.idx, b.o, nullptr, 1, seqLen, heads, nkv, topk,
      0.044f, nullptr, 0, stream, &rope);
  EXPECT_NE(llvm::toString(std::move(refused)).find("query norm's eps"),
            std::string::npos);
}

TEST(OperatorPlans, SparseAttnH128PrefillRunsFlashMlaSchedule) {
  // H = 128 with many tokens: sparse_attn_wg, K padded to 128s.
  const int64_t seqLen = 1024, heads = 128, topk = 700, nkv = 64;
  CUstream stream = someStream();
  SparseAttnBuffers b(seqLen, 1, heads, topk, nkv);
  auto call = [&](int64_t tokens) {
    return hisa_sparse_attn(b.q, b.kv, b.sink, b.idx, b.o, nullptr, 1, tokens,
                            heads, nkv, topk, 0.044f, nullptr, 0, stream);
  };
  ASSERT_EQ(call(seqLen), HISA_OK) << hisa_last_error();
  hisa::fake_cuda::resetCalls();
  ASSERT_EQ(call(seqLen), HISA_OK) << hisa_last_error();
  std::vector<Call> prefill = launchesOn(stream);
  ASSERT_EQ(names(prefill), (std::vector<std::string>{"sparse_attn_wg"}));
  EXPECT_EQ(prefill[0].grid[0], 2u * seqLen); // two head blocks per token
  // Fewer tokens (decode-like): the warp-specialized kernel.
  hisa::fake_cuda::resetCalls();
  ASSERT_EQ(call(256), HISA_OK) << hisa_last_error();
  EXPECT_EQ(names(launchesOn(stream)),
            (std::vector<std::string>{"sparse_attn_ws"}));
}

TEST(OperatorPlans, TopkIsOneLaunchABlockPerRow) {
  const int64_t rows = 37, columns = 5000, k = 300;
  auto *x = static_cast<float *>(deviceBuffer(rows * columns * 4));
  auto *out = static_cast<int32_t *>(deviceBuffer(rows * k * 4));
  CUstream stream = someStream();
  ASSERT_EQ(hisa_topk(x, nullptr, nullptr, out, rows, columns, k, 0, stream),
            HISA_OK)
      << hisa_last_error();
  hisa::fake_cuda::resetCalls();
  ASSERT_EQ(hisa_topk(x, nullptr, nullptr, out, rows, columns, k, 0, stream),
            HISA_OK)
      << hisa_last_error();
  std::vector<Call> launches = launchesOn(stream);
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].name.rfind("topk_f32", 0), 0u) << launches[0].name;
  EXPECT_EQ(launches[0].grid[0], unsigned(rows));
  // k > C is fine (-1 fill); a host pointer is refused, naming it.
  int host[4];
  EXPECT_EQ(hisa_topk(reinterpret_cast<float *>(host), nullptr, nullptr, out,
                      rows, columns, k, 0, stream),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hisa_last_error()).find("x"), std::string::npos)
      << hisa_last_error();
}

TEST(OperatorPlans, L2PrefetchIsOneLaunchOfWarpsOverTheRange) {
  // 32 MB in 16 KB pieces, 32 a block of one warp: 64 blocks.
  const uint64_t bytes = 32u << 20;
  void *data = deviceBuffer(bytes);
  CUstream stream = someStream();
  ASSERT_EQ(hisa_l2_prefetch(data, bytes, stream), HISA_OK)
      << hisa_last_error();
  hisa::fake_cuda::resetCalls();
  ASSERT_EQ(hisa_l2_prefetch(data, bytes, stream), HISA_OK)
      << hisa_last_error();
  std::vector<Call> launches = launchesOn(stream);
  ASSERT_EQ(names(launches), (std::vector<std::string>{"l2_prefetch"}));
  EXPECT_EQ(launches[0].grid[0], 64u);
  EXPECT_EQ(launches[0].block[0], 32u);
  // Nothing to prefetch launches nothing; a misaligned range is refused.
  hisa::fake_cuda::resetCalls();
  ASSERT_EQ(hisa_l2_prefetch(data, 0, stream), HISA_OK) << hisa_last_error();
  EXPECT_TRUE(launchesOn(stream).empty());
  EXPECT_EQ(hisa_l2_prefetch(static_cast<char *>(data) + 8, 64, stream),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hisa_last_error()).find("16-byte aligned"),
            std::string::npos)
      << hisa_last_error();
}

// Regressions found by CAPIArgumentFuzzTest.cpp.

TEST(OperatorPlans, SparseAttnTakesAFourByteAlignedSink) {
  // attn_sink is [heads] f32: 4-byte alignment is all it needs. It also
  // stood in for the unused rotation tables, which need 16, so such a call
  // was refused as "rope_cos must be 16-byte aligned".
  CUstream stream = someStream();
  SparseAttnBuffers b(128, 1, 64, 640, 64);
  auto *sink = reinterpret_cast<float *>(
      static_cast<char *>(deviceBuffer(64 * 4 + 16)) + 4);
  ASSERT_EQ(hisa_sparse_attn(b.q, b.kv, sink, b.idx, b.o, nullptr, 128, 1, 64,
                             4096, 640, 0.044f, nullptr, 0, stream),
            HISA_OK)
      << hisa_last_error();
}

TEST(OperatorPlans, SparseAttnOverAnEmptyCacheNeedsNoKvAddress) {
  // nkv = 0 (torch's empty kv has no address): every index is invalid, no
  // row is read; the call runs (o = 0) instead of refusing a NULL kv.
  CUstream stream = someStream();
  SparseAttnBuffers b(4, 1, 64, 64, 1);
  hisa::fake_cuda::resetCalls();
  ASSERT_EQ(hisa_sparse_attn(b.q, nullptr, b.sink, b.idx, b.o, nullptr, 4, 1,
                             64, 0, 64, 0.044f, nullptr, 0, stream),
            HISA_OK)
      << hisa_last_error();
  EXPECT_FALSE(launchesOn(stream).empty());
  // With rows in the cache, kv is needed.
  EXPECT_EQ(hisa_sparse_attn(b.q, nullptr, b.sink, b.idx, b.o, nullptr, 4, 1,
                             64, 1, 64, 0.044f, nullptr, 0, stream),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hisa_last_error()).find("kv"), std::string::npos)
      << hisa_last_error();
}

TEST(OperatorPlans, SparseAttnOverAnEmptyCacheNamesAHostOutputAsO) {
  // Over an empty cache the kernel reads o's memory in kv's place: a host o
  // was reported as "argument 'kv' ... is not CUDA memory" (C ABI fuzz seed
  // 4062), naming an argument the caller got right.
  CUstream stream = someStream();
  SparseAttnBuffers b(4, 1, 64, 64, 1);
  std::vector<char> host(4 * 64 * 512 * 2 + 256);
  void *hostO =
      host.data() + (256 - reinterpret_cast<uintptr_t>(host.data()) % 256);
  EXPECT_EQ(hisa_sparse_attn(b.q, b.kv, b.sink, b.idx, hostO, nullptr, 4, 1, 64,
                             0, 64, 0.044f, nullptr, 0, stream),
            HISA_ERROR_INVALID_ARGUMENT);
  std::string message = hisa_last_error();
  EXPECT_NE(message.find("'o'"), std::string::npos) << message;
  EXPECT_EQ(message.find("'kv'"), std::string::npos) << message;
}

// A kernel's first load in a context (and its TMA zero row) must not break
// another thread's CUDA-graph capture in the global mode: it runs in the
// relaxed capture mode, and the zero row is filled on a private stream,
// not by a synchronous copy on the legacy stream.
TEST(OperatorPlans, FirstLoadsRunRelaxedAndFillTheZeroRowOnTheirOwnStream) {
  // (A fresh context: the load and the context's zero row are this
  // test's.)
  hisa::fake_cuda::ScopedDevices devices(8);
  hisa::fake_cuda::useFreshContext(7);
  hisa::fake_cuda::resetCalls();
  auto before = hisa::fake_cuda::entryPointCalls();
  hisa_kernel *kernel = nullptr;
  ASSERT_EQ(hisa_kernel_get(nullptr, "block_sparse_topk_tokens", nullptr,
                            "sm_90a", &kernel),
            HISA_OK)
      << hisa_last_error();
  auto after = hisa::fake_cuda::entryPointCalls();
  EXPECT_GE(after["cuThreadExchangeStreamCaptureMode"] -
                before["cuThreadExchangeStreamCaptureMode"],
            2)
      << "the mode is set and restored";
  EXPECT_EQ(after["cuMemcpyHtoD_v2"], before["cuMemcpyHtoD_v2"]);
  bool filledOnItsOwnStream = false;
  for (const Call &call : hisa::fake_cuda::calls())
    filledOnItsOwnStream |= call.name == "cuMemsetD8Async" && call.stream != 0;
  EXPECT_TRUE(filledOnItsOwnStream);
}

TEST(OperatorPlans, KernelArgumentTypesComeFromTheSignature) {
  // hisa_arg has no element type: callers check their tensors against
  // these (hisa.jit.Kernel.launch does).
  hisa_kernel *kernel = nullptr;
  ASSERT_EQ(hisa_kernel_get(nullptr, "fp8_block_mean_pooling", nullptr,
                            "sm_90a", &kernel),
            HISA_OK)
      << hisa_last_error();
  const char *type = nullptr;
  int32_t bytes = -1;
  ASSERT_EQ(hisa_kernel_argument_type(kernel, 0, &type, &bytes), HISA_OK)
      << hisa_last_error();
  EXPECT_EQ(std::string(type), "f8E4M3FN");
  EXPECT_EQ(bytes, 1);
  ASSERT_EQ(hisa_kernel_argument_type(kernel, 1, &type, &bytes), HISA_OK);
  EXPECT_EQ(std::string(type), "f32");
  EXPECT_EQ(bytes, 4);
  EXPECT_EQ(hisa_kernel_argument_type(kernel, 4, &type, &bytes),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hisa_last_error()).find("takes 4 arguments"),
            std::string::npos)
      << hisa_last_error();
  EXPECT_EQ(hisa_kernel_argument_type(kernel, -1, &type, &bytes),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(hisa_kernel_argument_type(nullptr, 0, &type, &bytes),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(hisa_kernel_argument_type(kernel, 0, nullptr, &bytes),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(hisa_kernel_argument_type(kernel, 0, &type, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
}

TEST(OperatorPlans, KernelLaunchChecksCountAndSizesBeforeUsingThem) {
  hisa_kernel *kernel = nullptr;
  ASSERT_EQ(hisa_kernel_get(nullptr, "clean_and_maintain_logits", nullptr,
                            "sm_90a", &kernel),
            HISA_OK)
      << hisa_last_error();
  void *windows = deviceBuffer(4 * 4);
  hisa_arg args[3] = {};
  args[0].kind = 0, args[0].rank = 2;
  args[0].data = deviceBuffer(4 * 4 * 16);
  args[0].sizes[0] = 4, args[0].sizes[1] = 16;
  for (hisa_arg *window : {&args[1], &args[2]}) {
    window->kind = 0, window->rank = 1, window->data = windows;
    window->sizes[0] = 4;
  }
  CUstream stream = someStream();
  ASSERT_EQ(hisa_kernel_launch(kernel, args, 3, stream), HISA_OK)
      << hisa_last_error();
  // A count past the array was read (argument #3 on) before the kernel's
  // own count refused it.
  EXPECT_EQ(hisa_kernel_launch(kernel, args, 1000, stream),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hisa_last_error()).find("num_args = 1000"),
            std::string::npos)
      << hisa_last_error();
  EXPECT_EQ(hisa_kernel_launch(kernel, args, -1, stream),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hisa_last_error()).find("num_args = -1"),
            std::string::npos)
      << hisa_last_error();
  // [4, 2^62] f32: the element count wrapped to 0, so a NULL logits went
  // through the runtime's checks and was launched.
  args[0].data = nullptr;
  args[0].sizes[1] = int64_t(1) << 62;
  hisa::fake_cuda::resetCalls();
  EXPECT_EQ(hisa_kernel_launch(kernel, args, 3, stream),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hisa_last_error()).find("'logits'"), std::string::npos)
      << hisa_last_error();
  EXPECT_TRUE(launchesOn(stream).empty());
}

} // namespace
