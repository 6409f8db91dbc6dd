//===- Passes.td - Conversion passes of hisa ---------------*- tablegen -*-===//

#ifndef HISA_CONVERSION_PASSES_TD
#define HISA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTileToGPU : Pass<"convert-tile-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lowers tile kernels to gpu.module/gpu.func";
  let description = [{
    Turns every `tile.kernel` (with bound parameters, assigned layouts and
    planned shared memory) into a `gpu.module` holding one `gpu.func` kernel.

    Kernel ABI: the arguments in signature order; a global tensor becomes a
    memref (allocated pointer, aligned pointer, offset, sizes, strides, each
    64-bit), an index scalar an i64. The block is one-dimensional with the
    launch's thread count; the grid is computed by the host from the kernel's
    grid arithmetic; the dynamic shared-memory size is `tile.shared_bytes`.

    Tiles become: shared tiles views of the dynamic shared-memory buffer,
    fragments one register per value of the thread's layout, local tiles
    per-thread arrays. Copies move 16-byte vectors where the layout and the
    global shape allow (else element by element) and predicate the tails:
    reads past a global tensor give 0, writes past it are dropped. Reductions
    combine registers, then lanes with warp shuffles, then warps through
    shared memory. Barriers separate shared-memory writes from later reads
    and writes, and a `tile.parallel` that writes a shared tile which an
    earlier op read since the last barrier waits for the block first (a
    thread running ahead must not overwrite what another still reads).

    A `tile.pipelined` loop with `num_stages` = S > 1 turns its top-level
    global-to-shared copies into cp.async (16-byte pieces, zero-filled past
    the tensor) into S rotating buffers: a prologue issues iterations
    0..S-2, iteration k issues k+S-1, waits for its own group
    (cp.async.wait_group S-1) and a barrier, runs the body, then a barrier
    protects the buffer that the next iteration refills. Copies marked
    `tile.tma` (tile-use-tma) are issued instead by thread 0 as one
    `cp.async.bulk.tensor` each, completing on the stage's mbarrier
    (`mbarrier.arrive.expect_tx` with the boxes' bytes); every thread waits
    on it (`mbarrier.try_wait.parity`, parity (k / S) mod 2) where it would
    wait for cp.async. Each distinct tensor map is one more kernel
    parameter, after the kernel's own arguments, in the order of
    `getTensorMaps` (TensorMaps.h); the gpu.func records their number as
    `tile.tensor_maps`.

    A `warp_specialized` loop gives the block a producer warpgroup beyond
    the launch's threads: the body splits on the thread index (setmaxnreg
    within the block's pool, ptxas's per-thread count at entry times the
    block's threads: the producer keeps 72 registers, the consumers take the
    rest, up to 240; the JIT refuses a binary whose pool is smaller), the
    consumers' barriers become named barrier 1 of the launch's threads, and
    after named barrier 2 over every thread (the rendezvous, each role at
    its own instruction: `barrier.sync`, not the aligned `bar.sync`; once
    thread 0 initialized the stages' "full" and
    "empty" mbarriers) the producer runs the loop alone, waiting
    for "empty" before it refills a stage and completing "full" (TMA with
    expect_tx from its first thread; cp.async pieces of its 128 threads,
    waited for, fenced for the async proxy, then one arrival each), while
    the consumers wait for "full", run the body and arrive on "empty" once
    per warp. The producer recomputes the loop bounds and copy offsets from
    the arithmetic they depend on (a value read from memory is refused).
    The rendezvous sits as early in the consumers' prologue as the
    producer's inputs allow: after the last op before the loop that writes
    what the producer reads (index tiles, a trip count's tile), touches a
    staged tile's bytes, writes global memory or is not a tile op with
    memory effects (the programmatic-launch wait), so that the rest of the
    prologue (a query's copy and normalization) overlaps the first stages'
    copies; the consumers then fence and meet among themselves at the loop.
    tile-plan-shared-memory keeps the stages of such a loop live from the
    launch's start, so no prologue tile shares their bytes.

    Tile ops are unrolled over each thread's elements, so the code emitted
    grows with tile sizes. Before building anything, the pass estimates the
    operations per thread (each `tile.parallel` body once per element of the
    thread's share of its domain, each element-wise tile op once per
    element) and refuses a kernel over `max-unrolled-ops`, naming the
    largest part: compile time and memory stay bounded.

    With `fp-contract` (the default, as nvcc's `--fmad=true`) the float
    arithmetic of the kernel may be contracted: a multiply feeding an add
    becomes one fused multiply-add (e.g. `ReLU(x) * w` summed over heads).
  }];
  let options = [
    Option<"elideSync", "elide-sync", "bool", /*default=*/"false",
           "Drop warpgroup barriers, gemm fences and barriers, and "
           "named-barrier fences that the kernel's own synchronization "
           "makes redundant (hand-overs between warpgroups, operands "
           "only staged copies or another warpgroup write); off until "
           "GPU-checked">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "Target SM; tensor-core gemm (wgmma) needs sm_90a">,
    Option<"maxUnrolledOps", "max-unrolled-ops", "int64_t",
           /*default=*/"65536",
           "Refuse a kernel whose unrolled code would exceed this many "
           "tile-level operations per thread (the largest DSL kernel "
           "specialization unrolls to about 4,700)">,
    Option<"fpContract", "fp-contract", "bool", /*default=*/"true",
           "Allow float multiply-add contraction (nvcc --fmad=true)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
}

def TileMarkTensorMapParams
    : Pass<"tile-mark-tensor-map-params", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Passes the tensor maps of lowered kernels by value";
  let description = [{
    Runs after `convert-gpu-to-nvvm`. The last `tile.tensor_maps` parameters
    of a kernel `llvm.func` are tensor maps: each becomes a 128-byte,
    64-byte-aligned by-value parameter marked `nvvm.grid_constant` (CUDA's
    `const __grid_constant__ CUtensorMap`), so that the kernel addresses it
    in parameter space (`cvta.param`) instead of copying it to local memory,
    which TMA cannot read.
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect"
  ];
}

def TileExternDynamicSharedMemory
    : Pass<"tile-extern-dynamic-shared-memory", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Declares dynamic shared memory as an extern unsized array";
  let description = [{
    Runs after `convert-gpu-to-nvvm`, which defines the base of dynamic
    shared memory (`gpu.dynamic_shared_memory`) as an internal
    `!llvm.array<0 x i8>` global in address space 3. NVPTX emits such a
    global as a one-byte static shared variable, so ptxas warns about
    out-of-bounds accesses to it in every kernel and the block gets one byte
    of static shared memory it never uses. This pass makes each such global
    an external declaration, which NVPTX emits as CUDA's
    `extern __shared__` array: `.extern .shared .align A .b8 name[];`, the
    start of the dynamic shared-memory window, with at least `alignment`.

    Inline PTX that names `hisa::kDynamicSharedBaseMarker` (the wgmma
    lowering's move of the shared base, see docs/design.md) gets the
    global's name in its place; a marker with no such global, or with
    several, is an error.

    The default keeps GPUToNVVM's 16 bytes, which leaves the rest of the PTX
    byte-identical to the H200-tested kernels. (1024, what 128-byte swizzled
    tiles need and the window start provides, lets LLVM fold the wgmma
    descriptor arithmetic; to be adopted once measured on the GPU.)
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"16",
           "Least alignment in bytes of the dynamic shared-memory base">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def TileElideProxyFences
    : Pass<"tile-elide-proxy-fences", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Drops async-proxy fences that order nothing new";
  let description = [{
    Runs last on the LLVM form of each kernel. The op lowerings fence their
    own shared-memory writes for the async proxy (wgmma, TMA) before each
    hand-over, gemm and named barrier, since none of them sees what the
    others did: in FlashMLA's attention schedule that is ~12 fences a
    consumer warp and iteration where 2-4 would do, and each
    `fence.proxy.async.shared::cta` costs a MEMBAR and five more
    shared-memory-pipe instructions in SASS.

    A thread's fence orders its own earlier generic-proxy accesses of
    shared memory (and what it acquired from cp.async through an mbarrier
    wait) before its later async-proxy accesses. A fence reached, on every
    path through the control-flow graph, with no such access since an
    earlier fence orders nothing that fence did not: it is erased. Shared
    loads and stores (also through generic pointers that are not private
    allocas), mbarrier waits, cp.async, calls and any inline PTX or NVVM op
    not known to leave shared memory alone count as accesses; barriers,
    wgmma, mbarrier arrivals and pure ops do not (the lowerings fence on
    the writers' side before every barrier, which this pass keeps).
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect"
  ];
}

def TileLowerSCFToCFBottomUp
    : Pass<"tile-lower-scf-to-cf-bottom-up", "::mlir::gpu::GPUModuleOp"> {
  let summary = "SCF to control flow, last op of a block first (linear time)";
  let description = [{
    Lowers `scf` ops to `cf` branches with upstream's patterns, but visits
    the ops of a block from last to first. Lowering an `scf.if` splits its
    block after it, which moves every later op of the block to the new
    block; `convert-scf-to-cf` visits ops first to last, so a block with n
    predicated copies and m ops takes O(n m) moves (a second for 512 guarded
    vectors and 60,000 ops). From last to first, each split moves only the
    ops up to the next branch. `convert-scf-to-cf` still runs after it and
    finds nothing left to do.
  }];
  let dependentDialects = ["::mlir::cf::ControlFlowDialect"];
}

def TileLowerExp2 : Pass<"tile-lower-exp2", "::mlir::gpu::GPUModuleOp"> {
  let summary = "f32 math.exp2 as PTX's ex2.approx.ftz.f32";
  let description = [{
    Runs before `convert-gpu-to-nvvm`, which would map `math.exp2` to
    libdevice's `__nv_exp2f`: `ex2.approx.f32` without `.ftz`, which ptxas
    expands around `MUFU.EX2` into a compare and two predicated multiplies
    that keep subnormal results (four instructions instead of one, on every
    score of an attention tile). Each f32 `math.exp2` becomes
    `llvm.nvvm.ex2.approx.ftz.f32` instead: the same approximation, results
    below 2^-126 flushed to zero, as `math.exp` already is (libdevice's
    `__nv_expf`) and as nvcc's `--use_fast_math` does.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def TileBoundDims : Pass<"tile-bound-dims", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Give each run-time size the range [0, 2^31)";
  let description = [{
    Each `memref.dim` result becomes `arith.minui(dim, 2^31 - 1)`, which
    integer range analysis reads as a bound, so that
    `tile-narrow-index-arithmetic` can do in 32 bits the index arithmetic
    that involves run-time sizes (row offsets, bounds checks); 64-bit index
    arithmetic costs two instructions where 32-bit costs one. Sound only
    for launches whose sizes are all below 2^31: the pipeline runs it for
    the target feature `+narrow-indices`, whose kernels record that in their
    metadata, and the JIT refuses larger sizes at launch. Off by default
    (not yet measured on a GPU).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def TileNarrowIndexArithmetic
    : Pass<"tile-narrow-index-arithmetic", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Index arithmetic in 32 bits where every value is in [0, 2^31)";
  let description = [{
    Integer range analysis over the GPU module; each `arith` integer op on
    `index` values (add, sub, mul, the divisions and remainders, min/max,
    shifts, bitwise ops, `cmpi`) whose operands and results all lie in
    [0, 2^31) becomes the same op on i32 between `index_castui` casts.
    In that range a value means the same read as signed or unsigned, and
    no 32-bit result wraps, so every op keeps its 64-bit meaning; ranges
    that reach 2^31 or below 0 stay 64-bit. (Upstream's
    `arith-int-range-narrowing` of LLVM 22 narrows a signed op whose
    operands fit 32 bits only as unsigned numbers, e.g. `divsi` of a sum of
    two sizes just below 2^31: wrong there.) Run after `tile-bound-dims`,
    which gives the run-time sizes their range.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

#endif // HISA_CONVERSION_PASSES_TD
