//===- ContextParallelTest.cpp - The zigzag split and CP argument checks --===//
//
// The context-parallel layer's split (the same as python/hisa/distributed.py)
// and its checks, without a GPU or NCCL.
//
//===----------------------------------------------------------------------===//

#include "hisa/ContextParallel/ContextParallel.h"
#include "hisa/Runtime/hisa_runtime.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <string>
#include <vector>

namespace {

TEST(ContextParallel, ZigzagCoversEveryPositionOnceAndBalancesCausalWork) {
  for (int64_t total : {0, 1, 7, 100, 1001, 262144})
    for (int64_t world : {1, 2, 3, 8}) {
      std::vector<int> seen(total, 0);
      std::vector<double> work(world, 0);
      for (int64_t rank = 0; rank < world; ++rank) {
        for (auto [start, end] : hisa::cp::rankRanges(total, world, rank))
          for (int64_t p = start; p < end; ++p) {
            ++seen[p];
            work[rank] += p + 1;
          }
      }
      for (int64_t p = 0; p < total; ++p)
        ASSERT_EQ(seen[p], 1) << total << " " << world << " " << p;
      if (total >= 16 * world) {
        double lo = work[0], hi = work[0];
        for (double w : work) {
          lo = std::min(lo, w);
          hi = std::max(hi, w);
        }
        EXPECT_LT(hi / lo, 1.1) << total << " " << world;
      }
    }
}

TEST(ContextParallel, TheCAbiNamesBadArguments) {
  int64_t ranges[4];
  ASSERT_EQ(hisa_cp_rank_ranges(10, 2, 1, ranges), HISA_OK);
  // 4 chunks of 10 tokens: [0,2) [2,5) [5,7) [7,10); rank 1: chunks 1 and 2.
  EXPECT_EQ(ranges[0], 2);
  EXPECT_EQ(ranges[1], 5);
  EXPECT_EQ(ranges[2], 5);
  EXPECT_EQ(ranges[3], 7);
  EXPECT_EQ(hisa_cp_rank_ranges(10, 2, 2, ranges), HISA_ERROR_INVALID_ARGUMENT);
  uint64_t bytes = 0;
  EXPECT_EQ(hisa_cp_hisa_indexer_workspace_size(0, 2, 0, 64, 128, 128, 16, 256,
                                                &bytes),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hisa_last_error()).find("total = 0"),
            std::string::npos);
  ASSERT_EQ(hisa_cp_hisa_indexer_workspace_size(4096, 2, 1, 64, 128, 128, 16,
                                                256, &bytes),
            HISA_OK)
      << hisa_last_error();
  EXPECT_GT(bytes, uint64_t(4096) * 128); // the gathered fp8 keys at least
  // No communicator: refused before anything runs.
  EXPECT_NE(hisa_cp_sparse_attn(nullptr, nullptr, nullptr, nullptr, nullptr,
                                100, 64, 128, 0.04f, nullptr, nullptr, 0,
                                nullptr),
            HISA_OK);
  EXPECT_NE(std::string(hisa_last_error()).find("communicator is NULL"),
            std::string::npos);
}

// Every rank is given the same workspace size (the widest rank's): a rank
// that sized its workspace with another rank's answer and was refused
// would leave its peers waiting in the all-gather.
TEST(ContextParallel, EveryRankGetsTheSameWorkspaceSize) {
  for (int64_t total : {9, 100, 4097})
    for (int64_t world : {2, 3, 8}) {
      uint64_t indexer0 = 0, attention0 = 0;
      for (int64_t rank = 0; rank < world; ++rank) {
        uint64_t indexer = 0, attention = 0;
        ASSERT_EQ(hisa_cp_hisa_indexer_workspace_size(
                      total, world, rank, 64, 128, 128, 16, 256, &indexer),
                  HISA_OK)
            << hisa_last_error();
        ASSERT_EQ(hisa_cp_sparse_attn_workspace_size(total, world, rank, 64,
                                                     640, &attention),
                  HISA_OK)
            << hisa_last_error();
        if (rank == 0) {
          indexer0 = indexer, attention0 = attention;
          continue;
        }
        EXPECT_EQ(indexer, indexer0) << total << " " << world << " " << rank;
        EXPECT_EQ(attention, attention0)
            << total << " " << world << " " << rank;
      }
    }
}

// The common size covers every rank's own use: kv rows, the gather and
// the attention's split-key workspace for its token count. With few
// tokens that workspace grows as tokens shrink (more splits per token), so
// the widest rank's is not always the largest (33 tokens over 2 ranks,
// 512 indices: 17 tokens in 7 splits, 16 in 8).
TEST(ContextParallel, TheCommonAttentionWorkspaceCoversEveryRank) {
  struct Case {
    int64_t total, world, heads, topk;
  };
  for (Case c :
       {Case{33, 2, 64, 512}, Case{65, 4, 64, 512}, Case{129, 8, 64, 512},
        Case{17, 2, 128, 640}, Case{4097, 3, 64, 640}, Case{9, 8, 64, 2048}})
    for (int64_t rank = 0; rank < c.world; ++rank) {
      uint64_t common = 0, own = 0;
      ASSERT_EQ(hisa_cp_sparse_attn_workspace_size(c.total, c.world, rank,
                                                   c.heads, c.topk, &common),
                HISA_OK)
          << hisa_last_error();
      int64_t tokens = hisa::cp::localTokens(c.total, c.world, rank);
      ASSERT_EQ(
          hisa_sparse_attn_workspace_size(1, tokens, c.heads, c.topk, &own),
          HISA_OK)
          << hisa_last_error();
      auto align = [](uint64_t bytes) { return (bytes + 255) / 256 * 256; };
      uint64_t kvAndGather =
          align(uint64_t(c.total) * 1024) +
          align(hisa::cp::gatherWorkspaceSize(c.total, c.world, 1024));
      EXPECT_GE(common, kvAndGather + own)
          << c.total << " tokens over " << c.world << ", rank " << rank;
    }
}

// NCCL missing is the machine's, not the caller's (HISA_ERROR_NO_DEVICE),
// and said the same way on every call.
TEST(ContextParallel, AMissingNcclIsNotAnArgumentError) {
  setenv("HISA_NCCL_LIB", "/nonexistent/libnccl.so.2", 1);
  int someCommunicator = 0;
  for (int call = 0; call < 2; ++call) {
    EXPECT_EQ(hisa_cp_sparse_attn(nullptr, nullptr, nullptr, nullptr, nullptr,
                                  100, 64, 128, 0.04f, &someCommunicator,
                                  nullptr, 0, nullptr),
              HISA_ERROR_NO_DEVICE);
    EXPECT_NE(std::string(hisa_last_error()).find("needs NCCL"),
              std::string::npos)
        << hisa_last_error();
  }
  unsetenv("HISA_NCCL_LIB");
}

} // namespace
