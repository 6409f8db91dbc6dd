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

// Regressions found by test/FakeDriver/CAPIArgumentFuzzTest.cpp: sizes
// whose products wrapped, sizes past the kernels' int32 indices or the
// grid, and messages that named no argument of the call.

TEST(ArgumentBounds, FlashAttnRefusesSizesWhoseProductWraps) {
  // 2 * 8 * 2^62 wrapped to 0: the call launched nothing and returned OK.
  EXPECT_EQ(hisa_flash_attn(nullptr, fake(), fake(), fake(), 2, 8,
                            int64_t(1) << 62, 128, 1, 0.1f, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("seq_len"), std::string::npos) << lastError();
  // 65536 * 65536 (batch, head) planes of one 128-query tile: 2^32 blocks.
  EXPECT_EQ(hisa_flash_attn(fake(), fake(), fake(), fake(), 65536, 65536, 128,
                            64, 1, 0.1f, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("batch * heads * ceil(seq_len / 128)"),
            std::string::npos)
      << lastError();
}

TEST(ArgumentBounds, TopkRefusesSizesPastTheKernelsInt32) {
  // The kernel counts k in 32 bits: 2^32 + 8 would have selected 8.
  EXPECT_EQ(hisa_topk(fake<float>(), nullptr, nullptr, fake<int32_t>(), 1, 100,
                      (int64_t(1) << 32) + 8, 0, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("k = 4294967304"), std::string::npos)
      << lastError();
  // A block per row (the grid's error named no argument).
  EXPECT_EQ(hisa_topk_bf16(fake(), nullptr, nullptr, fake<int32_t>(),
                           int64_t(1) << 31, 100, 8, 0, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("rows = 2147483648"), std::string::npos)
      << lastError();
  EXPECT_EQ(hisa_clean_and_maintain_logits(fake<float>(), fake<int32_t>(),
                                           fake<int32_t>(), int64_t(1) << 31,
                                           16, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("m = 2147483648"), std::string::npos)
      << lastError();
  EXPECT_EQ(hisa_fp8_block_mean_pooling(fake(), fake<float>(), fake(),
                                        fake<float>(), INT64_MAX, 128, 128,
                                        nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("n = 9223372036854775807"), std::string::npos)
      << lastError();
  EXPECT_EQ(hisa_block_sparse_mqa_logits(
                fake(), fake(), fake<float>(), fake<int32_t>(), fake<float>(),
                fake<int32_t>(), fake<int32_t>(), fake<float>(), 10,
                int64_t(1) << 31, 16, 128, 64, 128, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("n = 2147483648"), std::string::npos)
      << lastError();
  // The block indices stay in shared memory: topk past 32768 is refused by
  // name (it was a compile error at ~57000, and each value a new kernel).
  EXPECT_EQ(hisa_block_sparse_mqa_logits(
                fake(), fake(), fake<float>(), fake<int32_t>(), fake<float>(),
                fake<int32_t>(), fake<int32_t>(), fake<float>(), 1, 64, 32769,
                64, 64, 128, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("topk = 32769 exceeds 32768"), std::string::npos)
      << lastError();
  // Entry points that succeed clear the previous call's message.
  int64_t ranges[4];
  EXPECT_EQ(hisa_cp_rank_ranges(10, 2, 0, ranges), HISA_OK);
  EXPECT_EQ(lastError(), "");
  EXPECT_EQ(hisa_l2_prefetch(fake(), (uint64_t(1) << 48) + 16, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("bytes = 281474976710672"), std::string::npos)
      << lastError();
}

TEST(ArgumentBounds, FusedStagesNameTheirArguments) {
  // T * kb wrapped below 32768 and reached the compiler.
  EXPECT_EQ(hisa_block_sparse_topk_tokens(
                fake(), fake(), fake<float>(), fake<int32_t>(), fake<float>(),
                fake<int32_t>(), fake<int32_t>(), fake<int32_t>(), 10, 1000,
                int64_t(1) << 62, 256, 64, 128, 2048, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("T * k_block_size"), std::string::npos)
      << lastError();
  EXPECT_EQ(hisa_block_sparse_topk_tokens(
                fake(), fake(), fake<float>(), fake<int32_t>(), fake<float>(),
                fake<int32_t>(), fake<int32_t>(), fake<int32_t>(), 10, 1000, 16,
                128, 64, 128, int64_t(1) << 32, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("topk_tokens = 4294967296"), std::string::npos)
      << lastError();
  auto poolTopk = [](int64_t outColumns, int64_t windowKb) {
    return hisa_pool_topk_blocks(fake(), fake(), fake<float>(), fake<float>(),
                                 fake<int32_t>(), fake<int32_t>(),
                                 fake<int32_t>(), 10, 400, 64, 128, outColumns,
                                 windowKb, nullptr);
  };
  EXPECT_EQ(poolTopk(64, 3), HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("window_kb = 3"), std::string::npos)
      << lastError();
  EXPECT_EQ(poolTopk(0, 128), HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("out_columns = 0"), std::string::npos)
      << lastError();
  // No pooled keys: no column to fill, so a column asked for is refused
  // (it would stay unwritten) and none is a no-op.
  auto noKeys = [](int64_t outColumns) {
    return hisa_pool_topk_blocks(fake(), fake(), fake<float>(), fake<float>(),
                                 fake<int32_t>(), fake<int32_t>(),
                                 fake<int32_t>(), 5, 0, 64, 128, outColumns,
                                 128, nullptr);
  };
  EXPECT_EQ(noKeys(1), HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("0 when Nb = 0"), std::string::npos)
      << lastError();
  EXPECT_EQ(noKeys(0), HISA_OK) << lastError();
  // pool_mqa_logits left its pointers to the kernel, whose names differ
  // (blocked_scale).
  EXPECT_EQ(hisa_pool_mqa_logits(fake(), fake(), nullptr, fake<float>(),
                                 fake<int32_t>(), fake<int32_t>(),
                                 fake<float>(), 10, 40, 64, 128, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("blocked_k_scale must not be NULL"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(hisa_pool_mqa_logits(fake(), fake(), fake<float>(0x10008),
                                 fake<float>(), fake<int32_t>(),
                                 fake<int32_t>(), fake<float>(), 10, 40, 64,
                                 128, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("blocked_k_scale"), std::string::npos)
      << lastError();
  EXPECT_NE(lastError().find("16-byte"), std::string::npos) << lastError();
}

TEST(IndexerWorkspace, RefusesSizesWhoseBytesWrap) {
  uint64_t bytes = 0;
  // m * min(block_topk, Nb) * 4 wrapped: a few KB for INT64_MAX queries.
  EXPECT_EQ(hisa_hisa_indexer_workspace_size(INT64_MAX, 1000, 64, 128, 128, 16,
                                             256, &bytes),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("m = 9223372036854775807"), std::string::npos)
      << lastError();
  // block_topk * kb wrapped below the stage-2 limit.
  EXPECT_EQ(hisa_hisa_indexer_workspace_size(16, 1000, 64, 128, 128,
                                             int64_t(1) << 62, 256, &bytes),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("block_topk * k_block_size"), std::string::npos)
      << lastError();
  // The [m, n] f32 logits: 2^63 bytes (2^64 wrapped to 0 before).
  EXPECT_EQ(hisa_flat_indexer_workspace_size(INT32_MAX, int64_t(1) << 30, 64,
                                             128, 256, &bytes),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("logits [m, n]"), std::string::npos)
      << lastError();
  EXPECT_EQ(
      hisa_flat_indexer_workspace_size(4, 100, 64, 128, INT64_MAX, &bytes),
      HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("topk_tokens"), std::string::npos) << lastError();
  // The output is called bytes (the message said "out").
  EXPECT_EQ(hisa_hisa_indexer_workspace_size(16, 1000, 64, 128, 128, 16, 256,
                                             nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("bytes must not be NULL"), std::string::npos)
      << lastError();
}

TEST(Indexer, NamesItsOwnPointers) {
  // The operators it runs named theirs (pool_mqa_logits: bks; stage 1:
  // starts).
  uint64_t bytes = 0;
  ASSERT_EQ(hisa_flat_indexer_workspace_size(37, 3000, 64, 128, 256, &bytes),
            HISA_OK);
  EXPECT_EQ(hisa_flat_indexer(fake(), fake(), fake<float>(), fake<float>(),
                              nullptr, fake<int32_t>(), fake<int32_t>(), 37,
                              3000, 64, 128, 256, fake(), bytes, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("flat_indexer: ks must not be NULL"),
            std::string::npos)
      << lastError();
  ASSERT_EQ(hisa_hisa_indexer_workspace_size(300, 1000, 64, 128, 128, 16, 256,
                                             &bytes),
            HISA_OK);
  EXPECT_EQ(hisa_hisa_indexer(fake(), fake(), fake<float>(), fake<float>(),
                              fake<int32_t>(), fake<int32_t>(0x10002),
                              fake<int32_t>(), 300, 1000, 64, 128, 128, 16, 256,
                              fake(), bytes, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("hisa_indexer: ke"), std::string::npos)
      << lastError();
}

TEST(SparseAttn, NamesSeqLenAndTheGrid) {
  // seq_len past int32 was reported as kv's rows.
  EXPECT_EQ(hisa_sparse_attn(fake(), fake(), fake<float>(), fake<int32_t>(),
                             fake(), nullptr, 1, int64_t(1) << 31, 64, 100, 64,
                             0.1f, nullptr, 0, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("seq_len = 2147483648"), std::string::npos)
      << lastError();
  // A block per token and 64 heads: 2 * (2^31 - 1) blocks.
  uint64_t bytes = 0;
  EXPECT_EQ(hisa_sparse_attn_workspace_size(1, INT32_MAX, 128, 64, &bytes),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("blocks exceed the grid"), std::string::npos)
      << lastError();
}

TEST(ContextParallel, TheSplitIsBounded) {
  int64_t ranges[4] = {};
  // total * 2 * world overflowed int64: wrong ranges, returned as valid.
  EXPECT_EQ(hisa_cp_rank_ranges(int64_t(1) << 62, 4, 1, ranges),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("total = 4611686018427387904"), std::string::npos)
      << lastError();
  EXPECT_EQ(hisa_cp_rank_ranges(1000, 65537, 1, ranges),
            HISA_ERROR_INVALID_ARGUMENT);
  // At the limits the ranges are exact.
  ASSERT_EQ(hisa_cp_rank_ranges(INT32_MAX, 65536, 65535, ranges), HISA_OK)
      << lastError();
  auto bound = [](__int128 i) {
    return int64_t(__int128(INT32_MAX) * i / (2 * 65536));
  };
  EXPECT_EQ(ranges[0], bound(65535));
  EXPECT_EQ(ranges[1], bound(65536));
  EXPECT_EQ(ranges[2], bound(65536));
  EXPECT_EQ(ranges[3], bound(65537));
  // The workspace sizes walked every rank: INT64_MAX of them never ended.
  uint64_t bytes = 0;
  EXPECT_EQ(hisa_cp_hisa_indexer_workspace_size(4096, INT64_MAX, 1, 64, 128,
                                                128, 16, 256, &bytes),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("world = 9223372036854775807"), std::string::npos)
      << lastError();
  EXPECT_EQ(
      hisa_cp_sparse_attn_workspace_size(INT64_MAX, 2, 0, 64, 512, &bytes),
      HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("total = 9223372036854775807"), std::string::npos)
      << lastError();
}

TEST(Jit, CompileRefusesAPathCapacityWithNoRoom) {
  // With out_path given and no room, the call wrote nothing and said OK.
  char path[16] = "unchanged";
  EXPECT_EQ(
      hisa_kernel_compile(nullptr, "l2_prefetch", nullptr, "sm_90a", path, 0),
      HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("path_capacity = 0"), std::string::npos)
      << lastError();
  EXPECT_STREQ(path, "unchanged");
}

} // namespace

// Found by the argument fuzz test with other seeds (HISA_CAPI_FUZZ_SEED).
TEST(Indexer, ChecksItsSizesWithItsOwnNames) {
  uint64_t bytes = 0;
  // n past the exact top-k's rows: named n, not the inner top-k's columns.
  EXPECT_EQ(hisa_flat_indexer_workspace_size(3, INT32_MAX, 64, 128, 16, &bytes),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("n = 2147483647"), std::string::npos)
      << lastError();
  // A huge topk is refused also when there is no query to compute.
  EXPECT_EQ(hisa_block_sparse_mqa_logits(
                fake(), fake(), fake<float>(), fake<int32_t>(), fake<float>(),
                fake<int32_t>(), fake<int32_t>(), fake<float>(), 0, 5000,
                (int64_t(1) << 48) + 1, 128, 64, 128, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("topk"), std::string::npos) << lastError();
  // The context-parallel indexer's N is the caller's total.
  EXPECT_EQ(hisa_cp_hisa_indexer_workspace_size(INT32_MAX, 2, 1, 64, 128, 128,
                                                16, 256, &bytes),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("total = 2147483647"), std::string::npos)
      << lastError();
}
