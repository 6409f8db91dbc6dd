//===- TileDialect.h - Tile dialect, attributes and types -------*- C++ -*-===//

#ifndef HISA_DIALECT_TILE_IR_TILEDIALECT_H
#define HISA_DIALECT_TILE_IR_TILEDIALECT_H

#include "hisa/Dialect/Tile/IR/TileShape.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"

#include "hisa/Dialect/Tile/IR/TileEnums.h.inc"
#include "hisa/Dialect/Tile/IR/TileOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "hisa/Dialect/Tile/IR/TileAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "hisa/Dialect/Tile/IR/TileTypes.h.inc"

namespace hisa::tile {
/// Shape and element type of any tile type (global, shared, frag, local),
/// or std::nullopt for other types.
std::optional<std::pair<TileShape, mlir::Type>>
getTileShapeAndElementType(mlir::Type type);
/// "global", "shared", "fragment" or "local".
llvm::StringRef getTileMemoryKindName(mlir::Type type);
} // namespace hisa::tile

#endif // HISA_DIALECT_TILE_IR_TILEDIALECT_H
