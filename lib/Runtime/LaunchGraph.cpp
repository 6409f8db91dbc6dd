//===- LaunchGraph.cpp - An operator's launches as one CUDA graph ---------===//

#include "hisa/Runtime/LaunchGraph.h"

#include "hisa/Runtime/CudaDriver.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

// Programmatic edges (CUgraphEdgeData) came with CUDA 12.3's headers.
static_assert(CUDA_VERSION >= 12030,
              "hisa's launch graphs need cuda.h from CUDA 12.3 or later");

using namespace llvm;
using namespace hisa::runtime;

namespace {

thread_local GraphLaunchScope *activeScope = nullptr;

bool launchGraphsByDefault() {
  const char *value = std::getenv("HISA_LAUNCH_GRAPHS");
  return !(value && StringRef(value) == "0");
}
std::atomic<bool> launchGraphsEnabled{launchGraphsByDefault()};

std::atomic<int64_t> instantiatedCount{0}, launchedCount{0}, updateCount{0};

/// Graphs kept per process: one per (context, stream, kernel sequence) an
/// operator launched; past this the least recently launched one is
/// destroyed (the driver lets a launch in flight finish first).
constexpr size_t kMaxGraphs = 64;

/// The kernel-node parameters of a launch, pointing into `launch`.
struct NodeParams {
  SmallVector<void *, 80> pointers;
  CUDA_KERNEL_NODE_PARAMS params;

  explicit NodeParams(RecordedLaunch &launch) {
    for (uint64_t &slot : launch.slots)
      pointers.push_back(&slot);
    for (CUtensorMap &map : launch.tensorMaps)
      pointers.push_back(&map);
    std::memset(&params, 0, sizeof(params));
    params.func = launch.function;
    params.gridDimX = launch.grid[0];
    params.gridDimY = launch.grid[1];
    params.gridDimZ = launch.grid[2];
    params.blockDimX = launch.block[0];
    params.blockDimY = launch.block[1];
    params.blockDimZ = launch.block[2];
    params.sharedMemBytes = launch.sharedBytes;
    params.kernelParams = pointers.data();
  }
};

/// Whether two launches of the same kernel have the same parameters.
bool sameParameters(const RecordedLaunch &a, const RecordedLaunch &b) {
  return a.grid == b.grid && a.block == b.block &&
         a.sharedBytes == b.sharedBytes && a.slots == b.slots &&
         a.tensorMaps.size() == b.tensorMaps.size() &&
         (a.tensorMaps.empty() ||
          std::memcmp(a.tensorMaps.data(), b.tensorMaps.data(),
                      a.tensorMaps.size() * sizeof(CUtensorMap)) == 0);
}

/// An instantiated graph of one kernel sequence on one stream, and the
/// parameters its nodes hold now.
struct CachedGraph {
  CUcontext context;
  CUstream stream;
  SmallVector<CUfunction, 4> functions;
  SmallVector<bool, 4> programmatic;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  SmallVector<CUgraphNode, 4> nodes;
  std::vector<RecordedLaunch> current;
  uint64_t lastUse = 0;
};

struct GraphCache {
  std::mutex mutex;
  std::vector<std::unique_ptr<CachedGraph>> graphs;
  uint64_t uses = 0;
  /// Set when the driver cannot build these graphs at all (not supported):
  /// later calls launch one by one (said once on stderr).
  bool broken = false;
};

GraphCache &graphCache() {
  // Never destroyed: graphs belong to contexts that may outlive statics.
  static GraphCache *cache = new GraphCache();
  return *cache;
}

bool matches(const CachedGraph &graph, CUcontext context, CUstream stream,
             ArrayRef<RecordedLaunch> launches) {
  if (graph.context != context || graph.stream != stream ||
      graph.functions.size() != launches.size())
    return false;
  for (auto [function, programmatic, launch] :
       llvm::zip(graph.functions, graph.programmatic, launches))
    if (function != launch.function || programmatic != launch.programmatic)
      return false;
  return true;
}

Error launchOneByOne(CudaDriver &driver, CUstream stream,
                     MutableArrayRef<RecordedLaunch> launches) {
  for (RecordedLaunch &launch : launches) {
    NodeParams node(launch);
    if (Error error = driver.launch(launch.function, launch.grid, launch.block,
                                    launch.sharedBytes, stream,
                                    node.pointers.data(), launch.kernelName,
                                    launch.programmatic))
      return error;
  }
  return Error::success();
}

/// A graph of `launches` in order (a programmatic edge where a launch is a
/// programmatic dependent, as a stream capture of them would record).
Expected<std::unique_ptr<CachedGraph>>
buildGraph(CudaDriver &driver, CUcontext context, CUstream stream,
           MutableArrayRef<RecordedLaunch> launches) {
  auto cached = std::make_unique<CachedGraph>();
  cached->context = context;
  cached->stream = stream;
  auto destroy = [&]() {
    if (cached->exec)
      driver.graphExecDestroy(cached->exec);
    if (cached->graph)
      driver.graphDestroy(cached->graph);
  };
  if (Error error = checkCuda(driver.graphCreate(&cached->graph, 0),
                              "cuGraphCreate")) {
    destroy();
    return std::move(error);
  }
  for (RecordedLaunch &launch : launches) {
    NodeParams node(launch);
    CUgraphNode added = nullptr;
    if (Error error = checkCuda(driver.graphAddKernelNode(&added, cached->graph,
                                                          nullptr, 0,
                                                          &node.params),
                                "cuGraphAddKernelNode", launch.kernelName)) {
      destroy();
      return std::move(error);
    }
    if (!cached->nodes.empty()) {
      CUgraphEdgeData edge;
      std::memset(&edge, 0, sizeof(edge));
      if (launch.programmatic) {
        edge.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
        edge.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
      }
      if (Error error = checkCuda(
              driver.graphAddDependencies(cached->graph, &cached->nodes.back(),
                                          &added, &edge, 1),
              "cuGraphAddDependencies", launch.kernelName)) {
        destroy();
        return std::move(error);
      }
    }
    cached->nodes.push_back(added);
    cached->functions.push_back(launch.function);
    cached->programmatic.push_back(launch.programmatic);
  }
  if (Error error =
          checkCuda(driver.graphInstantiate(&cached->exec, cached->graph, 0),
                    "cuGraphInstantiate")) {
    destroy();
    return std::move(error);
  }
  ++instantiatedCount;
  return std::move(cached);
}

} // namespace

GraphLaunchScope::GraphLaunchScope(void *stream)
    : stream(static_cast<CUstream>(stream)), previous(activeScope) {
  activeScope = this;
}

GraphLaunchScope::~GraphLaunchScope() {
  if (active)
    activeScope = previous;
}

GraphLaunchScope *hisa::runtime::activeGraphLaunchScope() {
  return activeScope;
}

Error GraphLaunchScope::record(RecordedLaunch launch, CUstream launchStream) {
  if (launchStream != stream)
    return createStringError(
        std::errc::invalid_argument,
        "kernel '%s' launched on another stream than its operator's launch "
        "graph (an operator inside a GraphLaunchScope launches only on the "
        "scope's stream)",
        launch.kernelName);
  launches.push_back(std::move(launch));
  return Error::success();
}

Error GraphLaunchScope::finish() {
  if (!active)
    return createStringError(std::errc::invalid_argument,
                             "GraphLaunchScope::finish called twice");
  active = false;
  activeScope = previous;
  if (launches.empty())
    return Error::success();
  Expected<CudaDriver &> loaded = CudaDriver::get();
  if (!loaded)
    return loaded.takeError();
  CudaDriver &driver = *loaded;
  bool graphs = launches.size() >= 2 &&
                launchGraphsEnabled.load(std::memory_order_relaxed) &&
                driver.graphCreate && driver.graphAddKernelNode &&
                driver.graphAddDependencies && driver.graphInstantiate &&
                driver.graphExecKernelNodeSetParams && driver.graphLaunch &&
                driver.graphExecDestroy && driver.graphDestroy &&
                driver.streamIsCapturing;
  if (graphs) {
    // A caller capturing its own graph records the launches themselves.
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    if (Error error = checkCuda(driver.streamIsCapturing(stream, &capture),
                                "cuStreamIsCapturing"))
      return error;
    graphs = capture == CU_STREAM_CAPTURE_STATUS_NONE;
  }
  if (!graphs)
    return launchOneByOne(driver, stream, launches);

  Expected<CUcontext> current = driver.ensureContext();
  if (!current)
    return current.takeError();
  CUcontext context = *current;
  GraphCache &cache = graphCache();
  std::unique_lock<std::mutex> lock(cache.mutex);
  if (cache.broken) {
    lock.unlock();
    return launchOneByOne(driver, stream, launches);
  }
  auto find = [&]() -> CachedGraph * {
    for (std::unique_ptr<CachedGraph> &cached : cache.graphs)
      if (matches(*cached, context, stream, launches))
        return cached.get();
    return nullptr;
  };
  CachedGraph *graph = find();
  bool fresh = false;
  if (!graph) {
    // Instantiation takes tens of microseconds: not under the lock every
    // other stream's (and device's) launches take. It is not capturable:
    // in the relaxed mode it leaves another thread's capture in the global
    // mode alone.
    lock.unlock();
    Expected<std::unique_ptr<CachedGraph>> built = [&] {
      RelaxedCaptureScope relaxed(driver);
      return buildGraph(driver, context, stream, launches);
    }();
    if (!built) {
      // A driver that does not support these graphs will not build the next
      // one: say so once and launch one by one from now on. Anything else
      // (out of memory...) is this call's error.
      bool unsupported = false;
      Error error = handleErrors(
          built.takeError(), [&](std::unique_ptr<CudaError> cuda) -> Error {
            unsupported = cuda->getResult() == CUDA_ERROR_NOT_SUPPORTED;
            return Error(std::move(cuda));
          });
      if (!unsupported)
        return error;
      std::string message = toString(std::move(error));
      lock.lock();
      bool first = !cache.broken;
      cache.broken = true;
      lock.unlock();
      if (first)
        errs() << "hisa: CUDA graphs of an operator's launches are not "
                  "supported here ("
               << message
               << "); launching its kernels one by one from now on\n";
      return launchOneByOne(driver, stream, launches);
    }
    lock.lock();
    // Another thread may have built one for this stream meanwhile.
    graph = find();
    // (Destruction is not capturable either.)
    auto destroy = [&](CachedGraph &unused) {
      RelaxedCaptureScope relaxed(driver);
      driver.graphExecDestroy(unused.exec);
      driver.graphDestroy(unused.graph);
    };
    if (graph) {
      destroy(**built);
    } else {
      if (cache.graphs.size() >= kMaxGraphs) {
        auto oldest = std::min_element(cache.graphs.begin(), cache.graphs.end(),
                                       [](const auto &a, const auto &b) {
                                         return a->lastUse < b->lastUse;
                                       });
        destroy(**oldest);
        cache.graphs.erase(oldest);
      }
      graph = built->get();
      graph->current.assign(launches.begin(), launches.end());
      cache.graphs.push_back(std::move(*built));
      fresh = true;
    }
  }
  if (!fresh) {
    // Only the nodes whose parameters changed are updated (a server's
    // steady state often passes the same buffers again).
    for (size_t index = 0; index < launches.size(); ++index) {
      RecordedLaunch &launch = launches[index];
      if (sameParameters(graph->current[index], launch))
        continue;
      NodeParams node(launch);
      if (Error error = checkCuda(
              driver.graphExecKernelNodeSetParams(
                  graph->exec, graph->nodes[index], &node.params),
              "cuGraphExecKernelNodeSetParams", launch.kernelName))
        return error;
      ++updateCount;
      graph->current[index] = std::move(launch);
    }
  }
  graph->lastUse = ++cache.uses;
  ++launchedCount;
  return checkCuda(driver.graphLaunch(graph->exec, stream), "cuGraphLaunch",
                   graph->current.front().kernelName);
}

bool hisa::runtime::setLaunchGraphs(bool enabled) {
  return launchGraphsEnabled.exchange(enabled);
}

LaunchGraphStats hisa::runtime::getLaunchGraphStats() {
  return {instantiatedCount.load(), launchedCount.load(), updateCount.load()};
}
