//===- TileAttrs.td - Tile dialect attributes --------------*- tablegen -*-===//

#ifndef HISA_DIALECT_TILE_IR_TILEATTRS_TD
#define HISA_DIALECT_TILE_IR_TILEATTRS_TD

include "hisa/Dialect/Tile/IR/TileBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

class Tile_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Tile_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Tile_FragmentLayoutAttr : Tile_Attr<"FragmentLayout", "frag_layout"> {
  let summary = "Which thread of a block holds which element of a fragment";
  let description = [{
    A fragment is a tile distributed over the `threads` threads of a block,
    each thread holding `values` elements in registers. `map` sends
    `(thread, value)` to the element's coordinates in the tile; it must be
    injective over `[0, threads) x [0, values)` and cover the tile (checked by
    the pass that assigns layouts). Example, the accumulator of a
    `wgmma m64n64` over one warpgroup:

    ```mlir
    #tile.frag_layout<threads = 128, values = 32,
        map = (t, v) -> ((t floordiv 32) * 16 + (t mod 32) floordiv 4
                           + ((v floordiv 2) mod 2) * 8,
                         (v floordiv 4) * 8 + (t mod 4) * 2 + v mod 2)>
    ```
  }];
  let parameters = (ins "int64_t":$threads, "int64_t":$values,
                        "::mlir::AffineMap":$map);
  let assemblyFormat = [{
    `<` `threads` `=` $threads `,` `values` `=` $values `,` `map` `=` $map `>`
  }];
  let genVerifyDecl = 1;
}

def Tile_ReduceKind : I32EnumAttr<"ReduceKind", "reduction applied by tile.reduce", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Max", 1, "max">,
    I32EnumAttrCase<"Min", 2, "min">,
    I32EnumAttrCase<"AbsMax", 3, "absmax">,
    I32EnumAttrCase<"AbsSum", 4, "abssum">]> {
  let cppNamespace = "::hisa::tile";
}

def Tile_AtomicKind : I32EnumAttr<"AtomicKind",
    "read-modify-write applied by tile.atomic", [
    I32EnumAttrCase<"Add", 0, "add">,
    I32EnumAttrCase<"Max", 1, "max">,
    I32EnumAttrCase<"Min", 2, "min">,
    I32EnumAttrCase<"UMax", 3, "umax">,
    I32EnumAttrCase<"UMin", 4, "umin">]> {
  let cppNamespace = "::hisa::tile";
}

def Tile_FenceScope : I32EnumAttr<"FenceScope",
    "the threads a tile.fence orders memory accesses for", [
    I32EnumAttrCase<"Block", 0, "block">,
    I32EnumAttrCase<"Gpu", 1, "gpu">,
    I32EnumAttrCase<"System", 2, "system">]> {
  let cppNamespace = "::hisa::tile";
}

def Tile_VoteKind : I32EnumAttr<"VoteKind",
    "warp-wide vote applied by tile.vote", [
    I32EnumAttrCase<"Ballot", 0, "ballot">,
    I32EnumAttrCase<"Any", 1, "any">,
    I32EnumAttrCase<"All", 2, "all">]> {
  let cppNamespace = "::hisa::tile";
}

def Tile_GemmWarpPolicy : I32EnumAttr<"GemmWarpPolicy",
    "how tile.gemm splits its output tile across the warps of a block", [
    I32EnumAttrCase<"Square", 0, "square">,
    I32EnumAttrCase<"FullRow", 1, "full_row">,
    I32EnumAttrCase<"FullCol", 2, "full_col">]> {
  let cppNamespace = "::hisa::tile";
}

#endif // HISA_DIALECT_TILE_IR_TILEATTRS_TD
