//===- JitTest.cpp - Compiling through the JIT (no GPU needed) ------------===//

#include "hisa/Runtime/Jit.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace hisa::runtime;

namespace {

/// The process-wide JIT with a private cache directory.
Jit &getJit() {
  static Jit *jit = [] {
    llvm::SmallString<128> directory;
    llvm::sys::fs::createUniqueDirectory("hisa-jit-test", directory);
    ::setenv("HISA_CACHE_DIR", directory.c_str(), /*overwrite=*/1);
    return &Jit::get();
  }();
  return *jit;
}

std::string compileError(llvm::StringRef target) {
  auto compiled = getJit().compile(getBuiltinKernelSource("fp8_gemm"),
                                   "fp8_gemm", "k=512", target);
  if (compiled)
    return "";
  return llvm::toString(compiled.takeError());
}

TEST(Jit, RefusesUnknownTargetFeatures) {
  std::string message = compileError("sm_90a,-wgmma");
  EXPECT_NE(message.find("unknown feature '-wgmma' in target "
                         "'sm_90a,-wgmma' (known: +tma, -tma)"),
            std::string::npos)
      << message;
  message = compileError("gfx90a");
  EXPECT_NE(message.find("invalid target 'gfx90a'"), std::string::npos)
      << message;
}

TEST(Jit, RecordsTheTensorMapsOfTmaCopies) {
  // fp8_gemm stages A [128, 128] and B [256, 128] boxes, 128-byte swizzled.
  auto withTma = getJit().compile(getBuiltinKernelSource("fp8_gemm"),
                                  "fp8_gemm", "k=512", "sm_90a");
  ASSERT_TRUE(static_cast<bool>(withTma))
      << llvm::toString(withTma.takeError());
  const std::vector<KernelMetadata::TensorMap> &maps =
      (*withTma)->metadata.tensorMaps;
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_EQ(maps[0].argument, 0u);
  EXPECT_EQ(maps[0].box, (std::vector<int64_t>{128, 128}));
  EXPECT_EQ(maps[1].argument, 1u);
  EXPECT_EQ(maps[1].box, (std::vector<int64_t>{256, 128}));
  for (const KernelMetadata::TensorMap &map : maps) {
    EXPECT_EQ(map.swizzleBytes, 128);
    EXPECT_EQ(map.elementBytes, 1u);
  }
  // The -tma feature keeps every copy on cp.async: no tensor maps.
  auto withoutTma = getJit().compile(getBuiltinKernelSource("fp8_gemm"),
                                     "fp8_gemm", "k=512", "sm_90a,-tma");
  ASSERT_TRUE(static_cast<bool>(withoutTma))
      << llvm::toString(withoutTma.takeError());
  EXPECT_TRUE((*withoutTma)->metadata.tensorMaps.empty());
}

} // namespace
