//===- TileOps.td - Tile dialect operations ----------------*- tablegen -*-===//

#ifndef HISA_DIALECT_TILE_IR_TILEOPS_TD
#define HISA_DIALECT_TILE_IR_TILEOPS_TD

include "hisa/Dialect/Tile/IR/TileBase.td"
include "hisa/Dialect/Tile/IR/TileAttrs.td"
include "hisa/Dialect/Tile/IR/TileTypes.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/LoopLikeInterface.td"
include "mlir/Interfaces/ViewLikeInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Kernel structure
//===----------------------------------------------------------------------===//

def Tile_KernelOp : Tile_Op<"kernel", [
    IsolatedFromAbove, FunctionOpInterface, Symbol,
    SingleBlockImplicitTerminator<"ReturnOp">]> {
  let summary = "A GPU kernel: signature, specialization parameters and body";
  let description = [{
    The body computes the launch grid from the arguments and parameters
    (integer arithmetic, `tile.param`, `tile.dim`) and holds exactly one
    `tile.launch`, the code every block runs. Arguments are global tensors
    and scalars. `params` lists the specialization parameters with their
    default values; shapes inside the kernel may name them.

    ```mlir
    tile.kernel @fp8_block_mean_pooling(%k: !tile.global<[?, dim], f8E4M3FN>,
                                        ...)
        params {dim = 128, kb = 128} {
      %n = tile.dim %k, 0 : !tile.global<[?, dim], f8E4M3FN>
      %kb = tile.param "kb" : index
      %nb = arith.ceildivui %n, %kb : index
      tile.launch (%bx) in (%nb) threads 128 {
        ...
      }
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       DictionaryAttr:$params,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name,
                                 "::mlir::FunctionType":$type,
                                 "::mlir::DictionaryAttr":$params)>];
  let extraClassDeclaration = [{
    /// FunctionOpInterface hooks.
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    /// The launch this kernel holds (null only in invalid IR).
    LaunchOp getLaunch();
    /// The integer value of parameter `name`, if declared.
    std::optional<int64_t> getParamValue(::llvm::StringRef name);
  }];
}

def Tile_CallOp : Tile_Op<"call", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Calls a device function whose shapes are bound at the call";
  let description = [{
    Calls a device function (a private `func.func`, see
    `tile-inline-functions`) whose tile types may name shape symbols of
    their own: each dimension of the callee's parameter and result types
    that is a single name binds to the caller's dimension at that place
    (an integer, a parameter name or a product), the same name to the same
    dimension everywhere; other dimensions and everything else must match.
    The inliner substitutes the bindings in the callee's body, so one
    function serves tiles of several shapes (`func.call` needs equal types).

    ```mlir
    func.func private @clear(%t: !tile.shared<[n], i32>) { ... }
    tile.call @clear(%keys) : (!tile.shared<[topk*kb], i32>) -> ()
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<AnyType>:$args);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $callee `(` $args `)` attr-dict `:` functional-type($args, results)
  }];
  let extraClassDeclaration = [{
    /// The callee's shape symbols bound to the caller's dimensions, or a
    /// diagnostic when the types do not unify.
    ::mlir::FailureOr<::llvm::StringMap<::mlir::Attribute>>
    bindShapes(::mlir::FunctionType calleeType);
  }];
}

def Tile_ReturnOp : Tile_Op<"return", [Pure, HasParent<"KernelOp">, Terminator,
                                       ReturnLike]> {
  let summary = "Terminates a tile.kernel";
  let description = [{
    The kernel body's terminator, after its `tile.launch`. It is implicit:
    the parser adds it and the printer leaves it out.

    ```mlir
    tile.kernel @k(%n: index) {
      tile.launch (%bx) in (%n) threads 128 { ... }
      tile.return
    }
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Tile_ParamOp : Tile_Op<"param", [Pure,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "The value of a specialization parameter";
  let description = [{
    ```mlir
    %heads = tile.param "heads" : index
    ```
    `tile-bind-params` replaces it by a constant.
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs AnySignlessIntegerOrIndex:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_DimOp : Tile_Op<"dim", [Pure]> {
  let summary = "The size of a dimension of a global tensor, at run time";
  let description = [{
    The size of dimension `index` of a global tensor as an `index`: the
    launch's size for a `?` dimension, a constant (folded once parameters
    are bound) for the others. Used in the kernel body to compute the grid
    and in the launch body for bounds.

    ```mlir
    %n = tile.dim %k, 0 : !tile.global<[?, dim], f8E4M3FN>
    ```
  }];
  let arguments = (ins Tile_GlobalType:$source, I64Attr:$index);
  let results = (outs Index:$result);
  let assemblyFormat = "$source `,` $index attr-dict `:` qualified(type($source))";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tile_LaunchOp : Tile_Op<"launch", [
    HasParent<"KernelOp">, SingleBlockImplicitTerminator<"YieldOp">,
    RecursiveMemoryEffects,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>]> {
  let summary = "The code each block of the grid runs";
  let description = [{
    Launches a grid of 1 to 3 dimensions with `threads` threads per block.
    The region's arguments are the block indices. `blocks_per_sm N` asks
    that N blocks fit on one SM at a time (like CUDA's
    `__launch_bounds__(threads, N)`): the register allocator then keeps
    each thread within 65536 / (N * threads) registers. N is an integer or
    the name of a kernel parameter (bound by `tile-bind-params`), so that
    the specialization that knows the tile sizes can choose it.

    ```mlir
    tile.launch (%bx, %by) in (%nb, %heads) threads 256 {
      ...
    }
    tile.launch (%bx) in (%m) threads 128 blocks_per_sm 5 { ... }
    tile.launch (%bx) in (%m) threads 128 blocks_per_sm "min_blocks" { ... }
    ```

    `cluster N` (sm_90 thread-block clusters) groups every N consecutive
    blocks along x into a cluster whose blocks run at the same time on
    different SMs and may read each other's shared tiles (`tile.load ...
    peer`) and meet at `tile.cluster_barrier`; N is 1 to 8, or a kernel
    parameter's name (1: each block is a cluster of its own, its only peer
    itself). The grid's x extent must be a multiple of N (the runtime
    refuses a launch that is not).

    ```mlir
    tile.launch (%bx) in (%blocks) threads 256 cluster 2 { ... }
    ```
  }];
  let arguments = (ins Variadic<Index>:$gridSizes, I64Attr:$threads,
                       OptionalAttr<AnyAttrOf<[I64Attr, StrAttr]>>:$blocks_per_sm,
                       OptionalAttr<AnyAttrOf<[I64Attr, StrAttr]>>:$cluster_blocks);
  let extraClassDeclaration = [{
    ::mlir::Block::BlockArgListType getBlockIndices() {
      return getBody().getArguments();
    }
    /// Threads of a block: `threads`, plus the producer warpgroup of a
    /// warp-specialized tile.pipelined inside.
    int64_t getBlockThreads();
    /// The warp-specialized tile.pipelined of the body, if any.
    ::hisa::tile::PipelinedOp getWarpSpecializedLoop();
    /// The bound blocks_per_sm, if any (nullopt also while it still names
    /// a parameter).
    std::optional<int64_t> getBoundBlocksPerSm() {
      if (auto value = ::llvm::dyn_cast_or_null<::mlir::IntegerAttr>(
              getBlocksPerSmAttr()))
        return value.getInt();
      return std::nullopt;
    }
    /// The bound cluster size: 1 without `cluster` (nullopt while it still
    /// names a parameter).
    std::optional<int64_t> getBoundClusterBlocks() {
      ::mlir::Attribute blocks = getClusterBlocksAttr();
      if (!blocks)
        return 1;
      if (auto value = ::llvm::dyn_cast<::mlir::IntegerAttr>(blocks))
        return value.getInt();
      return std::nullopt;
    }
  }];
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Tile_YieldOp : Tile_Op<"yield", [Pure, Terminator, ReturnLike,
    ParentOneOf<["LaunchOp", "ParallelOp", "PipelinedOp", "PerWarpgroupOp",
                 "AllOfOp", "RejoinOp"]>]> {
  let summary = "Terminates the body of launch, parallel, pipelined, "
                "per_warpgroup, rejoin and all_of";
  let description = [{
    In a `tile.all_of` predicate it gives the element's predicate (one
    `i1`); elsewhere it has no operands.
  }];
  let arguments = (ins Variadic<I1>:$values);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ValueRange()); }]>];
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

def Tile_AllocOp : Tile_Op<"alloc", [HasParent<"LaunchOp">]> {
  let summary = "Allocates a shared, fragment or local tile";
  let description = [{
    Tiles live for the whole block, so they are allocated at the top level of
    `tile.launch`; shared-memory planning decides their addresses and reuse.

    ```mlir
    %k_s = tile.alloc : !tile.shared<[block_n, dim], f8E4M3FN>
    %acc = tile.alloc : !tile.frag<[block_n, heads], f32>
    ```
  }];
  let results = (outs Tile_AnyOnChip:$result);
  let assemblyFormat = "attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
}

def Tile_ViewOp : Tile_Op<"view", [Pure,
    DeclareOpInterfaceMethods<ViewLikeOpInterface>]> {
  let summary = "Reinterprets a tile with another shape of the same size";
  let description = [{
    ```mlir
    %v = tile.view %logits : !tile.frag<[block_n, block_q*heads], f32>
                          to !tile.frag<[block_n, block_q, heads], f32>
    ```
  }];
  let arguments = (ins Tile_AnyOnChip:$source);
  let results = (outs Tile_AnyOnChip:$result);
  let assemblyFormat =
      "$source attr-dict `:` qualified(type($source)) `to` qualified(type($result))";
  let hasVerifier = 1;
}

def Tile_PickOp : Tile_Op<"pick", [Pure]> {
  let summary = "One of several shared tiles of the same type, chosen at run "
                "time";
  let description = [{
    The tile `tiles[index]` (the last one when `index` is past the end): a
    shared tile chosen by a value computed in the kernel, such as the
    warpgroup index of a tile.per_warpgroup body (each warpgroup's own keys
    or P). The candidates are tile.alloc results of one type; the result
    may be a gemm operand (the candidates then all get wgmma's swizzled
    layout), or be loaded, stored and copied. It may not be a pipelined
    copy's destination, but inside the loop body it may choose among the
    stage buffers the loop's copies fill, for reads and `tile.release`.

    ```mlir
    %k_own = tile.pick %wg [%k0, %k1] : !tile.shared<[64, 512], bf16>
    ```
  }];
  let arguments = (ins Index:$index, Variadic<Tile_SharedType>:$tiles);
  let results = (outs Tile_SharedType:$result);
  // `%index [%a, %b] : type`: every tile has the result's type.
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Whole-tile operations
//===----------------------------------------------------------------------===//

def Tile_CopyOp : Tile_Op<"copy", [AttrSizedOperandSegments]> {
  let summary = "Copies a tile between global memory, shared memory and registers";
  let description = [{
    One side may take a window offset (one index per dimension); the window
    has the shape of the other side. A window may have more dimensions than
    the tile: the extra leading dimensions have extent 1. Window reads outside
    a global tensor give 0 and writes outside it are dropped. Element types
    must match (`tile.cast` converts).

    A gather, `rows(%index[%first] : type)`, copies whole rows of a 2-D
    global tensor chosen by row numbers into a 2-D shared tile: row r of the
    destination is `source[index[first + r], :]`, or zeros when that number
    is negative (e.g. -1, "no row"), past the tensor's last row, or when
    `first + r` is past the end of `index` (a 1-D shared or local i32 tile).
    Inside `tile.pipelined` it is staged with cp.async like a window copy
    (never TMA), so `index` should be filled before the loop (e.g. all of a
    query's top-k row numbers) and `first` follow the loop variable. Its
    rows have the destination's width, or with source offsets `[0, c]` (c a
    constant) it copies the columns [c, c + width) of each row (e.g. one
    half of 1 KiB rows into each of two [64, 256] tiles).

    ```mlir
    tile.copy %k[%row, %c0] to %k_s
        : !tile.global<[?, dim], f8E4M3FN> to !tile.shared<[block_n, dim], f8E4M3FN>
    tile.copy %acc to %out[%row, %col]
        : !tile.frag<[64, 64], f32> to !tile.global<[?, ?], f32>
    tile.copy %kv rows(%indices[%k0] : !tile.shared<[2048], i32>) to %kv_s
        : !tile.global<[?, 512], bf16> to !tile.shared<[64, 512], bf16>
    ```
  }];
  let arguments = (ins Tile_AnyBuffer:$source, Variadic<Index>:$sourceOffsets,
                       Optional<Tile_AnyBuffer>:$rowIndices,
                       Optional<Index>:$rowOffset,
                       Tile_AnyBuffer:$dest, Variadic<Index>:$destOffsets);
  let assemblyFormat = [{
    $source (`[` $sourceOffsets^ `]`)?
    (`rows` `(` $rowIndices^ `[` $rowOffset `]` `:`
      qualified(type($rowIndices)) `)`)?
    `to` $dest (`[` $destOffsets^ `]`)?
    attr-dict `:` qualified(type($source)) `to` qualified(type($dest))
  }];
  let extraClassDeclaration = [{
    ::mlir::LogicalResult verifyGather(::mlir::Value rows);
  }];
  let hasVerifier = 1;
}

def Tile_FillOp : Tile_Op<"fill"> {
  let summary = "Sets every element of a tile to a value";
  let description = [{
    `value` has the tile's element type. On a shared tile or a fragment the
    whole block runs it, so it may not be in a `tile.parallel` body; a
    thread's own `tile.local` may be filled anywhere.

    ```mlir
    tile.fill %row_max, %neg_inf : !tile.frag<[64], f32>, f32
    ```
  }];
  let arguments = (ins Tile_AnyOnChip:$dest, AnyType:$value);
  let assemblyFormat =
      "$dest `,` $value attr-dict `:` qualified(type($dest)) `,` type($value)";
  let hasVerifier = 1;
}

def Tile_ClearOp : Tile_Op<"clear"> {
  let summary = "Sets every element of a tile to zero";
  let description = [{
    `tile.fill` with zero, under the same rules (e.g. an accumulator before
    a loop of gemms that accumulate).

    ```mlir
    tile.clear %acc : !tile.frag<[block_m, block_n], f32>
    ```
  }];
  let arguments = (ins Tile_AnyOnChip:$dest);
  let assemblyFormat = "$dest attr-dict `:` qualified(type($dest))";
  let hasVerifier = 1;
}

def Tile_CastOp : Tile_Op<"cast"> {
  let summary = "Converts the elements of a tile into another tile";
  let description = [{
    Element-wise conversion between tiles of the same shape, rounding to
    nearest even; float to fp8 saturates to the largest finite value.

    ```mlir
    tile.cast %mean to %mean_fp8 : !tile.frag<[dim], f32> to !tile.shared<[dim], f8E4M3FN>
    ```
  }];
  let arguments = (ins Tile_AnyOnChip:$source, Tile_AnyOnChip:$dest);
  let assemblyFormat =
      "$source `to` $dest attr-dict `:` qualified(type($source)) `to` qualified(type($dest))";
  let hasVerifier = 1;
}

def Tile_GemmOp : Tile_Op<"gemm"> {
  let summary = "C (+)= op(A) * op(B) on tensor cores";
  let description = [{
    `A` is `[M, K]` (`[K, M]` with `transpose_a`), `B` is `[K, N]` (`[N, K]`
    with `transpose_b`), `C` is `[M, N]`. A is in shared memory or a
    fragment, B in shared memory, C a fragment. With `clear_accum` C is
    overwritten, otherwise accumulated into. `policy` says how the output is
    split across warps (sm_90a: warpgroups; other targets: warps):
    `full_row` along M, `full_col` along N, `square` along M when it divides
    evenly, else N. Element types (A x B -> C): f8E4M3FN x f8E4M3FN -> f32,
    bf16 x bf16 -> f32, f16 x f16 -> f32 or f16 (f16 accumulators hold two
    values per 32-bit register, as the tensor cores do). fp8 needs K-major operands (`transpose_b`, no
    `transpose_a`), as wgmma does; bf16/f16 operands may be either way round
    (wgmma reads the transposed ones MN-major). A shared operand's rows (its
    contiguous dimension) must be 32, 64 or a multiple of 128 bytes; wider
    rows are stored in 128-byte swizzle panels. sm_90a lowers to wgmma;
    sm_80 and newer without wgmma to mma.sync m16n8k16 (bf16/f16 only: fp8
    is refused).

    `async` (sm_90a): the wgmma group is issued and committed but not waited
    for; a later `tile.wait_gemms` in the same block waits for it, and until
    then nothing may read or write C (or a register A). What runs in
    between overlaps the tensor cores: FlashAttention-3's hand-over of the
    tensor cores from one warpgroup to the other right after its gemm is
    issued (a named barrier's arrive), or another warpgroup's softmax.
    (mma.sync targets run it synchronously.)

    ```mlir
    tile.gemm %q_own, %k_s, %s transpose_b clear_accum async
        : !tile.shared<[64, 128], bf16>, !tile.shared<[128, 128], bf16>
          -> !tile.frag<[64, 128], f32>
    tile.barrier id = 1 arrive_only
    tile.wait_gemms
    ```

    ```mlir
    tile.gemm %k_s, %q_s, %acc transpose_b clear_accum policy(full_row)
        : !tile.shared<[block_n, dim], f8E4M3FN>, !tile.shared<[heads, dim], f8E4M3FN>
          -> !tile.frag<[block_n, heads], f32>
    ```
  }];
  let arguments = (ins AnyTypeOf<[Tile_SharedType, Tile_FragmentType]>:$a,
                       Tile_SharedType:$b, Tile_FragmentType:$c,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       UnitAttr:$clear_accum,
                       DefaultValuedAttr<Tile_GemmWarpPolicy,
                                         "::hisa::tile::GemmWarpPolicy::Square">:$policy,
                       UnitAttr:$async);
  let assemblyFormat = [{
    $a `,` $b `,` $c (`transpose_a` $transpose_a^)? (`transpose_b` $transpose_b^)?
    (`clear_accum` $clear_accum^)? (`policy` `(` $policy^ `)`)? (`async` $async^)? attr-dict
    `:` qualified(type($a)) `,` qualified(type($b)) `->` qualified(type($c))
  }];
  let hasVerifier = 1;
}

def Tile_WaitGemmsOp : Tile_Op<"wait_gemms"> {
  let summary = "Waits for the executing warpgroup's asynchronous gemms";
  let description = [{
    Waits until at most `pending` (default 0) of the warpgroup's
    asynchronous gemms (`tile.gemm ... async`) are still running, the
    newest ones (`wgmma.wait_group pending`: gemms complete in the order
    they were issued); the accumulators of the others may be used after
    it. Every thread of a warpgroup must execute it together (no divergent
    control flow around it). On targets without wgmma it does nothing.

    ```mlir
    tile.gemm %q_own, %k_s, %s transpose_b clear_accum async : ...
    tile.wait_gemms
    ```
  }];
  let arguments = (ins DefaultValuedAttr<I64Attr, "0">:$pending);
  let assemblyFormat = "(`pending` `=` $pending^)? attr-dict";
  let hasVerifier = 1;
}

def Tile_ReduceOp : Tile_Op<"reduce"> {
  let summary = "Reduces a tile along one dimension";
  let description = [{
    `dest` has the shape of `source` without dimension `dim` (`[1]` when the
    source has rank 1). By default `dest` is overwritten; with `accumulate`
    the result is combined with what `dest` holds. The lowering takes f32
    or i32 fragments of power-of-two shape (a shared source is refused); a
    `tile.local` destination gets the result in every thread.

    A fragment's reduction first combines the values each thread holds of
    one output in `chains` independent chains (value j into chain
    j mod chains, default 2, a power of two up to 16), then the chains
    pairwise, then across lanes (xor shuffles; when the result goes
    through shared scratch, each lane keeps and completes only part of its
    outputs) and warps (shared scratch). One chain is a plain loop over the
    values (the fewest instructions, the longest dependency: 16 values are
    15 dependent adds); more chains shorten an epilogue's critical path for
    a few more instructions (flash attention's row statistics use 4; HISA's
    logits, with more warps per SM to hide latency, the default).
    Floating-point sums are rounded in that order.

    ```mlir
    tile.reduce sum %scores to %logits dim = 2
        : !tile.frag<[block_n, block_q, heads], f32> to !tile.frag<[block_n, block_q], f32>
    tile.reduce max %scores to %row_max dim = 1 chains = 4
        : !tile.frag<[128, 64], f32> to !tile.frag<[128], f32>
    ```
  }];
  let arguments = (ins Tile_ReduceKind:$kind,
                       AnyTypeOf<[Tile_SharedType, Tile_FragmentType]>:$source,
                       Tile_AnyOnChip:$dest, I64Attr:$dim, UnitAttr:$accumulate,
                       DefaultValuedAttr<I64Attr, "2">:$chains);
  let assemblyFormat = [{
    $kind $source `to` $dest `dim` `=` $dim (`accumulate` $accumulate^)?
    (`chains` `=` $chains^)? attr-dict
    `:` qualified(type($source)) `to` qualified(type($dest))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Loops and element access
//===----------------------------------------------------------------------===//

def Tile_ParallelOp : Tile_Op<"parallel", [
    SingleBlockImplicitTerminator<"YieldOp">, RecursiveMemoryEffects]> {
  let summary = "A loop over the elements of a tile, spread over the threads";
  let description = [{
    Iterates over every index of a tile-shaped domain; the iterations are
    independent and the compiler distributes them over the block's threads
    (following the layout of the fragments the body touches; the layout pass
    records the distribution in `layout`). Extents are integers or parameter
    names. Fragments are accessed at exactly the induction variables; global,
    shared and local tiles at any index. Two reads of a fragment may look
    elsewhere, where the layout keeps the element in the reading thread:
    a reduction of the parallel's fragment along one dimension, read at the
    other induction variables (row statistics; only where a gemm fixed the
    fragment's layout: an accumulator or register A operand, or a fragment
    of its shape or linked to it; reduce a plain fragment into a
    `tile.local` or shared tile instead), and an element's partner,
    read at the induction variables with one of them replaced by
    `arith.xori %iv, %c` for a positive constant c (the other half of a
    RoPE pair: a wgmma accumulator holds columns 2p and 2p + 1 in one
    thread); tile-assign-layouts refuses a partner that lies in another
    thread or past the tile, a store to a partner, and a partner read of a
    fragment the same parallel writes.

    ```mlir
    tile.parallel (%i, %h) in [block_n, heads] {
      %x = tile.load %acc[%i, %h] : !tile.frag<[block_n, heads], f32>
      %r = arith.maximumf %x, %zero : f32
      tile.store %r, %acc[%i, %h] : !tile.frag<[block_n, heads], f32>
    }
    tile.parallel (%i, %j) in [64, 64] {
      %j_partner = arith.xori %j, %c1 : index
      %partner = tile.load %acc[%i, %j_partner] : !tile.frag<[64, 64], f32>
      tile.store %partner, %swapped[%i, %j] : !tile.frag<[64, 64], f32>
    }
    ```
  }];
  let arguments = (ins ArrayAttr:$extents,
                       OptionalAttr<Tile_FragmentLayoutAttr>:$layout);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::hisa::tile::TileShape getDomain() {
      return ::hisa::tile::TileShape(getExtents());
    }
    ::mlir::Block::BlockArgListType getInductionVars() {
      return getBody().getArguments();
    }
  }];
}

def Tile_PipelinedOp : Tile_Op<"pipelined", [
    SingleBlockImplicitTerminator<"YieldOp">, RecursiveMemoryEffects]> {
  let summary = "A serial loop whose copies run num_stages iterations ahead";
  let description = [{
    A loop from `lowerBound` to `upperBound` by `step` whose global-to-shared
    copies are overlapped with the computation of earlier iterations, with
    `num_stages` buffers in flight (1 means no overlap).

    ```mlir
    tile.pipelined %t = %c0 to %ntiles step %c1 num_stages = 2 {
      ...
    }
    ```

    `warp_specialized`: the copies are issued by a producer warpgroup (128
    threads) that the block gets in addition to the launch's `threads`,
    running `num_stages` iterations ahead and handing each stage over
    through mbarriers ("full" when its copies have landed, "empty" when
    every consumer warp is done with it); the launch's threads, the
    consumers, run everything else (their block barriers become a named
    barrier among them) and get the registers the producer gives up
    (setmaxnreg: the producer keeps 72 when it gathers rows, 40 when its
    copies are all TMA boxes and the launch asks for several blocks per
    SM). Such a loop sits directly in the launch body, at most one
    per launch; the copies' offsets and the loop bounds must be computable
    from kernel arguments, block indices and arithmetic (the producer
    recomputes them), shared tiles written before the loop are visible to
    the producer's gathers, and a bound may be an element of a shared tile
    written and read before the loop and not written from the loop on (a
    trip count computed in the kernel; the producer reads it again). The
    producer starts once what it reads is written: the consumers' ops
    between that point and the loop run while the first stages fill.

    `overlap_gemm` (with `warp_specialized`, copies without `tile.release`,
    at least 3 stages): the body's first gemm (`clear_accum`, after
    side-effect-free index arithmetic and loads) of iteration k + 1 is
    issued before the rest of iteration k runs, so the tensor cores work on
    the next tile while the consumers compute the epilogue of this one.
    Later gemms of the body (attention's P V after its scores) run
    synchronously in that rest; their wait also retires the gemm issued
    ahead. The first gemm's accumulator is kept twice in registers;
    iteration k holds two stages (k and k + 1) while its epilogue runs,
    hence the third stage:

    ```mlir
    tile.pipelined %t = %c0 to %ntiles step %c1 num_stages = 3
        warp_specialized overlap_gemm {
      ...
    }
    ```

    `recompute_after`: the code after the loop computes its thread-dependent
    addresses again (from a fresh read of the thread index) instead of
    sharing them with the code before the loop. Sharing keeps those
    registers live across the loop; where the loop already uses every
    register (a [64, 512] f32 accumulator at the setmaxnreg limit), ptxas
    spills them. Recomputing costs instructions after the loop (~420 SASS
    instructions in sparse attention's epilogue), which can cost more than
    a spill outside the loop: sparse_attn_ws with the V4 layer's query norm
    at H = 128 loses its 28-byte spill with it but runs 1-2% slower, so no
    kernel asks for it today. Its use is a spill that ptxas would otherwise
    place inside a loop.
  }];
  let arguments = (ins Index:$lowerBound, Index:$upperBound, Index:$step,
                       I64Attr:$numStages, UnitAttr:$warp_specialized,
                       UnitAttr:$overlap_gemm, UnitAttr:$recompute_after);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Value getInductionVar() { return getBody().getArgument(0); }
  }];
}

def Tile_PerWarpgroupOp : Tile_Op<"per_warpgroup", [
    SingleBlockImplicitTerminator<"YieldOp">, RecursiveMemoryEffects]> {
  let summary = "Code each consumer warpgroup runs with its own index";
  let description = [{
    The body runs once per warpgroup of the launch's threads (128 threads
    each), `%wg` being the warpgroup's index in [0, threads / 128): the
    region in which issue 11's attention schedule gives each warpgroup its
    own keys, its own [64, 64] scores and P, and makes the cross-warpgroup
    steps explicit (docs/proposals/per-warpgroup.md has the design). It sits
    directly in a tile.launch body of at least two warpgroups, or in the
    body of a tile.pipelined that does (with warp_specialized: the
    consumers' part of each iteration, on the stage buffers the producer
    filled), and holds no tile.pipelined, tile.scan or nested
    tile.per_warpgroup.

    Inside, everything is the warpgroup's own: a fragment used in the body
    is one copy per warpgroup, laid out over its 128 threads (it may not
    also be used outside: fill, use and store it in bodies); a tile.gemm is
    one warpgroup's wgmma chain (a [64, N] accumulator is m64nN, not split
    over warpgroups); tile.parallel domains and copies are spread over the
    warpgroup's threads; barriers synchronize the warpgroup only (named
    barrier 3 + wg); cross-warp reductions use the warpgroup's part of the
    reduction scratch. Shared tiles are the block's: warpgroups that write
    the same one race.

    ```mlir
    tile.per_warpgroup (%wg) {
      tile.gemm %q, %k, %s transpose_b clear_accum
          : !tile.shared<[64, 64], bf16>, !tile.shared<[64, 64], bf16>
            -> !tile.frag<[64, 64], f32>
      tile.copy %s to %out[%wg, %c0, %c0]
          : !tile.frag<[64, 64], f32> to !tile.global<[2, 64, 64], f32>
    }
    ```

    The block's threads meet before and after the body, so that shared
    tiles written before it may be read inside and those written inside
    may be read after it. `unsynchronized` drops those two barriers: the
    warpgroups then run the body (and, in a key loop, successive
    iterations) out of step, which is the point of a schedule where one
    warpgroup's softmax overlaps the other's tensor-core work; the body
    synchronizes the warpgroups itself (named `tile.barrier`s,
    `tile.release`), and its shared-memory writes are not fenced against
    the previous iteration's reads by the key loop either.
  }];
  let arguments = (ins UnitAttr:$unsynchronized);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Value getWarpgroup() { return getBody().getArgument(0); }
  }];
}

def Tile_RejoinOp : Tile_Op<"rejoin", [
    SingleBlockImplicitTerminator<"YieldOp">, RecursiveMemoryEffects]> {
  let summary = "Code the producer warpgroup runs too, after a warp-specialized loop";
  let description = [{
    A warp-specialized `tile.pipelined` adds a producer warpgroup to the
    launch's threads, which has nothing to do once it has issued the loop's
    copies. The body of `tile.rejoin` runs on every thread of the block,
    the producer's 128 included: launch threads + 128 (for example a
    selection after a logits loop walks its keys with twice the warps).
    Without a warp-specialized loop in the launch it runs on the launch's
    threads like the code around it, so one source serves both forms (a
    `tile.parallel` domain sized for the larger count is correct on
    either).

    It is the last op of a tile.launch body. Its body may not use
    fragments (they are laid out over the consumers' threads), and the
    values it uses from outside must be recomputable by the producer:
    constants, parameters, `tile.dim`, the block index and arithmetic of
    those (load what it reads from shared or global memory inside). The
    block's threads meet at its start, so shared tiles written before it
    may be read inside. The producer and the consumers trade registers
    back (setmaxnreg) to an even share of the block's pool first.

    ```mlir
    tile.pipelined %t = %c0 to %n step %c1 num_stages = 2 warp_specialized {
      ...
    }
    tile.rejoin {
      tile.parallel (%warp, %lane) in [8, 32] {
        ...
      }
    }
    ```
  }];
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$body attr-dict";
  let hasRegionVerifier = 1;
}

def Tile_BarrierOp : Tile_Op<"barrier"> {
  let summary = "Every warpgroup of the block meets here";
  let description = [{
    A block-wide barrier (`bar.sync 0`): shared-memory writes before it are
    visible to every thread after it. The tile ops place the barriers they
    need themselves, so outside tile.per_warpgroup this is rarely needed;
    inside a body, where the ops' own barriers synchronize one warpgroup,
    it is how warpgroups hand data to each other through shared tiles (each
    writes its own tile, chosen with tile.pick, then all meet, then each
    reads the others'). Every warpgroup must reach the same barriers (no
    control flow that differs between warpgroups around it), or the block
    hangs; it may not sit in a tile.parallel body.

    ```mlir
    tile.per_warpgroup (%wg) {
      %mine = tile.pick %wg [%max0, %max1] : !tile.shared<[64], f32>
      tile.copy %row_max to %mine : !tile.frag<[64], f32> to !tile.shared<[64], f32>
      tile.barrier
      // read %max0 and %max1
    }
    ```

    With `id = N` (0 <= N < 6) it is instead the block's named barrier
    10 + N over the launch's (consumer) threads, and may differ between
    warpgroups: each warpgroup either waits at it (`tile.barrier id = N`)
    or only signals it (`tile.barrier id = N arrive_only`: it goes on at
    once), and the waiting ones go on when every warpgroup has done one or
    the other. This is a one-way hand-over: a warpgroup publishes a shared
    tile and signals, another waits and reads (a schedule where the two
    warpgroups run different code, under `scf.if` on `%wg`). Named
    barriers are only valid in a tile.per_warpgroup body.

    ```mlir
    scf.if %first {
      tile.copy %p to %p_shared : !tile.frag<[64, 64], bf16> to !tile.shared<[64, 64], bf16>
      tile.barrier id = 0 arrive_only
    } else {
      tile.barrier id = 0
      // read %p_shared
    }
    ```

    Pair every signal with a wait before the same id is signalled again:
    two signals of one warpgroup would complete the barrier without the
    waiter. Before either form the executing threads fence their shared
    writes for the async proxy, so a tile written before the signal may be
    a wgmma operand of the waiting warpgroup. At most 896 launch threads
    (the warpgroups' own barriers take ids 3 .. 3 + W - 1).
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$id, UnitAttr:$arrive_only);
  let assemblyFormat = "(`id` `=` $id^)? (`arrive_only` $arrive_only^)? attr-dict";
  let hasVerifier = 1;
}

def Tile_ReleaseOp : Tile_Op<"release"> {
  let summary = "Hands a stage buffer back to the producer before the iteration ends";
  let description = [{
    In the body of a warp_specialized tile.pipelined, the consumers hold
    every buffer the producer filled for an iteration until the iteration
    ends. `tile.release %t` ends the executing warps' use of `%t` (a shared
    tile that one of the loop's copies fills, or a tile.pick among such
    tiles) early, so that the producer may refill it for a later iteration
    while the rest of the iteration runs: the schedule of FlashMLA's
    sparse attention, where each 64-key block is freed by halves. A loop
    with a release hands each copy's buffer over on its own mbarriers
    (rather than one per stage): the consumers wait for a copy's data just
    before their first use of it, and every buffer not released when an
    iteration ends is released then. Each warp releases a buffer at most
    once per iteration (a second release is a no-op); it must not read the
    buffer afterwards in that iteration. Every thread of a warp must
    execute the same releases (no release under divergent control flow
    within a warp). With a release, num_stages may be 1: the producer
    refills a buffer as soon as every consumer warp has released it.

    ```mlir
    tile.gemm %p, %v_lo, %o : ...
    tile.release %v_lo : !tile.shared<[64, 256], bf16>
    ```
  }];
  let arguments = (ins Tile_SharedType:$tile);
  let assemblyFormat = "$tile attr-dict `:` qualified(type($tile))";
  let hasVerifier = 1;
}

def Tile_ClusterRankOp : Tile_Op<"cluster_rank", [Pure]> {
  let summary = "The block's rank in its thread-block cluster";
  let description = [{
    In [0, N) for a launch with `cluster N`: block x of the grid has rank
    x mod N (clusters group consecutive blocks along x).

    ```mlir
    %rank = tile.cluster_rank : index
    ```
  }];
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_ClusterBarrierOp : Tile_Op<"cluster_barrier"> {
  let summary = "Every block of the cluster meets here";
  let description = [{
    barrier.cluster.arrive (release) + barrier.cluster.wait (acquire):
    every thread of every block of the cluster arrives before any goes on,
    so shared-memory writes before it are visible to the cluster's other
    blocks (`tile.load ... peer`) after it. Every thread that has not
    exited must reach the same cluster barriers: it sits directly in the
    launch body or in `scf` control flow that is uniform over the cluster,
    not in a tile.parallel, tile.pipelined, tile.per_warpgroup or
    tile.all_of body (a warp-specialized loop's producer warpgroup has
    exited by then and does not count). A block that a peer reads from
    must not exit before the peer's reads: put a cluster barrier after
    them.

    ```mlir
    tile.copy %row_max to %max_s : !tile.frag<[64], f32> to !tile.shared<[64], f32>
    tile.cluster_barrier
    // tile.load %max_s[%i] peer %other ...
    ```
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def Tile_LoadOp : Tile_Op<"load", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Reads one element of a tile or global tensor";
  let description = [{
    Used in `tile.parallel` bodies and serial code. A read outside a global
    tensor gives 0.

    `peer %rank` reads the element of the same shared tile in another block
    of the launch's cluster (its rank in [0, N) of `cluster N`): the
    distributed shared memory of sm_90 (mapa + ld.shared::cluster). The
    peer must have written it before a `tile.cluster_barrier` that both
    passed, and keeps it until a later one: a tile read by a peer stays
    allocated to the end of the launch (tile-plan-shared-memory gives its
    bytes to no later tile).

    ```mlir
    %m_peer = tile.load %row_max_s[%i] peer %other : !tile.shared<[64], f32>
    ```
  }];
  let arguments = (ins Tile_AnyBuffer:$source, Variadic<Index>:$indices,
                       Optional<Index>:$peer);
  let results = (outs AnyType:$result);
  let assemblyFormat = [{
    $source `[` $indices `]` (`peer` $peer^)? attr-dict `:`
    qualified(type($source))
  }];
  let hasVerifier = 1;
}

def Tile_StoreOp : Tile_Op<"store", [
    TypesMatchWith<"value has the element type of dest", "dest", "value",
                   "::hisa::tile::getTileShapeAndElementType($_self)->second">]> {
  let summary = "Writes one element of a tile or global tensor";
  let description = [{
    In a `tile.parallel` body each element's thread writes (a fragment only
    at the induction variables). In serial code thread 0 writes a shared or
    global element, and a shared store is followed by a block barrier so
    that every thread sees it; each thread writes its own `tile.local`. A
    write outside a global tensor is dropped.

    ```mlir
    tile.store %r, %acc[%i, %h] : !tile.frag<[block_n, heads], f32>
    tile.store %count, %counts[%bx] : !tile.global<[?], i32>
    ```
  }];
  let arguments = (ins AnyType:$value, Tile_AnyBuffer:$dest,
                       Variadic<Index>:$indices);
  let assemblyFormat =
      "$value `,` $dest `[` $indices `]` attr-dict `:` qualified(type($dest))";
  let hasVerifier = 1;
}

def Tile_AtomicOp : Tile_Op<"atomic", [
    TypesMatchWith<"value has the element type of dest", "dest", "value",
                   "::hisa::tile::getTileShapeAndElementType($_self)->second">,
    TypesMatchWith<"result has the element type of dest", "dest", "old",
                   "::hisa::tile::getTileShapeAndElementType($_self)->second">]> {
  let summary = "Atomically combines a value into one element of shared or "
                "global memory";
  let description = [{
    `dest[indices] = kind(dest[indices], value)` as one atomic operation,
    returning the element's previous value: the building block of
    histograms, counters and claimed slots (exact top-k). One atomic is
    performed per element of the enclosing `tile.parallel` domain, so it
    must sit in a `tile.parallel` body (or in a device function, checked
    again where its call is inlined); the indices may be any values
    computed there (a bin, a slot). Kinds: `add` (integers and floats),
    `max` / `min` (signed integers, floats), `umax` / `umin` (integers as
    unsigned). Elements are 32- or 64-bit integers or f32. An atomic outside
    a global tensor is dropped and returns 0; indices outside a shared tile
    are undefined, as for `tile.store`. A `tile.parallel` whose atomics
    write shared memory ends with a barrier, like one whose stores do.

    ```mlir
    tile.parallel (%i) in [1024] {
      %v = tile.load %keys[%i] : !tile.shared<[1024], i32>
      %bin = arith.index_cast %v : i32 to index
      %old = tile.atomic add %one, %hist[%bin] : !tile.shared<[256], i32>
    }
    ```
  }];
  let arguments = (ins Tile_AtomicKind:$kind, AnyType:$value,
                       Tile_AnyBuffer:$dest, Variadic<Index>:$indices);
  let results = (outs AnyType:$old);
  let assemblyFormat = [{
    $kind $value `,` $dest `[` $indices `]` attr-dict `:` qualified(type($dest))
  }];
  let hasVerifier = 1;
}

def Tile_FenceOp : Tile_Op<"fence"> {
  let summary = "Orders the executing thread's memory accesses at a scope";
  let description = [{
    Every memory access the executing thread issued before the fence is
    performed, for all threads of the scope (`block`, `gpu`, `system`),
    before any access it issues after it (`membar.cta` / `membar.gl` /
    `membar.sys`). Unlike `tile.barrier` it waits for nobody. It is the
    step a "the last block finishes" pattern needs between writing a
    partial result and announcing it: each block writes its part, fences at
    `gpu` scope, then takes a ticket with a global `tile.atomic`; the block
    that draws the last ticket fences again and reads every part. Every
    thread that reaches it executes it (in a `tile.parallel` body, the
    thread of each element).

    ```mlir
    tile.store %part, %parts[%block] : !tile.global<[?], f32>
    tile.fence gpu
    tile.parallel (%i) in [1] {
      %ticket = tile.atomic add %one, %counter[%c0] : !tile.global<[1], i32>
      ...
    }
    ```
  }];
  let arguments = (ins Tile_FenceScope:$scope);
  let assemblyFormat = "$scope attr-dict";
  let hasVerifier = 1;
}

def Tile_PrefetchOp : Tile_Op<"prefetch"> {
  let summary = "Starts bringing a byte range of a global tensor into L2";
  let description = [{
    Asks the copy engine to read `bytes` bytes of the global tensor, from the
    element at `indices` on (row-major), into the L2 cache
    (`cp.async.bulk.prefetch.L2`). It is a hint: nothing waits for it and no
    result depends on it. What it buys is bandwidth that would otherwise go
    unused: a kernel that runs while the memory system idles (a chain of
    small, latency-bound launches) can warm the data a later launch streams,
    such as the next projection's weights in a decode step.

    The range is clipped to the tensor (nothing past its end is touched),
    its start rounded down and its end rounded down to 16 bytes (the copy
    engine's granule; the tensor's base must be 16-byte aligned, which the
    operators check), and at most 2^31 bytes are asked for by one
    prefetch. In a `tile.parallel` body one prefetch is issued per element
    of the domain (per thread and value of its layout); in serial code,
    once per block (by thread 0).

    ```mlir
    tile.parallel (%t) in [128] {
      %chunk = arith.addi %first, %t : index
      %at = arith.muli %chunk, %c16384 : index
      tile.prefetch %weights[%at], %c16384 : !tile.global<[?], i8>
    }
    ```
  }];
  let arguments = (ins Tile_GlobalType:$source, Variadic<Index>:$indices,
                       Index:$bytes);
  let assemblyFormat = [{
    $source `[` $indices `]` `,` $bytes attr-dict `:` qualified(type($source))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Prefix sums and warp collectives
//===----------------------------------------------------------------------===//

def Tile_ScanOp : Tile_Op<"scan", [
    TypesMatchWith<"total has the element type of source", "source", "total",
                   "::hisa::tile::getTileShapeAndElementType($_self)->second">]> {
  let summary = "Block-wide prefix sum (or max / min) of a 1-D shared tile";
  let description = [{
    `dest[i] = source[0] + ... + source[i]` (inclusive; with `exclusive`
    the sum stops before `source[i]` and `dest[0]` is the identity), for
    the kinds `sum`, `max` and `min`. With `reverse` the scan runs from the
    last element down: `dest[i] = source[i] + ... + source[n - 1]` (a suffix
    sum: "how many counted keys are at least bin i"). The result is the
    combination of all elements, the same in every thread. `source` and
    `dest` may be the same tile.

    All threads of the block take part (it is not allowed in a
    `tile.parallel` body); the scan begins and ends with a barrier, so
    `source` may come straight from a `tile.parallel` and `dest` may be read
    by the next one. Each thread scans a contiguous run of elements in
    registers, then the runs are combined with warp shuffles and one value
    per warp in shared memory.

    ```mlir
    %n = tile.scan sum %hist to %at_least reverse
        : !tile.shared<[256], i32> to !tile.shared<[256], i32>
    ```
  }];
  let arguments = (ins Tile_ReduceKind:$kind, Tile_SharedType:$source,
                       Tile_SharedType:$dest, UnitAttr:$exclusive,
                       UnitAttr:$reverse);
  let results = (outs AnyType:$total);
  let assemblyFormat = [{
    $kind $source `to` $dest (`exclusive` $exclusive^)? (`reverse` $reverse^)?
    attr-dict `:` qualified(type($source)) `to` qualified(type($dest))
  }];
  let hasVerifier = 1;
}

def Tile_WarpScanOp : Tile_Op<"warp_scan", [AllTypesMatch<["value", "prefix",
                                                          "total"]>]> {
  let summary = "Prefix sum (or max / min) over the 32 elements of a warp";
  let description = [{
    In a `tile.parallel` body: the elements of the domain are taken in
    row-major order in groups of 32 (a warp's lanes, one element each per
    step); `prefix` is the combination of `value` over the group's elements
    up to this one (inclusive; with `exclusive`, before it, the identity for
    the first), `total` over the whole group. The parallel's domain must
    fill whole warps (a multiple of 32 elements, one per thread per step)
    and every element of a group must reach the op (not under an `scf.if`
    that differs between them): these are warp shuffles. A device function
    may hold it; it is checked again where its call is inlined.

    ```mlir
    %rank, %count = tile.warp_scan sum %flag exclusive : i32
    ```
  }];
  let arguments = (ins Tile_ReduceKind:$kind, AnyTypeOf<[I32, F32]>:$value,
                       UnitAttr:$exclusive);
  let results = (outs AnyType:$prefix, AnyType:$total);
  let assemblyFormat = [{
    $kind $value (`exclusive` $exclusive^)? attr-dict `:` type($value)
  }];
  let hasVerifier = 1;
}

def Tile_WarpBroadcastOp : Tile_Op<"warp_broadcast",
                                   [AllTypesMatch<["value", "result"]>]> {
  let summary = "One element's value, given to every element of its warp";
  let description = [{
    In a `tile.parallel` body, over the same groups of 32 elements as
    `tile.warp_scan` (with the same conditions): `result` is `value` of
    the group's element `lane` (0 to 31, read modulo 32; it may differ
    between elements). With a ballot it turns one atomic per warp into
    slots for every lane: the first lane claims the group's total, the
    others read the base it got. A device function may hold it (checked
    again where it is inlined).

    ```mlir
    %base = tile.warp_broadcast %claimed, %c0_i32 : i32
    ```
  }];
  let arguments = (ins AnyTypeOf<[I32, F32]>:$value, I32:$lane);
  let results = (outs AnyType:$result);
  let assemblyFormat = [{
    $value `,` $lane attr-dict `:` type($value)
  }];
  let hasVerifier = 1;
}

def Tile_WarpMatchOp : Tile_Op<"warp_match"> {
  let summary = "The elements of a warp that hold the same value";
  let description = [{
    In a `tile.parallel` body, over the same groups of 32 elements as
    `tile.warp_scan` (with the same conditions): an `i32` whose bit j is
    set when the group's element j holds the same `value` as this one
    (`match.any.sync`). It aggregates atomics on data-dependent addresses:
    the lowest element of each set (`math.cttz` of the mask equals its
    lane) adds `math.ctpop` of the mask once, e.g. for a histogram whose
    keys fall in a few bins. A device function may hold it (checked again
    where it is inlined).

    ```mlir
    %peers = tile.warp_match %bin : i32
    ```
  }];
  let arguments = (ins I32:$value);
  let results = (outs I32:$result);
  let assemblyFormat = [{
    $value attr-dict `:` type($value)
  }];
  let hasVerifier = 1;
}

def Tile_AllOfOp : Tile_Op<"all_of"> {
  let summary = "Whether a predicate holds for every element of a small 1-D "
                "shared tile, or of the fragment elements a warp holds";
  let description = [{
    The region computes one element's predicate from its value (side-effect
    free ops, ending in `tile.yield %p : i1`).

    With a shared tile the result is true when the predicate holds for
    every element, the same `i1` in every thread, so it may steer an
    `scf.if` around tile ops (a fast path for the common case). Every warp
    evaluates the whole tile itself: each lane takes `ceil(n / 32)`
    consecutive elements, then one warp vote. No barrier and no shared
    scratch, a few instructions per element and lane: meant for small tiles
    (at most 1024 elements), e.g. once per pipelined iteration. The tile
    must be readable by every thread, as for any read (written before a
    barrier, or a staged copy the loop waited for). All threads of the
    block reach it (not in a `tile.parallel` body).

    With a fragment (any shape) the result is true when the predicate holds
    for every element that the thread's warp holds: each thread tests its
    own registers, then one warp vote. The `i1` is the same within a warp
    but may differ between warps. The verifier follows it (and what is
    computed from it, yielded or carried by the control flow it decides,
    or read back from the fragments and local arrays written under it):
    control flow it decides (scf.if, scf.for bounds, scf.while) may hold
    only work that each thread does on its own (`tile.parallel` ops that
    write only fragments and local arrays, `tile.fill` of a fragment or
    local array, side-effect-free ops), and no other tile op may take it
    (a pick index or copy offset differing between warps would split a
    block-wide op). It lets a warp skip
    register work its rows do not need, e.g. online softmax's rescale of the
    output when no row maximum of the warp moved (a maximum raised only
    when it grows by more than a threshold, as FlashAttention-4 does).

    ```mlir
    // A key tile whose scales are all finite and >= 0: ReLU(x * s) =
    // s * ReLU(x) for every key, so the scale moves after the head sum.
    %plain = tile.all_of %scale_tile : !tile.shared<[kt], f32> {
    ^bb0(%s: f32):
      %nonneg = arith.cmpf oge, %s, %zero : f32
      %finite = arith.cmpf olt, %s, %inf : f32
      %ok = arith.andi %nonneg, %finite : i1
      tile.yield %ok : i1
    }
    // Rescale a warp's output rows only when one of their factors is not 1.
    %kept = tile.all_of %alpha : !tile.frag<[64], f32> {
    ^bb0(%a: f32):
      %one_here = arith.cmpf oeq, %a, %one : f32
      tile.yield %one_here : i1
    }
    %moved = arith.xori %kept, %true : i1
    scf.if %moved {
      tile.parallel (%i, %j) in [64, 256] { ... }
    }
    ```
  }];
  let arguments = (ins AnyTypeOf<[Tile_SharedType, Tile_FragmentType]>:$source);
  let results = (outs I1:$result);
  let regions = (region SizedRegion<1>:$predicate);
  let assemblyFormat =
      "$source attr-dict `:` qualified(type($source)) $predicate";
  let hasVerifier = 1;
}

def Tile_VoteOp : Tile_Op<"vote"> {
  let summary = "Warp-wide vote: ballot, any, all";
  let description = [{
    In a `tile.parallel` body, over the same groups of 32 elements as
    `tile.warp_scan` (with the same conditions): `ballot` gives an `i32`
    whose bit j is `predicate` of the group's element j; `any` and `all`
    give an `i1`. With the ballot, `math.ctpop` of the bits below this
    element's (`linear % 32`) is its rank among those voting true. A
    device function may hold it (checked again where it is inlined).

    ```mlir
    %bits = tile.vote ballot %is_tie : i32
    %anyone = tile.vote any %is_tie : i1
    ```
  }];
  let arguments = (ins Tile_VoteKind:$kind, I1:$predicate);
  let results = (outs AnyTypeOf<[I1, I32]>:$result);
  let assemblyFormat = [{
    $kind $predicate attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

#endif // HISA_DIALECT_TILE_IR_TILEOPS_TD
