//===- CudaDriver.cpp - The CUDA driver API, loaded at run time -----------===//

#include "hisa/Runtime/CudaDriver.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstring>

using namespace hisa::runtime;

char CudaError::ID = 0;
char NoDeviceError::ID = 0;

void CudaError::log(llvm::raw_ostream &os) const { os << message; }

std::error_code CudaError::convertToErrorCode() const {
  return llvm::inconvertibleErrorCode();
}

void NoDeviceError::log(llvm::raw_ostream &os) const { os << message; }

std::error_code NoDeviceError::convertToErrorCode() const {
  return llvm::inconvertibleErrorCode();
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

// Every entry point: the member that holds it, the function as cuda.h names
// it, and whether the runtime cannot work without it. The symbol looked up is
// the macro-expanded name, so that it follows the header's versioning
// (cuMemAlloc -> cuMemAlloc_v2) exactly as a program linked to libcuda would.
#define HISA_CUDA_ENTRY_POINTS(X)                                              \
  X(init, cuInit, true)                                                        \
  X(getErrorName, cuGetErrorName, true)                                        \
  X(getErrorString, cuGetErrorString, true)                                    \
  X(deviceGet, cuDeviceGet, true)                                              \
  X(deviceGetAttribute, cuDeviceGetAttribute, true)                            \
  X(ctxGetCurrent, cuCtxGetCurrent, true)                                      \
  X(ctxSetCurrent, cuCtxSetCurrent, true)                                      \
  X(ctxGetDevice, cuCtxGetDevice, true)                                        \
  X(ctxSynchronize, cuCtxSynchronize, true)                                    \
  X(devicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, true)                    \
  X(moduleLoadData, cuModuleLoadData, true)                                    \
  X(moduleLoadDataEx, cuModuleLoadDataEx, false)                               \
  X(moduleUnload, cuModuleUnload, true)                                        \
  X(moduleGetFunction, cuModuleGetFunction, true)                              \
  X(funcSetAttribute, cuFuncSetAttribute, true)                                \
  X(funcGetAttribute, cuFuncGetAttribute, true)                                \
  X(launchKernel, cuLaunchKernel, true)                                        \
  X(launchKernelEx, cuLaunchKernelEx, false)                                   \
  X(streamSynchronize, cuStreamSynchronize, true)                              \
  X(streamIsCapturing, cuStreamIsCapturing, false)                             \
  X(threadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, false) \
  X(memsetD8Async, cuMemsetD8Async, false)                                     \
  X(memAlloc, cuMemAlloc, true)                                                \
  X(memFree, cuMemFree, true)                                                  \
  X(memsetD8, cuMemsetD8, true)                                                \
  X(memcpyHtoD, cuMemcpyHtoD, true)                                            \
  X(memcpyDtoH, cuMemcpyDtoH, true)                                            \
  X(memcpyDtoDAsync, cuMemcpyDtoDAsync, true)                                  \
  X(memcpy2DAsync, cuMemcpy2DAsync, true)                                      \
  X(streamCreate, cuStreamCreate, true)                                        \
  X(streamDestroy, cuStreamDestroy, true)                                      \
  X(streamWaitEvent, cuStreamWaitEvent, true)                                  \
  X(eventCreate, cuEventCreate, true)                                          \
  X(eventDestroy, cuEventDestroy, true)                                        \
  X(eventRecord, cuEventRecord, true)                                          \
  X(pointerGetAttribute, cuPointerGetAttribute, true)                          \
  X(tensorMapEncodeTiled, cuTensorMapEncodeTiled, false)                       \
  X(graphCreate, cuGraphCreate, false)                                         \
  X(graphAddKernelNode, cuGraphAddKernelNode, false)                           \
  X(graphAddDependencies, cuGraphAddDependencies, false)                       \
  X(graphInstantiate, cuGraphInstantiate, false)                               \
  X(graphExecKernelNodeSetParams, cuGraphExecKernelNodeSetParams, false)       \
  X(graphLaunch, cuGraphLaunch, false)                                         \
  X(graphExecDestroy, cuGraphExecDestroy, false)                               \
  X(graphDestroy, cuGraphDestroy, false)

// Two levels, so that the argument is macro-expanded before it is quoted.
#define HISA_EXPANDED_NAME(function) HISA_QUOTE(function)
#define HISA_QUOTE(function) #function

llvm::ArrayRef<const char *> CudaDriver::getSymbolNames() {
#define HISA_SYMBOL_NAME(member, function, required)                           \
  HISA_EXPANDED_NAME(function),
  static const char *const names[] = {HISA_CUDA_ENTRY_POINTS(HISA_SYMBOL_NAME)};
#undef HISA_SYMBOL_NAME
  return names;
}

/// Looks up `symbol` in `library` and stores it in `slot`. A missing required
/// symbol is appended to `missing`.
template <typename FunctionPointer>
static void resolveSymbol(void *library, const char *symbol, bool required,
                          FunctionPointer &slot, std::string &missing) {
  slot = reinterpret_cast<FunctionPointer>(::dlsym(library, symbol));
  if (slot || !required)
    return;
  if (!missing.empty())
    missing += ", ";
  missing += symbol;
}

llvm::Expected<std::unique_ptr<CudaDriver>>
CudaDriver::load(llvm::StringRef libraryName) {
  std::string name = libraryName.str();
  // RTLD_LOCAL: the driver's symbols must not satisfy other libraries' lookups
  // by accident; everything goes through the resolved pointers.
  void *library = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *reason = ::dlerror();
    return llvm::make_error<NoDeviceError>(
        name + " not found: no NVIDIA driver on this machine (dlopen: " +
        (reason ? reason : "unknown error") + ")");
  }

  std::unique_ptr<CudaDriver> driver(new CudaDriver());
  std::string missing;
#define HISA_RESOLVE(member, function, required)                               \
  resolveSymbol(library, HISA_EXPANDED_NAME(function), required,               \
                driver->member, missing);
  HISA_CUDA_ENTRY_POINTS(HISA_RESOLVE)
#undef HISA_RESOLVE
  if (!missing.empty()) {
    ::dlclose(library);
    return llvm::make_error<NoDeviceError>(
        name + " lacks " + missing +
        ": the NVIDIA driver is too old or this is not the CUDA driver");
  }
  driver->library = library;

  if (CUresult result = driver->init(0); result != CUDA_SUCCESS)
    return llvm::make_error<NoDeviceError>(
        "cuInit failed: " + driver->describe(result) +
        "; no usable NVIDIA GPU on this machine");
  return driver;
}

// The process-wide driver, published once get() has succeeded.
static std::atomic<CudaDriver *> loadedDriver{nullptr};

llvm::Expected<CudaDriver &> CudaDriver::get() {
  // The outcome of the first load is kept for the whole process: a missing
  // driver does not appear later, and retrying dlopen on every call would be
  // slow. Both are leaked on purpose (see the class comment).
  static std::once_flag loadOnce;
  static CudaDriver *driver = nullptr;
  static std::string *loadError = nullptr;
  std::call_once(loadOnce, [] {
    llvm::Expected<std::unique_ptr<CudaDriver>> loaded = load("libcuda.so.1");
    if (!loaded) {
      loadError = new std::string(llvm::toString(loaded.takeError()));
      return;
    }
    driver = loaded->release();
    loadedDriver.store(driver, std::memory_order_release);
  });
  if (driver)
    return *driver;
  // load() fails only with NoDeviceErrors.
  return llvm::make_error<NoDeviceError>(*loadError);
}

CudaDriver *CudaDriver::getIfLoaded() {
  return loadedDriver.load(std::memory_order_acquire);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

std::string CudaDriver::describe(CUresult result) const {
  const char *name = nullptr;
  const char *description = nullptr;
  if (getErrorName(result, &name) != CUDA_SUCCESS || !name)
    return "CUDA error " + std::to_string(static_cast<int>(result));
  std::string text = name;
  if (getErrorString(result, &description) == CUDA_SUCCESS && description)
    text += std::string(" (") + description + ")";
  return text;
}

llvm::Error hisa::runtime::checkCuda(CUresult result, llvm::StringRef call,
                                     llvm::StringRef kernelName) {
  if (result == CUDA_SUCCESS)
    return llvm::Error::success();
  std::string message;
  llvm::raw_string_ostream os(message);
  os << call << " failed";
  if (!kernelName.empty())
    os << " for kernel '" << kernelName << "'";
  os << ": ";
  // Without a loaded driver there is nobody to ask for the name; that only
  // happens when the result did not come from the driver (tests).
  if (CudaDriver *driver = CudaDriver::getIfLoaded())
    os << driver->describe(result);
  else
    os << "CUDA error " << static_cast<int>(result);
  return llvm::make_error<CudaError>(result, std::move(message));
}

//===----------------------------------------------------------------------===//
// Contexts, pointers and launches
//===----------------------------------------------------------------------===//

namespace {
/// CurrentContextScope's state on this thread: the scopes alive and the
/// context ensureContext() found inside them (null until asked).
thread_local int contextScopes = 0;
thread_local CUcontext scopedContext = nullptr;
} // namespace

hisa::runtime::CurrentContextScope::CurrentContextScope() { ++contextScopes; }

hisa::runtime::CurrentContextScope::~CurrentContextScope() {
  if (--contextScopes == 0)
    scopedContext = nullptr;
}

llvm::Expected<CUcontext> CudaDriver::ensureContext() {
  if (contextScopes && scopedContext)
    return scopedContext;
  llvm::Expected<CUcontext> context = findOrMakeCurrentContext();
  if (context && contextScopes)
    scopedContext = *context;
  return context;
}

llvm::Expected<CUcontext> CudaDriver::findOrMakeCurrentContext() {
  CUcontext current = nullptr;
  if (llvm::Error error = checkCuda(ctxGetCurrent(&current), "cuCtxGetCurrent"))
    return error;
  if (current)
    return current;

  std::lock_guard<std::mutex> lock(primaryContextMutex);
  if (!primaryContext) {
    // Retained once and never released: releasing the last reference would
    // destroy the context and every module loaded into it.
    CUdevice device = 0;
    if (llvm::Error error = checkCuda(deviceGet(&device, 0), "cuDeviceGet"))
      return error;
    CUcontext retained = nullptr;
    if (llvm::Error error = checkCuda(devicePrimaryCtxRetain(&retained, device),
                                      "cuDevicePrimaryCtxRetain"))
      return error;
    primaryContext = retained;
  }
  if (llvm::Error error =
          checkCuda(ctxSetCurrent(primaryContext), "cuCtxSetCurrent"))
    return error;
  return primaryContext;
}

llvm::Error CudaDriver::usePrimaryContext(int ordinal) {
  scopedContext = nullptr; // the thread's context changes
  if (ordinal < 0 || ordinal >= 1024)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("device ordinal {0} is out of range", ordinal));
  CUcontext context = nullptr;
  {
    std::lock_guard<std::mutex> lock(primaryContextMutex);
    if (primaryContexts.size() <= size_t(ordinal))
      primaryContexts.resize(ordinal + 1, nullptr);
    if (!primaryContexts[ordinal]) {
      CUdevice device = 0;
      if (llvm::Error error =
              checkCuda(deviceGet(&device, ordinal), "cuDeviceGet"))
        return error;
      if (llvm::Error error = checkCuda(
              devicePrimaryCtxRetain(&primaryContexts[ordinal], device),
              "cuDevicePrimaryCtxRetain"))
        return error;
    }
    context = primaryContexts[ordinal];
  }
  return checkCuda(ctxSetCurrent(context), "cuCtxSetCurrent");
}

llvm::Expected<CUdevice> CudaDriver::getCurrentDevice() const {
  CUdevice device = 0;
  if (llvm::Error error = checkCuda(ctxGetDevice(&device), "cuCtxGetDevice"))
    return error;
  return device;
}

llvm::Expected<int> CudaDriver::getMultiprocessorCount(CUdevice device) const {
  int count = 0;
  if (llvm::Error error = checkCuda(
          deviceGetAttribute(&count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                             device),
          "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)"))
    return std::move(error);
  if (count < 1)
    return llvm::createStringError(
        std::make_error_code(std::errc::invalid_argument),
        "the driver reports %d SMs for device %d", count, device);
  return count;
}

/// "argument 'k' of kernel 'name'" (or without the kernel when it is empty).
static std::string describeArgument(llvm::StringRef argumentName,
                                    llvm::StringRef kernelName) {
  std::string text = "argument '" + argumentName.str() + "'";
  if (!kernelName.empty())
    text += " of kernel '" + kernelName.str() + "'";
  return text;
}

llvm::Error CudaDriver::checkDevicePointer(const void *pointer,
                                           llvm::StringRef argumentName,
                                           llvm::StringRef kernelName) const {
  if (!pointer)
    return llvm::createStringError(
        std::errc::invalid_argument, "%s is a null pointer",
        describeArgument(argumentName, kernelName).c_str());

  CUmemorytype memoryType = CU_MEMORYTYPE_HOST;
  CUresult result = pointerGetAttribute(
      &memoryType, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
      static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(pointer)));
  // The driver does not know pointers into pageable host memory.
  if (result == CUDA_ERROR_INVALID_VALUE)
    return llvm::createStringError(
        std::errc::invalid_argument,
        "%s is not CUDA memory (a host pointer?): expected device memory",
        describeArgument(argumentName, kernelName).c_str());
  if (llvm::Error error =
          checkCuda(result, "cuPointerGetAttribute", kernelName))
    return error;
  if (memoryType == CU_MEMORYTYPE_DEVICE || memoryType == CU_MEMORYTYPE_UNIFIED)
    return llvm::Error::success();
  return llvm::createStringError(
      std::errc::invalid_argument,
      "%s points to %s memory: expected device memory",
      describeArgument(argumentName, kernelName).c_str(),
      memoryType == CU_MEMORYTYPE_HOST ? "pinned host" : "CUDA array");
}

llvm::Error CudaDriver::launch(CUfunction function,
                               const std::array<unsigned, 3> &grid,
                               const std::array<unsigned, 3> &block,
                               unsigned dynamicSharedBytes, CUstream stream,
                               void **kernelParams, llvm::StringRef kernelName,
                               bool programmatic) const {
  CUresult result;
  const char *call = "cuLaunchKernel";
  if (programmatic && launchKernelEx) {
    CUlaunchAttribute attribute;
    std::memset(&attribute, 0, sizeof(attribute));
    attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attribute.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config;
    std::memset(&config, 0, sizeof(config));
    config.gridDimX = grid[0], config.gridDimY = grid[1],
    config.gridDimZ = grid[2];
    config.blockDimX = block[0], config.blockDimY = block[1],
    config.blockDimZ = block[2];
    config.sharedMemBytes = dynamicSharedBytes;
    config.hStream = stream;
    config.attrs = &attribute;
    config.numAttrs = 1;
    call = "cuLaunchKernelEx";
    result = launchKernelEx(&config, function, kernelParams, /*extra=*/nullptr);
  } else {
    result = launchKernel(function, grid[0], grid[1], grid[2], block[0],
                          block[1], block[2], dynamicSharedBytes, stream,
                          kernelParams, /*extra=*/nullptr);
  }
  llvm::Error error = checkCuda(result, call, kernelName);
  if (!error)
    return error;
  // Most launch failures come from the configuration; show it.
  std::string message = llvm::toString(std::move(error));
  llvm::raw_string_ostream os(message);
  os << "; grid (" << grid[0] << ", " << grid[1] << ", " << grid[2]
     << "), block (" << block[0] << ", " << block[1] << ", " << block[2]
     << "), " << dynamicSharedBytes << " bytes of dynamic shared memory";
  return llvm::make_error<CudaError>(result, std::move(message));
}

//===----------------------------------------------------------------------===//
// LoadedModule
//===----------------------------------------------------------------------===//

// Kernels get this much dynamic shared memory without opting in.
static constexpr unsigned kDefaultDynamicSharedLimit = 48 * 1024;

/// Whether `image` is a binary (cubin or fatbin) rather than PTX text.
static bool isBinaryImage(llvm::StringRef image) {
  static constexpr char elfMagic[] = {0x7f, 'E', 'L', 'F'};
  static constexpr unsigned char fatbinMagic[] = {0x50, 0xed, 0x55, 0xba};
  return image.starts_with(llvm::StringRef(elfMagic, sizeof(elfMagic))) ||
         image.starts_with(llvm::StringRef(
             reinterpret_cast<const char *>(fatbinMagic), sizeof(fatbinMagic)));
}

llvm::Expected<LoadedModule> LoadedModule::load(CudaDriver &driver,
                                                llvm::StringRef image,
                                                llvm::StringRef kernelName) {
  if (image.empty())
    return llvm::createStringError(
        std::errc::invalid_argument,
        "cannot load kernel '%s': the module image is empty",
        kernelName.str().c_str());

  // The driver finds the end of PTX by its NUL terminator.
  std::string terminatedText;
  const void *data = image.data();
  if (!isBinaryImage(image) && image.back() != '\0') {
    terminatedText = image.str();
    data = terminatedText.c_str();
  }

  CUmodule module = nullptr;
  if (!driver.moduleLoadDataEx) {
    if (llvm::Error error = checkCuda(driver.moduleLoadData(&module, data),
                                      "cuModuleLoadData", kernelName))
      return error;
    return LoadedModule(driver, module);
  }

  // Ask for the JIT's error log, which says what is wrong with bad PTX.
  char errorLog[8192] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *optionValues[] = {
      errorLog,
      reinterpret_cast<void *>(static_cast<uintptr_t>(sizeof(errorLog) - 1))};
  CUresult result =
      driver.moduleLoadDataEx(&module, data, 2, options, optionValues);
  llvm::Error error = checkCuda(result, "cuModuleLoadDataEx", kernelName);
  if (!error)
    return LoadedModule(driver, module);
  errorLog[sizeof(errorLog) - 1] = '\0';
  llvm::StringRef log = llvm::StringRef(errorLog).trim();
  if (log.empty())
    return error;
  std::string message = llvm::toString(std::move(error));
  message += "\nJIT log:\n";
  message += log.str();
  return llvm::make_error<CudaError>(result, std::move(message));
}

LoadedModule::LoadedModule(LoadedModule &&other) noexcept
    : driver(other.driver), module(other.module) {
  other.module = nullptr;
}

LoadedModule &LoadedModule::operator=(LoadedModule &&other) noexcept {
  if (this == &other)
    return *this;
  if (module)
    driver->moduleUnload(module);
  driver = other.driver;
  module = other.module;
  other.module = nullptr;
  return *this;
}

LoadedModule::~LoadedModule() {
  // Errors are ignored: at process exit the driver may already have torn
  // the context down, and there is nobody to report to.
  if (module)
    driver->moduleUnload(module);
}

llvm::Expected<CUfunction>
LoadedModule::getFunction(llvm::StringRef name,
                          unsigned dynamicSharedBytes) const {
  CUfunction function = nullptr;
  std::string terminatedName = name.str();
  if (llvm::Error error = checkCuda(
          driver->moduleGetFunction(&function, module, terminatedName.c_str()),
          "cuModuleGetFunction", name))
    return error;
  // The 48 KiB default covers static and dynamic shared memory together.
  int staticBytes = 0;
  if (driver->funcGetAttribute(&staticBytes,
                               CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                               function) != CUDA_SUCCESS)
    staticBytes = 0;
  if (dynamicSharedBytes == 0 ||
      dynamicSharedBytes + static_cast<unsigned>(staticBytes) <=
          kDefaultDynamicSharedLimit)
    return function;

  CUresult result = driver->funcSetAttribute(
      function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
      static_cast<int>(dynamicSharedBytes));
  llvm::Error error = checkCuda(result, "cuFuncSetAttribute", name);
  if (!error)
    return function;

  // The usual cause is asking for more than the device allows; say so with
  // the numbers, when the driver can tell them.
  int staticShared = 0;
  int optInLimit = 0;
  CUdevice device = 0;
  if (driver->funcGetAttribute(&staticShared,
                               CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                               function) != CUDA_SUCCESS ||
      driver->ctxGetDevice(&device) != CUDA_SUCCESS ||
      driver->deviceGetAttribute(
          &optInLimit, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
          device) != CUDA_SUCCESS)
    return error;
  std::string message = llvm::toString(std::move(error));
  llvm::raw_string_ostream os(message);
  os << "; the kernel requests " << dynamicSharedBytes
     << " bytes of dynamic shared memory and has " << staticShared
     << " bytes of static shared memory, but the device allows at most "
     << optInLimit << " bytes per block";
  return llvm::make_error<CudaError>(result, std::move(message));
}
