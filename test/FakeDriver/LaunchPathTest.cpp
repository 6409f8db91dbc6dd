//===- LaunchPathTest.cpp - The runtime's launch path on the fake driver --===//
//
// What a launch asks of the driver besides cuLaunchKernel, on the fake
// driver (FakeCuda.h): device-pointer queries (skipped inside a
// TrustedPointersScope, and by orchestration layers after their own
// checks) and tensor-map encodings (reused for the same tensor, redone for
// another). Host time per call is what these save.
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"

#include "hisa/Runtime/CudaDriver.h"
#include "hisa/Runtime/Jit.h"
#include "hisa/Runtime/hisa_runtime.h"

#include "gtest/gtest.h"

#include <cuda.h>

#include <string>

using namespace hisa::runtime;
using hisa::fake_cuda::deviceBuffer;

namespace {

LaunchArgument tensor(void *data, std::initializer_list<int64_t> sizes) {
  LaunchArgument argument;
  argument.kind = KernelMetadata::Argument::Tensor;
  argument.data = data;
  argument.sizes.assign(sizes.begin(), sizes.end());
  return argument;
}

/// mqa_logits_decode (heads = 64, dim = 128): its keys and key scales come
/// through TMA.
LoadedKernel *logitsKernel() {
  auto kernel =
      Jit::get().getKernel(getBuiltinKernelSource("mqa_logits_decode"),
                           "mqa_logits_decode", "dim=128,heads=64", "sm_90a");
  EXPECT_TRUE(bool(kernel)) << (kernel ? "" : toString(kernel.takeError()));
  return kernel ? *kernel : nullptr;
}

/// The seven arguments of a logits launch of `m` queries over rows of
/// `row` keys.
struct LogitsBuffers {
  int64_t m, row;
  void *q, *k, *scale, *weights, *starts, *ends, *logits;
  LogitsBuffers(int64_t m, int64_t row)
      : m(m), row(row), q(deviceBuffer(m * 64 * 128)),
        k(deviceBuffer(m * row * 128)), scale(deviceBuffer(m * row * 4)),
        weights(deviceBuffer(m * 64 * 4)), starts(deviceBuffer(m * 4)),
        ends(deviceBuffer(m * 4)), logits(deviceBuffer(m * row * 4)) {}
  llvm::Error launch(LoadedKernel &kernel, void *keys = nullptr,
                     int64_t keyRows = -1, CUstream stream = nullptr) {
    LaunchArgument arguments[] = {
        tensor(q, {m * 64, 128}),
        tensor(keys ? keys : k, {keyRows < 0 ? m * row : keyRows, 128}),
        tensor(scale, {m * row}),
        tensor(weights, {m, 64}),
        tensor(starts, {m}),
        tensor(ends, {m}),
        tensor(logits, {m, row})};
    return kernel.launch(arguments, stream);
  }
};

TEST(LaunchPath, TensorMapsAreEncodedOncePerTensor) {
  LoadedKernel *kernel = logitsKernel();
  ASSERT_TRUE(kernel);
  ASSERT_FALSE(kernel->getMetadata().tensorMaps.empty())
      << "the kernel no longer uses TMA; pick another for this test";
  LogitsBuffers buffers(4, 1024);
  void *otherKeys = deviceBuffer(4 * 1024 * 128);
  auto launch = [&](void *keys, int64_t rows) {
    llvm::Error error = buffers.launch(*kernel, keys, rows);
    EXPECT_FALSE(bool(error)) << toString(std::move(error));
  };
  auto encodes = [] {
    return hisa::fake_cuda::entryPointCalls("cuTensorMapEncodeTiled");
  };
  int64_t maps = int64_t(kernel->getMetadata().tensorMaps.size());
  int64_t before = encodes();
  launch(buffers.k, 4096);
  EXPECT_EQ(encodes() - before, maps);
  // The same tensors again: the encodings are reused.
  launch(buffers.k, 4096);
  launch(buffers.k, 4096);
  EXPECT_EQ(encodes() - before, maps);
  // Another key buffer, then other sizes: its map is encoded anew (never a
  // stale map), the others are reused.
  launch(otherKeys, 4096);
  EXPECT_EQ(encodes() - before, maps + 1);
  launch(otherKeys, 4000);
  EXPECT_EQ(encodes() - before, maps + 2);
  // Alternating between them encodes nothing (several kept per map).
  launch(buffers.k, 4096);
  launch(otherKeys, 4096);
  launch(otherKeys, 4000);
  EXPECT_EQ(encodes() - before, maps + 2);
}

TEST(LaunchPath, KernelsAreProgrammaticDependentsUnlessTurnedOff) {
  LoadedKernel *kernel = logitsKernel();
  ASSERT_TRUE(kernel);
  // The lowering makes every sm_90 kernel wait for its prerequisite grids
  // at entry; the metadata says so, and only such kernels get the
  // attribute.
  EXPECT_TRUE(kernel->getMetadata().waitsForPrerequisiteGrids);
  LogitsBuffers buffers(2, 256);
  auto lastLaunch = [] {
    const auto &calls = hisa::fake_cuda::calls();
    for (auto it = calls.rbegin(); it != calls.rend(); ++it)
      if (it->kind == hisa::fake_cuda::Call::Launch)
        return *it;
    return hisa::fake_cuda::Call{};
  };
  int64_t ex = hisa::fake_cuda::entryPointCalls("cuLaunchKernelEx");
  int64_t plain = hisa::fake_cuda::entryPointCalls("cuLaunchKernel");
  ASSERT_FALSE(bool(buffers.launch(*kernel)));
  EXPECT_TRUE(lastLaunch().programmatic);
  EXPECT_EQ(lastLaunch().name, "mqa_logits_decode");
  EXPECT_EQ(hisa::fake_cuda::entryPointCalls("cuLaunchKernelEx") - ex, 1);
  // Turned off: an ordinary launch; the setter returns what it replaced.
  EXPECT_TRUE(hisa_set_programmatic_launch(0));
  ASSERT_FALSE(bool(buffers.launch(*kernel)));
  EXPECT_FALSE(lastLaunch().programmatic);
  EXPECT_EQ(hisa::fake_cuda::entryPointCalls("cuLaunchKernel") - plain, 1);
  EXPECT_FALSE(setProgrammaticLaunch(true));
  ASSERT_FALSE(bool(buffers.launch(*kernel)));
  EXPECT_TRUE(lastLaunch().programmatic);
}

TEST(LaunchPath, TrustedPointersScopeSkipsThePointerQueries) {
  LoadedKernel *kernel = logitsKernel();
  ASSERT_TRUE(kernel);
  LogitsBuffers buffers(2, 256);
  auto queries = [] {
    return hisa::fake_cuda::entryPointCalls("cuPointerGetAttribute");
  };
  int64_t before = queries();
  ASSERT_FALSE(bool(buffers.launch(*kernel)));
  EXPECT_EQ(queries() - before, 7);
  {
    TrustedPointersScope trusted;
    ASSERT_FALSE(bool(buffers.launch(*kernel)));
    EXPECT_EQ(queries() - before, 7);
    // Nested scopes restore what they found.
    { TrustedPointersScope inner; }
    ASSERT_FALSE(bool(buffers.launch(*kernel)));
    EXPECT_EQ(queries() - before, 7);
  }
  ASSERT_FALSE(bool(buffers.launch(*kernel)));
  EXPECT_EQ(queries() - before, 14);

  // Outside a scope a host pointer is still refused, naming the argument.
  alignas(256) static char host[2 * 256 * 128];
  llvm::Error error = buffers.launch(*kernel, host);
  ASSERT_TRUE(bool(error));
  std::string message = toString(std::move(error));
  EXPECT_NE(message.find("'k'"), std::string::npos) << message;
}

TEST(LaunchPath, CheckDevicePointersNamesTheArgument) {
  int host[4];
  void *device = deviceBuffer(64);
  llvm::Error error =
      checkDevicePointers("an_op", {{"first", device}, {"second", host}});
  ASSERT_TRUE(bool(error));
  std::string message = toString(std::move(error));
  EXPECT_NE(message.find("second"), std::string::npos) << message;
  EXPECT_NE(message.find("an_op"), std::string::npos) << message;
  // Null pointers are the launches' to refuse (with their sizes in view).
  EXPECT_FALSE(bool(checkDevicePointers("an_op", {{"none", nullptr}})));
}

TEST(LaunchPath, ClusterKernelsNeedAWholeNumberOfClusters) {
  // Two blocks of a cluster swap rows (test/Conversion/TileToGPU/Inputs/
  // cluster-exchange.mlir, in short): the metadata records the cluster, and
  // a grid that is not a multiple of it is refused by name before the
  // driver sees it.
  const char *source = R"mlir(
    tile.kernel @pairs(%in: !tile.global<[?, 128], f32>,
                       %out: !tile.global<[?, 128], f32>) {
      %rows = tile.dim %in, 0 : !tile.global<[?, 128], f32>
      tile.launch (%bx) in (%rows) threads 128 cluster 2 {
        %mine = tile.alloc : !tile.shared<[128], f32>
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %rank = tile.cluster_rank : index
        %other = arith.subi %c1, %rank : index
        tile.copy %in[%bx, %c0] to %mine
            : !tile.global<[?, 128], f32> to !tile.shared<[128], f32>
        tile.cluster_barrier
        tile.parallel (%i) in [128] {
          %v = tile.load %mine[%i] peer %other : !tile.shared<[128], f32>
          tile.store %v, %out[%bx, %i] : !tile.global<[?, 128], f32>
        }
        tile.cluster_barrier
      }
    })mlir";
  auto kernel = Jit::get().getKernel(source, "pairs", "", "sm_90a");
  ASSERT_TRUE(bool(kernel)) << toString(kernel.takeError());
  EXPECT_EQ((*kernel)->getMetadata().clusterBlocks, 2);
  void *in = deviceBuffer(5 * 128 * 4), *out = deviceBuffer(5 * 128 * 4);
  LaunchArgument even[] = {tensor(in, {4, 128}), tensor(out, {4, 128})};
  EXPECT_FALSE(bool((*kernel)->launch(even, nullptr)));
  LaunchArgument odd[] = {tensor(in, {5, 128}), tensor(out, {5, 128})};
  llvm::Error refused = (*kernel)->launch(odd, nullptr);
  EXPECT_NE(toString(std::move(refused))
                .find("the grid's x extent 5 is not a multiple of its "
                      "cluster of 2 blocks"),
            std::string::npos);
}

} // namespace

namespace {
/// Makes device `device`'s primary context current on this thread.
void makeCurrent(int device) {
  CUcontext context = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&context, device), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(context), CUDA_SUCCESS);
}
} // namespace

TEST(LaunchPath, AKernelLoadsIntoEachContextItIsLaunchedIn) {
  // One process, two GPUs: the same kernel handle launched on either.
  hisa::fake_cuda::ScopedDevices devices(2);
  LoadedKernel *kernel = logitsKernel();
  ASSERT_TRUE(kernel);
  LogitsBuffers buffers(2, 256);
  auto lastLaunchDevice = [] {
    const auto &calls = hisa::fake_cuda::calls();
    for (auto it = calls.rbegin(); it != calls.rend(); ++it)
      if (it->kind == hisa::fake_cuda::Call::Launch)
        return it->device;
    return -1;
  };
  // (The fake's cuModuleLoadDataEx goes through cuModuleLoadData.)
  int64_t loads = hisa::fake_cuda::entryPointCalls("cuModuleLoadData");
  auto newLoads = [&] {
    return hisa::fake_cuda::entryPointCalls("cuModuleLoadData") - loads;
  };
  // Device 0's primary context (which has the kernel: logitsKernel loaded
  // it) and a fresh context on device 1, where nothing is loaded yet.
  auto fresh = static_cast<CUcontext>(hisa::fake_cuda::freshContext(1));
  for (int device : {0, 1, 0, 1}) {
    if (device == 0)
      makeCurrent(0);
    else
      ASSERT_EQ(cuCtxSetCurrent(fresh), CUDA_SUCCESS);
    llvm::Error error = buffers.launch(*kernel);
    EXPECT_FALSE(bool(error))
        << "device " << device << ": " << toString(std::move(error));
    EXPECT_EQ(lastLaunchDevice(), device);
  }
  // Loaded once in the fresh context (device 0 had it before), never again.
  EXPECT_EQ(newLoads(), 1);
}

TEST(LaunchPath, FirstLaunchInAContextDuringACaptureIsRefused) {
  hisa::fake_cuda::ScopedDevices devices(3);
  LoadedKernel *kernel = logitsKernel();
  ASSERT_TRUE(kernel);
  LogitsBuffers buffers(2, 256);
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  auto launch = [&] { return buffers.launch(*kernel, nullptr, -1, stream); };
  // Loaded in device 0's context already: capturing there is fine.
  makeCurrent(0);
  ASSERT_FALSE(bool(launch()));
  hisa::fake_cuda::setStreamCapturing(stream, true);
  EXPECT_FALSE(bool(launch()));
  // A context on device 2 that has never run it: loading now would break
  // the capture.
  hisa::fake_cuda::useFreshContext(2);
  llvm::Error error = launch();
  ASSERT_TRUE(bool(error));
  std::string message = toString(std::move(error));
  EXPECT_NE(message.find("captured"), std::string::npos) << message;
  EXPECT_NE(message.find("mqa_logits_decode"), std::string::npos) << message;
  hisa::fake_cuda::setStreamCapturing(stream, false);
  EXPECT_FALSE(bool(launch()));
}

TEST(LaunchPath, TensorsOverTwoToThe48BytesAreRefused) {
  LoadedKernel *kernel = logitsKernel();
  ASSERT_TRUE(kernel);
  LogitsBuffers buffers(2, 256);
  // [4, 2^62] elements: a product that wraps to 0 must not pass as empty
  // (which would skip the pointer checks).
  LaunchArgument arguments[] = {tensor(buffers.q, {2 * 64, 128}),
                                tensor(nullptr, {int64_t(1) << 62, 128}),
                                tensor(buffers.scale, {2 * 256}),
                                tensor(buffers.weights, {2, 64}),
                                tensor(buffers.starts, {2}),
                                tensor(buffers.ends, {2}),
                                tensor(buffers.logits, {2, 256})};
  llvm::Error error = kernel->launch(arguments, nullptr);
  ASSERT_TRUE(bool(error));
  std::string message = toString(std::move(error));
  EXPECT_NE(message.find("2^48"), std::string::npos) << message;
  EXPECT_NE(message.find("'k'"), std::string::npos) << message;
}

TEST(LaunchPath, NarrowIndicesKernelsRefuseSizesFromTwoToThe31) {
  // +narrow-indices: the kernel's index arithmetic assumes every run-time
  // size below 2^31; its metadata says so and launches check it.
  auto narrow = Jit::get().getKernel(
      getBuiltinKernelSource("mqa_logits_decode"), "mqa_logits_decode",
      "dim=128,heads=64", "sm_90a,+narrow-indices");
  ASSERT_TRUE(bool(narrow)) << toString(narrow.takeError());
  EXPECT_TRUE((*narrow)->getMetadata().int32Sizes);
  LoadedKernel *plain = logitsKernel();
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->getMetadata().int32Sizes);
  LogitsBuffers buffers(2, 256);
  EXPECT_FALSE(bool(buffers.launch(**narrow)));
  llvm::Error error = buffers.launch(**narrow, nullptr, int64_t(1) << 31);
  ASSERT_TRUE(bool(error));
  std::string message = toString(std::move(error));
  EXPECT_NE(message.find("+narrow-indices"), std::string::npos) << message;
  EXPECT_NE(message.find("'k'"), std::string::npos) << message;
}

TEST(LaunchPath, CurrentContextScopeAsksTheDriverOnce) {
  LoadedKernel *kernel = logitsKernel();
  ASSERT_TRUE(kernel);
  LogitsBuffers buffers(2, 256);
  auto asked = [] {
    return hisa::fake_cuda::entryPointCalls("cuCtxGetCurrent");
  };
  // Outside a scope every launch asks.
  int64_t before = asked();
  for (int i = 0; i < 3; ++i)
    ASSERT_FALSE(bool(buffers.launch(*kernel)));
  EXPECT_EQ(asked() - before, 3);
  {
    CurrentContextScope outer;
    before = asked();
    for (int i = 0; i < 3; ++i)
      ASSERT_FALSE(bool(buffers.launch(*kernel)));
    {
      CurrentContextScope inner; // nested: the outer scope's answer
      ASSERT_FALSE(bool(buffers.launch(*kernel)));
    }
    ASSERT_FALSE(bool(buffers.launch(*kernel)));
    EXPECT_EQ(asked() - before, 1);
    // Making another context current through hisa forgets the answer.
    auto driver = CudaDriver::get();
    ASSERT_TRUE(bool(driver));
    ASSERT_FALSE(bool(driver->usePrimaryContext(0)));
    before = asked();
    ASSERT_FALSE(bool(buffers.launch(*kernel)));
    ASSERT_FALSE(bool(buffers.launch(*kernel)));
    EXPECT_EQ(asked() - before, 1);
  }
  // The scope's answer ends with it.
  before = asked();
  ASSERT_FALSE(bool(buffers.launch(*kernel)));
  EXPECT_EQ(asked() - before, 1);
}
