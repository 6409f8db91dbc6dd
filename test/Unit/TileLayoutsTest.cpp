//===- TileLayoutsTest.cpp - Partner values of fragment layouts -----------===//

#include "hisa/Dialect/Tile/IR/TileLayouts.h"
#include "hisa/Dialect/Tile/IR/TileDialect.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace hisa::tile;

namespace {

class PartnerValuesTest : public ::testing::Test {
protected:
  PartnerValuesTest() { context.loadDialect<TileDialect>(); }

  /// The accumulator of a [64, 512] f32 wgmma tile split over two
  /// warpgroups by columns (sparse attention's output).
  FragmentLayoutAttr accumulator() {
    WgmmaPartition partition;
    partition.warpgroups = 2;
    partition.splitN = true;
    partition.rowsPerGroup = 64;
    partition.colsPerGroup = 256;
    return getWgmmaAccumulatorLayout(&context, 64, 512, partition);
  }

  MLIRContext context;
};

TEST_F(PartnerValuesTest, AccumulatorPairsAreInOneThread) {
  // col = 8 (i / 4) + 2 (lane % 4) + i % 2: columns 2p and 2p + 1 are
  // values i and i ^ 1 of one thread; columns 8 apart are i and i + 4.
  std::optional<SmallVector<int64_t>> pairs =
      getPartnerValues(accumulator(), {64, 512}, /*dim=*/1, /*mask=*/1);
  ASSERT_TRUE(pairs);
  ASSERT_EQ(pairs->size(), 128u);
  for (int64_t v = 0; v < 128; ++v)
    EXPECT_EQ((*pairs)[v], v ^ 1) << "value " << v;
  std::optional<SmallVector<int64_t>> eighths =
      getPartnerValues(accumulator(), {64, 512}, /*dim=*/1, /*mask=*/8);
  ASSERT_TRUE(eighths);
  EXPECT_EQ((*eighths)[0], 4);
  EXPECT_EQ((*eighths)[5], 1);
}

TEST_F(PartnerValuesTest, PartnersInOtherThreadsOrPastTheTileAreRefused) {
  // Columns 2 apart belong to the next lane; rows 1 apart to the next
  // group of 4 lanes.
  EXPECT_FALSE(getPartnerValues(accumulator(), {64, 512}, 1, 2));
  EXPECT_FALSE(getPartnerValues(accumulator(), {64, 512}, 0, 1));
  // Rows 8 apart are values i and i ^ 2 of one thread.
  std::optional<SmallVector<int64_t>> rows =
      getPartnerValues(accumulator(), {64, 512}, 0, 8);
  ASSERT_TRUE(rows);
  EXPECT_EQ((*rows)[0], 2);
  // Mask 512 flips every column past the tile.
  EXPECT_FALSE(getPartnerValues(accumulator(), {64, 512}, 1, 512));
  // A bad dimension.
  EXPECT_FALSE(getPartnerValues(accumulator(), {64, 512}, 2, 1));
}

TEST_F(PartnerValuesTest, RowMajorRunsKeepAlignedPairs) {
  // 64 x 256 elements over 256 threads in runs of 8 (a bf16 half-head
  // fragment): partners within a run, at xor 1, 2 and 4, not 8.
  VectorLayout layout;
  layout.shape = {64, 256};
  layout.threads = 256;
  layout.vector = 8;
  FragmentLayoutAttr attr = layout.toAttr(&context);
  for (int64_t mask : {1, 2, 4}) {
    std::optional<SmallVector<int64_t>> partners =
        getPartnerValues(attr, {64, 256}, 1, mask);
    ASSERT_TRUE(partners) << "mask " << mask;
    for (int64_t v = 0; v < 64; ++v)
      EXPECT_EQ((*partners)[v], v ^ mask) << "mask " << mask << " value " << v;
  }
  EXPECT_FALSE(getPartnerValues(attr, {64, 256}, 1, 8));
}

} // namespace
