//===- ContextParallelTest.cpp - The zigzag split and CP argument checks --===//
//
// The context-parallel layer's split (the same as python/hisa/distributed.py)
// and its checks, without a GPU or NCCL.
//
//===----------------------------------------------------------------------===//

#include "hisa/ContextParallel/ContextParallel.h"
#include "hisa/Runtime/hisa_runtime.h"

#include "gtest/gtest.h"

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

} // namespace
