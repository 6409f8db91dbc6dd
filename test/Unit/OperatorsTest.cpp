//===- OperatorsTest.cpp - Argument checks of the operator layer ----------===//
//
// The operator and indexer layers check sizes, pointers and workspaces before
// anything reaches the GPU: these run on machines without one, through the C
// ABI that callers see (status and hisa_last_error()).
//
//===----------------------------------------------------------------------===//

#include "hisa/Runtime/hisa_runtime.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace {

/// A fake, suitably aligned device address: the checks never dereference it.
template <typename T = void> T *fake(uintptr_t address = 0x10000) {
  return reinterpret_cast<T *>(address);
}

std::string lastError() { return hisa_last_error(); }

TEST(IndexerWorkspace, SizeCoversPooledKeysScalesAndBlockIndices) {
  uint64_t bytes = 0;
  // N = 1000, kb = 128: Nb = 8 pooled keys of 128 bytes (1024 -> 1024), 8
  // scales (32 -> 256), block_topk = min(16, 8) = 8 indices for 300
  // queries (9600 -> 9728): 11008 bytes in 256-byte pieces.
  ASSERT_EQ(hisa_hisa_indexer_workspace_size(300, 1000, 64, 128, 128, 16, 256,
                                             &bytes),
            HISA_OK)
      << lastError();
  EXPECT_EQ(bytes, 1024u + 256u + 9728u);
  ASSERT_EQ(hisa_flat_indexer_workspace_size(3, 5, 64, 128, 2, &bytes),
            HISA_OK);
  EXPECT_EQ(bytes, 256u); // 3 * 5 * 4 = 60 bytes, one aligned piece
}

TEST(IndexerWorkspace, RefusesUnsupportedShapes) {
  uint64_t bytes = 0;
  EXPECT_EQ(
      hisa_hisa_indexer_workspace_size(16, 1000, 64, 128, 96, 16, 256, &bytes),
      HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("k_block_size = 96"), std::string::npos)
      << lastError();
  EXPECT_EQ(hisa_hisa_indexer_workspace_size(16, 1000, 64, 128, 128, 512, 256,
                                             &bytes),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("block_topk * k_block_size"), std::string::npos)
      << lastError();
  EXPECT_EQ(
      hisa_hisa_indexer_workspace_size(16, 1000, 64, 128, 128, 16, 0, &bytes),
      HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("topk_tokens"), std::string::npos) << lastError();
  EXPECT_EQ(
      hisa_hisa_indexer_workspace_size(16, 0, 64, 128, 128, 16, 64, &bytes),
      HISA_ERROR_INVALID_ARGUMENT);
  // 32769 pooled keys of 64 rows: more than stage 1 keeps on chip.
  EXPECT_EQ(hisa_hisa_indexer_workspace_size(16, 32769 * 64, 64, 128, 64, 16,
                                             64, &bytes),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("32769 pooled keys"), std::string::npos)
      << lastError();
  EXPECT_EQ(hisa_flat_indexer_workspace_size(1, 1, 64, 128, 1, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
}

TEST(Indexer, RefusesASmallOrMisalignedWorkspace) {
  uint64_t bytes = 0;
  ASSERT_EQ(hisa_hisa_indexer_workspace_size(300, 1000, 64, 128, 128, 16, 256,
                                             &bytes),
            HISA_OK);
  EXPECT_EQ(hisa_hisa_indexer(fake(), fake(), fake<float>(), fake<float>(),
                              fake<int32_t>(), fake<int32_t>(), fake<int32_t>(),
                              300, 1000, 64, 128, 128, 16, 256, fake(),
                              bytes - 1, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("workspace has"), std::string::npos)
      << lastError();
  EXPECT_EQ(hisa_hisa_indexer(fake(), fake(), fake<float>(), fake<float>(),
                              fake<int32_t>(), fake<int32_t>(), fake<int32_t>(),
                              300, 1000, 64, 128, 128, 16, 256, fake(0x10010),
                              bytes, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("256-byte aligned"), std::string::npos)
      << lastError();
}

TEST(Indexer, NamesTheUnsupportedHeadCount) {
  uint64_t bytes = 1 << 20;
  EXPECT_EQ(hisa_hisa_indexer(fake(), fake(), fake<float>(), fake<float>(),
                              fake<int32_t>(), fake<int32_t>(), fake<int32_t>(),
                              300, 1000, 48, 128, 128, 16, 256, fake(), bytes,
                              nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("H = 48"), std::string::npos) << lastError();
}

TEST(Topk, ChecksItsArguments) {
  EXPECT_EQ(hisa_topk(fake<float>(), nullptr, nullptr, fake<int32_t>(), 4, 100,
                      0, 0, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("k must be >= 1"), std::string::npos)
      << lastError();
  EXPECT_EQ(hisa_topk(fake<float>(), fake<int32_t>(), nullptr, fake<int32_t>(),
                      4, 100, 8, 0, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("starts and ends"), std::string::npos)
      << lastError();
  EXPECT_EQ(hisa_topk(nullptr, nullptr, nullptr, fake<int32_t>(), 4, 100, 8, 0,
                      nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("x must not be NULL"), std::string::npos)
      << lastError();
  EXPECT_EQ(hisa_topk(fake<float>(), nullptr, nullptr, fake<int32_t>(), 4, 100,
                      8, 1, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("relative"), std::string::npos) << lastError();
  // The kernel's 32-bit column arithmetic bounds rows to 2^30 columns.
  EXPECT_EQ(hisa_topk(fake<float>(), nullptr, nullptr, fake<int32_t>(), 1,
                      (int64_t(1) << 30) + 1, 8, 0, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("columns = 1073741825 exceeds 1073741824"),
            std::string::npos)
      << lastError();
  // Zero rows: nothing to do, no kernel needed.
  EXPECT_EQ(
      hisa_topk(nullptr, nullptr, nullptr, nullptr, 0, 100, 8, 0, nullptr),
      HISA_OK)
      << lastError();
}

TEST(Topk, Bf16ChecksItsArgumentsAndAlignment) {
  EXPECT_EQ(hisa_topk_bf16(fake(), nullptr, nullptr, fake<int32_t>(), 4, 100, 0,
                           0, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("topk_bf16: k must be >= 1"), std::string::npos)
      << lastError();
  // bf16 rows need 2-byte alignment, not f32's 4.
  EXPECT_EQ(hisa_topk_bf16(fake(0x10001), nullptr, nullptr, fake<int32_t>(), 4,
                           100, 8, 0, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("x"), std::string::npos) << lastError();
  EXPECT_NE(lastError().find("2-byte"), std::string::npos) << lastError();
  EXPECT_EQ(
      hisa_topk_bf16(nullptr, nullptr, nullptr, nullptr, 0, 100, 8, 0, nullptr),
      HISA_OK)
      << lastError();
}

TEST(Runtime, DevicePointerChecksToggleReturnsThePreviousSetting) {
  EXPECT_EQ(hisa_set_device_pointer_checks(0), 1); // on by default
  EXPECT_EQ(hisa_set_device_pointer_checks(1), 0);
  EXPECT_EQ(hisa_set_device_pointer_checks(1), 1);
}

TEST(SparseAttn, ChecksItsArguments) {
  auto call = [](int64_t batch, int64_t heads, int64_t nkv, int64_t topk,
                 float scale, const void *q = fake()) {
    return hisa_sparse_attn(q, fake(), fake<float>(), fake<int32_t>(), fake(),
                            nullptr, batch, 3, heads, nkv, topk, scale, nullptr,
                            0, nullptr);
  };
  EXPECT_EQ(call(1, 64, 100, 0, 0.1f), HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("K = 0"), std::string::npos) << lastError();
  EXPECT_EQ(call(1, 64, 100, 5000, 0.1f), HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("K = 5000"), std::string::npos) << lastError();
  EXPECT_EQ(call(1, 0, 100, 64, 0.1f), HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("heads = 0"), std::string::npos) << lastError();
  EXPECT_EQ(call(3, 64, int64_t(1) << 30, 64, 0.1f),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("int32 row numbers"), std::string::npos)
      << lastError();
  EXPECT_EQ(call(1, 64, 100, 64, INFINITY), HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("not finite"), std::string::npos) << lastError();
  EXPECT_EQ(call(1, 64, 100, 64, 0.1f, fake(0x10008)),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("q"), std::string::npos) << lastError();
  EXPECT_NE(lastError().find("16-byte"), std::string::npos) << lastError();
  // No tokens: nothing to do.
  EXPECT_EQ(hisa_sparse_attn(nullptr, nullptr, nullptr, nullptr, nullptr,
                             nullptr, 0, 3, 64, 100, 64, 0.1f, nullptr, 0,
                             nullptr),
            HISA_OK)
      << lastError();
}

TEST(SparseAttn, DecodeWithFewTokensSplitsThroughTheWorkspace) {
  uint64_t bytes = 1;
  // 128 tokens of 64 heads nearly fill 132 SMs: no split, no workspace.
  ASSERT_EQ(hisa_sparse_attn_workspace_size(128, 1, 64, 640, &bytes), HISA_OK)
      << lastError();
  EXPECT_EQ(bytes, 0u);
  // One token: its 10 index tiles over 10 blocks; partial outputs
  // [1, 10, 64, 512] f32 and lse [1, 10, 64] f32, in 256-byte pieces.
  ASSERT_EQ(hisa_sparse_attn_workspace_size(1, 1, 64, 640, &bytes), HISA_OK)
      << lastError();
  EXPECT_EQ(bytes, 1310720u + 2560u);
  // One index tile cannot split.
  ASSERT_EQ(hisa_sparse_attn_workspace_size(1, 1, 64, 64, &bytes), HISA_OK);
  EXPECT_EQ(bytes, 0u);
  // Absurd sizes are refused, not multiplied into an overflow.
  EXPECT_EQ(hisa_sparse_attn_workspace_size(INT64_MAX, 2, 64, 640, &bytes),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("int32 row numbers"), std::string::npos)
      << lastError();
  EXPECT_EQ(hisa_sparse_attn_workspace_size(65536, 65536, 64, 640, &bytes),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("tokens"), std::string::npos) << lastError();
  // A call that splits refuses a missing or short workspace.
  EXPECT_EQ(hisa_sparse_attn(fake(), fake(), fake<float>(), fake<int32_t>(),
                             fake(), nullptr, 1, 1, 64, 100, 640, 0.1f, nullptr,
                             0, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("workspace has 0 bytes"), std::string::npos)
      << lastError();
  EXPECT_EQ(hisa_sparse_attn(fake(), fake(), fake<float>(), fake<int32_t>(),
                             fake(), nullptr, 1, 1, 64, 100, 640, 0.1f, fake(),
                             1024, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("needs 1313280"), std::string::npos)
      << lastError();
}

TEST(FusedStages, RefuseLogitsThatDoNotFitOnChip) {
  EXPECT_EQ(hisa_block_sparse_topk_tokens(
                fake(), fake(), fake<float>(), fake<int32_t>(), fake<float>(),
                fake<int32_t>(), fake<int32_t>(), fake<int32_t>(), 10, 100000,
                256, 256, 64, 128, 2048, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("on chip"), std::string::npos) << lastError();
  EXPECT_EQ(hisa_pool_topk_blocks(fake(), fake(), fake<float>(), fake<float>(),
                                  fake<int32_t>(), fake<int32_t>(),
                                  fake<int32_t>(), 10, 40000, 64, 128, 64, 128,
                                  nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("Nb = 40000"), std::string::npos) << lastError();
  EXPECT_EQ(hisa_pool_topk_blocks(fake(), fake(), fake<float>(),
                                  fake<float>(0x10004), fake<int32_t>(),
                                  fake<int32_t>(), fake<int32_t>(), 10, 400, 64,
                                  128, 64, 128, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("weights"), std::string::npos) << lastError();
}

} // namespace
