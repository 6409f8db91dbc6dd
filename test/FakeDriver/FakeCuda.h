//===- FakeCuda.h - A CUDA driver without a GPU, for host-side tests ------===//
//
// libcuda.so.1 built from FakeCuda.cpp exports the driver entry points the
// runtime loads (CudaDriver's table) and implements them on the host:
// "device" memory is host memory, modules and functions are names, kernel
// launches and stream operations are recorded instead of run. A test that
// links it (or finds it first on the library path) runs the runtime, the
// operators and the orchestration layers (the V4 layer) on a machine without
// a GPU, and inspects what they asked the driver to do: which kernels on
// which streams, in what order, how much memory, which calls would block.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_TEST_FAKEDRIVER_FAKECUDA_H
#define HISA_TEST_FAKEDRIVER_FAKECUDA_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hisa::fake_cuda {

/// One recorded driver call that a stream orders (or that blocks the host).
struct Call {
  enum Kind {
    Launch,       ///< cuLaunchKernel(Ex): `name` is the kernel
    Copy,         ///< cuMemcpyDtoDAsync / cuMemcpy2DAsync
    EventRecord,  ///< `event` recorded on `stream`
    StreamWait,   ///< `stream` waits for `event`
    Synchronizing ///< cuCtxSynchronize, cuStreamSynchronize, cuMemcpyHtoD/DtoH
  };
  Kind kind;
  std::string name;
  uintptr_t stream = 0; ///< 0: the legacy default stream
  uintptr_t event = 0;
  unsigned grid[3] = {0, 0, 0};
  unsigned block[3] = {0, 0, 0};
  unsigned sharedBytes = 0; ///< launches: dynamic shared memory per block
  /// A launch with programmatic stream serialization (cuLaunchKernelEx).
  bool programmatic = false;
  /// The device of the context current when the call was made.
  int device = 0;
  /// A launch that a graph launch (cuGraphLaunch) made, one per kernel node.
  bool fromGraph = false;
  /// Graph launches: the node's first kernel parameter (its 8 bytes), to
  /// see that a relaunch got the call's new parameters.
  uint64_t firstSlot = 0;
};

struct Counters {
  int64_t allocations = 0; ///< cuMemAlloc calls
  int64_t frees = 0;
  int64_t bytesAllocated = 0; ///< live bytes
  int64_t streamsCreated = 0;
  int64_t eventsCreated = 0;
};

/// "Device" memory of the fake (host memory it tracks); aborts when the
/// fake refuses (tests only).
void *deviceBuffer(size_t bytes);

/// The most live "device" memory the fake hands out (default: no limit):
/// cuMemAlloc past it fails with CUDA_ERROR_OUT_OF_MEMORY, as a GPU's
/// would, instead of the host reserving and zeroing what a test asked for.
void setMemoryLimit(size_t bytes);

/// Devices the fake reports (1 to 8; default 1), each with its own
/// primary context.
void setDeviceCount(int count);

/// For a test's scope: `count` devices, then one again and device 0's
/// context current, also when the test stops at a failed assertion.
class ScopedDevices {
public:
  explicit ScopedDevices(int count) { setDeviceCount(count); }
  ~ScopedDevices();
  ScopedDevices(const ScopedDevices &) = delete;
  ScopedDevices &operator=(const ScopedDevices &) = delete;
};
/// The first launch after the next launch of kernel `name` fails with
/// CUDA_ERROR_LAUNCH_FAILED (once; "" clears it): for tests of what a caller
/// does when a step fails partway.
void failLaunchAfter(const std::string &name);
/// CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT of `device` (default 132; the
/// operators remember the answer per thread and context).
void setMultiprocessorCount(int device, int count);
/// Leaves the calling thread with no current context (a thread CUDA has
/// not been used on; every thread starts with device 0's).
void clearCurrentContext();
/// A new context on `device` (a CUcontext, as cuCtxCreate would make; the
/// fake never reuses its address) for a test that needs a context no kernel
/// was loaded into yet, whatever ran before in the process (another test,
/// or this one under --gtest_repeat): primary contexts, which the runtime
/// retains, stay the same for the life of the process, as CUDA's do.
void *freshContext(int device);
/// freshContext(device), made the calling thread's current context.
void useFreshContext(int device);
/// Whether cuStreamIsCapturing reports `stream` as being captured.
void setStreamCapturing(void *stream, bool capturing);

/// The calls recorded since the last reset (not thread-safe against calls
/// in flight: read them between operations).
const std::vector<Call> &calls();
Counters counters();
void resetCalls();
/// How often each driver entry point was called (cuda.h's versioned name).
std::map<std::string, int64_t> entryPointCalls();
/// How often driver entry point `name` was called (0: never).
int64_t entryPointCalls(const char *name);

} // namespace hisa::fake_cuda

#endif // HISA_TEST_FAKEDRIVER_FAKECUDA_H
