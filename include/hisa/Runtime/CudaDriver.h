//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// The runtime talks to the GPU through the CUDA driver API, but neither the
// compiler nor the runtime library links against libcuda: it is opened with
// dlopen("libcuda.so.1") the first time a kernel is loaded, so building,
// linking and every path that needs no GPU (compiling to the disk cache, the
// tests) work on machines without an NVIDIA driver. cuda.h is used only for
// its types and enums.
//
// Errors are llvm::Errors of three kinds, matching the status codes of
// hisa_runtime.h:
//   - NoDeviceError: libcuda.so.1 is missing or unusable, or cuInit found no
//     GPU (HISA_ERROR_NO_DEVICE);
//   - CudaError: a driver call failed; the message names the call and the
//     kernel (HISA_ERROR_CUDA);
//   - a StringError with std::errc::invalid_argument: the caller passed
//     something the kernel cannot use, e.g. a host pointer
//     (HISA_ERROR_INVALID_ARGUMENT).
// Tell them apart with `error.isA<NoDeviceError>()` / `isA<CudaError>()`.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_RUNTIME_CUDADRIVER_H
#define HISA_RUNTIME_CUDADRIVER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cuda.h>

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace hisa::runtime {

/// A CUDA driver call returned something other than CUDA_SUCCESS.
class CudaError : public llvm::ErrorInfo<CudaError> {
public:
  static char ID;

  CudaError(CUresult result, std::string message)
      : result(result), message(std::move(message)) {}

  /// The driver's status code, e.g. CUDA_ERROR_INVALID_VALUE.
  CUresult getResult() const { return result; }
  const std::string &getMessage() const { return message; }

  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;

private:
  CUresult result;
  std::string message;
};

/// There is no usable NVIDIA driver or GPU on this machine.
class NoDeviceError : public llvm::ErrorInfo<NoDeviceError> {
public:
  static char ID;

  explicit NoDeviceError(std::string message) : message(std::move(message)) {}

  const std::string &getMessage() const { return message; }

  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;

private:
  std::string message;
};

/// Returns success for CUDA_SUCCESS, else a CudaError whose message names the
/// call and, when `kernelName` is not empty, the kernel:
///   cuLaunchKernel failed for kernel 'fp8_block_mean_pooling':
///   CUDA_ERROR_INVALID_VALUE (invalid argument)
llvm::Error checkCuda(CUresult result, llvm::StringRef call,
                      llvm::StringRef kernelName = {});

/// The entry points of libcuda.so.1 that the runtime uses, resolved with
/// dlsym, plus thin checked wrappers. The process-wide instance (get()) is
/// created once and never destroyed: modules and contexts may outlive any
/// static destructor, and libcuda must stay mapped while they exist.
///
/// The function pointers are named after the driver functions without the
/// `cu` prefix (`memAlloc` is cuMemAlloc). They are resolved under the symbol
/// a program linked against libcuda would call; cuda.h maps some names to
/// versioned symbols (cuMemAlloc to cuMemAlloc_v2), which is also why the
/// members cannot be called `cuMemAlloc`: the header's macros would rename
/// them.
class CudaDriver {
public:
  /// The process-wide driver: loads libcuda.so.1 and calls cuInit(0) on the
  /// first call (thread-safe); later calls return the same driver, or an
  /// error with the same message. Fails with a NoDeviceError.
  static llvm::Expected<CudaDriver &> get();

  /// The process-wide driver if get() has already succeeded, else null.
  /// Never loads anything.
  static CudaDriver *getIfLoaded();

  /// Opens `libraryName` (normally "libcuda.so.1"), resolves every entry
  /// point and calls cuInit(0). Use get() instead; this exists so that tests
  /// can exercise the failure paths with other libraries. The library is never
  /// closed once it has been initialized.
  static llvm::Expected<std::unique_ptr<CudaDriver>>
  load(llvm::StringRef libraryName);

  /// The symbols that load() resolves, in order; cuModuleLoadDataEx,
  /// cuLaunchKernelEx, cuStreamIsCapturing and cuTensorMapEncodeTiled are
  /// optional.
  static llvm::ArrayRef<const char *> getSymbolNames();

  /// "CUDA_ERROR_INVALID_VALUE (invalid argument)" for `result`.
  std::string describe(CUresult result) const;

  /// Makes sure a context is current on the calling thread and returns it.
  /// An existing current context is used as is (torch makes the primary
  /// context of its device current); otherwise the primary context of device
  /// 0 is retained (once per process, never released) and made current.
  /// Inside a CurrentContextScope the context found first is returned
  /// again without asking the driver.
  llvm::Expected<CUcontext> ensureContext();

  /// Makes the primary context of device `ordinal` current on the calling
  /// thread (retained once per device and process, never released; the
  /// context torch's runtime uses for that device). Nothing is synchronized.
  llvm::Error usePrimaryContext(int ordinal);

  /// The device of the context current on this thread.
  llvm::Expected<CUdevice> getCurrentDevice() const;

  /// The number of SMs of `device`.
  llvm::Expected<int> getMultiprocessorCount(CUdevice device) const;

  /// Checks that `pointer` is memory a kernel can access: device memory or
  /// managed memory. Host memory, pinned or not, and null are rejected with
  /// an invalid-argument error naming `argumentName` and `kernelName`.
  llvm::Error checkDevicePointer(const void *pointer,
                                 llvm::StringRef argumentName,
                                 llvm::StringRef kernelName) const;

  /// cuLaunchKernel with a checked result; a failure names the kernel and the
  /// launch configuration. Only reports errors the launch itself detects;
  /// faults while the kernel runs surface at the next synchronization.
  /// `programmatic`: launched (cuLaunchKernelEx) as a programmatic dependent
  /// of the previous kernel in the stream; only for kernels that wait for
  /// their prerequisite grids before touching memory. Without
  /// cuLaunchKernelEx in the driver it is an ordinary launch.
  llvm::Error launch(CUfunction function, const std::array<unsigned, 3> &grid,
                     const std::array<unsigned, 3> &block,
                     unsigned dynamicSharedBytes, CUstream stream,
                     void **kernelParams, llvm::StringRef kernelName,
                     bool programmatic = false) const;

  // Entry points. All are non-null after a successful load() except
  // moduleLoadDataEx, launchKernelEx, streamIsCapturing and
  // tensorMapEncodeTiled, which may be null.
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuGetErrorName) getErrorName = nullptr;
  decltype(&::cuGetErrorString) getErrorString = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute = nullptr;
  decltype(&::cuCtxGetCurrent) ctxGetCurrent = nullptr;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&::cuCtxGetDevice) ctxGetDevice = nullptr;
  decltype(&::cuCtxSynchronize) ctxSynchronize = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) devicePrimaryCtxRetain = nullptr;
  decltype(&::cuModuleLoadData) moduleLoadData = nullptr;
  decltype(&::cuModuleLoadDataEx) moduleLoadDataEx = nullptr;
  decltype(&::cuModuleUnload) moduleUnload = nullptr;
  decltype(&::cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&::cuFuncSetAttribute) funcSetAttribute = nullptr;
  decltype(&::cuFuncGetAttribute) funcGetAttribute = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;
  decltype(&::cuLaunchKernelEx) launchKernelEx = nullptr;
  decltype(&::cuStreamSynchronize) streamSynchronize = nullptr;
  /// Optional: lets a launch that would load a module refuse inside a
  /// stream capture, with a message, instead of breaking the capture.
  decltype(&::cuStreamIsCapturing) streamIsCapturing = nullptr;
  /// Optional: a first load runs in the relaxed capture mode, so that
  /// another thread's capture in the global mode is not invalidated by it.
  decltype(&::cuThreadExchangeStreamCaptureMode)
      threadExchangeStreamCaptureMode = nullptr;
  /// Optional: the zero row of TMA kernels is filled on a private
  /// non-blocking stream (a copy on the legacy stream would synchronize
  /// with, and break, another thread's capture).
  decltype(&::cuMemsetD8Async) memsetD8Async = nullptr;
  decltype(&::cuMemAlloc) memAlloc = nullptr;
  decltype(&::cuMemFree) memFree = nullptr;
  /// Zeroes what the orchestration layers allocate (no buffer of theirs is
  /// read uninitialized).
  decltype(&::cuMemsetD8) memsetD8 = nullptr;
  decltype(&::cuMemcpyHtoD) memcpyHtoD = nullptr;
  decltype(&::cuMemcpyDtoH) memcpyDtoH = nullptr;
  /// Stream-ordered copies of the orchestration layers (the V4 layer's
  /// cache writes): capturable in a CUDA graph.
  decltype(&::cuMemcpyDtoDAsync) memcpyDtoDAsync = nullptr;
  decltype(&::cuMemcpy2DAsync) memcpy2DAsync = nullptr;
  /// Streams and events of the orchestration layers (the V4 layer runs
  /// its independent branches on side streams forked from the caller's
  /// and joined back: capturable in a CUDA graph).
  decltype(&::cuStreamCreate) streamCreate = nullptr;
  decltype(&::cuStreamDestroy) streamDestroy = nullptr;
  decltype(&::cuStreamWaitEvent) streamWaitEvent = nullptr;
  decltype(&::cuEventCreate) eventCreate = nullptr;
  decltype(&::cuEventDestroy) eventDestroy = nullptr;
  decltype(&::cuEventRecord) eventRecord = nullptr;
  decltype(&::cuPointerGetAttribute) pointerGetAttribute = nullptr;
  /// Optional (CUDA 12+): kernels with TMA copies need it.
  decltype(&::cuTensorMapEncodeTiled) tensorMapEncodeTiled = nullptr;
  /// Optional: runtime::GraphLaunchScope issues an operator's launches as
  /// one graph launch with these (without them, one launch each).
  decltype(&::cuGraphCreate) graphCreate = nullptr;
  decltype(&::cuGraphAddKernelNode) graphAddKernelNode = nullptr;
  decltype(&::cuGraphAddDependencies) graphAddDependencies = nullptr;
  decltype(&::cuGraphInstantiate) graphInstantiate = nullptr;
  decltype(&::cuGraphExecKernelNodeSetParams) graphExecKernelNodeSetParams =
      nullptr;
  decltype(&::cuGraphLaunch) graphLaunch = nullptr;
  decltype(&::cuGraphExecDestroy) graphExecDestroy = nullptr;
  decltype(&::cuGraphDestroy) graphDestroy = nullptr;

private:
  CudaDriver() = default;

  /// ensureContext() without CurrentContextScope's answer.
  llvm::Expected<CUcontext> findOrMakeCurrentContext();

  void *library = nullptr; // dlopen handle; deliberately never closed

  // The primary context ensureContext() retained, if it had to, and those
  // usePrimaryContext() retained, by device ordinal.
  std::mutex primaryContextMutex;
  CUcontext primaryContext = nullptr;
  std::vector<CUcontext> primaryContexts;
};

/// A module loaded into the current context; unloaded when destroyed. The
/// context must still exist then (primary contexts live as long as the
/// process).
class LoadedModule {
public:
  /// Loads `image`, a cubin, fatbin or PTX text (JIT-compiled by the driver;
  /// it need not be NUL-terminated), into the current context. `kernelName`
  /// names the kernel in error messages; PTX compile errors include the
  /// driver's log.
  static llvm::Expected<LoadedModule>
  load(CudaDriver &driver, llvm::StringRef image, llvm::StringRef kernelName);

  LoadedModule(LoadedModule &&other) noexcept;
  LoadedModule &operator=(LoadedModule &&other) noexcept;
  LoadedModule(const LoadedModule &) = delete;
  LoadedModule &operator=(const LoadedModule &) = delete;
  ~LoadedModule();

  /// The kernel `name`. Kernels that need more than the default 48 KiB of
  /// dynamic shared memory must opt in: when `dynamicSharedBytes` exceeds
  /// 48 KiB, this raises CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to
  /// it, and reports the device's limit if that is too much.
  llvm::Expected<CUfunction> getFunction(llvm::StringRef name,
                                         unsigned dynamicSharedBytes = 0) const;

  CUmodule getModule() const { return module; }

private:
  LoadedModule(CudaDriver &driver, CUmodule module)
      : driver(&driver), module(module) {}

  CudaDriver *driver;
  CUmodule module;
};

/// While alive, this thread's CUDA calls run in the relaxed stream-capture
/// mode: calls that are not capturable (module loads, graph instantiation
/// and destruction) then do not invalidate another thread's capture in the
/// global mode (torch's default). A driver without
/// cuThreadExchangeStreamCaptureMode leaves the mode alone.
/// While alive, CudaDriver::ensureContext() on this thread asks the driver
/// once and then answers the same context (cuCtxGetCurrent costs ~0.3 us on
/// the GPU machine's host, and every launch asks): for one operator call or
/// one layer step, inside which nothing changes the thread's context.
/// usePrimaryContext() forgets the answer. Scopes nest (the outermost one
/// keeps the answer).
class CurrentContextScope {
public:
  CurrentContextScope();
  ~CurrentContextScope();
  CurrentContextScope(const CurrentContextScope &) = delete;
  CurrentContextScope &operator=(const CurrentContextScope &) = delete;
};

class RelaxedCaptureScope {
public:
  explicit RelaxedCaptureScope(const CudaDriver &driver) : driver(driver) {
    exchanged =
        driver.threadExchangeStreamCaptureMode &&
        driver.threadExchangeStreamCaptureMode(&previous) == CUDA_SUCCESS;
  }
  ~RelaxedCaptureScope() {
    if (exchanged)
      driver.threadExchangeStreamCaptureMode(&previous);
  }
  RelaxedCaptureScope(const RelaxedCaptureScope &) = delete;
  RelaxedCaptureScope &operator=(const RelaxedCaptureScope &) = delete;

private:
  const CudaDriver &driver;
  CUstreamCaptureMode previous = CU_STREAM_CAPTURE_MODE_RELAXED;
  bool exchanged = false;
};

} // namespace hisa::runtime

#endif // HISA_RUNTIME_CUDADRIVER_H
