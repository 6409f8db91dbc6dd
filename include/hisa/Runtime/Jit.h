//===- Jit.h - Compile, cache, load and launch tile kernels -----*- C++ -*-===//
//
// The C++ side of the JIT driver: DSL source + kernel name + parameters +
// target -> PTX -> cubin (ptxas), cached on disk and in memory, loaded with
// the CUDA driver and launched with arguments packed for the kernel ABI of
// convert-tile-to-gpu. hisa_runtime.h is the C ABI over it.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_RUNTIME_JIT_H
#define HISA_RUNTIME_JIT_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hisa::runtime {

/// A kernel that failed to compile (the message carries the diagnostics),
/// as opposed to a bad request (unknown kernel, malformed parameters).
/// Reproducible: the request itself decides the failure (the compiler or
/// ptxas rejected the kernel with these parameters, target and strictness),
/// so the same request fails the same way again; not: the machine's state
/// did (a time limit, a temporary file, a ptxas that could not run).
class CompileError : public llvm::ErrorInfo<CompileError> {
public:
  static char ID;
  explicit CompileError(std::string message, bool reproducible = false)
      : message(std::move(message)), reproducible(reproducible) {}
  const std::string &getMessage() const { return message; }
  bool isReproducible() const { return reproducible; }
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }

private:
  std::string message;
  bool reproducible;
};

/// A request whose specialization parameters the kernel refuses (a value
/// out of range, an unknown name, a size too large...): the caller's
/// mistake, reported like other invalid arguments. The message carries the
/// diagnostics.
class ParameterError : public llvm::ErrorInfo<ParameterError> {
public:
  static char ID;
  explicit ParameterError(std::string message) : message(std::move(message)) {}
  const std::string &getMessage() const { return message; }
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override {
    return std::make_error_code(std::errc::invalid_argument);
  }

private:
  std::string message;
};

/// What the host must know about a compiled kernel, stored next to its
/// binary in the disk cache (see KernelMetadata::serialize for the format).
struct KernelMetadata {
  struct Argument {
    enum Kind { Tensor, Int, Float } kind = Tensor;
    std::string name;        // "arg3" when the source gives none
    std::string elementType; // tensors: f32, f8E4M3FN, i32...
    unsigned elementBytes = 0;
    std::vector<int64_t> shape; // -1 for sizes given at launch
    unsigned alignment = 1;     // bytes the data pointer must be aligned to
    unsigned scalarBits = 64;   // Int/Float scalars
  };
  /// Integer grid arithmetic: each instruction defines one value.
  struct Instruction {
    std::string op; // const, dim, or an arith op name (addi, ceildivui...)
    int64_t a = 0, b = 0; // operand value ids, or (arg, dim) for dim
    int64_t immediate = 0;
    unsigned bits = 64;
  };
  /// The instructions' operations, decoded from `op` with one StringSwitch
  /// (evaluateGrid runs on every launch: no chain of string compares).
  enum class Opcode : uint8_t {
    Arg,
    Const,
    Dim,
    Cast,
    CastUI,
    AddI,
    SubI,
    MulI,
    DivSI,
    DivUI,
    CeilDivUI,
    CeilDivSI,
    FloorDivSI,
    RemSI,
    RemUI,
    MinSI,
    MaxSI,
    MinUI,
    MaxUI,
    AndI,
    OrI,
    XOrI,
    ShLI,
    ShRUI,
    ShRSI,
    Unknown
  };
  static Opcode decodeOpcode(llvm::StringRef op);

  /// A tensor map the kernel takes after its arguments (TMA copies): the
  /// host encodes it at launch for the argument's address and sizes.
  struct TensorMap {
    unsigned argument = 0; // index into `arguments` (a tensor)
    unsigned elementBytes = 0;
    int64_t swizzleBytes = 0; // 0, 32, 64 or 128
    std::vector<int64_t> box; // extents, outermost first, one per dimension
  };

  std::string kernelName;
  std::string binaryKind; // "cubin" or "ptx"
  int64_t threads = 0;
  int64_t sharedBytes = 0;
  std::vector<Argument> arguments;
  std::vector<TensorMap> tensorMaps;
  std::vector<Instruction> program;
  std::vector<int64_t> gridValues; // value ids of the grid extents
  /// The kernel waits for its prerequisite grids (griddepcontrol.wait)
  /// before it touches memory, so it may be launched as a programmatic
  /// dependent of the previous kernel in its stream.
  bool waitsForPrerequisiteGrids = false;
  /// Compiled with +narrow-indices: every run-time size must be below 2^31
  /// (launches refuse larger ones).
  bool int32Sizes = false;
  /// Blocks per thread-block cluster along x (PTX .reqnctapercluster; 1:
  /// none). The grid's x extent must be a multiple of it.
  int64_t clusterBlocks = 1;

  std::string serialize() const;
  static llvm::Expected<KernelMetadata> parse(llvm::StringRef text);

  /// Evaluates the grid for the runtime sizes of the tensor arguments.
  llvm::Expected<std::array<int64_t, 3>>
  evaluateGrid(llvm::ArrayRef<llvm::SmallVector<int64_t, 8>> sizes) const;
};

/// One launch argument as the caller gives it.
struct LaunchArgument {
  KernelMetadata::Argument::Kind kind;
  void *data = nullptr;
  llvm::SmallVector<int64_t, 8> sizes;
  int64_t intValue = 0;
  double floatValue = 0;
};

struct CompiledKernel {
  KernelMetadata metadata;
  std::string binary;
  /// A file holding `binary`: in the disk cache, or a private temporary
  /// file when the cache cannot be written; empty if neither could be
  /// written (binaryPathError says why).
  std::string binaryPath;
  std::string binaryPathError;
};

struct CacheStatistics {
  int64_t compiles = 0, diskHits = 0, memoryHits = 0;
  /// Disk cache entries found but not served (modified, damaged, stored for
  /// another key, not regular files...) and rebuilt.
  int64_t rejectedEntries = 0;
  /// Compilations that failed, and requests answered with the error of an
  /// earlier one without compiling again (a reproducible CompileError or a
  /// ParameterError of the same request, remembered for the process).
  int64_t failedCompiles = 0, rememberedFailures = 0;
};

/// The JIT's limit on one compilation when HISA_COMPILE_TIMEOUT_S is not set.
inline constexpr double kDefaultCompileTimeoutSeconds = 120;

struct JitOptions {
  /// The disk cache directory; unset: DiskCache::getDefaultDirectory() when
  /// the Jit is created.
  std::optional<std::string> cacheDirectory;
  /// The limit on one compilation, in seconds; unset: HISA_COMPILE_TIMEOUT_S
  /// (a positive number of seconds) as the environment says at each
  /// compilation, else kDefaultCompileTimeoutSeconds.
  std::optional<double> compileTimeoutSeconds;
};

class LoadedKernel;

/// Process-wide JIT with an in-memory cache in front of the disk cache.
/// Thread-safe; several processes may share one cache directory. Kernels
/// compile concurrently (a compilation holds no lock; concurrent callers of
/// one kernel share its one compilation).
class Jit {
public:
  /// The process-wide JIT (default options), never destroyed.
  static Jit &get();

  /// A JIT of its own, with its own caches (tests, tools).
  explicit Jit(JitOptions options);
  ~Jit();

  /// Compiles or finds in a cache; no GPU needed.
  llvm::Expected<std::shared_ptr<CompiledKernel>>
  compile(llvm::StringRef source, llvm::StringRef kernelName,
          llvm::StringRef params, llvm::StringRef target);

  /// Compiles or finds, then loads into the current CUDA context. With the
  /// `stream` (a CUstream) the caller will launch on, loading is refused
  /// while that stream is being captured into a CUDA graph (it would break
  /// the capture).
  llvm::Expected<LoadedKernel *> getKernel(llvm::StringRef source,
                                           llvm::StringRef kernelName,
                                           llvm::StringRef params,
                                           llvm::StringRef target,
                                           void *stream = nullptr);

  CacheStatistics getStatistics() const;

  /// Identifies this compiler build; part of every cache key.
  static llvm::StringRef getVersion();

private:
  struct State;
  std::unique_ptr<State> state;
};

class LoadedKernel {
public:
  virtual ~LoadedKernel();
  virtual const KernelMetadata &getMetadata() const = 0;
  /// Checks the arguments against the signature, computes the grid and
  /// launches on `stream` (a CUstream) in the current CUDA context, loading
  /// the kernel there on its first launch in that context.
  virtual llvm::Error launch(llvm::ArrayRef<LaunchArgument> arguments,
                             void *stream) = 0;
};

/// Source text of a kernel shipped in kernels-dsl/, or empty.
llvm::StringRef getBuiltinKernelSource(llvm::StringRef name);

/// Whether launches check with the driver that each pointer argument is
/// device memory (default: yes); returns the previous setting.
bool setDevicePointerChecks(bool enabled);

/// Whether kernels that wait for their prerequisite grids are launched as
/// programmatic dependents of the previous kernel in their stream (default:
/// yes, unless HISA_PDL=0 when the library loads): their blocks are scheduled
/// while the previous grid's last wave runs. Returns the previous setting.
bool setProgrammaticLaunch(bool enabled);

/// Checks with the driver that each non-null pointer is device memory, as
/// a launch would (and as it, not while device-pointer checks are off or a
/// TrustedPointersScope is alive); the error names the pointer and `op`.
/// Orchestration layers check their arguments once with it, then launch
/// their kernels in a TrustedPointersScope.
llvm::Error checkDevicePointers(
    llvm::StringRef op,
    llvm::ArrayRef<std::pair<const char *, const void *>> pointers);

/// While alive, launches on this thread skip the driver's device-pointer
/// queries: for orchestration layers whose launches read only buffers they
/// allocated or checked once themselves (the V4 layer checks its weights
/// at creation and x and out per call; its ~140 queries a decode step are
/// host time on the critical path). Null pointers and alignment are still
/// checked.
class TrustedPointersScope {
public:
  TrustedPointersScope();
  ~TrustedPointersScope();
  TrustedPointersScope(const TrustedPointersScope &) = delete;
  TrustedPointersScope &operator=(const TrustedPointersScope &) = delete;

private:
  bool previous;
};

/// Parses "a=1,b=2" into sorted "name=value" entries; rejects malformed text
/// and names given more than once.
llvm::Expected<std::vector<std::string>> parseParams(llvm::StringRef params);

} // namespace hisa::runtime

#endif // HISA_RUNTIME_JIT_H
