//===- DiskCache.cpp - Compiled kernel binaries on disk -------------------===//

#include "hisa/Runtime/DiskCache.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace hisa::runtime;
namespace endian = llvm::support::endian;

// Layout of a .meta file (see DiskCache.h).
static constexpr llvm::StringLiteral kMetaMagic = "HISAMETA";
static constexpr uint32_t kFormatVersion = 1;
static constexpr size_t kVersionOffset = 8;
static constexpr size_t kReservedOffset = 12;
static constexpr size_t kBinarySizeOffset = 16;
static constexpr size_t kBinaryHashOffset = 24;
static constexpr size_t kHashSize = 32;
static constexpr size_t kMetadataSizeOffset = 56;
static constexpr size_t kHeaderSize = 64;

// Hashed before the parts of every key, so that a change to how keys are
// formed cannot collide with keys of the old scheme.
static constexpr llvm::StringLiteral kKeyDomain = "hisa-disk-cache-key-v1";

DiskCache::DiskCache() : directory(getDefaultDirectory()) {}

DiskCache::DiskCache(std::string directory) : directory(std::move(directory)) {}

/// The value of environment variable `name`, empty if unset.
static llvm::StringRef getEnvironment(const char *name) {
  const char *value = std::getenv(name);
  return value ? llvm::StringRef(value) : llvm::StringRef();
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

std::string DiskCache::getBinaryPath(llvm::StringRef key) const {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, key + ".bin");
  return std::string(path);
}

std::string DiskCache::getMetadataPath(llvm::StringRef key) const {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, key + ".meta");
  return std::string(path);
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

/// The contents of `path`, or std::nullopt if it cannot be read or its size
/// is not `expectedSize` (when given).
static std::optional<std::string>
readWholeFile(const std::string &path,
              std::optional<uint64_t> expectedSize = std::nullopt) {
  int fd;
  do
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0)
    return std::nullopt;

  std::optional<std::string> contents;
  struct stat status;
  if (::fstat(fd, &status) == 0 && S_ISREG(status.st_mode) &&
      (!expectedSize ||
       static_cast<uint64_t>(status.st_size) == *expectedSize)) {
    std::string data(static_cast<size_t>(status.st_size), '\0');
    size_t done = 0;
    while (done < data.size()) {
      ssize_t count = ::read(fd, &data[done], data.size() - done);
      if (count < 0 && errno == EINTR)
        continue;
      if (count <= 0)
        break;
      done += static_cast<size_t>(count);
    }
    if (done == data.size())
      contents = std::move(data);
  }
  ::close(fd);
  return contents;
}

std::optional<DiskCache::Entry> DiskCache::lookup(llvm::StringRef key) const {
  if (directory.empty() || !isValidKey(key))
    return std::nullopt;

  // The .meta file is renamed into place last, so it is read first.
  std::optional<std::string> meta = readWholeFile(getMetadataPath(key));
  if (!meta || meta->size() < kHeaderSize)
    return std::nullopt;
  llvm::StringRef header(meta->data(), kHeaderSize);
  if (!header.starts_with(kMetaMagic) ||
      endian::read32le(header.data() + kVersionOffset) != kFormatVersion ||
      endian::read32le(header.data() + kReservedOffset) != 0)
    return std::nullopt;
  uint64_t binarySize = endian::read64le(header.data() + kBinarySizeOffset);
  uint64_t metadataSize = endian::read64le(header.data() + kMetadataSizeOffset);
  if (metadataSize != meta->size() - kHeaderSize)
    return std::nullopt;

  std::optional<std::string> binary =
      readWholeFile(getBinaryPath(key), binarySize);
  if (!binary)
    return std::nullopt;
  // The binary may come from another store() than the .meta, or be damaged.
  std::array<uint8_t, 32> hash =
      llvm::SHA256::hash(llvm::arrayRefFromStringRef(*binary));
  if (llvm::StringRef(reinterpret_cast<const char *>(hash.data()),
                      hash.size()) !=
      header.substr(kBinaryHashOffset, kHashSize))
    return std::nullopt;

  Entry entry;
  entry.binary = std::move(*binary);
  entry.metadata = meta->substr(kHeaderSize);
  return entry;
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

llvm::Error DiskCache::store(llvm::StringRef key, const Entry &entry) const {
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

  // The binary first: a .meta file must never be visible before some
  // complete binary is.
  if (llvm::Error error = writeFileAtomically(getBinaryPath(key),
                                              {llvm::StringRef(entry.binary)}))
    return error;

  char header[kHeaderSize] = {0};
  std::memcpy(header, kMetaMagic.data(), kMetaMagic.size());
  endian::write32le(header + kVersionOffset, kFormatVersion);
  endian::write64le(header + kBinarySizeOffset, entry.binary.size());
  std::array<uint8_t, 32> hash =
      llvm::SHA256::hash(llvm::arrayRefFromStringRef(entry.binary));
  std::memcpy(header + kBinaryHashOffset, hash.data(), kHashSize);
  endian::write64le(header + kMetadataSizeOffset, entry.metadata.size());
  return writeFileAtomically(
      getMetadataPath(key),
      {llvm::StringRef(header, kHeaderSize), llvm::StringRef(entry.metadata)});
}
