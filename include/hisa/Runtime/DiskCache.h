//===- DiskCache.h - Compiled kernel binaries on disk -----------*- C++ -*-===//
//
// Compiling a kernel takes long enough that every process should not redo
// it: binaries are kept in a directory shared by all processes of the user,
//   $HISA_CACHE_DIR, else $XDG_CACHE_HOME/hisa, else $HOME/.cache/hisa,
// under a key that hashes everything the binary depends on (computeKey).
//
// An entry is two files:
//   <key>.bin   the binary itself (cubin or PTX), usable by other tools;
//   <key>.meta  a header, the key, a description and the entry's metadata:
//                 0  magic "HISAMETA"
//                 8  format version (u32 little-endian), then 4 zero bytes
//                16  size of <key>.bin (u64 little-endian)
//                24  size of the key (u64 little-endian)
//                32  size of the description (u64 little-endian)
//                40  size of the metadata (u64 little-endian)
//                48  SHA-256 of <key>.bin (32 bytes)
//                80  SHA-256 of bytes [0, 80) followed by bytes [112, end)
//               112  the key, the description, the metadata
//
// The .meta file binds the entry to its key: lookup() serves an entry only
// if the key (and, when the caller gives one, the description of what the
// key was computed from) stored in it are the ones asked for, and the
// checksum at offset 80 covers the sizes, the binary's hash, the key, the
// description and the metadata. A copied, edited, truncated, damaged or
// foreign entry is therefore "rejected": a miss, reported as such so that
// the caller can count it and rebuild the entry. (The checksum detects
// damage and mix-ups, not a deliberate forgery by someone who can write the
// cache directory.)
//
// Only regular files are read, and never with a blocking open(): a FIFO, a
// device or a directory in place of an entry file is a rejected entry, not
// a hang.
//
// Each file is written to a unique temporary file in the directory and then
// renamed over its final name, so a file is always either absent or
// complete, whatever other threads and processes do at the same time. The
// binary is stored first and the .meta last; lookup() reads the .meta first
// and accepts the binary only if its size and hash match. An entry stored
// concurrently with different contents under the same key can therefore
// never be returned mixed: lookup() sees one writer's entry or a miss.
//
// The directory is bounded: after each store() its entries hold at most
// getMaxBytes() ($HISA_CACHE_MAX_BYTES, default 4 GiB, 0 for no limit); past
// it the least recently used entries (a hit refreshes the .meta file's
// modification time) are removed until three quarters are left. Keys change
// with every compiler build, so without a bound a server's cache would grow
// with each upgrade. An entry removed under a reader is a miss, recompiled.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_RUNTIME_DISKCACHE_H
#define HISA_RUNTIME_DISKCACHE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <utility>

namespace hisa::runtime {

class DiskCache {
public:
  /// What is cached under one key.
  struct Entry {
    std::string binary;   // cubin or PTX
    std::string metadata; // whatever the runtime needs to launch it
  };

  /// What lookup() found.
  struct Lookup {
    enum Outcome {
      Hit,      // `entry` is the stored entry
      Absent,   // no entry is stored under the key
      Rejected, // something is stored under the key but may not be served
    } outcome = Absent;
    std::optional<Entry> entry;
    std::string reason; // Rejected: why, naming the file

    explicit operator bool() const { return outcome == Hit; }
  };

  /// A cache in getDefaultDirectory(), as the environment says now.
  DiskCache();
  /// A cache in `directory`, created on the first store().
  explicit DiskCache(std::string directory);

  /// $HISA_CACHE_MAX_BYTES (a byte count; 0: no limit), else 4 GiB. A value
  /// that is not a number is ignored (the default holds).
  static uint64_t getDefaultMaxBytes();
  uint64_t getMaxBytes() const { return maxBytes; }
  void setMaxBytes(uint64_t bytes) { maxBytes = bytes; }

  /// $HISA_CACHE_DIR, else $XDG_CACHE_HOME/hisa, else $HOME/.cache/hisa
  /// (empty variables count as unset; without HOME, the home directory of
  /// the user). Empty if none of them can be determined.
  static std::string getDefaultDirectory();

  const std::string &getDirectory() const { return directory; }

  /// The key of an entry: the lowercase hex SHA-256 of `parts` (source text,
  /// kernel name, parameters, target, compiler version...). Each part is
  /// length-prefixed, so ("ab", "c") and ("a", "bc") have different keys.
  static std::string computeKey(llvm::ArrayRef<llvm::StringRef> parts);

  /// Whether `key` can name an entry: 1 to 128 characters from [0-9A-Za-z_-]
  /// (keys become file names).
  static bool isValidKey(llvm::StringRef key);

  /// Looks up the entry stored under `key`. `description` (readable text
  /// saying what the key was computed from) must equal the one given to
  /// store(), unless it is empty.
  Lookup find(llvm::StringRef key, llvm::StringRef description = {}) const;

  /// The entry stored under `key`, or std::nullopt if there is none or it
  /// is rejected (see find()).
  std::optional<Entry> lookup(llvm::StringRef key,
                              llvm::StringRef description = {}) const {
    return find(key, description).entry;
  }

  /// Stores `entry` under `key` with `description`, replacing any previous
  /// entry. Creates the directory if needed. Safe to call from several
  /// threads and processes at once.
  llvm::Error store(llvm::StringRef key, const Entry &entry,
                    llvm::StringRef description = {}) const;

  /// An exclusive claim on compiling the entry of one key, held by one
  /// thread of one process at a time among all that use the directory
  /// (flock on "<key>.lock"; released when the claim is destroyed, and by
  /// the kernel when its process dies). Several processes starting at once
  /// (a server's ranks) then compile each kernel once: the others wait and
  /// find the entry.
  class CompileClaim {
  public:
    CompileClaim() = default;
    CompileClaim(CompileClaim &&other) noexcept
        : fd(std::exchange(other.fd, -1)), waitedFlag(other.waitedFlag),
          waitedTime(other.waitedTime) {}
    CompileClaim &operator=(CompileClaim &&other) noexcept;
    CompileClaim(const CompileClaim &) = delete;
    CompileClaim &operator=(const CompileClaim &) = delete;
    ~CompileClaim();
    /// Whether another holder had it first (the entry may be there now).
    bool waited() const { return waitedFlag; }
    /// How long the claim waited for another holder, in seconds.
    double waitedSeconds() const { return waitedTime; }
    explicit operator bool() const { return fd >= 0; }

  private:
    friend class DiskCache;
    int fd = -1;
    bool waitedFlag = false;
    double waitedTime = 0;
  };

  /// Claims the compilation of `key`, waiting at most `seconds` (capped at
  /// a year) for another holder. Returns without the claim, marked as
  /// waited, as soon as the entry's .meta file appears or changes (the
  /// holder stored it, even if a forked child still holds the lock). An
  /// empty claim when the directory cannot hold the lock file or the wait
  /// ran out: the caller compiles anyway (a duplicate compile, not an
  /// error).
  CompileClaim claimCompile(llvm::StringRef key, double seconds) const;

  /// Where the binary of `key` lives (it may not exist).
  std::string getBinaryPath(llvm::StringRef key) const;
  /// Where the header and metadata of `key` live (it may not exist).
  std::string getMetadataPath(llvm::StringRef key) const;

private:
  std::string directory;
  uint64_t maxBytes;
};

} // namespace hisa::runtime

#endif // HISA_RUNTIME_DISKCACHE_H
