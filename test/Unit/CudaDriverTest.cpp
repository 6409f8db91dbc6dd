//===- CudaDriverTest.cpp - The CUDA driver loaded at run time ------------===//
//
// The tests of the failure paths run everywhere. Those that need a GPU skip
// themselves when libcuda.so.1 or a device is missing, which is the case on
// the build and CI machines.
//
//===----------------------------------------------------------------------===//

#include "hisa/Runtime/CudaDriver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

using namespace hisa::runtime;

namespace {

bool contains(llvm::StringRef text, llvm::StringRef part) {
  return text.contains(part);
}

/// The message of a failed `value`, empty on success; consumes the error.
template <typename T> std::string failureOf(llvm::Expected<T> &&value) {
  if (value)
    return "";
  return llvm::toString(value.takeError());
}

//===----------------------------------------------------------------------===//
// Without a driver
//===----------------------------------------------------------------------===//

TEST(CudaDriver, ReportsMissingDriver) {
  llvm::Expected<CudaDriver &> driver = CudaDriver::get();
  if (driver)
    GTEST_SKIP() << "libcuda.so.1 and a GPU are present";
  llvm::Error error = driver.takeError();
  EXPECT_TRUE(error.isA<NoDeviceError>());
  std::string message = llvm::toString(std::move(error));
  EXPECT_TRUE(contains(message, "libcuda.so.1")) << message;
  EXPECT_EQ(CudaDriver::getIfLoaded(), nullptr);
}

TEST(CudaDriver, GetGivesTheSameAnswerToEveryThread) {
  std::vector<std::string> answers(8);
  std::vector<std::thread> threads;
  for (std::string &answer : answers)
    threads.emplace_back([&answer] {
      llvm::Expected<CudaDriver &> driver = CudaDriver::get();
      if (driver)
        answer = std::to_string(reinterpret_cast<uintptr_t>(&*driver));
      else
        answer = llvm::toString(driver.takeError());
    });
  for (std::thread &thread : threads)
    thread.join();
  for (const std::string &answer : answers)
    EXPECT_EQ(answer, answers.front());
}

TEST(CudaDriver, ReportsMissingLibrary) {
  llvm::Expected<std::unique_ptr<CudaDriver>> driver =
      CudaDriver::load("libhisa-no-such-driver.so.1");
  ASSERT_FALSE(driver);
  llvm::Error error = driver.takeError();
  EXPECT_TRUE(error.isA<NoDeviceError>());
  std::string message = llvm::toString(std::move(error));
  EXPECT_TRUE(contains(message, "libhisa-no-such-driver.so.1 not found: no "
                                "NVIDIA driver on this machine (dlopen: "))
      << message;
}

TEST(CudaDriver, ReportsLibraryWithoutTheEntryPoints) {
  // A library that exists everywhere but is not the driver.
  llvm::Expected<std::unique_ptr<CudaDriver>> driver =
      CudaDriver::load("libm.so.6");
  ASSERT_FALSE(driver);
  llvm::Error error = driver.takeError();
  EXPECT_TRUE(error.isA<NoDeviceError>());
  std::string message = llvm::toString(std::move(error));
  EXPECT_TRUE(contains(message, "libm.so.6 lacks cuInit, cuGetErrorName"))
      << message;
  EXPECT_TRUE(contains(message, "cuMemAlloc_v2")) << message;
  // The optional entry point is not demanded.
  EXPECT_FALSE(contains(message, "cuModuleLoadDataEx")) << message;
  EXPECT_FALSE(contains(message, "cuTensorMapEncodeTiled")) << message;
}

TEST(CudaDriver, ResolvesTheVersionedSymbols) {
  std::vector<std::string> names;
  for (const char *name : CudaDriver::getSymbolNames())
    names.push_back(name);
  auto has = [&](const char *name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  for (const char *name : {"cuInit",
                           "cuMemAlloc_v2",
                           "cuMemFree_v2",
                           "cuMemcpyHtoD_v2",
                           "cuMemcpyDtoH_v2",
                           "cuLaunchKernel",
                           "cuLaunchKernelEx",
                           "cuStreamSynchronize",
                           "cuModuleLoadData",
                           "cuModuleLoadDataEx",
                           "cuPointerGetAttribute",
                           "cuDevicePrimaryCtxRetain",
                           "cuFuncSetAttribute",
                           "cuMemsetD8_v2",
                           "cuMemcpyDtoDAsync_v2",
                           "cuMemcpy2DAsync_v2",
                           "cuStreamCreate",
                           "cuStreamDestroy_v2",
                           "cuEventDestroy_v2",
                           "cuStreamWaitEvent",
                           "cuEventRecord"})
    EXPECT_TRUE(has(name)) << name;
  EXPECT_FALSE(has("cuMemAlloc"));
  EXPECT_TRUE(has("cuTensorMapEncodeTiled"));
  EXPECT_TRUE(has("cuStreamIsCapturing"));
  EXPECT_TRUE(has("cuThreadExchangeStreamCaptureMode"));
  EXPECT_TRUE(has("cuMemsetD8Async"));
  // The graph entry points of runtime::GraphLaunchScope, under the names
  // cuda.h versions them to.
  for (const char *name :
       {"cuGraphCreate", "cuGraphAddKernelNode_v2", "cuGraphAddDependencies_v2",
        "cuGraphInstantiateWithFlags", "cuGraphExecKernelNodeSetParams_v2",
        "cuGraphLaunch", "cuGraphExecDestroy", "cuGraphDestroy"})
    EXPECT_TRUE(has(name)) << name;
  EXPECT_EQ(names.size(), 45u);
}

TEST(CudaDriver, CheckCudaNamesTheCallAndTheKernel) {
  EXPECT_FALSE(llvm::errorToBool(
      checkCuda(CUDA_SUCCESS, "cuLaunchKernel", "fp8_block_mean_pooling")));

  llvm::Error error = checkCuda(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel",
                                "fp8_block_mean_pooling");
  ASSERT_TRUE(error.isA<CudaError>());
  CUresult result = CUDA_SUCCESS;
  std::string message;
  llvm::handleAllErrors(std::move(error), [&](const CudaError &cudaError) {
    result = cudaError.getResult();
    message = cudaError.getMessage();
  });
  EXPECT_EQ(result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(message, "cuLaunchKernel failed for kernel "
                                "'fp8_block_mean_pooling': "))
      << message;
  // The driver names the code when it is loaded; otherwise its number does.
  if (CudaDriver::getIfLoaded())
    EXPECT_TRUE(contains(message, "CUDA_ERROR_INVALID_VALUE (")) << message;
  else
    EXPECT_TRUE(contains(message, "CUDA error 1")) << message;

  std::string withoutKernel =
      llvm::toString(checkCuda(CUDA_ERROR_NOT_INITIALIZED, "cuInit"));
  EXPECT_TRUE(llvm::StringRef(withoutKernel).starts_with("cuInit failed: "))
      << withoutKernel;
}

//===----------------------------------------------------------------------===//
// With a GPU
//===----------------------------------------------------------------------===//

// out[i] = i for i < n, one thread per element. PTX for sm_50, which the
// driver compiles for whatever GPU is present.
constexpr const char *kIotaPtx = R"(
.version 7.0
.target sm_50
.address_size 64

.visible .entry hisa_test_iota(.param .u64 out, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r5;
DONE:
  ret;
}
)";

class CudaDriverGpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::Expected<CudaDriver &> loaded = CudaDriver::get();
    if (!loaded) {
      std::string reason = llvm::toString(loaded.takeError());
      GTEST_SKIP() << "no GPU: " << reason;
    }
    driver = &*loaded;
    llvm::Expected<CUcontext> context = driver->ensureContext();
    ASSERT_TRUE(bool(context)) << llvm::toString(context.takeError());
  }

  /// Loads kIotaPtx; fails the test on error.
  std::optional<LoadedModule> loadIota() {
    llvm::Expected<LoadedModule> module =
        LoadedModule::load(*driver, kIotaPtx, "hisa_test_iota");
    if (!module) {
      ADD_FAILURE() << llvm::toString(module.takeError());
      return std::nullopt;
    }
    return std::move(*module);
  }

  CudaDriver *driver = nullptr;
};

TEST_F(CudaDriverGpuTest, EnsureContextKeepsTheCurrentContext) {
  llvm::Expected<CUcontext> first = driver->ensureContext();
  ASSERT_TRUE(bool(first)) << llvm::toString(first.takeError());
  EXPECT_NE(*first, nullptr);
  llvm::Expected<CUcontext> second = driver->ensureContext();
  ASSERT_TRUE(bool(second)) << llvm::toString(second.takeError());
  EXPECT_EQ(*first, *second);
  llvm::Expected<CUdevice> device = driver->getCurrentDevice();
  ASSERT_TRUE(bool(device)) << llvm::toString(device.takeError());
  EXPECT_EQ(*device, 0);

  // A fresh thread has no current context; it gets the same primary one.
  CUcontext other = nullptr;
  std::thread([&] {
    llvm::Expected<CUcontext> context = driver->ensureContext();
    if (context)
      other = *context;
    else
      llvm::consumeError(context.takeError());
  }).join();
  EXPECT_EQ(other, *first);
}

TEST_F(CudaDriverGpuTest, LoadsPtxAndLaunches) {
  std::optional<LoadedModule> module = loadIota();
  ASSERT_TRUE(module);
  llvm::Expected<CUfunction> function = module->getFunction("hisa_test_iota");
  ASSERT_TRUE(bool(function)) << llvm::toString(function.takeError());

  unsigned n = 1000;
  CUdeviceptr out = 0;
  ASSERT_FALSE(llvm::errorToBool(
      checkCuda(driver->memAlloc(&out, n * sizeof(uint32_t)), "cuMemAlloc")));
  void *params[] = {&out, &n};
  llvm::Error launched =
      driver->launch(*function, {(n + 127) / 128, 1, 1}, {128, 1, 1}, 0,
                     /*stream=*/nullptr, params, "hisa_test_iota");
  ASSERT_FALSE(bool(launched)) << llvm::toString(std::move(launched));
  ASSERT_FALSE(llvm::errorToBool(
      checkCuda(driver->ctxSynchronize(), "cuCtxSynchronize")));

  std::vector<uint32_t> host(n, 0xdeadbeef);
  ASSERT_FALSE(llvm::errorToBool(
      checkCuda(driver->memcpyDtoH(host.data(), out, n * sizeof(uint32_t)),
                "cuMemcpyDtoH")));
  for (unsigned i = 0; i < n; ++i)
    ASSERT_EQ(host[i], i) << "at " << i;

  // Device memory passes the pointer check; host memory and null do not.
  void *devicePointer = reinterpret_cast<void *>(static_cast<uintptr_t>(out));
  EXPECT_FALSE(llvm::errorToBool(
      driver->checkDevicePointer(devicePointer, "out", "hisa_test_iota")));
  std::string hostMessage = llvm::toString(
      driver->checkDevicePointer(host.data(), "out", "hisa_test_iota"));
  EXPECT_TRUE(contains(hostMessage,
                       "argument 'out' of kernel 'hisa_test_iota' is not "
                       "CUDA memory"))
      << hostMessage;
  std::string nullMessage = llvm::toString(
      driver->checkDevicePointer(nullptr, "out", "hisa_test_iota"));
  EXPECT_TRUE(contains(nullMessage, "null")) << nullMessage;

  EXPECT_FALSE(llvm::errorToBool(checkCuda(driver->memFree(out), "cuMemFree")));
}

TEST_F(CudaDriverGpuTest, LaunchErrorsNameTheKernelAndConfiguration) {
  std::optional<LoadedModule> module = loadIota();
  ASSERT_TRUE(module);
  llvm::Expected<CUfunction> function = module->getFunction("hisa_test_iota");
  ASSERT_TRUE(bool(function)) << llvm::toString(function.takeError());
  CUdeviceptr out = 0;
  unsigned n = 0;
  void *params[] = {&out, &n};
  // 2048 threads per block is more than any GPU allows.
  llvm::Error error = driver->launch(*function, {1, 1, 1}, {2048, 1, 1}, 0,
                                     nullptr, params, "hisa_test_iota");
  ASSERT_TRUE(error.isA<CudaError>());
  std::string message = llvm::toString(std::move(error));
  EXPECT_TRUE(contains(message,
                       "cuLaunchKernel failed for kernel 'hisa_test_iota': "
                       "CUDA_ERROR_INVALID_VALUE"))
      << message;
  EXPECT_TRUE(contains(message, "block (2048, 1, 1)")) << message;
}

TEST_F(CudaDriverGpuTest, OptsIntoLargeDynamicSharedMemory) {
  constexpr unsigned kLarge = 100 * 1024;
  unsigned n = 0;
  CUdeviceptr out = 0;
  void *params[] = {&out, &n};

  // Without the opt-in a launch with more than 48 KiB fails...
  std::optional<LoadedModule> plain = loadIota();
  ASSERT_TRUE(plain);
  llvm::Expected<CUfunction> plainFunction =
      plain->getFunction("hisa_test_iota");
  ASSERT_TRUE(bool(plainFunction)) << llvm::toString(plainFunction.takeError());
  llvm::Error refused = driver->launch(*plainFunction, {1, 1, 1}, {32, 1, 1},
                                       kLarge, nullptr, params, "plain");
  EXPECT_TRUE(bool(refused));
  llvm::consumeError(std::move(refused));

  // ...and with it, it runs.
  std::optional<LoadedModule> large = loadIota();
  ASSERT_TRUE(large);
  llvm::Expected<CUfunction> function =
      large->getFunction("hisa_test_iota", kLarge);
  ASSERT_TRUE(bool(function)) << llvm::toString(function.takeError());
  int allowed = 0;
  ASSERT_EQ(
      driver->funcGetAttribute(
          &allowed, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, *function),
      CUDA_SUCCESS);
  EXPECT_EQ(allowed, static_cast<int>(kLarge));
  llvm::Error launched = driver->launch(*function, {1, 1, 1}, {32, 1, 1},
                                        kLarge, nullptr, params, "large");
  EXPECT_FALSE(bool(launched)) << llvm::toString(std::move(launched));
  EXPECT_EQ(driver->ctxSynchronize(), CUDA_SUCCESS);

  // More than the device has is reported with the numbers.
  std::optional<LoadedModule> huge = loadIota();
  ASSERT_TRUE(huge);
  llvm::Expected<CUfunction> tooLarge =
      huge->getFunction("hisa_test_iota", 1 << 20);
  ASSERT_FALSE(bool(tooLarge));
  std::string message = llvm::toString(tooLarge.takeError());
  EXPECT_TRUE(contains(message, "cuFuncSetAttribute failed for kernel "
                                "'hisa_test_iota'"))
      << message;
  EXPECT_TRUE(contains(message, "the device allows at most")) << message;
}

TEST_F(CudaDriverGpuTest, ReportsMissingFunctionAndBadImages) {
  std::optional<LoadedModule> module = loadIota();
  ASSERT_TRUE(module);
  llvm::Expected<CUfunction> missing = module->getFunction("no_such_kernel");
  ASSERT_FALSE(bool(missing));
  std::string missingMessage = llvm::toString(missing.takeError());
  EXPECT_TRUE(contains(missingMessage,
                       "cuModuleGetFunction failed for kernel "
                       "'no_such_kernel': CUDA_ERROR_NOT_FOUND"))
      << missingMessage;

  llvm::Expected<LoadedModule> badPtx = LoadedModule::load(
      *driver, ".version 7.0\n.target sm_50\n.address_size 64\nnonsense;\n",
      "broken");
  ASSERT_FALSE(bool(badPtx));
  std::string badPtxMessage = llvm::toString(badPtx.takeError());
  EXPECT_TRUE(contains(badPtxMessage, "failed for kernel 'broken'"))
      << badPtxMessage;
  if (driver->moduleLoadDataEx) {
    EXPECT_TRUE(contains(badPtxMessage, "JIT log:")) << badPtxMessage;
  }

  llvm::Expected<LoadedModule> empty = LoadedModule::load(*driver, "", "empty");
  ASSERT_FALSE(bool(empty));
  EXPECT_TRUE(contains(llvm::toString(empty.takeError()), "empty"));
}

TEST_F(CudaDriverGpuTest, ModulesMoveAndUnload) {
  std::optional<LoadedModule> first = loadIota();
  ASSERT_TRUE(first);
  CUmodule handle = first->getModule();
  LoadedModule moved = std::move(*first);
  EXPECT_EQ(moved.getModule(), handle);
  EXPECT_EQ(first->getModule(), nullptr);
  first.reset(); // a moved-from module unloads nothing
  EXPECT_EQ(failureOf(moved.getFunction("hisa_test_iota")), "");
  std::optional<LoadedModule> second = loadIota();
  ASSERT_TRUE(second);
  moved = std::move(*second); // unloads the first module
  EXPECT_EQ(failureOf(moved.getFunction("hisa_test_iota")), "");
}

} // namespace
