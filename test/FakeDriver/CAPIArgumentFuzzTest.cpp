//===- CAPIArgumentFuzzTest.cpp - Argument fuzzing of the C ABI -----------===//
//
// Every entry point of hisa_runtime.h that runs without NCCL, called on the
// fake driver (FakeCuda.h) with argument vectors drawn from a fixed seed: a
// valid baseline with one or two arguments replaced by an edge value (0, 1,
// -1, small odd values, each documented limit and one past it, the int32
// and int64 extremes, values whose products overflow 32 or 64 bits; NULL,
// misaligned and host pointers; non-finite floats; malformed strings).
// Each call must
//  - return HISA_OK or a documented error status, never crash or hang;
//  - on an error, say why in hisa_last_error(), naming an argument it was
//    given a changed value for (a parameter or field name read from
//    hisa_runtime.h itself, or the symbol the header documents it by);
//  - on HISA_OK, have launched only grids, blocks and dynamic shared memory
//    the hardware allows, and something whenever there was work; have
//    accepted only pointers that are non-NULL device memory aligned to
//    their elements, sizes within the int32 indices of the kernels and
//    tensors of at most 2^48 bytes (docs/design.md, "Limits"); report
//    workspace sizes no smaller than the pieces they hold, worked out in
//    128-bit arithmetic (a wrapped product is smaller).
// Calls that could hang or exhaust memory (loops over a rank count, the V4
// layer's allocations) run in a child process (test/Unit/TestProcess.h).
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"
#include "TestProcess.h"

#include "hisa/Runtime/hisa_runtime.h"

#include "gtest/gtest.h"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

using hisa::fake_cuda::Call;
using hisa::fake_cuda::deviceBuffer;

namespace {

using Wide = __int128;

constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
/// docs/design.md, Limits: the largest global tensor.
constexpr Wide kMaxTensorBytes = Wide(1) << 48;
/// The most dynamic shared memory a block may have on sm_90.
constexpr unsigned kMaxSharedBytes = 227 * 1024;

std::string wideText(Wide value) {
  if (value == 0)
    return "0";
  bool negative = value < 0;
  std::string digits;
  for (; value != 0; value /= 10) {
    int digit = static_cast<int>(value % 10);
    digits.push_back(static_cast<char>('0' + (digit < 0 ? -digit : digit)));
  }
  if (negative)
    digits.push_back('-');
  return std::string(digits.rbegin(), digits.rend());
}

//===----------------------------------------------------------------------===//
// The header's parameter names
//===----------------------------------------------------------------------===//

/// The last identifier of a declarator ("const float *k_scale" -> "k_scale",
/// "int64_t ranges[4]" -> "ranges").
std::string declaredName(std::string text) {
  if (size_t bracket = text.find('['); bracket != std::string::npos)
    text.resize(bracket);
  size_t end = text.find_last_not_of(" \t\n");
  if (end == std::string::npos)
    return "";
  size_t begin = end + 1;
  while (begin > 0 &&
         (std::isalnum(static_cast<unsigned char>(text[begin - 1])) ||
          text[begin - 1] == '_'))
    --begin;
  return text.substr(begin, end + 1 - begin);
}

std::vector<std::string> splitTopLevel(const std::string &text,
                                       char separator) {
  std::vector<std::string> pieces;
  int depth = 0;
  std::string piece;
  for (char c : text) {
    depth += (c == '(' || c == '[') - (c == ')' || c == ']');
    if (c == separator && depth == 0) {
      pieces.push_back(piece);
      piece.clear();
    } else {
      piece.push_back(c);
    }
  }
  if (piece.find_first_not_of(" \t\n") != std::string::npos)
    pieces.push_back(piece);
  return pieces;
}

/// hisa_runtime.h's exported functions -> their parameter names, and its
/// structs (hisa_v4_config, hisa_v4_weights, hisa_arg) -> their fields.
const std::map<std::string, std::vector<std::string>> &headerNames() {
  static const std::map<std::string, std::vector<std::string>> names = [] {
    std::map<std::string, std::vector<std::string>> result;
    std::ifstream in(HISA_RUNTIME_HEADER);
    std::stringstream buffer;
    buffer << in.rdbuf();
    std::string text = buffer.str();
    for (size_t at; (at = text.find("/*")) != std::string::npos;)
      text.erase(at, text.find("*/", at) + 2 - at);
    for (size_t at = 0;
         (at = text.find("HISA_EXPORT ", at)) != std::string::npos;) {
      size_t open = text.find('(', at), close = text.find(')', open);
      size_t end = text.find(';', at);
      if (open == std::string::npos || close == std::string::npos ||
          open > end) {
        at = end;
        continue;
      }
      std::string name = declaredName(text.substr(at, open - at));
      std::vector<std::string> &params = result[name];
      for (const std::string &piece :
           splitTopLevel(text.substr(open + 1, close - open - 1), ','))
        if (declaredName(piece) != "void") // f(void)
          params.push_back(declaredName(piece));
      at = end;
    }
    for (size_t at = 0;
         (at = text.find("typedef struct ", at)) != std::string::npos;) {
      size_t open = text.find('{', at), semicolon = text.find(';', at);
      if (open == std::string::npos || semicolon < open) {
        at = semicolon;
        continue;
      }
      size_t close = text.find('}', open);
      std::string name = declaredName(text.substr(at, open - at));
      std::vector<std::string> &fields = result[name];
      for (const std::string &declaration :
           splitTopLevel(text.substr(open + 1, close - open - 1), ';'))
        for (const std::string &declarator : splitTopLevel(declaration, ','))
          fields.push_back(declaredName(declarator));
      at = close;
    }
    return result;
  }();
  return names;
}

//===----------------------------------------------------------------------===//
// Arguments, their edge values and draws
//===----------------------------------------------------------------------===//

enum class Kind {
  Size,    ///< an int64 size or count
  Flag,    ///< an int32 switch (relative, causal)
  Pointer, ///< device memory
  HostOut, ///< a host pointer the call writes to (NULL or valid)
  Float,   ///< a float scalar
  Bytes,   ///< a uint64 byte count
  Text,    ///< a C string
  Fixed,   ///< never changed (the stream)
};

/// What a pointer argument is given.
enum PointerChoice : int64_t {
  kNull,
  kValid,
  kOff1,
  kOff2,
  kOff4,
  kOff8,
  kHost, ///< aligned host memory, not device memory
};

const char *pointerChoiceName(int64_t choice) {
  static const char *names[] = {"NULL",         "valid",        "misaligned+1",
                                "misaligned+2", "misaligned+4", "misaligned+8",
                                "host memory"};
  return names[choice];
}

struct Param {
  std::string name;
  Kind kind = Kind::Size;
  int64_t base = 0;   ///< the baseline (Size, Flag, Bytes; Pointer: choice)
  double real = 0;    ///< Float: the baseline
  unsigned align = 1; ///< Pointer: the alignment of its elements
  bool nullable = false;
  /// Size: documented limits (at, one below and one past each are drawn).
  std::vector<int64_t> limits;
  /// Size: every accepted value compiles a kernel specialization (~0.3 s
  /// each on two cores), so no small odd values are drawn beside the
  /// limits.
  bool specializes = false;
  /// Size: an accepted value must fit the kernels' int32 indices.
  bool int32 = true;
  /// Size: negative values may be valid (documented ones among `limits`).
  bool signedValues = false;
  /// The C parameter or field is an int32_t: a drawn value is what the
  /// callee sees, truncated to 32 bits (the checks judge that value).
  bool field32 = false;
  /// Names a message may use for it (the header's symbol: H, D, N...).
  std::vector<std::string> aliases;
  std::vector<std::string> texts; ///< Text: [0] is the baseline
  std::vector<int64_t> pool;      ///< the values drawn (filled once)

  Param &alias(std::initializer_list<std::string> names) {
    aliases.insert(aliases.end(), names);
    return *this;
  }
  Param &limit(const std::vector<int64_t> &values) {
    limits.insert(limits.end(), values.begin(), values.end());
    return *this;
  }
  Param &specialization() {
    specializes = true;
    return *this;
  }
  Param &anyInt64() {
    int32 = false;
    return *this;
  }
  Param &negativeAllowed() {
    signedValues = true;
    return *this;
  }
  Param &startAt(int64_t value) {
    base = value;
    return *this;
  }
};

Param size(std::string name, int64_t base) {
  Param p;
  p.name = std::move(name);
  p.base = base;
  return p;
}
Param flag(std::string name, int64_t base) {
  Param p = size(std::move(name), base);
  p.kind = Kind::Flag;
  return p;
}
Param pointer(std::string name, unsigned align, bool nullable = false) {
  Param p;
  p.name = std::move(name);
  p.kind = Kind::Pointer;
  p.base = kValid;
  p.align = align;
  p.nullable = nullable;
  return p;
}
Param hostOut(std::string name, bool nullable = false) {
  Param p = pointer(std::move(name), 1, nullable);
  p.kind = Kind::HostOut;
  return p;
}
Param real(std::string name, double base) {
  Param p;
  p.name = std::move(name);
  p.kind = Kind::Float;
  p.real = base;
  return p;
}
Param bytes(std::string name, uint64_t base) {
  Param p = size(std::move(name), static_cast<int64_t>(base));
  p.kind = Kind::Bytes;
  return p;
}
Param text(std::string name, std::vector<std::string> choices) {
  Param p;
  p.name = std::move(name);
  p.kind = Kind::Text;
  p.texts = std::move(choices);
  return p;
}
Param fixed(std::string name) {
  Param p;
  p.name = std::move(name);
  p.kind = Kind::Fixed;
  return p;
}

const std::vector<float> &floatPool(double base) {
  static std::map<double, std::vector<float>> pools;
  std::vector<float> &pool = pools[base];
  if (pool.empty())
    pool = {float(base),
            std::numeric_limits<float>::quiet_NaN(),
            std::numeric_limits<float>::infinity(),
            -std::numeric_limits<float>::infinity(),
            0.0f,
            -float(base),
            1e30f,
            1e-40f};
  return pool;
}

void buildPool(Param &p) {
  std::set<int64_t> values;
  switch (p.kind) {
  case Kind::Size: {
    values = {0,
              1,
              -1,
              kI32Max,
              kI32Max + 1,
              int64_t(UINT32_MAX),
              (int64_t(1) << 32) + 1,
              3037000500, // squared: past int64
              int64_t(1) << 40,
              (int64_t(1) << 48) + 1,
              int64_t(1) << 62,
              kI64Max,
              kI64Min,
              kI64Min + 1};
    if (!p.specializes)
      values.insert({2, 3, 7, 31, 33, 255, 257, 46341 /* squared: past int32 */,
                     65535, 65536, 65537, p.base - 1, p.base + 1, p.base * 2});
    for (int64_t limit : p.limits)
      values.insert({limit - 1, limit, limit + 1});
    break;
  }
  case Kind::Flag:
    values = {0, 1, -1, 2, std::numeric_limits<int32_t>::min(), kI32Max};
    break;
  case Kind::Pointer:
    values = {kNull, kValid, kOff1, kOff2, kOff4, kOff8, kHost};
    break;
  case Kind::HostOut:
    values = {kNull, kValid};
    break;
  case Kind::Float:
    for (size_t i = 0; i < floatPool(p.real).size(); ++i)
      values.insert(int64_t(i));
    break;
  case Kind::Bytes: {
    uint64_t b = uint64_t(p.base);
    for (uint64_t v :
         {uint64_t(0), uint64_t(1), uint64_t(15), uint64_t(16), uint64_t(17),
          b - 1, b, b + 1, uint64_t(1) << 31, uint64_t(1) << 32,
          uint64_t(1) << 48, (uint64_t(1) << 48) + 1, uint64_t(kI64Max),
          uint64_t(1) << 63, UINT64_MAX})
      values.insert(static_cast<int64_t>(v));
    break;
  }
  case Kind::Text:
    for (size_t i = 0; i < p.texts.size(); ++i)
      values.insert(int64_t(i));
    break;
  case Kind::Fixed:
    values = {p.base};
    break;
  }
  p.pool.assign(values.begin(), values.end());
}

/// Device memory the pointers point into (the fake's, so the runtime's
/// device-pointer queries accept it; nothing is ever read), and host
/// memory for the `kHost` choice and the outputs.
struct Arenas {
  static constexpr size_t kSlot = 1 << 16; ///< bytes per argument
  char *device = nullptr;
  char *host = nullptr;
  CUstream stream = nullptr;
  Arenas() {
    device = static_cast<char *>(deviceBuffer(40 * kSlot));
    host = static_cast<char *>(std::aligned_alloc(256, 40 * kSlot));
    std::memset(host, 0, 40 * kSlot);
    cuStreamCreate(&stream, 0);
  }
};

Arenas &arenas() {
  static Arenas *instance = new Arenas;
  return *instance;
}

struct Entry;

/// One call's arguments: the entry's parameters, each with a value from its
/// pool, and which of them differ from the baseline.
struct Draw {
  const Entry *entry = nullptr;
  std::vector<int64_t> values;
  std::vector<size_t> changed;

  size_t index(const std::string &name) const;
  const Param &param(const std::string &name) const;
  int64_t choice(const std::string &name) const { return values[index(name)]; }
  int64_t size(const std::string &name) const { return choice(name); }
  int32_t flag(const std::string &name) const {
    return static_cast<int32_t>(choice(name));
  }
  uint64_t bytes(const std::string &name) const {
    return static_cast<uint64_t>(choice(name));
  }
  float real(const std::string &name) const {
    return floatPool(param(name).real)[choice(name)];
  }
  const char *text(const std::string &name) const {
    const std::string &value = param(name).texts[choice(name)];
    return value == "<NULL>" ? nullptr : value.c_str();
  }
  template <typename T = void> T *ptr(const std::string &name) const {
    size_t i = index(name);
    char *slot = arenas().device + (i + 1) * Arenas::kSlot;
    switch (values[i]) {
    case kNull:
      return nullptr;
    case kValid:
      break;
    case kOff1:
      slot += 1;
      break;
    case kOff2:
      slot += 2;
      break;
    case kOff4:
      slot += 4;
      break;
    case kOff8:
      slot += 8;
      break;
    case kHost:
      slot = arenas().host + (i + 1) * Arenas::kSlot;
      break;
    }
    return reinterpret_cast<T *>(slot);
  }
  /// A host output: NULL or this draw's slot of host memory.
  template <typename T> T *out(const std::string &name) const {
    size_t i = index(name);
    if (values[i] == kNull)
      return nullptr;
    return reinterpret_cast<T *>(arenas().host + (i + 1) * Arenas::kSlot);
  }
  std::string valueText(size_t i) const;
  std::string describe() const;
};

/// What a call did: its status, message, launches and outputs.
struct Outcome {
  int status = -1;
  std::string message;
  struct Launch {
    std::string name;
    unsigned grid[3], block[3], shared;
  };
  std::vector<Launch> launches;
  std::vector<int64_t> outputs;
  bool ran = false; ///< false: the child crashed or hung
};

struct Entry {
  std::string function;
  /// A struct whose fields are parameters too (hisa_v4_create's config).
  std::vector<std::string> structs;
  std::vector<Param> params;
  std::function<int(const Draw &)> call;
  /// Whether the call has work to launch (an accepted call must launch).
  std::function<bool(const Draw &)> hasWork;
  /// The bytes of the tensors an accepted call reads or writes.
  std::function<std::vector<std::pair<std::string, Wide>>(const Draw &)>
      tensors;
  /// Copies what the call wrote to its host outputs into the outcome.
  std::function<void(const Draw &, Outcome &)> collect;
  /// Checks the outputs of an accepted call.
  std::function<void(const Draw &, const Outcome &)> checkOutputs;
  /// Whether a message names what was changed, beyond the names and
  /// aliases of the changed parameters.
  std::function<bool(const Draw &, const std::string &)> namesExtra;
  std::vector<int> statuses = {HISA_OK, HISA_ERROR_INVALID_ARGUMENT};
  int draws = 200;
  bool inChild = false;
  /// Whether an accepted call ignores an argument (sparse attention's
  /// workspace when it does not split, the V4 indexer's sizes without
  /// one): anything goes there.
  std::function<bool(const Draw &, const std::string &)> ignores;
  /// Whether an accepted call reads or writes its pointers (default:
  /// whenever it has work).
  std::function<bool(const Draw &)> usesPointers;
};

size_t Draw::index(const std::string &name) const {
  for (size_t i = 0; i < entry->params.size(); ++i)
    if (entry->params[i].name == name)
      return i;
  ADD_FAILURE() << entry->function << " has no parameter " << name;
  std::abort();
}

const Param &Draw::param(const std::string &name) const {
  return entry->params[index(name)];
}

std::string Draw::valueText(size_t i) const {
  const Param &p = entry->params[i];
  int64_t v = values[i];
  switch (p.kind) {
  case Kind::Pointer:
  case Kind::HostOut:
    return pointerChoiceName(v);
  case Kind::Float: {
    std::ostringstream os;
    os << floatPool(p.real)[v];
    return os.str();
  }
  case Kind::Bytes:
    return std::to_string(static_cast<uint64_t>(v));
  case Kind::Text:
    return "\"" + p.texts[v].substr(0, 40) +
           (p.texts[v].size() > 40 ? "...\"" : "\"");
  default:
    return std::to_string(v);
  }
}

std::string Draw::describe() const {
  std::string text = entry->function + "(";
  for (size_t i = 0; i < values.size(); ++i) {
    if (entry->params[i].kind == Kind::Fixed)
      continue;
    bool isNew = std::find(changed.begin(), changed.end(), i) != changed.end();
    text += (i ? ", " : "") + std::string(isNew ? "*" : "") +
            entry->params[i].name + " = " + valueText(i);
  }
  return text + ")";
}

//===----------------------------------------------------------------------===//
// Running and checking one call
//===----------------------------------------------------------------------===//

Outcome runHere(const Entry &entry, const Draw &draw) {
  Outcome outcome;
  // Host outputs start as garbage: an accepted call must write them.
  for (size_t i = 0; i < entry.params.size(); ++i)
    if (entry.params[i].kind == Kind::HostOut)
      std::memset(arenas().host + (i + 1) * Arenas::kSlot, 0xab, 64);
  hisa::fake_cuda::resetCalls();
  outcome.status = entry.call(draw);
  outcome.message = hisa_last_error();
  for (const Call &call : hisa::fake_cuda::calls())
    if (call.kind == Call::Launch)
      outcome.launches.push_back({call.name,
                                  {call.grid[0], call.grid[1], call.grid[2]},
                                  {call.block[0], call.block[1], call.block[2]},
                                  call.sharedBytes});
  if (entry.collect)
    entry.collect(draw, outcome);
  outcome.ran = true;
  return outcome;
}

std::string serialize(const Outcome &outcome) {
  std::ostringstream os;
  os << outcome.status << "\n" << outcome.launches.size() << "\n";
  for (const Outcome::Launch &l : outcome.launches)
    os << l.name << " " << l.grid[0] << " " << l.grid[1] << " " << l.grid[2]
       << " " << l.block[0] << " " << l.block[1] << " " << l.block[2] << " "
       << l.shared << "\n";
  os << outcome.outputs.size() << "\n";
  for (int64_t value : outcome.outputs)
    os << value << "\n";
  os << outcome.message;
  return os.str();
}

Outcome deserialize(const std::string &text) {
  Outcome outcome;
  std::istringstream is(text);
  size_t launches = 0, outputs = 0;
  is >> outcome.status >> launches;
  for (size_t i = 0; i < launches; ++i) {
    Outcome::Launch l;
    is >> l.name >> l.grid[0] >> l.grid[1] >> l.grid[2] >> l.block[0] >>
        l.block[1] >> l.block[2] >> l.shared;
    outcome.launches.push_back(l);
  }
  is >> outputs;
  for (size_t i = 0; i < outputs; ++i) {
    int64_t value;
    is >> value;
    outcome.outputs.push_back(value);
  }
  is.get();
  std::getline(is, outcome.message, '\0');
  outcome.ran = true;
  return outcome;
}

Outcome execute(const Entry &entry, const Draw &draw) {
  if (!entry.inChild)
    return runHere(entry, draw);
  std::optional<std::string> text = hisa::testing::runInChild(
      [&] { return serialize(runHere(entry, draw)); }, /*seconds=*/10);
  if (!text)
    return Outcome{};
  return deserialize(*text);
}

/// Whether `name` occurs in `message` as a whole word.
bool mentions(const std::string &message, const std::string &name) {
  auto isWord = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  for (size_t at = 0; (at = message.find(name, at)) != std::string::npos;
       ++at) {
    bool startsWord = at == 0 || !isWord(message[at - 1]) || !isWord(name[0]);
    size_t end = at + name.size();
    bool endsWord =
        end == message.size() || !isWord(message[end]) || !isWord(name.back());
    if (startsWord && endsWord)
      return true;
  }
  return false;
}

struct Tally {
  int64_t calls = 0, accepted = 0, refused = 0, launches = 0, inChild = 0;
};

void check(const Entry &entry, const Draw &draw, const Outcome &outcome,
           Tally &tally) {
  SCOPED_TRACE(draw.describe());
  ++tally.calls;
  tally.inChild += entry.inChild;
  if (!outcome.ran)
    return; // runInChild reported the crash or hang
  ASSERT_TRUE(
      std::count(entry.statuses.begin(), entry.statuses.end(), outcome.status))
      << "undocumented status " << outcome.status << ": " << outcome.message;
  if (outcome.status != HISA_OK) {
    ++tally.refused;
    EXPECT_FALSE(outcome.message.empty()) << "an error without a message";
    EXPECT_FALSE(draw.changed.empty())
        << "the valid baseline was refused: " << outcome.message;
    bool named = entry.namesExtra && entry.namesExtra(draw, outcome.message);
    for (size_t i : draw.changed) {
      const Param &p = entry.params[i];
      named = named || mentions(outcome.message, p.name);
      for (const std::string &alias : p.aliases)
        named = named || mentions(outcome.message, alias);
    }
    EXPECT_TRUE(named) << "the message names none of the changed arguments: "
                       << outcome.message;
    return;
  }
  ++tally.accepted;
  tally.launches += int64_t(outcome.launches.size());
  for (const Outcome::Launch &l : outcome.launches) {
    SCOPED_TRACE("launch of " + l.name);
    EXPECT_GE(l.grid[0], 1u);
    EXPECT_LE(l.grid[0], unsigned(kI32Max));
    for (int d : {1, 2}) {
      EXPECT_GE(l.grid[d], 1u);
      EXPECT_LE(l.grid[d], 65535u);
    }
    uint64_t threads = uint64_t(l.block[0]) * l.block[1] * l.block[2];
    EXPECT_GE(threads, 1u);
    EXPECT_LE(threads, 1024u);
    EXPECT_LE(l.shared, kMaxSharedBytes);
  }
  bool work = entry.hasWork && entry.hasWork(draw);
  if (work) {
    EXPECT_FALSE(outcome.launches.empty())
        << "accepted with work to do, but launched nothing";
  }
  bool usesPointers = entry.usesPointers ? entry.usesPointers(draw) : work;
  for (size_t i = 0; i < entry.params.size(); ++i) {
    const Param &p = entry.params[i];
    int64_t v = draw.values[i];
    if (entry.ignores && entry.ignores(draw, p.name))
      continue;
    if (p.kind == Kind::Size) {
      if (!p.signedValues) {
        EXPECT_GE(v, 0) << "accepted " << p.name << " = " << v;
      }
      if (p.int32) {
        EXPECT_LE(v, kI32Max) << "accepted " << p.name << " = " << v
                              << ", past the kernels' int32 indices";
      }
    }
    if (p.kind == Kind::Float) {
      float value = draw.real(p.name);
      EXPECT_TRUE(std::isfinite(value))
          << "accepted " << p.name << " = " << value;
    }
    if (p.kind == Kind::Pointer && usesPointers) {
      if (!p.nullable) {
        EXPECT_NE(v, kNull) << "accepted NULL " << p.name;
      }
      int64_t offset = v == kOff1   ? 1
                       : v == kOff2 ? 2
                       : v == kOff4 ? 4
                       : v == kOff8 ? 8
                                    : 0;
      EXPECT_EQ(offset % p.align, 0)
          << "accepted " << p.name << " " << pointerChoiceName(v)
          << ", which its " << p.align << "-byte alignment refuses";
      // (The runtime checks device pointers unless a caller turns the
      // checks off.)
      EXPECT_NE(v, kHost) << "accepted host memory as " << p.name;
    }
  }
  if (entry.tensors) {
    for (auto &[name, tensorBytes] : entry.tensors(draw)) {
      EXPECT_LE(tensorBytes, kMaxTensorBytes)
          << "accepted " << name << " of " << wideText(tensorBytes)
          << " bytes, past 2^48";
    }
  }
  if (entry.checkOutputs)
    entry.checkOutputs(draw, outcome);
}

uint64_t fnv(const std::string &text) {
  uint64_t hash = 1469598103934665603ull;
  for (char c : text)
    hash = (hash ^ uint8_t(c)) * 1099511628211ull;
  return hash;
}

/// Draws and checks `entry.draws` calls; returns the tally.
Tally fuzz(Entry &entry) {
  SCOPED_TRACE(entry.function);
  // The parameters are the header's, in its order (struct fields and the
  // fuzzed hisa_arg fields may follow).
  const auto &names = headerNames();
  auto it = names.find(entry.function);
  EXPECT_NE(it, names.end()) << entry.function << " is not in the header";
  std::set<std::string> known;
  if (it != names.end()) {
    known.insert(it->second.begin(), it->second.end());
    for (size_t i = 0; i < it->second.size(); ++i)
      EXPECT_EQ(i < entry.params.size() ? entry.params[i].name : "",
                it->second[i])
          << "parameter #" << i;
  }
  for (const std::string &name : entry.structs) {
    auto fields = names.find(name);
    EXPECT_NE(fields, names.end()) << name << " is not in the header";
    if (fields != names.end())
      known.insert(fields->second.begin(), fields->second.end());
  }
  for (Param &p : entry.params) {
    // hisa_kernel_launch's fuzzed hisa_arg fields: "args[1].rank".
    std::string field = p.name.substr(p.name.find('.') + 1);
    if (size_t bracket = field.find('['); bracket != std::string::npos)
      field.resize(bracket);
    EXPECT_TRUE(known.count(p.name) || known.count(field))
        << p.name << " is not a header name";
    buildPool(p);
  }
  // HISA_CAPI_FUZZ_SEED=N draws other argument vectors (CI keeps 0x5eed).
  static const uint64_t seed = [] {
    const char *text = std::getenv("HISA_CAPI_FUZZ_SEED");
    return text ? std::strtoull(text, nullptr, 0) : uint64_t(0x5eed);
  }();
  std::mt19937_64 random(seed ^ fnv(entry.function));
  std::vector<size_t> mutable_;
  for (size_t i = 0; i < entry.params.size(); ++i)
    if (entry.params[i].kind != Kind::Fixed)
      mutable_.push_back(i);
  Tally tally;
  std::set<std::vector<int64_t>> seen;
  // HISA_FUZZ_VERBOSE=1 prints every call, its status, time and compiles.
  static const bool verbose = std::getenv("HISA_FUZZ_VERBOSE") != nullptr;
  for (int n = 0; n < entry.draws; ++n) {
    Draw draw;
    draw.entry = &entry;
    for (const Param &p : entry.params)
      draw.values.push_back(
          p.kind == Kind::Float || p.kind == Kind::Text ? 0 : p.base);
    if (n > 0) {
      size_t count = random() % 10 < 6 ? 1 : 2;
      for (size_t c = 0; c < count; ++c) {
        size_t i = mutable_[random() % mutable_.size()];
        const std::vector<int64_t> &pool = entry.params[i].pool;
        draw.values[i] = pool[random() % pool.size()];
        if (entry.params[i].field32)
          draw.values[i] = static_cast<int32_t>(draw.values[i]);
      }
    }
    if (!seen.insert(draw.values).second)
      continue; // each distinct call once
    for (size_t i = 0; i < entry.params.size(); ++i) {
      const Param &p = entry.params[i];
      int64_t base = p.kind == Kind::Float || p.kind == Kind::Text ? 0 : p.base;
      if (draw.values[i] != base)
        draw.changed.push_back(i);
    }
    int64_t compilesBefore = 0, compiles = 0;
    hisa_cache_stats(&compilesBefore, nullptr, nullptr);
    auto start = std::chrono::steady_clock::now();
    Outcome outcome = execute(entry, draw);
    if (verbose) {
      hisa_cache_stats(&compiles, nullptr, nullptr);
      std::printf("    %s -> %d (%.3f s, %lld compiles) %s\n",
                  draw.describe().c_str(), outcome.status,
                  std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - start)
                      .count(),
                  (long long)(compiles - compilesBefore),
                  outcome.message.substr(0, 160).c_str());
    }
    check(entry, draw, outcome, tally);
    if (::testing::Test::HasFatalFailure())
      break;
  }
  return tally;
}

/// Runs the entries' fuzzing and prints what was done.
void fuzzAll(std::vector<Entry> &entries) {
  for (Entry &entry : entries) {
    auto start = std::chrono::steady_clock::now();
    int64_t compilesBefore = 0, compiles = 0;
    hisa_cache_stats(&compilesBefore, nullptr, nullptr);
    Tally tally = fuzz(entry);
    hisa_cache_stats(&compiles, nullptr, nullptr);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    std::printf("  %-37s %4lld calls (%lld accepted, %lld refused, %lld "
                "launches%s), %lld compiles, %.2f s\n",
                entry.function.c_str(), (long long)tally.calls,
                (long long)tally.accepted, (long long)tally.refused,
                (long long)tally.launches,
                tally.inChild ? ", each in a child" : "",
                (long long)(compiles - compilesBefore), seconds);
  }
}

Wide W(int64_t value) { return Wide(value); }
/// ceil(a / b) of an accepted call's sizes (b > 0 there; 1 otherwise).
Wide ceilDiv(Wide a, Wide b) { return b > 0 ? (a + b - 1) / b : a; }

using Tensors = std::vector<std::pair<std::string, Wide>>;

/// The selection operators' shape parameters (H in {16, 32, 64, 128}, D in
/// {64, 128}, kb in {64, 128, 256}: the header's symbols).
Param heads(int64_t base, bool specializes = true) {
  Param p = size("heads", base).limit({16, 128}).alias({"H"});
  p.specializes = specializes;
  return p;
}
Param dimension(int64_t base, bool specializes = true) {
  Param p = size("dim", base).limit({64, 128}).alias({"D"});
  p.specializes = specializes;
  return p;
}
Param blockSize(int64_t base, bool specializes = true) {
  Param p = size("kb", base).limit({64, 256}).alias({"k_block_size"});
  p.specializes = specializes;
  return p;
}

/// The host output of a size query into outcome.outputs.
void collectBytes(const Draw &d, Outcome &outcome) {
  if (const uint64_t *out = d.out<uint64_t>("bytes"))
    outcome.outputs.push_back(static_cast<int64_t>(*out));
}

/// An accepted size query wrote a size of at least `lowerBound` (128-bit:
/// a wrapped product falls below it) and at most 2^48 bytes.
void expectSize(const Draw &d, const Outcome &outcome, Wide lowerBound) {
  EXPECT_NE(d.choice("bytes"), kNull) << "accepted NULL bytes";
  if (outcome.outputs.empty())
    return;
  Wide reported = Wide(static_cast<uint64_t>(outcome.outputs[0]));
  EXPECT_GE(reported, lowerBound)
      << "the size wrapped: its pieces need at least " << wideText(lowerBound)
      << " bytes";
  EXPECT_LE(reported, kMaxTensorBytes) << "a workspace past 2^48 bytes";
}

//===----------------------------------------------------------------------===//
// The operators
//===----------------------------------------------------------------------===//

std::vector<Entry> operatorEntries() {
  std::vector<Entry> entries;
  CUstream stream = arenas().stream;
  for (bool bf16 : {false, true}) {
    Entry e;
    e.function = bf16 ? "hisa_topk_bf16" : "hisa_topk";
    e.params = {pointer("x", bf16 ? 2 : 4), pointer("starts", 4, true),
                pointer("ends", 4, true), pointer("out", 4),
                size("rows", 37).limit({264}),
                // The limits of the kernel's specializations (bf16: the
                // 32-bit column arithmetic's; f32 has the same code).
                size("columns", 5000)
                    .specialization()
                    .limit(bf16 ? std::vector<int64_t>{int64_t(1) << 30}
                                : std::vector<int64_t>{2048, 8192, 49152,
                                                       int64_t(1) << 30}),
                size("k", 300), flag("relative", 0), fixed("stream")};
    e.call = [bf16, stream](const Draw &d) {
      if (bf16)
        return hisa_topk_bf16(d.ptr("x"), d.ptr<int32_t>("starts"),
                              d.ptr<int32_t>("ends"), d.ptr<int32_t>("out"),
                              d.size("rows"), d.size("columns"), d.size("k"),
                              d.flag("relative"), stream);
      return hisa_topk(d.ptr<float>("x"), d.ptr<int32_t>("starts"),
                       d.ptr<int32_t>("ends"), d.ptr<int32_t>("out"),
                       d.size("rows"), d.size("columns"), d.size("k"),
                       d.flag("relative"), stream);
    };
    e.hasWork = [](const Draw &d) { return d.size("rows") > 0; };
    // Rows of no columns: x is never read (out is all -1), any x will do.
    e.ignores = [](const Draw &d, const std::string &name) {
      return name == "x" && d.size("columns") == 0;
    };
    e.tensors = [bf16](const Draw &d) {
      Wide rows = W(d.size("rows"));
      return Tensors{{"x", rows * d.size("columns") * (bf16 ? 2 : 4)},
                     {"out", rows * d.size("k") * 4}};
    };
    e.draws = bf16 ? 150 : 300;
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_fp8_block_mean_pooling";
    e.params = {pointer("k", 1),         pointer("k_scale", 4),
                pointer("blocked_k", 1), pointer("blocked_scale", 4),
                size("n", 1000),         dimension(128),
                blockSize(128),          fixed("stream")};
    e.call = [stream](const Draw &d) {
      return hisa_fp8_block_mean_pooling(
          d.ptr("k"), d.ptr<float>("k_scale"), d.ptr("blocked_k"),
          d.ptr<float>("blocked_scale"), d.size("n"), d.size("dim"),
          d.size("kb"), stream);
    };
    e.hasWork = [](const Draw &d) { return d.size("n") > 0; };
    e.tensors = [](const Draw &d) {
      return Tensors{
          {"k", W(d.size("n")) * d.size("dim")},
          {"blocked_k", ceilDiv(d.size("n"), d.size("kb")) * d.size("dim")}};
    };
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_clean_and_maintain_logits";
    e.params = {pointer("logits", 4), pointer("s", 4), pointer("e", 4),
                size("m", 100),       size("n", 3000), fixed("stream")};
    e.call = [stream](const Draw &d) {
      return hisa_clean_and_maintain_logits(
          d.ptr<float>("logits"), d.ptr<int32_t>("s"), d.ptr<int32_t>("e"),
          d.size("m"), d.size("n"), stream);
    };
    e.hasWork = [](const Draw &d) {
      return d.size("m") > 0 && d.size("n") > 0;
    };
    e.tensors = [](const Draw &d) {
      return Tensors{{"logits", W(d.size("m")) * d.size("n") * 4}};
    };
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_pool_mqa_logits";
    e.params = {pointer("q", 1),
                pointer("blocked_k", 1),
                pointer("blocked_k_scale", 4),
                pointer("weights", 4),
                pointer("bks", 4),
                pointer("bke", 4),
                pointer("logits", 4),
                size("m", 100),
                size("nb", 40).alias({"Nb"}),
                heads(64),
                dimension(128),
                fixed("stream")};
    e.call = [stream](const Draw &d) {
      return hisa_pool_mqa_logits(
          d.ptr("q"), d.ptr("blocked_k"), d.ptr<float>("blocked_k_scale"),
          d.ptr<float>("weights"), d.ptr<int32_t>("bks"), d.ptr<int32_t>("bke"),
          d.ptr<float>("logits"), d.size("m"), d.size("nb"), d.size("heads"),
          d.size("dim"), stream);
    };
    e.hasWork = [](const Draw &d) {
      return d.size("m") > 0 && d.size("nb") > 0;
    };
    e.tensors = [](const Draw &d) {
      Wide m = W(d.size("m"));
      return Tensors{{"q", m * d.size("heads") * d.size("dim")},
                     {"blocked_k", W(d.size("nb")) * d.size("dim")},
                     {"logits", m * d.size("nb") * 4}};
    };
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_block_sparse_mqa_logits";
    e.params = {pointer("q", 1),
                pointer("k", 1),
                pointer("k_scale", 4),
                pointer("topk_block_index", 4),
                pointer("weights", 4),
                pointer("ks", 4),
                pointer("ke", 4),
                pointer("out", 4),
                size("m", 100),
                size("n", 5000).alias({"N"}),
                size("topk", 16).specialization().alias({"T"}),
                blockSize(128),
                heads(64),
                dimension(128),
                fixed("stream")};
    e.call = [stream](const Draw &d) {
      return hisa_block_sparse_mqa_logits(
          d.ptr("q"), d.ptr("k"), d.ptr<float>("k_scale"),
          d.ptr<int32_t>("topk_block_index"), d.ptr<float>("weights"),
          d.ptr<int32_t>("ks"), d.ptr<int32_t>("ke"), d.ptr<float>("out"),
          d.size("m"), d.size("n"), d.size("topk"), d.size("kb"),
          d.size("heads"), d.size("dim"), stream);
    };
    e.hasWork = [](const Draw &d) {
      return d.size("m") > 0 && d.size("topk") > 0;
    };
    // No keys: k and k_scale are empty and never read.
    e.ignores = [](const Draw &d, const std::string &name) {
      return (name == "k" || name == "k_scale") && d.size("n") == 0;
    };
    e.tensors = [](const Draw &d) {
      Wide m = W(d.size("m"));
      return Tensors{{"q", m * d.size("heads") * d.size("dim")},
                     {"k", W(d.size("n")) * d.size("dim")},
                     {"topk_block_index", m * d.size("topk") * 4},
                     {"out", m * d.size("topk") * d.size("kb") * 4}};
    };
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_pool_topk_blocks";
    e.params = {pointer("q", 1),
                pointer("blocked_k", 1),
                pointer("blocked_k_scale", 4),
                pointer("weights", 4),
                pointer("starts", 4),
                pointer("ends", 4),
                pointer("out", 4),
                size("m", 100),
                size("nb", 300).specialization().limit({32768}).alias({"Nb"}),
                heads(64),
                dimension(128),
                size("out_columns", 64).limit({300}),
                size("window_kb", 128).specialization().limit({1, 64, 256}),
                fixed("stream")};
    e.call = [stream](const Draw &d) {
      return hisa_pool_topk_blocks(
          d.ptr("q"), d.ptr("blocked_k"), d.ptr<float>("blocked_k_scale"),
          d.ptr<float>("weights"), d.ptr<int32_t>("starts"),
          d.ptr<int32_t>("ends"), d.ptr<int32_t>("out"), d.size("m"),
          d.size("nb"), d.size("heads"), d.size("dim"), d.size("out_columns"),
          d.size("window_kb"), stream);
    };
    e.hasWork = [](const Draw &d) {
      return d.size("m") > 0 && d.size("nb") > 0;
    };
    e.tensors = [](const Draw &d) {
      Wide m = W(d.size("m"));
      return Tensors{{"q", m * d.size("heads") * d.size("dim")},
                     {"blocked_k", W(d.size("nb")) * d.size("dim")},
                     {"out", m * d.size("out_columns") * 4}};
    };
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_block_sparse_topk_tokens";
    e.params = {pointer("q", 1),
                pointer("k", 1),
                pointer("k_scale", 4),
                pointer("topk_block_index", 4),
                pointer("weights", 4),
                pointer("ks", 4),
                pointer("ke", 4),
                pointer("out", 4),
                size("m", 100),
                size("n", 9000).alias({"N"}),
                size("topk", 16).specialization().limit({256}).alias({"T"}),
                blockSize(128),
                heads(64),
                dimension(128),
                size("topk_tokens", 512),
                fixed("stream")};
    e.call = [stream](const Draw &d) {
      return hisa_block_sparse_topk_tokens(
          d.ptr("q"), d.ptr("k"), d.ptr<float>("k_scale"),
          d.ptr<int32_t>("topk_block_index"), d.ptr<float>("weights"),
          d.ptr<int32_t>("ks"), d.ptr<int32_t>("ke"), d.ptr<int32_t>("out"),
          d.size("m"), d.size("n"), d.size("topk"), d.size("kb"),
          d.size("heads"), d.size("dim"), d.size("topk_tokens"), stream);
    };
    e.hasWork = [](const Draw &d) { return d.size("m") > 0; };
    e.tensors = [](const Draw &d) {
      Wide m = W(d.size("m"));
      return Tensors{{"q", m * d.size("heads") * d.size("dim")},
                     {"k", W(d.size("n")) * d.size("dim")},
                     {"topk_block_index", m * d.size("topk") * 4},
                     {"out", m * d.size("topk_tokens") * 4}};
    };
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_sparse_attn";
    e.params = {
        pointer("q", 2),
        pointer("kv", 2),
        pointer("attn_sink", 4),
        pointer("topk_idxs", 4),
        pointer("o", 2),
        pointer("lse", 4, true),
        size("batch", 128).specialization(),
        size("seq_len", 1).specialization(),
        size("heads", 64).specialization().limit({1, 1024}),
        size("nkv", 4096),
        size("topk", 640).specialization().limit({1, 4096}).alias({"K"}),
        real("softmax_scale", 0.044),
        pointer("workspace", 256, true).startAt(kNull),
        bytes("workspace_bytes", 0).alias({"workspace"}),
        fixed("stream")};
    e.namesExtra = [](const Draw &, const std::string &message) {
      return mentions(message, "workspace"); // its size follows the shape
    };
    e.call = [stream](const Draw &d) {
      return hisa_sparse_attn(
          d.ptr("q"), d.ptr("kv"), d.ptr<float>("attn_sink"),
          d.ptr<int32_t>("topk_idxs"), d.ptr("o"), d.ptr<float>("lse"),
          d.size("batch"), d.size("seq_len"), d.size("heads"), d.size("nkv"),
          d.size("topk"), d.real("softmax_scale"), d.ptr("workspace"),
          d.bytes("workspace_bytes"), stream);
    };
    e.hasWork = [](const Draw &d) {
      return d.size("batch") > 0 && d.size("seq_len") > 0;
    };
    e.ignores = [](const Draw &d, const std::string &name) {
      // The header allows kv = NULL for an empty cache (nkv = 0).
      if (name == "kv" && d.size("nkv") == 0)
        return true;
      uint64_t needed = 0;
      return name == "workspace" &&
             hisa_sparse_attn_workspace_size(d.size("batch"), d.size("seq_len"),
                                             d.size("heads"), d.size("topk"),
                                             &needed) == HISA_OK &&
             needed == 0;
    };
    e.tensors = [](const Draw &d) {
      Wide tokens = W(d.size("batch")) * d.size("seq_len");
      return Tensors{{"q", tokens * d.size("heads") * 1024},
                     {"kv", W(d.size("batch")) * d.size("nkv") * 1024},
                     {"topk_idxs", tokens * d.size("topk") * 4}};
    };
    e.draws = 250;
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_flash_attn";
    e.params = {pointer("q", 2),
                pointer("k", 2),
                pointer("v", 2),
                pointer("o", 2),
                size("batch", 2),
                size("heads", 8),
                size("seq_len", 1000).specialization().limit({4096, 8192}),
                dimension(128),
                flag("causal", 1),
                real("softmax_scale", 0.088),
                fixed("stream")};
    e.call = [stream](const Draw &d) {
      return hisa_flash_attn(d.ptr("q"), d.ptr("k"), d.ptr("v"), d.ptr("o"),
                             d.size("batch"), d.size("heads"),
                             d.size("seq_len"), d.size("dim"), d.flag("causal"),
                             d.real("softmax_scale"), stream);
    };
    e.hasWork = [](const Draw &d) {
      return d.size("batch") > 0 && d.size("heads") > 0 &&
             d.size("seq_len") > 0;
    };
    e.tensors = [](const Draw &d) {
      return Tensors{{"q", W(d.size("batch")) * d.size("heads") *
                               d.size("seq_len") * d.size("dim") * 2}};
    };
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_l2_prefetch";
    e.params = {pointer("data", 16), bytes("bytes", 32 << 20), fixed("stream")};
    e.call = [stream](const Draw &d) {
      return hisa_l2_prefetch(d.ptr("data"), d.bytes("bytes"), stream);
    };
    e.hasWork = [](const Draw &d) { return d.bytes("bytes") > 0; };
    e.tensors = [](const Draw &d) {
      return Tensors{{"data", Wide(d.bytes("bytes"))}};
    };
    e.draws = 60;
    entries.push_back(std::move(e));
  }
  return entries;
}

//===----------------------------------------------------------------------===//
// The indexers and the workspace queries
//===----------------------------------------------------------------------===//

/// hisa_indexer's workspace pieces: pooled keys, their scales, the stage-1
/// block indices.
Wide hisaIndexerPieces(Wide m, Wide n, Wide dim, Wide kb, Wide blockTopk) {
  Wide blocks = ceilDiv(n, kb);
  return blocks * dim + blocks * 4 + m * std::min(blockTopk, blocks) * 4;
}

std::vector<Entry> workspaceEntries() {
  std::vector<Entry> entries;
  {
    Entry e;
    e.function = "hisa_hisa_indexer_workspace_size";
    e.params = {
        size("m", 300),           size("n", 1000).alias({"N"}),
        heads(64, false),         dimension(128, false),
        blockSize(128, false),    size("block_topk", 16).limit({128, 256, 512}),
        size("topk_tokens", 256), hostOut("bytes")};
    e.call = [](const Draw &d) {
      return hisa_hisa_indexer_workspace_size(
          d.size("m"), d.size("n"), d.size("heads"), d.size("dim"),
          d.size("kb"), d.size("block_topk"), d.size("topk_tokens"),
          d.out<uint64_t>("bytes"));
    };
    e.collect = collectBytes;
    e.checkOutputs = [](const Draw &d, const Outcome &outcome) {
      expectSize(d, outcome,
                 hisaIndexerPieces(d.size("m"), d.size("n"), d.size("dim"),
                                   d.size("kb"), d.size("block_topk")));
    };
    e.draws = 600;
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_flat_indexer_workspace_size";
    e.params = {size("m", 300),           size("n", 1000).alias({"N"}),
                heads(64, false),         dimension(128, false),
                size("topk_tokens", 256), hostOut("bytes")};
    e.call = [](const Draw &d) {
      return hisa_flat_indexer_workspace_size(
          d.size("m"), d.size("n"), d.size("heads"), d.size("dim"),
          d.size("topk_tokens"), d.out<uint64_t>("bytes"));
    };
    e.collect = collectBytes;
    e.checkOutputs = [](const Draw &d, const Outcome &outcome) {
      expectSize(d, outcome, W(d.size("m")) * d.size("n") * 4);
    };
    e.draws = 400;
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_sparse_attn_workspace_size";
    e.params = {size("batch", 1), size("seq_len", 1),
                size("heads", 64).limit({1, 1024}),
                size("topk", 640).limit({1, 4096}).alias({"K"}),
                hostOut("bytes")};
    e.call = [](const Draw &d) {
      return hisa_sparse_attn_workspace_size(d.size("batch"), d.size("seq_len"),
                                             d.size("heads"), d.size("topk"),
                                             d.out<uint64_t>("bytes"));
    };
    e.collect = collectBytes;
    e.checkOutputs = [](const Draw &d, const Outcome &outcome) {
      // A nonzero size splits each token over at least two blocks: partial
      // outputs [tokens, splits, heads, 512] f32 and lse.
      Wide rows = W(d.size("batch")) * d.size("seq_len") * d.size("heads");
      bool splits = !outcome.outputs.empty() && outcome.outputs[0] != 0;
      expectSize(d, outcome, splits ? 2 * rows * (512 * 4 + 4) : 0);
    };
    e.draws = 400;
    entries.push_back(std::move(e));
  }
  return entries;
}

std::vector<Entry> indexerEntries() {
  std::vector<Entry> entries;
  CUstream stream = arenas().stream;
  {
    uint64_t needed = 0;
    EXPECT_EQ(hisa_hisa_indexer_workspace_size(100, 3000, 64, 128, 128, 16, 256,
                                               &needed),
              HISA_OK)
        << hisa_last_error();
    Entry e;
    e.function = "hisa_hisa_indexer";
    e.params = {pointer("q", 1),
                pointer("k", 1),
                pointer("k_scale", 4),
                pointer("weights", 4),
                pointer("ks", 4),
                pointer("ke", 4),
                pointer("out", 4),
                size("m", 100),
                size("n", 3000).specialization().alias({"N"}),
                heads(64),
                dimension(128),
                blockSize(128),
                size("block_topk", 16).specialization().limit({256}),
                size("topk_tokens", 256),
                pointer("workspace", 256),
                bytes("workspace_bytes", needed).alias({"workspace"}),
                fixed("stream")};
    e.namesExtra = [](const Draw &, const std::string &message) {
      return mentions(message, "workspace"); // its size follows the shape
    };
    e.call = [stream](const Draw &d) {
      return hisa_hisa_indexer(
          d.ptr("q"), d.ptr("k"), d.ptr<float>("k_scale"),
          d.ptr<float>("weights"), d.ptr<int32_t>("ks"), d.ptr<int32_t>("ke"),
          d.ptr<int32_t>("out"), d.size("m"), d.size("n"), d.size("heads"),
          d.size("dim"), d.size("kb"), d.size("block_topk"),
          d.size("topk_tokens"), d.ptr("workspace"), d.bytes("workspace_bytes"),
          stream);
    };
    e.hasWork = [](const Draw &d) { return d.size("m") > 0; };
    e.tensors = [](const Draw &d) {
      Wide m = W(d.size("m"));
      return Tensors{{"q", m * d.size("heads") * d.size("dim")},
                     {"k", W(d.size("n")) * d.size("dim")},
                     {"out", m * d.size("topk_tokens") * 4},
                     {"workspace",
                      hisaIndexerPieces(d.size("m"), d.size("n"), d.size("dim"),
                                        d.size("kb"), d.size("block_topk"))}};
    };
    e.checkOutputs = [](const Draw &d, const Outcome &) {
      EXPECT_GE(Wide(d.bytes("workspace_bytes")),
                hisaIndexerPieces(d.size("m"), d.size("n"), d.size("dim"),
                                  d.size("kb"), d.size("block_topk")))
          << "accepted a workspace smaller than its pieces";
    };
    entries.push_back(std::move(e));
  }
  {
    uint64_t needed = 0;
    EXPECT_EQ(hisa_flat_indexer_workspace_size(37, 3000, 64, 128, 256, &needed),
              HISA_OK)
        << hisa_last_error();
    Entry e;
    e.function = "hisa_flat_indexer";
    e.params = {
        pointer("q", 1),
        pointer("k", 1),
        pointer("k_scale", 4),
        pointer("weights", 4),
        pointer("ks", 4),
        pointer("ke", 4),
        pointer("out", 4),
        size("m", 37),
        size("n", 3000).specialization().limit({2048, 8192}).alias({"N"}),
        heads(64),
        dimension(128),
        size("topk_tokens", 256),
        pointer("workspace", 256),
        bytes("workspace_bytes", needed).alias({"workspace"}),
        fixed("stream")};
    e.namesExtra = [](const Draw &, const std::string &message) {
      return mentions(message, "workspace"); // its size follows the shape
    };
    e.call = [stream](const Draw &d) {
      return hisa_flat_indexer(
          d.ptr("q"), d.ptr("k"), d.ptr<float>("k_scale"),
          d.ptr<float>("weights"), d.ptr<int32_t>("ks"), d.ptr<int32_t>("ke"),
          d.ptr<int32_t>("out"), d.size("m"), d.size("n"), d.size("heads"),
          d.size("dim"), d.size("topk_tokens"), d.ptr("workspace"),
          d.bytes("workspace_bytes"), stream);
    };
    e.hasWork = [](const Draw &d) { return d.size("m") > 0; };
    e.tensors = [](const Draw &d) {
      Wide m = W(d.size("m"));
      return Tensors{{"q", m * d.size("heads") * d.size("dim")},
                     {"k", W(d.size("n")) * d.size("dim")},
                     {"out", m * d.size("topk_tokens") * 4},
                     {"workspace", m * d.size("n") * 4}};
    };
    e.checkOutputs = [](const Draw &d, const Outcome &) {
      EXPECT_GE(Wide(d.bytes("workspace_bytes")),
                W(d.size("m")) * d.size("n") * 4)
          << "accepted a workspace smaller than the logits";
    };
    entries.push_back(std::move(e));
  }
  return entries;
}

//===----------------------------------------------------------------------===//
// Context parallelism: what runs without NCCL
//===----------------------------------------------------------------------===//

/// hisa_cp_rank_ranges, in 128-bit arithmetic: rank r holds chunks r and
/// 2W - 1 - r of 2W equal position ranges.
std::vector<Wide> rankRanges(Wide total, Wide world, Wide rank) {
  auto bound = [&](Wide i) { return total * i / (2 * world); };
  Wide late = 2 * world - 1 - rank;
  return {bound(rank), bound(rank + 1), bound(late), bound(late + 1)};
}

Wide localTokens(Wide total, Wide world, Wide rank) {
  std::vector<Wide> r = rankRanges(total, world, rank);
  return r[1] - r[0] + r[3] - r[2];
}

std::vector<Entry> contextParallelEntries() {
  std::vector<Entry> entries;
  {
    Entry e;
    e.function = "hisa_cp_rank_ranges";
    e.params = {size("total", 1000), size("world", 4), size("rank", 1),
                hostOut("ranges")};
    e.call = [](const Draw &d) {
      return hisa_cp_rank_ranges(d.size("total"), d.size("world"),
                                 d.size("rank"), d.out<int64_t>("ranges"));
    };
    e.collect = [](const Draw &d, Outcome &outcome) {
      if (const int64_t *ranges = d.out<int64_t>("ranges"))
        outcome.outputs.assign(ranges, ranges + 4);
    };
    e.checkOutputs = [](const Draw &d, const Outcome &outcome) {
      ASSERT_EQ(outcome.outputs.size(), 4u);
      std::vector<Wide> expected =
          rankRanges(d.size("total"), d.size("world"), d.size("rank"));
      for (int i = 0; i < 4; ++i)
        EXPECT_EQ(Wide(outcome.outputs[i]), expected[i])
            << "ranges[" << i << "] is " << outcome.outputs[i] << ", not "
            << wideText(expected[i]);
    };
    e.draws = 300;
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_cp_hisa_indexer_workspace_size";
    e.params = {size("total", 4096),
                size("world", 2),
                size("rank", 1),
                heads(64, false),
                dimension(128, false),
                blockSize(128, false),
                size("block_topk", 16).limit({256}),
                size("topk_tokens", 256),
                hostOut("bytes")};
    e.call = [](const Draw &d) {
      return hisa_cp_hisa_indexer_workspace_size(
          d.size("total"), d.size("world"), d.size("rank"), d.size("heads"),
          d.size("dim"), d.size("kb"), d.size("block_topk"),
          d.size("topk_tokens"), d.out<uint64_t>("bytes"));
    };
    e.collect = collectBytes;
    e.checkOutputs = [](const Draw &d, const Outcome &outcome) {
      // The gathered keys and scales, this rank's windows, the gather
      // buffer (every rank's widest share: at least `total` rows) and the
      // single-GPU indexer's workspace for this rank's queries.
      Wide total = d.size("total"), dim = d.size("dim");
      Wide local = localTokens(total, d.size("world"), d.size("rank"));
      expectSize(d, outcome,
                 total * dim + total * 4 + local * 8 +
                     total * std::max<Wide>(dim, 4) +
                     hisaIndexerPieces(local, total, dim, d.size("kb"),
                                       d.size("block_topk")));
    };
    e.draws = 150;
    e.inChild = true; // a loop over the ranks could hang
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_cp_sparse_attn_workspace_size";
    e.params = {size("total", 4096),
                size("world", 2),
                size("rank", 0),
                size("heads", 64).limit({1, 1024}),
                size("topk", 512).limit({1, 4096}).alias({"K"}),
                hostOut("bytes")};
    e.call = [](const Draw &d) {
      return hisa_cp_sparse_attn_workspace_size(
          d.size("total"), d.size("world"), d.size("rank"), d.size("heads"),
          d.size("topk"), d.out<uint64_t>("bytes"));
    };
    e.collect = collectBytes;
    e.checkOutputs = [](const Draw &d, const Outcome &outcome) {
      // The gathered kv rows and the gather buffer, 1024 bytes a token.
      expectSize(d, outcome, 2 * W(d.size("total")) * 1024);
    };
    e.draws = 150;
    e.inChild = true;
    entries.push_back(std::move(e));
  }
  return entries;
}

//===----------------------------------------------------------------------===//
// The V4 attention layer
//===----------------------------------------------------------------------===//

const char *const kV4Matrices[] = {"wq_a",      "wq_b",  "wkv",     "wo_a",
                                   "wo_b",      "c_wkv", "c_wgate", "i_wq",
                                   "i_weights", "i_wkv", "i_wgate"};
const char *const kV4Vectors[] = {"q_norm", "kv_norm", "attn_sink", "c_ape",
                                  "c_norm", "i_ape",   "i_norm"};

/// The weights of a draw: each field's pointer choice.
hisa_v4_weights v4Weights(const Draw &d) {
  hisa_v4_weights w;
  w.wq_a = d.ptr("wq_a");
  w.wq_b = d.ptr("wq_b");
  w.wkv = d.ptr("wkv");
  w.wo_a = d.ptr("wo_a");
  w.wo_b = d.ptr("wo_b");
  w.q_norm = d.ptr<float>("q_norm");
  w.kv_norm = d.ptr<float>("kv_norm");
  w.attn_sink = d.ptr<float>("attn_sink");
  w.c_wkv = d.ptr("c_wkv");
  w.c_wgate = d.ptr("c_wgate");
  w.c_ape = d.ptr<float>("c_ape");
  w.c_norm = d.ptr<float>("c_norm");
  w.i_wq = d.ptr("i_wq");
  w.i_weights = d.ptr("i_weights");
  w.i_wkv = d.ptr("i_wkv");
  w.i_wgate = d.ptr("i_wgate");
  w.i_ape = d.ptr<float>("i_ape");
  w.i_norm = d.ptr<float>("i_norm");
  return w;
}

hisa_v4_config v4Config(const Draw &d) {
  hisa_v4_config c;
  c.dim = d.size("dim");
  c.heads = d.size("heads");
  c.q_lora = d.size("q_lora");
  c.o_groups = d.size("o_groups");
  c.o_lora = d.size("o_lora");
  c.compress_ratio = d.size("compress_ratio");
  c.index_heads = d.size("index_heads");
  c.index_topk = d.size("index_topk");
  c.eps = d.real("eps");
  c.rope_theta = d.real("rope_theta");
  c.compress_rope_theta = d.real("compress_rope_theta");
  return c;
}

Entry v4CreateEntry() {
  Entry e;
  e.function = "hisa_v4_attention_create";
  e.structs = {"hisa_v4_config", "hisa_v4_weights"};
  e.params = {hostOut("config"), hostOut("weights"), size("batch", 2),
              size("max_seq", 256),
              // Clamped to [batch, batch * max_seq].
              size("max_prefill_tokens", 0).anyInt64(), hostOut("layer"),
              size("dim", 256).limit({64}), size("heads", 16).limit({1, 128}),
              size("q_lora", 256).limit({128}), size("o_groups", 2),
              size("o_lora", 256).limit({256}),
              size("compress_ratio", 4).limit({4, 128}),
              size("index_heads", 64).limit({64}),
              size("index_topk", 16).limit({4096}), real("eps", 1e-6),
              real("rope_theta", 10000), real("compress_rope_theta", 160000)};
  for (const char *name : kV4Matrices)
    e.params.push_back(pointer(name, 2));
  for (const char *name : kV4Vectors)
    e.params.push_back(pointer(name, 4));
  e.call = [](const Draw &d) {
    hisa_v4_config config = v4Config(d);
    hisa_v4_weights weights = v4Weights(d);
    hisa_v4_attention **layer = d.out<hisa_v4_attention *>("layer");
    int status = hisa_v4_attention_create(
        d.choice("config") == kNull ? nullptr : &config,
        d.choice("weights") == kNull ? nullptr : &weights, d.size("batch"),
        d.size("max_seq"), d.size("max_prefill_tokens"), layer);
    if (status == HISA_OK && layer)
      hisa_v4_attention_destroy(*layer);
    return status;
  };
  e.tensors = [](const Draw &d) {
    Wide dim = d.size("dim"), heads = d.size("heads"), qLora = d.size("q_lora"),
         oLora = d.size("o_lora"), oGroups = d.size("o_groups"),
         batch = d.size("batch"), maxSeq = d.size("max_seq");
    Wide ratio = d.size("compress_ratio");
    Wide tokens = d.size("max_prefill_tokens") == 0
                      ? batch * maxSeq
                      : std::clamp<Wide>(d.size("max_prefill_tokens"), batch,
                                         batch * maxSeq);
    return Tensors{
        {"wq_a", qLora * dim * 2},
        {"wq_b", heads * 512 * qLora * 2},
        {"wo_a", oLora * heads * 512 * 2},
        {"wo_b", dim * oGroups * oLora * 2},
        {"the kv cache", batch * (128 + (ratio ? maxSeq / ratio : 0)) * 1024},
        {"q", tokens * heads * 1024},
        {"q_lora activations", tokens * qLora * 2},
        {"o_lora activations", tokens * oGroups * oLora * 2}};
  };
  e.checkOutputs = [](const Draw &d, const Outcome &) {
    EXPECT_GE(d.real("eps"), 0) << "accepted a negative eps";
    // The RoPE tables' base: the compressed positions' when compressing.
    const char *theta =
        d.size("compress_ratio") ? "compress_rope_theta" : "rope_theta";
    EXPECT_GT(d.real(theta), 0)
        << "accepted " << theta << " = " << d.real(theta);
    for (const char *name : {"dim", "q_lora", "o_lora"})
      EXPECT_GT(d.size(name), 0)
          << "accepted " << name << " = " << d.size(name);
  };
  // Allocations past the fake's memory limit fail as on a GPU.
  e.namesExtra = [](const Draw &, const std::string &message) {
    return message.find("allocating") != std::string::npos &&
           message.find("OUT_OF_MEMORY") != std::string::npos;
  };
  e.usesPointers = [](const Draw &) { return true; };
  // What the compression ratio leaves unused.
  e.ignores = [](const Draw &d, const std::string &name) {
    int64_t ratio = d.size("compress_ratio");
    if (name == "rope_theta")
      return ratio != 0;
    if (name == "compress_rope_theta")
      return ratio == 0;
    if (name.rfind("c_", 0) == 0)
      return ratio == 0;
    if (name.rfind("i_", 0) == 0 || name.rfind("index_", 0) == 0)
      return ratio != 4;
    return false;
  };
  e.draws = 130;
  e.inChild = true; // its allocations
  return e;
}

/// A small V4 layer (the orchestration test's sizes), window only: the
/// fewest kernels to compile.
struct V4Layer {
  static constexpr int64_t kBatch = 2, kMaxSeq = 64, kDim = 256;
  hisa_v4_attention *layer = nullptr;
  V4Layer() {
    hisa_v4_config config = {kDim, 16, 256,   2,    256,   0,
                             64,   16, 1e-6f, 1e4f, 1.6e5f};
    hisa_v4_weights w = {};
    for (const void **matrix :
         {&w.wq_a, &w.wq_b, &w.wkv, &w.wo_a, &w.wo_b, &w.c_wkv, &w.c_wgate,
          &w.i_wq, &w.i_weights, &w.i_wkv, &w.i_wgate})
      *matrix = deviceBuffer(1 << 20);
    for (const float **vector : {&w.q_norm, &w.kv_norm, &w.attn_sink, &w.c_ape,
                                 &w.c_norm, &w.i_ape, &w.i_norm})
      *vector = static_cast<const float *>(deviceBuffer(1 << 16));
    status = hisa_v4_attention_create(&config, &w, kBatch, kMaxSeq, 0, &layer);
  }
  ~V4Layer() { hisa_v4_attention_destroy(layer); }
  int status;
};

/// Compiles the slowest kernels of accepted calls (sparse and dense
/// attention's, the V4 layer's) in a child process, on the other core,
/// while the first operators are fuzzed, into the disk cache
/// ($HISA_CACHE_DIR) where the tests then find them. Only time changes:
/// what the child has not cached yet is compiled again.
class CompileAhead : public ::testing::Environment {
public:
  void SetUp() override {
    child = ::fork(); // no threads yet: the child may use anything
    if (child != 0)
      return;
    hisa::fake_cuda::setMemoryLimit(size_t(256) << 20);
    void *buffer = deviceBuffer(1 << 20);
    auto *floats = static_cast<float *>(buffer);
    auto *ints = static_cast<int32_t *>(buffer);
    // hisa_sparse_attn's baseline and the variants most draws reach.
    for (auto [lse, topk] : {std::pair<float *, int64_t>{floats, 640},
                             {nullptr, 640},
                             {floats, 4096},
                             {floats, 64}})
      hisa_sparse_attn(buffer, buffer, floats, ints, buffer, lse, 128, 1, 64,
                       4096, topk, 0.044f, nullptr, 0, nullptr);
    // hisa_flash_attn's.
    for (auto [seq, causal, scale] :
         {std::tuple<int64_t, int32_t, float>{1000, 1, 0.088f},
          {1000, 0, 0.088f},
          {1000, 1, 0.0f},
          {8193, 1, 0.088f}})
      hisa_flash_attn(buffer, buffer, buffer, buffer, 2, 8, seq, 128, causal,
                      scale, nullptr);
    V4Layer small;
    char *x = static_cast<char *>(
        deviceBuffer(V4Layer::kBatch * V4Layer::kMaxSeq * V4Layer::kDim * 2));
    for (int64_t seq : {V4Layer::kMaxSeq, int64_t(1)})
      hisa_v4_attention_prefill(small.layer, x, seq, x, nullptr);
    hisa_v4_attention_set_length(small.layer, 8, nullptr);
    hisa_v4_attention_decode(small.layer, x, x, nullptr);
    ::_exit(0);
  }
  void TearDown() override {
    if (child > 0) {
      ::kill(child, SIGKILL);
      ::waitpid(child, nullptr, 0);
    }
  }

private:
  pid_t child = -1;
};

[[maybe_unused]] ::testing::Environment *const compileAhead =
    ::testing::AddGlobalTestEnvironment(new CompileAhead);

std::vector<Entry> v4LayerEntries(hisa_v4_attention *layer) {
  std::vector<Entry> entries;
  CUstream stream = arenas().stream;
  auto layerOf = [layer](const Draw &d) {
    return d.choice("layer") == kNull ? nullptr : layer;
  };
  {
    Entry e;
    e.function = "hisa_v4_attention_prefill";
    e.params = {hostOut("layer"), pointer("x", 16),
                // (Each accepted length compiles the layer's kernels for
                // it: the limit and the shortest prompt.)
                size("seq", V4Layer::kMaxSeq)
                    .specialization()
                    .limit({V4Layer::kMaxSeq}),
                pointer("out", 16), fixed("stream")};
    e.call = [=](const Draw &d) {
      return hisa_v4_attention_prefill(layerOf(d), d.ptr("x"), d.size("seq"),
                                       d.ptr("out"), stream);
    };
    e.hasWork = [](const Draw &) { return true; };
    e.tensors = [](const Draw &d) {
      return Tensors{
          {"x", W(V4Layer::kBatch) * d.size("seq") * V4Layer::kDim * 2}};
    };
    e.checkOutputs = [](const Draw &d, const Outcome &) {
      EXPECT_LE(d.size("seq"), V4Layer::kMaxSeq)
          << "accepted a prompt longer than max_seq";
    };
    e.draws = 60;
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_v4_attention_decode";
    e.params = {hostOut("layer"), pointer("x", 16), pointer("out", 16),
                fixed("stream")};
    e.call = [=](const Draw &d) {
      // A position to decode at (set_length is fuzzed below).
      EXPECT_EQ(hisa_v4_attention_set_length(layer, 8, stream), HISA_OK)
          << hisa_last_error();
      return hisa_v4_attention_decode(layerOf(d), d.ptr("x"), d.ptr("out"),
                                      stream);
    };
    e.hasWork = [](const Draw &) { return true; };
    e.draws = 30;
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_v4_attention_set_length";
    e.params = {hostOut("layer"),
                size("length", 8).limit({1, V4Layer::kMaxSeq}),
                fixed("stream")};
    e.call = [=](const Draw &d) {
      return hisa_v4_attention_set_length(layerOf(d), d.size("length"), stream);
    };
    e.hasWork = [](const Draw &) { return true; };
    e.checkOutputs = [](const Draw &d, const Outcome &) {
      EXPECT_GE(d.size("length"), 1);
      EXPECT_LE(d.size("length"), V4Layer::kMaxSeq);
    };
    e.draws = 60;
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_v4_attention_set_l2_prefetch";
    // -1 is documented (a share of the device's L2).
    e.params = {
        hostOut("layer"),
        size("bytes", 1 << 20).anyInt64().negativeAllowed().limit({-1})};
    e.call = [=](const Draw &d) {
      return hisa_v4_attention_set_l2_prefetch(layerOf(d), d.size("bytes"));
    };
    e.checkOutputs = [](const Draw &d, const Outcome &) {
      EXPECT_GE(d.size("bytes"), -1);
    };
    e.draws = 60;
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_v4_attention_info";
    e.params = {hostOut("layer"), hostOut("length", true),
                hostOut("index_columns", true), hostOut("kv_cache", true),
                hostOut("last_indices", true)};
    e.call = [=](const Draw &d) {
      return hisa_v4_attention_info(layerOf(d), d.out<int64_t>("length"),
                                    d.out<int64_t>("index_columns"),
                                    d.out<const void *>("kv_cache"),
                                    d.out<const int32_t *>("last_indices"));
    };
    e.draws = 40;
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_v4_attention_index_keys";
    e.params = {hostOut("layer"), hostOut("keys", true),
                hostOut("scales", true), hostOut("rows_per_sequence", true)};
    e.call = [=](const Draw &d) {
      return hisa_v4_attention_index_keys(layerOf(d), d.out<void *>("keys"),
                                          d.out<float *>("scales"),
                                          d.out<int64_t>("rows_per_sequence"));
    };
    e.draws = 30;
    entries.push_back(std::move(e));
  }
  return entries;
}

//===----------------------------------------------------------------------===//
// The JIT: compile, get and launch
//===----------------------------------------------------------------------===//

/// Strings the JIT entry points are given (the first of each is valid).
std::vector<Param> jitParams(const char *kernel) {
  std::string longText(100000, 'a');
  return {
      text("source", {"<NULL>", "", "this is not MLIR",
                      "tile.kernel @" + std::string(kernel) + "(", "module {}"})
          .alias({"source"}),
      text("kernel_name", {kernel, "<NULL>", "", "no_such_kernel",
                           std::string(kernel) + " ", longText})
          .alias({"kernel"}),
      text("params",
           {"<NULL>", "", "chunk", "chunk=", "=1", "chunk=0", "chunk=-1",
            "chunk=99999999999999999999999", "chunk=1099511627776",
            "chunk=16,chunk=16", "nope=1", ",", "chunk=1 6", longText})
          .alias({"parameter", "parameters", "chunk", "nope", "params"}),
      text("target", {"sm_90a", "<NULL>", "", "sm_90a,-tma", "sm_1", "garbage",
                      "sm_90a,+tma,-tma", "sm_90a,+bogus", longText})
          .alias({"target", "chip", "feature"})};
}

std::vector<Entry> jitEntries(hisa_kernel *loaded) {
  std::vector<Entry> entries;
  const std::vector<int> jitStatuses = {HISA_OK, HISA_ERROR_INVALID_ARGUMENT,
                                        HISA_ERROR_COMPILE};
  {
    Entry e;
    e.function = "hisa_kernel_get";
    e.params = jitParams("l2_prefetch");
    e.params.push_back(hostOut("out"));
    e.call = [](const Draw &d) {
      return hisa_kernel_get(d.text("source"), d.text("kernel_name"),
                             d.text("params"), d.text("target"),
                             d.out<hisa_kernel *>("out"));
    };
    e.statuses = jitStatuses;
    e.draws = 80;
    entries.push_back(std::move(e));
  }
  {
    Entry e;
    e.function = "hisa_kernel_compile";
    e.params = jitParams("l2_prefetch");
    e.params.push_back(hostOut("out_path", true));
    e.params.push_back(size("path_capacity", 4096).anyInt64());
    e.call = [](const Draw &d) {
      char *path = d.out<char>("out_path");
      if (path)
        std::memset(path, 0, 4096);
      int64_t capacity = d.size("path_capacity");
      // The buffer holds 64 KiB: a larger capacity is a caller's lie, but
      // the path is shorter than that.
      return hisa_kernel_compile(d.text("source"), d.text("kernel_name"),
                                 d.text("params"), d.text("target"), path,
                                 capacity);
    };
    e.collect = [](const Draw &d, Outcome &outcome) {
      if (const char *path = d.out<char>("out_path"))
        outcome.outputs = {int64_t(strnlen(path, Arenas::kSlot)),
                           int64_t(::access(path, R_OK) == 0)};
    };
    e.checkOutputs = [](const Draw &d, const Outcome &outcome) {
      if (d.choice("out_path") == kNull || d.size("path_capacity") <= 0)
        return;
      ASSERT_EQ(outcome.outputs.size(), 2u);
      EXPECT_LT(outcome.outputs[0], d.size("path_capacity"));
      EXPECT_EQ(outcome.outputs[1], 1) << "the binary's path is not a file";
    };
    // Without out_path, path_capacity means nothing (the header's NULL).
    e.ignores = [](const Draw &d, const std::string &name) {
      return name == "path_capacity" && d.choice("out_path") == kNull;
    };
    e.statuses = jitStatuses;
    e.draws = 80;
    entries.push_back(std::move(e));
  }
  {
    // clean_and_maintain_logits(logits [?, ?] f32, s [?] i32, e [?] i32):
    // a grid from logits' rows, and a rank-2 tensor whose sizes' product
    // can wrap.
    Entry e;
    e.function = "hisa_kernel_launch";
    e.structs = {"hisa_arg"};
    e.params = {hostOut("kernel"), hostOut("args"),
                flag("num_args", 3).limit({2, 4, 1000000}), fixed("stream")};
    e.params[2].kind = Kind::Size;
    e.params[2].int32 = false;
    e.params[2].field32 = true; // int32_t num_args
    const int64_t baseSizes[3][2] = {{100, 3000}, {100, 0}, {100, 0}};
    for (int i = 0; i < 3; ++i) {
      std::string prefix = "args[" + std::to_string(i) + "].";
      std::string number = "#" + std::to_string(i);
      const char *names[] = {"logits", "s", "e"};
      auto named = [&](Param p) { return p.alias({number, names[i]}); };
      Param kind = flag(prefix + "kind", 0);
      Param rank = flag(prefix + "rank", i == 0 ? 2 : 1).limit({8});
      rank.kind = Kind::Size;
      rank.int32 = false;
      rank.field32 = true; // hisa_arg's int32_t rank
      e.params.push_back(named(kind));
      e.params.push_back(named(rank));
      e.params.push_back(named(pointer(prefix + "data", 4, true)));
      e.params.push_back(
          named(size(prefix + "sizes[0]", baseSizes[i][0]).anyInt64()));
      if (i == 0)
        e.params.push_back(
            named(size(prefix + "sizes[1]", baseSizes[i][1]).anyInt64()));
    }
    e.call = [loaded](const Draw &d) {
      std::vector<hisa_arg> args(3);
      for (int i = 0; i < 3; ++i) {
        std::string prefix = "args[" + std::to_string(i) + "].";
        hisa_arg &arg = args[i];
        std::memset(&arg, 0, sizeof(arg));
        arg.kind = d.flag(prefix + "kind");
        arg.rank = static_cast<int32_t>(d.size(prefix + "rank"));
        arg.data = d.ptr(prefix + "data");
        arg.sizes[0] = d.size(prefix + "sizes[0]");
        if (i == 0)
          arg.sizes[1] = d.size(prefix + "sizes[1]");
        for (int dim = 2; dim < 8; ++dim)
          arg.sizes[dim] = 1;
      }
      auto *array = d.out<hisa_arg>("args");
      if (array)
        std::memcpy(array, args.data(), sizeof(hisa_arg) * 3);
      return hisa_kernel_launch(d.choice("kernel") == kNull ? nullptr : loaded,
                                array, static_cast<int32_t>(d.size("num_args")),
                                arenas().stream);
    };
    e.hasWork = [](const Draw &d) { return d.size("args[0].sizes[0]") > 0; };
    // An empty tensor's pointer is never read: any value is fine.
    e.ignores = [](const Draw &d, const std::string &name) {
      for (int i = 0; i < 3; ++i) {
        std::string prefix = "args[" + std::to_string(i) + "].";
        if (name != prefix + "data")
          continue;
        return d.size(prefix + "sizes[0]") == 0 ||
               (i == 0 && d.size(prefix + "sizes[1]") == 0);
      }
      return false;
    };
    e.tensors = [](const Draw &d) {
      Tensors tensors;
      for (int i = 0; i < 3; ++i) {
        std::string prefix = "args[" + std::to_string(i) + "].";
        Wide elements = 1;
        for (int dim = 0; dim < d.size(prefix + "rank") && dim < 8; ++dim)
          elements *= dim == 0             ? Wide(d.size(prefix + "sizes[0]"))
                      : dim == 1 && i == 0 ? Wide(d.size(prefix + "sizes[1]"))
                                           : Wide(1);
        tensors.push_back({prefix + "data", elements * 4});
      }
      return tensors;
    };
    e.checkOutputs = [](const Draw &d, const Outcome &) {
      EXPECT_EQ(d.size("num_args"), 3);
      for (int i = 0; i < 3; ++i) {
        std::string prefix = "args[" + std::to_string(i) + "].";
        Wide elements = Wide(d.size(prefix + "sizes[0]")) *
                        (i == 0 ? Wide(d.size(prefix + "sizes[1]")) : 1);
        if (elements != 0) {
          EXPECT_NE(d.choice(prefix + "data"), kNull)
              << "accepted a tensor of " << wideText(elements)
              << " elements at NULL";
        }
      }
    };
    // The raw API's grid is the kernel's: its limit is a clear message.
    e.namesExtra = [](const Draw &, const std::string &message) {
      return message.find("grid") != std::string::npos &&
             message.find("limit") != std::string::npos;
    };
    // In-process: a num_args its kernel does not take is refused before
    // anything reads args (the array holds three).
    e.draws = 250;
    entries.push_back(std::move(e));
  }
  return entries;
}

//===----------------------------------------------------------------------===//
// The tests
//===----------------------------------------------------------------------===//

class CAPIArgumentFuzz : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    // What a call may allocate (the V4 layer): enough for the baselines,
    // not for sizes that only a wrapped product would make small.
    hisa::fake_cuda::setMemoryLimit(size_t(256) << 20);
    arenas();
  }
};

TEST_F(CAPIArgumentFuzz, HeaderIsParsed) {
  const auto &names = headerNames();
  ASSERT_TRUE(names.count("hisa_sparse_attn"));
  EXPECT_EQ(names.at("hisa_sparse_attn").size(), 15u);
  EXPECT_EQ(names.at("hisa_cp_rank_ranges").back(), "ranges");
  EXPECT_EQ(names.at("hisa_v4_config").size(), 11u);
  EXPECT_EQ(names.at("hisa_last_error").size(), 0u);
}

TEST_F(CAPIArgumentFuzz, Operators) {
  std::vector<Entry> entries = operatorEntries();
  fuzzAll(entries);
}

TEST_F(CAPIArgumentFuzz, WorkspaceQueries) {
  std::vector<Entry> entries = workspaceEntries();
  fuzzAll(entries);
}

TEST_F(CAPIArgumentFuzz, Indexers) {
  std::vector<Entry> entries = indexerEntries();
  fuzzAll(entries);
}

TEST_F(CAPIArgumentFuzz, ContextParallel) {
  std::vector<Entry> entries = contextParallelEntries();
  fuzzAll(entries);
  // The NCCL calls: no communicator, or no NCCL to run one.
  hisa::testing::ScopedEnvironment noNccl("HISA_NCCL_LIB",
                                          "/nonexistent/libnccl.so.2");
  void *q = arenas().device;
  for (void *comm : {static_cast<void *>(nullptr), q}) {
    EXPECT_NE(hisa_cp_hisa_indexer(q, q, nullptr, nullptr, nullptr, 4096, 2, 64,
                                   128, 128, 16, 256, comm, nullptr, 0,
                                   nullptr),
              HISA_OK);
    EXPECT_NE(std::string(hisa_last_error()).find(comm ? "NCCL" : "NULL"),
              std::string::npos)
        << hisa_last_error();
    EXPECT_NE(hisa_cp_sparse_attn(q, q, nullptr, nullptr, nullptr, 4096, 64,
                                  512, 0.04f, comm, nullptr, 0, nullptr),
              HISA_OK);
    EXPECT_NE(std::string(hisa_last_error()).find(comm ? "NCCL" : "NULL"),
              std::string::npos)
        << hisa_last_error();
  }
}

TEST_F(CAPIArgumentFuzz, V4Layer) {
  std::vector<Entry> entries = {v4CreateEntry()};
  fuzzAll(entries);
  V4Layer small;
  ASSERT_EQ(small.status, HISA_OK) << hisa_last_error();
  entries = v4LayerEntries(small.layer);
  fuzzAll(entries);
  hisa_v4_attention_destroy(nullptr); // nothing to do
}

TEST_F(CAPIArgumentFuzz, Jit) {
  hisa_kernel *loaded = nullptr;
  ASSERT_EQ(hisa_kernel_get(nullptr, "clean_and_maintain_logits", nullptr,
                            "sm_90a", &loaded),
            HISA_OK)
      << hisa_last_error();
  std::vector<Entry> entries = jitEntries(loaded);
  fuzzAll(entries);
}

TEST_F(CAPIArgumentFuzz, RemainingEntryPoints) {
  // What takes no sizes: NULL is fine wherever the header allows it.
  EXPECT_STRNE(hisa_version(), "");
  EXPECT_EQ(hisa_builtin_kernel_source(nullptr), nullptr);
  EXPECT_EQ(hisa_builtin_kernel_source("no_such_kernel"), nullptr);
  EXPECT_NE(hisa_builtin_kernel_source("topk_f32"), nullptr);
  hisa_cache_stats(nullptr, nullptr, nullptr);
  hisa_cache_stats2(nullptr, nullptr, nullptr, nullptr);
  for (int value : {0, 1, -1, 2, INT32_MIN}) {
    int previous = hisa_set_device_pointer_checks(value);
    EXPECT_EQ(hisa_set_device_pointer_checks(previous), value != 0);
    previous = hisa_set_programmatic_launch(value);
    EXPECT_EQ(hisa_set_programmatic_launch(previous), value != 0);
    previous = hisa_set_launch_graphs(value);
    EXPECT_EQ(hisa_set_launch_graphs(previous), value != 0);
  }
  hisa_launch_graph_stats(nullptr, nullptr, nullptr);
  EXPECT_EQ(hisa_set_device_pointer_checks(1), 1);
}

} // namespace
