//===- TileShapeTest.cpp - Symbolic tile shapes ---------------------------===//

#include "hisa/Dialect/Tile/IR/TileShape.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringMap.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace hisa::tile;

namespace {

TEST(DimMonomial, ParsesAndCanonicalizes) {
  std::optional<DimMonomial> m = DimMonomial::parse("heads * 2 * block_q");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->coefficient, 2);
  EXPECT_EQ(m->str(), "2*block_q*heads");
  EXPECT_EQ(DimMonomial::parse("64")->str(), "64");
  EXPECT_EQ(DimMonomial::parse("dim*dim")->str(), "dim*dim");
}

TEST(DimMonomial, RejectsMalformedText) {
  EXPECT_FALSE(DimMonomial::parse(""));
  EXPECT_FALSE(DimMonomial::parse("a**b"));
  EXPECT_FALSE(DimMonomial::parse("0*a"));
  EXPECT_FALSE(DimMonomial::parse("-2*a"));
  EXPECT_FALSE(DimMonomial::parse("1a"));
  EXPECT_FALSE(DimMonomial::parse("a-b"));
  EXPECT_FALSE(DimMonomial::parse("9223372036854775807*2"));
}

class TileShapeTest : public ::testing::Test {
protected:
  MLIRContext context;
  Builder builder{&context};

  ArrayAttr dims(ArrayRef<Attribute> entries) {
    return builder.getArrayAttr(entries);
  }
  Attribute size(int64_t value) { return builder.getI64IntegerAttr(value); }
  Attribute symbol(StringRef text) {
    return DimMonomial::parse(text)->toAttr(&context);
  }
};

TEST_F(TileShapeTest, ClassifiesDimensions) {
  TileShape shape(dims({size(-1), symbol("heads"), size(128)}));
  EXPECT_EQ(shape.getRank(), 3);
  EXPECT_TRUE(shape.isRuntime(0));
  EXPECT_TRUE(shape.isSymbolic(1));
  EXPECT_EQ(shape.getStaticSize(2), 128);
  EXPECT_FALSE(shape.getStaticSize(0));
  EXPECT_FALSE(shape.isFullyStatic());
  EXPECT_FALSE(shape.getNumElements(&context));
  EXPECT_EQ(formatDims(shape.getDims()), "[?, heads, 128]");
}

TEST_F(TileShapeTest, MultipliesSymbolically) {
  TileShape a(dims({symbol("block_q"), symbol("heads"), size(4)}));
  TileShape b(dims({symbol("heads*block_q"), size(2), size(2)}));
  EXPECT_EQ(a.getNumElements(&context), b.getNumElements(&context));
  EXPECT_EQ(formatDim(a.getNumElements(&context)), "4*block_q*heads");
  EXPECT_EQ(multiplyDims(size(3), size(5)), size(15));
  EXPECT_FALSE(multiplyDims(size(-1), size(5)));
}

TEST_F(TileShapeTest, BindsParameters) {
  llvm::StringMap<int64_t> values{{"heads", 64}, {"block_q", 2}};
  auto lookup = [&](StringRef name) -> std::optional<int64_t> {
    auto it = values.find(name);
    if (it == values.end())
      return std::nullopt;
    return it->second;
  };
  int errors = 0;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &) {
    ++errors;
    return success();
  });
  auto emitError = [&] { return mlir::emitError(UnknownLoc::get(&context)); };

  FailureOr<ArrayAttr> bound = bindDims(
      dims({size(-1), symbol("block_q*heads"), size(7)}), lookup, emitError);
  ASSERT_TRUE(succeeded(bound));
  std::optional<SmallVector<int64_t>> sizes =
      TileShape(*bound).getStaticSizes();
  EXPECT_FALSE(sizes); // `?` stays a runtime size.
  EXPECT_EQ(TileShape(*bound).getStaticSize(1), 128);
  EXPECT_EQ(errors, 0);

  EXPECT_TRUE(failed(bindDims(dims({symbol("dim")}), lookup, emitError)));
  EXPECT_EQ(errors, 1);
}

} // namespace
