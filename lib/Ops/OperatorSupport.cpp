//===- OperatorSupport.cpp - What every operator file shares --------------===//

#include "OperatorSupport.h"

#include "hisa/Runtime/CudaDriver.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdlib>
#include <mutex>

using namespace llvm;
using namespace hisa::runtime;

namespace hisa::ops::detail {

Error argumentError(const Twine &message) {
  return createStringError(std::make_error_code(std::errc::invalid_argument),
                           message);
}

/// `pointer` is given and aligned to `alignment` bytes (vector accesses and
/// 16-byte cp.async / TMA pieces need it).
Error checkPointer(const char *op, const char *name, const void *pointer,
                   uint64_t alignment) {
  if (!pointer)
    return argumentError(formatv("{0}: {1} must not be NULL", op, name));
  if (reinterpret_cast<uintptr_t>(pointer) % alignment)
    return argumentError(formatv("{0}: {1} ({2}) must be {3}-byte aligned", op,
                                 name, pointer, alignment));
  return Error::success();
}

Error checkPointers(const char *op,
                    std::initializer_list<PointerArgument> arguments) {
  for (const PointerArgument &argument : arguments)
    if (Error error = checkPointer(op, argument.name, argument.pointer,
                                   argument.alignment))
      return error;
  return Error::success();
}

Error checkDevicePointerArguments(
    const char *op, std::initializer_list<PointerArgument> arguments) {
  if (Error error = checkPointers(op, arguments))
    return error;
  SmallVector<std::pair<const char *, const void *>, 8> pointers;
  for (const PointerArgument &argument : arguments)
    pointers.emplace_back(argument.name, argument.pointer);
  return checkDevicePointers(op, pointers);
}

LaunchArgument tensor(const void *data, std::initializer_list<int64_t> sizes) {
  LaunchArgument arg;
  arg.kind = KernelMetadata::Argument::Tensor;
  arg.data = const_cast<void *>(data);
  arg.sizes.assign(sizes.begin(), sizes.end());
  return arg;
}

LaunchArgument integer(int64_t value) {
  LaunchArgument arg;
  arg.kind = KernelMetadata::Argument::Int;
  arg.intValue = value;
  return arg;
}

LaunchArgument floatScalar(double value) {
  LaunchArgument arg;
  arg.kind = KernelMetadata::Argument::Float;
  arg.floatValue = value;
  return arg;
}

/// The operators' JIT target: sm_90a, with the fifty-second session's
/// synchronization rules when HISA_ELIDE_SYNC=1 (for A/B timing and GPU
/// checks until they are on by default; the target string is part of the
/// disk cache's key).
static const char *getOperatorTarget() {
  static const char *target = [] {
    const char *value = std::getenv("HISA_ELIDE_SYNC");
    return value && StringRef(value) == "1" ? "sm_90a,+elide-sync" : "sm_90a";
  }();
  return target;
}

Expected<int64_t> getBuiltinKernelSharedBytes(const char *kernelName,
                                              StringRef params) {
  static std::mutex mutex;
  static StringMap<int64_t> sizes;
  std::string key = (Twine(kernelName) + "/" + params).str();
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = sizes.find(key);
    if (found != sizes.end())
      return found->second;
  }
  Expected<std::shared_ptr<CompiledKernel>> compiled = Jit::get().compile(
      getBuiltinKernelSource(kernelName), kernelName, params,
      getOperatorTarget());
  if (!compiled)
    return compiled.takeError();
  int64_t bytes = (*compiled)->metadata.sharedBytes;
  std::lock_guard<std::mutex> lock(mutex);
  sizes[key] = bytes;
  return bytes;
}

SpecializationText specialization(
    std::initializer_list<std::pair<const char *, int64_t>> entries) {
  SpecializationText text;
  for (const auto &[name, value] : entries) {
    if (!text.empty())
      text += ',';
    text += name;
    text += '=';
    // Digits backwards into a buffer (int64_t has at most 19 and a sign);
    // raw_svector_ostream's integer output cost ~0.3 us more per call.
    char digits[20];
    char *end = digits + sizeof(digits), *at = end;
    uint64_t magnitude = value < 0 ? 0 - uint64_t(value) : uint64_t(value);
    do {
      *--at = char('0' + magnitude % 10);
      magnitude /= 10;
    } while (magnitude);
    if (value < 0)
      *--at = '-';
    text.append(at, end);
  }
  return text;
}

Error runOperator(const char *kernelName, StringRef params,
                  ArrayRef<LaunchArgument> arguments, void *stream) {
  // Operators call the same few specializations over and over: skip hashing
  // the source for the cache key after the first call.
  static std::mutex mutex;
  static StringMap<LoadedKernel *> kernels;
  // (One buffer per thread: no heap allocation per launch.)
  thread_local std::string key;
  key.assign(kernelName);
  key += '/';
  key += params;
  LoadedKernel *kernel;
  {
    std::lock_guard<std::mutex> lock(mutex);
    kernel = kernels.lookup(key);
  }
  if (!kernel) {
    Expected<LoadedKernel *> loaded =
        Jit::get().getKernel(getBuiltinKernelSource(kernelName), kernelName,
                             params, getOperatorTarget(), stream);
    if (!loaded)
      return loaded.takeError();
    kernel = *loaded;
    std::lock_guard<std::mutex> lock(mutex);
    kernels[key] = kernel;
  }
  return kernel->launch(arguments, stream);
}

Expected<int64_t> getPlanningMultiprocessors(PlanFor purpose) {
  CudaDriver *driver = CudaDriver::getIfLoaded();
  if (!driver && purpose == PlanFor::Launch) {
    Expected<CudaDriver &> loaded = CudaDriver::get();
    if (!loaded) {
      // Nothing will run: the launch reports this after the argument
      // checks, which must not depend on a device.
      consumeError(loaded.takeError());
      return kMeasuredMultiprocessors;
    }
    driver = &*loaded;
  }
  if (!driver)
    return kMeasuredMultiprocessors;
  CUcontext context = nullptr;
  if (purpose == PlanFor::SizeQuery) {
    if (driver->ctxGetCurrent(&context) != CUDA_SUCCESS || !context)
      return kMeasuredMultiprocessors;
  } else {
    // The context the launch will use (made current as it would).
    Expected<CUcontext> current = driver->ensureContext();
    if (!current) {
      consumeError(current.takeError()); // the launch will say so
      return kMeasuredMultiprocessors;
    }
    context = *current;
  }
  // Launches ask on the host's critical path: usually the same context as
  // this thread's last question.
  thread_local CUcontext lastContext = nullptr;
  thread_local int64_t lastCount = 0;
  if (context == lastContext)
    return lastCount;
  Expected<CUdevice> device = driver->getCurrentDevice();
  if (!device)
    return device.takeError();
  Expected<int> count = driver->getMultiprocessorCount(*device);
  if (!count)
    return count.takeError();
  lastContext = context;
  lastCount = *count;
  return int64_t(*count);
}

Error checkNonNegative(const char *op, const char *name, int64_t value) {
  if (value < 0)
    return argumentError(
        formatv("{0}: {1} = {2} is negative", op, name, value));
  return Error::success();
}

Error checkIndexRange(const char *op, const char *name, int64_t value) {
  if (value > INT32_MAX)
    return argumentError(formatv("{0}: {1} = {2} exceeds the int32 indices "
                                 "(at most {3})",
                                 op, name, value, INT32_MAX));
  return Error::success();
}

Error checkTensorBytes(const char *op, const char *what,
                       std::initializer_list<int64_t> sizes,
                       int64_t elementBytes) {
  if (llvm::is_contained(sizes, 0))
    return Error::success();
  uint64_t bytes = static_cast<uint64_t>(elementBytes);
  bool fits = true;
  for (int64_t size : sizes) {
    fits = fits && size > 0 &&
           bytes <= static_cast<uint64_t>(kMaxTensorBytes) / uint64_t(size);
    if (fits)
      bytes *= static_cast<uint64_t>(size);
  }
  if (fits)
    return Error::success();
  std::string shape;
  for (int64_t size : sizes)
    shape += (shape.empty() ? "" : ", ") + std::to_string(size);
  return argumentError(formatv("{0}: {1} = [{2}] of {3}-byte elements holds "
                               "more than 2^48 bytes (the largest tensor "
                               "supported)",
                               op, what, shape, elementBytes));
}

} // namespace hisa::ops::detail
