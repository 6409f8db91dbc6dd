//===- DiskCacheTest.cpp - The on-disk kernel cache -----------------------===//

#include "hisa/Runtime/DiskCache.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "TestProcess.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <thread>
#include <vector>

using hisa::runtime::DiskCache;

using hisa::testing::runInChild;
using hisa::testing::ScopedEnvironment;

namespace {

const char *outcomeName(DiskCache::Lookup::Outcome outcome) {
  switch (outcome) {
  case DiskCache::Lookup::Hit:
    return "hit";
  case DiskCache::Lookup::Absent:
    return "absent";
  case DiskCache::Lookup::Rejected:
    return "rejected";
  }
  return "?";
}

/// Each test gets a fresh directory, named by HISA_CACHE_DIR.
class DiskCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> path;
    ASSERT_FALSE(
        llvm::sys::fs::createUniqueDirectory("hisa-disk-cache-test", path));
    root = std::string(path);
    directory = root + "/cache";
    environment.emplace("HISA_CACHE_DIR", directory.c_str());
  }
  void TearDown() override {
    environment.reset();
    llvm::sys::fs::remove_directories(root);
  }

  /// The names of the files in the cache directory, sorted.
  std::vector<std::string> listDirectory() const {
    std::vector<std::string> names;
    std::error_code error;
    for (llvm::sys::fs::directory_iterator it(directory, error), end;
         !error && it != end; it.increment(error))
      names.push_back(llvm::sys::path::filename(it->path()).str());
    std::sort(names.begin(), names.end());
    return names;
  }

  static std::string readFile(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void writeFile(const std::string &path, const std::string &data) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << data;
  }

  static DiskCache::Entry makeEntry(char fill, size_t size) {
    DiskCache::Entry entry;
    entry.binary.assign(size, fill);
    entry.binary[0] = '\0'; // binaries hold NUL bytes
    entry.metadata = std::string("grid=1,1,1;fill=") + fill;
    return entry;
  }

  std::string root;
  std::string directory;
  std::optional<ScopedEnvironment> environment;
};

bool sameEntry(const DiskCache::Entry &a, const DiskCache::Entry &b) {
  return a.binary == b.binary && a.metadata == b.metadata;
}

//===----------------------------------------------------------------------===//
// Keys
//===----------------------------------------------------------------------===//

TEST(DiskCacheKey, IsStableLowercaseHexSha256) {
  std::string key =
      DiskCache::computeKey({"source", "kernel", "heads=32", "sm_90a", "0.1"});
  EXPECT_EQ(key, DiskCache::computeKey(
                     {"source", "kernel", "heads=32", "sm_90a", "0.1"}));
  ASSERT_EQ(key.size(), 64u);
  EXPECT_TRUE(std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  }));
  EXPECT_TRUE(DiskCache::isValidKey(key));
  // Pins the encoding (a length-prefixed domain tag, then each part with a
  // 64-bit little-endian length): changing it silently invalidates caches.
  EXPECT_EQ(DiskCache::computeKey({"ab", "c"}),
            "b680c412419c152456e95bc756bb0dc1933a84779b25f5ac4722e14efc950eba");
}

TEST(DiskCacheKey, DependsOnEveryPartAndItsBoundaries) {
  std::string base = DiskCache::computeKey({"src", "k", "heads=32", "sm_90a"});
  EXPECT_NE(base, DiskCache::computeKey({"src", "k", "heads=64", "sm_90a"}));
  EXPECT_NE(base, DiskCache::computeKey({"src", "k", "heads=32", "sm_100a"}));
  EXPECT_NE(base, DiskCache::computeKey({"src ", "k", "heads=32", "sm_90a"}));
  EXPECT_NE(base, DiskCache::computeKey({"k", "src", "heads=32", "sm_90a"}));
  EXPECT_NE(DiskCache::computeKey({"ab", "c"}),
            DiskCache::computeKey({"a", "bc"}));
  EXPECT_NE(DiskCache::computeKey({"a"}), DiskCache::computeKey({"a", ""}));
  EXPECT_NE(DiskCache::computeKey({}), DiskCache::computeKey({""}));
}

TEST(DiskCacheKey, ValidKeysAreFileNameSafe) {
  EXPECT_TRUE(DiskCache::isValidKey("abc_DEF-012"));
  EXPECT_FALSE(DiskCache::isValidKey(""));
  EXPECT_FALSE(DiskCache::isValidKey("../escape"));
  EXPECT_FALSE(DiskCache::isValidKey("a/b"));
  EXPECT_FALSE(DiskCache::isValidKey("a.bin"));
  EXPECT_FALSE(DiskCache::isValidKey(std::string(129, 'a')));
}

//===----------------------------------------------------------------------===//
// Directory
//===----------------------------------------------------------------------===//

TEST(DiskCacheDirectory, FollowsTheEnvironment) {
  ScopedEnvironment home("HOME", "/home/someone");
  {
    ScopedEnvironment explicitDirectory("HISA_CACHE_DIR", "/tmp/explicit");
    ScopedEnvironment xdg("XDG_CACHE_HOME", "/tmp/xdg");
    EXPECT_EQ(DiskCache::getDefaultDirectory(), "/tmp/explicit");
    EXPECT_EQ(DiskCache().getDirectory(), "/tmp/explicit");
  }
  {
    ScopedEnvironment explicitDirectory("HISA_CACHE_DIR", "");
    ScopedEnvironment xdg("XDG_CACHE_HOME", "/tmp/xdg");
    EXPECT_EQ(DiskCache::getDefaultDirectory(), "/tmp/xdg/hisa");
  }
  {
    ScopedEnvironment explicitDirectory("HISA_CACHE_DIR", nullptr);
    ScopedEnvironment xdg("XDG_CACHE_HOME", nullptr);
    EXPECT_EQ(DiskCache::getDefaultDirectory(), "/home/someone/.cache/hisa");
  }
  {
    // A relative XDG_CACHE_HOME is invalid and ignored.
    ScopedEnvironment explicitDirectory("HISA_CACHE_DIR", nullptr);
    ScopedEnvironment xdg("XDG_CACHE_HOME", "relative");
    EXPECT_EQ(DiskCache::getDefaultDirectory(), "/home/someone/.cache/hisa");
  }
}

TEST_F(DiskCacheTest, CreatesNestedDirectoryOnStore) {
  ScopedEnvironment nested("HISA_CACHE_DIR", (directory + "/a/b").c_str());
  DiskCache cache;
  EXPECT_EQ(cache.getDirectory(), directory + "/a/b");
  std::string key = DiskCache::computeKey({"x"});
  EXPECT_FALSE(cache.lookup(key)); // a missing directory is a miss
  ASSERT_FALSE(llvm::errorToBool(cache.store(key, makeEntry('x', 10))));
  EXPECT_TRUE(llvm::sys::fs::is_directory(directory + "/a/b"));
  EXPECT_TRUE(cache.lookup(key));
}

// A writer that died mid-write left "<entry>.tmp.<pid>.XXXXXX": the next
// store removes it (a live writer's file stays).
TEST_F(DiskCacheTest, RemovesTheFilesOfWritersThatDied) {
  DiskCache cache(directory);
  ASSERT_FALSE(llvm::errorToBool(
      cache.store(DiskCache::computeKey({"a"}), makeEntry('a', 10))));
  pid_t dead = ::fork();
  if (dead == 0)
    ::_exit(0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
  std::string stale =
      directory + "/abc.cubin.tmp." + std::to_string(dead) + ".Q1w2E3";
  std::string live =
      directory + "/abc.cubin.tmp." + std::to_string(::getpid()) + ".R4t5Y6";
  std::string young =
      directory + "/abc.cubin.tmp." + std::to_string(dead) + ".U7i8O9";
  writeFile(stale, "partial");
  writeFile(live, "partial");
  writeFile(young, "partial");
  // Over an hour old (a younger one may be a live writer's in another PID
  // namespace, a container sharing the directory).
  for (const std::string &old : {stale, live}) {
    struct timeval times[2] = {{::time(nullptr) - 7200, 0},
                               {::time(nullptr) - 7200, 0}};
    ASSERT_EQ(::utimes(old.c_str(), times), 0);
  }
  ASSERT_FALSE(llvm::errorToBool(
      cache.store(DiskCache::computeKey({"b"}), makeEntry('b', 10))));
  EXPECT_FALSE(llvm::sys::fs::exists(stale));
  EXPECT_TRUE(llvm::sys::fs::exists(live));
  EXPECT_TRUE(llvm::sys::fs::exists(young));
}

// The directory is bounded: past getMaxBytes() the least recently used
// entries go (a hit counts as a use), down to three quarters; the entry
// just stored stays even when it alone is over the bound.
TEST_F(DiskCacheTest, EvictsTheLeastRecentlyUsedEntriesPastItsBound) {
  DiskCache cache(directory);
  cache.setMaxBytes(0); // filled without a bound first
  std::vector<std::string> keys;
  for (char c : std::string("abcdef")) {
    keys.push_back(DiskCache::computeKey({std::string(1, c)}));
    ASSERT_FALSE(
        llvm::errorToBool(cache.store(keys.back(), makeEntry(c, 1000))));
    // Distinct, increasing last uses: a, b, c, ... hours ago, oldest first.
    struct timeval times[2] = {
        {::time(nullptr) - 3600 * (10 - long(keys.size())), 0},
        {::time(nullptr) - 3600 * (10 - long(keys.size())), 0}};
    ASSERT_EQ(::utimes(cache.getMetadataPath(keys.back()).c_str(), times), 0);
    ASSERT_EQ(::utimes(cache.getBinaryPath(keys.back()).c_str(), times), 0);
  }
  uint64_t entryBytes = 0;
  for (const std::string &path :
       {cache.getBinaryPath(keys[0]), cache.getMetadataPath(keys[0])}) {
    uint64_t size = 0;
    ASSERT_FALSE(llvm::sys::fs::file_size(path, size));
    entryBytes += size;
  }
  // A hit on the oldest makes it the most recently used.
  ASSERT_TRUE(cache.lookup(keys[0]));
  // A seventh entry over a bound of five: down to three quarters (3.75
  // entries, so three are left: the new one and the two used last).
  cache.setMaxBytes(entryBytes * 5);
  std::string seventh = DiskCache::computeKey({"g"});
  ASSERT_FALSE(llvm::errorToBool(cache.store(seventh, makeEntry('g', 1000))));
  EXPECT_TRUE(cache.lookup(seventh));
  EXPECT_TRUE(cache.lookup(keys[0])) << "used last before the store";
  EXPECT_TRUE(cache.lookup(keys[5]));
  for (int i = 1; i < 5; ++i) {
    EXPECT_FALSE(cache.lookup(keys[i])) << i;
    EXPECT_FALSE(llvm::sys::fs::exists(cache.getBinaryPath(keys[i]))) << i;
  }
  // An entry larger than the whole bound is still stored (and served).
  cache.setMaxBytes(10);
  std::string large = DiskCache::computeKey({"large"});
  ASSERT_FALSE(llvm::errorToBool(cache.store(large, makeEntry('L', 5000))));
  EXPECT_TRUE(cache.lookup(large));
  EXPECT_EQ(listDirectory(),
            (std::vector<std::string>{large + ".bin", large + ".meta"}));
}

// A compile claim is exclusive across processes (flock): another process
// waits for it up to its limit, gets nothing past it, and gets it (marked
// as waited for) once the holder lets go, here by exiting. (The holders
// are children: a forked child inherits its parent's lock.)
TEST_F(DiskCacheTest, CompileClaimsAreExclusiveAcrossProcesses) {
  std::string key = DiskCache::computeKey({"claimed"});
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t holder = ::fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    DiskCache::CompileClaim claim = DiskCache(directory).claimCompile(key, 0);
    char byte = claim && !claim.waited() ? 'y' : 'n';
    (void)!::write(ready[1], &byte, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    ::_exit(0);
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(byte, 'y');
  EXPECT_FALSE(DiskCache(directory).claimCompile(key, 0.1)) << "held";
  DiskCache::CompileClaim after = DiskCache(directory).claimCompile(key, 30);
  ASSERT_TRUE(after);
  EXPECT_TRUE(after.waited());
  int status = 0;
  ASSERT_EQ(::waitpid(holder, &status, 0), holder);
  after = DiskCache::CompileClaim();
  EXPECT_TRUE(DiskCache(directory).claimCompile(key, 0));
  // A directory that cannot hold the lock file gives no claim, not an error.
  writeFile(root + "/file", "x");
  EXPECT_FALSE(DiskCache(root + "/file").claimCompile(key, 0));
}

// A holder in another process, for `holdMs` milliseconds from its signal.
static pid_t holdClaimInChild(const std::string &directory,
                              const std::string &key, int holdMs) {
  int ready[2];
  if (::pipe(ready) != 0)
    return -1;
  pid_t holder = ::fork();
  if (holder == 0) {
    DiskCache::CompileClaim claim = DiskCache(directory).claimCompile(key, 0);
    char byte = claim ? 'y' : 'n';
    (void)!::write(ready[1], &byte, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(holdMs));
    ::_exit(0);
  }
  ::close(ready[1]);
  char byte = 0;
  bool held = ::read(ready[0], &byte, 1) == 1 && byte == 'y';
  ::close(ready[0]);
  return held ? holder : -1;
}

// A limit too large to count in nanoseconds (HISA_COMPILE_TIMEOUT_S=1e10)
// still waits, capped at a year (it gave up at once: the deadline
// overflowed into the past).
TEST_F(DiskCacheTest, ACompileClaimWaitsUnderAHugeLimit) {
  std::string key = DiskCache::computeKey({"huge limit"});
  pid_t holder = holdClaimInChild(directory, key, 800);
  ASSERT_GT(holder, 0);
  DiskCache::CompileClaim claim = DiskCache(directory).claimCompile(key, 1e10);
  EXPECT_TRUE(claim);
  EXPECT_TRUE(claim.waited());
  EXPECT_GT(claim.waitedSeconds(), 0.1);
  ::waitpid(holder, nullptr, 0);
}

// A waiter returns as soon as the entry is stored, even while the lock
// stays held (a forked child of the holder keeps it).
TEST_F(DiskCacheTest, ACompileClaimEndsWhenTheEntryAppears) {
  DiskCache cache(directory);
  std::string key = DiskCache::computeKey({"appears"});
  pid_t holder = holdClaimInChild(directory, key, 20000);
  ASSERT_GT(holder, 0);
  std::thread store([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_FALSE(llvm::errorToBool(cache.store(key, makeEntry('s', 100))));
  });
  auto start = std::chrono::steady_clock::now();
  DiskCache::CompileClaim claim = cache.claimCompile(key, 30);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  store.join();
  EXPECT_FALSE(claim);
  EXPECT_TRUE(claim.waited());
  EXPECT_LT(seconds, 10);
  EXPECT_TRUE(cache.lookup(key));
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
}

TEST(DiskCacheBound, FollowsTheEnvironment) {
  {
    ScopedEnvironment unset("HISA_CACHE_MAX_BYTES", nullptr);
    EXPECT_EQ(DiskCache::getDefaultMaxBytes(), uint64_t(4) << 30);
  }
  {
    ScopedEnvironment none("HISA_CACHE_MAX_BYTES", "0");
    EXPECT_EQ(DiskCache("/nonexistent").getMaxBytes(), 0u);
  }
  {
    ScopedEnvironment some("HISA_CACHE_MAX_BYTES", "123456");
    EXPECT_EQ(DiskCache::getDefaultMaxBytes(), 123456u);
  }
  {
    ScopedEnvironment garbage("HISA_CACHE_MAX_BYTES", "lots");
    EXPECT_EQ(DiskCache::getDefaultMaxBytes(), uint64_t(4) << 30);
  }
}

TEST_F(DiskCacheTest, ReportsDirectoryThatCannotBeCreated) {
  // A regular file where a parent directory should be: fails even for root.
  writeFile(root + "/file", "x");
  DiskCache cache(root + "/file/cache");
  llvm::Error error = cache.store("key", makeEntry('x', 10));
  ASSERT_TRUE(bool(error));
  std::string message = llvm::toString(std::move(error));
  EXPECT_NE(message.find("cannot create the directory"), std::string::npos)
      << message;
  EXPECT_NE(message.find(root + "/file/cache"), std::string::npos) << message;
}

//===----------------------------------------------------------------------===//
// Store and lookup
//===----------------------------------------------------------------------===//

TEST_F(DiskCacheTest, RoundTrips) {
  DiskCache cache;
  ASSERT_EQ(cache.getDirectory(), directory);
  std::string key = DiskCache::computeKey({"src", "kernel", "", "sm_90a"});
  DiskCache::Entry entry = makeEntry('c', 100000);
  ASSERT_FALSE(llvm::errorToBool(cache.store(key, entry)));

  std::optional<DiskCache::Entry> found = cache.lookup(key);
  ASSERT_TRUE(found);
  EXPECT_TRUE(sameEntry(*found, entry));
  // The binary is stored as is, for tools that read it directly.
  EXPECT_EQ(cache.getBinaryPath(key), directory + "/" + key + ".bin");
  EXPECT_EQ(readFile(cache.getBinaryPath(key)), entry.binary);
  EXPECT_EQ(listDirectory(),
            (std::vector<std::string>{key + ".bin", key + ".meta"}));

  // Another instance (another process, in effect) sees it too.
  EXPECT_TRUE(DiskCache(directory).lookup(key));
}

TEST_F(DiskCacheTest, RoundTripsEmptyParts) {
  DiskCache cache;
  ASSERT_FALSE(llvm::errorToBool(cache.store("empty", DiskCache::Entry())));
  std::optional<DiskCache::Entry> found = cache.lookup("empty");
  ASSERT_TRUE(found);
  EXPECT_TRUE(found->binary.empty());
  EXPECT_TRUE(found->metadata.empty());
}

TEST_F(DiskCacheTest, StoreReplacesAnEntry) {
  DiskCache cache;
  ASSERT_FALSE(llvm::errorToBool(cache.store("k", makeEntry('a', 1000))));
  ASSERT_FALSE(llvm::errorToBool(cache.store("k", makeEntry('b', 10))));
  std::optional<DiskCache::Entry> found = cache.lookup("k");
  ASSERT_TRUE(found);
  EXPECT_TRUE(sameEntry(*found, makeEntry('b', 10)));
}

TEST_F(DiskCacheTest, MissesAbsentAndInvalidKeys) {
  DiskCache cache;
  ASSERT_FALSE(llvm::errorToBool(cache.store("present", makeEntry('p', 10))));
  EXPECT_FALSE(cache.lookup("absent"));
  EXPECT_FALSE(cache.lookup(""));
  EXPECT_FALSE(cache.lookup("../cache/present"));

  llvm::Error error = cache.store("../escape", makeEntry('e', 10));
  ASSERT_TRUE(bool(error));
  EXPECT_NE(llvm::toString(std::move(error)).find("invalid key"),
            std::string::npos);
}

TEST_F(DiskCacheTest, DamagedEntriesAreMisses) {
  DiskCache cache;
  DiskCache::Entry entry = makeEntry('d', 4096);
  std::string key = "damaged";
  std::string binaryPath = cache.getBinaryPath(key);
  std::string metaPath = cache.getMetadataPath(key);
  auto storeFresh = [&] {
    ASSERT_FALSE(llvm::errorToBool(cache.store(key, entry)));
    ASSERT_TRUE(cache.lookup(key));
  };

  // Each damage, applied to a freshly stored entry, must give a miss.
  std::vector<std::pair<const char *, std::function<void()>>> damages = {
      {"truncated binary",
       [&] { writeFile(binaryPath, entry.binary.substr(0, 100)); }},
      {"binary with a flipped byte",
       [&] {
         std::string data = entry.binary;
         data[2000] ^= 1;
         writeFile(binaryPath, data);
       }},
      {"longer binary", [&] { writeFile(binaryPath, entry.binary + "x"); }},
      {"missing binary", [&] { ::unlink(binaryPath.c_str()); }},
      {"empty binary", [&] { writeFile(binaryPath, ""); }},
      {"missing meta", [&] { ::unlink(metaPath.c_str()); }},
      {"empty meta", [&] { writeFile(metaPath, ""); }},
      {"truncated header",
       [&] { writeFile(metaPath, readFile(metaPath).substr(0, 40)); }},
      {"truncated metadata",
       [&] {
         std::string meta = readFile(metaPath);
         writeFile(metaPath, meta.substr(0, meta.size() - 1));
       }},
      {"longer metadata",
       [&] { writeFile(metaPath, readFile(metaPath) + "x"); }},
      {"bad magic",
       [&] {
         std::string meta = readFile(metaPath);
         meta[0] = 'X';
         writeFile(metaPath, meta);
       }},
      {"future version",
       [&] {
         std::string meta = readFile(metaPath);
         meta[8] = 3;
         writeFile(metaPath, meta);
       }},
      {"version 1",
       [&] {
         std::string meta = readFile(metaPath);
         meta[8] = 1;
         writeFile(metaPath, meta);
       }},
      {"wrong binary hash",
       [&] {
         std::string meta = readFile(metaPath);
         meta[54] ^= 0x40;
         writeFile(metaPath, meta);
       }},
      {"wrong checksum",
       [&] {
         std::string meta = readFile(metaPath);
         meta[90] ^= 0x01;
         writeFile(metaPath, meta);
       }},
      {"metadata byte changed",
       [&] {
         std::string meta = readFile(metaPath);
         meta.back() ^= 0x01;
         writeFile(metaPath, meta);
       }},
      {"huge sizes",
       [&] {
         std::string meta = readFile(metaPath);
         std::fill(meta.begin() + 16, meta.begin() + 48, '\xff');
         writeFile(metaPath, meta);
       }},
      {"key size swallowing the metadata",
       [&] {
         std::string meta = readFile(metaPath);
         meta[24] += 3;
         writeFile(metaPath, meta);
       }},
      {"garbage", [&] { writeFile(metaPath, std::string(5000, '\x7f')); }},
      {"directory instead of binary",
       [&] {
         ::unlink(binaryPath.c_str());
         llvm::sys::fs::create_directory(binaryPath);
       }},
      {"directory instead of meta",
       [&] {
         ::unlink(metaPath.c_str());
         llvm::sys::fs::create_directory(metaPath);
       }},
  };
  for (auto &[what, damage] : damages) {
    SCOPED_TRACE(what);
    llvm::sys::fs::remove_directories(binaryPath);
    llvm::sys::fs::remove_directories(metaPath);
    storeFresh();
    damage();
    DiskCache::Lookup found = cache.find(key);
    EXPECT_FALSE(found);
    EXPECT_FALSE(found.entry);
    // Anything present but unusable is rejected (and named), not absent;
    // a missing file is a miss (eviction removes the .meta, then the
    // binary: a reader between the two sees a missing binary).
    if (std::string(what) == "missing meta" ||
        std::string(what) == "missing binary") {
      EXPECT_EQ(found.outcome, DiskCache::Lookup::Absent);
    } else {
      EXPECT_EQ(found.outcome, DiskCache::Lookup::Rejected)
          << outcomeName(found.outcome);
      EXPECT_NE(found.reason.find(key), std::string::npos) << found.reason;
    }
  }
  // Storing again repairs the entry.
  llvm::sys::fs::remove_directories(binaryPath);
  llvm::sys::fs::remove_directories(metaPath);
  storeFresh();
}

//===----------------------------------------------------------------------===//
// Binding entries to their keys
//===----------------------------------------------------------------------===//

TEST_F(DiskCacheTest, EntryCopiedOverAnotherKeyIsRejected) {
  // Two parameter sets of one kernel; the entry of the first is copied over
  // the entry of the second (both files, so sizes and hashes agree).
  DiskCache cache;
  std::string first = DiskCache::computeKey({"src", "k", "kb=64"});
  std::string second = DiskCache::computeKey({"src", "k", "kb=128"});
  ASSERT_FALSE(llvm::errorToBool(
      cache.store(first, makeEntry('1', 3000), "kernel=k params=kb=64")));
  ASSERT_FALSE(llvm::errorToBool(
      cache.store(second, makeEntry('2', 5000), "kernel=k params=kb=128")));
  ASSERT_TRUE(cache.find(second, "kernel=k params=kb=128"));
  writeFile(cache.getBinaryPath(second), readFile(cache.getBinaryPath(first)));
  writeFile(cache.getMetadataPath(second),
            readFile(cache.getMetadataPath(first)));

  DiskCache::Lookup found = cache.find(second, "kernel=k params=kb=128");
  EXPECT_EQ(found.outcome, DiskCache::Lookup::Rejected)
      << outcomeName(found.outcome);
  EXPECT_FALSE(found.entry);
  // The reason names the key (and parameters) the entry belongs to.
  EXPECT_NE(found.reason.find("belongs to another key"), std::string::npos)
      << found.reason;
  EXPECT_NE(found.reason.find(first), std::string::npos) << found.reason;
  EXPECT_NE(found.reason.find("kb=64"), std::string::npos) << found.reason;
  EXPECT_FALSE(cache.lookup(second)); // also without a description
  // The first entry is intact; storing the second again repairs it.
  EXPECT_TRUE(cache.find(first, "kernel=k params=kb=64"));
  ASSERT_FALSE(llvm::errorToBool(
      cache.store(second, makeEntry('2', 5000), "kernel=k params=kb=128")));
  found = cache.find(second, "kernel=k params=kb=128");
  ASSERT_TRUE(found);
  EXPECT_TRUE(sameEntry(*found.entry, makeEntry('2', 5000)));
}

TEST_F(DiskCacheTest, DescriptionMismatchIsRejected) {
  DiskCache cache;
  ASSERT_FALSE(llvm::errorToBool(
      cache.store("key", makeEntry('d', 100), "kernel=a params=x=1")));
  EXPECT_TRUE(cache.find("key", "kernel=a params=x=1"));
  EXPECT_TRUE(cache.find("key")); // no description to compare
  DiskCache::Lookup found = cache.find("key", "kernel=a params=x=2");
  EXPECT_EQ(found.outcome, DiskCache::Lookup::Rejected);
  EXPECT_NE(found.reason.find("'kernel=a params=x=1'"), std::string::npos)
      << found.reason;
  EXPECT_NE(found.reason.find("'kernel=a params=x=2'"), std::string::npos)
      << found.reason;
}

TEST_F(DiskCacheTest, SameSizeMetadataEditIsRejected) {
  // An edit that keeps every size (threads 128 -> 256) must not be served.
  DiskCache cache;
  DiskCache::Entry entry;
  entry.binary = "binary";
  entry.metadata = "kernel pool cubin 128 0\ngrid 0\n";
  ASSERT_FALSE(llvm::errorToBool(cache.store("edited", entry, "pool")));
  std::string metaPath = cache.getMetadataPath("edited");
  std::string meta = readFile(metaPath);
  size_t at = meta.find("cubin 128");
  ASSERT_NE(at, std::string::npos);
  meta.replace(at, 9, "cubin 256");
  writeFile(metaPath, meta);
  DiskCache::Lookup found = cache.find("edited", "pool");
  EXPECT_EQ(found.outcome, DiskCache::Lookup::Rejected);
  EXPECT_NE(found.reason.find("checksum"), std::string::npos) << found.reason;
}

TEST_F(DiskCacheTest, BinaryBitFlipIsRejected) {
  DiskCache cache;
  DiskCache::Entry entry = makeEntry('b', 1000);
  ASSERT_FALSE(llvm::errorToBool(cache.store("flip", entry)));
  std::string binary = entry.binary;
  binary[500] ^= 0x10;
  writeFile(cache.getBinaryPath("flip"), binary);
  DiskCache::Lookup found = cache.find("flip");
  EXPECT_EQ(found.outcome, DiskCache::Lookup::Rejected);
  EXPECT_NE(found.reason.find("does not match the hash"), std::string::npos)
      << found.reason;
}

//===----------------------------------------------------------------------===//
// Files that are not regular files, directories that cannot be written
//===----------------------------------------------------------------------===//

TEST_F(DiskCacheTest, FifoInPlaceOfAnEntryFileDoesNotHang) {
  for (bool binary : {true, false}) {
    SCOPED_TRACE(binary ? "FIFO as the .bin" : "FIFO as the .meta");
    DiskCache cache;
    std::string key = binary ? "fifo-bin" : "fifo-meta";
    ASSERT_FALSE(llvm::errorToBool(cache.store(key, makeEntry('f', 100))));
    std::string path =
        binary ? cache.getBinaryPath(key) : cache.getMetadataPath(key);
    ASSERT_EQ(::unlink(path.c_str()), 0);
    ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0) << std::strerror(errno);

    // Nobody ever writes the FIFO: a blocking open() would never return.
    std::optional<std::string> result = runInChild([&] {
      DiskCache::Lookup found = cache.find(key);
      return std::string(outcomeName(found.outcome)) + ":" + found.reason;
    });
    ASSERT_TRUE(result);
    EXPECT_EQ(result->rfind("rejected:", 0), 0u) << *result;
    EXPECT_NE(result->find("is a FIFO"), std::string::npos) << *result;

    // Storing replaces the FIFO.
    std::optional<std::string> stored = runInChild([&] {
      llvm::Error error = cache.store(key, makeEntry('f', 100));
      if (error)
        return "store: " + llvm::toString(std::move(error));
      return std::string(outcomeName(cache.find(key).outcome));
    });
    ASSERT_TRUE(stored);
    EXPECT_EQ(*stored, "hit");
  }
}

TEST_F(DiskCacheTest, DeviceInPlaceOfAnEntryFileIsRejected) {
  DiskCache cache;
  ASSERT_FALSE(llvm::errorToBool(cache.store("dev", makeEntry('d', 100))));
  std::string path = cache.getMetadataPath("dev");
  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_EQ(::symlink("/dev/zero", path.c_str()), 0);
  DiskCache::Lookup found = cache.find("dev");
  EXPECT_EQ(found.outcome, DiskCache::Lookup::Rejected);
  EXPECT_NE(found.reason.find("is a device"), std::string::npos)
      << found.reason;
}

TEST_F(DiskCacheTest, ReportsDirectoryThatIsARegularFile) {
  // Root can write anywhere, but not into a regular file.
  writeFile(directory, "x");
  DiskCache cache(directory);
  EXPECT_EQ(cache.find("key").outcome, DiskCache::Lookup::Absent);
  llvm::Error error = cache.store("key", makeEntry('x', 10));
  ASSERT_TRUE(bool(error));
  std::string message = llvm::toString(std::move(error));
  EXPECT_NE(message.find("cannot create the directory"), std::string::npos)
      << message;
  EXPECT_NE(message.find(directory), std::string::npos) << message;
}

TEST_F(DiskCacheTest, ReportsEntryPathThatIsADirectory) {
  DiskCache cache;
  ASSERT_TRUE(
      !llvm::sys::fs::create_directories(cache.getBinaryPath("blocked")));
  ASSERT_TRUE(!llvm::sys::fs::create_directories(
      cache.getBinaryPath("blocked") + "/inside"));
  llvm::Error error = cache.store("blocked", makeEntry('x', 10));
  ASSERT_TRUE(bool(error));
  std::string message = llvm::toString(std::move(error));
  EXPECT_NE(message.find("cannot rename"), std::string::npos) << message;
  EXPECT_EQ(cache.find("blocked").outcome, DiskCache::Lookup::Absent);
  // No temporary file is left behind.
  EXPECT_EQ(listDirectory(), (std::vector<std::string>{"blocked.bin"}));
}

//===----------------------------------------------------------------------===//
// Concurrency
//===----------------------------------------------------------------------===//

TEST_F(DiskCacheTest, ConcurrentStoresFromThreads) {
  DiskCache cache;
  std::string key = DiskCache::computeKey({"threads"});
  DiskCache::Entry entry = makeEntry('t', 200000);
  ASSERT_FALSE(llvm::errorToBool(cache.store(key, entry)));

  // Writers keep replacing the entry with the same contents; a reader must
  // always find it complete, since the files are only ever renamed over.
  std::atomic<int> failedStores{0};
  std::atomic<int> badLookups{0};
  std::atomic<bool> writersDone{false};
  std::thread reader([&] {
    while (!writersDone) {
      std::optional<DiskCache::Entry> found = cache.lookup(key);
      if (!found || !sameEntry(*found, entry))
        ++badLookups;
    }
  });
  std::vector<std::thread> writers;
  for (int i = 0; i < 8; ++i)
    writers.emplace_back([&] {
      for (int round = 0; round < 20; ++round)
        if (llvm::errorToBool(cache.store(key, entry)))
          ++failedStores;
    });
  for (std::thread &writer : writers)
    writer.join();
  writersDone = true;
  reader.join();

  EXPECT_EQ(failedStores, 0);
  EXPECT_EQ(badLookups, 0);
  std::optional<DiskCache::Entry> found = cache.lookup(key);
  ASSERT_TRUE(found);
  EXPECT_TRUE(sameEntry(*found, entry));
  EXPECT_EQ(listDirectory(),
            (std::vector<std::string>{key + ".bin", key + ".meta"}));
}

TEST_F(DiskCacheTest, ConcurrentFirstStoresAndLookups) {
  // Threads race to create the same entry while others look it up: each
  // lookup is absent or the whole entry, never rejected or mixed.
  DiskCache cache;
  std::string key = DiskCache::computeKey({"first stores"});
  DiskCache::Entry entry = makeEntry('s', 100000);
  std::atomic<int> failedStores{0}, badLookups{0}, hits{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&, i] {
      for (int round = 0; round < 30; ++round) {
        if (i % 2 == 0 && llvm::errorToBool(cache.store(key, entry, "desc")))
          ++failedStores;
        DiskCache::Lookup found = cache.find(key, "desc");
        if (found.outcome == DiskCache::Lookup::Rejected ||
            (found && !sameEntry(*found.entry, entry)))
          ++badLookups;
        else if (found)
          ++hits;
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(failedStores, 0);
  EXPECT_EQ(badLookups, 0);
  EXPECT_GT(hits, 0);
  EXPECT_EQ(listDirectory(),
            (std::vector<std::string>{key + ".bin", key + ".meta"}));
}

TEST_F(DiskCacheTest, ConcurrentStoresFromProcesses) {
  DiskCache cache;
  std::string key = DiskCache::computeKey({"processes"});
  DiskCache::Entry entry = makeEntry('p', 300000);
  ASSERT_FALSE(llvm::errorToBool(cache.store(key, entry)));

  std::vector<pid_t> children;
  for (int i = 0; i < 4; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // The child only stores and reports through its exit status.
      int failures = 0;
      for (int round = 0; round < 20; ++round)
        if (llvm::errorToBool(DiskCache(directory).store(key, entry)))
          ++failures;
      ::_exit(failures == 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  // Meanwhile this process reads; every lookup must find the whole entry.
  int badLookups = 0;
  size_t running = children.size();
  while (running > 0) {
    std::optional<DiskCache::Entry> found = cache.lookup(key);
    if (!found || !sameEntry(*found, entry))
      ++badLookups;
    for (pid_t &pid : children) {
      int status = 0;
      if (pid <= 0 || ::waitpid(pid, &status, WNOHANG) != pid)
        continue;
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      pid = 0;
      --running;
    }
  }
  EXPECT_EQ(badLookups, 0);

  std::optional<DiskCache::Entry> found = cache.lookup(key);
  ASSERT_TRUE(found);
  EXPECT_TRUE(sameEntry(*found, entry));
  EXPECT_EQ(listDirectory(),
            (std::vector<std::string>{key + ".bin", key + ".meta"}));
}

TEST_F(DiskCacheTest, ConcurrentDifferentContentsNeverMix) {
  // Nothing should store different binaries under one key, but if it
  // happens, a lookup returns one writer's entry whole or misses.
  DiskCache cache;
  std::string key = "mixed";
  // All of one size, so that only the hash in the .meta tells them apart.
  std::vector<DiskCache::Entry> entries;
  for (int i = 0; i < 4; ++i)
    entries.push_back(makeEntry(static_cast<char>('a' + i), 20000));
  auto isOneOfEntries = [&](const DiskCache::Entry &found) {
    return std::any_of(
        entries.begin(), entries.end(),
        [&](const DiskCache::Entry &entry) { return sameEntry(found, entry); });
  };

  std::atomic<int> mixedLookups{0};
  std::atomic<bool> writersDone{false};
  std::thread reader([&] {
    while (!writersDone)
      if (std::optional<DiskCache::Entry> found = cache.lookup(key))
        if (!isOneOfEntries(*found))
          ++mixedLookups;
  });
  std::vector<std::thread> writers;
  for (const DiskCache::Entry &entry : entries)
    writers.emplace_back([&] {
      for (int round = 0; round < 50; ++round)
        EXPECT_FALSE(llvm::errorToBool(cache.store(key, entry)));
    });
  for (std::thread &writer : writers)
    writer.join();
  writersDone = true;
  reader.join();

  EXPECT_EQ(mixedLookups, 0);
  if (std::optional<DiskCache::Entry> found = cache.lookup(key)) {
    EXPECT_TRUE(isOneOfEntries(*found));
  }
  EXPECT_EQ(listDirectory(),
            (std::vector<std::string>{key + ".bin", key + ".meta"}));
}

} // namespace
