//===- HostOrchestrationTest.cpp - Orchestration on the fake driver -------===//
//
// The V4 attention layer's host side on a machine without a GPU: the
// runtime JIT-compiles the real kernels and "launches" them on the fake
// driver (FakeCuda.h), which records what a GPU would have been asked to
// do. What the layer promises and a GPU run cannot easily show is checked
// here: prefill and decode allocate nothing and never block the host (so a
// CUDA graph can capture them), every branch forked onto a side stream
// starts after the caller's stream and is joined back into it, and each
// path runs the kernels it should (CSA decode: the decode-shaped logits).
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"

#include "hisa/Runtime/hisa_runtime.h"
#include "hisa/hisa.hpp"

#include "gtest/gtest.h"

#include <cuda.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

using hisa::fake_cuda::Call;
using hisa::fake_cuda::deviceBuffer;

namespace {

hisa_v4_config smallConfig(int64_t ratio) {
  hisa_v4_config config = hisa::v4::flashConfig(ratio);
  config.dim = 256;
  config.heads = 16;
  config.q_lora = 256;
  config.o_groups = 2;
  config.o_lora = 256;
  config.index_topk = 16;
  return config;
}

/// Every weight a generous buffer: shapes are not what this test checks.
hisa_v4_weights someWeights() {
  constexpr size_t kBytes = 8 << 20;
  hisa_v4_weights w = {};
  for (const void **matrix :
       {&w.wq_a, &w.wq_b, &w.wkv, &w.wo_a, &w.wo_b, &w.c_wkv, &w.c_wgate,
        &w.i_wq, &w.i_weights, &w.i_wkv, &w.i_wgate})
    *matrix = deviceBuffer(kBytes);
  for (const float **vector : {&w.q_norm, &w.kv_norm, &w.attn_sink, &w.c_ape,
                               &w.c_norm, &w.i_ape, &w.i_norm})
    *vector = static_cast<const float *>(deviceBuffer(kBytes));
  return w;
}

/// The kernels launched among `calls`.
std::multiset<std::string> kernels(const std::vector<Call> &calls) {
  std::multiset<std::string> names;
  for (const Call &call : calls)
    if (call.kind == Call::Launch)
      names.insert(call.name);
  return names;
}

/// Checks that a forward on `stream` is capturable and its branches are
/// forked from and joined into `stream`: nothing blocks the host; work runs
/// on `stream` or on side streams; a side stream's first operation waits
/// for an event last recorded on `stream` (the fork), its last records an
/// event that `stream` waits for before it first reads the branches'
/// results (CSA: the index rows, `v4_indices`, from the indexer's
/// selection; otherwise attention, as the index rows follow from the
/// positions alone and are assembled on a side branch), and nothing runs
/// on it after that; the indexer's branch (the one scoring keys) waits for
/// q_lora (an event recorded on `stream` after its RMSNorm) and for the
/// keys (an event recorded on the keys' branch after their fp8 conversion).
/// Two branches run to the forward's end instead, joined by its last
/// calls: the one that only prefetches weights into L2 (decode), which
/// prefetches wo_a only after an event `stream` recorded after wq_b, and
/// the positions' advance (`v4_advance`, alone on its branch), which starts
/// after an event `stream` recorded after the attention launch (the last
/// kernel that reads the positions).
void expectForkedAndJoined(const std::vector<Call> &calls, uintptr_t stream,
                           const char *what) {
  SCOPED_TRACE(what);
  std::map<uintptr_t, std::vector<size_t>> sides; // stream -> call indices
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call &call = calls[i];
    EXPECT_NE(call.kind, Call::Synchronizing)
        << call.name << " blocks the host (a CUDA graph capture fails)";
    if (call.stream != stream)
      sides[call.stream].push_back(i);
  }
  EXPECT_FALSE(sides.empty()) << "no side stream was used";
  // The stream that last recorded an event before call `i`, and the index
  // of that record.
  auto lastRecord = [&](uintptr_t event, size_t i) -> std::optional<size_t> {
    for (size_t j = i; j-- > 0;)
      if (calls[j].kind == Call::EventRecord && calls[j].event == event)
        return j;
    return std::nullopt;
  };
  auto indicesLaunch = std::find_if(calls.begin(), calls.end(), [&](auto &c) {
    return c.kind == Call::Launch && c.name == "v4_indices";
  });
  ASSERT_NE(indicesLaunch, calls.end()) << "no v4_indices launch";
  bool selects = std::any_of(calls.begin(), calls.end(), [&](auto &c) {
    return c.kind == Call::Launch &&
           (c.name == "mqa_logits_decode" || c.name == "pool_mqa_logits");
  });
  EXPECT_EQ(indicesLaunch->stream == stream, selects)
      << "the index rows belong on the caller's stream exactly when they "
         "read the indexer's selection";
  auto readsLaunch = std::find_if(calls.begin(), calls.end(), [&](auto &c) {
    return c.kind == Call::Launch && c.stream == stream &&
           (c.name == "v4_indices" || c.name.rfind("sparse_attn", 0) == 0);
  });
  ASSERT_NE(readsLaunch, calls.end()) << "no index rows or attention";
  size_t readsAt = readsLaunch - calls.begin();
  auto advanceLaunch = std::find_if(calls.begin(), calls.end(), [&](auto &c) {
    return c.kind == Call::Launch && c.name == "v4_advance";
  });
  ASSERT_NE(advanceLaunch, calls.end()) << "no v4_advance launch";
  EXPECT_NE(advanceLaunch->stream, stream)
      << "v4_advance runs on the caller's stream, after the projections";
  size_t attentionAt = 0;
  for (size_t i = 0; i < calls.size(); ++i)
    if (calls[i].kind == Call::Launch && calls[i].stream == stream &&
        calls[i].name.rfind("sparse_attn", 0) == 0)
      attentionAt = i;
  ASSERT_NE(attentionAt, 0u) << "no attention launch";
  // A CSA decode step scores on the caller's stream (its critical path, each
  // launch a programmatic dependent of the one before) after q_lora's
  // RMSNorm; wq_b runs on a side lane whose first launch waits for an event
  // recorded there after the scores, so that it streams beside the top-k.
  auto decodeScores = std::find_if(calls.begin(), calls.end(), [&](auto &c) {
    return c.kind == Call::Launch && c.name == "mqa_logits_decode";
  });
  if (decodeScores != calls.end()) {
    size_t scoresAt = decodeScores - calls.begin();
    EXPECT_EQ(decodeScores->stream, stream);
    bool afterNorm = false;
    for (size_t j = 0; j < scoresAt; ++j)
      afterNorm |= calls[j].stream == stream && calls[j].kind == Call::Launch &&
                   calls[j].name == "linear_reduce_rmsnorm";
    EXPECT_TRUE(afterNorm) << "decode scores before q_lora's RMSNorm";
    bool afterKeys = false;
    for (size_t i = 0; i < scoresAt; ++i) {
      if (calls[i].kind != Call::StreamWait || calls[i].stream != stream)
        continue;
      std::optional<size_t> record = lastRecord(calls[i].event, i);
      if (!record || calls[*record].stream == stream)
        continue;
      for (size_t j = 0; j < *record; ++j)
        afterKeys |= calls[j].stream == calls[*record].stream &&
                     calls[j].kind == Call::Launch &&
                     calls[j].name == "v4_to_fp8";
    }
    EXPECT_TRUE(afterKeys) << "decode scores do not wait for the fp8 keys";
    bool wqBBesideTopk = false;
    for (auto &[side, own] : sides) {
      std::optional<size_t> firstLaunch;
      for (size_t i : own)
        if (calls[i].kind == Call::Launch) {
          firstLaunch = i;
          break;
        }
      if (!firstLaunch || calls[*firstLaunch].name.rfind("linear", 0) != 0)
        continue;
      for (size_t i : own) {
        if (i > *firstLaunch || calls[i].kind != Call::StreamWait)
          continue;
        std::optional<size_t> record = lastRecord(calls[i].event, i);
        wqBBesideTopk |=
            record && calls[*record].stream == stream && *record > scoresAt;
      }
    }
    EXPECT_TRUE(wqBBesideTopk)
        << "decode's wq_b does not wait for the indexer's scores";
  }
  for (auto &[side, own] : sides) {
    ASSERT_FALSE(own.empty());
    auto onlyLaunches = [&](const char *kernel) {
      return std::all_of(own.begin(), own.end(), [&](size_t i) {
        return calls[i].kind != Call::Launch || calls[i].name == kernel;
      });
    };
    bool prefetchOnly = onlyLaunches("l2_prefetch");
    bool advanceOnly = onlyLaunches("v4_advance");
    // Forked: the first operation waits for what `stream` queued.
    const Call &first = calls[own.front()];
    ASSERT_EQ(first.kind, Call::StreamWait)
        << "side stream " << side << " starts with " << first.name;
    std::optional<size_t> fork = lastRecord(first.event, own.front());
    ASSERT_TRUE(fork) << "side stream " << side
                      << " waits for an event not recorded before";
    EXPECT_EQ(calls[*fork].stream, stream)
        << "side stream " << side << " is not forked from the caller's";
    // Joined before the index rows: the last operation records an event the
    // caller's stream waits for before v4_indices; nothing runs after it.
    const Call &last = calls[own.back()];
    ASSERT_EQ(last.kind, Call::EventRecord)
        << "side stream " << side << " ends with " << last.name;
    bool joined = false;
    bool toTheEnd = prefetchOnly || advanceOnly;
    size_t deadline = toTheEnd ? calls.size() : readsAt;
    for (size_t j = own.back() + 1; j < deadline; ++j)
      joined |= calls[j].kind == Call::StreamWait &&
                calls[j].stream == stream && calls[j].event == last.event;
    EXPECT_TRUE(joined) << "side stream " << side << " is not joined before "
                        << (toTheEnd ? "the forward's end"
                                     : "its results are read");
    if (advanceOnly) {
      EXPECT_GT(*fork, attentionAt)
          << "the positions advance before attention has read them";
      continue;
    }
    if (prefetchOnly) {
      // wo_a's prefetch (the second) waits for an event recorded on
      // `stream` after its second projection (wq_b).
      std::vector<size_t> launches;
      for (size_t i : own)
        if (calls[i].kind == Call::Launch)
          launches.push_back(i);
      ASSERT_EQ(launches.size(), 2u) << "prefetches of wq_b and wo_a";
      std::optional<size_t> record;
      for (size_t i : own)
        if (i > launches[0] && i < launches[1] &&
            calls[i].kind == Call::StreamWait)
          record = lastRecord(calls[i].event, i);
      ASSERT_TRUE(record) << "wo_a's prefetch waits for nothing";
      // ... right after wq_b's launches (on the caller's stream, or, in a
      // CSA decode step, on the scoring lane beside the top-k).
      uintptr_t qStream = calls[*record].stream;
      std::optional<size_t> previous;
      for (size_t j = *record; j-- > 0;)
        if (calls[j].stream == qStream && calls[j].kind == Call::Launch) {
          previous = j;
          break;
        }
      ASSERT_TRUE(previous) << "wo_a's prefetch follows no launch";
      EXPECT_EQ(calls[*previous].name.rfind("linear", 0), 0u)
          << "wo_a's prefetch follows " << calls[*previous].name;
      int projections = 0;
      for (size_t j = 0; j < *record; ++j)
        projections += calls[j].stream == qStream &&
                       calls[j].kind == Call::Launch &&
                       calls[j].name.rfind("linear", 0) == 0 &&
                       calls[j].name.rfind("linear_reduce", 0) != 0;
      EXPECT_EQ(projections, qStream == stream ? 2 : 1)
          << "wo_a's prefetch starts before wq_b";
      continue;
    }
    // The indexer's branch reads q_lora: it waits for an event the caller's
    // stream recorded after its RMSNorm.
    bool scoresKeys = false;
    for (size_t i : own)
      scoresKeys |= calls[i].kind == Call::Launch &&
                    (calls[i].name == "mqa_logits_decode" ||
                     calls[i].name == "pool_mqa_logits");
    if (!scoresKeys)
      continue;
    bool waitsForQr = false;
    for (size_t i : own) {
      if (calls[i].kind != Call::StreamWait || i == own.front())
        continue;
      std::optional<size_t> record = lastRecord(calls[i].event, i);
      if (!record || calls[*record].stream != stream)
        continue;
      for (size_t j = 0; j < *record; ++j)
        waitsForQr |= calls[j].stream == stream &&
                      calls[j].kind == Call::Launch &&
                      (calls[j].name == "v4_rmsnorm" ||
                       calls[j].name == "linear_reduce_rmsnorm");
    }
    EXPECT_TRUE(waitsForQr)
        << "the indexer's branch does not wait for q_lora's RMSNorm";
    // ... and for the keys: an event recorded on another side stream after
    // it converted them to fp8 (v4_to_fp8), before the first scoring launch.
    size_t firstScore = 0;
    for (size_t i : own)
      if (calls[i].kind == Call::Launch &&
          (calls[i].name == "mqa_logits_decode" ||
           calls[i].name == "pool_mqa_logits")) {
        firstScore = i;
        break;
      }
    bool waitsForKeys = false;
    for (size_t i : own) {
      if (i > firstScore || calls[i].kind != Call::StreamWait)
        continue;
      std::optional<size_t> record = lastRecord(calls[i].event, i);
      if (!record || calls[*record].stream == stream ||
          calls[*record].stream == side)
        continue;
      for (size_t j = 0; j < *record; ++j)
        waitsForKeys |= calls[j].stream == calls[*record].stream &&
                        calls[j].kind == Call::Launch &&
                        calls[j].name == "v4_to_fp8";
    }
    EXPECT_TRUE(waitsForKeys)
        << "the indexer's scores do not wait for the fp8 keys";
  }
}

// The CSA indexer's prefill logits are [seq, seq / 4] per sequence (the
// entries a prompt from position 0 completes), not [seq, max_seq / 4]: a
// layer for long contexts with short prefills needs no memory that grows
// with their product (here 4096 x 32768 x 4 bytes = 512 MiB; now 16).
TEST(V4LayerMemory, PrefillLogitsFollowThePromptNotMaxSeq) {
  const int64_t maxSeq = 131072, prefill = 4096;
  hisa_v4_config config = smallConfig(4);
  hisa_v4_weights weights = someWeights();
  int64_t live = hisa::fake_cuda::counters().bytesAllocated;
  // The layer takes ~392 MiB here; with [seq, max_seq / 4] logits, 888.
  hisa::fake_cuda::setMemoryLimit(size_t(live) + (size_t(640) << 20));
  hisa_v4_attention *layer = nullptr;
  int status =
      hisa_v4_attention_create(&config, &weights, 1, maxSeq, prefill, &layer);
  hisa::fake_cuda::setMemoryLimit(SIZE_MAX);
  ASSERT_EQ(status, HISA_OK) << hisa_last_error();
  void *x = deviceBuffer(prefill * config.dim * 2);
  void *out = deviceBuffer(prefill * config.dim * 2);
  EXPECT_EQ(hisa_v4_attention_prefill(layer, x, prefill, out, nullptr), HISA_OK)
      << hisa_last_error();
  EXPECT_EQ(hisa_v4_attention_decode(layer, x, out, nullptr), HISA_OK)
      << hisa_last_error();
  hisa_v4_attention_destroy(layer);
}

// A step that fails after the positions moved on (the output projections
// come after sparse attention's advance) puts them back, on the lane that
// moved them, and keeps the layer's length; a prefill that fails leaves
// no prompt (decode refuses) instead of a half-overwritten one.
TEST(V4LayerMemory, AFailedStepPutsThePositionsBack) {
  const int64_t batch = 2, maxSeq = 300, seq = 64;
  hisa_v4_config config = smallConfig(0);
  hisa_v4_weights weights = someWeights();
  hisa_v4_attention *layer = nullptr;
  ASSERT_EQ(
      hisa_v4_attention_create(&config, &weights, batch, maxSeq, 0, &layer),
      HISA_OK)
      << hisa_last_error();
  void *x = deviceBuffer(batch * seq * config.dim * 2);
  void *out = deviceBuffer(batch * seq * config.dim * 2);
  auto length = [&] {
    int64_t value = -1, columns = 0;
    const void *cache = nullptr;
    const int32_t *indices = nullptr;
    EXPECT_EQ(hisa_v4_attention_info(layer, &value, &columns, &cache, &indices),
              HISA_OK);
    return value;
  };
  ASSERT_EQ(hisa_v4_attention_prefill(layer, x, seq, out, nullptr), HISA_OK)
      << hisa_last_error();
  ASSERT_EQ(hisa_v4_attention_decode(layer, x, out, nullptr), HISA_OK);
  ASSERT_EQ(length(), seq + 1);
  auto advances = [] {
    int count = 0;
    for (const Call &call : hisa::fake_cuda::calls())
      count += call.kind == Call::Launch && call.name == "v4_advance";
    return count;
  };
  hisa::fake_cuda::resetCalls();
  hisa::fake_cuda::failLaunchAfter("v4_advance");
  EXPECT_EQ(hisa_v4_attention_decode(layer, x, out, nullptr), HISA_ERROR_CUDA);
  EXPECT_EQ(advances(), 2) << "the advance and its rollback";
  EXPECT_EQ(length(), seq + 1);
  hisa::fake_cuda::resetCalls();
  ASSERT_EQ(hisa_v4_attention_decode(layer, x, out, nullptr), HISA_OK)
      << hisa_last_error();
  EXPECT_EQ(advances(), 1);
  EXPECT_EQ(length(), seq + 2);
  // A prefill that fails: no prompt until one succeeds.
  hisa::fake_cuda::failLaunchAfter("v4_advance");
  EXPECT_EQ(hisa_v4_attention_prefill(layer, x, seq, out, nullptr),
            HISA_ERROR_CUDA);
  EXPECT_EQ(length(), 0);
  EXPECT_EQ(hisa_v4_attention_decode(layer, x, out, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hisa_last_error()).find("no prefill yet"),
            std::string::npos)
      << hisa_last_error();
  ASSERT_EQ(hisa_v4_attention_prefill(layer, x, seq, out, nullptr), HISA_OK)
      << hisa_last_error();
  EXPECT_EQ(length(), seq);
  hisa::fake_cuda::failLaunchAfter("");
  // A step captured into a graph runs nothing: the host count stays (the
  // caller brings it along after replays), for decode and prefill alike.
  ASSERT_EQ(hisa_v4_attention_decode(layer, x, out, nullptr), HISA_OK);
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  hisa::fake_cuda::setStreamCapturing(stream, true);
  ASSERT_EQ(hisa_v4_attention_decode(layer, x, out, stream), HISA_OK)
      << hisa_last_error();
  EXPECT_EQ(length(), seq + 1);
  ASSERT_EQ(hisa_v4_attention_prefill(layer, x, seq, out, stream), HISA_OK)
      << hisa_last_error();
  EXPECT_EQ(length(), seq + 1);
  hisa::fake_cuda::setStreamCapturing(stream, false);
  ASSERT_EQ(hisa_v4_attention_decode(layer, x, out, stream), HISA_OK);
  EXPECT_EQ(length(), seq + 2);
  hisa_v4_attention_destroy(layer);
}

// hisa::v4::Attention::create leaves the layer empty on failure, also
// when it held one before (it kept the old layer).
TEST(V4LayerMemory, TheCppCreateEmptiesTheLayerOnFailure) {
  std::unique_ptr<hisa::v4::Attention> layer;
  hisa_v4_weights weights = someWeights();
  ASSERT_TRUE(
      hisa::v4::Attention::create(smallConfig(0), weights, 1, 256, layer));
  ASSERT_NE(layer, nullptr);
  EXPECT_FALSE(
      hisa::v4::Attention::create(smallConfig(7), weights, 1, 256, layer));
  EXPECT_EQ(layer, nullptr);
}

class V4LayerOnFakeDriver : public ::testing::TestWithParam<int64_t> {};

TEST_P(V4LayerOnFakeDriver, ForwardsAllocateNothingAndJoinTheirBranches) {
  int64_t ratio = GetParam();
  const int64_t batch = 2, maxSeq = 300, seq = 200;
  hisa_v4_config config = smallConfig(ratio);
  hisa_v4_weights weights = someWeights();
  hisa_v4_attention *layer = nullptr;
  ASSERT_EQ(
      hisa_v4_attention_create(&config, &weights, batch, maxSeq, 0, &layer),
      HISA_OK)
      << hisa_last_error();
  void *x = deviceBuffer(batch * seq * config.dim * 2);
  void *out = deviceBuffer(batch * seq * config.dim * 2);
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  auto streamId = reinterpret_cast<uintptr_t>(stream);

  // CSA layers show the indexer's key cache (capacity 300 / 4 = 75 entries,
  // rows rounded up to 4); the others have none.
  void *keys = nullptr;
  float *scales = nullptr;
  int64_t keyRows = -1;
  ASSERT_EQ(hisa_v4_attention_index_keys(layer, &keys, &scales, &keyRows),
            HISA_OK);
  EXPECT_EQ(keys != nullptr, ratio == 4);
  EXPECT_EQ(scales != nullptr, ratio == 4);
  EXPECT_EQ(keyRows, ratio == 4 ? 76 : 0);
  EXPECT_EQ(hisa_v4_attention_index_keys(nullptr, &keys, &scales, &keyRows),
            HISA_ERROR_INVALID_ARGUMENT);

  // Decode's L2 prefetch lane is opt-in; checked here turned on.
  ASSERT_EQ(hisa_v4_attention_set_l2_prefetch(layer, -1), HISA_OK);

  // A first prefill compiles every kernel (the JIT's own work may allocate
  // and synchronize); the checked calls come after it.
  ASSERT_EQ(hisa_v4_attention_prefill(layer, x, seq, out, stream), HISA_OK)
      << hisa_last_error();
  ASSERT_EQ(hisa_v4_attention_decode(layer, x, out, stream), HISA_OK)
      << hisa_last_error();

  // x and out move in 16-byte pieces: a misaligned one is refused by name
  // before anything is launched.
  auto *shifted = static_cast<char *>(out) + 4;
  EXPECT_EQ(hisa_v4_attention_prefill(layer, x, seq, shifted, stream),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hisa_last_error()).find("out"), std::string::npos)
      << hisa_last_error();
  EXPECT_NE(std::string(hisa_last_error()).find("16-byte aligned"),
            std::string::npos)
      << hisa_last_error();
  EXPECT_EQ(
      hisa_v4_attention_decode(layer, static_cast<char *>(x) + 2, out, stream),
      HISA_ERROR_INVALID_ARGUMENT);

  hisa::fake_cuda::Counters before = hisa::fake_cuda::counters();
  hisa::fake_cuda::resetCalls();
  ASSERT_EQ(hisa_v4_attention_prefill(layer, x, seq, out, stream), HISA_OK)
      << hisa_last_error();
  std::vector<Call> prefill = hisa::fake_cuda::calls();
  hisa::fake_cuda::resetCalls();
  std::map<std::string, int64_t> entriesBefore =
      hisa::fake_cuda::entryPointCalls();
  for (int step = 0; step < 3; ++step)
    ASSERT_EQ(hisa_v4_attention_decode(layer, x, out, stream), HISA_OK)
        << hisa_last_error();
  std::vector<Call> decode = hisa::fake_cuda::calls();
  // Host time: a step asks the driver about x and out only (its own
  // buffers and the weights were checked at creation), and reuses every
  // tensor map it encoded before.
  std::map<std::string, int64_t> entriesAfter =
      hisa::fake_cuda::entryPointCalls();
  EXPECT_EQ(entriesAfter["cuPointerGetAttribute"] -
                entriesBefore["cuPointerGetAttribute"],
            3 * 2);
  EXPECT_EQ(entriesAfter["cuTensorMapEncodeTiled"] -
                entriesBefore["cuTensorMapEncodeTiled"],
            0);
  // And the current context once a step (runtime::CurrentContextScope), not
  // once a launch.
  EXPECT_EQ(entriesAfter["cuCtxGetCurrent"] - entriesBefore["cuCtxGetCurrent"],
            3);
  hisa::fake_cuda::Counters after = hisa::fake_cuda::counters();
  EXPECT_EQ(after.allocations, before.allocations)
      << "prefill or decode allocated device memory";
  EXPECT_EQ(after.streamsCreated, before.streamsCreated);
  EXPECT_EQ(after.eventsCreated, before.eventsCreated);

  expectForkedAndJoined(prefill, streamId, "prefill");
  // One decode step at a time: each forks and joins its own branches. A
  // step starts where it records its fork on the caller's stream.
  ASSERT_FALSE(decode.empty());
  ASSERT_EQ(decode.front().kind, Call::EventRecord);
  ASSERT_EQ(decode.front().stream, streamId);
  std::vector<size_t> starts;
  for (size_t i = 0; i < decode.size(); ++i)
    if (decode[i].kind == Call::EventRecord && decode[i].stream == streamId &&
        decode[i].event == decode.front().event)
      starts.push_back(i);
  ASSERT_EQ(starts.size(), 3u) << "three decode steps";
  starts.push_back(decode.size());
  for (int step = 0; step < 3; ++step)
    expectForkedAndJoined(std::vector<Call>(decode.begin() + starts[step],
                                            decode.begin() + starts[step + 1]),
                          streamId, "a decode step");

  std::multiset<std::string> prefillKernels = kernels(prefill);
  std::multiset<std::string> decodeKernels = kernels(decode);
  // Decode prefetches wq_b's and wo_a's weights into L2; prefill does not
  // (its projections reuse each weight tile across many rows).
  EXPECT_EQ(prefillKernels.count("l2_prefetch"), 0u);
  EXPECT_EQ(decodeKernels.count("l2_prefetch"), 6u);
  for (const char *kernel : {"v4_rope", "v4_indices", "v4_advance"}) {
    EXPECT_TRUE(prefillKernels.count(kernel)) << kernel;
    EXPECT_TRUE(decodeKernels.count(kernel)) << kernel;
  }
  // q's per-head norm and RoPE happen in the attention kernel's prologue
  // (no launch of their own); the norms after split projections (q_lora,
  // kv) share the reduction's.
  EXPECT_TRUE(prefillKernels.count("v4_rmsnorm"));
  EXPECT_EQ(decodeKernels.count("linear_reduce_rmsnorm"), 6u);
  EXPECT_EQ(prefillKernels.count("v4_norm_rope"), 0u);
  EXPECT_EQ(decodeKernels.count("v4_norm_rope"), 0u);
  // Prefill-sized projections store through a staging tile; decode-sized
  // whole-k ones directly.
  EXPECT_TRUE(prefillKernels.count("linear_staged"));
  EXPECT_FALSE(prefillKernels.count("linear"));
  EXPECT_TRUE(decodeKernels.count("linear"));
  EXPECT_FALSE(decodeKernels.count("linear_staged"));
  EXPECT_TRUE(decodeKernels.count("v4_ring_write"));
  // Decode-sized projections split over k (ops::linearSplits).
  EXPECT_TRUE(decodeKernels.count("linear_partial"));
  EXPECT_EQ(decodeKernels.count("linear_partial"),
            decodeKernels.count("linear_reduce") +
                decodeKernels.count("linear_reduce_rmsnorm"));
  if (ratio == 4) {
    // The indexer: prefill per sequence through the flat indexer, decode
    // with the decode-shaped logits.
    EXPECT_EQ(prefillKernels.count("pool_mqa_logits"), size_t(batch));
    EXPECT_EQ(decodeKernels.count("pool_mqa_logits"), 0u);
    EXPECT_EQ(decodeKernels.count("mqa_logits_decode"), 3u);
    EXPECT_EQ(decodeKernels.count("topk_f32"), 3u);
    // The indexer's q: RoPE, Hadamard + fp4 and fp8 in one launch.
    EXPECT_EQ(prefillKernels.count("v4_index_query"), 1u);
    EXPECT_EQ(decodeKernels.count("v4_index_query"), 3u);
    EXPECT_EQ(prefillKernels.count("v4_hadamard_fp4"), 0u);
    EXPECT_EQ(decodeKernels.count("v4_hadamard_fp4"), 0u);
  } else {
    EXPECT_EQ(decodeKernels.count("mqa_logits_decode"), 0u);
  }
  // Each step runs the compressor (and CSA's indexer compressor).
  if (ratio) {
    EXPECT_EQ(decodeKernels.count("v4_compress"), ratio == 4 ? 6u : 3u);
  }
  // Turned off (the default), a step launches no prefetch; a size below -1
  // is refused.
  EXPECT_EQ(hisa_v4_attention_set_l2_prefetch(layer, -2),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hisa_last_error()).find("bytes = -2"),
            std::string::npos)
      << hisa_last_error();
  ASSERT_EQ(hisa_v4_attention_set_l2_prefetch(layer, 0), HISA_OK);
  hisa::fake_cuda::resetCalls();
  ASSERT_EQ(hisa_v4_attention_decode(layer, x, out, stream), HISA_OK)
      << hisa_last_error();
  EXPECT_EQ(kernels(hisa::fake_cuda::calls()).count("l2_prefetch"), 0u);
  ASSERT_EQ(hisa_v4_attention_set_l2_prefetch(layer, -1), HISA_OK);
  for (const Call &call : decode)
    if (call.kind == Call::Launch && call.name == "mqa_logits_decode") {
      // Grid: 1024-key chunks of each sequence's key rows x sequences.
      EXPECT_EQ(call.grid[1], unsigned(batch));
      EXPECT_EQ(call.grid[0], 1u); // 300 / 4 = 75 entries, one chunk
    }

  hisa_v4_attention_destroy(layer);
  EXPECT_EQ(hisa::fake_cuda::counters().bytesAllocated < before.bytesAllocated,
            true)
      << "destroying the layer freed nothing";
}

INSTANTIATE_TEST_SUITE_P(Ratios, V4LayerOnFakeDriver,
                         ::testing::Values(0, 4, 128),
                         [](const ::testing::TestParamInfo<int64_t> &info) {
                           return "ratio" + std::to_string(info.param);
                         });

} // namespace
