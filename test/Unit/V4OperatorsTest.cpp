//===- V4OperatorsTest.cpp - Argument checks of the V4 layer's operators --===//
//
// The operators under the V4 layer (hisa/Ops/V4Operators.h) refuse bad sizes
// and pointers with a message naming them, before anything reaches a GPU:
// these run without one.
//
//===----------------------------------------------------------------------===//

#include "hisa/Ops/V4Operators.h"
#include "hisa/Ops/Operators.h"
#include "hisa/Runtime/hisa_runtime.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <string>

using namespace hisa::ops;

namespace {

template <typename T = void> T *fake(uintptr_t address = 0x10000) {
  return reinterpret_cast<T *>(address);
}

/// The message of a failed call ("" on success, which the tests reject).
std::string messageOf(llvm::Error error) {
  if (!error)
    return "";
  return llvm::toString(std::move(error));
}

TEST(V4Operators, LinearChecksItsShape) {
  EXPECT_NE(messageOf(linear(fake(), fake(), fake(), 4, 64, 100, 1, nullptr))
                .find("k = 100 must be a multiple of 64"),
            std::string::npos);
  EXPECT_NE(messageOf(linear(fake(), fake(), fake(), 4, 64, 128, 2, nullptr))
                .find("with groups = 2, n = 64 must be a multiple of 256"),
            std::string::npos);
  EXPECT_NE(messageOf(linear(fake(), fake(), fake(), -1, 64, 128, 1, nullptr))
                .find("m = -1 is negative"),
            std::string::npos);
  EXPECT_NE(messageOf(linear(nullptr, fake(), fake(), 4, 64, 128, 1, nullptr))
                .find("x must not be NULL"),
            std::string::npos);
  // Nothing to do is not an error.
  EXPECT_EQ(
      messageOf(linear(nullptr, nullptr, nullptr, 0, 64, 128, 1, nullptr)), "");
}

TEST(V4Operators, SplitKLinearChecksItsSplitsAndWorkspace) {
  // m = 4: 64 x 64 tiles with k steps of 128; k = 1024 has 8 of them.
  EXPECT_NE(
      messageOf(linearSplitK(fake(), fake(), fake(), 4, 64, 1024, 1, 3,
                             fake<float>(), 1 << 20, nullptr))
          .find("splits = 3 must lie in [2, 16] and divide the 8 k steps"),
      std::string::npos);
  EXPECT_NE(messageOf(linearSplitK(fake(), fake(), fake(), 4, 64, 1024, 1, 4,
                                   fake<float>(), 100, nullptr))
                .find("workspace has 100 bytes, needs 4096"),
            std::string::npos);
}

TEST(V4Operators, NormRopeAndQuantizeCheckTheirSizes) {
  EXPECT_NE(messageOf(v4Rmsnorm(fake(), fake<float>(), fake(), 3, 300, 1e-6f,
                                nullptr))
                .find("dim = 300"),
            std::string::npos);
  EXPECT_NE(messageOf(v4Rope(fake(), fake<float>(), fake<float>(),
                             fake<int32_t>(), 3, 4, 256, 1, 16, false, nullptr))
                .find("dim = 256 128 or 512"),
            std::string::npos);
  EXPECT_NE(messageOf(v4Fp8Qdq(fake(0x10001), 3, nullptr)).find("aligned"),
            std::string::npos);
  EXPECT_NE(messageOf(v4HadamardFp4(nullptr, 3, nullptr)).find("x must not"),
            std::string::npos);
}

TEST(V4Operators, FusedNormOperatorsNameTheirArguments) {
  // The split-k reduction with the norm: a norm size, eps, the weight.
  EXPECT_NE(messageOf(linearSplitKRmsnorm(fake(), fake(), fake(), 4, 320, 1024,
                                          4, fake<float>(), 1 << 20,
                                          fake<float>(), 1e-6f, nullptr))
                .find("linear_split_k_rmsnorm: dim = 320"),
            std::string::npos);
  EXPECT_NE(messageOf(linearSplitKRmsnorm(fake(), fake(), fake(), 4, 512, 1024,
                                          4, fake<float>(), 1 << 20,
                                          fake<float>(), -1.0f, nullptr))
                .find("eps = -1"),
            std::string::npos);
  EXPECT_NE(messageOf(linearSplitKRmsnorm(fake(), fake(), fake(), 4, 512, 1024,
                                          4, fake<float>(), 100, fake<float>(),
                                          1e-6f, nullptr))
                .find("workspace has 100 bytes"),
            std::string::npos);
  EXPECT_NE(messageOf(linearSplitKRmsnorm(fake(), fake(), fake(), 4, 512, 1024,
                                          4, fake<float>(), 1 << 20, nullptr,
                                          1e-6f, nullptr))
                .find("norm_weight must not be NULL"),
            std::string::npos);
  // The per-head norm with RoPE: head size, eps, 16-byte rows.
  EXPECT_NE(
      messageOf(v4NormRope(fake(), fake<float>(), fake<float>(), fake<float>(),
                           fake<int32_t>(), 3, 4, 256, 1, 16, 1e-6f, nullptr))
          .find("v4_norm_rope: heads = 4 must be >= 1 and dim = 256"),
      std::string::npos);
  EXPECT_NE(
      messageOf(v4NormRope(fake(), fake<float>(), fake<float>(), fake<float>(),
                           fake<int32_t>(), 3, 4, 512, 1, 16, NAN, nullptr))
          .find("eps = nan"),
      std::string::npos);
  std::string misaligned = messageOf(
      v4NormRope(fake(0x10008), fake<float>(), fake<float>(), fake<float>(),
                 fake<int32_t>(), 3, 4, 512, 1, 16, 1e-6f, nullptr));
  EXPECT_NE(misaligned.find("v4_norm_rope: x ("), std::string::npos)
      << misaligned;
  EXPECT_NE(misaligned.find("must be 16-byte aligned"), std::string::npos)
      << misaligned;
}

TEST(V4Operators, SparseAttnChecksItsLayerRope) {
  LayerRope rope;
  rope.cos = fake<float>();
  rope.sin = fake<float>();
  rope.base = fake<int32_t>();
  rope.tablePositions = 0;
  auto call = [&](const LayerRope &r) {
    return messageOf(sparseAttn(fake(), fake(), fake<float>(), fake<int32_t>(),
                                fake(), nullptr, 2, 1, 64, 100, 64, 0.04f,
                                nullptr, 0, nullptr, &r));
  };
  EXPECT_NE(call(rope).find("the RoPE tables' positions = 0 must be >= 1"),
            std::string::npos);
  rope.tablePositions = 16;
  rope.sin = nullptr;
  EXPECT_NE(call(rope).find("rope sin must not be NULL"), std::string::npos);
  rope.sin = fake<float>();
  rope.normalizeQuery = true;
  rope.queryEps = -1.0f;
  EXPECT_NE(call(rope).find("the query norm's eps = -1"), std::string::npos);
}

TEST(V4Operators, CompressorChecksItsShape) {
  CompressShape shape;
  shape.batch = 1;
  shape.dim = 512;
  shape.ratio = 4;
  shape.overlap = true;
  shape.quantize = 2; // Hadamard + fp4 is for the indexer's 128 dims
  shape.slots = 64;
  shape.firstSlot = 0;
  shape.tablePositions = 256;
  EXPECT_NE(
      messageOf(v4CompressPrefill(fake(), fake(), fake<float>(), fake<float>(),
                                  fake<float>(), fake<float>(), fake<float>(),
                                  fake<float>(), fake(), fake<int32_t>(), shape,
                                  16, 1e-6f, nullptr))
          .find("quantize = 2"),
      std::string::npos);
  shape.quantize = 1;
  shape.ratio = 128; // overlap is ratio 4 only
  EXPECT_NE(
      messageOf(v4CompressDecode(fake(), fake(), fake<float>(), fake<float>(),
                                 fake<float>(), fake<float>(), fake<float>(),
                                 fake<float>(), fake(), fake<int32_t>(), shape,
                                 1e-6f, nullptr))
          .find("ratio = 128 with overlap = 1"),
      std::string::npos);
  shape.ratio = 4;
  // 64 tokens make 16 entries: from slot 60 they do not fit 64 slots.
  shape.firstSlot = 60;
  EXPECT_NE(
      messageOf(v4CompressPrefill(fake(), fake(), fake<float>(), fake<float>(),
                                  fake<float>(), fake<float>(), fake<float>(),
                                  fake<float>(), fake(), fake<int32_t>(), shape,
                                  64, 1e-6f, nullptr))
          .find("16 entries from slot 60 do not fit the 64 slots"),
      std::string::npos);
}

TEST(V4Operators, IndexRowsAndIndexerPiecesCheckTheirArguments) {
  IndexShape shape;
  shape.tokens = 4;
  shape.window = 128;
  shape.slots = 8;
  shape.ratio = 128;
  shape.csa = true; // CSA is ratio 4
  EXPECT_NE(messageOf(v4Indices(fake<int32_t>(), fake<int32_t>(),
                                fake<int32_t>(), shape, 4, nullptr))
                .find("csa only with ratio 4"),
            std::string::npos);
  shape.csa = false;
  shape.ratio = 0; // window only has no compressed slots
  EXPECT_NE(
      messageOf(v4Indices(fake<int32_t>(), nullptr, nullptr, shape, 4, nullptr))
          .find("slots = 0 exactly when ratio = 0"),
      std::string::npos);
  EXPECT_NE(messageOf(v4ToFp8(fake(), fake(), fake<float>(), nullptr, nullptr,
                              nullptr, 1, 10, 4, 12, 1.0f, nullptr))
                .find("rows [4, 12) of 10 slots"),
            std::string::npos);
  EXPECT_NE(
      messageOf(v4RingWrite(fake(), fake(), fake<int32_t>(), 2, 100, nullptr))
          .find("the cache's 100 rows hold the 128-token ring"),
      std::string::npos);
  EXPECT_NE(messageOf(v4Advance(nullptr, 2, false, 0, nullptr))
                .find("positions must not be NULL"),
            std::string::npos);
  EXPECT_NE(messageOf(v4IndexWindows(fake<int32_t>(), fake<int32_t>(),
                                     fake<int32_t>(), 4, 0, 8, 4, nullptr))
                .find("seq = 0"),
            std::string::npos);
}

TEST(V4Operators, IndexQueryNamesItsArguments) {
  auto call = [](const void *q, const void *wIn, int64_t heads, int64_t seq,
                 float factor) {
    return messageOf(v4IndexQuery(
        q, fake<float>(), fake<float>(), fake<int32_t>(), wIn, fake(),
        fake<float>(), fake<float>(), 3, heads, seq, 16, factor, nullptr));
  };
  EXPECT_NE(call(nullptr, fake(), 4, 1, 1.0f).find("q must not"),
            std::string::npos);
  EXPECT_NE(call(fake(), fake(0x10001), 4, 1, 1.0f).find("w_in"),
            std::string::npos);
  EXPECT_NE(call(fake(), fake(), 0, 1, 1.0f).find("heads = 0"),
            std::string::npos);
  EXPECT_NE(call(fake(), fake(), 4, 0, 1.0f).find("seq = 0"),
            std::string::npos);
  EXPECT_NE(call(fake(), fake(), 4, 1, std::nanf("")).find("not finite"),
            std::string::npos);
}

TEST(V4Operators, DecodeLogitsCheckTheirShape) {
  EXPECT_NE(
      messageOf(mqaLogitsDecode(fake(), fake(), fake<float>(), fake<float>(),
                                fake<int32_t>(), fake<int32_t>(), fake<float>(),
                                4, 1001, 64, 128, nullptr))
          .find("row_length = 1001 is not a multiple of 4"),
      std::string::npos);
  EXPECT_NE(
      messageOf(mqaLogitsDecode(fake(), fake(), fake<float>(), fake<float>(),
                                fake<int32_t>(), fake<int32_t>(), fake<float>(),
                                4, 1000, 48, 128, nullptr))
          .find("heads = 48"),
      std::string::npos);
  EXPECT_NE(
      messageOf(mqaLogitsDecode(fake(), fake(), fake<float>(), fake<float>(),
                                fake<int32_t>(), fake<int32_t>(), fake<float>(),
                                1 << 15, 1 << 16, 64, 128, nullptr))
          .find("m * row_length = 2147483648 exceeds the int32 indices"),
      std::string::npos);
  // Each factor is bounded before the product (which wrapped to -8 here).
  EXPECT_NE(
      messageOf(mqaLogitsDecode(fake(), fake(), fake<float>(), fake<float>(),
                                fake<int32_t>(), fake<int32_t>(), fake<float>(),
                                2, 0x7FFFFFFFFFFFFFFC, 64, 128, nullptr))
          .find("row_length = 9223372036854775804 exceeds"),
      std::string::npos);
  EXPECT_EQ(
      messageOf(mqaLogitsDecode(nullptr, nullptr, nullptr, nullptr, nullptr,
                                nullptr, nullptr, 0, 1000, 64, 128, nullptr)),
      "");
}

/// hisa_v4_attention_create's checks (they come before any driver call):
/// its message, or "" when a config passes them.
std::string createMessage(hisa_v4_config config, uintptr_t wqA = 0x10000) {
  hisa_v4_weights w;
  const void **pointers = reinterpret_cast<const void **>(&w);
  for (size_t i = 0; i < sizeof(w) / sizeof(void *); ++i)
    pointers[i] = fake();
  w.wq_a = fake(wqA);
  hisa_v4_attention *layer = nullptr;
  if (hisa_v4_attention_create(&config, &w, 2, 256, 0, &layer) != HISA_OK &&
      !layer)
    return hisa_last_error();
  hisa_v4_attention_destroy(layer);
  return "";
}

hisa_v4_config smallConfig(int64_t ratio) {
  return {256, 16, 256, 2, 256, ratio, 64, 16, 1e-6f, 1e4f, 1.6e5f};
}

// Regressions found by test/FakeDriver/CAPIArgumentFuzzTest.cpp.
TEST(V4Attention, CreateRefusesSizesThatWouldWrapOrBeEmpty) {
  hisa_v4_config config = smallConfig(0);
  // q_lora = 0 (a multiple of 128) was accepted.
  config.q_lora = 0;
  EXPECT_NE(createMessage(config).find("q_lora = 0"), std::string::npos);
  // 2^62 is one too: tokens * q_lora * 2 bytes wrapped to 0 and a 256-byte
  // buffer was allocated for it.
  config.q_lora = int64_t(1) << 62;
  EXPECT_NE(createMessage(config).find("each at most 65536"),
            std::string::npos);
  config = smallConfig(0);
  config.o_lora = -256;
  EXPECT_NE(createMessage(config).find("o_lora = -256"), std::string::npos);
}

TEST(V4Attention, CreateRefusesARopeBaseThatIsNotPositive) {
  // The RoPE tables were filled from pow(0, -x) or NaN.
  hisa_v4_config config = smallConfig(0);
  config.rope_theta = 0;
  EXPECT_NE(createMessage(config).find("rope_theta = 0"), std::string::npos);
  config = smallConfig(4);
  config.compress_rope_theta = std::nanf("");
  EXPECT_NE(createMessage(config).find("compress_rope_theta"),
            std::string::npos);
  // With compression, rope_theta is not used.
  config = smallConfig(4);
  config.rope_theta = 0;
  EXPECT_EQ(createMessage(config).find("theta"), std::string::npos);
}

TEST(V4Attention, CreateNamesIndexTopkAndMaxSeq) {
  // index_topk plus the 128-token window must fit sparse attention's 4096
  // indices a token (the error named the inner topk_idxs).
  hisa_v4_config config = smallConfig(4);
  config.index_topk = 4000;
  std::string message = createMessage(config);
  EXPECT_NE(message.find("index_topk <= 3968"), std::string::npos) << message;
  // batch * max_seq wrapped for a huge max_seq (the error named the flat
  // indexer's m).
  hisa_v4_weights w;
  const void **pointers = reinterpret_cast<const void **>(&w);
  for (size_t i = 0; i < sizeof(w) / sizeof(void *); ++i)
    pointers[i] = fake();
  hisa_v4_attention *layer = nullptr;
  config = smallConfig(4);
  EXPECT_EQ(
      hisa_v4_attention_create(&config, &w, 2, int64_t(1) << 62, 0, &layer),
      HISA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(
      std::string(hisa_last_error()).find("max_seq = 4611686018427387904"),
      std::string::npos)
      << hisa_last_error();
}

TEST(V4Attention, CreateRefusesMisalignedWeights) {
  EXPECT_NE(createMessage(smallConfig(0), 0x10001).find("weight wq_a"),
            std::string::npos);
  // The projections and norms read 16-byte pieces: an element-aligned
  // weight would otherwise pass creation and fail at the first prefill,
  // naming the kernel's argument instead of the weight.
  std::string message = createMessage(smallConfig(0), 0x10008);
  EXPECT_NE(message.find("weight wq_a"), std::string::npos) << message;
  EXPECT_NE(message.find("must be 16-byte aligned"), std::string::npos)
      << message;
}

} // namespace
