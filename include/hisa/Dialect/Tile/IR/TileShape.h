//===- TileShape.h - Symbolic tile shapes -----------------------*- C++ -*-===//
//
// Shapes of tile types are ArrayAttrs with one entry per dimension:
//   - an i64 IntegerAttr: a size known when the IR is written (-1 = `?`, a
//     size known only at launch, allowed for global tensors);
//   - a StringAttr: a product of specialization parameters and an integer,
//     kept in a canonical form ("2*block_q*heads") so that two dimensions are
//     equal for every binding of the parameters iff their attributes are equal.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_DIALECT_TILE_IR_TILESHAPE_H
#define HISA_DIALECT_TILE_IR_TILESHAPE_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <string>

namespace hisa::tile {

/// A dimension written with parameters: `coefficient * symbols[0] * ...`.
struct DimMonomial {
  int64_t coefficient = 1;
  llvm::SmallVector<std::string> symbols; // sorted, with repetition

  /// Parses "2*block_q*heads"; returns std::nullopt on malformed text.
  static std::optional<DimMonomial> parse(llvm::StringRef text);
  /// Canonical text; symbols sorted, coefficient omitted when 1.
  std::string str() const;
  /// The attribute for this dimension: IntegerAttr when it has no symbols.
  mlir::Attribute toAttr(mlir::MLIRContext *context) const;
};

/// Read-only view over the dimension list of a tile type or parallel domain.
class TileShape {
public:
  static constexpr int64_t kRuntimeSize = -1;

  explicit TileShape(mlir::ArrayAttr dims) : dims(dims) {}

  int64_t getRank() const { return dims.size(); }
  mlir::Attribute getDim(int64_t i) const { return dims[i]; }
  mlir::ArrayAttr getDims() const { return dims; }

  /// The size of dimension `i` if it is an integer (not `?`).
  std::optional<int64_t> getStaticSize(int64_t i) const;
  bool isRuntime(int64_t i) const;
  bool isSymbolic(int64_t i) const;
  bool isFullyStatic() const;
  /// The sizes, when every dimension is an integer other than `?`.
  std::optional<llvm::SmallVector<int64_t>> getStaticSizes() const;
  /// The number of elements as a dimension attribute (product of all
  /// dimensions), or null when a dimension is `?`.
  mlir::Attribute getNumElements(mlir::MLIRContext *context) const;
  /// Adds the parameter names the shape mentions to `names`.
  void collectSymbols(llvm::SmallVectorImpl<std::string> &names) const;

private:
  mlir::ArrayAttr dims;
};

/// Text of one dimension as it appears in the IR ("?", "64", "block_q*heads").
std::string formatDim(mlir::Attribute dim);
/// Text of a whole shape ("[?, heads, 128]").
std::string formatDims(mlir::ArrayAttr dims);

/// The product of two dimension attributes (null if either is `?`).
mlir::Attribute multiplyDims(mlir::Attribute lhs, mlir::Attribute rhs);

/// Replaces parameter names by the values `lookup` gives. Reports an unknown
/// name through `emitError` and fails.
mlir::FailureOr<mlir::ArrayAttr>
bindDims(mlir::ArrayAttr dims,
         llvm::function_ref<std::optional<int64_t>(llvm::StringRef)> lookup,
         llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// `[` dim (`,` dim)* `]`, dim := `?` | integer | factor (`*` factor)*.
mlir::ParseResult parseTileDims(mlir::AsmParser &parser, mlir::ArrayAttr &dims);
void printTileDims(mlir::AsmPrinter &printer, mlir::ArrayAttr dims);

} // namespace hisa::tile

#endif // HISA_DIALECT_TILE_IR_TILESHAPE_H
