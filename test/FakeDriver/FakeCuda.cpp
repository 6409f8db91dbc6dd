//===- FakeCuda.cpp - A CUDA driver without a GPU, for host-side tests ----===//
//
// See FakeCuda.h. Exported under the versioned names cuda.h maps to (the
// names CudaDriver looks up), with C linkage. One device by default (up to
// kMaxDevices with setDeviceCount), one primary context per device, current
// per thread (device 0's until a thread sets another); "device" memory from
// malloc (so host-to-device copies and reads of what a layer uploaded
// work), everything a stream would run recorded. A launch of a function
// whose module was loaded in another context fails, as on a GPU.
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"

#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

using hisa::fake_cuda::Call;
using hisa::fake_cuda::Counters;

namespace {

constexpr int kMaxDevices = 8;
/// Contexts per device: the primary one, then those freshContext makes.
constexpr int kContextsPerDevice = 4096;

struct FakeFunction {
  std::string name;
  int device = 0; ///< the device whose context loaded its module
};

struct FakeModule {
  int device = 0;
  std::map<std::string, FakeFunction *> functions;
  ~FakeModule() {
    for (auto &[name, function] : functions)
      delete function;
  }
};

/// A kernel node of a fake graph: what its launch would record.
struct FakeNode {
  FakeFunction *function = nullptr;
  unsigned grid[3] = {0, 0, 0};
  unsigned block[3] = {0, 0, 0};
  unsigned sharedBytes = 0;
  bool programmatic = false; ///< a programmatic edge from the node before
  uint64_t firstSlot = 0;    ///< its first kernel parameter's 8 bytes
};

struct FakeGraph {
  int device = 0;
  std::vector<FakeNode> nodes;
};

struct State {
  std::mutex mutex;
  std::vector<Call> calls;
  Counters counters;
  std::map<uintptr_t, size_t> allocations; ///< base -> bytes
  std::set<uintptr_t> streams, events;
  std::map<std::string, int64_t> entryCalls; ///< entry point -> calls
  uintptr_t nextHandle = 0x1000;
  size_t memoryLimit = SIZE_MAX; ///< setMemoryLimit
  int deviceCount = 1;           ///< setDeviceCount
  int multiprocessors[kMaxDevices] = {132, 132, 132, 132, 132, 132, 132, 132};
  /// The contexts' addresses: device d's primary context is
  /// &contextTokens[0][d], its i-th fresh one &contextTokens[i][d].
  int contextTokens[kContextsPerDevice][kMaxDevices] = {};
  int freshContexts = 0;         ///< the last i freshContext handed out
  std::set<uintptr_t> capturing; ///< setStreamCapturing
  std::string failAfter;         ///< failLaunchAfter
  bool failNext = false;         ///< the next launch fails
};

State &state() {
  static State *instance = new State; // never destroyed: used at exit
  return *instance;
}

CUcontext primaryContext(int device) {
  return reinterpret_cast<CUcontext>(&state().contextTokens[0][device]);
}

/// The device of a context this fake made (primary or fresh), or -1.
int deviceOf(CUcontext context) {
  auto *token = reinterpret_cast<const int *>(context);
  const int *first = &state().contextTokens[0][0];
  if (token < first || token >= first + kContextsPerDevice * kMaxDevices)
    return -1;
  return int((token - first) % kMaxDevices);
}

/// This thread's current context (device 0's until it sets another).
thread_local CUcontext currentContext = primaryContext(0);

void countEntry(const char *name) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.entryCalls[name];
}

void record(Call call) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.calls.push_back(std::move(call));
}

Call streamCall(Call::Kind kind, CUstream stream, const char *name = "") {
  Call call;
  call.kind = kind;
  call.name = name;
  call.stream = reinterpret_cast<uintptr_t>(stream);
  call.device = deviceOf(currentContext);
  return call;
}

/// A fresh stream or event handle, kept in `live` and counted.
uintptr_t newHandle(std::set<uintptr_t> &live, int64_t &created) {
  std::lock_guard<std::mutex> lock(state().mutex);
  uintptr_t handle = state().nextHandle++;
  live.insert(handle);
  ++created;
  return handle;
}

CUresult dropHandle(std::set<uintptr_t> &live, uintptr_t handle) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return live.erase(handle) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/// Whether [pointer, pointer + bytes) lies in one allocation.
bool isDeviceRange(uintptr_t pointer, size_t bytes) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.allocations.upper_bound(pointer);
  if (it == s.allocations.begin())
    return false;
  --it;
  return pointer >= it->first && pointer + bytes <= it->first + it->second;
}

} // namespace

namespace hisa::fake_cuda {

const std::vector<Call> &calls() { return state().calls; }

Counters counters() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().counters;
}

void *deviceBuffer(size_t bytes) {
  CUdeviceptr pointer = 0;
  if (cuMemAlloc_v2(&pointer, bytes) != CUDA_SUCCESS)
    std::abort();
  return reinterpret_cast<void *>(pointer);
}

void setMemoryLimit(size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().memoryLimit = bytes;
}

void setDeviceCount(int count) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().deviceCount = std::clamp(count, 1, kMaxDevices);
}

void setMultiprocessorCount(int device, int count) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (device >= 0 && device < kMaxDevices)
    state().multiprocessors[device] = count;
}

void clearCurrentContext() { currentContext = nullptr; }

void *freshContext(int device) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (device < 0 || device >= kMaxDevices ||
      s.freshContexts + 1 >= kContextsPerDevice)
    std::abort(); // a test's mistake, or more contexts than any run needs
  return &s.contextTokens[++s.freshContexts][device];
}

void useFreshContext(int device) {
  currentContext = static_cast<CUcontext>(freshContext(device));
}

ScopedDevices::~ScopedDevices() {
  currentContext = primaryContext(0);
  setDeviceCount(1);
}

void setStreamCapturing(void *stream, bool capturing) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto handle = reinterpret_cast<uintptr_t>(stream);
  if (capturing)
    state().capturing.insert(handle);
  else
    state().capturing.erase(handle);
}

void failLaunchAfter(const std::string &name) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().failAfter = name;
  state().failNext = false;
}

/// Whether the launch of `name` is to fail (failLaunchAfter).
bool launchFails(const std::string &name) {
  std::lock_guard<std::mutex> lock(state().mutex);
  State &s = state();
  if (s.failNext) {
    s.failNext = false;
    return true;
  }
  if (!s.failAfter.empty() && name == s.failAfter) {
    s.failAfter.clear();
    s.failNext = true;
  }
  return false;
}

void resetCalls() {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().calls.clear();
}

std::map<std::string, int64_t> entryPointCalls() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().entryCalls;
}

int64_t entryPointCalls(const char *name) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto it = state().entryCalls.find(name);
  return it == state().entryCalls.end() ? 0 : it->second;
}

} // namespace hisa::fake_cuda

extern "C" {

/// The calls of driver entry point `name` so far (-1: none by that name):
/// what a program that only dlopens the driver (HostOverheadBench) asks
/// the fake, found with dlsym.
int64_t hisa_fake_cuda_entry_calls(const char *name) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto it = state().entryCalls.find(name);
  return it == state().entryCalls.end() ? 0 : it->second;
}

/// The names of the entry points called so far, comma-separated, into
/// `buffer` (truncated to `size`).
void hisa_fake_cuda_entry_names(char *buffer, size_t size) {
  std::lock_guard<std::mutex> lock(state().mutex);
  std::string names;
  for (auto &[name, count] : state().entryCalls)
    names += (names.empty() ? "" : ",") + name;
  if (size)
    std::snprintf(buffer, size, "%s", names.c_str());
}

CUresult cuInit(unsigned) { return CUDA_SUCCESS; }

CUresult cuGetErrorName(CUresult error, const char **name) {
  countEntry(__func__);
  *name = error == CUDA_SUCCESS               ? "CUDA_SUCCESS"
          : error == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY"
                                              : "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  countEntry(__func__);
  *text = error == CUDA_SUCCESS ? "no error" : "an error of the fake driver";
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  countEntry(__func__);
  std::lock_guard<std::mutex> lock(state().mutex);
  if (ordinal < 0 || ordinal >= state().deviceCount)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                              CUdevice device) {
  countEntry(__func__);
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    if (device < 0 || device >= state().deviceCount)
      return CUDA_ERROR_INVALID_DEVICE;
  }
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *value = 227 * 1024;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: {
    std::lock_guard<std::mutex> lock(state().mutex);
    *value = state().multiprocessors[device];
    return CUDA_SUCCESS;
  }
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
    *value = 50 * 1024 * 1024;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = 9;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = 0;
    return CUDA_SUCCESS;
  default:
    *value = 0;
    return CUDA_SUCCESS;
  }
}

CUresult cuCtxGetCurrent(CUcontext *context) {
  countEntry(__func__);
  *context = currentContext;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext context) {
  if (context && deviceOf(context) < 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  currentContext = context;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device) {
  countEntry(__func__);
  int current = deviceOf(currentContext);
  if (current < 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  *device = current;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize() {
  countEntry(__func__);
  record(streamCall(Call::Synchronizing, nullptr, "cuCtxSynchronize"));
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  countEntry(__func__);
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    if (device < 0 || device >= state().deviceCount)
      return CUDA_ERROR_INVALID_DEVICE;
  }
  *context = primaryContext(device);
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *module, const void *) {
  countEntry(__func__);
  int device = deviceOf(currentContext);
  if (device < 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  auto *fake = new FakeModule;
  fake->device = device;
  *module = reinterpret_cast<CUmodule>(fake);
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned,
                            CUjit_option *, void **) {
  countEntry(__func__);
  return cuModuleLoadData(module, image);
}

CUresult cuModuleUnload(CUmodule module) {
  countEntry(__func__);
  delete reinterpret_cast<FakeModule *>(module);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *function, CUmodule module,
                             const char *name) {
  countEntry(__func__);
  auto *fake = reinterpret_cast<FakeModule *>(module);
  FakeFunction *&slot = fake->functions[name];
  if (!slot)
    slot = new FakeFunction{name, fake->device};
  *function = reinterpret_cast<CUfunction>(slot);
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) {
  countEntry(__func__);
  return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int *value, CUfunction_attribute, CUfunction) {
  countEntry(__func__);
  *value = 0;
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction function, unsigned gx, unsigned gy,
                        unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned sharedBytes, CUstream stream, void **,
                        void **) {
  countEntry(__func__);
  // A function runs only in the context its module was loaded in.
  if (reinterpret_cast<FakeFunction *>(function)->device !=
      deviceOf(currentContext))
    return CUDA_ERROR_INVALID_HANDLE;
  if (hisa::fake_cuda::launchFails(
          reinterpret_cast<FakeFunction *>(function)->name))
    return CUDA_ERROR_LAUNCH_FAILED;
  Call call =
      streamCall(Call::Launch, stream,
                 reinterpret_cast<FakeFunction *>(function)->name.c_str());
  call.grid[0] = gx, call.grid[1] = gy, call.grid[2] = gz;
  call.block[0] = bx, call.block[1] = by, call.block[2] = bz;
  call.sharedBytes = sharedBytes;
  record(std::move(call));
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction function,
                          void **, void **) {
  countEntry(__func__);
  if (!config)
    return CUDA_ERROR_INVALID_VALUE;
  if (reinterpret_cast<FakeFunction *>(function)->device !=
      deviceOf(currentContext))
    return CUDA_ERROR_INVALID_HANDLE;
  if (hisa::fake_cuda::launchFails(
          reinterpret_cast<FakeFunction *>(function)->name))
    return CUDA_ERROR_LAUNCH_FAILED;
  Call call =
      streamCall(Call::Launch, config->hStream,
                 reinterpret_cast<FakeFunction *>(function)->name.c_str());
  call.grid[0] = config->gridDimX, call.grid[1] = config->gridDimY,
  call.grid[2] = config->gridDimZ;
  call.block[0] = config->blockDimX, call.block[1] = config->blockDimY,
  call.block[2] = config->blockDimZ;
  call.sharedBytes = config->sharedMemBytes;
  for (unsigned i = 0; i < config->numAttrs; ++i)
    if (config->attrs[i].id ==
        CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
      call.programmatic =
          config->attrs[i].value.programmaticStreamSerializationAllowed != 0;
  record(std::move(call));
  return CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus *status) {
  countEntry(__func__);
  std::lock_guard<std::mutex> lock(state().mutex);
  *status = state().capturing.count(reinterpret_cast<uintptr_t>(stream))
                ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
  countEntry(__func__);
  thread_local CUstreamCaptureMode current = CU_STREAM_CAPTURE_MODE_GLOBAL;
  if (!mode)
    return CUDA_ERROR_INVALID_VALUE;
  std::swap(current, *mode);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD8Async(CUdeviceptr to, unsigned char value, size_t bytes,
                         CUstream stream) {
  countEntry(__func__);
  if (!isDeviceRange(to, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memset(reinterpret_cast<void *>(to), value, bytes);
  record(streamCall(Call::Copy, stream, "cuMemsetD8Async"));
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream stream) {
  countEntry(__func__);
  record(streamCall(Call::Synchronizing, stream, "cuStreamSynchronize"));
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
  countEntry(__func__);
  {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    size_t live = size_t(s.counters.bytesAllocated);
    if (bytes > s.memoryLimit || live > s.memoryLimit - bytes)
      return CUDA_ERROR_OUT_OF_MEMORY;
  }
  // cuMemAlloc's alignment (at least 256 bytes: operators check it).
  if (bytes > SIZE_MAX - 511)
    return CUDA_ERROR_OUT_OF_MEMORY;
  size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  void *memory = std::aligned_alloc(256, rounded);
  if (!memory)
    return CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(memory, 0, rounded);
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  *pointer = reinterpret_cast<CUdeviceptr>(memory);
  s.allocations[*pointer] = bytes;
  ++s.counters.allocations;
  s.counters.bytesAllocated += int64_t(bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr pointer) {
  countEntry(__func__);
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.allocations.find(pointer);
  if (it == s.allocations.end())
    return CUDA_ERROR_INVALID_VALUE;
  s.counters.bytesAllocated -= int64_t(it->second);
  ++s.counters.frees;
  s.allocations.erase(it);
  std::free(reinterpret_cast<void *>(pointer));
  return CUDA_SUCCESS;
}

CUresult cuMemsetD8_v2(CUdeviceptr to, unsigned char value, size_t bytes) {
  countEntry(__func__);
  if (!isDeviceRange(to, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memset(reinterpret_cast<void *>(to), value, bytes);
  record(streamCall(Call::Synchronizing, nullptr, "cuMemsetD8"));
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr to, const void *from, size_t bytes) {
  countEntry(__func__);
  if (!isDeviceRange(to, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void *>(to), from, bytes);
  record(streamCall(Call::Synchronizing, nullptr, "cuMemcpyHtoD"));
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *to, CUdeviceptr from, size_t bytes) {
  countEntry(__func__);
  if (!isDeviceRange(from, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(to, reinterpret_cast<const void *>(from), bytes);
  record(streamCall(Call::Synchronizing, nullptr, "cuMemcpyDtoH"));
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr, CUdeviceptr, size_t,
                              CUstream stream) {
  countEntry(__func__);
  record(streamCall(Call::Copy, stream, "cuMemcpyDtoDAsync"));
  return CUDA_SUCCESS;
}

CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *, CUstream stream) {
  countEntry(__func__);
  record(streamCall(Call::Copy, stream, "cuMemcpy2DAsync"));
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *stream, unsigned) {
  countEntry(__func__);
  *stream = reinterpret_cast<CUstream>(
      newHandle(state().streams, state().counters.streamsCreated));
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream stream) {
  countEntry(__func__);
  return dropHandle(state().streams, reinterpret_cast<uintptr_t>(stream));
}

CUresult cuEventCreate(CUevent *event, unsigned) {
  countEntry(__func__);
  *event = reinterpret_cast<CUevent>(
      newHandle(state().events, state().counters.eventsCreated));
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent event) {
  countEntry(__func__);
  return dropHandle(state().events, reinterpret_cast<uintptr_t>(event));
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
  countEntry(__func__);
  Call call = streamCall(Call::EventRecord, stream);
  call.event = reinterpret_cast<uintptr_t>(event);
  record(std::move(call));
  return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned) {
  countEntry(__func__);
  Call call = streamCall(Call::StreamWait, stream);
  call.event = reinterpret_cast<uintptr_t>(event);
  record(std::move(call));
  return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                               CUdeviceptr pointer) {
  countEntry(__func__);
  if (attribute != CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
    return CUDA_ERROR_NOT_SUPPORTED;
  if (!isDeviceRange(pointer, 1))
    return CUDA_ERROR_INVALID_VALUE;
  *static_cast<unsigned *>(data) = CU_MEMORYTYPE_DEVICE;
  return CUDA_SUCCESS;
}

CUresult cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType,
                                cuuint32_t, void *, const cuuint64_t *,
                                const cuuint64_t *, const cuuint32_t *,
                                const cuuint32_t *, CUtensorMapInterleave,
                                CUtensorMapSwizzle, CUtensorMapL2promotion,
                                CUtensorMapFloatOOBfill) {
  countEntry(__func__);
  std::memset(map, 0, sizeof(*map));
  return CUDA_SUCCESS;
}

// Graphs: a graph is a list of kernel nodes in the order they were added
// (the runtime chains them); its launch records one Launch per node on the
// stream, as the launches it replaces would have.

CUresult cuGraphCreate(CUgraph *graph, unsigned) {
  countEntry(__func__);
  auto *fake = new FakeGraph;
  fake->device = deviceOf(currentContext);
  *graph = reinterpret_cast<CUgraph>(fake);
  return CUDA_SUCCESS;
}

static FakeNode nodeOf(const CUDA_KERNEL_NODE_PARAMS *params) {
  FakeNode node;
  node.function = reinterpret_cast<FakeFunction *>(params->func);
  node.grid[0] = params->gridDimX, node.grid[1] = params->gridDimY,
  node.grid[2] = params->gridDimZ;
  node.block[0] = params->blockDimX, node.block[1] = params->blockDimY,
  node.block[2] = params->blockDimZ;
  node.sharedBytes = params->sharedMemBytes;
  if (params->kernelParams && params->kernelParams[0])
    std::memcpy(&node.firstSlot, params->kernelParams[0], sizeof(uint64_t));
  return node;
}

CUresult cuGraphAddKernelNode(CUgraphNode *node, CUgraph graph,
                              const CUgraphNode *, size_t,
                              const CUDA_KERNEL_NODE_PARAMS *params) {
  countEntry(__func__);
  if (!graph || !params || !params->func)
    return CUDA_ERROR_INVALID_VALUE;
  auto *fake = reinterpret_cast<FakeGraph *>(graph);
  if (reinterpret_cast<FakeFunction *>(params->func)->device != fake->device)
    return CUDA_ERROR_INVALID_HANDLE;
  fake->nodes.push_back(nodeOf(params));
  // Node handles are 1-based indices.
  *node = reinterpret_cast<CUgraphNode>(uintptr_t(fake->nodes.size()));
  return CUDA_SUCCESS;
}

CUresult cuGraphAddDependencies(CUgraph graph, const CUgraphNode *from,
                                const CUgraphNode *to,
                                const CUgraphEdgeData *edges, size_t count) {
  countEntry(__func__);
  auto *fake = reinterpret_cast<FakeGraph *>(graph);
  for (size_t i = 0; i < count; ++i) {
    auto source = reinterpret_cast<uintptr_t>(from[i]);
    auto target = reinterpret_cast<uintptr_t>(to[i]);
    // Only chains: each node after the one before it.
    if (target != source + 1 || target > fake->nodes.size())
      return CUDA_ERROR_INVALID_VALUE;
    fake->nodes[target - 1].programmatic =
        edges && edges[i].type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
  }
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiate(CUgraphExec *exec, CUgraph graph,
                            unsigned long long) {
  countEntry(__func__);
  if (!graph)
    return CUDA_ERROR_INVALID_VALUE;
  *exec = reinterpret_cast<CUgraphExec>(
      new FakeGraph(*reinterpret_cast<FakeGraph *>(graph)));
  return CUDA_SUCCESS;
}

CUresult cuGraphExecKernelNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                        const CUDA_KERNEL_NODE_PARAMS *params) {
  countEntry(__func__);
  auto *fake = reinterpret_cast<FakeGraph *>(exec);
  auto index = reinterpret_cast<uintptr_t>(node);
  if (!fake || !params || index < 1 || index > fake->nodes.size())
    return CUDA_ERROR_INVALID_VALUE;
  FakeNode &target = fake->nodes[index - 1];
  // The driver refuses another kernel for an existing node.
  if (reinterpret_cast<FakeFunction *>(params->func) != target.function)
    return CUDA_ERROR_INVALID_VALUE;
  bool programmatic = target.programmatic;
  target = nodeOf(params);
  target.programmatic = programmatic;
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  countEntry(__func__);
  auto *fake = reinterpret_cast<FakeGraph *>(exec);
  if (!fake)
    return CUDA_ERROR_INVALID_VALUE;
  if (fake->device != deviceOf(currentContext))
    return CUDA_ERROR_INVALID_HANDLE;
  for (const FakeNode &node : fake->nodes) {
    if (hisa::fake_cuda::launchFails(node.function->name))
      return CUDA_ERROR_LAUNCH_FAILED;
    Call call = streamCall(Call::Launch, stream, node.function->name.c_str());
    std::copy(node.grid, node.grid + 3, call.grid);
    std::copy(node.block, node.block + 3, call.block);
    call.sharedBytes = node.sharedBytes;
    call.programmatic = node.programmatic;
    call.fromGraph = true;
    call.firstSlot = node.firstSlot;
    record(std::move(call));
  }
  return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec exec) {
  countEntry(__func__);
  delete reinterpret_cast<FakeGraph *>(exec);
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph graph) {
  countEntry(__func__);
  delete reinterpret_cast<FakeGraph *>(graph);
  return CUDA_SUCCESS;
}

} // extern "C"
