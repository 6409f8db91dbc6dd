//===- Passes.td - Tile dialect passes ---------------------*- tablegen -*-===//

#ifndef HISA_DIALECT_TILE_TRANSFORMS_PASSES_TD
#define HISA_DIALECT_TILE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TileBindParams : Pass<"tile-bind-params", "::mlir::ModuleOp"> {
  let summary = "Binds the specialization parameters of tile kernels";
  let description = [{
    Gives every parameter of every `tile.kernel` a value: the one named in
    `params` when given, else the kernel's default. Then replaces each
    `tile.param` by a constant, every parameter name in a shape by its value,
    and folds `tile.dim` of dimensions that became integers. After this pass
    no shape in the module mentions a parameter; the kernel's `params`
    attribute records the values used.

    ```
    hisa-opt --tile-bind-params="params=heads=32,dim=64" kernel.mlir
    ```

    A name in `params` that no bound kernel declares is an error: a typo must
    not silently leave the default in place. `kernel` restricts the binding
    to one kernel of the module.
  }];
  let options = [
    ListOption<"params", "params", "std::string",
               "Parameter values as name=value (e.g. heads=32,dim=64)">,
    Option<"kernel", "kernel", "std::string", /*default=*/"\"\"",
           "Bind only this kernel (default: every kernel in the module)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def TileReportResources : Pass<"tile-report-resources", "::mlir::ModuleOp"> {
  let summary = "Prints the on-chip memory each tile kernel allocates";
  let description = [{
    For every `tile.kernel` whose shapes are bound (run `tile-bind-params`
    first), prints one line to standard output: the launch's thread count,
    the shared memory of its shared tiles (before reuse and alignment
    padding), and the register bytes per thread its fragments and local
    tiles need (before layout assignment). The IR is not changed.

    ```
    kernel @pool_mqa_logits threads=256 shared=49152B fragment=... local=...
    ```
  }];
}

#endif // HISA_DIALECT_TILE_TRANSFORMS_PASSES_TD
