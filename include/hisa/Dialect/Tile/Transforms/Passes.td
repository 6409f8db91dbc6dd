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

def TileInlineFunctions : Pass<"tile-inline-functions", "::mlir::ModuleOp"> {
  let summary = "Inlines device functions into the tile kernels that call them";
  let description = [{
    A device function is a `func.func private` holding tile, arith, scf and
    math ops (tile ops in it verify as inside a launch), called with
    `func.call` (equal types) or `tile.call` (the callee's single-name
    dimensions bound to the caller's) from a `tile.launch` body or anything
    nested in one. This pass, the first of `tile-to-nvvm` and of the JIT,
    inlines every call (a `tile.call` as a copy of the callee with its
    bindings substituted; callees calling callees too), then erases the
    functions. A callee the
    module does not define is taken from hisa's device library
    (`kernels-dsl/lib/*.mlir`, built into the compiler), so kernels share
    code such as `@select_key`, the order-preserving key of an f32.

    ```mlir
    tile.parallel (%i) in [128] {
      %v = tile.load %x[%row, %i] : !tile.global<[?, ?], f32>
      %key = func.call @select_key(%v) : (f32) -> i32
      ...
    }
    ```

    Errors: a call outside a `tile.launch`, a callee neither in the module
    nor in the library, a callee without a body or with more than one block
    (use `scf`), and recursion (calls nested more than 32 deep).
  }];
  // The library's bodies may use dialects the kernel itself does not (a
  // kernel without math ops calling @rope_rotate's math.fma): loaded here,
  // with their inliner interfaces, whatever runs before.
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect"];
}

def TileUnrollLoops : Pass<"tile-unroll-loops", "::mlir::ModuleOp"> {
  let summary = "Unrolls the scf.for loops marked tile.unroll, loads first";
  let description = [{
    An `scf.for` marked `{tile.unroll = N}` (1 <= N <= 16; a signed loop
    over index without iteration arguments) becomes a loop of step N * step
    whose body runs the original body for the next N iterations, each past
    the first under `iteration < upper bound`. When the body is element
    code only (arith, math, scf, tile.load / store / atomic: nothing that
    synchronizes with other threads), the shared-memory loads at its top
    are issued first, for all N iterations, if nothing else in the loop may
    reach their tile (through views or tile.pick), they have no peer, and
    their tile and indices come from outside the loop or from the induction
    variable through side-effect-free ops. An iteration past the end loads
    at the first one's index instead (a load that runs anyway), so the
    loads are unconditional. A loop over a thread's keys then has N loads
    in flight instead of one dependent load a step (HISA stage 2's select:
    1-2.5% faster than the plain loop).

    ```mlir
    scf.for %c = %t to %length step %c128 {
      %key = tile.load %keys[%c] : !tile.shared<[8192], i32>
      ...
    } {tile.unroll = 4}
    ```

    Errors: a factor outside [1, 16] or not an integer, a loop with
    iteration arguments, an unsigned loop or one over another type than
    index, and a loop holding a warp collective (tile.vote, warp_scan,
    warp_broadcast, warp_match): the guards of the unrolled iterations
    differ between lanes, and every lane must reach a collective. Runs in
    the planning pipeline (tile-to-nvvm, the JIT, tile-report-resources)
    right after the canonicalizer, so a loop in a branch the
    specialization removed is not looked at.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def TileReportResources : Pass<"tile-report-resources", "::mlir::ModuleOp"> {
  let summary = "Prints the on-chip memory each tile kernel allocates";
  let description = [{
    For every `tile.kernel` whose shapes are bound (run `tile-bind-params`
    first), prints one line to standard output: the launch's thread count,
    the shared memory the block is launched with (what
    `tile-plan-shared-memory` allocates: per-stage buffers of pipelined
    copies, mbarriers, reduction scratch, alignment and reuse; a kernel not
    yet planned is planned on a copy with the JIT's planning pipeline for
    `chip` and `features`), the bytes of its shared tiles as declared, and
    the register bytes per thread its fragments and local tiles need
    (before layout assignment). The IR is not changed.

    ```
    kernel @fp8_gemm threads=384 shared=196736B (3 tiles of 98304B, ...) fragment=... local=...
    ```
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "Target SM the kernel is planned for">,
    ListOption<"features", "features", "std::string",
               "Target features, as for tile-to-nvvm (-tma: no TMA)">,
  ];
}

def TileReportBankConflicts
    : Pass<"tile-report-bank-conflicts", "::mlir::ModuleOp"> {
  let summary = "Reports shared-memory bank conflicts of fragment copies "
                "and of element accesses in parallels";
  let description = [{
    For every whole-tile `tile.copy` between a fragment and a shared tile
    (after `tile-assign-layouts`, which fixes both layouts: the fragment's
    threads and values, the shared tile's swizzle), counts the shared-memory
    wavefronts of each warp instruction the lowering issues for it: the
    pieces each lane moves (the fragment's runs, at most 16 bytes per
    instruction), the banks their 4-byte words fall in (32 banks), a bank
    taking as many wavefronts as distinct words land in it. A copy whose
    instructions need more wavefronts than their bytes do (one per 128
    distinct bytes) gets a remark at its location:

    ```
    remark: fragment stores into '!tile.shared<[64, 256], bf16>': 8.0
    wavefronts per warp instruction, 1.0 without bank conflicts (64
    instructions per warp)
    ```

    Element loads and stores of a shared tile in a `tile.parallel` body
    are counted the same way, one warp instruction per value of the
    parallel's layout, each lane at the element its iteration's indices
    name, when those indices follow from the induction variables, integer
    arithmetic and constants (a loop inside the body at its first
    iteration; an index loaded from memory or computed outside the
    parallel is not modelled, and the access is skipped):

    ```
    remark: element loads from '!tile.shared<[4, 256], i32>' in a
    parallel: 8.0 wavefronts per warp instruction, 1.0 without bank
    conflicts (4 warp instructions)
    ```

    Each element is counted as its own access, as the lowering emits it;
    where LLVM merges a run into a wider access the real count may be
    lower. The IR is not changed. Window copies, gathers and peer loads
    are not counted.
  }];
}

def TileAssignLayouts : Pass<"tile-assign-layouts", "::mlir::ModuleOp"> {
  let summary = "Decides which thread holds which element of every fragment";
  let description = [{
    Gives every fragment type a `#tile.frag_layout` and records the
    distribution of every `tile.parallel` in its `layout` attribute. Layouts
    are vector row-major (see TileLayouts.h): runs of `vector` contiguous
    elements of the innermost dimension are dealt to consecutive threads, so
    global and shared accesses are 16-byte vectors and coalesced. Fragments of
    one shape, the domains of `tile.parallel` loops over that shape and the
    two sides of a `tile.view` share one layout; its run length is the
    largest that gives every member 16-byte (or narrower) accesses.

    A `tile.gemm` fixes the layout of its accumulator: on sm_90a the wgmma
    m64nN layout split over the warpgroups by the warp policy, elsewhere the
    mma.sync m16n8k16 layout split over the warps; a register A operand gets
    wgmma's A-operand layout, a `tile.view` of a fixed fragment the same
    registers re-indexed, and the destination of a `tile.reduce` of one the
    layout the reduction leaves. These fixed layouts hold per linked class,
    not per shape: a `tile.parallel` is linked to the fragments it accesses
    at its induction variables, and a fragment-to-fragment copy or cast
    links its two sides. So an 8-bit A beside an accumulator of its shape,
    or the row and column statistics of a square accumulator, each keep
    their own layout; a class that two of them would constrain differently
    is an error. Classes nothing fixes take the layout fixed for their shape
    (if any), else the vector layout above. Its shared operands get
    the swizzled layout of one 32/64/128-byte atom per K-major row. So does
    a staging tile: a shared tile that a fragment is copied into and that
    only copies use (an epilogue through shared memory), whose rows are 32,
    64 or a multiple of 128 bytes and whose row count is a multiple of 8:
    the fragment's pieces of 8 rows then land in different banks.

    Fragments are distributed, so the pass also checks that they are accessed
    where their elements live: inside a `tile.parallel` of the same shape, at
    exactly its induction variables. Anything else is an error naming the
    access (stage such data through shared memory or read it from global).
    Requires bound parameters (run `tile-bind-params` first).
  }];
  let options = [
    Option<"vectorBytes", "vector-bytes", "int64_t", /*default=*/"16",
           "Widest access per thread, in bytes">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "Target SM: tile.gemm accumulators take the wgmma layout on "
           "sm_90a and the mma.sync m16n8k16 layout elsewhere">,
  ];
}

def TileUseTma : Pass<"tile-use-tma", "::mlir::ModuleOp"> {
  let summary = "Stages pipelined global-to-shared copies through TMA";
  let description = [{
    On targets with the Tensor Memory Accelerator (sm_90 and newer), marks
    with `tile.tma` every copy that a `tile.pipelined` loop with
    `num_stages` > 1 stages and that TMA can express as one box: a whole
    shared tile filled from a window of a kernel argument whose rows have a
    static size of a multiple of 16 bytes, box extents of at most 256 and an
    innermost box of a multiple of 16 bytes (one box per swizzle panel for
    the swizzled operands of a `tile.gemm`), from an argument the kernel
    does not also write. The lowering then issues one
    `cp.async.bulk.tensor` per copy from one thread, completing on an
    mbarrier per stage, through a tensor map the host encodes at launch
    (`cuTensorMapEncodeTiled`) and passes as a `__grid_constant__`
    parameter. Reads outside the tensor are zero-filled by TMA, as
    `tile.copy` requires.

    Other staged copies (gathered rows, rows of run-time size) stay on
    cp.async; with `report`, a remark on each says why. Run after
    `tile-assign-layouts` (which decides the swizzles) and before
    `tile-plan-shared-memory` (which places the mbarriers).
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "Target SM: nothing is marked below sm_90">,
    Option<"enable", "enable", "bool", /*default=*/"true",
           "Mark eligible copies (false keeps every copy on cp.async)">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit a remark for each staged copy that stays on cp.async, "
           "saying why">,
  ];
}

def TilePlanSharedMemory : Pass<"tile-plan-shared-memory", "::mlir::ModuleOp"> {
  let summary = "Assigns shared-memory offsets to shared tiles";
  let description = [{
    Places the shared tiles of each launch in one dynamic shared-memory
    buffer. Tiles whose live ranges (first to last use in the launch body)
    do not overlap share bytes. Offsets are aligned to `alignment` bytes and
    recorded as `tile.offset` on each `tile.alloc`; the launch gets
    `tile.shared_bytes` (the buffer size, including a scratch area for
    cross-warp reductions at `tile.scratch_offset`). A shared tile that a
    global-to-shared copy of a `tile.pipelined` loop with `num_stages` > 1
    fills gets one buffer per stage (`tile.stages`), each aligned; the
    stages of a `warp_specialized` loop are live from the launch's start
    (its producer may fill them while the consumers run their prologue), so
    no tile used only before the loop shares their bytes. A launch that
    needs more than `max-bytes` is an error. A pipelined loop with copies
    marked `tile.tma` gets one 8-byte mbarrier per stage after the tiles, at
    `tile.mbarrier_offset` on the loop.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"128",
           "Byte alignment of every shared tile">,
    Option<"maxBytes", "max-bytes", "int64_t", /*default=*/"232448",
           "Most shared memory a block may use (sm_90: 227 KiB)">,
  ];
}

#endif // HISA_DIALECT_TILE_TRANSFORMS_PASSES_TD
