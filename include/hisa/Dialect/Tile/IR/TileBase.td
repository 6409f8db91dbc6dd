//===- TileBase.td - Tile dialect definition ---------------*- tablegen -*-===//
//
// The tile dialect: TileLang-style tile programs for NVIDIA GPUs.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_DIALECT_TILE_IR_TILEBASE_TD
#define HISA_DIALECT_TILE_IR_TILEBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Tile_Dialect : Dialect {
  let name = "tile";
  let cppNamespace = "::hisa::tile";
  let summary = "Tile programs: kernels over shared-memory and register tiles";
  let description = [{
    The `tile` dialect describes a GPU kernel the way TileLang does: a kernel
    with a grid and a thread count, tiles in shared memory and in registers
    (fragments distributed over the threads of a block), and whole-tile
    operations on them (`copy`, `fill`, `gemm`, `reduce`, `parallel` loops,
    software-`pipelined` loops).

    Shapes of tiles and global tensors may name the kernel's specialization
    parameters (`[block_n, dim]`) or products of them (`[block_q*heads, dim]`).
    Each kernel declares default values for its parameters; the
    `tile-bind-params` pass replaces parameter names with integers so that one
    source serves every shape.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerTypes();
    void registerAttributes();
  }];
}

class Tile_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tile_Dialect, mnemonic, traits>;

#endif // HISA_DIALECT_TILE_IR_TILEBASE_TD
