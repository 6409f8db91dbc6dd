//===- TileTypes.td - Tile dialect types -------------------*- tablegen -*-===//

#ifndef HISA_DIALECT_TILE_IR_TILETYPES_TD
#define HISA_DIALECT_TILE_IR_TILETYPES_TD

include "hisa/Dialect/Tile/IR/TileBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

// Every tile type carries a shape (an ArrayAttr, one entry per dimension: an
// i64 size, -1 for a size known only at run time, or a string naming a
// parameter or a product of parameters) and an element type.
class Tile_ShapedType<string name, string typeMnemonic>
    : TypeDef<Tile_Dialect, name> {
  let mnemonic = typeMnemonic;
  let genVerifyDecl = 1;
  code shapeAccessors = [{
    ::hisa::tile::TileShape getTileShape() const {
      return ::hisa::tile::TileShape(getDims());
    }
    int64_t getRank() const { return getDims().size(); }
  }];
}

def Tile_GlobalType : Tile_ShapedType<"Global", "global"> {
  let summary = "A tensor in global memory, row-major and contiguous";
  let description = [{
    A kernel argument in global (device) memory. Dimensions are integers,
    parameter names, or `?` for sizes known only at launch (the JIT passes
    them as kernel arguments). Reads outside the tensor give zero and writes
    outside it are dropped.

    ```mlir
    !tile.global<[?, heads, dim], f8E4M3FN>
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$dims, "::mlir::Type":$elementType);
  let assemblyFormat = "`<` custom<TileDims>($dims) `,` $elementType `>`";
  let extraClassDeclaration = shapeAccessors;
}

def Tile_SharedType : Tile_ShapedType<"Shared", "shared"> {
  let summary = "A tile in shared memory, visible to every thread of a block";
  let description = [{
    ```mlir
    !tile.shared<[block_n, dim], f8E4M3FN>
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$dims, "::mlir::Type":$elementType);
  let assemblyFormat = "`<` custom<TileDims>($dims) `,` $elementType `>`";
  let extraClassDeclaration = shapeAccessors;
}

def Tile_FragmentType : Tile_ShapedType<"Fragment", "frag"> {
  let summary = "A tile held in registers, distributed over a block's threads";
  let description = [{
    Which thread holds which element is decided by the layout-assignment pass
    and then printed as a `#tile.frag_layout` attribute:

    ```mlir
    !tile.frag<[block_m, heads], f32>
    !tile.frag<[64, 64], f32, #tile.frag_layout<threads = 128, values = 32, map = ...>>
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$dims, "::mlir::Type":$elementType,
                        OptionalParameter<"::hisa::tile::FragmentLayoutAttr">:$layout);
  let assemblyFormat =
      "`<` custom<TileDims>($dims) `,` $elementType (`,` qualified($layout)^)? `>`";
  let builders = [
    TypeBuilderWithInferredContext<(ins "::mlir::ArrayAttr":$dims,
                                        "::mlir::Type":$elementType), [{
      return $_get(elementType.getContext(), dims, elementType,
                   ::hisa::tile::FragmentLayoutAttr());
    }]>
  ];
  let extraClassDeclaration = shapeAccessors;
}

def Tile_LocalType : Tile_ShapedType<"Local", "local"> {
  let summary = "Per-thread scalars in registers (not distributed)";
  let description = [{
    Every thread holds its own copy of all elements.

    ```mlir
    !tile.local<[4], f32>
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$dims, "::mlir::Type":$elementType);
  let assemblyFormat = "`<` custom<TileDims>($dims) `,` $elementType `>`";
  let extraClassDeclaration = shapeAccessors;
}

def Tile_AnyGlobal : Type<CPred<"::llvm::isa<::hisa::tile::GlobalType>($_self)">,
                          "global tensor", "::hisa::tile::GlobalType">;
def Tile_AnyShared : Type<CPred<"::llvm::isa<::hisa::tile::SharedType>($_self)">,
                          "shared tile", "::hisa::tile::SharedType">;
def Tile_AnyFragment : Type<CPred<"::llvm::isa<::hisa::tile::FragmentType>($_self)">,
                            "fragment", "::hisa::tile::FragmentType">;
def Tile_AnyBuffer : AnyTypeOf<[Tile_GlobalType, Tile_SharedType,
                                Tile_FragmentType, Tile_LocalType],
                               "global tensor or tile">;
def Tile_AnyOnChip : AnyTypeOf<[Tile_SharedType, Tile_FragmentType, Tile_LocalType],
                               "shared, fragment or local tile">;

#endif // HISA_DIALECT_TILE_IR_TILETYPES_TD
