//===- LaunchGraph.h - An operator's launches as one CUDA graph -*- C++ -*-===//
//
// The CUDA driver's cost of a kernel launch on the host (~4-6 us on the
// GPU machine's host) is most of the host time of an operator that launches
// several kernels (the HISA indexer: three). A CUDA graph of those launches,
// instantiated once per stream and kernel sequence and relaunched with
// their new parameters, costs one graph launch plus one parameter update
// per kernel whose parameters changed (docs/performance.md, host time).
//
//   runtime::GraphLaunchScope graph(stream);
//   ... the operators' launches (recorded, not issued) ...
//   return graph.finish(); // issues them: one graph launch
//
// Inside a stream capture (a caller building its own graph), with launch
// graphs turned off, with a driver without the graph entry points, or for
// fewer than two launches, finish() issues the recorded launches one by
// one, as without the scope.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_RUNTIME_LAUNCHGRAPH_H
#define HISA_RUNTIME_LAUNCHGRAPH_H

#include "hisa/Runtime/CudaDriver.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cuda.h>

#include <array>
#include <vector>

namespace hisa::runtime {

/// One kernel launch as LoadedKernel::launch would issue it.
struct RecordedLaunch {
  CUfunction function = nullptr;
  std::array<unsigned, 3> grid{};
  std::array<unsigned, 3> block{};
  unsigned sharedBytes = 0;
  /// Launched as a programmatic dependent of the launch before it.
  bool programmatic = false;
  /// The parameter slots (8 bytes each), then the tensor maps by value.
  llvm::SmallVector<uint64_t, 64> slots;
  std::vector<CUtensorMap> tensorMaps;
  const char *kernelName = "";
};

/// While alive, the kernel launches of this thread are recorded instead of
/// issued; finish() issues them on `stream` in their order, as one graph
/// launch where it can. A scope that is destroyed without finish() (an
/// operator that failed partway) issues nothing. Scopes do not nest.
class GraphLaunchScope {
public:
  explicit GraphLaunchScope(void *stream);
  ~GraphLaunchScope();
  GraphLaunchScope(const GraphLaunchScope &) = delete;
  GraphLaunchScope &operator=(const GraphLaunchScope &) = delete;

  /// Issues the recorded launches; the scope then records nothing more.
  llvm::Error finish();

  /// Called by LoadedKernel::launch in place of the driver's launch. A
  /// launch on another stream than the scope's is refused: the graph would
  /// reorder it.
  llvm::Error record(RecordedLaunch launch, CUstream launchStream);

private:
  /// The launches and finish() ask the driver for the context once.
  CurrentContextScope currentContext;
  CUstream stream;
  GraphLaunchScope *previous;
  /// (Inline: an operator's few launches cost no heap allocation.)
  llvm::SmallVector<RecordedLaunch, 4> launches;
  bool active = true;
};

/// The scope recording this thread's launches, or null.
GraphLaunchScope *activeGraphLaunchScope();

/// Whether finish() may use CUDA graphs (default on; HISA_LAUNCH_GRAPHS=0
/// in the environment turns it off). Process-wide; returns the previous
/// setting.
bool setLaunchGraphs(bool enabled);

/// Graphs instantiated and graph launches issued so far (for tests and
/// benchmarks).
struct LaunchGraphStats {
  int64_t instantiated = 0;
  int64_t launched = 0;
  int64_t nodeUpdates = 0;
};
LaunchGraphStats getLaunchGraphStats();

} // namespace hisa::runtime

#endif // HISA_RUNTIME_LAUNCHGRAPH_H
