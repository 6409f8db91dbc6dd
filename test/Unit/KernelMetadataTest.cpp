//===- KernelMetadataTest.cpp - Launch metadata and grid arithmetic -------===//

#include "hisa/Runtime/Jit.h"

#include <gtest/gtest.h>

#include <limits>

using namespace hisa::runtime;

namespace {

KernelMetadata makePooling() {
  KernelMetadata metadata;
  metadata.kernelName = "pool";
  metadata.binaryKind = "cubin";
  metadata.threads = 128;
  metadata.sharedBytes = 2048;
  KernelMetadata::Argument k;
  k.name = "k";
  k.elementType = "f8E4M3FN";
  k.elementBytes = 1;
  k.alignment = 16;
  k.shape = {-1, 128};
  metadata.arguments.push_back(k);
  // grid = ceildiv(ceildiv(dim(k, 0), 128), 2)
  metadata.program = {{"dim", 0, 0, 0, 64},
                      {"const", 0, 0, 128, 64},
                      {"ceildivui", 0, 1, 0, 64},
                      {"const", 0, 0, 2, 64},
                      {"ceildivui", 2, 3, 0, 64}};
  metadata.gridValues = {4};
  return metadata;
}

TEST(KernelMetadata, RoundTrips) {
  KernelMetadata metadata = makePooling();
  llvm::Expected<KernelMetadata> parsed =
      KernelMetadata::parse(metadata.serialize());
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  EXPECT_EQ(parsed->serialize(), metadata.serialize());
  EXPECT_EQ(parsed->arguments[0].shape, (std::vector<int64_t>{-1, 128}));
  EXPECT_FALSE(parsed->waitsForPrerequisiteGrids);
}

TEST(KernelMetadata, RoundTripsTheGridWait) {
  KernelMetadata metadata = makePooling();
  metadata.waitsForPrerequisiteGrids = true;
  llvm::Expected<KernelMetadata> parsed =
      KernelMetadata::parse(metadata.serialize());
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  EXPECT_TRUE(parsed->waitsForPrerequisiteGrids);
  EXPECT_EQ(parsed->serialize(), metadata.serialize());
  // Entries written before the record existed launch without the attribute.
  std::string text = metadata.serialize();
  text.erase(text.find("gridwait\n"));
  parsed = KernelMetadata::parse(text);
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  EXPECT_FALSE(parsed->waitsForPrerequisiteGrids);
}

TEST(KernelMetadata, RoundTripsTheInt32SizesContract) {
  KernelMetadata metadata = makePooling();
  EXPECT_EQ(metadata.serialize().find("int32sizes"), std::string::npos);
  metadata.int32Sizes = true;
  llvm::Expected<KernelMetadata> parsed =
      KernelMetadata::parse(metadata.serialize());
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  EXPECT_TRUE(parsed->int32Sizes);
  EXPECT_EQ(parsed->serialize(), metadata.serialize());
}

TEST(KernelMetadata, RoundTripsTheClusterSize) {
  KernelMetadata metadata = makePooling();
  metadata.clusterBlocks = 2;
  llvm::Expected<KernelMetadata> parsed =
      KernelMetadata::parse(metadata.serialize());
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  EXPECT_EQ(parsed->clusterBlocks, 2);
  EXPECT_EQ(parsed->serialize(), metadata.serialize());
  // Without the record: no clusters; out of range: malformed.
  EXPECT_EQ(KernelMetadata::parse(makePooling().serialize())->clusterBlocks, 1);
  std::string text = metadata.serialize();
  text.replace(text.find("cluster 2"), 9, "cluster 9");
  llvm::Expected<KernelMetadata> bad = KernelMetadata::parse(text);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("cluster 9"),
            std::string::npos);
}

TEST(KernelMetadata, RoundTripsTensorMaps) {
  KernelMetadata metadata = makePooling();
  KernelMetadata::TensorMap map;
  map.argument = 0;
  map.elementBytes = 1;
  map.swizzleBytes = 128;
  map.box = {64, 128};
  metadata.tensorMaps.push_back(map);
  llvm::Expected<KernelMetadata> parsed =
      KernelMetadata::parse(metadata.serialize());
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  ASSERT_EQ(parsed->tensorMaps.size(), 1u);
  EXPECT_EQ(parsed->tensorMaps[0].box, (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(parsed->tensorMaps[0].swizzleBytes, 128);
  EXPECT_EQ(parsed->serialize(), metadata.serialize());
}

TEST(KernelMetadata, RejectsMalformedTensorMaps) {
  // The pooling metadata has one rank-2 tensor argument (#0).
  std::string text = makePooling().serialize();
  for (const char *line :
       {"tensormap 1 1 128 2 64 128\n",    // no argument #1
        "tensormap 0 1 128 1 64\n",        // rank differs from the tensor's
        "tensormap 0 1 128 2 64 512\n",    // box extent over 256
        "tensormap 0 1 128 2 0 128\n",     // empty box
        "tensormap 0 1 128 3 64 128\n"}) { // fewer extents than the rank
    std::string bad = text;
    bad.insert(bad.find("inst "), line);
    llvm::Expected<KernelMetadata> parsed = KernelMetadata::parse(bad);
    EXPECT_FALSE(static_cast<bool>(parsed)) << line;
    if (!parsed) {
      EXPECT_NE(llvm::toString(parsed.takeError())
                    .find("malformed kernel metadata line: 'tensormap"),
                std::string::npos)
          << line;
    }
  }
}

TEST(KernelMetadata, RejectsMalformedText) {
  for (const char *text :
       {"", "hisa-kernel-metadata 2\n", "hisa-kernel-metadata 1\nkernel x\n",
        "hisa-kernel-metadata 1\nkernel k cubin 128 0\ngrid 7\n",
        "hisa-kernel-metadata 1\nkernel k cubin 128 0\nbogus\n"}) {
    llvm::Expected<KernelMetadata> parsed = KernelMetadata::parse(text);
    EXPECT_FALSE(static_cast<bool>(parsed)) << text;
    llvm::consumeError(parsed.takeError());
  }
}

TEST(KernelMetadata, EvaluatesTheGrid) {
  KernelMetadata metadata = makePooling();
  for (auto [n, blocks] : {std::pair<int64_t, int64_t>{1, 1},
                           {256, 1},
                           {257, 2},
                           {1048576, 4096},
                           {0, 0}}) {
    llvm::SmallVector<llvm::SmallVector<int64_t, 8>> sizes = {{n, 128}};
    auto grid = metadata.evaluateGrid(sizes);
    ASSERT_TRUE(static_cast<bool>(grid));
    EXPECT_EQ((*grid)[0], blocks) << "n = " << n;
    EXPECT_EQ((*grid)[1], 1);
  }
}

// ceildivui of a dividend near 2^64 (an unsigned view of a negative size)
// is about 2^57 blocks, which the launch refuses; (a + b - 1) / b wrapped
// to 0 and the launch ran nothing, silently.
TEST(KernelMetadata, UnsignedCeilingDivisionDoesNotWrap) {
  KernelMetadata metadata = makePooling();
  metadata.program = {{"dim", 0, 0, 0, 64},
                      {"const", 0, 0, 128, 64},
                      {"ceildivui", 0, 1, 0, 64}};
  metadata.gridValues = {2};
  llvm::SmallVector<llvm::SmallVector<int64_t, 8>> sizes = {{-1, 128}};
  auto grid = metadata.evaluateGrid(sizes);
  if (grid) {
    EXPECT_NE((*grid)[0], 0) << "the ceiling division wrapped to 0";
  } else {
    llvm::consumeError(grid.takeError());
  }
  sizes = {{0, 128}};
  grid = metadata.evaluateGrid(sizes);
  ASSERT_TRUE(static_cast<bool>(grid));
  EXPECT_EQ((*grid)[0], 0);
}

TEST(KernelMetadata, ReportsDivisionByZero) {
  KernelMetadata metadata = makePooling();
  metadata.program[1].immediate = 0;
  llvm::SmallVector<llvm::SmallVector<int64_t, 8>> sizes = {{10, 128}};
  auto grid = metadata.evaluateGrid(sizes);
  ASSERT_FALSE(static_cast<bool>(grid));
  EXPECT_NE(llvm::toString(grid.takeError()).find("division by zero"),
            std::string::npos);
}

// INT64_MIN / -1 traps on x86: the grid program must refuse it, not crash
// the caller. Sums and products wrap as the IR does.
TEST(KernelMetadata, ReportsSignedDivisionOverflow) {
  for (llvm::StringRef op : {"divsi", "remsi", "ceildivsi", "floordivsi"}) {
    KernelMetadata metadata = makePooling();
    metadata.program = {
        {"dim", 0, 0, 0, 64}, {"const", 0, 0, -1, 64}, {op.str(), 0, 1, 0, 64}};
    metadata.gridValues = {2};
    llvm::SmallVector<llvm::SmallVector<int64_t, 8>> sizes = {
        {std::numeric_limits<int64_t>::min(), 128}};
    auto grid = metadata.evaluateGrid(sizes);
    ASSERT_FALSE(static_cast<bool>(grid)) << op.str();
    EXPECT_NE(llvm::toString(grid.takeError()).find("overflow in '" + op.str()),
              std::string::npos);
  }
  KernelMetadata metadata = makePooling();
  metadata.program = {
      {"dim", 0, 0, 0, 64}, {"const", 0, 0, 2, 64}, {"muli", 0, 1, 0, 64}};
  metadata.gridValues = {2};
  llvm::SmallVector<llvm::SmallVector<int64_t, 8>> sizes = {
      {std::numeric_limits<int64_t>::max(), 128}};
  auto grid = metadata.evaluateGrid(sizes);
  ASSERT_TRUE(static_cast<bool>(grid));
  EXPECT_EQ((*grid)[0], -2);
}

TEST(KernelMetadata, WrapsNarrowIntegers) {
  KernelMetadata metadata;
  metadata.kernelName = "k";
  metadata.program = {{"const", 0, 0, 2147483647, 32},
                      {"const", 0, 0, 1, 32},
                      {"addi", 0, 1, 0, 32}};
  metadata.gridValues = {2};
  auto grid = metadata.evaluateGrid({});
  ASSERT_TRUE(static_cast<bool>(grid));
  EXPECT_EQ((*grid)[0], -2147483648LL);
}

TEST(Params, ParsesAndSorts) {
  auto params = parseParams("kb=64, dim=128");
  ASSERT_TRUE(static_cast<bool>(params));
  EXPECT_EQ(*params, (std::vector<std::string>{"dim=128", "kb=64"}));
  auto bad = parseParams("dim");
  EXPECT_FALSE(static_cast<bool>(bad));
  llvm::consumeError(bad.takeError());
}

} // namespace
