//===- Compiler.cpp - DSL source to PTX and cubin -------------------------===//

#include "Compiler.h"

#include "hisa/Dialect/Tile/IR/TensorMaps.h"
#include "hisa/Dialect/Tile/IR/TileLimits.h"
#include "hisa/Dialect/Tile/IR/TileOps.h"
#include "hisa/Dialect/Tile/Transforms/Passes.h"
#include "hisa/Pipelines/Pipelines.h"
#include "hisa/Target/TargetSpec.h"
#include "hisa/Tools/Registration.h"
#include "hisa/Tools/SourceLimits.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/AsmParser/AsmParserState.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

#include <sys/types.h>
#include <sys/wait.h>

using namespace mlir;
using namespace hisa;
using namespace hisa::runtime;

/// Whether `tensor` is the source of a global-to-shared copy at the top of a
/// tile.pipelined loop with several stages (lowered to cp.async pieces of up
/// to 16 bytes, which need aligned addresses).
static bool isStagedByCpAsync(Value tensor) {
  for (Operation *user : tensor.getUsers()) {
    auto copy = dyn_cast<tile::CopyOp>(user);
    if (!copy || copy.getSource() != tensor ||
        !isa<tile::SharedType>(copy.getDest().getType()))
      continue;
    auto loop = dyn_cast<tile::PipelinedOp>(copy->getParentOp());
    if (loop && loop.getNumStages() > 1)
      return true;
  }
  return false;
}
using llvm::Expected;

namespace {

llvm::Error makeCompileError(const llvm::Twine &message) {
  return llvm::make_error<CompileError>(message.str());
}

/// A failure the request decides (see CompileError): remembered by the Jit.
llvm::Error makeReproducibleCompileError(const llvm::Twine &message) {
  return llvm::make_error<CompileError>(message.str(), /*reproducible=*/true);
}

llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Reads the grid arithmetic of a bound kernel into instructions.
llvm::Error recordGridProgram(tile::KernelOp kernel, KernelMetadata &metadata) {
  llvm::DenseMap<Value, int64_t> ids;
  auto emit = [&](KernelMetadata::Instruction inst, Value defines) {
    ids[defines] = metadata.program.size();
    metadata.program.push_back(std::move(inst));
  };
  auto bitsOf = [](Type type) -> unsigned {
    return type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
  };
  for (auto [i, arg] : llvm::enumerate(kernel.getArguments()))
    if (arg.getType().isIntOrIndex()) {
      KernelMetadata::Instruction inst{"arg", int64_t(i), 0, 0,
                                       bitsOf(arg.getType())};
      emit(inst, arg);
    }
  for (Operation &op : kernel.getBody().front()) {
    if (isa<tile::LaunchOp, tile::ReturnOp>(op))
      continue;
    Value result = op.getResult(0);
    KernelMetadata::Instruction inst;
    inst.bits = bitsOf(result.getType());
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      inst.op = "const";
      inst.immediate = cast<IntegerAttr>(constant.getValue()).getInt();
    } else if (auto dim = dyn_cast<tile::DimOp>(op)) {
      inst.op = "dim";
      inst.a = cast<BlockArgument>(dim.getSource()).getArgNumber();
      inst.b = dim.getIndex();
    } else if (isa<arith::IndexCastOp, arith::ExtSIOp, arith::TruncIOp>(op)) {
      inst.op = "cast";
      inst.a = ids.lookup(op.getOperand(0));
    } else if (isa<arith::IndexCastUIOp, arith::ExtUIOp>(op)) {
      inst.op = "castui";
      inst.a = ids.lookup(op.getOperand(0));
      inst.immediate = bitsOf(op.getOperand(0).getType());
    } else if (op.getNumOperands() == 2 &&
               llvm::is_contained(tile::getGridBinaryOpNames(),
                                  op.getName().stripDialect())) {
      inst.op = op.getName().stripDialect().str();
      inst.a = ids.lookup(op.getOperand(0));
      inst.b = ids.lookup(op.getOperand(1));
    } else {
      return makeReproducibleCompileError(
          "kernel '" + metadata.kernelName + "': the JIT cannot evaluate '" +
          op.getName().getStringRef() + "' in the grid arithmetic");
    }
    emit(inst, result);
  }
  for (Value extent : kernel.getLaunch().getGridSizes())
    metadata.gridValues.push_back(ids.lookup(extent));
  return llvm::Error::success();
}

using Clock = std::chrono::steady_clock;

/// When a compilation must be over, and what it was doing when it was not.
struct Deadline {
  Clock::time_point end;
  double seconds;            // the limit, for messages
  std::string stoppedBefore; // the pass that was not started, once expired

  bool expired() const { return Clock::now() >= end; }
  /// Seconds left, 0 if none.
  double remaining() const {
    return std::max(0.0,
                    std::chrono::duration<double>(end - Clock::now()).count());
  }
  std::string describe() const {
    std::string text;
    llvm::raw_string_ostream(text)
        << "compilation exceeded the JIT's time limit of "
        << llvm::format("%g", seconds)
        << " s (set HISA_COMPILE_TIMEOUT_S to change it)";
    return text;
  }
};

/// Fails the pipeline before any pass that would start past the deadline,
/// so that a pipeline of bounded passes never runs much longer than the
/// limit.
class DeadlineInstrumentation : public PassInstrumentation {
public:
  explicit DeadlineInstrumentation(Deadline &deadline) : deadline(deadline) {}

  void runBeforePass(Pass *pass, Operation *) override {
    if (!deadline.expired())
      return;
    if (deadline.stoppedBefore.empty())
      deadline.stoppedBefore =
          (pass->getArgument().empty() ? pass->getName() : pass->getArgument())
              .str();
    signalPassFailure(pass);
  }

private:
  Deadline &deadline;
};

std::string findPtxas() {
  if (const char *explicitPath = std::getenv("HISA_PTXAS"))
    return explicitPath;
  SmallVector<std::string> candidates;
  if (const char *cudaHome = std::getenv("CUDA_HOME"))
    candidates.push_back((llvm::Twine(cudaHome) + "/bin/ptxas").str());
  candidates.push_back("/usr/local/cuda/bin/ptxas");
  for (const std::string &candidate : candidates)
    if (llvm::sys::fs::can_execute(candidate))
      return candidate;
  if (auto found = llvm::sys::findProgramByName("ptxas"))
    return *found;
  return "";
}

std::string getToolkitPath() {
  if (const char *cudaHome = std::getenv("CUDA_HOME"))
    return cudaHome;
  return "/usr/local/cuda";
}

/// Whether the environment variable `name` asks for a refusal (set, not
/// empty, not "0").
static bool isStrict(const char *name) {
  const char *value = std::getenv(name);
  return value && *value && StringRef(value) != "0";
}

/// What ptxas -v reports about a kernel's per-thread local memory.
struct LocalMemoryUse {
  int64_t stackFrameBytes = 0;
  int64_t spillStoreBytes = 0;
  int64_t registers = 0; // "Used N registers": per thread at kernel entry
  /// ptxas's reason for running every wgmma of a function one at a time
  /// (each followed by its own wait), empty when it did not.
  std::string wgmmaSerialized;
  /// ptxas's note that it added a wgmma wait of its own (a register a
  /// wgmma still writes is used before the kernel's wait), empty if none.
  std::string wgmmaWaitInjected;
};

/// The largest stack frame and spill stores in a ptxas -v log ("N bytes
/// stack frame, M bytes spill stores, K bytes spill loads").
LocalMemoryUse parseLocalMemoryUse(StringRef log) {
  LocalMemoryUse use;
  SmallVector<StringRef> lines;
  log.split(lines, '\n');
  for (StringRef line : lines) {
    // "(C7512) Potential Performance Loss: wgmma.mma_async instructions are
    // serialized due to insufficient register resources for the function
    // 'k'" (C7510-C7520 name the other reasons).
    if (size_t serialized = line.find("wgmma.mma_async instructions are "
                                      "serialized");
        serialized != StringRef::npos && use.wgmmaSerialized.empty()) {
      StringRef reason = line.drop_front(serialized).trim();
      use.wgmmaSerialized = reason.str();
    }
    // "(C7517) warpgroup.wait is injected in around line 265 by compiler
    // to allow use of registers defined by GMMA in function 'k'".
    if (size_t injected = line.find("warpgroup.wait is injected");
        injected != StringRef::npos && use.wgmmaWaitInjected.empty())
      use.wgmmaWaitInjected = line.drop_front(injected).trim().str();
    if (size_t used = line.find("Used "); used != StringRef::npos) {
      StringRef rest = line.drop_front(used + 5);
      int64_t registers = 0;
      if (!rest.take_until([](char c) { return c == ' '; })
               .getAsInteger(10, registers) &&
          rest.contains(" registers"))
        use.registers = std::max(use.registers, registers);
    }
    size_t frame = line.find(" bytes stack frame");
    if (frame == StringRef::npos)
      continue;
    int64_t bytes = 0;
    StringRef number = line.take_front(frame).rtrim();
    number = number.substr(number.find_last_of(" \t") + 1);
    if (!number.getAsInteger(10, bytes))
      use.stackFrameBytes = std::max(use.stackFrameBytes, bytes);
    size_t spills = line.find(" bytes spill stores");
    if (spills == StringRef::npos)
      continue;
    StringRef spillNumber = line.take_front(spills).rtrim();
    spillNumber = spillNumber.substr(spillNumber.find_last_of(" ,\t") + 1);
    if (!spillNumber.getAsInteger(10, bytes))
      use.spillStoreBytes = std::max(use.spillStoreBytes, bytes);
  }
  return use;
}

/// The (consumer, producer) register counts of a warp-specialized kernel's
/// setmaxnreg pair in its PTX, if it has one.
std::optional<std::pair<int64_t, int64_t>> findRegisterSplit(StringRef ptx) {
  auto countAfter = [&](StringRef marker) -> std::optional<int64_t> {
    size_t at = ptx.find(marker);
    if (at == StringRef::npos)
      return std::nullopt;
    StringRef rest = ptx.drop_front(at + marker.size()).ltrim();
    int64_t value = 0;
    if (rest.take_while([](char c) { return c >= '0' && c <= '9'; })
            .getAsInteger(10, value))
      return std::nullopt;
    return value;
  };
  std::optional<int64_t> consumer =
      countAfter("setmaxnreg.inc.sync.aligned.u32");
  std::optional<int64_t> producer =
      countAfter("setmaxnreg.dec.sync.aligned.u32");
  if (!consumer || !producer)
    return std::nullopt;
  return std::make_pair(*consumer, *producer);
}

Expected<std::string> runPtxas(StringRef ptxas, StringRef ptx, StringRef chip,
                               const Deadline &deadline,
                               LocalMemoryUse &localMemory) {
  SmallString<128> ptxPath, cubinPath, logPath;
  llvm::scope_exit cleanup([&] {
    for (const SmallString<128> &path : {ptxPath, cubinPath, logPath})
      if (!path.empty())
        llvm::sys::fs::remove(path);
  });
  for (auto [path, suffix] :
       {std::pair{&ptxPath, "ptx"}, std::pair{&cubinPath, "cubin"},
        std::pair{&logPath, "log"}})
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("hisa", suffix, *path)) {
      SmallString<128> directory;
      llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true,
                                             directory);
      return makeCompileError(formatv("cannot create a temporary .{0} file in "
                                      "{1} for ptxas: {2}",
                                      suffix, directory, ec.message())
                                  .str());
    }
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(ptxPath, ec);
    if (ec)
      return makeCompileError("cannot write " + ptxPath + ": " + ec.message());
    os << ptx;
    // A failed write (a full disk, a quota) must be cleared here: a
    // raw_fd_ostream destroyed with an error pending reports it as a fatal
    // error, which exits the whole process.
    os.close();
    if (os.has_error()) {
      std::error_code error = os.error();
      os.clear_error();
      return makeCompileError("cannot write " + ptxPath + ": " +
                              error.message());
    }
  }
  std::string arch = ("-arch=" + chip).str();
  // -v: the resource report (local memory use is checked below).
  SmallVector<StringRef> argv = {ptxas,   arch, "-O3",    "-v",
                                 ptxPath, "-o", cubinPath};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(logPath),
                                          StringRef(logPath)};
  // ptxas gets what is left of the compile time limit.
  double remaining = deadline.remaining();
  if (remaining <= 0)
    return makeCompileError(deadline.describe() + "; ptxas was not started");
  std::string message;
  bool executionFailed = false;
  // Started without waiting, then this one child is polled against the
  // deadline: llvm::sys::ExecuteAndWait bounds the wait with the
  // process-wide alarm() and a bare wait(), so in a threaded server the
  // signal reached another thread (no limit at all) and the wait could reap
  // the application's own children.
  llvm::sys::ProcessInfo child =
      llvm::sys::ExecuteNoWait(ptxas, argv, std::nullopt, redirects,
                               /*MemoryLimit=*/0, &message, &executionFailed);
  if (executionFailed || child.Pid <= 0)
    return makeCompileError("cannot run ptxas (" + message + ")");
  int status = 0;
  bool timedOut = false;
  for (;;) {
    pid_t done = waitpid(child.Pid, &status, WNOHANG);
    if (done == child.Pid)
      break;
    if (done < 0 && errno != EINTR)
      return makeCompileError("waiting for ptxas failed: " +
                              std::string(std::strerror(errno)));
    if (deadline.expired()) {
      kill(child.Pid, SIGKILL);
      while (waitpid(child.Pid, &status, 0) < 0 && errno == EINTR) {
      }
      timedOut = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (timedOut)
    return makeCompileError(deadline.describe() +
                            "; ptxas did not finish and was stopped");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    auto log = llvm::MemoryBuffer::getFile(logPath);
    // At most the log's first 4 KiB: a ptxas that prints megabytes would
    // otherwise fill every error message.
    std::string text = log ? (*log)->getBuffer().take_front(4096).str() : "";
    if (log && (*log)->getBufferSize() > 4096)
      text += "\n[... " + std::to_string((*log)->getBufferSize() - 4096) +
              " more bytes of ptxas output]";
    // ptxas exiting with an error rejected the PTX (reproducible); killed
    // by a signal, it may not have (memory, an operator).
    return llvm::make_error<CompileError>(
        "ptxas failed (" +
            (WIFEXITED(status)
                 ? "exit " + std::to_string(WEXITSTATUS(status))
                 : "signal " + std::to_string(WIFSIGNALED(status)
                                                  ? WTERMSIG(status)
                                                  : 0)) +
            "): " + text,
        /*reproducible=*/WIFEXITED(status));
  }
  auto cubin = llvm::MemoryBuffer::getFile(cubinPath, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
  if (!cubin)
    return makeCompileError("ptxas produced no cubin");
  // An empty or foreign file is not a cubin (a ptxas that exited 0 without
  // writing one would otherwise be cached, and every later load fail).
  if (!(*cubin)->getBuffer().starts_with("\x7f"
                                         "ELF"))
    return makeCompileError("ptxas exited 0 but wrote no ELF cubin (" +
                            std::to_string((*cubin)->getBufferSize()) +
                            " bytes)");
  if (auto log = llvm::MemoryBuffer::getFile(logPath))
    localMemory = parseLocalMemoryUse((*log)->getBuffer());
  return (*cubin)->getBuffer().str();
}

} // namespace

std::string hisa::runtime::describeBackend() {
  std::string ptxas = findPtxas();
  if (ptxas.empty())
    return "ptxas=none";
  llvm::sys::fs::file_status status;
  if (llvm::sys::fs::status(ptxas, status))
    return "ptxas=" + ptxas;
  return llvm::formatv(
             "ptxas={0}:{1}:{2}", ptxas, status.getSize(),
             status.getLastModificationTime().time_since_epoch().count())
      .str();
}

std::string hisa::runtime::describeStrictness() {
  SmallVector<StringRef, 2> strict;
  if (isStrict("HISA_STRICT_WGMMA"))
    strict.push_back("wgmma");
  if (isStrict("HISA_STRICT_LOCAL_MEMORY"))
    strict.push_back("local-memory");
  return strict.empty() ? std::string() : "strict=" + llvm::join(strict, ",");
}

void hisa::runtime::reportLine(const llvm::Twine &line) {
  static std::mutex mutex;
  std::string text = line.str() + "\n";
  std::lock_guard<std::mutex> lock(mutex);
  llvm::errs() << text;
  llvm::errs().flush();
}

double hisa::runtime::getCompileTimeoutFromEnvironment() {
  const char *text = std::getenv("HISA_COMPILE_TIMEOUT_S");
  if (!text || !*text)
    return kDefaultCompileTimeoutSeconds;
  char *end = nullptr;
  double seconds = std::strtod(text, &end);
  if (end != text && *end == '\0' && std::isfinite(seconds) && seconds > 0)
    return seconds;
  static std::once_flag warned;
  std::call_once(warned, [&] {
    std::string limit;
    llvm::raw_string_ostream(limit)
        << llvm::format("%g", kDefaultCompileTimeoutSeconds);
    reportLine(llvm::Twine("hisa: ignoring HISA_COMPILE_TIMEOUT_S='") + text +
               "' (expected a positive number of seconds); the limit is " +
               limit + " s");
  });
  return kDefaultCompileTimeoutSeconds;
}

Expected<CompiledKernel>
hisa::runtime::compileKernel(StringRef source, StringRef kernelName,
                             ArrayRef<std::string> params, StringRef targetSpec,
                             double timeoutSeconds) {
  // Clamped so that the time point cannot overflow (a year is no limit).
  Deadline deadline;
  deadline.seconds = timeoutSeconds;
  deadline.end =
      Clock::now() +
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
          std::clamp(timeoutSeconds, 0.0, 365.0 * 24 * 3600)));

  // "sm_90a", optionally with features: "sm_90a,-tma" keeps every staged
  // copy on cp.async (for comparisons and as a workaround). The same
  // spelling as tile-to-nvvm's chip= and features=.
  TargetSpec spec;
  std::string targetError;
  if (!parseTargetSpec(targetSpec, spec, targetError))
    return makeError(targetError);
  StringRef target = spec.chip;
  bool useTma = spec.tma;
  DialectRegistry registry;
  registerAllHisaDialects(registry);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false);
  context.loadAllAvailableDialects();

  // Diagnostics go into the error message, with source locations.
  llvm::SourceMgr sourceMgr;
  std::string diagnostics;
  llvm::raw_string_ostream diagnosticStream(diagnostics);
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(
                                   source, (kernelName + ".mlir").str()),
                               llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context, diagnosticStream);
  auto failure = [&](const llvm::Twine &what) {
    if (!deadline.stoppedBefore.empty())
      return makeCompileError("kernel '" + kernelName + "': " +
                              deadline.describe() + "; stopped before pass '" +
                              deadline.stoppedBefore + "'\n" + diagnostics);
    return makeReproducibleCompileError("kernel '" + kernelName + "': " + what +
                                        "\n" + diagnostics);
  };
  // Every pass manager checks the deadline before each pass it runs.
  auto makePassManager = [&] {
    auto pm = std::make_unique<PassManager>(&context);
    pm->addInstrumentation(std::make_unique<DeadlineInstrumentation>(deadline));
    return pm;
  };

  Block block;
  AsmParserState asmState;
  ParserConfig config(&context);
  // What the parser would abort on is refused first, with its location.
  if (std::optional<SourceLimitViolation> violation =
          findSourceLimitViolation(source)) {
    const llvm::MemoryBuffer *buffer =
        sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
    auto [line, column] =
        sourceMgr.getLineAndColumn(llvm::SMLoc::getFromPointer(
            buffer->getBufferStart() + violation->offset));
    emitError(FileLineColLoc::get(&context, buffer->getBufferIdentifier(), line,
                                  column),
              violation->message);
    return failure("cannot parse the source");
  }
  if (failed(parseAsmSourceFile(sourceMgr, &block, config, &asmState)))
    return failure("cannot parse the source");
  OwningOpRef<ModuleOp> module;
  if (block.getOperations().size() == 1 && isa<ModuleOp>(block.front())) {
    module = cast<ModuleOp>(block.front());
    module.get()->remove();
  } else {
    module = ModuleOp::create(UnknownLoc::get(&context));
    module->getBody()->getOperations().splice(module->getBody()->begin(),
                                              block.getOperations());
  }

  // A kernel source holds tile kernels and their device functions; other
  // IR would run through passes written for what the tile lowering emits
  // (a gpu.module with a memref.dim of index -1 crashed upstream's
  // canonicalizer: hisa-fuzz).
  for (Operation &op : module->getBody()->getOperations())
    if (!isa<tile::KernelOp, func::FuncOp>(op)) {
      emitError(op.getLoc())
          << "a kernel source holds tile.kernel and func.func operations "
             "only, not '"
          << op.getName() << "'";
      return failure("cannot compile the source");
    }

  // Keep only the requested kernel.
  tile::KernelOp kernel;
  std::string available;
  for (auto candidate :
       llvm::make_early_inc_range(module->getOps<tile::KernelOp>())) {
    if (candidate.getSymName() == kernelName) {
      kernel = candidate;
      continue;
    }
    available += (available.empty() ? "" : ", ") + candidate.getSymName().str();
  }
  if (!kernel)
    return makeError("no tile.kernel named '" + kernelName +
                     "' in the source (kernels: " +
                     (available.empty() ? "none" : available) + ")");
  for (auto other :
       llvm::make_early_inc_range(module->getOps<tile::KernelOp>()))
    if (other != kernel)
      other.erase();

  CompiledKernel compiled;
  KernelMetadata &metadata = compiled.metadata;
  metadata.kernelName = kernelName.str();
  // Argument names as the source spells them.
  if (const AsmParserState::BlockDefinition *definition =
          asmState.getBlockDef(&kernel.getBody().front()))
    for (const auto &argument : definition->arguments) {
      StringRef text(argument.loc.Start.getPointer(),
                     argument.loc.End.getPointer() -
                         argument.loc.Start.getPointer());
      metadata.arguments.emplace_back();
      metadata.arguments.back().name = text.ltrim('%').str();
    }
  metadata.arguments.resize(kernel.getNumArguments());

  // Binding (and the verification after it) fails on parameters the kernel
  // refuses: with parameters from the caller, that is the caller's error.
  std::unique_ptr<PassManager> bind = makePassManager();
  tile::buildTileSpecializationPipeline(*bind, params);
  if (failed(bind->run(*module))) {
    if (params.empty() || !deadline.stoppedBefore.empty())
      return failure("cannot bind parameters");
    return llvm::make_error<ParameterError>(
        ("kernel '" + kernelName + "': invalid parameters (" +
         llvm::join(params, ",") + ")\n" + diagnostics)
            .str());
  }

  for (auto [i, type] : llvm::enumerate(kernel.getArgumentTypes())) {
    KernelMetadata::Argument &arg = metadata.arguments[i];
    if (arg.name.empty())
      arg.name = "arg" + std::to_string(i);
    if (auto global = dyn_cast<tile::GlobalType>(type)) {
      arg.kind = KernelMetadata::Argument::Tensor;
      llvm::raw_string_ostream(arg.elementType) << global.getElementType();
      arg.elementBytes =
          std::max(1u, global.getElementType().getIntOrFloatBitWidth() / 8);
      for (int64_t d = 0; d < global.getRank(); ++d)
        arg.shape.push_back(
            global.getTileShape().getStaticSize(d).value_or(-1));
      // Rows whose bytes are a multiple of 16 may be accessed as vectors,
      // and so is a 1-D tensor that a pipelined loop stages with cp.async.
      // (8- and 4-byte vectors for rows of 8 or 4 bytes times n).
      int64_t innermost = arg.shape.back();
      int64_t rowAlignment =
          innermost > 0
              ? std::min<int64_t>(16, int64_t(1) << llvm::countr_zero(uint64_t(
                                          innermost * arg.elementBytes)))
              : 1;
      bool staged = global.getRank() == 1 && 16 % arg.elementBytes == 0 &&
                    isStagedByCpAsync(kernel.getArgument(i));
      arg.alignment =
          staged ? 16 : std::max<int64_t>(rowAlignment, arg.elementBytes);
      continue;
    }
    arg.kind = isa<FloatType>(type) ? KernelMetadata::Argument::Float
                                    : KernelMetadata::Argument::Int;
    arg.scalarBits = type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
  }
  if (llvm::Error error = recordGridProgram(kernel, metadata))
    return std::move(error);
  // With a producer warpgroup (warp-specialized pipelines) beside them.
  metadata.threads = kernel.getLaunch().getBlockThreads();

  std::unique_ptr<PassManager> plan = makePassManager();
  buildTilePlanningPipeline(*plan, target, useTma);
  if (failed(plan->run(*module)))
    return failure("cannot assign layouts or plan shared memory");
  metadata.sharedBytes = kernel.getLaunch()
                             ->getAttrOfType<IntegerAttr>("tile.shared_bytes")
                             .getInt();
  metadata.clusterBlocks =
      kernel.getLaunch().getBoundClusterBlocks().value_or(1);
  for (const tile::TensorMapSpec &spec : tile::getTensorMaps(kernel)) {
    KernelMetadata::TensorMap map;
    map.argument = spec.argNumber;
    map.elementBytes = spec.elementBytes;
    map.swizzleBytes = spec.swizzleBytes;
    map.box.assign(spec.box.begin(), spec.box.end());
    metadata.tensorMaps.push_back(std::move(map));
  }

  TileToNVVMOptions options;
  options.chip = target.str();
  options.features.push_back(spec.elideSync ? "+elide-sync" : "-elide-sync");
  if (spec.narrowIndices) {
    options.features.push_back("+narrow-indices");
    // The kernel assumes every run-time size below 2^31: launches check.
    metadata.int32Sizes = true;
  }
  std::unique_ptr<PassManager> lower = makePassManager();
  buildTileLoweringPipeline(*lower, options);
  GpuModuleToBinaryPassOptions binaryOptions;
  binaryOptions.compilationTarget = "isa";
  binaryOptions.toolkitPath = getToolkitPath();
  lower->addPass(createGpuModuleToBinaryPass(binaryOptions));
  if (failed(lower->run(*module)))
    return failure("cannot lower to PTX");
  std::string ptx;
  for (auto binary : module->getOps<gpu::BinaryOp>())
    for (Attribute object : binary.getObjects())
      ptx = cast<gpu::ObjectAttr>(object).getObject().getValue().str();
  if (ptx.empty())
    return failure("produced no PTX");
  // The lowering puts it at the kernel's entry (sm_90 and later).
  metadata.waitsForPrerequisiteGrids =
      StringRef(ptx).contains("griddepcontrol.wait");

  std::string ptxas = findPtxas();
  if (ptxas.empty()) {
    // Say so: the driver's JIT compiles the PTX at load time instead.
    static std::once_flag warned;
    std::call_once(warned, [] {
      reportLine("hisa: ptxas not found (set HISA_PTXAS or CUDA_HOME); "
                 "kernels are stored as PTX and compiled by the CUDA driver "
                 "when loaded");
    });
    metadata.binaryKind = "ptx";
    compiled.binary = std::move(ptx);
    return compiled;
  }
  LocalMemoryUse localMemory;
  Expected<std::string> cubin =
      runPtxas(ptxas, ptx, target, deadline, localMemory);
  if (!cubin)
    return cubin.takeError();
  // A warp-specialized kernel moves registers between its roles with
  // setmaxnreg inside the block's pool (ptxas's per-thread count at entry
  // times the block's threads): more than the pool would stall forever.
  if (std::optional<std::pair<int64_t, int64_t>> split = findRegisterSplit(ptx);
      split && localMemory.registers > 0) {
    int64_t blockThreads = metadata.threads;
    int64_t consumers = blockThreads - tile::kProducerThreads;
    int64_t wanted =
        consumers * split->first + tile::kProducerThreads * split->second;
    if (wanted > blockThreads * localMemory.registers)
      return makeReproducibleCompileError(formatv(
          "kernel '{0}': its warp-specialized roles ask for {1} consumer and "
          "{2} producer registers a thread, {3} in all, but ptxas gave the "
          "block {4} threads x {5} = {6}; setmaxnreg.inc would never "
          "complete",
          kernelName, split->first, split->second, wanted, blockThreads,
          localMemory.registers, blockThreads * localMemory.registers));
  }
  // What ptxas reports that makes a kernel slower but not wrong: a warning
  // naming the kernel, or a refusal when `strictVariable` is set.
  std::string described = params.empty() ? std::string("default parameters")
                                         : llvm::join(params, ",");
  auto reportOrRefuse = [&](const std::string &message,
                            const char *strictVariable) -> llvm::Error {
    if (isStrict(strictVariable))
      return makeReproducibleCompileError(
          message + " (refused: " + strictVariable + " is set)");
    reportLine("hisa: warning: " + message);
    return llvm::Error::success();
  };
  // ptxas ran every wgmma alone (a wait after each): correct but several
  // times slower on the tensor cores.
  if (!localMemory.wgmmaSerialized.empty())
    if (llvm::Error error = reportOrRefuse(
            formatv("kernel '{0}' ({1}): ptxas reports that its {2}",
                    kernelName, described, localMemory.wgmmaSerialized),
            "HISA_STRICT_WGMMA"))
      return std::move(error);
  // ptxas waited for a wgmma earlier than the kernel does (a use of its
  // registers before the covering wait, e.g. copies at a loop's phi): what
  // the asynchronous gemm was to overlap runs after it instead.
  if (!localMemory.wgmmaWaitInjected.empty())
    if (llvm::Error error = reportOrRefuse(
            formatv("kernel '{0}' ({1}): ptxas reports that a {2}; the "
                    "work meant to overlap that wgmma waits for it",
                    kernelName, described, localMemory.wgmmaWaitInjected),
            "HISA_STRICT_WGMMA"))
      return std::move(error);
  // Per-thread local memory: a tile.local indexed by a run-time value (the
  // array cannot live in registers) or register spills. The kernel works,
  // slower.
  if (localMemory.stackFrameBytes > 0)
    if (llvm::Error error = reportOrRefuse(
            formatv("kernel '{0}' ({1}) keeps {2} bytes per thread in local "
                    "memory ({3} bytes of it register spills): a tile.local "
                    "indexed by a run-time value, or more live values than "
                    "registers; every access to it goes through the L1 cache",
                    kernelName, described, localMemory.stackFrameBytes,
                    localMemory.spillStoreBytes),
            "HISA_STRICT_LOCAL_MEMORY"))
      return std::move(error);
  metadata.binaryKind = "cubin";
  compiled.binary = std::move(*cubin);
  return compiled;
}
