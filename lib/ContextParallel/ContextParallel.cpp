//===- ContextParallel.cpp - Context-parallel prefill over NCCL -----------===//

#include "hisa/ContextParallel/ContextParallel.h"

#include "hisa/Indexer/Indexer.h"
#include "hisa/Ops/Operators.h"
#include "hisa/Runtime/CudaDriver.h"
#include "hisa/Runtime/Jit.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <string>
#include <tuple>

using namespace llvm;
using hisa::runtime::CudaDriver;

namespace hisa::cp {
namespace {

Error argumentError(const Twine &message) {
  return createStringError(std::make_error_code(std::errc::invalid_argument),
                           message);
}

constexpr uint64_t kAlignment = 256;

/// The most ranks a sequence is split over (hisa_cp_rank_ranges says the
/// same): the split's arithmetic (total * 2 * world) stays within int64 and
/// the walks over the ranks stay short.
constexpr int64_t kMaxWorld = 65536;

/// The widest row gatherTokens moves (hisa's are at most 1 KiB).
constexpr uint64_t kMaxGatherRowBytes = uint64_t(1) << 20;

/// A sequence of `total` tokens (int32 positions) split over `world` ranks,
/// of which this is `rank`.
Error checkSplit(const char *op, int64_t total, int64_t world, int64_t rank) {
  if (total < 1 || total > INT32_MAX || world < 1 || world > kMaxWorld ||
      rank < 0 || rank >= world)
    return argumentError(formatv(
        "{0}: total = {1}, world = {2}, rank = {3}: need 1 <= total <= {4} "
        "(int32 positions), 1 <= world <= {5} and 0 <= rank < world",
        op, total, world, rank, INT32_MAX, kMaxWorld));
  return Error::success();
}
uint64_t alignPiece(uint64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

/// The NCCL entry points hisa uses, opened at run time (NCCL's C ABI: int
/// results, opaque communicators, ncclUint8 = 1).
struct Nccl {
  using Result = int;
  Result (*allGather)(const void *, void *, size_t, int, void *,
                      void *) = nullptr;
  Result (*commCount)(void *, int *) = nullptr;
  Result (*commUserRank)(void *, int *) = nullptr;
  const char *(*getErrorString)(Result) = nullptr;

  static Expected<Nccl &> get() {
    static std::mutex mutex;
    static Nccl nccl;
    static std::string failure;
    std::lock_guard<std::mutex> lock(mutex);
    if (nccl.allGather)
      return nccl;
    // An incomplete NCCL is reported the same way every time
    // (HISA_ERROR_NO_DEVICE); a library that could not be opened is tried
    // again (the caller may set HISA_NCCL_LIB, as the message says).
    if (!failure.empty())
      return make_error<runtime::NoDeviceError>(failure);
    const char *path = std::getenv("HISA_NCCL_LIB");
    bool named = path && *path;
    std::string name = named ? path : "libnccl.so.2";
    // The NCCL the process already has (linked in, or loaded by torch) is
    // the one that made the caller's communicator: a second copy would
    // read another library's ncclComm. A library named by HISA_NCCL_LIB
    // comes first; by its default name only where the process has none.
    void *library = nullptr;
    if (named || !dlsym(RTLD_DEFAULT, "ncclAllGather"))
      library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    else
      library = RTLD_DEFAULT;
    if (!library)
      return make_error<runtime::NoDeviceError>(
          "context parallelism needs NCCL: cannot open " + name + " (" +
          dlerror() + "; set HISA_NCCL_LIB to its path)");
    const char *missing = nullptr;
    auto load = [&](const char *symbol, auto &function) {
      function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(
          dlsym(library, symbol));
      if (!function && !missing)
        missing = symbol;
    };
    load("ncclAllGather", nccl.allGather);
    load("ncclCommCount", nccl.commCount);
    load("ncclCommUserRank", nccl.commUserRank);
    load("ncclGetErrorString", nccl.getErrorString);
    if (missing) {
      nccl.allGather = nullptr;
      if (library != RTLD_DEFAULT)
        dlclose(library);
      failure = name + " lacks " + missing + ", an NCCL entry point hisa uses";
      return make_error<runtime::NoDeviceError>(failure);
    }
    return nccl;
  }

  /// A failed NCCL call is a failure of the device side (HISA_ERROR_CUDA),
  /// not of the caller's arguments. ncclInProgress (7: a non-blocking
  /// communicator) is refused by name: hisa queues its copies and kernels
  /// right after the collective and cannot wait for one still in flight.
  Error check(Result result, const char *what) const {
    if (result == 0)
      return Error::success();
    if (result == 7)
      return make_error<runtime::CudaError>(
          CUDA_ERROR_NOT_SUPPORTED,
          formatv("{0} returned ncclInProgress: context parallelism needs a "
                  "blocking NCCL communicator",
                  what));
    return make_error<runtime::CudaError>(
        CUDA_ERROR_UNKNOWN,
        formatv("{0} failed: {1}", what, getErrorString(result)));
  }
};

/// The communicator's size and this process's rank in it.
Expected<std::pair<int64_t, int64_t>> worldOf(void *comm) {
  if (!comm)
    return argumentError("context parallel: the NCCL communicator is NULL");
  Expected<Nccl &> nccl = Nccl::get();
  if (!nccl)
    return nccl.takeError();
  int count = 0, rank = 0;
  if (Error error = nccl->check(nccl->commCount(comm, &count), "ncclCommCount"))
    return std::move(error);
  if (Error error =
          nccl->check(nccl->commUserRank(comm, &rank), "ncclCommUserRank"))
    return std::move(error);
  return std::make_pair(int64_t(count), int64_t(rank));
}

int64_t widestRank(int64_t total, int64_t world) {
  int64_t widest = 0;
  for (int64_t r = 0; r < world; ++r)
    widest = std::max(widest, localTokens(total, world, r));
  return widest;
}

/// A rank that holds the most tokens: workspace sizes grow with a rank's
/// tokens, and are given for it so that every rank asks for the same size
/// (a rank refused for a workspace sized for another would leave the
/// others waiting in the all-gather).
int64_t widestRankIndex(int64_t total, int64_t world) {
  int64_t widest = 0;
  for (int64_t r = 1; r < world; ++r)
    if (localTokens(total, world, r) > localTokens(total, world, widest))
      widest = r;
  return widest;
}

/// Every rank-local argument check before the first collective: a rank
/// that returned before it would leave its peers waiting. Pointers of a
/// rank without tokens may be NULL (torch's empty tensors), but not the
/// workspace, which the all-gather writes on every rank.
Error checkLocalPointers(
    const char *op, int64_t local,
    ArrayRef<std::tuple<const char *, const void *, unsigned>> pointers) {
  SmallVector<std::pair<const char *, const void *>> named;
  for (auto [name, pointer, alignment] : pointers) {
    if (local == 0 && StringRef(name) != "workspace")
      continue;
    if (!pointer)
      return argumentError(formatv("{0}: {1} must not be NULL", op, name));
    if (reinterpret_cast<uintptr_t>(pointer) % alignment)
      return argumentError(formatv("{0}: {1} ({2}) must be {3}-byte aligned",
                                   op, name, pointer, alignment));
    named.push_back({name, pointer});
  }
  return runtime::checkDevicePointers(op, named);
}

} // namespace

std::array<std::pair<int64_t, int64_t>, 2>
rankRanges(int64_t total, int64_t world, int64_t rank) {
  auto bound = [&](int64_t i) { return total * i / (2 * world); };
  int64_t late = 2 * world - 1 - rank;
  return {std::make_pair(bound(rank), bound(rank + 1)),
          std::make_pair(bound(late), bound(late + 1))};
}

int64_t localTokens(int64_t total, int64_t world, int64_t rank) {
  auto ranges = rankRanges(total, world, rank);
  return (ranges[0].second - ranges[0].first) +
         (ranges[1].second - ranges[1].first);
}

uint64_t gatherWorkspaceSize(int64_t total, int64_t world, uint64_t rowBytes) {
  return alignPiece(uint64_t(world) * widestRank(total, world) * rowBytes);
}

Error gatherTokens(const void *local, void *global, int64_t total,
                   uint64_t rowBytes, void *comm, void *workspace,
                   uint64_t workspaceBytes, void *stream) {
  const char *op = "cp_gather_tokens";
  Expected<std::pair<int64_t, int64_t>> world = worldOf(comm);
  if (!world)
    return world.takeError();
  auto [ranks, rank] = *world;
  // The bounds keep every byte count below 2^63 (2 * total rows of at most
  // kMaxGatherRowBytes).
  if (total < 0 || total > INT32_MAX || ranks > kMaxWorld || rowBytes == 0 ||
      rowBytes > kMaxGatherRowBytes)
    return argumentError(formatv(
        "{0}: total = {1}, world = {2}, row bytes = {3}: need 0 <= total <= "
        "{4}, world <= {5} and 1 <= row bytes <= {6}",
        op, total, ranks, rowBytes, INT32_MAX, kMaxWorld, kMaxGatherRowBytes));
  uint64_t needed = gatherWorkspaceSize(total, ranks, rowBytes);
  if ((needed && !workspace) || workspaceBytes < needed)
    return argumentError(formatv("{0}: workspace has {1} bytes, needs {2}", op,
                                 workspace ? workspaceBytes : 0, needed));
  if ((localTokens(total, ranks, rank) && !local) || (total && !global))
    return argumentError(formatv("{0}: {1} must not be NULL", op,
                                 total && !global ? "global" : "local"));
  Expected<CudaDriver &> driver = CudaDriver::get();
  if (!driver)
    return driver.takeError();
  int64_t widest = widestRank(total, ranks);
  int64_t mine = localTokens(total, ranks, rank);
  auto *scratch = static_cast<char *>(workspace);
  CUstream cuStream = static_cast<CUstream>(stream);
  // This rank's rows into its slot of the gather buffer (in place), then
  // one all-gather of `widest` rows per rank.
  char *slot = scratch + uint64_t(rank) * widest * rowBytes;
  auto copy = [&](void *dst, const void *src, uint64_t bytes) -> Error {
    if (bytes == 0 || dst == src)
      return Error::success();
    CUresult result = driver->memcpyDtoDAsync(
        reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src),
        bytes, cuStream);
    if (result != CUDA_SUCCESS)
      return make_error<runtime::CudaError>(
          result, formatv("{0}: cuMemcpyDtoDAsync failed: {1}", op,
                          driver->describe(result)));
    return Error::success();
  };
  if (Error error = copy(slot, local, mine * rowBytes))
    return error;
  Expected<Nccl &> nccl = Nccl::get();
  if (!nccl)
    return nccl.takeError();
  if (widest)
    if (Error error =
            nccl->check(nccl->allGather(slot, scratch, widest * rowBytes,
                                        /*ncclUint8=*/1, comm, stream),
                        "ncclAllGather"))
      return error;
  // Each rank's two chunks to their global positions.
  for (int64_t r = 0; r < ranks; ++r) {
    auto ranges = rankRanges(total, ranks, r);
    uint64_t offset = uint64_t(r) * widest * rowBytes;
    for (auto [start, end] : ranges) {
      uint64_t bytes = uint64_t(end - start) * rowBytes;
      if (Error error =
              copy(static_cast<char *>(global) + uint64_t(start) * rowBytes,
                   scratch + offset, bytes))
        return error;
      offset += bytes;
    }
  }
  return Error::success();
}

namespace {

/// The workspace pieces of hisaIndexerCp, as byte offsets.
struct IndexerLayout {
  uint64_t keys, scales, starts, ends, gather, indexer, total;
};

Expected<IndexerLayout> indexerLayout(const IndexerCpShape &shape,
                                      int64_t rank) {
  if (Error error =
          checkSplit("hisa_indexer_cp", shape.total, shape.world, rank))
    return std::move(error);
  int64_t local = localTokens(shape.total, shape.world, rank);
  indexer::IndexerShape single{local,           shape.total, shape.heads,
                               shape.dim,       shape.kb,    shape.blockTopk,
                               shape.topkTokens};
  Expected<uint64_t> indexerBytes = indexer::hisaIndexerWorkspaceSize(single);
  if (!indexerBytes)
    // Its N is the caller's total: say so (the size checks are all).
    return argumentError(formatv(
        "hisa_indexer_cp: each rank's indexer runs over the keys of all "
        "total = {0} tokens (its N): {1}",
        shape.total, toString(indexerBytes.takeError())));
  IndexerLayout layout;
  uint64_t at = 0;
  auto piece = [&](uint64_t bytes) {
    uint64_t start = at;
    at += alignPiece(bytes);
    return start;
  };
  layout.keys = piece(uint64_t(shape.total) * shape.dim);
  layout.scales = piece(uint64_t(shape.total) * 4);
  layout.starts = piece(uint64_t(local) * 4);
  layout.ends = piece(uint64_t(local) * 4);
  layout.gather =
      piece(std::max(gatherWorkspaceSize(shape.total, shape.world, shape.dim),
                     gatherWorkspaceSize(shape.total, shape.world, 4)));
  layout.indexer = piece(*indexerBytes);
  layout.total = at;
  return layout;
}

} // namespace

Expected<uint64_t> hisaIndexerCpWorkspaceSize(const IndexerCpShape &shape,
                                              int64_t rank) {
  if (Error error =
          checkSplit("hisa_indexer_cp", shape.total, shape.world, rank))
    return std::move(error);
  Expected<IndexerLayout> layout =
      indexerLayout(shape, widestRankIndex(shape.total, shape.world));
  if (!layout)
    return layout.takeError();
  return layout->total;
}

Error hisaIndexerCp(const void *q, const void *k, const float *kScale,
                    const float *weights, int32_t *out,
                    const IndexerCpShape &shape, void *comm, void *workspace,
                    uint64_t workspaceBytes, void *stream) {
  const char *op = "hisa_indexer_cp";
  Expected<std::pair<int64_t, int64_t>> world = worldOf(comm);
  if (!world)
    return world.takeError();
  auto [ranks, rank] = *world;
  if (ranks != shape.world)
    return argumentError(formatv("{0}: the communicator has {1} ranks, the "
                                 "shape says world = {2}",
                                 op, ranks, shape.world));
  Expected<IndexerLayout> layout = indexerLayout(shape, rank);
  if (!layout)
    return layout.takeError();
  if (!workspace || workspaceBytes < layout->total)
    return argumentError(formatv("{0}: workspace has {1} bytes, needs {2}", op,
                                 workspace ? workspaceBytes : 0,
                                 layout->total));
  if (Error error =
          checkLocalPointers(op, localTokens(shape.total, shape.world, rank),
                             {{"q", q, 16},
                              {"k", k, 16},
                              {"k_scale", kScale, 4},
                              {"weights", weights, 16},
                              {"out", out, 4},
                              {"workspace", workspace, 256}}))
    return error;
  auto *base = static_cast<char *>(workspace);
  auto *keys = base + layout->keys;
  auto *scales = reinterpret_cast<float *>(base + layout->scales);
  auto *starts = reinterpret_cast<int32_t *>(base + layout->starts);
  auto *ends = reinterpret_cast<int32_t *>(base + layout->ends);
  void *gather = base + layout->gather;
  uint64_t gatherBytes = layout->indexer - layout->gather;
  if (Error error = gatherTokens(k, keys, shape.total, shape.dim, comm, gather,
                                 gatherBytes, stream))
    return error;
  if (Error error = gatherTokens(kScale, scales, shape.total, 4, comm, gather,
                                 gatherBytes, stream))
    return error;
  int64_t local = localTokens(shape.total, shape.world, rank);
  auto ranges = rankRanges(shape.total, shape.world, rank);
  if (Error error = ops::cpWindows(starts, ends, local, ranges[0].first,
                                   ranges[0].second - ranges[0].first,
                                   ranges[1].first, stream))
    return error;
  indexer::IndexerShape single{local,           shape.total, shape.heads,
                               shape.dim,       shape.kb,    shape.blockTopk,
                               shape.topkTokens};
  return indexer::hisaIndexer(q, keys, scales, weights, starts, ends, out,
                              single, base + layout->indexer,
                              layout->total - layout->indexer, stream);
}

Expected<uint64_t> sparseAttnCpWorkspaceSize(int64_t total, int64_t world,
                                             int64_t rank, int64_t heads,
                                             int64_t topk) {
  if (Error error = checkSplit("sparse_attn_cp", total, world, rank))
    return std::move(error);
  // Every rank gets the largest of the ranks' sizes. Not the widest rank's:
  // with few tokens the split-key workspace grows as tokens shrink (more
  // splits per token), so a rank with fewer tokens may need more (total 33
  // over 2 ranks, topk 512: 17 tokens in 7 splits, 16 in 8).
  uint64_t attn = 0;
  SmallVector<int64_t, 4> counts;
  for (int64_t r = 0; r < world; ++r) {
    int64_t tokens = localTokens(total, world, r);
    if (llvm::is_contained(counts, tokens))
      continue;
    counts.push_back(tokens);
    uint64_t bytes = 0;
    if (Error error =
            ops::sparseAttnWorkspaceSize(1, tokens, heads, topk, &bytes))
      return std::move(error);
    attn = std::max(attn, bytes);
  }
  return alignPiece(uint64_t(total) * 1024) +
         alignPiece(gatherWorkspaceSize(total, world, 1024)) + alignPiece(attn);
}

Error sparseAttnCp(const void *q, const void *kv, const float *attnSink,
                   const int32_t *topkIdxs, void *o, int64_t total,
                   int64_t heads, int64_t topk, float softmaxScale, void *comm,
                   void *workspace, uint64_t workspaceBytes, void *stream) {
  const char *op = "sparse_attn_cp";
  Expected<std::pair<int64_t, int64_t>> world = worldOf(comm);
  if (!world)
    return world.takeError();
  auto [ranks, rank] = *world;
  Expected<uint64_t> needed =
      sparseAttnCpWorkspaceSize(total, ranks, rank, heads, topk);
  if (!needed)
    return needed.takeError();
  if (!workspace || workspaceBytes < *needed)
    return argumentError(formatv("{0}: workspace has {1} bytes, needs {2}", op,
                                 workspace ? workspaceBytes : 0, *needed));
  // sparse_attn checks the scale too, but after the gather: a refusal there
  // would come after the peers entered the collective.
  if (!std::isfinite(softmaxScale))
    return argumentError(
        formatv("{0}: softmax_scale = {1} is not finite", op, softmaxScale));
  if (Error error = checkLocalPointers(op, localTokens(total, ranks, rank),
                                       {{"q", q, 16},
                                        {"kv", kv, 16},
                                        {"attn_sink", attnSink, 4},
                                        {"topk_idxs", topkIdxs, 4},
                                        {"o", o, 16},
                                        {"workspace", workspace, 256}}))
    return error;
  auto *base = static_cast<char *>(workspace);
  uint64_t kvBytes = alignPiece(uint64_t(total) * 1024);
  uint64_t gatherBytes = alignPiece(gatherWorkspaceSize(total, ranks, 1024));
  if (Error error = gatherTokens(kv, base, total, 1024, comm, base + kvBytes,
                                 gatherBytes, stream))
    return error;
  int64_t local = localTokens(total, ranks, rank);
  return ops::sparseAttn(q, base, attnSink, topkIdxs, o, nullptr, 1, local,
                         heads, total, topk, softmaxScale,
                         base + kvBytes + gatherBytes,
                         *needed - kvBytes - gatherBytes, stream);
}

} // namespace hisa::cp
