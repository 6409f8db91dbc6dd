//===- LaunchGraphTest.cpp - Operators' launches as one CUDA graph --------===//
//
// runtime::GraphLaunchScope on the fake driver (FakeCuda.h), through the C
// ABI's indexers: the first call of a kernel sequence on a stream builds
// and launches a graph; later calls relaunch it after updating the nodes
// whose parameters changed; the kernels a graph launch runs are the ones
// (grids, blocks, shared memory, programmatic edges) that launching them
// one by one would; captures, other streams and the switch behave as
// documented; a scope left without finish() issues nothing.
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"

#include "hisa/Runtime/Jit.h"
#include "hisa/Runtime/LaunchGraph.h"
#include "hisa/Runtime/hisa_runtime.h"

#include "gtest/gtest.h"

#include <cuda.h>

#include <atomic>
#include <thread>
#include <vector>

using namespace hisa::runtime;
using hisa::fake_cuda::Call;
using hisa::fake_cuda::deviceBuffer;

namespace {

/// Buffers of an indexer call of `m` queries over `n` keys (H = 64, D =
/// 128, kb = 128, block_topk = 8, topk_tokens = 256).
struct IndexerCall {
  int64_t m, n;
  void *q, *k;
  float *kScale, *weights;
  int32_t *ks, *ke, *out;
  void *workspace;
  uint64_t workspaceBytes = 0;

  IndexerCall(int64_t m, int64_t n) : m(m), n(n) {
    q = deviceBuffer(m * 64 * 128);
    k = deviceBuffer(n * 128);
    kScale = static_cast<float *>(deviceBuffer(n * 4));
    weights = static_cast<float *>(deviceBuffer(m * 64 * 4));
    ks = static_cast<int32_t *>(deviceBuffer(m * 4));
    ke = static_cast<int32_t *>(deviceBuffer(m * 4));
    out = static_cast<int32_t *>(deviceBuffer(m * 256 * 4));
    EXPECT_EQ(hisa_hisa_indexer_workspace_size(m, n, 64, 128, 128, 8, 256,
                                               &workspaceBytes),
              HISA_OK)
        << hisa_last_error();
    workspace = deviceBuffer(workspaceBytes);
  }

  int run(void *stream, int32_t *into = nullptr) {
    return hisa_hisa_indexer(q, k, kScale, weights, ks, ke, into ? into : out,
                             m, n, 64, 128, 128, 8, 256, workspace,
                             workspaceBytes, stream);
  }
};

/// The launches recorded since the last reset.
std::vector<Call> launches() {
  std::vector<Call> result;
  for (const Call &call : hisa::fake_cuda::calls())
    if (call.kind == Call::Launch)
      result.push_back(call);
  return result;
}

/// Restores the process-wide switch when a test ends.
struct GraphsSetting {
  bool previous;
  explicit GraphsSetting(bool enabled) : previous(setLaunchGraphs(enabled)) {}
  ~GraphsSetting() { setLaunchGraphs(previous); }
};

void *stream(uintptr_t handle) { return reinterpret_cast<void *>(handle); }

TEST(LaunchGraph, RunsTheKernelsLaunchingThemOneByOneWould) {
  IndexerCall call(300, 5000);
  std::vector<Call> direct, graphed;
  {
    GraphsSetting off(false);
    hisa::fake_cuda::resetCalls();
    ASSERT_EQ(call.run(stream(0x51)), HISA_OK) << hisa_last_error();
    direct = launches();
  }
  GraphsSetting on(true);
  hisa::fake_cuda::resetCalls();
  int64_t graphLaunches = hisa::fake_cuda::entryPointCalls("cuGraphLaunch");
  ASSERT_EQ(call.run(stream(0x51)), HISA_OK) << hisa_last_error();
  graphed = launches();
  EXPECT_EQ(hisa::fake_cuda::entryPointCalls("cuGraphLaunch") - graphLaunches,
            1);
  ASSERT_EQ(direct.size(), 3u);
  ASSERT_EQ(graphed.size(), direct.size());
  // Stage 1 and stage 2 wait for their prerequisite grids (PDL is on by
  // default): the graph must carry these edges.
  EXPECT_TRUE(direct[1].programmatic && direct[2].programmatic);
  for (size_t i = 0; i < direct.size(); ++i) {
    EXPECT_FALSE(direct[i].fromGraph);
    EXPECT_TRUE(graphed[i].fromGraph);
    EXPECT_EQ(graphed[i].name, direct[i].name);
    EXPECT_EQ(graphed[i].stream, direct[i].stream);
    for (int d = 0; d < 3; ++d) {
      EXPECT_EQ(graphed[i].grid[d], direct[i].grid[d]) << direct[i].name;
      EXPECT_EQ(graphed[i].block[d], direct[i].block[d]) << direct[i].name;
    }
    EXPECT_EQ(graphed[i].sharedBytes, direct[i].sharedBytes);
    // The first kernel of a graph launch waits for the stream's earlier
    // work to finish (a graph has no programmatic edge from outside it);
    // the later ones keep their programmatic edges.
    if (i == 0)
      EXPECT_FALSE(graphed[i].programmatic);
    else
      EXPECT_EQ(graphed[i].programmatic, direct[i].programmatic)
          << direct[i].name;
  }
}

TEST(LaunchGraph, RelaunchesWithTheChangedParametersOnly) {
  GraphsSetting on(true);
  IndexerCall call(200, 3000);
  void *s = stream(0x52);
  LaunchGraphStats before = getLaunchGraphStats();
  ASSERT_EQ(call.run(s), HISA_OK) << hisa_last_error();
  LaunchGraphStats first = getLaunchGraphStats();
  EXPECT_EQ(first.instantiated - before.instantiated, 1);
  EXPECT_EQ(first.launched - before.launched, 1);

  // The same call again: nothing to update.
  ASSERT_EQ(call.run(s), HISA_OK) << hisa_last_error();
  LaunchGraphStats same = getLaunchGraphStats();
  EXPECT_EQ(same.instantiated, first.instantiated);
  EXPECT_EQ(same.nodeUpdates, first.nodeUpdates);
  EXPECT_EQ(same.launched - first.launched, 1);

  // Another output: only the last kernel (stage 2) writes it.
  auto *otherOut = static_cast<int32_t *>(deviceBuffer(200 * 256 * 4));
  hisa::fake_cuda::resetCalls();
  ASSERT_EQ(call.run(s, otherOut), HISA_OK) << hisa_last_error();
  LaunchGraphStats moved = getLaunchGraphStats();
  EXPECT_EQ(moved.instantiated, first.instantiated);
  EXPECT_EQ(moved.nodeUpdates - same.nodeUpdates, 1);
  std::vector<Call> relaunched = launches();
  ASSERT_EQ(relaunched.size(), 3u);
  EXPECT_TRUE(relaunched.back().fromGraph);
}

TEST(LaunchGraph, NewSizesUpdateTheNodesOfTheSameGraph) {
  GraphsSetting on(true);
  void *s = stream(0x53);
  IndexerCall small(100, 3000), large(700, 3000);
  ASSERT_EQ(small.run(s), HISA_OK) << hisa_last_error();
  LaunchGraphStats first = getLaunchGraphStats();
  hisa::fake_cuda::resetCalls();
  ASSERT_EQ(large.run(s), HISA_OK) << hisa_last_error();
  LaunchGraphStats second = getLaunchGraphStats();
  // The same kernels: one graph, its nodes updated (grids included).
  EXPECT_EQ(second.instantiated, first.instantiated);
  EXPECT_GE(second.nodeUpdates - first.nodeUpdates, 2);
  std::vector<Call> graphed = launches();

  GraphsSetting off(false);
  hisa::fake_cuda::resetCalls();
  ASSERT_EQ(large.run(s), HISA_OK) << hisa_last_error();
  std::vector<Call> direct = launches();
  ASSERT_EQ(graphed.size(), direct.size());
  for (size_t i = 0; i < direct.size(); ++i)
    for (int d = 0; d < 3; ++d)
      EXPECT_EQ(graphed[i].grid[d], direct[i].grid[d]) << direct[i].name;
}

TEST(LaunchGraph, EachStreamGetsItsOwnGraph) {
  GraphsSetting on(true);
  IndexerCall call(150, 2000);
  LaunchGraphStats before = getLaunchGraphStats();
  ASSERT_EQ(call.run(stream(0x54)), HISA_OK) << hisa_last_error();
  ASSERT_EQ(call.run(stream(0x55)), HISA_OK) << hisa_last_error();
  ASSERT_EQ(call.run(stream(0x54)), HISA_OK) << hisa_last_error();
  LaunchGraphStats after = getLaunchGraphStats();
  // (A graph launched on two streams would order them behind each other.)
  EXPECT_EQ(after.instantiated - before.instantiated, 2);
  EXPECT_EQ(after.launched - before.launched, 3);
}

TEST(LaunchGraph, BuildsInTheRelaxedCaptureMode) {
  // Instantiation is not capturable: in the global mode (torch's default)
  // it would invalidate another thread's capture. A relaunch changes no
  // mode.
  GraphsSetting on(true);
  IndexerCall call(70, 1500);
  ASSERT_EQ(call.run(stream(0x61)), HISA_OK) << hisa_last_error();
  int64_t exchanges =
      hisa::fake_cuda::entryPointCalls("cuThreadExchangeStreamCaptureMode");
  LaunchGraphStats before = getLaunchGraphStats();
  ASSERT_EQ(call.run(stream(0x62)), HISA_OK) << hisa_last_error();
  EXPECT_EQ(getLaunchGraphStats().instantiated, before.instantiated + 1);
  EXPECT_EQ(
      hisa::fake_cuda::entryPointCalls("cuThreadExchangeStreamCaptureMode") -
          exchanges,
      2);
  exchanges =
      hisa::fake_cuda::entryPointCalls("cuThreadExchangeStreamCaptureMode");
  ASSERT_EQ(call.run(stream(0x62)), HISA_OK) << hisa_last_error();
  EXPECT_EQ(
      hisa::fake_cuda::entryPointCalls("cuThreadExchangeStreamCaptureMode"),
      exchanges);
}

TEST(LaunchGraph, TheLeastRecentlyLaunchedGraphMakesRoom) {
  GraphsSetting on(true);
  IndexerCall call(60, 1000);
  // More streams than graphs kept (64): each new one evicts the graph
  // launched longest ago; the first stream then needs a new graph.
  int64_t destroyed = hisa::fake_cuda::entryPointCalls("cuGraphExecDestroy");
  LaunchGraphStats before = getLaunchGraphStats();
  for (uintptr_t handle = 0x1000; handle < 0x1000 + 70; ++handle)
    ASSERT_EQ(call.run(stream(handle)), HISA_OK) << hisa_last_error();
  ASSERT_EQ(call.run(stream(0x1000 + 69)), HISA_OK) << hisa_last_error();
  LaunchGraphStats filled = getLaunchGraphStats();
  EXPECT_EQ(filled.instantiated - before.instantiated, 70);
  EXPECT_GE(hisa::fake_cuda::entryPointCalls("cuGraphExecDestroy") - destroyed,
            6);
  ASSERT_EQ(call.run(stream(0x1000)), HISA_OK) << hisa_last_error();
  EXPECT_EQ(getLaunchGraphStats().instantiated, filled.instantiated + 1);
}

TEST(LaunchGraph, ThreadsShareTheGraphOfAStream) {
  // Graphs are built outside the cache's lock: two threads that build one
  // for the same stream at once keep one of them and drop the other.
  GraphsSetting on(true);
  IndexerCall call(80, 1200);
  // (The kernels compile once, before the threads race.)
  ASSERT_EQ(call.run(stream(0x70)), HISA_OK) << hisa_last_error();
  LaunchGraphStats before = getLaunchGraphStats();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i)
        if (call.run(stream(0x71 + t % 2)) != HISA_OK)
          ++failures;
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(failures.load(), 0);
  LaunchGraphStats after = getLaunchGraphStats();
  EXPECT_EQ(after.launched - before.launched, 100);
  // Two streams: at least two graphs, and a dropped duplicate at most per
  // racing thread.
  EXPECT_GE(after.instantiated - before.instantiated, 2);
  EXPECT_LE(after.instantiated - before.instantiated, 4);
}

TEST(LaunchGraph, ACaptureGetsTheLaunchesThemselves) {
  GraphsSetting on(true);
  IndexerCall call(120, 2000);
  void *s = stream(0x56);
  hisa::fake_cuda::setStreamCapturing(s, true);
  LaunchGraphStats before = getLaunchGraphStats();
  hisa::fake_cuda::resetCalls();
  int status = call.run(s);
  hisa::fake_cuda::setStreamCapturing(s, false);
  ASSERT_EQ(status, HISA_OK) << hisa_last_error();
  LaunchGraphStats after = getLaunchGraphStats();
  EXPECT_EQ(after.launched, before.launched);
  std::vector<Call> recorded = launches();
  ASSERT_EQ(recorded.size(), 3u);
  for (const Call &launch : recorded)
    EXPECT_FALSE(launch.fromGraph) << launch.name;
}

TEST(LaunchGraph, TurnedOffLaunchesOneByOne) {
  GraphsSetting off(false);
  IndexerCall call(120, 2000);
  LaunchGraphStats before = getLaunchGraphStats();
  hisa::fake_cuda::resetCalls();
  ASSERT_EQ(call.run(stream(0x57)), HISA_OK) << hisa_last_error();
  EXPECT_EQ(getLaunchGraphStats().launched, before.launched);
  for (const Call &launch : launches())
    EXPECT_FALSE(launch.fromGraph);
  EXPECT_EQ(hisa_set_launch_graphs(1), 0);
  EXPECT_EQ(hisa_set_launch_graphs(0), 1);
}

TEST(LaunchGraph, AFailedLaunchReachesTheCaller) {
  GraphsSetting on(true);
  IndexerCall call(90, 2000);
  void *s = stream(0x58);
  ASSERT_EQ(call.run(s), HISA_OK) << hisa_last_error();
  // The graph's second kernel fails at its next launch.
  hisa::fake_cuda::failLaunchAfter("fp8_block_mean_pooling");
  EXPECT_EQ(call.run(s), HISA_ERROR_CUDA);
  EXPECT_NE(std::string(hisa_last_error()).find("cuGraphLaunch"),
            std::string::npos)
      << hisa_last_error();
  hisa::fake_cuda::failLaunchAfter("");
}

/// A sparse_attn call of `batch` decode tokens (S = 1, H = 64, K = 640,
/// Nkv = 4096): few tokens split their indices over blocks (two kernels).
int runSparseAttn(int64_t batch, void *s) {
  const int64_t heads = 64, topk = 640, nkv = 4096;
  void *q = deviceBuffer(batch * heads * 512 * 2);
  void *kv = deviceBuffer(batch * nkv * 512 * 2);
  auto *sink = static_cast<float *>(deviceBuffer(heads * 4));
  auto *idx = static_cast<int32_t *>(deviceBuffer(batch * topk * 4));
  void *o = deviceBuffer(batch * heads * 512 * 2);
  uint64_t bytes = 0;
  EXPECT_EQ(hisa_sparse_attn_workspace_size(batch, 1, heads, topk, &bytes),
            HISA_OK)
      << hisa_last_error();
  void *workspace = bytes ? deviceBuffer(bytes) : nullptr;
  return hisa_sparse_attn(q, kv, sink, idx, o, nullptr, batch, 1, heads, nkv,
                          topk, 0.044f, workspace, bytes, s);
}

TEST(LaunchGraph, SplitDecodeAttentionIsOneGraphLaunch) {
  GraphsSetting on(true);
  hisa::fake_cuda::resetCalls();
  int64_t graphLaunches = hisa::fake_cuda::entryPointCalls("cuGraphLaunch");
  ASSERT_EQ(runSparseAttn(1, stream(0x61)), HISA_OK) << hisa_last_error();
  std::vector<Call> split = launches();
  EXPECT_EQ(hisa::fake_cuda::entryPointCalls("cuGraphLaunch") - graphLaunches,
            1);
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(split[0].name, "sparse_attn_ws");
  EXPECT_EQ(split[1].name, "sparse_attn_combine");
  for (const Call &launch : split)
    EXPECT_TRUE(launch.fromGraph) << launch.name;
  // Enough tokens for one block each: one kernel, launched as before.
  hisa::fake_cuda::resetCalls();
  graphLaunches = hisa::fake_cuda::entryPointCalls("cuGraphLaunch");
  ASSERT_EQ(runSparseAttn(128, stream(0x61)), HISA_OK) << hisa_last_error();
  std::vector<Call> whole = launches();
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_FALSE(whole[0].fromGraph);
  EXPECT_EQ(hisa::fake_cuda::entryPointCalls("cuGraphLaunch") - graphLaunches,
            0);
}

TEST(LaunchGraph, AScopeLeftWithoutFinishIssuesNothing) {
  hisa::fake_cuda::resetCalls();
  {
    GraphLaunchScope scope(stream(0x59));
    EXPECT_EQ(activeGraphLaunchScope(), &scope);
    RecordedLaunch launch;
    launch.kernelName = "k";
    // A launch on another stream is refused.
    llvm::Error error =
        scope.record(launch, reinterpret_cast<CUstream>(0x60));
    ASSERT_TRUE(bool(error));
    EXPECT_NE(llvm::toString(std::move(error)).find("another stream"),
              std::string::npos);
    EXPECT_FALSE(bool(scope.record(launch, reinterpret_cast<CUstream>(0x59))));
  }
  EXPECT_EQ(activeGraphLaunchScope(), nullptr);
  EXPECT_TRUE(launches().empty());
}

} // namespace
