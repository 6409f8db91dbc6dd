//===- DiskCacheTest.cpp - The on-disk kernel cache -----------------------===//

#include "hisa/Runtime/DiskCache.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <thread>
#include <vector>

using hisa::runtime::DiskCache;

namespace {

/// Sets or unsets an environment variable for the lifetime of the object.
class ScopedEnvironment {
public:
  ScopedEnvironment(const char *name, const char *value) : name(name) {
    if (const char *old = std::getenv(name))
      oldValue = old;
    if (value)
      ::setenv(name, value, /*overwrite=*/1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnvironment() {
    if (oldValue)
      ::setenv(name, oldValue->c_str(), /*overwrite=*/1);
    else
      ::unsetenv(name);
  }

private:
  const char *name;
  std::optional<std::string> oldValue;
};

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
         meta[8] = 2;
         writeFile(metaPath, meta);
       }},
      {"wrong hash",
       [&] {
         std::string meta = readFile(metaPath);
         meta[30] ^= 0x40;
         writeFile(metaPath, meta);
       }},
      {"huge sizes",
       [&] {
         std::string meta = readFile(metaPath);
         std::fill(meta.begin() + 16, meta.begin() + 24, '\xff');
         std::fill(meta.begin() + 56, meta.begin() + 64, '\xff');
         writeFile(metaPath, meta);
       }},
      {"garbage", [&] { writeFile(metaPath, std::string(5000, '\x7f')); }},
      {"directory instead of binary",
       [&] {
         ::unlink(binaryPath.c_str());
         llvm::sys::fs::create_directory(binaryPath);
       }},
  };
  for (auto &[what, damage] : damages) {
    SCOPED_TRACE(what);
    llvm::sys::fs::remove_directories(binaryPath);
    storeFresh();
    damage();
    EXPECT_FALSE(cache.lookup(key));
  }
  // Storing again repairs the entry.
  llvm::sys::fs::remove_directories(binaryPath);
  storeFresh();
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
