//===- V4AttentionTest.cpp - Argument checks of the V4 layer --------------===//
//
// hisa_v4_attention_create checks the configuration and the weights before
// it loads the driver or allocates: these run without a GPU, through the C
// ABI (status and hisa_last_error()).
//
//===----------------------------------------------------------------------===//

#include "hisa/Runtime/hisa_runtime.h"
#include "hisa/hisa.hpp"

#include "gtest/gtest.h"

#include <cstdint>
#include <string>

namespace {

const void *fake(uintptr_t address) {
  return reinterpret_cast<const void *>(address);
}

hisa_v4_config smallConfig(int64_t ratio) {
  hisa_v4_config config = hisa::v4::flashConfig(ratio);
  config.dim = 256;
  config.heads = 16;
  config.q_lora = 256;
  config.o_groups = 2;
  config.o_lora = 256;
  return config;
}

hisa_v4_weights allWeights() {
  hisa_v4_weights w = {};
  w.wq_a = w.wq_b = w.wkv = w.wo_a = w.wo_b = fake(0x10000);
  w.q_norm = w.kv_norm = w.attn_sink =
      static_cast<const float *>(fake(0x20000));
  w.c_wkv = w.c_wgate = fake(0x30000);
  w.c_ape = w.c_norm = static_cast<const float *>(fake(0x40000));
  return w;
}

std::string createError(const hisa_v4_config &config,
                        const hisa_v4_weights &weights, int64_t batch = 1,
                        int64_t maxSeq = 64) {
  hisa_v4_attention *layer = nullptr;
  int status =
      hisa_v4_attention_create(&config, &weights, batch, maxSeq, 0, &layer);
  EXPECT_EQ(status, HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(layer, nullptr);
  return hisa_last_error();
}

TEST(V4Attention, RefusesUnsupportedRatios) {
  EXPECT_NE(
      createError(smallConfig(7), allWeights()).find("compress_ratio = 7"),
      std::string::npos);
  // CSA needs the indexer's weights and its fixed 64 heads.
  std::string csa = createError(smallConfig(4), allWeights());
  EXPECT_NE(csa.find("weight i_wq must not be NULL"), std::string::npos) << csa;
  hisa_v4_config heads = smallConfig(4);
  heads.index_heads = 32;
  EXPECT_NE(createError(heads, allWeights()).find("index_heads = 64 (got 32)"),
            std::string::npos);
}

TEST(V4Attention, ChecksDimensions) {
  hisa_v4_config config = smallConfig(128);
  config.o_lora = 100;
  EXPECT_NE(createError(config, allWeights()).find("o_lora = 100"),
            std::string::npos);
  config = smallConfig(0);
  config.heads = 12;
  config.o_groups = 8;
  EXPECT_NE(createError(config, allWeights()).find("o_groups = 8"),
            std::string::npos);
  EXPECT_NE(createError(smallConfig(0), allWeights(), 0).find("batch = 0"),
            std::string::npos);
}

// What a forward's kernels would refuse is refused by create, so that a
// created layer runs (a forward refused halfway would leave its caches
// ahead of its length).
TEST(V4Attention, RefusesWhatAForwardCouldNotRun) {
  hisa_v4_config config = smallConfig(0);
  config.q_lora = 384; // q's RMSNorm takes powers of two
  std::string norm = createError(config, allWeights());
  EXPECT_NE(norm.find("q_lora = 384"), std::string::npos) << norm;
  config = smallConfig(0);
  config.dim = 16448;
  std::string wide = createError(config, allWeights());
  EXPECT_NE(wide.find("k = dim) reads rows of 16448 elements"),
            std::string::npos)
      << wide;
  config = smallConfig(0);
  config.heads = 128;
  config.o_groups = 2; // wo_a's rows: 64 heads x 512
  std::string grouped = createError(config, allWeights());
  EXPECT_NE(grouped.find("wo_a (k = heads / o_groups * 512) reads rows of "
                         "32768"),
            std::string::npos)
      << grouped;
  // HCA: the window and max_seq / 128 entries within 4096 indices.
  std::string hca = createError(smallConfig(128), allWeights(), 1, 508032);
  EXPECT_NE(hca.find("max_seq = 508032"), std::string::npos) << hca;
  EXPECT_NE(hca.find("max_seq <= 508031"), std::string::npos) << hca;
  // A window-only layer: a prefill's 2D copies have a sequence's kv rows as
  // pitch, which the driver limits below 2^31 bytes.
  std::string pitch = createError(smallConfig(0), allWeights(), 1, 2097152);
  EXPECT_NE(pitch.find("max_seq = 2097152: a sequence's 2097152 kv rows"),
            std::string::npos)
      << pitch;
  // CSA decode scores at most 65535 sequences.
  hisa_v4_weights weights = allWeights();
  weights.i_wq = weights.i_weights = weights.i_wkv = weights.i_wgate =
      fake(0x50000);
  weights.i_ape = weights.i_norm = static_cast<const float *>(fake(0x60000));
  std::string csa = createError(smallConfig(4), weights, 65536, 8);
  EXPECT_NE(csa.find("batch = 65536"), std::string::npos) << csa;
}

TEST(V4Attention, NamesAMissingWeight) {
  hisa_v4_weights weights = allWeights();
  weights.c_wgate = nullptr;
  EXPECT_NE(createError(smallConfig(128), weights).find("c_wgate"),
            std::string::npos);
  // Window-only layers need no compressor weights.
  weights = allWeights();
  weights.wkv = nullptr;
  EXPECT_NE(createError(smallConfig(0), weights).find("wkv"),
            std::string::npos);
}

TEST(V4Attention, NullArguments) {
  hisa_v4_config config = smallConfig(0);
  hisa_v4_weights weights = allWeights();
  hisa_v4_attention *layer = nullptr;
  EXPECT_EQ(hisa_v4_attention_create(nullptr, &weights, 1, 8, 0, &layer),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(hisa_v4_attention_create(&config, &weights, 1, 8, 0, nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(hisa_v4_attention_prefill(nullptr, fake(0x10000), 4,
                                      const_cast<void *>(fake(0x10000)),
                                      nullptr),
            HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hisa_last_error()).find("layer must not be NULL"),
            std::string::npos);
  hisa_v4_attention_destroy(nullptr); // a no-op
}

TEST(V4Attention, TheCppWrapperReportsAndLeavesNoLayer) {
  std::unique_ptr<hisa::v4::Attention> layer;
  hisa::Status status = hisa::v4::Attention::create(
      hisa::v4::flashConfig(7), allWeights(), 1, 256, layer);
  EXPECT_FALSE(status);
  EXPECT_EQ(status.code, HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(status.message.find("compress_ratio = 7"), std::string::npos)
      << status.message;
  EXPECT_EQ(layer, nullptr);
  // V4-Flash's dimensions pass the checks up to the weights: CSA needs the
  // indexer's.
  status = hisa::v4::Attention::create(hisa::v4::flashConfig(4), allWeights(),
                                       1, 256, layer);
  EXPECT_NE(status.message.find("i_wq"), std::string::npos) << status.message;
}

} // namespace
