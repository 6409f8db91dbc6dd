//===- JitTest.cpp - Compiling through the JIT (no GPU needed) ------------===//

#include "hisa/Runtime/Jit.h"
#include "hisa/Runtime/DiskCache.h"
#include "hisa/Runtime/hisa_runtime.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "TestProcess.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <thread>
#include <vector>

using namespace hisa::runtime;

using hisa::testing::runInChild;
using hisa::testing::ScopedEnvironment;

namespace {

constexpr const char *kPooling = "fp8_block_mean_pooling";
constexpr const char *kFirstParams = "dim=64,kb=64";
constexpr const char *kSecondParams = "dim=64,kb=128";

/// The process-wide JIT with a private cache directory (set before the
/// first use of Jit::get(), which the C ABI uses too).
Jit &getJit() {
  static Jit *jit = [] {
    llvm::SmallString<128> directory;
    llvm::sys::fs::createUniqueDirectory("hisa-jit-test", directory);
    ::setenv("HISA_CACHE_DIR", directory.c_str(), /*overwrite=*/1);
    return &Jit::get();
  }();
  return *jit;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeFile(const std::string &path, const std::string &data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

bool isRegularFile(const std::string &path) {
  struct stat status;
  return ::stat(path.c_str(), &status) == 0 && S_ISREG(status.st_mode);
}

std::string metadataPathOf(llvm::StringRef binaryPath) {
  return (binaryPath.drop_back(4) + ".meta").str(); // <key>.bin -> <key>.meta
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
                         "'sm_90a,-wgmma' (known: +tma, -tma, +narrow-indices, "
                         "-narrow-indices, +elide-sync, -elide-sync)"),
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

//===----------------------------------------------------------------------===//
// The disk cache as the JIT uses it: each test has JITs of its own (as
// separate processes would) sharing a fresh directory.
//===----------------------------------------------------------------------===//

class JitCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> path;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("hisa-jit-cache", path));
    root = std::string(path);
    directory = root + "/cache";
  }
  void TearDown() override { llvm::sys::fs::remove_directories(root); }

  std::unique_ptr<Jit> makeJit(std::optional<std::string> cacheDirectory = {},
                               std::optional<double> timeout = {}) {
    JitOptions options;
    options.cacheDirectory = cacheDirectory ? *cacheDirectory : directory;
    options.compileTimeoutSeconds = timeout;
    return std::make_unique<Jit>(options);
  }

  /// Compiles the pooling kernel with a stand-in "ptxas" that prints
  /// `report` (shell lines) and writes a dummy cubin: with `strictVariable`
  /// set the compile is refused, saying `expected`; without it the kernel
  /// compiles (the report is a warning on stderr); with it set again the
  /// cached lenient compile is not reused.
  void expectReportedAndRefusedWhenStrict(llvm::StringRef report,
                                          const char *strictVariable,
                                          llvm::StringRef expected) {
    std::string script = root + "/reporting-ptxas";
    writeFile(script,
              ("#!/bin/sh\n"
               "out=''\n"
               "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; "
               "done\n" +
               report + "printf '\\177ELF-cubin' > \"$out\"\n")
                  .str());
    ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
    ScopedEnvironment ptxas("HISA_PTXAS", script.c_str());
    {
      ScopedEnvironment strict(strictVariable, "1");
      auto compiled = makeJit()->compile(getBuiltinKernelSource(kPooling),
                                         kPooling, kFirstParams, "sm_90a");
      ASSERT_FALSE(compiled);
      std::string message = llvm::toString(compiled.takeError());
      EXPECT_NE(message.find(expected), std::string::npos) << message;
      EXPECT_NE(message.find((llvm::Twine("refused: ") + strictVariable).str()),
                std::string::npos)
          << message;
    }
    {
      ScopedEnvironment lenient(strictVariable, nullptr);
      auto compiled = makeJit()->compile(getBuiltinKernelSource(kPooling),
                                         kPooling, kFirstParams, "sm_90a");
      EXPECT_TRUE(static_cast<bool>(compiled))
          << (compiled ? "" : llvm::toString(compiled.takeError()));
    }
    // The lenient compile is now in the disk cache; a strict caller (a new
    // Jit on the same directory) compiles again and is refused rather than
    // handed it.
    ScopedEnvironment strictAgain(strictVariable, "1");
    auto again = makeJit()->compile(getBuiltinKernelSource(kPooling), kPooling,
                                    kFirstParams, "sm_90a");
    ASSERT_FALSE(again);
    std::string message = llvm::toString(again.takeError());
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }

  /// Compiles the pooling kernel with `params`; fails the test on errors.
  static std::shared_ptr<CompiledKernel> compile(Jit &jit,
                                                 llvm::StringRef params) {
    auto compiled = jit.compile(getBuiltinKernelSource(kPooling), kPooling,
                                params, "sm_90a");
    if (!compiled) {
      ADD_FAILURE() << llvm::toString(compiled.takeError());
      return nullptr;
    }
    return *compiled;
  }

  /// Expects `kernel` to be served from a regular file holding its binary.
  static void expectBinaryFile(const CompiledKernel &kernel) {
    EXPECT_TRUE(kernel.binaryPathError.empty()) << kernel.binaryPathError;
    ASSERT_FALSE(kernel.binaryPath.empty());
    EXPECT_TRUE(isRegularFile(kernel.binaryPath)) << kernel.binaryPath;
    EXPECT_EQ(readFile(kernel.binaryPath), kernel.binary) << kernel.binaryPath;
  }

  std::string root;
  std::string directory;
};

TEST_F(JitCacheTest, EntryOfOtherParametersIsRejectedAndRebuilt) {
  auto first = makeJit();
  std::shared_ptr<CompiledKernel> one = compile(*first, kFirstParams);
  std::shared_ptr<CompiledKernel> two = compile(*first, kSecondParams);
  ASSERT_TRUE(one && two);
  ASSERT_NE(one->binary, two->binary);
  ASSERT_NE(one->binaryPath, two->binaryPath);
  // Both files of the first entry copied over the second's.
  writeFile(two->binaryPath, readFile(one->binaryPath));
  writeFile(metadataPathOf(two->binaryPath),
            readFile(metadataPathOf(one->binaryPath)));

  auto second = makeJit();
  std::shared_ptr<CompiledKernel> again = compile(*second, kSecondParams);
  ASSERT_TRUE(again);
  CacheStatistics stats = second->getStatistics();
  EXPECT_EQ(stats.rejectedEntries, 1);
  EXPECT_EQ(stats.diskHits, 0);
  EXPECT_EQ(stats.compiles, 1);
  EXPECT_EQ(again->metadata.serialize(), two->metadata.serialize());
  EXPECT_EQ(again->binary, two->binary);
  EXPECT_EQ(again->binaryPath, two->binaryPath);
  expectBinaryFile(*again);

  // The entry was rewritten: the next process gets a disk hit.
  auto third = makeJit();
  ASSERT_TRUE(compile(*third, kSecondParams));
  EXPECT_EQ(third->getStatistics().diskHits, 1);
  EXPECT_EQ(third->getStatistics().rejectedEntries, 0);
}

TEST_F(JitCacheTest, SameSizeMetadataEditIsRejectedAndRebuilt) {
  auto first = makeJit();
  std::shared_ptr<CompiledKernel> kernel = compile(*first, kFirstParams);
  ASSERT_TRUE(kernel);
  ASSERT_EQ(kernel->metadata.threads, 128);
  // Thread count 128 -> 256: same size, so only a checksum can tell.
  std::string metaPath = metadataPathOf(kernel->binaryPath);
  std::string meta = readFile(metaPath);
  std::string line = "kernel " + std::string(kPooling) + " " +
                     kernel->metadata.binaryKind + " 128 ";
  size_t at = meta.find(line);
  ASSERT_NE(at, std::string::npos) << meta;
  meta.replace(at + line.size() - 4, 3, "256");
  writeFile(metaPath, meta);

  auto second = makeJit();
  std::shared_ptr<CompiledKernel> again = compile(*second, kFirstParams);
  ASSERT_TRUE(again);
  EXPECT_EQ(second->getStatistics().rejectedEntries, 1);
  EXPECT_EQ(second->getStatistics().compiles, 1);
  EXPECT_EQ(again->metadata.threads, 128);
  expectBinaryFile(*again);
  EXPECT_EQ(readFile(metaPath).find(line.substr(0, line.size() - 4) + "256"),
            std::string::npos);
}

TEST_F(JitCacheTest, BinaryBitFlipIsRejectedAndRebuilt) {
  auto first = makeJit();
  std::shared_ptr<CompiledKernel> kernel = compile(*first, kFirstParams);
  ASSERT_TRUE(kernel);
  std::string binary = kernel->binary;
  binary[binary.size() / 2] ^= 0x04;
  writeFile(kernel->binaryPath, binary);

  auto second = makeJit();
  std::shared_ptr<CompiledKernel> again = compile(*second, kFirstParams);
  ASSERT_TRUE(again);
  EXPECT_EQ(second->getStatistics().rejectedEntries, 1);
  EXPECT_EQ(second->getStatistics().compiles, 1);
  EXPECT_EQ(again->binary, kernel->binary);
  expectBinaryFile(*again);
}

TEST_F(JitCacheTest, FifoInPlaceOfAnEntryFileDoesNotHang) {
  std::shared_ptr<CompiledKernel> kernel = compile(*makeJit(), kFirstParams);
  ASSERT_TRUE(kernel);
  for (bool binary : {true, false}) {
    SCOPED_TRACE(binary ? "FIFO as the .bin" : "FIFO as the .meta");
    // Keep the other file valid; make this one a FIFO nobody writes.
    ASSERT_TRUE(compile(*makeJit(), kFirstParams));
    std::string path =
        binary ? kernel->binaryPath : metadataPathOf(kernel->binaryPath);
    ASSERT_EQ(::unlink(path.c_str()), 0);
    ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0) << std::strerror(errno);

    std::optional<std::string> result = runInChild(
        [&] {
          auto jit = makeJit();
          auto compiled = jit->compile(getBuiltinKernelSource(kPooling),
                                       kPooling, kFirstParams, "sm_90a");
          if (!compiled)
            return "error: " + llvm::toString(compiled.takeError());
          CacheStatistics stats = jit->getStatistics();
          const CompiledKernel &fresh = **compiled;
          return "compiles=" + std::to_string(stats.compiles) +
                 " rejected=" + std::to_string(stats.rejectedEntries) +
                 " file=" +
                 std::to_string(isRegularFile(fresh.binaryPath) &&
                                readFile(fresh.binaryPath) == fresh.binary);
        },
        /*seconds=*/120);
    ASSERT_TRUE(result);
    EXPECT_EQ(*result, "compiles=1 rejected=1 file=1");
    // The rebuilt entry replaced the FIFO.
    EXPECT_TRUE(isRegularFile(path));
    auto next = makeJit();
    ASSERT_TRUE(compile(*next, kFirstParams));
    EXPECT_EQ(next->getStatistics().diskHits, 1);
  }
}

TEST_F(JitCacheTest, UnwritableCacheDirectoryServesATemporaryFile) {
  writeFile(root + "/file", "not a directory");
  for (std::string unwritable : {root + "/file", root + "/file/cache"}) {
    SCOPED_TRACE(unwritable);
    auto jit = makeJit(unwritable);
    std::shared_ptr<CompiledKernel> kernel = compile(*jit, kFirstParams);
    ASSERT_TRUE(kernel);
    expectBinaryFile(*kernel);
    EXPECT_EQ(llvm::StringRef(kernel->binaryPath).find(root),
              llvm::StringRef::npos)
        << kernel->binaryPath;
    // A later request gets the same file, still holding the binary.
    std::shared_ptr<CompiledKernel> again = compile(*jit, kFirstParams);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->binaryPath, kernel->binaryPath);
    // A file removed since is written again.
    ::unlink(kernel->binaryPath.c_str());
    again = compile(*jit, kFirstParams);
    ASSERT_TRUE(again);
    expectBinaryFile(*again);
    // The Jit that wrote the file removes it when it goes (the process-wide
    // one, at exit): temporary binaries do not pile up in /tmp.
    std::string path = again->binaryPath;
    jit.reset();
    EXPECT_FALSE(isRegularFile(path)) << path;
  }
}

// A write that fails for want of space (here a file size limit, as a full
// disk or a quota would) is a compile error naming the file: LLVM's
// raw_fd_ostream reports an unchecked write error as a fatal error, which
// exited the whole process (the caller's server) from a compile thread.
TEST_F(JitCacheTest, AFailedWriteOfThePtxIsACompileErrorNotAnExit) {
  std::optional<std::string> message = runInChild(
      [&]() -> std::string {
        ::signal(SIGXFSZ, SIG_IGN);
        struct rlimit limit = {256, 256};
        if (::setrlimit(RLIMIT_FSIZE, &limit) != 0)
          return "setrlimit failed";
        auto compiled = makeJit()->compile(getBuiltinKernelSource(kPooling),
                                           kPooling, kSecondParams, "sm_90a");
        if (compiled)
          return "compiled";
        return llvm::toString(compiled.takeError());
      },
      /*seconds=*/120);
  ASSERT_TRUE(message);
  EXPECT_NE(message->find("cannot write"), std::string::npos) << *message;
  EXPECT_NE(message->find(".ptx"), std::string::npos) << *message;
}

TEST_F(JitCacheTest, NoWritablePlaceLeavesNoPath) {
  writeFile(root + "/file", "not a directory");
  auto jit = makeJit(root + "/file/cache");
  std::shared_ptr<CompiledKernel> kernel = compile(*jit, kFirstParams);
  ASSERT_TRUE(kernel);
  expectBinaryFile(*kernel);
  // The temporary file disappears and no temporary directory can be
  // written any more (ptxas would need one too, so only a kernel compiled
  // before gets here).
  ::unlink(kernel->binaryPath.c_str());
  ScopedEnvironment temporary("TMPDIR", (root + "/file/tmp").c_str());
  kernel = compile(*jit, kFirstParams);
  ASSERT_TRUE(kernel); // the kernel itself is fine (loading needs no file)
  EXPECT_TRUE(kernel->binaryPath.empty()) << kernel->binaryPath;
  EXPECT_NE(kernel->binaryPathError.find("cannot write the kernel cache"),
            std::string::npos)
      << kernel->binaryPathError;
  EXPECT_NE(kernel->binaryPathError.find("temporary file"), std::string::npos)
      << kernel->binaryPathError;
}

TEST_F(JitCacheTest, EntryPathThatIsADirectoryIsNotServed) {
  std::shared_ptr<CompiledKernel> kernel = compile(*makeJit(), kFirstParams);
  ASSERT_TRUE(kernel);
  std::string cachedBinary = kernel->binaryPath;
  for (bool binary : {true, false}) {
    SCOPED_TRACE(binary ? "directory as the .bin" : "directory as the .meta");
    llvm::sys::fs::remove_directories(cachedBinary);
    llvm::sys::fs::remove_directories(metadataPathOf(cachedBinary));
    ASSERT_TRUE(compile(*makeJit(), kFirstParams));
    std::string path = binary ? cachedBinary : metadataPathOf(cachedBinary);
    ASSERT_EQ(::unlink(path.c_str()), 0);
    ASSERT_FALSE(llvm::sys::fs::create_directories(path + "/inside"));

    auto jit = makeJit();
    std::shared_ptr<CompiledKernel> again = compile(*jit, kFirstParams);
    ASSERT_TRUE(again);
    EXPECT_EQ(jit->getStatistics().rejectedEntries, 1);
    EXPECT_EQ(jit->getStatistics().compiles, 1);
    EXPECT_NE(again->binaryPath, path);
    expectBinaryFile(*again);
    if (again->binaryPath != cachedBinary)
      ::unlink(again->binaryPath.c_str());
  }
}

TEST_F(JitCacheTest, ConcurrentJitsShareOneDirectory) {
  // The key of the entry (the same in every directory).
  std::shared_ptr<CompiledKernel> reference =
      compile(*makeJit(root + "/reference"), kFirstParams);
  ASSERT_TRUE(reference);
  std::string key = llvm::sys::path::stem(reference->binaryPath).str();

  // Several JITs (separate processes, in effect) compile and store the
  // same kernel at once while a reader looks the entry up: every lookup is
  // a miss or the whole entry, and no JIT rejects an entry.
  std::atomic<bool> done{false};
  std::atomic<int> rejected{0}, wrong{0};
  std::thread reader([&] {
    DiskCache cache(directory);
    while (!done) {
      DiskCache::Lookup found = cache.find(key);
      if (found.outcome == DiskCache::Lookup::Rejected)
        ++rejected;
      else if (found && found.entry->binary != reference->binary)
        ++wrong;
    }
  });
  std::vector<std::unique_ptr<Jit>> jits;
  for (int i = 0; i < 4; ++i)
    jits.push_back(makeJit());
  std::vector<std::shared_ptr<CompiledKernel>> results(jits.size());
  std::vector<std::thread> writers;
  for (size_t i = 0; i < jits.size(); ++i)
    writers.emplace_back([&, i] {
      for (int round = 0; round < 3; ++round)
        results[i] = compile(*jits[i], kFirstParams);
    });
  for (std::thread &writer : writers)
    writer.join();
  done = true;
  reader.join();

  EXPECT_EQ(rejected, 0);
  EXPECT_EQ(wrong, 0);
  for (size_t i = 0; i < jits.size(); ++i) {
    ASSERT_TRUE(results[i]);
    EXPECT_EQ(results[i]->binary, reference->binary);
    EXPECT_EQ(jits[i]->getStatistics().rejectedEntries, 0);
    expectBinaryFile(*results[i]);
  }
  auto after = makeJit();
  ASSERT_TRUE(compile(*after, kFirstParams));
  EXPECT_EQ(after->getStatistics().diskHits, 1);
}

// Processes that start together (a server's ranks) compile each kernel
// once: the first claims it, the others wait and find its entry.
TEST_F(JitCacheTest, ProcessesStartingTogetherCompileAKernelOnce) {
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  std::vector<pid_t> children;
  for (int i = 0; i < 3; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(gate[1]);
      char byte;
      (void)!::read(gate[0], &byte, 1); // released together (EOF)
      auto jit = makeJit();
      auto compiled = jit->compile(getBuiltinKernelSource(kPooling), kPooling,
                                   kSecondParams, "sm_90a");
      CacheStatistics stats = jit->getStatistics();
      ::_exit(!compiled                                    ? 3
              : stats.compiles == 1 && stats.diskHits == 0 ? 0
              : stats.compiles == 0 && stats.diskHits == 1 ? 1
                                                           : 2);
    }
    children.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);
  int compiled = 0, found = 0;
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << status;
    int outcome = WEXITSTATUS(status);
    ASSERT_LE(outcome, 1) << "child outcome " << outcome;
    (outcome == 0 ? compiled : found) += 1;
  }
  EXPECT_EQ(compiled, 1);
  EXPECT_EQ(found, 2);
}

//===----------------------------------------------------------------------===//
// The compile time limit
//===----------------------------------------------------------------------===//

TEST_F(JitCacheTest, CompileTimeLimitGivesAnError) {
  auto start = std::chrono::steady_clock::now();
  auto jit = makeJit({}, /*timeout=*/0.0);
  auto compiled = jit->compile(getBuiltinKernelSource(kPooling), kPooling,
                               kFirstParams, "sm_90a");
  ASSERT_FALSE(compiled);
  bool isCompileError = false;
  std::string message;
  llvm::handleAllErrors(
      compiled.takeError(),
      [&](const CompileError &error) {
        isCompileError = true;
        message = error.getMessage();
      },
      [&](const llvm::ErrorInfoBase &error) { message = error.message(); });
  EXPECT_TRUE(isCompileError) << message;
  EXPECT_NE(message.find("exceeded the JIT's time limit of 0 s"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("HISA_COMPILE_TIMEOUT_S"), std::string::npos)
      << message;
  EXPECT_NE(message.find("stopped before pass"), std::string::npos) << message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(jit->getStatistics().compiles, 0);
}

TEST_F(JitCacheTest, CompileTimeLimitFromTheEnvironment) {
  {
    ScopedEnvironment limit("HISA_COMPILE_TIMEOUT_S", "0.000001");
    auto compiled = makeJit()->compile(getBuiltinKernelSource(kPooling),
                                       kPooling, kFirstParams, "sm_90a");
    ASSERT_FALSE(compiled);
    std::string message = llvm::toString(compiled.takeError());
    EXPECT_NE(message.find("time limit of 1e-06 s"), std::string::npos)
        << message;
  }
  {
    // Not a positive number: ignored (with a warning), the default applies.
    ScopedEnvironment limit("HISA_COMPILE_TIMEOUT_S", "soon");
    EXPECT_TRUE(compile(*makeJit(), kFirstParams));
  }
}

TEST_F(JitCacheTest, ReportsLocalMemoryAndRefusesItWhenStrict) {
  // A "ptxas" whose resource report shows a stack frame, as for a tile.local
  // indexed by a run-time value.
  expectReportedAndRefusedWhenStrict(
      "echo 'ptxas info    : Function properties for k' >&2\n"
      "echo '    1024 bytes stack frame, 16 bytes spill stores, 16 bytes "
      "spill loads' >&2\n",
      "HISA_STRICT_LOCAL_MEMORY",
      "keeps 1024 bytes per thread in local memory (16 bytes of it register "
      "spills)");
}

TEST_F(JitCacheTest, ReportsSerializedWgmmaAndRefusesItWhenStrict) {
  // A "ptxas" that ran every wgmma alone, as it does when the in-flight
  // accumulators do not fit the register budget.
  expectReportedAndRefusedWhenStrict(
      "echo \"ptxas info    : (C7512) Potential Performance Loss: "
      "wgmma.mma_async instructions are serialized due to insufficient "
      "register resources for the function 'k'\" >&2\n"
      "echo 'ptxas info    : Used 128 registers, used 1 barriers' >&2\n",
      "HISA_STRICT_WGMMA",
      "wgmma.mma_async instructions are serialized due to insufficient "
      "register resources");
}

TEST_F(JitCacheTest, ReportsInjectedWgmmaWaitAndRefusesItWhenStrict) {
  // A "ptxas" that added a wait of its own before a use of registers an
  // asynchronous wgmma still writes.
  expectReportedAndRefusedWhenStrict(
      "echo \"ptxas info    : (C7517) warpgroup.wait is injected in around "
      "line 265 by compiler to allow use of registers defined by GMMA in "
      "function 'k'\" >&2\n"
      "echo 'ptxas info    : Used 168 registers, used 16 barriers' >&2\n",
      "HISA_STRICT_WGMMA",
      "warpgroup.wait is injected in around line 265 by compiler to allow use "
      "of registers defined by GMMA");
}

TEST_F(JitCacheTest, PtxasIsStoppedAtTheTimeLimit) {
  // A "ptxas" that never finishes. (The passes before it take well under a
  // second, so the limit runs out while it runs.)
  std::string script = root + "/slow-ptxas";
  writeFile(script, "#!/bin/sh\nexec sleep 100\n");
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  ScopedEnvironment ptxas("HISA_PTXAS", script.c_str());
  std::optional<std::string> result = runInChild(
      [&] {
        auto start = std::chrono::steady_clock::now();
        auto compiled = makeJit({}, /*timeout=*/5.0)
                            ->compile(getBuiltinKernelSource(kPooling),
                                      kPooling, kFirstParams, "sm_90a");
        double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
        std::string message =
            compiled ? "compiled" : llvm::toString(compiled.takeError());
        return (seconds < 15 ? "in time: " : "too late: ") + message;
      },
      /*seconds=*/60);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->rfind("in time: ", 0), 0u) << *result;
  EXPECT_NE(result->find("time limit of 5 s"), std::string::npos) << *result;
  EXPECT_NE(result->find("ptxas did not finish"), std::string::npos) << *result;
}

TEST_F(JitCacheTest, PtxasIsStoppedAtTheTimeLimitFromAWorkerThread) {
  // A server compiles on its own threads: the limit held only on the main
  // thread (LLVM's ExecuteAndWait waits with the process-wide alarm(),
  // whose signal went to the main thread, so the worker waited for ptxas
  // to finish; and its bare wait() could reap the application's children).
  std::string script = root + "/slow-ptxas";
  writeFile(script, "#!/bin/sh\nexec sleep 100\n");
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  ScopedEnvironment ptxas("HISA_PTXAS", script.c_str());
  std::optional<std::string> result = runInChild(
      [&] {
        // The application's own child, which the compile must not reap.
        pid_t own = ::fork();
        if (own == 0) {
          ::sleep(30);
          ::_exit(7);
        }
        std::string message;
        double seconds = 0;
        std::thread worker([&] {
          auto start = std::chrono::steady_clock::now();
          auto compiled = makeJit({}, /*timeout=*/3.0)
                              ->compile(getBuiltinKernelSource(kPooling),
                                        kPooling, kFirstParams, "sm_90a");
          seconds = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count();
          message =
              compiled ? "compiled" : llvm::toString(compiled.takeError());
        });
        worker.join();
        ::kill(own, SIGKILL);
        int status = 0;
        bool reaped = ::waitpid(own, &status, 0) == own;
        return std::string(seconds < 12 ? "in time: " : "too late: ") +
               (reaped ? "own child intact: " : "own child reaped: ") + message;
      },
      /*seconds=*/60);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->rfind("in time: own child intact: ", 0), 0u) << *result;
  EXPECT_NE(result->find("ptxas did not finish"), std::string::npos) << *result;
}

TEST_F(JitCacheTest, AnEmptyCubinIsRefusedAndNotCached) {
  // A ptxas that exits 0 without writing a cubin: refused, so that no
  // later process loads an empty image from the cache.
  std::string script = root + "/silent-ptxas";
  writeFile(script, "#!/bin/sh\nexit 0\n");
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  ScopedEnvironment ptxas("HISA_PTXAS", script.c_str());
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto compiled = makeJit({})->compile(getBuiltinKernelSource(kPooling),
                                         kPooling, kFirstParams, "sm_90a");
    ASSERT_FALSE(compiled);
    std::string message = llvm::toString(compiled.takeError());
    EXPECT_NE(message.find("wrote no ELF cubin"), std::string::npos) << message;
  }
}

TEST_F(JitCacheTest, AFailureTheRequestDecidesIsRememberedForTheProcess) {
  // Parameters the kernel refuses, a source that does not parse and a PTX
  // that ptxas rejects (exit status 1) fail the same way every time: the
  // second request gets the first one's error without compiling again.
  std::string script = root + "/rejecting-ptxas";
  writeFile(script, "#!/bin/sh\necho 'ptxas fatal: rejected' >&2\nexit 1\n");
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  struct Request {
    std::string source, kernel, params;
    bool stubPtxas;
  };
  std::vector<Request> requests = {
      {getBuiltinKernelSource(kPooling).str(), kPooling, "dim=64,hedas=3",
       false},
      {"tile.kernel @broken(", "broken", "", false},
      {getBuiltinKernelSource(kPooling).str(), kPooling, kFirstParams, true}};
  for (const Request &request : requests) {
    std::optional<ScopedEnvironment> ptxas;
    if (request.stubPtxas)
      ptxas.emplace("HISA_PTXAS", script.c_str());
    auto jit = makeJit();
    std::string messages[2];
    for (std::string &message : messages) {
      auto compiled = jit->compile(request.source, request.kernel,
                                   request.params, "sm_90a");
      ASSERT_FALSE(compiled) << request.kernel;
      message = llvm::toString(compiled.takeError());
    }
    EXPECT_EQ(messages[0], messages[1]);
    CacheStatistics stats = jit->getStatistics();
    EXPECT_EQ(stats.failedCompiles, 1) << messages[0];
    EXPECT_EQ(stats.rememberedFailures, 1) << messages[0];
    EXPECT_EQ(stats.compiles, 0);
  }
}

TEST_F(JitCacheTest, AFailureTheMachineDecidesIsTriedAgain) {
  // A time limit, or a ptxas killed by a signal, says nothing about the
  // next attempt: each request compiles again.
  std::string script = root + "/killed-ptxas";
  writeFile(script, "#!/bin/sh\nkill -9 $$\n");
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  {
    ScopedEnvironment ptxas("HISA_PTXAS", script.c_str());
    auto jit = makeJit();
    for (int attempt = 0; attempt < 2; ++attempt) {
      auto compiled = jit->compile(getBuiltinKernelSource(kPooling), kPooling,
                                   kFirstParams, "sm_90a");
      ASSERT_FALSE(compiled);
      std::string message = llvm::toString(compiled.takeError());
      EXPECT_NE(message.find("signal 9"), std::string::npos) << message;
    }
    EXPECT_EQ(jit->getStatistics().failedCompiles, 2);
    EXPECT_EQ(jit->getStatistics().rememberedFailures, 0);
  }
  auto jit = makeJit({}, /*timeout=*/0.0);
  for (int attempt = 0; attempt < 2; ++attempt)
    EXPECT_FALSE(static_cast<bool>(jit->compile(
        getBuiltinKernelSource(kPooling), kPooling, kFirstParams, "sm_90a")));
  EXPECT_EQ(jit->getStatistics().failedCompiles, 2);
  EXPECT_EQ(jit->getStatistics().rememberedFailures, 0);
}

//===----------------------------------------------------------------------===//
// Parameters the kernel refuses, through the C ABI
//===----------------------------------------------------------------------===//

/// hisa_kernel_compile's status and message, computed in a child process
/// (a crash or a hang fails the test instead of the test binary).
std::optional<std::pair<int, std::string>> compileInChild(const char *kernel,
                                                          const char *params) {
  getJit(); // the process-wide JIT's cache directory is set
  std::optional<std::string> result = runInChild(
      [&] {
        char path[4096];
        int status = hisa_kernel_compile(nullptr, kernel, params, "sm_90a",
                                         path, sizeof(path));
        return std::to_string(status) + "\n" + hisa_last_error();
      },
      /*seconds=*/120);
  if (!result)
    return std::nullopt;
  size_t newline = result->find('\n');
  return std::make_pair(std::stoi(result->substr(0, newline)),
                        result->substr(newline + 1));
}

/// Whether `message` states a limit.
bool namesALimit(const std::string &message) {
  for (const char *words :
       {"at most", "limit", "exceed", "too large", "maximum", "larger than",
        "more than", "out of range"})
    if (message.find(words) != std::string::npos)
      return true;
  return false;
}

TEST(JitParameters, RefusesAParameterGivenTwice) {
  getJit();
  char path[4096];
  EXPECT_EQ(hisa_kernel_compile(nullptr, "clean_and_maintain_logits",
                                "block_m=4,block_m=8", "sm_90a", path,
                                sizeof(path)),
            HISA_ERROR_INVALID_ARGUMENT);
  std::string message = hisa_last_error();
  EXPECT_NE(message.find("parameter 'block_m' is given more than once "
                         "('block_m=4' and 'block_m=8')"),
            std::string::npos)
      << message;
  // Even with the same value twice.
  EXPECT_FALSE(llvm::errorToBool(parseParams("a=1,b=2").takeError()));
  EXPECT_TRUE(llvm::errorToBool(parseParams("a=1,a=1").takeError()));
}

TEST(JitParameters, UnknownParameterIsAnInvalidArgument) {
  std::optional<std::pair<int, std::string>> result =
      compileInChild(kPooling, "dim=64,hedas=3");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->first, HISA_ERROR_INVALID_ARGUMENT) << result->second;
  EXPECT_NE(result->second.find("hedas"), std::string::npos) << result->second;
}

TEST(JitParameters, OversizedBlockIsAnInvalidArgument) {
  // kb = 2^40 rows per block: used to crash the process.
  std::optional<std::pair<int, std::string>> result =
      compileInChild(kPooling, "dim=64,kb=1099511627776");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->first, HISA_ERROR_INVALID_ARGUMENT) << result->second;
  EXPECT_NE(result->second.find("kb"), std::string::npos) << result->second;
  EXPECT_TRUE(namesALimit(result->second)) << result->second;
}

TEST(JitParameters, OversizedDimensionIsAnInvalidArgument) {
  std::optional<std::pair<int, std::string>> result =
      compileInChild(kPooling, "dim=1099511627776,kb=64");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->first, HISA_ERROR_INVALID_ARGUMENT) << result->second;
  EXPECT_NE(result->second.find("dim"), std::string::npos) << result->second;
  EXPECT_TRUE(namesALimit(result->second)) << result->second;
}

TEST(JitParameters, CompileReturnsARegularFileAndStatistics) {
  getJit();
  char path[4096];
  ASSERT_EQ(hisa_kernel_compile(nullptr, kPooling, kFirstParams, "sm_90a", path,
                                sizeof(path)),
            HISA_OK)
      << hisa_last_error();
  EXPECT_TRUE(isRegularFile(path)) << path;
  int64_t compiles = -1, diskHits = -1, memoryHits = -1, rejected = -1;
  hisa_cache_stats2(&compiles, &diskHits, &memoryHits, &rejected);
  int64_t oldCompiles = -1, oldDiskHits = -1, oldMemoryHits = -1;
  hisa_cache_stats(&oldCompiles, &oldDiskHits, &oldMemoryHits);
  EXPECT_EQ(compiles, oldCompiles);
  EXPECT_EQ(diskHits, oldDiskHits);
  EXPECT_EQ(memoryHits, oldMemoryHits);
  EXPECT_GE(compiles + diskHits, 1);
  EXPECT_EQ(rejected, 0);
  hisa_cache_stats2(nullptr, nullptr, nullptr, nullptr); // all optional
}

} // namespace

// Every specialization the V4 attention layer launches compiles through
// the JIT's own path (device library functions inlined, the grid program
// recorded), as on a GPU machine: the lit tests lower through hisa-opt,
// whose context may hold other dialects.
TEST(Jit, CompilesTheV4LayerSpecializations) {
  struct Case {
    const char *kernel;
    const char *params;
  };
  const Case cases[] = {
      {"linear_staged",
       "block_k=64,block_m=128,block_n=256,groups=1,k=4096,n=1024,"
       "x_cols=4096,y_cols=1024"},
      {"linear", "block_k=128,block_m=64,block_n=64,groups=8,k=4096,n=1024,"
                 "x_cols=32768,y_cols=8192"},
      {"v4_rmsnorm", "dim=512"},
      {"v4_rope", "dim=128,inverse=0"},
      {"v4_rope", "dim=512,inverse=1"},
      {"v4_fp8_qdq", ""},
      {"v4_hadamard_fp4", ""},
      {"v4_compress", "blocks=8,decode=0,overlap=1,quantize=1,ratio=4"},
      {"v4_compress", "blocks=8,decode=1,overlap=0,quantize=1,ratio=128"},
      {"v4_compress", "blocks=2,decode=1,overlap=1,quantize=2,ratio=4"},
      {"v4_to_fp8", "decode=1,weights=0"},
      {"v4_to_fp8", "decode=0,weights=1"},
      {"v4_index_query", ""},
      {"v4_index_windows", "ratio=4"},
      {"v4_indices", "csa=1,decode=1,ratio=4,window=128"},
      {"v4_ring_write", "window=128"},
      {"v4_advance", "set=1"},
      {"l2_prefetch", ""},
      {"linear_reduce_rmsnorm", "dim=1024"},
      {"v4_norm_rope", "dim=512"},
      {"linear_partial", "block_k=128,block_m=64,block_n=64,groups=1,k=8192,"
                         "n=4096,splits=4,x_cols=8192,y_cols=4096"},
      {"linear_reduce", ""},
      {"cp_windows", ""},
      {"mqa_logits_decode", "dim=128,heads=64,min_blocks=8"},
      {"linear_staged", "k=1024,n=32768,x_cols=1024,y_cols=32768"},
  };
  for (const Case &c : cases) {
    auto compiled = getJit().compile(getBuiltinKernelSource(c.kernel), c.kernel,
                                     c.params, "sm_90a");
    EXPECT_TRUE(bool(compiled))
        << c.kernel << " " << c.params << ": "
        << (compiled ? "" : llvm::toString(compiled.takeError()));
  }
}

TEST_F(JitCacheTest, ConcurrentCallersOfOneJitCompileEachKernelOnce) {
  auto jit = makeJit();
  std::vector<std::shared_ptr<CompiledKernel>> first(4), second(2);
  std::vector<std::string> refusals(3);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < first.size(); ++i)
    threads.emplace_back([&, i] { first[i] = compile(*jit, kFirstParams); });
  for (size_t i = 0; i < second.size(); ++i)
    threads.emplace_back([&, i] { second[i] = compile(*jit, kSecondParams); });
  // A specialization the compiler refuses: every waiter gets the error a
  // caller alone gets, of the same kind.
  auto describeRefusal = [](Jit &jit) -> std::string {
    auto compiled = jit.compile(getBuiltinKernelSource(kPooling), kPooling,
                                "dim=64,kb=96", "sm_90a");
    if (compiled)
      return "compiled";
    std::string kind = "other";
    if (compiled.errorIsA<CompileError>())
      kind = "compile";
    else if (compiled.errorIsA<ParameterError>())
      kind = "parameters";
    return kind + ": " + llvm::toString(compiled.takeError());
  };
  std::string alone = describeRefusal(*makeJit(root + "/alone"));
  ASSERT_NE(alone, "compiled");
  for (size_t i = 0; i < refusals.size(); ++i)
    threads.emplace_back([&, i] { refusals[i] = describeRefusal(*jit); });
  for (std::thread &thread : threads)
    thread.join();
  for (const auto &kernel : first) {
    ASSERT_TRUE(kernel);
    EXPECT_EQ(kernel, first[0]); // the same compilation
  }
  for (const auto &kernel : second) {
    ASSERT_TRUE(kernel);
    EXPECT_EQ(kernel, second[0]);
  }
  EXPECT_NE(first[0]->binary, second[0]->binary);
  EXPECT_EQ(jit->getStatistics().compiles, 2);
  for (const std::string &refusal : refusals)
    EXPECT_EQ(refusal, alone);
}

TEST_F(JitCacheTest, CompilationDoesNotHoldUpOtherKernelsCallers) {
  auto jit = makeJit();
  // Compiled first, with the real ptxas (or none): a memory hit later.
  ASSERT_TRUE(compile(*jit, kFirstParams));

  // A stand-in ptxas that says it started, then waits (at most 20 s) for
  // the test to let it finish.
  std::string started = root + "/started", release = root + "/release";
  std::string script = root + "/waiting-ptxas";
  writeFile(script, "#!/bin/sh\n"
                    "out=''\n"
                    "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; "
                    "done\n"
                    ": > '" +
                        started +
                        "'\n"
                        "i=0\n"
                        "while [ ! -e '" +
                        release +
                        "' ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); "
                        "done\n"
                        "printf '\\177ELF-cubin' > \"$out\"\n");
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  ScopedEnvironment ptxas("HISA_PTXAS", script.c_str());
  std::atomic<bool> slowDone{false};
  std::thread slow([&] {
    EXPECT_TRUE(compile(*jit, kSecondParams));
    slowDone = true;
  });
  for (int i = 0; i < 6000 && !isRegularFile(started); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(isRegularFile(started)) << "the stand-in ptxas never started";
  // While the other kernel's compilation waits inside ptxas, a compiled
  // kernel is served at once (a lock held through the compilation would
  // keep this call until the stand-in gives up, 20 s).
  auto before = std::chrono::steady_clock::now();
  EXPECT_TRUE(compile(*jit, kFirstParams));
  EXPECT_LT(std::chrono::steady_clock::now() - before,
            std::chrono::seconds(10));
  EXPECT_FALSE(slowDone) << "the compilation did not wait for the release";
  writeFile(release, "");
  slow.join();
  EXPECT_TRUE(slowDone);
}

/// The error of compiling the pooling kernel's source followed by `extra`
/// (in a fresh cache directory), or "" when it compiles.
static std::string compilePoolingWith(llvm::StringRef extra) {
  std::string source =
      (getBuiltinKernelSource("fp8_block_mean_pooling") + "\n" + extra).str();
  JitOptions options;
  llvm::SmallString<128> directory;
  if (llvm::sys::fs::createUniqueDirectory("hisa-jit-refusal", directory))
    return "cannot create a cache directory";
  options.cacheDirectory = std::string(directory);
  Jit jit(options);
  auto compiled = jit.compile(source, "fp8_block_mean_pooling", "", "sm_90a");
  std::string message = compiled ? "" : llvm::toString(compiled.takeError());
  llvm::sys::fs::remove_directories(directory);
  return message;
}

TEST(Jit, RefusesDenseArraysOfIndexBeforeParsing) {
  // MLIR 22's parser crashes on `array<index: ...>` (hisa-fuzz); in the JIT
  // that would be the caller's process.
  std::string message = compilePoolingWith(
      "func.func private @f() attributes {tile.sizes = array<index: 1, 2>}");
  EXPECT_NE(message.find("a dense array of index elements"), std::string::npos)
      << message;
}

TEST(Jit, RefusesSourcesWithOtherThanKernelsAndFunctions) {
  // A gpu.module beside the kernel would run through the lowering's
  // canonicalizations (memref.dim of index -1 crashed upstream's: hisa-fuzz).
  std::string message = compilePoolingWith("gpu.module @extra {}");
  EXPECT_NE(message.find("holds tile.kernel and func.func operations only, "
                         "not 'gpu.module'"),
            std::string::npos)
      << message;
}

// The compiler's identity in every cache key is the linker's build ID of
// the library that holds it (what readelf prints), not its size and time:
// a reproducible build with fixed timestamps could repeat those.
TEST(Jit, VersionNamesTheLibrarysBuildId) {
  Dl_info info;
  ASSERT_TRUE(dladdr(reinterpret_cast<void *>(&hisa_version), &info) &&
              info.dli_fname);
  std::string command =
      "readelf -n '" + std::string(info.dli_fname) + "' 2>/dev/null";
  FILE *pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string notes;
  char buffer[512];
  while (size_t read = ::fread(buffer, 1, sizeof(buffer), pipe))
    notes.append(buffer, read);
  ::pclose(pipe);
  size_t at = notes.find("Build ID: ");
  if (at == std::string::npos)
    GTEST_SKIP() << "no readelf, or " << info.dli_fname << " has no build ID";
  std::string buildId = notes.substr(at + 10, notes.find('\n', at) - at - 10);
  std::string version = hisa_version();
  EXPECT_NE(version.find(" build-" + buildId), std::string::npos)
      << version << " vs " << buildId;
}
