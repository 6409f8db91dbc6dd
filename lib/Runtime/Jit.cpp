//===- Jit.cpp - Caches, loading and launching of tile kernels ------------===//

#include "hisa/Runtime/Jit.h"

#include "Compiler.h"

#include "hisa/Runtime/CudaDriver.h"
#include "hisa/Runtime/DiskCache.h"
#include "hisa/Runtime/LaunchGraph.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <future>
#include <limits>
#include <link.h>
#include <map>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace llvm;
using namespace hisa::runtime;

namespace {

Error makeError(const Twine &message) {
  return createStringError(std::make_error_code(std::errc::invalid_argument),
                           message);
}

struct BuiltinKernel {
  const char *name;
  const char *source;
};

const BuiltinKernel builtinKernels[] = {
#include "BuiltinKernels.inc"
};

/// At least `bytes` zero bytes of device memory in the current context: what
/// the tensor map of an empty tensor points at (a map cannot describe zero
/// elements; one zero row reads the same as nothing, zero-filled). Buffers
/// are never freed: a launch still in flight may read an outgrown one. The
/// JIT gets it when it loads a kernel with tensor maps, so that launches
/// never allocate (they may be captured into a CUDA graph).
Expected<void *> getZeroBuffer(CudaDriver &driver, uint64_t bytes) {
  static std::mutex mutex;
  static DenseMap<CUcontext, std::pair<CUdeviceptr, uint64_t>> buffers;
  CUcontext context = nullptr;
  if (Error error =
          checkCuda(driver.ctxGetCurrent(&context), "cuCtxGetCurrent"))
    return std::move(error);
  std::lock_guard<std::mutex> lock(mutex);
  auto &[buffer, size] = buffers[context];
  if (size < bytes) {
    uint64_t grown = std::max<uint64_t>(bytes, 4096);
    CUdeviceptr fresh = 0;
    if (Error error = checkCuda(driver.memAlloc(&fresh, grown), "cuMemAlloc"))
      return std::move(error);
    if (driver.memsetD8Async) {
      // Zeroed on a private non-blocking stream: a copy on the legacy
      // stream would synchronize with another thread's capturing stream.
      CUstream own = nullptr;
      if (Error error =
              checkCuda(driver.streamCreate(&own, CU_STREAM_NON_BLOCKING),
                        "cuStreamCreate"))
        return std::move(error);
      Error error = checkCuda(driver.memsetD8Async(fresh, 0, grown, own),
                              "cuMemsetD8Async");
      if (!error)
        error = checkCuda(driver.streamSynchronize(own), "cuStreamSynchronize");
      consumeError(checkCuda(driver.streamDestroy(own), "cuStreamDestroy"));
      if (error)
        return std::move(error);
    } else {
      std::vector<char> zeros(grown, 0);
      if (Error error = checkCuda(driver.memcpyHtoD(fresh, zeros.data(), grown),
                                  "cuMemcpyHtoD"))
        return std::move(error);
    }
    buffer = fresh;
    size = grown;
  }
  return reinterpret_cast<void *>(buffer);
}

/// Bytes of the zero row the tensor maps of `metadata` may need (one row
/// of the widest map; 16 for 1-D tensors), or 0 without tensor maps.
uint64_t getZeroRowBytes(const KernelMetadata &metadata) {
  uint64_t bytes = 0;
  for (const KernelMetadata::TensorMap &map : metadata.tensorMaps) {
    int64_t row = metadata.arguments[map.argument].shape.back();
    bytes = std::max<uint64_t>(
        bytes, std::max<int64_t>(16, row > 0 ? row * map.elementBytes : 16));
  }
  return bytes;
}

/// Encodes the tensor map `map` of `kernel` for the tensor `given` (whose
/// sizes, data pointer and alignment the caller has checked); an empty
/// tensor reads `zeroRow` (getZeroRowBytes of device zeros).
Error encodeTensorMap(CudaDriver &driver, const KernelMetadata::TensorMap &map,
                      const LaunchArgument &given,
                      function_ref<std::string()> what, StringRef kernel,
                      void *zeroRow, CUtensorMap &encoded) {
  if (!driver.tensorMapEncodeTiled)
    return makeError(formatv("kernel '{0}' reads {1} through TMA, but the "
                             "CUDA driver has no cuTensorMapEncodeTiled "
                             "(CUDA 12 or newer is needed)",
                             kernel, what()));
  size_t rank = given.sizes.size();
  if (map.box.size() != rank || rank > 5)
    return makeError(formatv("{0}: the kernel's tensor map has rank {1}, the "
                             "tensor {2}",
                             what(), map.box.size(), rank));
  void *address = given.data;
  SmallVector<int64_t, 8> extents(given.sizes);
  if (llvm::is_contained(extents, 0)) {
    // One row of zeros: strides stay multiples of 16 bytes.
    for (int64_t &extent : MutableArrayRef<int64_t>(extents).drop_back())
      extent = 1;
    if (extents.back() == 0)
      extents.back() = std::max<int64_t>(1, 16 / map.elementBytes);
    if (!zeroRow)
      return makeError(what() + ": no zero row was allocated for the kernel");
    address = zeroRow;
  }
  // Innermost first; strides in bytes for every dimension but the innermost.
  cuuint64_t sizes[5], strides[4];
  cuuint32_t box[5], elementStrides[5];
  uint64_t stride = map.elementBytes;
  for (size_t i = 0; i < rank; ++i) {
    int64_t size = extents[rank - 1 - i];
    // Box coordinates are signed 32-bit.
    if (size > std::numeric_limits<int32_t>::max())
      return makeError(formatv("{0}: dimension {1} is {2}, more than TMA "
                               "coordinates (32-bit) reach; compile for "
                               "target 'sm_90a,-tma' to stage it with "
                               "cp.async",
                               what(), rank - 1 - i, size));
    sizes[i] = static_cast<cuuint64_t>(size);
    box[i] = static_cast<cuuint32_t>(map.box[rank - 1 - i]);
    elementStrides[i] = 1;
    if (i > 0)
      strides[i - 1] = stride;
    stride *= sizes[i];
  }
  CUtensorMapDataType type;
  switch (map.elementBytes) {
  case 1:
    type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
    break;
  case 2:
    type = CU_TENSOR_MAP_DATA_TYPE_UINT16;
    break;
  case 4:
    type = CU_TENSOR_MAP_DATA_TYPE_UINT32;
    break;
  case 8:
    type = CU_TENSOR_MAP_DATA_TYPE_UINT64;
    break;
  default:
    return makeError(formatv("{0}: no TMA element type of {1} bytes", what(),
                             map.elementBytes));
  }
  CUtensorMapSwizzle swizzle;
  switch (map.swizzleBytes) {
  case 0:
    swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
    break;
  case 32:
    swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
    break;
  case 64:
    swizzle = CU_TENSOR_MAP_SWIZZLE_64B;
    break;
  case 128:
    swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
    break;
  default:
    return makeError(
        formatv("{0}: no TMA swizzle of {1} bytes", what(), map.swizzleBytes));
  }
  // Boxes outside the tensor read zeros (FLOAT_OOB_FILL_NONE), as tile.copy
  // requires.
  CUresult result = driver.tensorMapEncodeTiled(
      &encoded, type, static_cast<cuuint32_t>(rank), address, sizes, strides,
      box, elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result == CUDA_SUCCESS)
    return Error::success();
  return checkCuda(result, "cuTensorMapEncodeTiled for " + what(), kernel);
}

/// hisa_set_device_pointer_checks (hisa_runtime.h).
std::atomic<bool> devicePointerChecks{true};
/// TrustedPointersScope: this thread's launches skip the queries.
thread_local bool trustedPointers = false;

/// setProgrammaticLaunch / hisa_set_programmatic_launch; HISA_PDL=0 in the
/// environment when the library loads turns it off (a debugging aid: every
/// launch then waits for the previous kernel to finish before its blocks
/// are scheduled).
bool programmaticLaunchByDefault() {
  const char *value = std::getenv("HISA_PDL");
  return !(value && StringRef(value) == "0");
}
std::atomic<bool> programmaticLaunchEnabled{programmaticLaunchByDefault()};
bool programmaticLaunch() {
  return programmaticLaunchEnabled.load(std::memory_order_relaxed);
}

/// A kernel loaded into one CUDA context. Modules, functions and device
/// memory belong to the context they were made in, so a process that drives
/// several GPUs (one primary context each) loads every kernel into each.
struct ContextModule {
  CUcontext context;
  LoadedModule module;
  CUfunction function;
  void *zeroRow; // what empty tensors' tensor maps read (getZeroBuffer)
};

/// The largest tensor a launch accepts (docs/design.md, Limits).
constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 48;

class LoadedKernelImpl : public LoadedKernel {
public:
  explicit LoadedKernelImpl(std::shared_ptr<CompiledKernel> compiled)
      : compiled(std::move(compiled)) {}

  const KernelMetadata &getMetadata() const override {
    return compiled->metadata;
  }

  /// The kernel in the current context (the primary context of device 0
  /// made current if there is none), loaded there on first use; refused
  /// if that would happen while `stream` (if given) is being captured.
  Expected<const ContextModule *> getModule(CudaDriver &driver,
                                            CUstream stream = nullptr);

  Error launch(ArrayRef<LaunchArgument> arguments, void *stream) override;

private:
  std::shared_ptr<CompiledKernel> compiled;
  /// Loads (owned by `modules`) take the mutex; launches read `published`
  /// without it: threads driving different GPUs do not contend.
  static constexpr size_t kMaxPublished = 64;
  std::mutex modulesMutex;
  std::vector<std::unique_ptr<ContextModule>> modules;
  std::array<std::atomic<const ContextModule *>, kMaxPublished> published{};
  std::atomic<size_t> publishedCount{0};
  /// Each tensor map's recent encodings and the tensors they were encoded
  /// for: repeated launches on the same buffers (an orchestration layer's
  /// steps, where one specialization serves a few buffers) reuse them
  /// instead of calling cuTensorMapEncodeTiled again (a map depends on
  /// nothing but the tensor's address and sizes and the kernel's map,
  /// which is fixed, and for an empty tensor the context's zero row).
  static constexpr size_t kRecentMaps = 8;
  struct EncodedMap {
    void *address = nullptr;
    void *zeroRow = nullptr;
    SmallVector<int64_t, 5> sizes;
    CUtensorMap map;
  };
  struct RecentMaps {
    // std::vector: CUtensorMap is over-aligned (64-128 bytes), which
    // SmallVector's heap storage does not guarantee; aligned new does.
    std::vector<EncodedMap> entries;
    size_t next = 0; ///< the entry a new encoding replaces once full
  };
  std::mutex recentMapsMutex;
  std::vector<RecentMaps> recentMaps;
};

Expected<const ContextModule *> LoadedKernelImpl::getModule(CudaDriver &driver,
                                                            CUstream stream) {
  // The current context; with none, device 0's primary one made current
  // (asked once per operator call or layer step: CurrentContextScope).
  Expected<CUcontext> current = driver.ensureContext();
  if (!current)
    return current.takeError();
  CUcontext context = *current;
  // (A context destroyed and another created at its address would be
  // taken for it: hisa assumes contexts outlive the kernels it loads, as
  // primary contexts, retained by torch or by ensureContext, do.)
  size_t count = publishedCount.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i) {
    const ContextModule *loaded = published[i].load(std::memory_order_relaxed);
    if (loaded->context == context)
      return loaded;
  }
  std::lock_guard<std::mutex> lock(modulesMutex);
  for (const std::unique_ptr<ContextModule> &loaded : modules)
    if (loaded->context == context)
      return loaded.get();
  const KernelMetadata &metadata = compiled->metadata;
  // Loading (and the zero row's allocation and copy) is not a stream
  // operation a graph can hold: inside a capture it would invalidate it.
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (stream && driver.streamIsCapturing &&
      driver.streamIsCapturing(stream, &capture) == CUDA_SUCCESS &&
      capture != CU_STREAM_CAPTURE_STATUS_NONE)
    return makeError(formatv(
        "kernel '{0}' is launched for the first time in this CUDA context "
        "while its stream is being captured into a graph; loading it then "
        "would break the capture: launch it (or call its operator) once on "
        "this device before capturing",
        metadata.kernelName));
  // Another thread may be capturing a graph in the global mode, where a
  // module load or an allocation from any thread would invalidate its
  // capture: this thread loads in the relaxed mode (restored after).
  RelaxedCaptureScope relaxed(driver);
  Expected<LoadedModule> module =
      LoadedModule::load(driver, compiled->binary, metadata.kernelName);
  if (!module)
    return module.takeError();
  Expected<CUfunction> function = module->getFunction(
      metadata.kernelName, static_cast<unsigned>(metadata.sharedBytes));
  if (!function)
    return function.takeError();
  void *zeroRow = nullptr;
  if (uint64_t bytes = getZeroRowBytes(metadata)) {
    Expected<void *> zeros = getZeroBuffer(driver, bytes);
    if (!zeros)
      return zeros.takeError();
    zeroRow = *zeros;
  }
  modules.push_back(std::make_unique<ContextModule>(
      ContextModule{context, std::move(*module), *function, zeroRow}));
  size_t slot = publishedCount.load(std::memory_order_relaxed);
  if (slot < kMaxPublished) {
    published[slot].store(modules.back().get(), std::memory_order_relaxed);
    publishedCount.store(slot + 1, std::memory_order_release);
  }
  return modules.back().get();
}

Error LoadedKernelImpl::launch(ArrayRef<LaunchArgument> arguments,
                               void *stream) {
  const KernelMetadata &metadata = getMetadata();
  const std::string &kernel = metadata.kernelName;
  if (arguments.size() != metadata.arguments.size())
    return makeError(formatv("kernel '{0}' takes {1} arguments, got {2}",
                             kernel, metadata.arguments.size(),
                             arguments.size()));
  Expected<CudaDriver &> driver = CudaDriver::get();
  if (!driver)
    return driver.takeError();
  Expected<const ContextModule *> loaded =
      getModule(*driver, static_cast<CUstream>(stream));
  if (!loaded)
    return loaded.takeError();
  const ContextModule &module = **loaded;

  // Kernel parameters: one 8-byte slot per scalar and per memref field.
  SmallVector<uint64_t, 64> slots;
  SmallVector<SmallVector<int64_t, 8>, 16> sizes;
  for (auto [i, given] : llvm::enumerate(arguments)) {
    const KernelMetadata::Argument &expected = metadata.arguments[i];
    // Built on error only: launches are on the host's critical path.
    auto what = [&, i = i]() {
      return formatv("kernel '{0}' argument '{1}' (#{2})", kernel,
                     expected.name, i)
          .str();
    };
    if (given.kind != expected.kind)
      return makeError(what() + ": expected a " +
                       (expected.kind == KernelMetadata::Argument::Tensor
                            ? "tensor"
                            : "scalar"));
    if (expected.kind != KernelMetadata::Argument::Tensor) {
      sizes.push_back({given.intValue});
      uint64_t slot = 0;
      if (expected.kind == KernelMetadata::Argument::Int) {
        // A narrower integer gets the value's low bits: refuse one that does
        // not fit (signed or unsigned) instead of passing another number.
        unsigned bits = expected.scalarBits;
        if (bits < 64 && (given.intValue < -(int64_t(1) << (bits - 1)) ||
                          given.intValue > (int64_t(1) << bits) - 1))
          return makeError(formatv("{0}: {1} does not fit the kernel's "
                                   "{2}-bit integer",
                                   what(), given.intValue, bits));
        slot = static_cast<uint64_t>(given.intValue);
      } else if (expected.scalarBits == 32) {
        float value = static_cast<float>(given.floatValue);
        std::memcpy(&slot, &value, sizeof(value));
      } else {
        std::memcpy(&slot, &given.floatValue, sizeof(double));
      }
      slots.push_back(slot);
      continue;
    }
    if (given.sizes.size() != expected.shape.size())
      return makeError(formatv("{0}: expected rank {1}, got {2}", what(),
                               expected.shape.size(), given.sizes.size()));
    // Whether the tensor has elements, and that its bytes stay within
    // 2^48 (docs/design.md, Limits): the kernel's byte offsets are int64 and
    // a product that wrapped would skip the pointer checks below.
    uint64_t bytes = std::max<unsigned>(expected.elementBytes, 1);
    bool empty = false, tooLarge = false;
    for (auto [d, size] : llvm::enumerate(given.sizes)) {
      if (size < 0)
        return makeError(formatv("{0}: negative size {1} in dimension {2}",
                                 what(), size, d));
      if (expected.shape[d] >= 0 && expected.shape[d] != size)
        return makeError(formatv(
            "{0}: dimension {1} is {2} but the kernel was specialized for {3}",
            what(), d, size, expected.shape[d]));
      if (metadata.int32Sizes && size > INT32_MAX)
        return makeError(formatv("{0}: dimension {1} is {2}, but the kernel "
                                 "was compiled with +narrow-indices for "
                                 "sizes below 2^31",
                                 what(), d, size));
      empty |= size == 0;
      if (!empty && !tooLarge &&
          (__builtin_mul_overflow(bytes, static_cast<uint64_t>(size), &bytes) ||
           bytes > kMaxTensorBytes))
        tooLarge = true;
    }
    if (!empty && tooLarge)
      return makeError(
          formatv("{0}: a tensor of sizes [{1}] is larger than "
                  "2^48 bytes",
                  what(),
                  llvm::join(llvm::map_range(
                                 given.sizes,
                                 [](int64_t s) { return std::to_string(s); }),
                             ", ")));
    if (!empty) {
      if (!given.data)
        return makeError(what() + ": null data pointer");
      if (reinterpret_cast<uintptr_t>(given.data) % expected.alignment != 0)
        return makeError(formatv("{0}: data pointer must be {1}-byte aligned",
                                 what(), expected.alignment));
      if (!trustedPointers &&
          devicePointerChecks.load(std::memory_order_relaxed))
        if (Error error =
                driver->checkDevicePointer(given.data, expected.name, kernel))
          return error;
    }
    sizes.push_back(given.sizes);
    // Memref descriptor: allocated, aligned, offset, sizes, strides.
    uint64_t pointer = reinterpret_cast<uint64_t>(given.data);
    slots.push_back(pointer);
    slots.push_back(pointer);
    slots.push_back(0);
    for (int64_t size : given.sizes)
      slots.push_back(static_cast<uint64_t>(size));
    // Row-major contiguous strides.
    SmallVector<int64_t, 8> strides(given.sizes.size(), 1);
    for (int64_t d = static_cast<int64_t>(given.sizes.size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * given.sizes[d + 1];
    for (int64_t stride : strides)
      slots.push_back(static_cast<uint64_t>(stride));
  }
  Expected<std::array<int64_t, 3>> grid = metadata.evaluateGrid(sizes);
  if (!grid)
    return grid.takeError();
  std::array<unsigned, 3> blocks;
  static constexpr int64_t limits[] = {2147483647, 65535, 65535};
  for (int d = 0; d < 3; ++d) {
    if ((*grid)[d] < 0)
      return makeError(formatv("kernel '{0}': grid dimension {1} evaluates to "
                               "{2} for these sizes (the grid arithmetic "
                               "overflowed)",
                               kernel, d, (*grid)[d]));
    if ((*grid)[d] == 0)
      return Error::success(); // nothing to do
    if ((*grid)[d] > limits[d])
      return makeError(formatv("kernel '{0}': grid dimension {1} is {2}, over "
                               "the limit {3}",
                               kernel, d, (*grid)[d], limits[d]));
    blocks[d] = static_cast<unsigned>((*grid)[d]);
  }
  // The driver would refuse it with a bare CUDA_ERROR_INVALID_VALUE.
  if ((*grid)[0] % metadata.clusterBlocks != 0)
    return makeError(formatv("kernel '{0}': the grid's x extent {1} is not a "
                             "multiple of its cluster of {2} blocks",
                             kernel, (*grid)[0], metadata.clusterBlocks));
  SmallVector<void *, 64> params;
  for (uint64_t &slot : slots)
    params.push_back(&slot);
  // Tensor maps go by value (128 bytes each, 64-byte aligned) after the
  // arguments.
  std::vector<CUtensorMap> tensorMaps(metadata.tensorMaps.size()); // aligned
  for (size_t index = 0; index < tensorMaps.size(); ++index) {
    const KernelMetadata::TensorMap &map = metadata.tensorMaps[index];
    CUtensorMap &encoded = tensorMaps[index];
    if (map.argument >= arguments.size())
      return makeError(formatv("kernel '{0}': a tensor map names argument "
                               "#{1}, which it does not have",
                               kernel, map.argument));
    auto what = [&]() {
      return formatv("kernel '{0}' argument '{1}' (#{2})", kernel,
                     metadata.arguments[map.argument].name, map.argument)
          .str();
    };
    const LaunchArgument &given = arguments[map.argument];
    ArrayRef<int64_t> givenSizes(given.sizes);
    bool reused = false;
    {
      std::lock_guard<std::mutex> lock(recentMapsMutex);
      recentMaps.resize(metadata.tensorMaps.size());
      for (const EncodedMap &recent : recentMaps[index].entries)
        if (recent.address == given.data && recent.zeroRow == module.zeroRow &&
            ArrayRef<int64_t>(recent.sizes) == givenSizes) {
          encoded = recent.map;
          reused = true;
          break;
        }
    }
    if (!reused) {
      if (Error error = encodeTensorMap(*driver, map, given, what, kernel,
                                        module.zeroRow, encoded))
        return error;
      std::lock_guard<std::mutex> lock(recentMapsMutex);
      RecentMaps &recent = recentMaps[index];
      EncodedMap entry{given.data, module.zeroRow,
                       SmallVector<int64_t, 5>(givenSizes), encoded};
      if (recent.entries.size() < kRecentMaps) {
        recent.entries.push_back(std::move(entry));
      } else {
        recent.entries[recent.next] = std::move(entry);
        recent.next = (recent.next + 1) % kRecentMaps;
      }
    }
    params.push_back(&encoded);
  }
  bool programmatic = metadata.waitsForPrerequisiteGrids && programmaticLaunch();
  if (GraphLaunchScope *graph = activeGraphLaunchScope()) {
    RecordedLaunch launch;
    launch.function = module.function;
    launch.grid = blocks;
    launch.block = {static_cast<unsigned>(metadata.threads), 1, 1};
    launch.sharedBytes = static_cast<unsigned>(metadata.sharedBytes);
    launch.programmatic = programmatic;
    launch.slots = std::move(slots);
    launch.tensorMaps = std::move(tensorMaps);
    launch.kernelName = kernel.c_str();
    return graph->record(std::move(launch), static_cast<CUstream>(stream));
  }
  return driver->launch(
      module.function, blocks, {static_cast<unsigned>(metadata.threads), 1, 1},
      static_cast<unsigned>(metadata.sharedBytes),
      static_cast<CUstream>(stream), params.data(), kernel, programmatic);
}

} // namespace

LoadedKernel::~LoadedKernel() = default;

bool hisa::runtime::setProgrammaticLaunch(bool enabled) {
  return programmaticLaunchEnabled.exchange(enabled);
}

bool hisa::runtime::setDevicePointerChecks(bool enabled) {
  return devicePointerChecks.exchange(enabled);
}

Error hisa::runtime::checkDevicePointers(
    StringRef op, ArrayRef<std::pair<const char *, const void *>> pointers) {
  if (trustedPointers || !devicePointerChecks.load(std::memory_order_relaxed))
    return Error::success();
  Expected<CudaDriver &> driver = CudaDriver::get();
  if (!driver)
    return driver.takeError();
  for (auto [name, pointer] : pointers)
    if (pointer)
      if (Error error = driver->checkDevicePointer(pointer, name, op))
        return error;
  return Error::success();
}

hisa::runtime::TrustedPointersScope::TrustedPointersScope()
    : previous(trustedPointers) {
  trustedPointers = true;
}

hisa::runtime::TrustedPointersScope::~TrustedPointersScope() {
  trustedPointers = previous;
}

StringRef hisa::runtime::getBuiltinKernelSource(StringRef name) {
  for (const BuiltinKernel &kernel : builtinKernels)
    if (name == kernel.name)
      return kernel.source;
  return "";
}

char ParameterError::ID = 0;

Expected<std::vector<std::string>>
hisa::runtime::parseParams(StringRef params) {
  std::vector<std::string> entries;
  SmallVector<StringRef> parts;
  params.split(parts, ',', -1, /*KeepEmpty=*/false);
  // A name given twice would leave it to the binder which value wins.
  StringMap<StringRef> given;
  for (StringRef part : parts) {
    auto [name, value] = part.split('=');
    name = name.trim();
    value = value.trim();
    int64_t number;
    if (name.empty() || value.getAsInteger(10, number))
      return makeError("malformed parameter '" + part +
                       "': expected name=integer");
    auto [previous, inserted] = given.try_emplace(name, part.trim());
    if (!inserted)
      return makeError("parameter '" + name + "' is given more than once ('" +
                       previous->second + "' and '" + part.trim() + "')");
    entries.push_back((name + "=" + Twine(number)).str());
  }
  llvm::sort(entries);
  return entries;
}

/// The GNU build ID of the loaded object that holds `address` (a hash of
/// its contents the linker writes), as hex; empty without one.
static std::string findBuildId(const void *address) {
  struct Search {
    uintptr_t address;
    std::string buildId;
  } search{reinterpret_cast<uintptr_t>(address), {}};
  dl_iterate_phdr(
      [](struct dl_phdr_info *info, size_t, void *data) -> int {
        auto &search = *static_cast<Search *>(data);
        bool holds = false;
        for (int i = 0; i < info->dlpi_phnum && !holds; ++i) {
          const ElfW(Phdr) &segment = info->dlpi_phdr[i];
          uintptr_t start = info->dlpi_addr + segment.p_vaddr;
          holds = segment.p_type == PT_LOAD && search.address >= start &&
                  search.address < start + segment.p_memsz;
        }
        if (!holds)
          return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr) &segment = info->dlpi_phdr[i];
          if (segment.p_type != PT_NOTE)
            continue;
          auto *at =
              reinterpret_cast<const char *>(info->dlpi_addr + segment.p_vaddr);
          const char *end = at + segment.p_filesz;
          while (at + sizeof(ElfW(Nhdr)) <= end) {
            auto *note = reinterpret_cast<const ElfW(Nhdr) *>(at);
            // Sizes rounded up in 64 bits and compared with what is left
            // (a damaged note must not wrap them to 0).
            uint64_t nameBytes = (uint64_t(note->n_namesz) + 3) & ~uint64_t(3);
            uint64_t descBytes = (uint64_t(note->n_descsz) + 3) & ~uint64_t(3);
            const char *name = at + sizeof(ElfW(Nhdr));
            if (nameBytes > uint64_t(end - name) ||
                descBytes > uint64_t(end - name) - nameBytes)
              break;
            const char *desc = name + nameBytes;
            const char *next = desc + descBytes;
            if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
                std::memcmp(name, "GNU", 4) == 0) {
              search.buildId = llvm::toHex(StringRef(desc, note->n_descsz),
                                           /*LowerCase=*/true);
              return 1;
            }
            at = next;
          }
        }
        return 1; // the object holding the address has no build ID
      },
      &search);
  return search.buildId;
}

StringRef Jit::getVersion() {
  // A rebuilt runtime must not reuse binaries of an older compiler. The
  // linker's build ID (a hash of the library's contents) identifies the
  // build; without one, the library's size and modification time do
  // (which a reproducible build with fixed timestamps could repeat).
  static std::string version = [] {
    std::string text = "hisa-0.1 llvm-22";
    void *self = reinterpret_cast<void *>(&Jit::getVersion);
    std::string buildId = findBuildId(self);
    if (!buildId.empty())
      return text + " build-" + buildId;
    Dl_info info;
    if (dladdr(self, &info) && info.dli_fname) {
      struct stat status;
      if (::stat(info.dli_fname, &status) == 0)
        text += formatv(" {0}-{1}", static_cast<int64_t>(status.st_size),
                        static_cast<int64_t>(status.st_mtime))
                    .str();
    }
    return text;
  }();
  return version;
}

namespace {
/// Parameters in canonical form, the cache key they give and a readable
/// description of what the key was computed from (stored in the entry, so
/// that a mismatch names both).
struct CacheKey {
  std::vector<std::string> params;
  std::string strictness; // describeStrictness(), part of the digest
  std::string digest;
  std::string description;
};
} // namespace

namespace {
/// What one compilation gave every caller waiting for it: the kernel, or
/// its error, rebuilt for each caller as the same kind.
struct CompileOutcome {
  std::shared_ptr<CompiledKernel> kernel;
  enum Kind { Other, Compile, Parameters } errorKind = Other;
  std::string message;
  /// The request decided the error (CompileError::isReproducible, every
  /// ParameterError): asked again, it fails again.
  bool reproducible = false;

  static CompileOutcome fromError(Error error) {
    CompileOutcome outcome;
    handleAllErrors(
        std::move(error),
        [&](const CompileError &compile) {
          outcome.errorKind = Compile;
          outcome.message = compile.getMessage();
          outcome.reproducible = compile.isReproducible();
        },
        [&](const ParameterError &parameters) {
          outcome.errorKind = Parameters;
          outcome.message = parameters.getMessage();
          outcome.reproducible = true;
        },
        [&](const ErrorInfoBase &other) { outcome.message = other.message(); });
    return outcome;
  }

  Expected<std::shared_ptr<CompiledKernel>> get() const {
    if (kernel)
      return kernel;
    switch (errorKind) {
    case Compile:
      return make_error<CompileError>(message, reproducible);
    case Parameters:
      return make_error<ParameterError>(message);
    case Other:
      break;
    }
    return makeError(message);
  }
};
} // namespace

struct Jit::State {
  explicit State(JitOptions options)
      : options(options),
        disk(options.cacheDirectory ? *options.cacheDirectory
                                    : DiskCache::getDefaultDirectory()) {}

  JitOptions options;
  std::mutex mutex;
  DiskCache disk;
  StringMap<std::shared_ptr<CompiledKernel>> compiled;
  StringMap<std::unique_ptr<LoadedKernelImpl>> loaded;
  /// Compilations under way, by key: a second caller of the same kernel
  /// waits for the first one's result; other kernels compile meanwhile.
  StringMap<std::shared_future<CompileOutcome>> compiling;
  /// Reproducible failures, by key: asked again, the request gets the same
  /// error at once instead of a compilation of seconds that fails again (a
  /// server retrying a call). Bounded: past kMaxRememberedFailures distinct
  /// failing requests, later ones are compiled again each time.
  StringMap<CompileOutcome> failed;
  static constexpr size_t kMaxRememberedFailures = 256;
  CacheStatistics statistics;
  std::atomic<bool> warnedAboutCache{false};

  /// The kernel from the disk cache or freshly compiled and stored there
  /// (binaryPath set, or binaryPathError saying why not); called without
  /// the mutex.
  Expected<std::shared_ptr<CompiledKernel>> findOrCompile(const CacheKey &key,
                                                          StringRef source,
                                                          StringRef kernelName,
                                                          StringRef target);

  double getCompileTimeout() const {
    return options.compileTimeoutSeconds ? *options.compileTimeoutSeconds
                                         : getCompileTimeoutFromEnvironment();
  }
};

static void placeBinary(DiskCache &disk, std::atomic<bool> &warned,
                        CompiledKernel &kernel, const CacheKey &key,
                        const void *owner);

Expected<std::shared_ptr<CompiledKernel>>
Jit::State::findOrCompile(const CacheKey &key, StringRef source,
                          StringRef kernelName, StringRef target) {
  auto kernel = std::make_shared<CompiledKernel>();
  // A disk entry becomes the kernel (a disk hit), unless its metadata does
  // not parse.
  auto serve = [&](DiskCache::Lookup &found) -> Error {
    Expected<KernelMetadata> metadata =
        KernelMetadata::parse(found.entry->metadata);
    if (!metadata)
      return metadata.takeError();
    kernel->metadata = std::move(*metadata);
    kernel->binary = std::move(found.entry->binary);
    kernel->binaryPath = disk.getBinaryPath(key.digest);
    std::lock_guard<std::mutex> lock(mutex);
    ++statistics.diskHits;
    return Error::success();
  };
  DiskCache::Lookup entry = disk.find(key.digest, key.description);
  if (entry) {
    Error unreadable = serve(entry);
    if (!unreadable)
      return kernel;
    entry.outcome = DiskCache::Lookup::Rejected;
    entry.reason = "'" + disk.getMetadataPath(key.digest) +
                   "' holds unreadable metadata (" +
                   toString(std::move(unreadable)) + ")";
  }
  // Other processes (a server's ranks starting together) may be compiling
  // the same kernel: one compiles while the others wait for its entry.
  double limit = getCompileTimeout();
  DiskCache::CompileClaim claim = disk.claimCompile(key.digest, limit);
  // Looked up again also when the claim came at once: its holder may have
  // finished between the miss above and the claim.
  if (claim || claim.waited()) {
    DiskCache::Lookup stored = disk.find(key.digest, key.description);
    if (stored) {
      Error unreadable = serve(stored);
      if (!unreadable)
        return kernel;
      consumeError(std::move(unreadable)); // recompiled and replaced below
    }
  }
  // The time spent waiting for another process's compile counts against
  // this call's limit: a kernel that fails there fails here within it.
  double remaining = limit - claim.waitedSeconds();
  if (claim.waited() && remaining <= 0)
    return make_error<CompileError>(formatv(
        "kernel '{0}': waited the compile time limit ({1} s; "
        "HISA_COMPILE_TIMEOUT_S) for another process compiling it, which "
        "stored no entry",
        kernelName, limit));
  if (entry.outcome == DiskCache::Lookup::Rejected) {
    // Rare (damage, tampering, a copied entry): worth a line on stderr.
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++statistics.rejectedEntries;
    }
    reportLine("hisa: kernel '" + kernelName +
               "': rejected the cached entry: " + entry.reason +
               "; recompiling");
  }
  Expected<CompiledKernel> fresh =
      compileKernel(source, kernelName, key.params, target,
                    claim.waited() ? remaining : limit);
  if (!fresh)
    return fresh.takeError();
  *kernel = std::move(*fresh);
  {
    std::lock_guard<std::mutex> lock(mutex);
    ++statistics.compiles;
  }
  // Stored while the claim is held, so that the processes waiting for it
  // find the entry. (File I/O: without the mutex; the kernel is not
  // published yet.)
  placeBinary(disk, warnedAboutCache, *kernel, key, this);
  return kernel;
}

Jit::Jit(JitOptions options)
    : state(std::make_unique<State>(std::move(options))) {}

Jit &Jit::get() {
  // Never destroyed: kernels outlive static destructors.
  static Jit *jit = new Jit(JitOptions());
  return *jit;
}

CacheStatistics Jit::getStatistics() const {
  std::lock_guard<std::mutex> lock(state->mutex);
  return state->statistics;
}

static Expected<CacheKey> computeCacheKey(StringRef source,
                                          StringRef kernelName,
                                          StringRef params, StringRef target) {
  Expected<std::vector<std::string>> parsed = parseParams(params);
  if (!parsed)
    return parsed.takeError();
  std::string joined = llvm::join(*parsed, ",");
  // Strict and lenient compiles of a kernel ptxas reports as slow differ
  // (refused or not): they do not share an entry.
  std::string strictness = describeStrictness();
  // The ptxas this process compiles with, found once: another process's
  // entries made by another ptxas (or stored as PTX without one) are not
  // its (within a process, a kernel compiled before stays valid).
  static const std::string backend = describeBackend();
  std::string digest =
      DiskCache::computeKey({source, kernelName, joined, target,
                             Jit::getVersion(), strictness, backend});
  return CacheKey{std::move(*parsed), std::move(strictness), std::move(digest),
                  ""};
}

static std::string describeKey(StringRef source, StringRef kernelName,
                               ArrayRef<std::string> params, StringRef target,
                               StringRef strictness) {
  return formatv("kernel={0} params={1} target={2} compiler={3} "
                 "source-sha256={4}{5}",
                 kernelName, llvm::join(params, ","), target, Jit::getVersion(),
                 llvm::toHex(SHA256::hash(arrayRefFromStringRef(source)),
                             /*LowerCase=*/true),
                 strictness.empty() ? "" : (" " + strictness).str())
      .str();
}

/// Whether `path` is a regular file of `size` bytes (a cheap check that a
/// binary handed out before is still there).
static bool isRegularFileOfSize(const std::string &path, uint64_t size) {
  struct stat status;
  return !path.empty() && ::stat(path.c_str(), &status) == 0 &&
         S_ISREG(status.st_mode) &&
         static_cast<uint64_t>(status.st_size) == size;
}

namespace {
/// The private temporary binaries written where the disk cache could not
/// be, by the Jit that wrote them: removed when that Jit is destroyed, and
/// at process exit for the process-wide one (never destroyed), so that
/// processes do not leave them behind in /tmp.
class TemporaryBinaries {
public:
  static TemporaryBinaries &get() {
    // Never destroyed: the exit handler may run after static destructors.
    static TemporaryBinaries *registry = new TemporaryBinaries;
    return *registry;
  }

  void add(const void *owner, std::string path) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!exitHandlerRegistered)
      exitHandlerRegistered = std::atexit(removeAllAtExit) == 0;
    paths[owner].push_back(std::move(path));
  }

  /// Removes the files `owner` wrote.
  void release(const void *owner) {
    std::vector<std::string> owned;
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto found = paths.find(owner);
      if (found == paths.end())
        return;
      owned = std::move(found->second);
      paths.erase(found);
    }
    for (const std::string &path : owned)
      ::unlink(path.c_str());
  }

private:
  static void removeAllAtExit() {
    TemporaryBinaries &registry = get();
    // Another thread may hold the lock at exit; leave the files then.
    std::unique_lock<std::mutex> lock(registry.mutex, std::try_to_lock);
    if (!lock.owns_lock())
      return;
    for (auto &[owner, owned] : registry.paths)
      for (const std::string &path : owned)
        ::unlink(path.c_str());
    registry.paths.clear();
  }

  std::mutex mutex;
  std::map<const void *, std::vector<std::string>> paths;
  bool exitHandlerRegistered = false;
};
} // namespace

Jit::~Jit() { TemporaryBinaries::get().release(state.get()); }

/// Writes `binary` to a fresh private temporary file; returns its path.
static Expected<std::string>
writeTemporaryBinary(const CompiledKernel &kernel) {
  SmallString<256> path;
  int fd = -1;
  std::string prefix = "hisa-" + kernel.metadata.kernelName;
  if (std::error_code error = sys::fs::createTemporaryFile(
          prefix, kernel.metadata.binaryKind == "ptx" ? "ptx" : "cubin", fd,
          path)) {
    SmallString<128> directory;
    sys::path::system_temp_directory(/*ErasedOnReboot=*/true, directory);
    return createStringError(error,
                             "cannot create a temporary file in '%s': %s",
                             directory.c_str(), error.message().c_str());
  }
  raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << kernel.binary;
  os.close();
  if (os.has_error()) {
    std::error_code error = os.error();
    os.clear_error();
    sys::fs::remove(path);
    return createStringError(error, "cannot write '%s': %s", path.c_str(),
                             error.message().c_str());
  }
  return std::string(path);
}

/// Stores `kernel` under `key` in the disk cache and points its binaryPath
/// at the cached binary; if the cache cannot be written, at a private
/// temporary file (saying so once, `warned`); if that fails too, nowhere
/// (binaryPathError says why). Never leaves a path that does not hold the
/// binary. File I/O: called without the state's mutex.
static void placeBinary(DiskCache &disk, std::atomic<bool> &warned,
                        CompiledKernel &kernel, const CacheKey &key,
                        const void *owner) {
  kernel.binaryPath.clear();
  kernel.binaryPathError.clear();
  Error stored =
      disk.store(key.digest, {kernel.binary, kernel.metadata.serialize()},
                 key.description);
  if (!stored) {
    std::string path = disk.getBinaryPath(key.digest);
    // Another process may have replaced it since, with the same contents.
    if (isRegularFileOfSize(path, kernel.binary.size())) {
      kernel.binaryPath = std::move(path);
      return;
    }
    stored = makeError("'" + path + "' does not hold the binary just written");
  }
  std::string cacheError = toString(std::move(stored));
  Expected<std::string> temporary = writeTemporaryBinary(kernel);
  if (!temporary) {
    kernel.binaryPathError = "cannot write the kernel cache (" + cacheError +
                             ") nor a temporary file (" +
                             toString(temporary.takeError()) + ")";
    // Said once a process: with a full disk every compile (and every later
    // request of a kernel without a file) gets here. The kernel's own
    // binaryPathError tells a caller that asks for its path.
    static std::atomic<bool> reportedNowhere{false};
    if (!reportedNowhere.exchange(true))
      reportLine("hisa: kernel '" + kernel.metadata.kernelName +
                 "': " + kernel.binaryPathError +
                 " (kernels still load from memory; not repeated for others)");
    return;
  }
  kernel.binaryPath = std::move(*temporary);
  TemporaryBinaries::get().add(owner, kernel.binaryPath);
  if (!warned.exchange(true)) {
    reportLine("hisa: cannot write the kernel cache (" + cacheError +
               "); compiled kernels go to private temporary files instead "
               "(e.g. " +
               kernel.binaryPath + ") and are recompiled by every process");
  }
}

Expected<std::shared_ptr<CompiledKernel>> Jit::compile(StringRef source,
                                                       StringRef kernelName,
                                                       StringRef params,
                                                       StringRef target) {
  Expected<CacheKey> key = computeCacheKey(source, kernelName, params, target);
  if (!key)
    return key.takeError();
  key->description =
      describeKey(source, kernelName, key->params, target, key->strictness);
  std::unique_lock<std::mutex> lock(state->mutex);
  auto found = state->compiled.find(key->digest);
  if (found != state->compiled.end()) {
    std::shared_ptr<CompiledKernel> cached = found->second;
    lock.unlock();
    // The file handed out before may have been removed or replaced since.
    // Checked and placed again without the lock (file I/O, which may block
    // on a slow or full disk, must not stall other kernels' callers), in a
    // copy: other threads may be reading the old one.
    if (isRegularFileOfSize(cached->binaryPath, cached->binary.size()))
      return cached;
    auto replaced = std::make_shared<CompiledKernel>(*cached);
    placeBinary(state->disk, state->warnedAboutCache, *replaced, *key,
                state.get());
    lock.lock();
    std::shared_ptr<CompiledKernel> &entry = state->compiled[key->digest];
    // Another caller may have placed it meanwhile: theirs stays.
    if (entry == cached)
      entry = std::move(replaced);
    return entry;
  }
  auto remembered = state->failed.find(key->digest);
  if (remembered != state->failed.end()) {
    ++state->statistics.rememberedFailures;
    return remembered->second.get();
  }
  auto underWay = state->compiling.find(key->digest);
  if (underWay != state->compiling.end()) {
    std::shared_future<CompileOutcome> result = underWay->second;
    lock.unlock();
    const CompileOutcome &outcome = result.get();
    if (outcome.kernel) {
      // Served from memory (another caller's compilation), as a hit.
      std::lock_guard<std::mutex> counted(state->mutex);
      ++state->statistics.memoryHits;
    }
    return outcome.get();
  }
  // This caller compiles; later callers of the key wait for its result.
  std::promise<CompileOutcome> promise;
  state->compiling[key->digest] = promise.get_future().share();
  lock.unlock();

  // Without the lock: the disk cache serves several processes at once, and
  // a compilation takes seconds that other kernels' callers need not wait.
  Expected<std::shared_ptr<CompiledKernel>> kernel =
      state->findOrCompile(*key, source, kernelName, target);
  CompileOutcome outcome = kernel
                               ? CompileOutcome{*kernel}
                               : CompileOutcome::fromError(kernel.takeError());
  lock.lock();
  if (outcome.kernel) {
    state->compiled[key->digest] = outcome.kernel;
  } else {
    ++state->statistics.failedCompiles;
    if (outcome.reproducible &&
        state->failed.size() < State::kMaxRememberedFailures)
      state->failed[key->digest] = outcome;
  }
  state->compiling.erase(key->digest);
  lock.unlock();
  promise.set_value(outcome);
  return outcome.get();
}

Expected<LoadedKernel *> Jit::getKernel(StringRef source, StringRef kernelName,
                                        StringRef params, StringRef target,
                                        void *stream) {
  Expected<CacheKey> key = computeCacheKey(source, kernelName, params, target);
  if (!key)
    return key.takeError();
  LoadedKernelImpl *kernel = nullptr;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    auto found = state->loaded.find(key->digest);
    if (found != state->loaded.end())
      kernel = found->second.get();
  }
  bool memoryHit = kernel != nullptr;
  if (!kernel) {
    Expected<std::shared_ptr<CompiledKernel>> compiled =
        compile(source, kernelName, params, target);
    if (!compiled)
      return compiled.takeError();
    std::lock_guard<std::mutex> lock(state->mutex);
    std::unique_ptr<LoadedKernelImpl> &entry = state->loaded[key->digest];
    if (!entry)
      entry = std::make_unique<LoadedKernelImpl>(*compiled);
    kernel = entry.get();
  }
  // Loaded into the current context now, so that what the driver refuses
  // (a binary for another chip, too much shared memory) surfaces here.
  Expected<CudaDriver &> driver = CudaDriver::get();
  if (!driver)
    return driver.takeError();
  if (Expected<const ContextModule *> module =
          kernel->getModule(*driver, static_cast<CUstream>(stream));
      !module)
    return module.takeError();
  if (memoryHit) {
    std::lock_guard<std::mutex> lock(state->mutex);
    ++state->statistics.memoryHits;
  }
  return kernel;
}
