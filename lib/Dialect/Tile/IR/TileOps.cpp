//===- TileOps.cpp - Tile dialect operations ------------------------------===//

#include "hisa/Dialect/Tile/IR/TileOps.h"

#include "hisa/Dialect/Tile/IR/LaneUniformity.h"
#include "hisa/Dialect/Tile/IR/TileLimits.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/TypeSwitch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace hisa::tile;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static TileShape shapeOf(Type type) {
  return getTileShapeAndElementType(type)->first;
}

static Type elementTypeOf(Type type) {
  return getTileShapeAndElementType(type)->second;
}

/// Tile operations only have a meaning inside the code a block runs: a
/// launch body, or a device function (a private func.func, which
/// tile-inline-functions inlines into launches).
static LogicalResult verifyInsideLaunch(Operation *op) {
  auto function = op->getParentOfType<mlir::func::FuncOp>();
  if (!op->getParentOfType<LaunchOp>() && !(function && function.isPrivate()))
    return op->emitOpError(
        "must be nested in a tile.launch (or a device function)");
  return success();
}

/// Per-element ops (atomics, warp collectives) belong in a tile.parallel
/// body, or in a device function whose calls sit in one: the verifier sees
/// them again once tile-inline-functions has inlined the call.
static bool isInParallelBody(Operation *op) {
  if (op->getParentOfType<ParallelOp>())
    return true;
  auto function = op->getParentOfType<mlir::func::FuncOp>();
  return function && function.isPrivate() && !op->getParentOfType<LaunchOp>();
}

/// Ops that the whole block runs together on shared tiles or fragments
/// (their barriers, shuffles and thread-to-element maps are the block's)
/// cannot sit in a tile.parallel body, which runs per element under a
/// guard: some threads would skip them (a barrier in divergent code hangs
/// or reads unwritten scratch). Copies and fills of a thread's own local
/// tiles are per thread and stay allowed.
static LogicalResult verifyBlockOpOutsideParallel(Operation *op,
                                                  ValueRange tiles) {
  if (!op->getParentOfType<ParallelOp>())
    return success();
  for (Value tile : tiles)
    if (isa<SharedType, FragmentType>(tile.getType()))
      return op->emitOpError("works on a ")
             << getTileMemoryKindName(tile.getType())
             << " tile with every thread of the block, so it cannot be in a "
                "tile.parallel body (which runs per element, under a guard "
                "some threads skip); move it before or after the parallel";
  return success();
}

/// Whether `op` runs only when an scf branch or loop lets it (such code may
/// be dead for a given specialization, before the binding folds it away).
static bool isUnderControlFlow(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp()) {
    if (isa<LaunchOp, KernelOp, mlir::func::FuncOp>(parent))
      return false;
    if (isa<scf::SCFDialect>(parent->getDialect()))
      return true;
  }
  return false;
}

static std::string describe(Type type) {
  return (getTileMemoryKindName(type) + " tile " +
          formatDims(shapeOf(type).getDims()))
      .str();
}

//===----------------------------------------------------------------------===//
// CallOp
//===----------------------------------------------------------------------===//

/// The single shape symbol a dimension is ("n"), if it is one.
static std::optional<StringRef> singleSymbol(Attribute dim) {
  auto text = dyn_cast<StringAttr>(dim);
  if (!text)
    return std::nullopt;
  std::optional<DimMonomial> monomial = DimMonomial::parse(text.getValue());
  if (!monomial || monomial->coefficient != 1 || monomial->symbols.size() != 1)
    return std::nullopt;
  return text.getValue();
}

FailureOr<llvm::StringMap<Attribute>>
CallOp::bindShapes(FunctionType calleeType) {
  llvm::StringMap<Attribute> bindings;
  SmallVector<Type> formal(calleeType.getInputs());
  llvm::append_range(formal, calleeType.getResults());
  SmallVector<Type> actual(getArgs().getTypes());
  llvm::append_range(actual, getResultTypes());
  if (formal.size() != actual.size())
    return emitOpError("has ")
           << getArgs().size() << " arguments and " << getNumResults()
           << " results for @" << getCallee() << " of type " << calleeType;
  for (auto [index, types] : llvm::enumerate(llvm::zip(formal, actual))) {
    auto [want, got] = types;
    auto wantShape = getTileShapeAndElementType(want);
    auto gotShape = getTileShapeAndElementType(got);
    if (!wantShape || !gotShape || want.getTypeID() != got.getTypeID()) {
      if (want == got)
        continue;
      return emitOpError("operand or result #")
             << index << " is " << got << ", but @" << getCallee() << " takes "
             << want;
    }
    if (wantShape->second != gotShape->second ||
        wantShape->first.getRank() != gotShape->first.getRank())
      return emitOpError("operand or result #")
             << index << " is " << got << ", but @" << getCallee() << " takes "
             << want << " (element type and rank must match)";
    for (int64_t d = 0; d < wantShape->first.getRank(); ++d) {
      Attribute wantDim = wantShape->first.getDim(d);
      Attribute gotDim = gotShape->first.getDim(d);
      std::optional<StringRef> symbol = singleSymbol(wantDim);
      if (!symbol) {
        if (wantDim != gotDim)
          return emitOpError("operand or result #")
                 << index << " has dimension " << formatDim(gotDim)
                 << " where @" << getCallee() << " takes "
                 << formatDim(wantDim);
        continue;
      }
      auto [it, inserted] = bindings.try_emplace(*symbol, gotDim);
      if (!inserted && it->second != gotDim)
        return emitOpError("binds '")
               << *symbol << "' of @" << getCallee() << " to both "
               << formatDim(it->second) << " and " << formatDim(gotDim);
    }
  }
  return bindings;
}

LogicalResult CallOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto callee = symbolTable.lookupNearestSymbolFrom<mlir::func::FuncOp>(
      *this, getCalleeAttr());
  if (!callee)
    return emitOpError("calls @")
           << getCallee()
           << ", which is not a func.func of this module (declare a library "
              "function with its signature)";
  if (failed(bindShapes(callee.getFunctionType())))
    return failure();
  return verifyInsideLaunch(*this);
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

void KernelOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                     FunctionType type, DictionaryAttr params) {
  state.addAttribute(SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addAttribute(getFunctionTypeAttrName(state.name), TypeAttr::get(type));
  state.addAttribute(getParamsAttrName(state.name), params);
  Region *body = state.addRegion();
  Block *entry = new Block();
  body->push_back(entry);
  for (Type input : type.getInputs())
    entry->addArgument(input, state.location);
  ensureTerminator(*body, builder, state.location);
}

ParseResult KernelOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &builder = parser.getBuilder();
  StringAttr name;
  if (parser.parseSymbolName(name, SymbolTable::getSymbolAttrName(),
                             result.attributes))
    return failure();

  SmallVector<OpAsmParser::Argument> arguments;
  SmallVector<Type> resultTypes;
  SmallVector<DictionaryAttr> resultAttrs;
  bool isVariadic = false;
  if (function_interface_impl::parseFunctionSignatureWithArguments(
          parser, /*allowVariadic=*/false, arguments, isVariadic, resultTypes,
          resultAttrs))
    return failure();
  SmallVector<Type> argumentTypes =
      llvm::map_to_vector(arguments, [](auto &arg) { return arg.type; });
  result.addAttribute(
      getFunctionTypeAttrName(result.name),
      TypeAttr::get(builder.getFunctionType(argumentTypes, resultTypes)));

  DictionaryAttr params = builder.getDictionaryAttr({});
  if (succeeded(parser.parseOptionalKeyword("params")) &&
      parser.parseAttribute(params))
    return failure();
  result.addAttribute(getParamsAttrName(result.name), params);

  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  call_interface_impl::addArgAndResultAttrs(
      builder, result, arguments, resultAttrs, getArgAttrsAttrName(result.name),
      getResAttrsAttrName(result.name));

  Region *body = result.addRegion();
  if (parser.parseRegion(*body, arguments))
    return failure();
  ensureTerminator(*body, builder, result.location);
  return success();
}

void KernelOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printSymbolName(getSymName());
  function_interface_impl::printFunctionSignature(
      p, *this, getArgumentTypes(), /*isVariadic=*/false, getResultTypes());
  if (!getParams().empty()) {
    // Parameter values are integers: print them without the `: i64` suffix.
    p << " params {";
    llvm::interleaveComma(getParams(), p, [&](NamedAttribute param) {
      p.printKeywordOrString(param.getName().getValue());
      p << " = " << cast<IntegerAttr>(param.getValue()).getValue();
    });
    p << "}";
  }
  function_interface_impl::printFunctionAttributes(
      p, *this,
      {getFunctionTypeAttrName(), getParamsAttrName(), getArgAttrsAttrName(),
       getResAttrsAttrName()});
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/false);
}

LaunchOp KernelOp::getLaunch() {
  auto launches = getBody().front().getOps<LaunchOp>();
  return launches.empty() ? LaunchOp() : *launches.begin();
}

std::optional<int64_t> KernelOp::getParamValue(StringRef name) {
  auto value = dyn_cast_or_null<IntegerAttr>(getParams().get(name));
  if (!value)
    return std::nullopt;
  return value.getInt();
}

LogicalResult KernelOp::verify() {
  if (!getResultTypes().empty())
    return emitOpError("cannot return values; write results to global tensor "
                       "arguments");
  // Scalar floats reach the kernel as f32 or f64 (the launch packs a
  // double): a 16-bit one arrived as the double's low bytes.
  for (auto [i, type] : llvm::enumerate(getArgumentTypes()))
    if (auto scalar = dyn_cast<FloatType>(type);
        scalar && scalar.getWidth() != 32 && scalar.getWidth() != 64)
      return emitOpError("argument #")
             << i << " is a " << type
             << " scalar; scalar floats are f32 or f64 (convert in the "
                "kernel)";
  // The name becomes a PTX entry point: LLVM's NVPTX back end aborts the
  // process on other characters (a JIT caller's server included).
  StringRef name = getSymName();
  if (name.empty() || name.size() > 1024 || llvm::isDigit(name.front()) ||
      !llvm::all_of(name, [](char c) {
        return llvm::isAlnum(c) || c == '_' || c == '$';
      }))
    return emitOpError("name '")
           << name
           << "' is not a PTX identifier (letters, digits, '_' and '$', not "
              "starting with a digit, at most 1024 characters)";
  for (NamedAttribute param : getParams()) {
    auto value = dyn_cast<IntegerAttr>(param.getValue());
    if (!value || !value.getType().isSignlessInteger())
      return emitOpError("parameter '")
             << param.getName().getValue()
             << "' must have an integer value, got " << param.getValue();
  }
  for (auto [index, type] : llvm::enumerate(getArgumentTypes()))
    if (!isa<GlobalType, IntegerType, IndexType, FloatType>(type))
      return emitOpError("argument #")
             << index << " must be a global tensor or a scalar, got " << type;
  return success();
}

/// Every parameter name a shape mentions must be declared by the kernel.
static LogicalResult verifyShapeSymbols(KernelOp kernel, Operation *where,
                                        TileShape shape) {
  SmallVector<std::string> names;
  shape.collectSymbols(names);
  for (const std::string &name : names) {
    if (kernel.getParams().get(name))
      continue;
    std::string declared;
    llvm::raw_string_ostream os(declared);
    llvm::interleaveComma(kernel.getParams(), os, [&](NamedAttribute param) {
      os << param.getName().getValue();
    });
    return where->emitOpError("shape ")
           << formatDims(shape.getDims()) << " names '" << name
           << "', which is not a parameter of kernel @" << kernel.getSymName()
           << " (parameters: " << (declared.empty() ? "none" : declared) << ")";
  }
  return success();
}

/// Every parameter a tile type names is declared, and once its shape is
/// bound, the tile fits what the target holds (types made by passes, e.g.
/// tile-bind-params, are not verified when they are built).
static LogicalResult verifyTypeSymbols(KernelOp kernel, Operation *where,
                                       Type type) {
  auto tile = getTileShapeAndElementType(type);
  if (!tile)
    return success();
  if (failed(verifyShapeSymbols(kernel, where, tile->first)))
    return failure();
  return verifyTileFootprint([&] { return where->emitOpError(); }, type);
}

ArrayRef<StringRef> hisa::tile::getGridBinaryOpNames() {
  static const StringRef names[] = {
      "addi",      "subi",      "muli",       "divsi", "divui",
      "ceildivui", "ceildivsi", "floordivsi", "remsi", "remui",
      "minsi",     "maxsi",     "minui",      "maxui", "andi",
      "ori",       "xori",      "shli",       "shrui", "shrsi"};
  return names;
}

/// The host side of a kernel only computes the launch grid, with what the
/// JIT evaluates there (no compares or selects: min/max arithmetic instead).
static bool isHostSideOp(Operation *op) {
  if (isa<ParamOp, DimOp, LaunchOp, ReturnOp>(op))
    return true;
  if (!llvm::all_of(op->getResultTypes(),
                    [](Type type) { return type.isIntOrIndex(); }))
    return false;
  if (isa<arith::ConstantOp, arith::IndexCastOp, arith::IndexCastUIOp,
          arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp>(op))
    return true;
  return isa<arith::ArithDialect>(op->getDialect()) &&
         op->getNumOperands() == 2 &&
         llvm::is_contained(getGridBinaryOpNames(),
                            op->getName().stripDialect());
}

LogicalResult KernelOp::verifyRegions() {
  Block &entry = getBody().front();
  for (auto [argument, type] :
       llvm::zip_equal(entry.getArguments(), getArgumentTypes()))
    if (argument.getType() != type)
      return emitOpError("entry block argument types do not match the "
                         "signature");
  for (Type type : getArgumentTypes())
    if (failed(verifyTypeSymbols(*this, *this, type)))
      return failure();

  unsigned numLaunches = 0;
  for (Operation &op : entry) {
    if (isa<LaunchOp>(op))
      ++numLaunches;
    else if (!isHostSideOp(&op))
      return op.emitOpError(
                 "cannot appear on the host side of tile.kernel: only integer "
                 "constants, casts, tile.param, tile.dim and the arith ops ")
             << llvm::join(getGridBinaryOpNames(), ", ")
             << " may compute the launch grid (the JIT evaluates them on "
                "the host)";
  }
  if (numLaunches != 1)
    return emitOpError("expects exactly one tile.launch in its body, found ")
           << numLaunches;

  WalkResult walk = getBody().walk([&](Operation *op) {
    for (Type type : op->getResultTypes())
      if (failed(verifyTypeSymbols(*this, op, type)))
        return WalkResult::interrupt();
    // On-chip tiles are named only by the ops that make them and their
    // views and picks: the shared-memory plan and the lowering follow
    // those; a tile passed through scf.if / scf.for / arith.select would
    // be an alias neither sees (its bytes reused while it is read).
    if (!isa<AllocOp, ViewOp, PickOp>(op))
      for (Type type : op->getResultTypes())
        if (isa<SharedType, FragmentType, LocalType>(type)) {
          op->emitOpError("yields a ")
              << describe(type)
              << "; on-chip tiles are named by tile.alloc, tile.view and "
                 "tile.pick only (choose between tiles with tile.pick)";
          return WalkResult::interrupt();
        }
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument argument : block.getArguments())
          if (failed(verifyTypeSymbols(*this, op, argument.getType())))
            return WalkResult::interrupt();
    if (auto parallel = dyn_cast<ParallelOp>(op))
      if (failed(verifyShapeSymbols(*this, op, parallel.getDomain())))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

//===----------------------------------------------------------------------===//
// ParamOp, DimOp
//===----------------------------------------------------------------------===//

void ParamOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), getName());
}

LogicalResult ParamOp::verify() {
  auto kernel = (*this)->getParentOfType<KernelOp>();
  if (!kernel)
    return emitOpError("must be nested in a tile.kernel");
  if (!kernel.getParams().get(getName()))
    return emitOpError("'") << getName() << "' is not a parameter of kernel @"
                            << kernel.getSymName();
  return success();
}

LogicalResult DimOp::verify() {
  int64_t rank = getSource().getType().getRank();
  // (I64Attr reads back unsigned; a negative index is written as one.)
  auto index = static_cast<int64_t>(getIndex());
  if (index < 0 || index >= rank)
    return emitOpError("dimension ")
           << index << " is out of range for a tensor of rank " << rank;
  return success();
}

OpFoldResult DimOp::fold(FoldAdaptor) {
  TileShape shape = getSource().getType().getTileShape();
  auto index = static_cast<int64_t>(getIndex());
  if (index < 0 || index >= shape.getRank())
    return {};
  if (std::optional<int64_t> size = shape.getStaticSize(index))
    return IntegerAttr::get(IndexType::get(getContext()), *size);
  return {};
}

//===----------------------------------------------------------------------===//
// LaunchOp
//===----------------------------------------------------------------------===//

ParseResult LaunchOp::parse(OpAsmParser &parser, OperationState &result) {
  SmallVector<OpAsmParser::Argument> blockIndices;
  SmallVector<OpAsmParser::UnresolvedOperand> gridSizes;
  int64_t threads;
  Type indexType = parser.getBuilder().getIndexType();
  if (parser.parseArgumentList(blockIndices, OpAsmParser::Delimiter::Paren) ||
      parser.parseKeyword("in") ||
      parser.parseOperandList(gridSizes, OpAsmParser::Delimiter::Paren) ||
      parser.resolveOperands(gridSizes, indexType, result.operands) ||
      parser.parseKeyword("threads") || parser.parseInteger(threads))
    return failure();
  result.addAttribute(getThreadsAttrName(result.name),
                      parser.getBuilder().getI64IntegerAttr(threads));
  // `blocks_per_sm` and `cluster` each take an integer or a parameter's
  // name.
  auto parseCount = [&](StringRef keyword, StringAttr name) -> ParseResult {
    if (failed(parser.parseOptionalKeyword(keyword)))
      return success();
    std::string param;
    int64_t count;
    Attribute value;
    if (succeeded(parser.parseOptionalString(&param)))
      value = parser.getBuilder().getStringAttr(param);
    else if (parser.parseInteger(count))
      return failure();
    else
      value = parser.getBuilder().getI64IntegerAttr(count);
    result.addAttribute(name, value);
    return success();
  };
  if (parseCount("blocks_per_sm", getBlocksPerSmAttrName(result.name)) ||
      parseCount("cluster", getClusterBlocksAttrName(result.name)))
    return failure();
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  for (OpAsmParser::Argument &index : blockIndices)
    index.type = indexType;
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, blockIndices))
    return failure();
  ensureTerminator(*body, parser.getBuilder(), result.location);
  return success();
}

void LaunchOp::print(OpAsmPrinter &p) {
  p << " (";
  llvm::interleaveComma(getBlockIndices(), p,
                        [&](BlockArgument index) { p.printOperand(index); });
  p << ") in (" << getGridSizes() << ") threads " << getThreads();
  auto printCount = [&](StringRef keyword, Attribute count) {
    if (!count)
      return;
    p << " " << keyword << " ";
    if (auto name = dyn_cast<StringAttr>(count))
      p << name;
    else
      p << cast<IntegerAttr>(count).getInt();
  };
  printCount("blocks_per_sm", getBlocksPerSmAttr());
  printCount("cluster", getClusterBlocksAttr());
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(), {getThreadsAttrName(), getBlocksPerSmAttrName(),
                            getClusterBlocksAttrName()});
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/false);
}

void LaunchOp::getAsmBlockArgumentNames(Region &region,
                                        OpAsmSetValueNameFn setNameFn) {
  static constexpr const char *names[] = {"bx", "by", "bz"};
  for (auto [index, argument] : llvm::enumerate(region.getArguments()))
    if (index < 3)
      setNameFn(argument, names[index]);
}

PipelinedOp LaunchOp::getWarpSpecializedLoop() {
  for (auto loop : getBody().front().getOps<PipelinedOp>())
    if (loop.getWarpSpecialized())
      return loop;
  return {};
}

int64_t LaunchOp::getBlockThreads() {
  return getThreads() + (getWarpSpecializedLoop() ? kProducerThreads : 0);
}

LogicalResult LaunchOp::verify() {
  size_t rank = getGridSizes().size();
  if (rank < 1 || rank > 3)
    return emitOpError("expects 1 to 3 grid dimensions, got ") << rank;
  int64_t threads = getThreads();
  if (threads <= 0 || threads % 32 != 0 || threads > 1024)
    return emitOpError("thread count must be a multiple of 32 between 32 and "
                       "1024, got ")
           << threads;
  // blocks_per_sm and cluster may name a parameter of the kernel.
  auto kernel = (*this)->getParentOfType<KernelOp>();
  for (auto [keyword, count] :
       {std::pair<StringRef, Attribute>{"blocks_per_sm", getBlocksPerSmAttr()},
        {"cluster", getClusterBlocksAttr()}}) {
    auto name = dyn_cast_or_null<StringAttr>(count);
    if (name && kernel && !kernel.getParams().get(name))
      return emitOpError() << keyword << " names '" << name.getValue()
                           << "', which is not a parameter of kernel @"
                           << kernel.getSymName();
  }
  // 8 is the portable cluster size (larger ones need an opt-in per kernel).
  if (std::optional<int64_t> cluster = getBoundClusterBlocks())
    if (*cluster < 1 || *cluster > 8)
      return emitOpError("cluster must be 1 to 8 blocks, got ") << *cluster;
  if (std::optional<int64_t> blocks = getBoundBlocksPerSm())
    if (*blocks < 1 || *blocks > 2048 / threads)
      return emitOpError("blocks_per_sm must be at least 1 with at most 2048 "
                         "threads per SM, got ")
             << *blocks << " blocks of " << threads << " threads";
  return success();
}

LogicalResult LaunchOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getGridSizes().size())
    return emitOpError("has ")
           << getGridSizes().size() << " grid dimensions but "
           << body.getNumArguments() << " block indices";
  if (!llvm::all_of(body.getArgumentTypes(),
                    [](Type type) { return type.isIndex(); }))
    return emitOpError("block indices must have index type");

  // Every fragment and local tile of the launch at once, per thread: what
  // does not fit in registers spills to the thread's local memory.
  int64_t threads = getThreads(), perThread = 0;
  bool overflow = false;
  getBody().walk([&](AllocOp alloc) {
    Type type = alloc.getResult().getType();
    // Each tile fits on its own (AllocOp::verify).
    auto tile = getTileShapeAndElementType(type);
    std::optional<int64_t> elements =
        tile ? getStaticElementCount(tile->first.getDims()) : std::nullopt;
    if (!elements || !isa<FragmentType, LocalType>(type))
      return;
    int64_t bytes = getElementBytes(tile->second);
    if (isa<FragmentType>(type)) {
      // A warpgroup's copy is spread over its 128 threads.
      int64_t over =
          getFragmentScopeThreads(alloc.getResult(), threads).value_or(threads);
      elements = (*elements + over - 1) / over;
      bytes = std::max<int64_t>(4, bytes);
    }
    std::optional<int64_t> total = checkedMul(*elements, bytes);
    std::optional<int64_t> sum =
        total ? checkedAdd(perThread, *total) : std::nullopt;
    if (!sum)
      overflow = true;
    else
      perThread = *sum;
  });
  if (overflow || perThread > kMaxLocalBytesPerThread)
    return emitOpError("fragments and local tiles need ")
           << (overflow ? std::string("more than 2^63")
                        : std::to_string(perThread))
           << " bytes per thread (" << threads << " threads); the limit is "
           << kMaxLocalBytesPerThread
           << " (the local memory a thread may address)";
  return verifyWarpCollectivesConverge(*this);
}

//===----------------------------------------------------------------------===//
// AllocOp, ViewOp
//===----------------------------------------------------------------------===//

static Attribute evaluateByFolding(Value value, Operation *scope,
                                   function_ref<Attribute(Value)> known,
                                   int depth, int maxDepth) {
  if (Attribute given = known(value))
    return given;
  Attribute constant;
  if (matchPattern(value, m_Constant(&constant)))
    return constant;
  Operation *def = value.getDefiningOp();
  if (!def || depth > maxDepth || def->getNumRegions() != 0 ||
      !scope->isAncestor(def) || !isMemoryEffectFree(def))
    return Attribute();
  SmallVector<Attribute> operands;
  for (Value operand : def->getOperands())
    operands.push_back(
        evaluateByFolding(operand, scope, known, depth + 1, maxDepth));
  SmallVector<OpFoldResult> results;
  if (failed(def->fold(operands, results)) || results.size() != 1)
    return Attribute();
  if (auto attr = dyn_cast<Attribute>(results.front()))
    return attr;
  return evaluateByFolding(cast<Value>(results.front()), scope, known,
                           depth + 1, maxDepth);
}

Attribute hisa::tile::evaluateByFolding(Value value, Operation *scope,
                                        function_ref<Attribute(Value)> known,
                                        int maxDepth) {
  return ::evaluateByFolding(value, scope, known, /*depth=*/0, maxDepth);
}

AllocOp hisa::tile::getRootAlloc(Value tile) {
  if (auto pick = tile.getDefiningOp<PickOp>())
    return pick.getTiles().front().getDefiningOp<AllocOp>();
  return tile.getDefiningOp<AllocOp>();
}

SmallVector<AllocOp> hisa::tile::getPossibleAllocs(Value tile) {
  SmallVector<AllocOp> allocs;
  if (auto pick = tile.getDefiningOp<PickOp>()) {
    for (Value candidate : pick.getTiles())
      if (auto alloc = candidate.getDefiningOp<AllocOp>())
        allocs.push_back(alloc);
  } else if (auto alloc = tile.getDefiningOp<AllocOp>()) {
    allocs.push_back(alloc);
  }
  return allocs;
}

ParseResult PickOp::parse(OpAsmParser &parser, OperationState &result) {
  OpAsmParser::UnresolvedOperand index;
  SmallVector<OpAsmParser::UnresolvedOperand> tiles;
  Type type;
  if (parser.parseOperand(index) ||
      parser.parseOperandList(tiles, OpAsmParser::Delimiter::Square) ||
      parser.parseOptionalAttrDict(result.attributes) ||
      parser.parseColonType(type))
    return failure();
  Builder &builder = parser.getBuilder();
  if (parser.resolveOperand(index, builder.getIndexType(), result.operands) ||
      parser.resolveOperands(tiles, type, result.operands))
    return failure();
  result.addTypes(type);
  return success();
}

void PickOp::print(OpAsmPrinter &p) {
  p << ' ' << getIndex() << " [" << getTiles() << ']';
  p.printOptionalAttrDict((*this)->getAttrs());
  p << " : " << getResult().getType();
}

LogicalResult BarrierOp::verify() {
  if ((*this)->getParentOfType<ParallelOp>())
    return emitOpError("cannot be in a tile.parallel body (every thread of "
                       "the block meets at it once)");
  if (getArriveOnly() && !getId())
    return emitOpError("arrive_only needs a named barrier (id = N): every "
                       "thread waits at the block's barrier");
  if (std::optional<int64_t> id = getId()) {
    if (*id < 0 || *id >= kNamedBarriers)
      return emitOpError("id must be in [0, ")
             << kNamedBarriers << "), got " << *id;
    if (!(*this)->getParentOfType<PerWarpgroupOp>())
      return emitOpError("with an id must be in a tile.per_warpgroup body "
                         "(warpgroups signal and wait for each other)");
    // The warpgroups' own barriers take ids 3 .. 3 + W - 1.
    if (auto launch = (*this)->getParentOfType<LaunchOp>();
        launch &&
        kWarpgroupBarrierBase + launch.getThreads() / 128 > kNamedBarrierBase)
      return emitOpError("with an id needs at most ")
             << (kNamedBarrierBase - kWarpgroupBarrierBase) * 128
             << " threads in the launch (named barriers 10 + id lie above "
                "the warpgroups' own), got "
             << launch.getThreads();
  }
  return verifyInsideLaunch(*this);
}

PipelinedOp hisa::tile::getReleasingLoop(ReleaseOp op) {
  Operation *parent = op->getParentOp();
  while (parent && isa<PerWarpgroupOp, scf::IfOp>(parent))
    parent = parent->getParentOp();
  auto loop = dyn_cast_or_null<PipelinedOp>(parent);
  return loop && loop.getWarpSpecialized() ? loop : PipelinedOp();
}

bool hisa::tile::releasesCopies(PipelinedOp loop) {
  bool found = false;
  loop.getBody().walk(
      [&](ReleaseOp release) { found |= getReleasingLoop(release) == loop; });
  return found;
}

bool hisa::tile::stagesCopies(PipelinedOp loop) {
  return loop.getNumStages() > 1 || releasesCopies(loop);
}

int64_t hisa::tile::getCopyStages(CopyOp copy, PipelinedOp loop) {
  if (auto own = copy->getAttrOfType<IntegerAttr>(kCopyStagesAttrName))
    return own.getInt();
  return loop.getNumStages();
}

LogicalResult ReleaseOp::verify() {
  PipelinedOp loop = getReleasingLoop(*this);
  if (!loop)
    return emitOpError("must be in the body of a warp_specialized "
                       "tile.pipelined (directly, or in tile.per_warpgroup "
                       "or scf.if there): it hands a stage buffer back to "
                       "the producer");
  SmallVector<Value> candidates;
  if (auto pick = getTile().getDefiningOp<PickOp>())
    llvm::append_range(candidates, pick.getTiles());
  else
    candidates.push_back(getTile());
  for (Value candidate : candidates) {
    bool filled =
        llvm::any_of(loop.getBody().front().getOps<CopyOp>(), [&](CopyOp copy) {
          return copy.getDest() == candidate &&
                 isa<GlobalType>(copy.getSource().getType());
        });
    if (!filled)
      return emitOpError("releases a tile that no copy of the loop fills "
                         "(only the producer's stage buffers, or a "
                         "tile.pick among them, can be released)");
  }
  return success();
}

LogicalResult PickOp::verify() {
  if (getTiles().size() < 2)
    return emitOpError("needs at least two tiles to choose from, got ")
           << getTiles().size();
  for (auto [i, tile] : llvm::enumerate(getTiles())) {
    if (tile.getType() != getResult().getType())
      return emitOpError("tile ")
             << i << " has type " << tile.getType()
             << " but the result has type " << getResult().getType();
    if (!tile.getDefiningOp<AllocOp>())
      return emitOpError("tile ")
             << i << " must be a tile.alloc result (its layout and place "
             << "in shared memory are the pick's)";
  }
  return verifyInsideLaunch(*this);
}

bool hisa::tile::isInPerWarpgroup(Operation *op) {
  return op->getParentOfType<PerWarpgroupOp>() != nullptr;
}

std::optional<int64_t> hisa::tile::getFragmentScopeThreads(Value fragment,
                                                           int64_t threads) {
  bool inside = false, outside = false;
  if (Operation *definition = fragment.getDefiningOp())
    (isInPerWarpgroup(definition) ? inside : outside) |=
        !isa<AllocOp>(definition);
  // Uses through views count as the fragment's own.
  SmallVector<Value> worklist{fragment};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (Operation *user : value.getUsers()) {
      (isInPerWarpgroup(user) ? inside : outside) |= !isa<ViewOp>(user);
      if (auto view = dyn_cast<ViewOp>(user))
        worklist.push_back(view.getResult());
    }
  }
  if (inside && outside)
    return std::nullopt;
  return inside ? kWarpgroupThreads : threads;
}

LogicalResult AllocOp::verify() {
  // Types built by passes (e.g. tile-bind-params) skip the type verifier.
  if (failed(verifyTileFootprint([&] { return emitOpError(); },
                                 getResult().getType())))
    return failure();
  auto fragment = dyn_cast<FragmentType>(getResult().getType());
  if (!fragment)
    return success();
  int64_t launchThreads = (*this)->getParentOfType<LaunchOp>().getThreads();
  std::optional<int64_t> threads =
      getFragmentScopeThreads(getResult(), launchThreads);
  if (!threads)
    return emitOpError("is used both inside and outside tile.per_warpgroup "
                       "(inside, each warpgroup has its own copy): fill, "
                       "use and store it in the bodies");
  if (!fragment.getLayout())
    return success();
  if (fragment.getLayout().getThreads() != *threads)
    return emitOpError("fragment layout is for ")
           << fragment.getLayout().getThreads() << " threads but the "
           << (*threads == launchThreads ? "launch" : "warpgroup") << " has "
           << *threads;
  return success();
}

Value ViewOp::getViewSource() { return getSource(); }

LogicalResult ViewOp::verify() {
  Type sourceType = getSource().getType(), resultType = getResult().getType();
  if (sourceType.getTypeID() != resultType.getTypeID())
    return emitOpError("cannot view a ")
           << getTileMemoryKindName(sourceType) << " tile as a "
           << getTileMemoryKindName(resultType) << " tile";
  if (elementTypeOf(sourceType) != elementTypeOf(resultType))
    return emitOpError("element type changes from ")
           << elementTypeOf(sourceType) << " to " << elementTypeOf(resultType)
           << "; use tile.cast to convert elements";
  Attribute sourceCount = shapeOf(sourceType).getNumElements(getContext());
  Attribute resultCount = shapeOf(resultType).getNumElements(getContext());
  // A null count overflowed int64: never equal to a real one.
  if (!sourceCount || !resultCount || sourceCount != resultCount)
    return emitOpError("views ")
           << formatDims(shapeOf(sourceType).getDims()) << " ("
           << formatDim(sourceCount) << " elements) as "
           << formatDims(shapeOf(resultType).getDims()) << " ("
           << formatDim(resultCount) << " elements)";
  return verifyInsideLaunch(*this);
}

//===----------------------------------------------------------------------===//
// CopyOp
//===----------------------------------------------------------------------===//

LogicalResult CopyOp::verifyGather(Value rows) {
  Type sourceType = getSource().getType(), destType = getDest().getType();
  if (!getDestOffsets().empty())
    return emitOpError("a gather (rows) takes no destination offsets");
  // Optional source offsets [0, column]: a column window of each row.
  std::optional<int64_t> column = 0;
  if (!getSourceOffsets().empty()) {
    if (getSourceOffsets().size() != 2 ||
        !matchPattern(getSourceOffsets()[0], m_Zero()))
      return emitOpError("a gather (rows) takes source offsets [0, column] "
                         "only (the rows come from the row numbers)");
    column = getConstantIntValue(getSourceOffsets()[1]);
  }
  TileShape source = shapeOf(sourceType), dest = shapeOf(destType);
  if (!isa<GlobalType>(sourceType) || source.getRank() != 2)
    return emitOpError("gathers rows of a 2-D global tensor, not a ")
           << describe(sourceType);
  if (!isa<SharedType>(destType) || dest.getRank() != 2)
    return emitOpError("gathers rows into a 2-D shared tile, not a ")
           << describe(destType);
  Type rowsType = rows.getType();
  if (!isa<SharedType, LocalType>(rowsType) ||
      shapeOf(rowsType).getRank() != 1 ||
      !elementTypeOf(rowsType).isSignlessInteger(32))
    return emitOpError("row numbers must be a 1-D shared or local tile of "
                       "i32, not a ")
           << describe(rowsType) << " of " << elementTypeOf(rowsType);
  if (!getRowOffset())
    return emitOpError("a gather needs the position of its first row number "
                       "(rows(%index[%first] : ...))");
  std::optional<int64_t> width = source.getStaticSize(1);
  std::optional<int64_t> destWidth = dest.getStaticSize(1);
  if (getSourceOffsets().empty()) {
    if (!width || source.getDims()[1] != dest.getDims()[1])
      return emitOpError("gathers rows of ")
             << formatDims(source.getDims()) << " into a " << describe(destType)
             << "; the rows must have the destination's static width";
  } else if (!width || !column || !destWidth || *column < 0 ||
             *destWidth > *width || *column > *width - *destWidth) {
    return emitOpError("gathers a column window of rows of ")
           << formatDims(source.getDims()) << " into a " << describe(destType)
           << "; the source needs a static width and the window a constant "
              "column that keeps it inside the row";
  }
  return verifyInsideLaunch(*this);
}

LogicalResult CopyOp::verify() {
  if (failed(verifyBlockOpOutsideParallel(*this, {getSource(), getDest()})))
    return failure();
  // (The enclosing loop checks the count: PipelinedOp::verify.)
  if ((*this)->hasAttr(kCopyStagesAttrName) &&
      !isa<PipelinedOp>((*this)->getParentOp()))
    return emitOpError(kCopyStagesAttrName)
           << " is for the staged copies at the top of a tile.pipelined "
              "body";
  Type sourceType = getSource().getType(), destType = getDest().getType();
  bool sourceGlobal = isa<GlobalType>(sourceType);
  bool destGlobal = isa<GlobalType>(destType);
  if (sourceGlobal && destGlobal)
    return emitOpError("cannot copy from global memory to global memory; "
                       "stage the data through a shared or fragment tile");
  if (elementTypeOf(sourceType) != elementTypeOf(destType))
    return emitOpError("element types differ (")
           << elementTypeOf(sourceType) << " to " << elementTypeOf(destType)
           << "); convert with tile.cast";
  bool sourceWindow = !getSourceOffsets().empty();
  bool destWindow = !getDestOffsets().empty();
  if (sourceWindow && destWindow)
    return emitOpError("only one side of a copy may take a window offset");
  if (Value rows = getRowIndices())
    return verifyGather(rows);
  if (getRowOffset())
    return emitOpError("has a row position but no row numbers");

  // The window side is the one with offsets, else a global side at offset 0.
  bool windowIsSource = sourceWindow || (!destWindow && sourceGlobal);
  bool windowIsDest = destWindow || (!sourceWindow && destGlobal);
  if (!windowIsSource && !windowIsDest) {
    if (shapeOf(sourceType).getDims() != shapeOf(destType).getDims())
      return emitOpError("copies a ")
             << describe(sourceType) << " to a " << describe(destType)
             << " of another shape";
    return verifyInsideLaunch(*this);
  }

  Type windowType = windowIsSource ? sourceType : destType;
  Type tileType = windowIsSource ? destType : sourceType;
  StringRef windowName = windowIsSource ? "source" : "destination";
  // A fragment's elements are spread over the threads by its layout; a
  // window into one has no thread-local meaning.
  if (isa<FragmentType>(windowType))
    return emitOpError("takes a window of the ")
           << windowName
           << " fragment; windows into fragments are not supported (copy the "
              "whole fragment, or go through shared memory)";
  TileShape window = shapeOf(windowType), tile = shapeOf(tileType);
  OperandRange offsets = windowIsSource ? getSourceOffsets() : getDestOffsets();
  if (!offsets.empty() &&
      static_cast<int64_t>(offsets.size()) != window.getRank())
    return emitOpError("expects ")
           << window.getRank() << " offsets for the " << windowName
           << " window (one per dimension), got " << offsets.size();
  if (window.getRank() < tile.getRank())
    return emitOpError("the ") << windowName << " has rank " << window.getRank()
                               << ", less than the rank " << tile.getRank()
                               << " of the " << describe(tileType);
  // A window into an on-chip tile must fit in it (global windows may run past
  // the end: those elements read 0 or are dropped), also at a constant
  // offset (past the end it would address the next tile's bytes).
  if (!isa<GlobalType>(windowType)) {
    int64_t lead = window.getRank() - tile.getRank();
    for (int64_t i = 0; i < tile.getRank(); ++i) {
      std::optional<int64_t> windowSize = window.getStaticSize(lead + i);
      std::optional<int64_t> tileSize = tile.getStaticSize(i);
      if (windowSize && tileSize && *tileSize > *windowSize)
        return emitOpError("a ")
               << describe(tileType) << " does not fit in the " << windowName
               << " " << describe(windowType);
      APInt offset;
      if (windowSize && tileSize && !offsets.empty() &&
          !isUnderControlFlow(*this) &&
          matchPattern(offsets[lead + i], m_ConstantInt(&offset)) &&
          (offset.isNegative() ||
           offset.getSExtValue() + *tileSize > *windowSize))
        return emitOpError("a ")
               << describe(tileType) << " at offset " << offset.getSExtValue()
               << " in dimension " << lead + i << " runs past the "
               << windowName << " " << describe(windowType);
    }
    for (int64_t i = 0;
         i < lead && !offsets.empty() && !isUnderControlFlow(*this); ++i) {
      APInt offset;
      std::optional<int64_t> windowSize = window.getStaticSize(i);
      if (windowSize && matchPattern(offsets[i], m_ConstantInt(&offset)) &&
          (offset.isNegative() || offset.getSExtValue() >= *windowSize))
        return emitOpError("offset ")
               << offset.getSExtValue() << " is out of range for dimension "
               << i << " of the " << windowName << " " << describe(windowType);
    }
  }
  return verifyInsideLaunch(*this);
}

//===----------------------------------------------------------------------===//
// FillOp, ClearOp, CastOp
//===----------------------------------------------------------------------===//

LogicalResult FillOp::verify() {
  if (failed(verifyBlockOpOutsideParallel(*this, getDest())))
    return failure();
  Type elementType = elementTypeOf(getDest().getType());
  if (getValue().getType() != elementType)
    return emitOpError("fill value has type ")
           << getValue().getType() << " but the tile holds " << elementType;
  return verifyInsideLaunch(*this);
}

LogicalResult ClearOp::verify() {
  if (failed(verifyBlockOpOutsideParallel(*this, getDest())))
    return failure();
  return verifyInsideLaunch(*this);
}

LogicalResult CastOp::verify() {
  if (failed(verifyBlockOpOutsideParallel(*this, {getSource(), getDest()})))
    return failure();
  Type sourceType = getSource().getType(), destType = getDest().getType();
  if (shapeOf(sourceType).getDims() != shapeOf(destType).getDims())
    return emitOpError("casts a ") << describe(sourceType) << " to a "
                                   << describe(destType) << " of another shape";
  Type from = elementTypeOf(sourceType), to = elementTypeOf(destType);
  if (from == to)
    return emitOpError("source and destination both hold ")
           << from << "; use tile.copy";
  if (!isa<IntegerType, FloatType>(from) || !isa<IntegerType, FloatType>(to))
    return emitOpError("converts only between integer and float elements, "
                       "got ")
           << from << " to " << to;
  return verifyInsideLaunch(*this);
}

//===----------------------------------------------------------------------===//
// GemmOp
//===----------------------------------------------------------------------===//

static bool isSupportedGemmTypes(Type a, Type b, Type c) {
  if (a != b)
    return false;
  if (isa<Float8E4M3FNType>(a) || a.isBF16())
    return c.isF32();
  if (a.isF16())
    return c.isF32() || c.isF16();
  return false;
}

/// Whether `op` (or an op nested in it) uses `value` as an operand.
static bool usesValue(Operation *op, Value value) {
  return llvm::any_of(value.getUsers(),
                      [&](Operation *user) { return op->isAncestor(user); });
}

/// Whether `op` (or an op nested in it) writes fragment `tile`.
static bool writesTile(Operation *op, Value tile) {
  return op
      ->walk([&](Operation *nested) {
        Value written = getWrittenTile(nested);
        if (auto gemm = dyn_cast<GemmOp>(nested))
          written = gemm.getC();
        return written == tile ? WalkResult::interrupt()
                               : WalkResult::advance();
      })
      .wasInterrupted();
}

/// An asynchronous gemm is waited for later in its own block, or after
/// the scf.if (at any depth) that holds it: walking on from it, the first
/// tile.wait_gemms that leaves at most as many gemms pending as
/// asynchronous gemms were issued since (or a synchronous gemm, which waits
/// for every group) covers it. Until then nothing may use C, except a
/// later gemm accumulating into it (wgmma runs a warpgroup's gemms on one
/// accumulator in order), nor write a register A, whose registers the
/// wgmma still reads.
static LogicalResult verifyAsyncGemm(GemmOp gemm) {
  Value accumulator = gemm.getC();
  Value registerA =
      isa<FragmentType>(gemm.getA().getType()) ? gemm.getA() : Value();
  int64_t newer = 0;
  // The next op on the gemm's path: the rest of its block, then what
  // follows each enclosing scf.if.
  auto next = [](Operation *op) -> Operation * {
    while (!op->getNextNode()) {
      op = op->getParentOp();
      if (!isa_and_nonnull<scf::IfOp>(op))
        return nullptr;
    }
    return op->getNextNode();
  };
  for (Operation *op = next(gemm); op; op = next(op)) {
    if (isa<scf::YieldOp>(op))
      continue;
    if (auto wait = dyn_cast<WaitGemmsOp>(op);
        wait && newer >= static_cast<int64_t>(wait.getPending()))
      return success();
    auto later = dyn_cast<GemmOp>(op);
    bool accumulates = later && later.getC() == accumulator &&
                       later.getA() != accumulator &&
                       later.getB() != accumulator;
    if (!accumulates && usesValue(op, accumulator))
      return op->emitOpError("uses the accumulator of an asynchronous "
                             "tile.gemm before a tile.wait_gemms waits for it");
    if (registerA && writesTile(op, registerA))
      return op->emitOpError("writes the register A operand of an "
                             "asynchronous tile.gemm before a tile.wait_gemms "
                             "waits for it");
    if (later) {
      if (!later.getAsync())
        return success();
      ++newer;
      continue;
    }
    bool nestedGemmOrWait =
        op->getNumRegions() > 0 && op->walk([](Operation *nested) {
                                       return isa<GemmOp, WaitGemmsOp>(nested)
                                                  ? WalkResult::interrupt()
                                                  : WalkResult::advance();
                                     }).wasInterrupted();
    if (nestedGemmOrWait)
      return op->emitOpError("holds a tile.gemm or tile.wait_gemms while an "
                             "asynchronous tile.gemm before it is pending; "
                             "wait for it in its own block first");
  }
  return gemm.emitOpError("is asynchronous but no tile.wait_gemms after it in "
                          "its block (or after the scf.if holding it) waits "
                          "for it");
}

LogicalResult GemmOp::verify() {
  // wgmma and mma.sync are warp(group)-wide, and the lowering meets the
  // whole block at a barrier before them; a parallel body runs per element.
  if ((*this)->getParentOfType<ParallelOp>())
    return emitOpError("cannot be in a tile.parallel body (the whole block "
                       "runs a gemm together)");
  Type aType = getA().getType(), bType = getB().getType(),
       cType = getC().getType();
  TileShape a = shapeOf(aType), b = shapeOf(bType), c = shapeOf(cType);
  for (auto [name, shape] :
       {std::make_pair("A", a), std::make_pair("B", b), std::make_pair("C", c)})
    if (shape.getRank() != 2)
      return emitOpError("operand ")
             << name << " must be a rank-2 tile, got rank " << shape.getRank();

  Type aElement = elementTypeOf(aType), bElement = elementTypeOf(bType),
       cElement = elementTypeOf(cType);
  if (!isSupportedGemmTypes(aElement, bElement, cElement))
    return emitOpError("unsupported element types ")
           << aElement << " x " << bElement << " -> " << cElement
           << "; supported: f8E4M3FN x f8E4M3FN -> f32, bf16 x bf16 -> f32, "
              "f16 x f16 -> f32 or f16";
  if (isa<Float8E4M3FNType>(aElement) && (getTransposeA() || !getTransposeB()))
    return emitOpError("fp8 (f8E4M3FN) gemm needs K-major operands: A as "
                       "[M, K] without transpose_a and B as [N, K] with "
                       "transpose_b");

  Attribute m = a.getDim(getTransposeA() ? 1 : 0);
  Attribute kOfA = a.getDim(getTransposeA() ? 0 : 1);
  Attribute kOfB = b.getDim(getTransposeB() ? 1 : 0);
  Attribute n = b.getDim(getTransposeB() ? 0 : 1);
  if (kOfA != kOfB)
    return emitOpError("reduction size K of A (")
           << formatDim(kOfA) << ") differs from K of B (" << formatDim(kOfB)
           << ")";
  if (c.getDim(0) != m || c.getDim(1) != n)
    return emitOpError("C has shape ")
           << formatDims(c.getDims()) << " but A and B give [" << formatDim(m)
           << ", " << formatDim(n) << "]";
  if (getAsync() && failed(verifyAsyncGemm(*this)))
    return failure();
  return verifyInsideLaunch(*this);
}

LogicalResult WaitGemmsOp::verify() {
  auto pending = static_cast<int64_t>(getPending());
  if (pending < 0 || pending > kMaxPendingGemms)
    return emitOpError("pending must be between 0 and ")
           << kMaxPendingGemms << ", got " << pending;
  if ((*this)->getParentOfType<ParallelOp>())
    return emitOpError("cannot be in a tile.parallel body (a warpgroup waits "
                       "for its gemms together)");
  return verifyInsideLaunch(*this);
}

//===----------------------------------------------------------------------===//
// ReduceOp
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::verify() {
  if (failed(verifyBlockOpOutsideParallel(*this, {getSource(), getDest()})))
    return failure();
  Type sourceType = getSource().getType(), destType = getDest().getType();
  TileShape source = shapeOf(sourceType), dest = shapeOf(destType);
  int64_t dim = getDim();
  if (dim < 0 || dim >= source.getRank())
    return emitOpError("dimension ")
           << dim << " is out of range for a source of rank "
           << source.getRank();
  Type elementType = elementTypeOf(sourceType);
  if (elementTypeOf(destType) != elementType)
    return emitOpError("destination holds ")
           << elementTypeOf(destType) << " but the source holds "
           << elementType;
  if (!isa<IntegerType, FloatType>(elementType))
    return emitOpError("reduces only integer or float elements, got ")
           << elementType;
  int64_t chains = getChains();
  if (chains < 1 || chains > kMaxReduceChains || !llvm::isPowerOf2_64(chains))
    return emitOpError("chains must be a power of two from 1 to ")
           << kMaxReduceChains << ", got " << chains;

  SmallVector<Attribute> expected;
  for (int64_t i = 0; i < source.getRank(); ++i)
    if (i != dim)
      expected.push_back(source.getDim(i));
  if (expected.empty())
    expected.push_back(Builder(getContext()).getI64IntegerAttr(1));
  ArrayAttr expectedDims = ArrayAttr::get(getContext(), expected);
  if (dest.getDims() != expectedDims)
    return emitOpError("destination must have shape ")
           << formatDims(expectedDims) << " (the source "
           << formatDims(source.getDims()) << " without dimension " << dim
           << "), got " << formatDims(dest.getDims());
  return verifyInsideLaunch(*this);
}

//===----------------------------------------------------------------------===//
// ParallelOp
//===----------------------------------------------------------------------===//

ParseResult ParallelOp::parse(OpAsmParser &parser, OperationState &result) {
  SmallVector<OpAsmParser::Argument> indices;
  ArrayAttr extents;
  if (parser.parseArgumentList(indices, OpAsmParser::Delimiter::Paren) ||
      parser.parseKeyword("in") || parseTileDims(parser, extents))
    return failure();
  result.addAttribute(getExtentsAttrName(result.name), extents);
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  for (OpAsmParser::Argument &index : indices)
    index.type = parser.getBuilder().getIndexType();
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, indices))
    return failure();
  ensureTerminator(*body, parser.getBuilder(), result.location);
  return success();
}

void ParallelOp::print(OpAsmPrinter &p) {
  p << " (";
  llvm::interleaveComma(getInductionVars(), p,
                        [&](BlockArgument index) { p.printOperand(index); });
  p << ") in ";
  printTileDims(p, getExtents());
  p.printOptionalAttrDictWithKeyword((*this)->getAttrs(),
                                     {getExtentsAttrName()});
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/false);
}

LogicalResult ParallelOp::verify() {
  TileShape domain = getDomain();
  if (domain.getRank() == 0)
    return emitOpError("needs at least one dimension");
  for (int64_t i = 0; i < domain.getRank(); ++i) {
    Attribute extent = domain.getDim(i);
    if (domain.isRuntime(i) ||
        !(isa<StringAttr>(extent) ||
          (isa<IntegerAttr>(extent) && cast<IntegerAttr>(extent).getInt() > 0)))
      return emitOpError("extents must be positive integers or parameter "
                         "expressions known at compile time, got ")
             << formatDims(getExtents());
  }
  if ((*this)->getParentOfType<ParallelOp>())
    return emitOpError("cannot be nested in another tile.parallel; use one "
                       "multi-dimensional tile.parallel");
  // The body is unrolled over each thread's share of the domain.
  if (domain.isFullyStatic()) {
    std::optional<int64_t> elements = getStaticElementCount(getExtents());
    if (!elements || *elements > kMaxParallelElements)
      return emitOpError("domain ")
             << formatDims(getExtents()) << " has "
             << (elements ? std::to_string(*elements) : "more than 2^63")
             << " elements; the limit is " << kMaxParallelElements
             << " (the elements of the largest shared tile or fragment)";
  }
  return verifyInsideLaunch(*this);
}

LogicalResult ParallelOp::verifyRegions() {
  Block &body = getBody().front();
  if (static_cast<int64_t>(body.getNumArguments()) != getDomain().getRank())
    return emitOpError("has ")
           << getDomain().getRank() << " extents but " << body.getNumArguments()
           << " induction variables";
  return success();
}

//===----------------------------------------------------------------------===//
// PipelinedOp
//===----------------------------------------------------------------------===//

ParseResult PipelinedOp::parse(OpAsmParser &parser, OperationState &result) {
  OpAsmParser::Argument inductionVar;
  OpAsmParser::UnresolvedOperand lowerBound, upperBound, step;
  int64_t numStages;
  Type indexType = parser.getBuilder().getIndexType();
  if (parser.parseArgument(inductionVar) || parser.parseEqual() ||
      parser.parseOperand(lowerBound) || parser.parseKeyword("to") ||
      parser.parseOperand(upperBound) || parser.parseKeyword("step") ||
      parser.parseOperand(step) || parser.parseKeyword("num_stages") ||
      parser.parseEqual() || parser.parseInteger(numStages))
    return failure();
  if (succeeded(parser.parseOptionalKeyword("warp_specialized")))
    result.addAttribute(getWarpSpecializedAttrName(result.name),
                        parser.getBuilder().getUnitAttr());
  if (succeeded(parser.parseOptionalKeyword("overlap_gemm")))
    result.addAttribute(getOverlapGemmAttrName(result.name),
                        parser.getBuilder().getUnitAttr());
  if (succeeded(parser.parseOptionalKeyword("recompute_after")))
    result.addAttribute(getRecomputeAfterAttrName(result.name),
                        parser.getBuilder().getUnitAttr());
  if (parser.resolveOperand(lowerBound, indexType, result.operands) ||
      parser.resolveOperand(upperBound, indexType, result.operands) ||
      parser.resolveOperand(step, indexType, result.operands))
    return failure();
  result.addAttribute(getNumStagesAttrName(result.name),
                      parser.getBuilder().getI64IntegerAttr(numStages));
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  inductionVar.type = indexType;
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, {inductionVar}))
    return failure();
  ensureTerminator(*body, parser.getBuilder(), result.location);
  return success();
}

void PipelinedOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printOperand(getInductionVar());
  p << " = " << getLowerBound() << " to " << getUpperBound() << " step "
    << getStep() << " num_stages = " << getNumStages();
  if (getWarpSpecialized())
    p << " warp_specialized";
  if (getOverlapGemm())
    p << " overlap_gemm";
  if (getRecomputeAfter())
    p << " recompute_after";
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(),
      {getNumStagesAttrName(), getWarpSpecializedAttrName(),
       getOverlapGemmAttrName(), getRecomputeAfterAttrName()});
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/false);
}

Value hisa::tile::getWrittenTile(Operation *op) {
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([](StoreOp store) { return store.getDest(); })
      .Case([](AtomicOp atomic) { return atomic.getDest(); })
      .Case([](CopyOp copy) { return copy.getDest(); })
      .Case([](FillOp fill) { return fill.getDest(); })
      .Case([](ClearOp clear) { return clear.getDest(); })
      .Case([](CastOp cast) { return cast.getDest(); })
      .Case([](ReduceOp reduce) { return reduce.getDest(); })
      .Case([](ScanOp scan) { return scan.getDest(); })
      .Default([](Operation *) { return Value(); });
}

Value hisa::tile::getViewedTile(Value value) {
  while (auto view = value.getDefiningOp<ViewOp>())
    value = view.getSource();
  return value;
}

/// overlap_gemm's conditions: a warp-specialized loop of at least three
/// stages whose body's first gemm (the one issued ahead) clears a fragment
/// and is preceded only by the staged copies and side-effect-free ops or
/// loads (the lowering issues that part again for the next iteration);
/// later gemms of the body run in the rest of the iteration, synchronously.
static LogicalResult verifyOverlappedGemm(PipelinedOp op) {
  if (!op.getWarpSpecialized() || op.getNumStages() < 3)
    return op.emitOpError("overlap_gemm needs warp_specialized and "
                          "num_stages >= 3 (an iteration holds its own stage "
                          "and the next one's), got num_stages = ")
           << op.getNumStages();
  Block &body = op.getBody().front();
  auto gemms = body.getOps<GemmOp>();
  if (gemms.empty())
    return op.emitOpError("overlap_gemm needs a tile.gemm directly in the "
                          "body (the first one is issued ahead)");
  GemmOp gemm = *gemms.begin();
  if (gemm.getAsync())
    return gemm.emitOpError("in an overlap_gemm loop cannot be async (the "
                            "loop issues it ahead and waits for it itself)");
  for (GemmOp later : llvm::drop_begin(gemms))
    // Its wait is the one that retires the gemm issued ahead (wgmma groups
    // complete in order), which the iteration's end relies on.
    if (later.getAsync())
      return later.emitOpError("after the first gemm of an overlap_gemm loop "
                               "cannot be async (the rest of the iteration "
                               "waits for it, and so for the gemm issued "
                               "ahead)");
  // (Gemms nested in the rest of the body too.)
  WalkResult sameAccumulator = body.walk([&](GemmOp later) {
    if (later != gemm &&
        getViewedTile(later.getC()) == getViewedTile(gemm.getC())) {
      later.emitOpError("writes the accumulator of the gemm an overlap_gemm "
                        "loop issues ahead (the next iteration's gemm is then "
                        "writing it)");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (sameAccumulator.wasInterrupted())
    return failure();
  if (!gemm.getClearAccum() || !isa<FragmentType>(gemm.getC().getType()))
    return gemm.emitOpError("in an overlap_gemm loop must clear a fragment "
                            "accumulator (clear_accum): the next iteration's "
                            "gemm starts before this one's result is used");
  for (Operation &inner : body) {
    if (&inner == gemm.getOperation())
      break;
    if (auto copy = dyn_cast<CopyOp>(inner);
        copy && isa<GlobalType>(copy.getSource().getType()) &&
        isa<SharedType>(copy.getDest().getType()))
      continue;
    // tile.all_of only reads its tile, like a load.
    if (isa<LoadOp, AllOfOp, DimOp, ParamOp>(inner) ||
        isMemoryEffectFree(&inner))
      continue;
    return inner.emitOpError("cannot come before the gemm of an overlap_gemm "
                             "loop (only staged copies, loads, tile.all_of "
                             "and side-effect-free ops can: they are issued "
                             "again for the next iteration)");
  }
  // The next iteration's gemm (and the loads before it) run before the
  // rest of this iteration: what they read must not be written in the body
  // (other than by the staged copies, which have their own stages).
  if (!isa<SharedType>(gemm.getA().getType()))
    return gemm.emitOpError("in an overlap_gemm loop needs A in shared memory "
                            "(a register A would be rewritten while the next "
                            "iteration's wgmma reads it)");
  SmallVector<Value> readEarly = {gemm.getA(), gemm.getB()};
  for (Operation &inner : body) {
    if (&inner == gemm.getOperation())
      break;
    if (auto load = dyn_cast<LoadOp>(inner))
      readEarly.push_back(load.getSource());
    if (auto allOf = dyn_cast<AllOfOp>(inner))
      readEarly.push_back(allOf.getSource());
  }
  // A tile.pick stands for each of its candidates (on either side).
  auto candidates = [](Value tile) {
    tile = getViewedTile(tile);
    SmallVector<Value> tiles = {tile};
    if (auto pick = tile.getDefiningOp<PickOp>())
      for (Value candidate : pick.getTiles())
        tiles.push_back(getViewedTile(candidate));
    return tiles;
  };
  llvm::SmallPtrSet<Value, 4> early;
  for (Value tile : readEarly)
    for (Value candidate : candidates(tile))
      early.insert(candidate);
  WalkResult written = body.walk([&](Operation *inner) {
    // The staged copies fill their own stage buffers.
    if (auto copy = dyn_cast<CopyOp>(inner);
        copy && copy->getParentOp() == op.getOperation() &&
        isa<GlobalType>(copy.getSource().getType()) &&
        isa<SharedType>(copy.getDest().getType()))
      return WalkResult::advance();
    Value dest = getWrittenTile(inner);
    if (dest && llvm::any_of(candidates(dest), [&](Value tile) {
          return early.contains(tile);
        })) {
      inner->emitOpError("writes a tile that the gemm of an overlap_gemm "
                         "loop (or a load before it) reads: the next "
                         "iteration's gemm would read it before this write");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (written.wasInterrupted())
    return failure();
  for (Operation *user : gemm.getC().getUsers()) {
    Operation *at = op->getBlock()->findAncestorOpInBlock(*user);
    if (at && op->isBeforeInBlock(at))
      return gemm.emitOpError("in an overlap_gemm loop has an accumulator "
                              "used after the loop; it holds only the last "
                              "iteration's value inside it");
  }
  return success();
}

LogicalResult PipelinedOp::verify() {
  // Its stages, barriers and copies are the block's.
  if ((*this)->getParentOfType<ParallelOp>())
    return emitOpError("cannot be in a tile.parallel body (its copies, "
                       "stages and barriers are the whole block's)");
  if (getNumStages() < 1 || getNumStages() > kMaxPipelineStages)
    return emitOpError("num_stages must be between 1 and ")
           << kMaxPipelineStages << ", got " << getNumStages();
  // A step that is not positive never reaches the upper bound.
  APInt step;
  if (matchPattern(getStep(), m_ConstantInt(&step)) &&
      !step.isStrictlyPositive())
    return emitOpError("step must be positive, got ") << step.getSExtValue();
  if (failed(verifyInsideLaunch(*this)))
    return failure();
  if (getOverlapGemm() && failed(verifyOverlappedGemm(*this)))
    return failure();
  // A copy's own stage count: its buffers are handed over by mbarriers of
  // their own, which only the warp-specialized loop with tile.release has.
  DenseMap<Value, int64_t> stagesOfTile;
  for (CopyOp copy : getBody().front().getOps<CopyOp>()) {
    Attribute own = copy->getAttr(kCopyStagesAttrName);
    bool staged = isa<GlobalType>(copy.getSource().getType()) &&
                  isa<SharedType>(copy.getDest().getType());
    if (staged) {
      // Two copies into one tile share its buffers: one count for both.
      int64_t count = getCopyStages(copy, *this);
      auto [it, inserted] = stagesOfTile.try_emplace(copy.getDest(), count);
      if (!inserted && it->second != count)
        return copy.emitOpError("fills a tile another copy of the loop "
                                "fills with a different ")
               << kCopyStagesAttrName;
    }
    if (!own)
      continue;
    auto count = dyn_cast<IntegerAttr>(own);
    if (!count)
      return copy.emitOpError(kCopyStagesAttrName)
             << " must be an integer, got " << own;
    if (count.getInt() < static_cast<int64_t>(getNumStages()) ||
        count.getInt() > kMaxPipelineStages)
      return copy.emitOpError(kCopyStagesAttrName)
             << " must be between the loop's num_stages (" << getNumStages()
             << ") and " << kMaxPipelineStages << ", got " << count.getInt();
    if (!staged)
      return copy.emitOpError(kCopyStagesAttrName)
             << " is for global-to-shared copies (the staged ones)";
    if (!getWarpSpecialized() || !releasesCopies(*this))
      return copy.emitOpError(kCopyStagesAttrName)
             << " needs a warp_specialized loop with tile.release (whose "
                "copies hand their buffers over one by one)";
  }
  if (!getWarpSpecialized())
    return success();
  auto launch = dyn_cast<LaunchOp>((*this)->getParentOp());
  if (!launch)
    return emitOpError("warp_specialized must sit directly in the "
                       "tile.launch body (the producer warpgroup runs beside "
                       "the whole block)");
  bool releases = false;
  getBody().walk([&](ReleaseOp) { releases = true; });
  if (getNumStages() < 2 && !releases)
    return emitOpError("warp_specialized needs num_stages >= 2 (the producer "
                       "fills one stage while the consumers read another), "
                       "or tile.release in the body");
  int64_t threads = launch.getThreads();
  if (threads % 128 != 0 || threads + kProducerThreads > 1024)
    return emitOpError("warp_specialized needs the launch's threads to be "
                       "whole warpgroups, at most ")
           << 1024 - kProducerThreads << " (the producer adds "
           << kProducerThreads << "), got " << threads;
  PipelinedOp first = launch.getWarpSpecializedLoop();
  if (first && first != *this)
    return emitOpError("is the second warp_specialized tile.pipelined of its "
                       "launch; at most one is supported");
  bool hasCopy =
      llvm::any_of(getBody().front().getOps<CopyOp>(), [](CopyOp copy) {
        return isa<GlobalType>(copy.getSource().getType()) &&
               isa<SharedType>(copy.getDest().getType());
      });
  if (!hasCopy)
    return emitOpError("warp_specialized needs a global-to-shared copy at the "
                       "top of its body for the producer to issue");
  return success();
}

LogicalResult PipelinedOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getNumArguments() != 1 || !body.getArgument(0).getType().isIndex())
    return emitOpError("body must have one index induction variable");
  return success();
}

//===----------------------------------------------------------------------===//
// PerWarpgroupOp
//===----------------------------------------------------------------------===//

ParseResult PerWarpgroupOp::parse(OpAsmParser &parser, OperationState &result) {
  OpAsmParser::Argument warpgroup;
  if (parser.parseLParen() || parser.parseArgument(warpgroup) ||
      parser.parseRParen())
    return failure();
  if (succeeded(parser.parseOptionalKeyword("unsynchronized")))
    result.addAttribute(getUnsynchronizedAttrName(result.name),
                        parser.getBuilder().getUnitAttr());
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  warpgroup.type = parser.getBuilder().getIndexType();
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, {warpgroup}))
    return failure();
  ensureTerminator(*body, parser.getBuilder(), result.location);
  return success();
}

void PerWarpgroupOp::print(OpAsmPrinter &p) {
  p << " (";
  p.printOperand(getWarpgroup());
  p << ")";
  if (getUnsynchronized())
    p << " unsynchronized";
  p.printOptionalAttrDictWithKeyword((*this)->getAttrs(),
                                     {getUnsynchronizedAttrName()});
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/false);
}

LogicalResult PerWarpgroupOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getNumArguments() != 1 || !body.getArgument(0).getType().isIndex())
    return emitOpError("body must have one index argument (the warpgroup)");
  // Directly in the launch, or in the body of a tile.pipelined that is
  // (each iteration's per-warpgroup part of a key loop; with
  // warp_specialized, the consumers' part while the producer fills stages).
  Operation *parent = (*this)->getParentOp();
  if (isa<PipelinedOp>(parent))
    parent = parent->getParentOp();
  auto launch = dyn_cast<LaunchOp>(parent);
  if (!launch)
    return emitOpError("must sit directly in a tile.launch body, or in the "
                       "body of a tile.pipelined that does (each warpgroup "
                       "of the block runs it)");
  int64_t threads = launch.getThreads();
  if (threads % 128 != 0 || threads < 256)
    return emitOpError("needs a launch of at least two whole warpgroups "
                       "(threads a multiple of 128, >= 256), got ")
           << threads << " threads";
  WalkResult walk = getBody().walk([&](Operation *op) {
    if (isa<PipelinedOp, ScanOp, PerWarpgroupOp>(op)) {
      op->emitOpError("is not supported inside tile.per_warpgroup (it "
                      "involves every thread of the block)");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

//===----------------------------------------------------------------------===//
// RejoinOp
//===----------------------------------------------------------------------===//

int64_t hisa::tile::getMostThreads(LaunchOp launch) {
  Block &body = launch.getBody().front();
  bool specialized =
      llvm::any_of(body.getOps<PipelinedOp>(),
                   [](PipelinedOp loop) { return loop.getWarpSpecialized(); });
  bool rejoins = !body.getOps<RejoinOp>().empty();
  return launch.getThreads() + (specialized && rejoins ? kProducerThreads : 0);
}

/// Whether every thread, the producer warpgroup's included, can compute
/// `value` where tile.rejoin starts: it comes from outside the launch body,
/// is the block index, a tile, a constant, a parameter or a tensor's size,
/// or side-effect-free arithmetic of those. Returns the op that is not.
static Operation *findUnrecomputable(Value value, LaunchOp launch) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return nullptr; // the block index, or an argument outside the launch
  if (!launch->isAncestor(def) || isa<AllocOp, DimOp, ParamOp>(def))
    return nullptr;
  if (def->getNumRegions() != 0 || !isMemoryEffectFree(def) ||
      isa<TileDialect>(def->getDialect()))
    return def;
  for (Value operand : def->getOperands())
    if (Operation *bad = findUnrecomputable(operand, launch))
      return bad;
  return nullptr;
}

LogicalResult RejoinOp::verifyRegions() {
  auto launch = dyn_cast<LaunchOp>((*this)->getParentOp());
  if (!launch ||
      (*this)->getNextNode() != launch.getBody().front().getTerminator())
    return emitOpError("must be the last op of a tile.launch body");
  WalkResult walk = getBody().walk([&](Operation *op) -> WalkResult {
    if (isa<PipelinedOp, PerWarpgroupOp, RejoinOp, GemmOp>(op)) {
      op->emitOpError("is not supported inside tile.rejoin (its body runs "
                      "once the launch's loop is done, on threads that hold "
                      "no accumulators)");
      return WalkResult::interrupt();
    }
    for (Value operand : op->getOperands()) {
      if (isa<FragmentType>(operand.getType())) {
        op->emitOpError("uses a fragment inside tile.rejoin (fragments are "
                        "laid out over the launch's threads, not the "
                        "producer's)");
        return WalkResult::interrupt();
      }
      if (getBody().isAncestor(operand.getParentRegion()))
        continue;
      if (Operation *bad = findUnrecomputable(operand, launch)) {
        InFlightDiagnostic diagnostic =
            op->emitOpError("uses a value from before tile.rejoin that the "
                            "producer warpgroup cannot recompute; compute it "
                            "inside the body (loads included)");
        diagnostic.attachNote(bad->getLoc()) << "it comes from here";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

//===----------------------------------------------------------------------===//
// LoadOp, StoreOp
//===----------------------------------------------------------------------===//

LogicalResult
LoadOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                         ValueRange operands, DictionaryAttr, OpaqueProperties,
                         RegionRange,
                         SmallVectorImpl<Type> &inferredReturnTypes) {
  if (operands.empty())
    return failure();
  auto tile = getTileShapeAndElementType(operands.front().getType());
  if (!tile)
    return emitOptionalError(location, "tile.load source must be a tile or "
                                       "global tensor");
  inferredReturnTypes.push_back(tile->second);
  return success();
}

static LogicalResult verifyElementAccess(Operation *op, Type bufferType,
                                         OperandRange indices) {
  TileShape shape = shapeOf(bufferType);
  int64_t rank = shape.getRank();
  if (static_cast<int64_t>(indices.size()) != rank)
    return op->emitOpError("expects ")
           << rank << " indices for a " << describe(bufferType) << ", got "
           << indices.size();
  // A constant index past an on-chip tile would address its neighbour's
  // bytes (global tensors check their bounds at run time). Not under scf
  // control flow, which may be dead for this specialization.
  if (!isa<GlobalType>(bufferType) && !isUnderControlFlow(op))
    for (auto [d, index] : llvm::enumerate(indices)) {
      APInt value;
      std::optional<int64_t> size = shape.getStaticSize(d);
      if (size && matchPattern(index, m_ConstantInt(&value)) &&
          (value.isNegative() || value.getSExtValue() >= *size))
        return op->emitOpError("index ")
               << value.getSExtValue() << " is out of range for dimension " << d
               << " of a " << describe(bufferType);
    }
  return verifyInsideLaunch(op);
}

/// Ops that only mean something in a cluster: inside a launch, it must
/// have `cluster` (a device function's ops are checked once inlined).
static LogicalResult verifyInsideCluster(Operation *op) {
  if (failed(verifyInsideLaunch(op)))
    return failure();
  auto launch = op->getParentOfType<LaunchOp>();
  if (!launch)
    return success();
  // (`cluster 1`, say a parameter's default, is a cluster of one block:
  // its peer is itself.)
  if (!launch.getClusterBlocksAttr())
    return op->emitOpError("needs a tile.launch with `cluster N`");
  return success();
}

LogicalResult LoadOp::verify() {
  if (getPeer()) {
    if (!isa<SharedType>(getSource().getType()))
      return emitOpError("reads a peer block's element only from a shared "
                         "tile, got a ")
             << describe(getSource().getType());
    if (failed(verifyInsideCluster(*this)))
      return failure();
  }
  return verifyElementAccess(*this, getSource().getType(), getIndices());
}

//===----------------------------------------------------------------------===//
// Clusters
//===----------------------------------------------------------------------===//

LogicalResult ClusterRankOp::verify() { return verifyInsideCluster(*this); }

LogicalResult ClusterBarrierOp::verify() {
  if ((*this)->getParentOfType<ParallelOp>())
    return emitOpError("may not sit in a tile.parallel body (every thread "
                       "of the cluster meets it once)");
  if ((*this)->getParentOfType<PipelinedOp>() ||
      (*this)->getParentOfType<PerWarpgroupOp>() ||
      (*this)->getParentOfType<AllOfOp>())
    return emitOpError("may not sit in a tile.pipelined, tile.per_warpgroup "
                       "or tile.all_of body");
  return verifyInsideCluster(*this);
}

LogicalResult StoreOp::verify() {
  return verifyElementAccess(*this, getDest().getType(), getIndices());
}

//===----------------------------------------------------------------------===//
// AtomicOp
//===----------------------------------------------------------------------===//

LogicalResult AtomicOp::verify() {
  Type destType = getDest().getType();
  if (!isa<SharedType, GlobalType>(destType))
    return emitOpError("dest must be a shared tile or a global tensor, got a ")
           << describe(destType);
  Type element = elementTypeOf(destType);
  bool isInt = element.isInteger(32) || element.isInteger(64);
  if (!isInt && !element.isF32())
    return emitOpError("supports 32- or 64-bit integer or f32 elements, got ")
           << element;
  AtomicKind kind = getKind();
  if ((kind == AtomicKind::UMax || kind == AtomicKind::UMin) && !isInt)
    return emitOpError("'") << stringifyAtomicKind(kind)
                            << "' needs integer elements, got " << element;
  if (!isInParallelBody(*this))
    return emitOpError("must be in a tile.parallel body (one atomic per "
                       "element of its domain)");
  return verifyElementAccess(*this, destType, getIndices());
}

//===----------------------------------------------------------------------===//
// FenceOp
//===----------------------------------------------------------------------===//

LogicalResult FenceOp::verify() { return verifyInsideLaunch(*this); }

//===----------------------------------------------------------------------===//
// PrefetchOp
//===----------------------------------------------------------------------===//

LogicalResult PrefetchOp::verify() {
  if (std::optional<int64_t> bytes = getConstantIntValue(getBytes());
      bytes && *bytes < 0)
    return emitOpError("prefetches a negative byte count (") << *bytes << ")";
  return verifyElementAccess(*this, getSource().getType(), getIndices());
}

//===----------------------------------------------------------------------===//
// ScanOp, WarpScanOp, WarpBroadcastOp, WarpMatchOp, VoteOp
//===----------------------------------------------------------------------===//

static LogicalResult verifyScanKind(Operation *op, ReduceKind kind) {
  if (kind != ReduceKind::Sum && kind != ReduceKind::Max &&
      kind != ReduceKind::Min)
    return op->emitOpError("supports the kinds sum, max and min, got '")
           << stringifyReduceKind(kind) << "'";
  return success();
}

LogicalResult ScanOp::verify() {
  if (failed(verifyScanKind(*this, getKind())))
    return failure();
  Type sourceType = getSource().getType(), destType = getDest().getType();
  TileShape source = shapeOf(sourceType);
  if (source.getRank() != 1)
    return emitOpError("scans 1-D tiles, got a source of shape ")
           << formatDims(source.getDims());
  if (shapeOf(destType).getDims() != source.getDims())
    return emitOpError("destination must have the shape of the source ")
           << formatDims(source.getDims()) << ", got "
           << formatDims(shapeOf(destType).getDims());
  Type element = elementTypeOf(sourceType);
  if (elementTypeOf(destType) != element)
    return emitOpError("destination holds ")
           << elementTypeOf(destType) << " but the source holds " << element;
  if (!element.isInteger(32) && !element.isInteger(64) && !element.isF32())
    return emitOpError("scans 32- or 64-bit integers or f32, got ") << element;
  if ((*this)->getParentOfType<ParallelOp>())
    return emitOpError("is block-wide: every thread takes part, so it cannot "
                       "be in a tile.parallel body (use tile.warp_scan there)");
  return verifyInsideLaunch(*this);
}

/// Warp collectives act on the elements of a tile.parallel domain, a warp's
/// worth at a time.
static LogicalResult verifyWarpCollective(Operation *op) {
  if (!isInParallelBody(op))
    return op->emitOpError("must be in a tile.parallel body (it combines the "
                           "domain's elements a warp at a time)");
  return success();
}

LogicalResult WarpScanOp::verify() {
  if (failed(verifyScanKind(*this, getKind())))
    return failure();
  return verifyWarpCollective(*this);
}

LogicalResult WarpBroadcastOp::verify() { return verifyWarpCollective(*this); }

LogicalResult WarpMatchOp::verify() { return verifyWarpCollective(*this); }

LogicalResult YieldOp::verify() {
  bool inAllOf = isa<AllOfOp>((*this)->getParentOp());
  if (inAllOf && getValues().size() != 1)
    return emitOpError("ends a tile.all_of predicate: it yields one i1, got ")
           << getValues().size() << " values";
  if (!inAllOf && !getValues().empty())
    return emitOpError("yields values only in a tile.all_of predicate");
  return success();
}

/// Whether `op` is work a thread does on its own, so that it may run in
/// a branch taken by some warps and not others: side-effect-free ops,
/// structured control flow, fills of fragments, and tile.parallel bodies
/// that write only fragments and local arrays (such a parallel has no
/// barrier of its own).
static bool isThreadLocalWork(Operation *op) {
  if (isa<scf::IfOp, scf::ForOp, scf::YieldOp, YieldOp, LoadOp>(op))
    return true;
  if (isa<StoreOp, FillOp>(op))
    return isa<FragmentType, LocalType>(getWrittenTile(op).getType());
  if (isa<ParallelOp>(op))
    return true; // (its body's ops are checked one by one)
  if (isa<TileDialect>(op->getDialect()))
    return false;
  return isMemoryEffectFree(op);
}

namespace {
/// The values a fragment's all_of result reaches, which agree only within
/// a warp: what is computed from it, what the control flow it decides
/// yields or carries, and what is read back from the fragments and local
/// arrays it decides or stores. Deny by default: such a value may decide
/// control flow only around thread-local work, and reach no tile op but
/// the element stores and loads of registers and local arrays (a pick
/// index, a copy offset or a fill value differing between warps would
/// split a block-wide op, silently).
class WarpUniformTaint {
public:
  explicit WarpUniformTaint(AllOfOp source) : source(source) {}

  LogicalResult run() {
    add(source.getResult());
    while (!pending.empty()) {
      Value value = pending.pop_back_val();
      for (OpOperand &use : value.getUses())
        if (failed(follow(use)))
          return failure();
    }
    return success();
  }

private:
  void add(Value value) {
    if (tainted.insert(value).second)
      pending.push_back(value);
  }

  /// Every later read of a fragment or local array written under the
  /// decision (through views too) gives a warp-dependent value.
  void addTile(Value tile) {
    Value root = getViewedTile(tile);
    if (!taintedTiles.insert(root).second)
      return;
    SmallVector<Value> views = {root};
    while (!views.empty()) {
      Value view = views.pop_back_val();
      for (Operation *user : view.getUsers()) {
        if (auto load = dyn_cast<LoadOp>(user);
            load && load.getSource() == view)
          add(load.getResult());
        if (auto nested = dyn_cast<ViewOp>(user))
          views.push_back(nested.getResult());
      }
    }
  }

  InFlightDiagnostic refuse(Operation *op, StringRef why) {
    InFlightDiagnostic diagnostic = op->emitOpError(why);
    diagnostic.attachNote(source.getLoc())
        << "the value comes from this fragment's tile.all_of, which agrees "
           "only within a warp";
    return diagnostic;
  }

  /// Control flow decided by a warp-dependent value: everything inside is
  /// thread-local, and what it writes or yields is warp-dependent.
  LogicalResult decide(Operation *op) {
    Operation *offending = nullptr;
    op->walk([&](Operation *inner) {
      if (inner == op)
        return WalkResult::advance();
      if (!isThreadLocalWork(inner) &&
          !isa<scf::WhileOp, scf::ConditionOp>(inner)) {
        offending = inner;
        return WalkResult::interrupt();
      }
      if (Value written = getWrittenTile(inner))
        addTile(written);
      return WalkResult::advance();
    });
    if (offending)
      return refuse(offending,
                    "cannot be in control flow decided by a fragment's "
                    "tile.all_of: the decision agrees only within a warp, so "
                    "it may hold only work each thread does alone "
                    "(tile.parallel writing fragments or local arrays, "
                    "tile.fill of a fragment, side-effect-free ops)");
    addResultsAndArguments(op);
    return success();
  }

  /// What an op with regions yields or carries.
  void addResultsAndArguments(Operation *op) {
    for (Value result : op->getResults())
      add(result);
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument argument : block.getArguments())
          add(argument);
  }

  LogicalResult follow(OpOperand &use) {
    Operation *user = use.getOwner();
    // A condition, a bound, a carried value or a case of structured control
    // flow.
    if (isa<scf::IfOp, scf::ForOp, scf::WhileOp, scf::IndexSwitchOp>(user))
      return decide(user);
    // Yielded out of a region: the parent's results and carried values (a
    // while's condition decides the loop itself).
    if (isa<scf::YieldOp, scf::ConditionOp>(user)) {
      Operation *parent = user->getParentOp();
      if (isa<scf::ConditionOp>(user) || isa<scf::WhileOp>(parent))
        return decide(parent);
      addResultsAndArguments(parent);
      return success();
    }
    // An element of a fragment or local array: data, read back later.
    if (isa<StoreOp, FillOp>(user) &&
        isa<FragmentType, LocalType>(getWrittenTile(user).getType())) {
      addTile(getWrittenTile(user));
      return success();
    }
    // An element stored into shared or global memory by a parallel body
    // (each thread its own element): data, and a read of one address gives
    // every thread the same value.
    if (auto store = dyn_cast<StoreOp>(user);
        store && store.getValue() == use.get() &&
        user->getParentOfType<ParallelOp>())
      return success();
    if (auto load = dyn_cast<LoadOp>(user)) {
      add(load.getResult());
      return success();
    }
    if (isa<YieldOp>(user))
      return success();
    // (A device function is verified again where it is inlined.)
    if (isa<TileDialect>(user->getDialect()))
      return refuse(user, "cannot take a value computed from a fragment's "
                          "tile.all_of: it differs between warps, and this op "
                          "involves every thread of the block (or warpgroup)");
    for (Value result : user->getResults())
      add(result);
    return success();
  }

  AllOfOp source;
  SmallVector<Value> pending;
  llvm::DenseSet<Value> tainted;
  llvm::DenseSet<Value> taintedTiles;
};
} // namespace

LogicalResult AllOfOp::verify() {
  Type sourceType = getSource().getType();
  TileShape shape = shapeOf(sourceType);
  bool fragment = isa<FragmentType>(sourceType);
  // (A fragment is read from each thread's own registers: any shape.)
  if (!fragment) {
    if (shape.getRank() != 1)
      return emitOpError("tests 1-D tiles, got a source of shape ")
             << formatDims(shape.getDims());
    if (shape.isRuntime(0))
      return emitOpError("needs a tile whose size is known when the kernel "
                         "is specialized, got ")
             << formatDims(shape.getDims());
    if (std::optional<int64_t> size = shape.getStaticSize(0);
        size && *size > kMaxAllOfElements)
      return emitOpError("reads the whole tile in every warp: at most ")
             << kMaxAllOfElements << " elements, got " << *size;
  }
  Block &body = getPredicate().front();
  Type element = elementTypeOf(sourceType);
  if (body.getNumArguments() != 1 || body.getArgument(0).getType() != element)
    return emitOpError("predicate takes one argument, the element (")
           << element << ")";
  // (Checked before walking the body: an empty block has no terminator.)
  if (!body.mightHaveTerminator() || !isa<YieldOp>(body.getTerminator()))
    return emitOpError("predicate must end with tile.yield of an i1");
  for (Operation &op : body.without_terminator())
    if (isa<TileDialect>(op.getDialect()) || !isMemoryEffectFree(&op))
      return op.emitOpError("cannot be in a tile.all_of predicate: it "
                            "computes an i1 from the element with "
                            "side-effect-free ops");
  if ((*this)->getParentOfType<ParallelOp>())
    return emitOpError("is block-wide: every thread takes part, so it cannot "
                       "be in a tile.parallel body (use tile.vote there)");
  if (fragment && failed(WarpUniformTaint(*this).run()))
    return failure();
  return verifyInsideLaunch(*this);
}

LogicalResult VoteOp::verify() {
  bool wantsMask = getKind() == VoteKind::Ballot;
  Type result = getResult().getType();
  if (wantsMask != result.isInteger(32))
    return emitOpError("'")
           << stringifyVoteKind(getKind()) << "' gives "
           << (wantsMask ? "an i32 mask" : "an i1") << ", not " << result;
  return verifyWarpCollective(*this);
}

#define GET_OP_CLASSES
#include "hisa/Dialect/Tile/IR/TileOps.cpp.inc"
