//===- TileShape.cpp - Symbolic tile shapes -------------------------------===//

#include "hisa/Dialect/Tile/IR/TileShape.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace hisa::tile;

static bool isIdentifier(StringRef text) {
  if (text.empty() || !(llvm::isAlpha(text.front()) || text.front() == '_'))
    return false;
  return llvm::all_of(text,
                      [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

std::optional<DimMonomial> DimMonomial::parse(StringRef text) {
  DimMonomial result;
  SmallVector<StringRef> factors;
  text.split(factors, '*');
  for (StringRef factor : factors) {
    factor = factor.trim();
    int64_t value;
    if (!factor.getAsInteger(10, value)) {
      if (value <= 0 ||
          llvm::MulOverflow(result.coefficient, value, result.coefficient))
        return std::nullopt;
      continue;
    }
    if (!isIdentifier(factor))
      return std::nullopt;
    result.symbols.push_back(factor.str());
  }
  llvm::sort(result.symbols);
  return result;
}

std::string DimMonomial::str() const {
  std::string text;
  if (coefficient != 1 || symbols.empty())
    text = std::to_string(coefficient);
  for (const std::string &symbol : symbols) {
    if (!text.empty())
      text += "*";
    text += symbol;
  }
  return text;
}

Attribute DimMonomial::toAttr(MLIRContext *context) const {
  Builder builder(context);
  if (symbols.empty())
    return builder.getI64IntegerAttr(coefficient);
  return builder.getStringAttr(str());
}

std::optional<int64_t> TileShape::getStaticSize(int64_t i) const {
  auto size = dyn_cast<IntegerAttr>(dims[i]);
  if (!size || size.getInt() == kRuntimeSize)
    return std::nullopt;
  return size.getInt();
}

bool TileShape::isRuntime(int64_t i) const {
  auto size = dyn_cast<IntegerAttr>(dims[i]);
  return size && size.getInt() == kRuntimeSize;
}

bool TileShape::isSymbolic(int64_t i) const { return isa<StringAttr>(dims[i]); }

bool TileShape::isFullyStatic() const {
  for (int64_t i = 0, e = getRank(); i < e; ++i)
    if (!getStaticSize(i))
      return false;
  return true;
}

std::optional<SmallVector<int64_t>> TileShape::getStaticSizes() const {
  SmallVector<int64_t> sizes;
  for (int64_t i = 0, e = getRank(); i < e; ++i) {
    std::optional<int64_t> size = getStaticSize(i);
    if (!size)
      return std::nullopt;
    sizes.push_back(*size);
  }
  return sizes;
}

static std::optional<DimMonomial> toMonomial(Attribute dim) {
  if (auto size = dyn_cast<IntegerAttr>(dim)) {
    if (size.getInt() == TileShape::kRuntimeSize)
      return std::nullopt;
    DimMonomial monomial;
    monomial.coefficient = size.getInt();
    return monomial;
  }
  if (auto text = dyn_cast<StringAttr>(dim))
    return DimMonomial::parse(text.getValue());
  return std::nullopt;
}

Attribute hisa::tile::multiplyDims(Attribute lhs, Attribute rhs) {
  std::optional<DimMonomial> a = toMonomial(lhs), b = toMonomial(rhs);
  if (!a || !b)
    return {};
  DimMonomial product;
  if (llvm::MulOverflow(a->coefficient, b->coefficient, product.coefficient))
    return {};
  product.symbols = a->symbols;
  llvm::append_range(product.symbols, b->symbols);
  llvm::sort(product.symbols);
  return product.toAttr(lhs.getContext());
}

Attribute TileShape::getNumElements(MLIRContext *context) const {
  Attribute product = Builder(context).getI64IntegerAttr(1);
  for (Attribute dim : dims) {
    product = multiplyDims(product, dim);
    if (!product)
      return {};
  }
  return product;
}

void TileShape::collectSymbols(SmallVectorImpl<std::string> &names) const {
  for (Attribute dim : dims)
    if (std::optional<DimMonomial> monomial = toMonomial(dim))
      llvm::append_range(names, monomial->symbols);
}

std::string hisa::tile::formatDim(Attribute dim) {
  if (!dim) // e.g. a product that overflowed
    return "<more than int64>";
  if (auto size = dyn_cast<IntegerAttr>(dim))
    return size.getInt() == TileShape::kRuntimeSize
               ? "?"
               : std::to_string(size.getInt());
  if (auto text = dyn_cast<StringAttr>(dim))
    return text.str();
  return "<invalid>";
}

std::string hisa::tile::formatDims(ArrayAttr dims) {
  std::string text = "[";
  llvm::interleave(
      dims, [&](Attribute dim) { text += formatDim(dim); },
      [&] { text += ", "; });
  return text + "]";
}

FailureOr<ArrayAttr>
hisa::tile::bindDims(ArrayAttr dims,
                     function_ref<std::optional<int64_t>(StringRef)> lookup,
                     function_ref<InFlightDiagnostic()> emitError) {
  SmallVector<Attribute> bound;
  Builder builder(dims.getContext());
  for (Attribute dim : dims) {
    auto text = dyn_cast<StringAttr>(dim);
    if (!text) {
      bound.push_back(dim);
      continue;
    }
    std::optional<DimMonomial> monomial = DimMonomial::parse(text.getValue());
    if (!monomial)
      return emitError() << "malformed dimension '" << text.getValue() << "'";
    int64_t value = monomial->coefficient;
    for (const std::string &symbol : monomial->symbols) {
      std::optional<int64_t> symbolValue = lookup(symbol);
      if (!symbolValue)
        return emitError() << "dimension '" << text.getValue()
                           << "' names unknown parameter '" << symbol << "'";
      if (*symbolValue <= 0 || llvm::MulOverflow(value, *symbolValue, value))
        return emitError() << "dimension '" << text.getValue()
                           << "' is not a positive size with " << symbol
                           << " = " << *symbolValue;
    }
    bound.push_back(builder.getI64IntegerAttr(value));
  }
  return builder.getArrayAttr(bound);
}

ParseResult hisa::tile::parseTileDims(AsmParser &parser, ArrayAttr &dims) {
  SmallVector<Attribute> parsed;
  Builder &builder = parser.getBuilder();
  auto parseDim = [&]() -> ParseResult {
    SMLoc loc = parser.getCurrentLocation();
    if (succeeded(parser.parseOptionalQuestion())) {
      parsed.push_back(builder.getI64IntegerAttr(TileShape::kRuntimeSize));
      return success();
    }
    DimMonomial monomial;
    do {
      int64_t value = 0;
      OptionalParseResult integer = parser.parseOptionalInteger(value);
      if (integer.has_value()) {
        if (failed(*integer))
          return failure();
        if (value <= 0)
          return parser.emitError(loc, "dimension sizes must be positive, got ")
                 << value;
        if (llvm::MulOverflow(monomial.coefficient, value,
                              monomial.coefficient))
          return parser.emitError(loc, "dimension size overflows int64");
        continue;
      }
      std::string name;
      if (parser.parseOptionalKeywordOrString(&name))
        return parser.emitError(parser.getCurrentLocation(),
                                "expected a dimension: an integer, '?' or a "
                                "parameter name");
      if (!isIdentifier(name))
        return parser.emitError(loc, "invalid parameter name '") << name << "'";
      monomial.symbols.push_back(name);
    } while (succeeded(parser.parseOptionalStar()));
    llvm::sort(monomial.symbols);
    parsed.push_back(monomial.toAttr(builder.getContext()));
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseDim))
    return failure();
  dims = builder.getArrayAttr(parsed);
  return success();
}

void hisa::tile::printTileDims(AsmPrinter &printer, ArrayAttr dims) {
  printer << "[";
  llvm::interleaveComma(dims, printer,
                        [&](Attribute dim) { printer << formatDim(dim); });
  printer << "]";
}
