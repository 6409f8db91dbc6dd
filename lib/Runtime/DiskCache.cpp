//===- DiskCache.cpp - Compiled kernel binaries on disk -------------------===//

#include "hisa/Runtime/DiskCache.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <tuple>
#include <unistd.h>
#include <vector>

using namespace hisa::runtime;
namespace endian = llvm::support::endian;

// Layout of a .meta file (see DiskCache.h).
static constexpr llvm::StringLiteral kMetaMagic = "HISAMETA";
// Version 1 had no key, description or checksum.
static constexpr uint32_t kFormatVersion = 2;
static constexpr size_t kVersionOffset = 8;
static constexpr size_t kReservedOffset = 12;
static constexpr size_t kBinarySizeOffset = 16;
static constexpr size_t kKeySizeOffset = 24;
static constexpr size_t kDescriptionSizeOffset = 32;
static constexpr size_t kMetadataSizeOffset = 40;
static constexpr size_t kBinaryHashOffset = 48;
static constexpr size_t kChecksumOffset = 80;
static constexpr size_t kHashSize = 32;
static constexpr size_t kHeaderSize = 112;
// Larger .meta files are not read (metadata is a few kilobytes).
static constexpr uint64_t kMaxMetaFileSize = 64 << 20;

// Hashed before the parts of every key, so that a change to how keys are
// formed cannot collide with keys of the old scheme.
static constexpr llvm::StringLiteral kKeyDomain = "hisa-disk-cache-key-v1";

DiskCache::DiskCache()
    : directory(getDefaultDirectory()), maxBytes(getDefaultMaxBytes()) {}

DiskCache::DiskCache(std::string directory)
    : directory(std::move(directory)), maxBytes(getDefaultMaxBytes()) {}

/// The value of environment variable `name`, empty if unset.
static llvm::StringRef getEnvironment(const char *name) {
  const char *value = std::getenv(name);
  return value ? llvm::StringRef(value) : llvm::StringRef();
}

uint64_t DiskCache::getDefaultMaxBytes() {
  constexpr uint64_t kDefault = uint64_t(4) << 30;
  llvm::StringRef text = getEnvironment("HISA_CACHE_MAX_BYTES").trim();
  uint64_t bytes = 0;
  if (text.empty() || text.getAsInteger(10, bytes))
    return kDefault;
  return bytes;
}

std::string DiskCache::getDefaultDirectory() {
  llvm::StringRef explicitDirectory = getEnvironment("HISA_CACHE_DIR");
  if (!explicitDirectory.empty())
    return explicitDirectory.str();

  llvm::SmallString<256> path;
  // The XDG specification says to ignore a relative XDG_CACHE_HOME.
  llvm::StringRef xdgCacheHome = getEnvironment("XDG_CACHE_HOME");
  if (llvm::sys::path::is_absolute(xdgCacheHome)) {
    path = xdgCacheHome;
    llvm::sys::path::append(path, "hisa");
    return std::string(path);
  }
  // HOME, else the user's entry in the password database.
  if (!llvm::sys::path::home_directory(path))
    return "";
  llvm::sys::path::append(path, ".cache", "hisa");
  return std::string(path);
}

/// Adds `text` to `hash`, preceded by its length, so that the boundaries
/// between consecutive texts are part of what is hashed.
static void hashWithLength(llvm::SHA256 &hash, llvm::StringRef text) {
  uint8_t length[8];
  endian::write64le(length, text.size());
  hash.update(llvm::ArrayRef<uint8_t>(length));
  hash.update(text);
}

std::string DiskCache::computeKey(llvm::ArrayRef<llvm::StringRef> parts) {
  llvm::SHA256 hash;
  hashWithLength(hash, kKeyDomain);
  for (llvm::StringRef part : parts)
    hashWithLength(hash, part);
  return llvm::toHex(hash.final(), /*LowerCase=*/true);
}

bool DiskCache::isValidKey(llvm::StringRef key) {
  if (key.empty() || key.size() > 128)
    return false;
  return llvm::all_of(
      key, [](char c) { return llvm::isAlnum(c) || c == '_' || c == '-'; });
}

/// The file of `key`'s entry with `suffix` (".bin", ".meta", ".lock").
static std::string entryPath(llvm::StringRef directory, llvm::StringRef key,
                             llvm::StringRef suffix) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, key + suffix);
  return std::string(path);
}

std::string DiskCache::getBinaryPath(llvm::StringRef key) const {
  return entryPath(directory, key, ".bin");
}

std::string DiskCache::getMetadataPath(llvm::StringRef key) const {
  return entryPath(directory, key, ".meta");
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {
/// The contents of a file, or why there are none.
struct FileContents {
  enum Status { Read, Absent, Unusable } status = Absent;
  std::string data;
  std::string reason; // Unusable: why
};
} // namespace

static const char *describeFileType(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "a device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

/// Reads `path` if it is a regular file of at most `maxSize` bytes (exactly
/// `expectedSize` when given). Never blocks in open(): anything but a
/// regular file (a FIFO would block until a writer comes) is refused before
/// opening it, opened with O_NONBLOCK, and checked again on the descriptor
/// in case the path was replaced in between.
static FileContents readRegularFile(const std::string &path, uint64_t maxSize,
                                    std::optional<uint64_t> expectedSize) {
  FileContents result;
  auto unusable = [&](const llvm::Twine &why) {
    result.status = FileContents::Unusable;
    result.reason = ("'" + path + "' " + why).str();
    return result;
  };
  struct stat status;
  if (::stat(path.c_str(), &status) != 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return result; // Absent
    return unusable(llvm::Twine("cannot be read: ") + std::strerror(errno));
  }
  if (!S_ISREG(status.st_mode))
    return unusable(llvm::Twine("is ") + describeFileType(status.st_mode));

  int fd;
  do
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return result; // removed since the stat()
    return unusable(llvm::Twine("cannot be opened: ") + std::strerror(errno));
  }
  llvm::scope_exit closeFile([&] { ::close(fd); });
  if (::fstat(fd, &status) != 0)
    return unusable(llvm::Twine("cannot be read: ") + std::strerror(errno));
  if (!S_ISREG(status.st_mode))
    return unusable(llvm::Twine("is ") + describeFileType(status.st_mode));
  uint64_t size = static_cast<uint64_t>(status.st_size);
  if (expectedSize && size != *expectedSize)
    return unusable("has " + llvm::Twine(size) + " bytes, expected " +
                    llvm::Twine(*expectedSize));
  if (size > maxSize)
    return unusable("has " + llvm::Twine(size) + " bytes, more than " +
                    llvm::Twine(maxSize));

  std::string data(static_cast<size_t>(size), '\0');
  size_t done = 0;
  while (done < data.size()) {
    ssize_t count = ::read(fd, &data[done], data.size() - done);
    if (count < 0 && errno == EINTR)
      continue;
    if (count < 0)
      return unusable(llvm::Twine("cannot be read: ") + std::strerror(errno));
    if (count == 0)
      return unusable("was truncated while being read");
    done += static_cast<size_t>(count);
  }
  result.status = FileContents::Read;
  result.data = std::move(data);
  return result;
}

/// The checksum of a .meta file: SHA-256 of its header up to the checksum
/// field and of everything after the header.
static std::array<uint8_t, 32> computeChecksum(llvm::StringRef header,
                                               llvm::StringRef body) {
  llvm::SHA256 hash;
  hash.update(header.take_front(kChecksumOffset));
  hash.update(body);
  return hash.final();
}

static llvm::StringRef asStringRef(const std::array<uint8_t, 32> &hash) {
  return llvm::StringRef(reinterpret_cast<const char *>(hash.data()),
                         hash.size());
}

/// `text` quoted for a message, cut to a readable length.
static std::string quote(llvm::StringRef text) {
  std::string quoted = "'" + text.take_front(200).str() + "'";
  if (text.size() > 200)
    quoted.insert(quoted.size() - 1, "...");
  return quoted;
}

DiskCache::Lookup DiskCache::find(llvm::StringRef key,
                                  llvm::StringRef description) const {
  Lookup result;
  if (directory.empty() || !isValidKey(key))
    return result; // Absent
  auto reject = [&](const llvm::Twine &why) {
    result.outcome = Lookup::Rejected;
    result.reason = why.str();
    return result;
  };

  // The .meta file is renamed into place last, so it is read first.
  std::string metaPath = getMetadataPath(key);
  FileContents meta =
      readRegularFile(metaPath, kMaxMetaFileSize, /*expectedSize=*/{});
  if (meta.status == FileContents::Absent)
    return result;
  if (meta.status == FileContents::Unusable)
    return reject(meta.reason);
  llvm::StringRef text = meta.data;
  auto rejectMeta = [&](const llvm::Twine &why) {
    return reject("'" + metaPath + "' " + why);
  };
  if (text.size() < kHeaderSize)
    return rejectMeta("is truncated (" + llvm::Twine(text.size()) + " bytes)");
  llvm::StringRef header = text.take_front(kHeaderSize);
  llvm::StringRef body = text.drop_front(kHeaderSize);
  if (!header.starts_with(kMetaMagic))
    return rejectMeta("is not a hisa cache entry");
  uint32_t version = endian::read32le(header.data() + kVersionOffset);
  if (version != kFormatVersion)
    return rejectMeta("has format version " + llvm::Twine(version) +
                      ", expected " + llvm::Twine(kFormatVersion));
  if (endian::read32le(header.data() + kReservedOffset) != 0)
    return rejectMeta("has a damaged header");
  uint64_t binarySize = endian::read64le(header.data() + kBinarySizeOffset);
  uint64_t keySize = endian::read64le(header.data() + kKeySizeOffset);
  uint64_t descriptionSize =
      endian::read64le(header.data() + kDescriptionSizeOffset);
  uint64_t metadataSize = endian::read64le(header.data() + kMetadataSizeOffset);
  // Each size is checked against what is left, so that the sum cannot wrap.
  if (keySize > body.size() || descriptionSize > body.size() - keySize ||
      metadataSize != body.size() - keySize - descriptionSize)
    return rejectMeta("has sizes that do not match its length");
  if (asStringRef(computeChecksum(header, body)) !=
      header.substr(kChecksumOffset, kHashSize))
    return rejectMeta("fails its checksum (modified or damaged)");
  llvm::StringRef storedKey = body.take_front(keySize);
  llvm::StringRef storedDescription = body.substr(keySize, descriptionSize);
  if (storedKey != key)
    return rejectMeta("belongs to another key: " + quote(storedKey) +
                      (storedDescription.empty()
                           ? ""
                           : " (" + quote(storedDescription) + ")"));
  if (!description.empty() && storedDescription != description)
    return rejectMeta("was stored for " + quote(storedDescription) +
                      ", expected " + quote(description));

  FileContents binary = readRegularFile(getBinaryPath(key), binarySize,
                                        /*expectedSize=*/binarySize);
  // Eviction removes the .meta, then the binary: a reader between the two
  // sees this, an entry removed under it, which is a miss.
  if (binary.status == FileContents::Absent)
    return result; // Absent
  if (binary.status == FileContents::Unusable)
    return reject(binary.reason);
  // The binary may come from another store() than the .meta, or be damaged.
  if (asStringRef(llvm::SHA256::hash(llvm::arrayRefFromStringRef(
          binary.data))) != header.substr(kBinaryHashOffset, kHashSize))
    return reject("'" + getBinaryPath(key) +
                  "' does not match the hash in its .meta file");

  // The entry's last use, for the size bound's eviction (best effort: a
  // read-only directory keeps the store time).
  ::utimensat(AT_FDCWD, metaPath.c_str(), nullptr, 0);
  result.outcome = Lookup::Hit;
  result.entry.emplace();
  result.entry->binary = std::move(binary.data);
  result.entry->metadata = body.drop_front(keySize + descriptionSize).str();
  return result;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

/// An error for a failed system call, with errno's description.
static llvm::Error makeSystemError(const llvm::Twine &what, int errorNumber) {
  return llvm::createStringError(
      std::error_code(errorNumber, std::generic_category()),
      "kernel cache: " + what + ": " + std::strerror(errorNumber));
}

/// Writes all of `data` to `fd`; returns 0 or an errno value.
static int writeAll(int fd, llvm::StringRef data) {
  while (!data.empty()) {
    ssize_t count = ::write(fd, data.data(), data.size());
    if (count < 0 && errno == EINTR)
      continue;
    if (count < 0)
      return errno;
    if (count == 0)
      return EIO;
    data = data.drop_front(static_cast<size_t>(count));
  }
  return 0;
}

/// Writes the concatenation of `chunks` to `path` so that `path` never holds
/// a partial file: the data goes to a fresh temporary file next to it
/// (unique per process and call), which is then renamed over `path`.
static llvm::Error writeFileAtomically(const std::string &path,
                                       llvm::ArrayRef<llvm::StringRef> chunks) {
  std::string temporaryPath =
      path + ".tmp." + std::to_string(::getpid()) + ".XXXXXX";
  int fd = ::mkostemp(&temporaryPath[0], O_CLOEXEC);
  if (fd < 0)
    return makeSystemError(
        "cannot create a temporary file '" + temporaryPath + "'", errno);

  auto fail = [&](const llvm::Twine &what, int errorNumber) {
    if (fd >= 0)
      ::close(fd);
    ::unlink(temporaryPath.c_str());
    return makeSystemError(what, errorNumber);
  };
  // mkostemp creates the file private to the user; cache files are ordinary
  // files, readable like the rest of the user's files.
  if (::fchmod(fd, 0644) != 0)
    return fail("cannot set the mode of '" + temporaryPath + "'", errno);
  for (llvm::StringRef chunk : chunks)
    if (int errorNumber = writeAll(fd, chunk))
      return fail("cannot write '" + temporaryPath + "'", errorNumber);
  // close() reports deferred write errors on some file systems.
  int closed = ::close(fd);
  fd = -1;
  if (closed != 0)
    return fail("cannot write '" + temporaryPath + "'", errno);
  // No fsync: after a crash a damaged entry is detected and is only a miss.
  if (::rename(temporaryPath.c_str(), path.c_str()) != 0)
    return fail("cannot rename '" + temporaryPath + "' to '" + path + "'",
                errno);
  return llvm::Error::success();
}

/// One pass over the directory after a store: removes the temporary files
/// of writers that died mid-write ("<entry>.tmp.<pid>.XXXXXX" whose process
/// does not exist here and that is over an hour old: nothing else would
/// ever remove them; the age keeps a live writer's file in another PID
/// namespace, a container sharing the directory, whose pid means nothing
/// here), and, when the entries hold more than `maxBytes` (0: no bound),
/// removes the least recently used ones (by the .meta file's modification
/// time; never `kept`, the entry just stored) until three quarters are
/// left. The .meta goes first, so a reader sees a miss, never a binary
/// without its .meta's checks.
static void sweepDirectory(const std::string &directory, uint64_t maxBytes,
                           llvm::StringRef kept) {
  struct Use {
    uint64_t bytes = 0;
    llvm::sys::TimePoint<> lastUse;
    bool hasMeta = false;
  };
  llvm::StringMap<Use> entries;
  uint64_t total = 0;
  std::error_code error;
  auto hourAgo = std::chrono::system_clock::now() - std::chrono::hours(1);
  for (llvm::sys::fs::directory_iterator it(directory, error), end;
       !error && it != end; it.increment(error)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(it->path(), status, /*Follow=*/false) ||
        status.type() != llvm::sys::fs::file_type::regular_file)
      continue;
    size_t at = name.find(".tmp.");
    if (at != llvm::StringRef::npos) {
      llvm::StringRef rest = name.drop_front(at + 5);
      unsigned long long pid = 0;
      if (rest.consumeInteger(10, pid) || !rest.starts_with(".") || pid == 0 ||
          pid > 0x7fffffffULL || status.getLastModificationTime() > hourAgo)
        continue;
      if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
        ::unlink(it->path().c_str());
      continue;
    }
    // Compile claims' lock files: an hour unused means no compile holds
    // one (removing a held one would at worst let a second compile run).
    if (name.ends_with(".lock")) {
      if (status.getLastModificationTime() < hourAgo)
        ::unlink(it->path().c_str());
      continue;
    }
    bool meta = name.ends_with(".meta");
    if (!meta && !name.ends_with(".bin"))
      continue;
    llvm::StringRef key = name.drop_back(meta ? 5 : 4);
    if (!DiskCache::isValidKey(key))
      continue;
    Use &use = entries[key];
    use.bytes += status.getSize();
    total += status.getSize();
    // A binary without its .meta (a store cut short) ages from its own time.
    if (meta || !use.hasMeta)
      use.lastUse = status.getLastModificationTime();
    use.hasMeta |= meta;
  }
  if (maxBytes == 0 || total <= maxBytes)
    return;
  std::vector<std::pair<llvm::sys::TimePoint<>, llvm::StringRef>> byAge;
  for (const auto &entry : entries)
    if (entry.getKey() != kept)
      byAge.push_back({entry.getValue().lastUse, entry.getKey()});
  llvm::sort(byAge);
  uint64_t target = maxBytes / 4 * 3;
  for (const auto &[lastUse, key] : byAge) {
    if (total <= target)
      break;
    // Stored or used again since the listing (by another process): kept.
    std::string metaPath = entryPath(directory, key, ".meta");
    llvm::sys::fs::file_status now;
    if (!llvm::sys::fs::status(metaPath, now) &&
        now.getLastModificationTime() != lastUse)
      continue;
    ::unlink(metaPath.c_str());
    ::unlink(entryPath(directory, key, ".bin").c_str());
    total -= entries[key].bytes;
  }
}

DiskCache::CompileClaim &
DiskCache::CompileClaim::operator=(CompileClaim &&other) noexcept {
  if (this != &other) {
    if (fd >= 0)
      ::close(fd);
    fd = std::exchange(other.fd, -1);
    waitedFlag = other.waitedFlag;
    waitedTime = other.waitedTime;
  }
  return *this;
}

DiskCache::CompileClaim::~CompileClaim() {
  if (fd >= 0)
    ::close(fd); // releases the flock
}

DiskCache::CompileClaim DiskCache::claimCompile(llvm::StringRef key,
                                                double seconds) const {
  CompileClaim claim;
  if (directory.empty() || !isValidKey(key) ||
      llvm::sys::fs::create_directories(directory))
    return claim;
  std::string path = entryPath(directory, key, ".lock");
  // O_NONBLOCK: a FIFO planted at the name must not block the open.
  int fd = ::open(path.c_str(),
                  O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd < 0)
    return claim;
  struct stat status;
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    ::close(fd);
    return claim;
  }
  // (Capped as the compile limit is: a year is no limit, and a larger count
  // of nanoseconds would overflow.)
  constexpr double kYear = 365.0 * 24 * 3600;
  auto start = std::chrono::steady_clock::now();
  auto deadline =
      start +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(std::clamp(seconds, 0.0, kYear)));
  // The entry as it was: a holder that stores it changes the .meta file.
  std::string metaPath = getMetadataPath(key);
  auto metaState = [&] {
    struct stat meta;
    if (::stat(metaPath.c_str(), &meta) != 0)
      return std::make_tuple(int64_t(-1), int64_t(0), uint64_t(0));
    return std::make_tuple(int64_t(meta.st_mtim.tv_sec),
                           int64_t(meta.st_mtim.tv_nsec),
                           uint64_t(meta.st_ino));
  };
  auto metaBefore = metaState();
  auto finish = [&](bool waited) {
    claim.waitedFlag = waited;
    claim.waitedTime =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    return std::move(claim);
  };
  bool waited = false;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if ((errno != EWOULDBLOCK && errno != EINTR) ||
        std::chrono::steady_clock::now() >= deadline) {
      ::close(fd);
      return finish(waited);
    }
    waited = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (metaState() != metaBefore) {
      ::close(fd);
      return finish(true);
    }
  }
  ::futimens(fd, nullptr); // in use: the sweep leaves it
  claim.fd = fd;
  return finish(waited);
}

llvm::Error DiskCache::store(llvm::StringRef key, const Entry &entry,
                             llvm::StringRef description) const {
  if (!isValidKey(key))
    return llvm::createStringError(
        std::errc::invalid_argument,
        "kernel cache: invalid key '%s' (expected 1 to 128 characters from "
        "[0-9A-Za-z_-])",
        key.str().c_str());
  if (directory.empty())
    return llvm::createStringError(
        std::errc::no_such_file_or_directory,
        "kernel cache: no cache directory (HOME is not set); set "
        "HISA_CACHE_DIR");
  if (std::error_code error = llvm::sys::fs::create_directories(directory))
    return llvm::createStringError(error,
                                   "kernel cache: cannot create the directory "
                                   "'%s': %s",
                                   directory.c_str(), error.message().c_str());
  // create_directories() accepts anything that exists.
  if (!llvm::sys::fs::is_directory(directory))
    return llvm::createStringError(
        std::errc::not_a_directory,
        "kernel cache: cannot create the directory '%s': a file that is not a "
        "directory is in the way",
        directory.c_str());

  // The binary first: a .meta file must never be visible before some
  // complete binary is.
  if (llvm::Error error = writeFileAtomically(getBinaryPath(key),
                                              {llvm::StringRef(entry.binary)}))
    return error;

  std::string body = (key + description + entry.metadata).str();
  char header[kHeaderSize] = {0};
  std::memcpy(header, kMetaMagic.data(), kMetaMagic.size());
  endian::write32le(header + kVersionOffset, kFormatVersion);
  endian::write64le(header + kBinarySizeOffset, entry.binary.size());
  endian::write64le(header + kKeySizeOffset, key.size());
  endian::write64le(header + kDescriptionSizeOffset, description.size());
  endian::write64le(header + kMetadataSizeOffset, entry.metadata.size());
  std::array<uint8_t, 32> hash =
      llvm::SHA256::hash(llvm::arrayRefFromStringRef(entry.binary));
  std::memcpy(header + kBinaryHashOffset, hash.data(), kHashSize);
  std::array<uint8_t, 32> checksum =
      computeChecksum(llvm::StringRef(header, kHeaderSize), body);
  std::memcpy(header + kChecksumOffset, checksum.data(), kHashSize);
  if (llvm::Error error = writeFileAtomically(
          getMetadataPath(key),
          {llvm::StringRef(header, kHeaderSize), llvm::StringRef(body)}))
    return error;
  sweepDirectory(directory, maxBytes, key);
  return llvm::Error::success();
}
