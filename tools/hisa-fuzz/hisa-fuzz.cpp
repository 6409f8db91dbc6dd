//===- hisa-fuzz.cpp - Mutation fuzzer for parse, verify and lowering -----===//
//
// Mutates the project's own .mlir files (structure-aware: integers, element
// types, shapes, op names, parameters, lines, tokens, bytes) and feeds every
// mutant to the compiler in a forked child: parse + verify, then optionally
// the full `tile-to-nvvm` lowering (with mutated parameter bindings) and PTX
// serialization. The child runs under a CPU-time limit (-> "hang") and an
// address-space limit (an out-of-memory abort is a crash). Input i of a
// campaign depends only on (--seed, i) and the corpus, so any finding can be
// regenerated (--dump --first=i --runs=1).
//
//   hisa-fuzz [options] <corpus files or directories>...
//
// Outcomes: ok, rejected (exit 1 with an error diagnostic: fine), crash
// (signal, abort, "LLVM ERROR", failure without a diagnostic, output that does
// not parse back), hang. Crashes and hangs are deduplicated by a signature
// (kind, message, pass, top frames) and saved with a reproducing hisa-opt
// command under --out. Exit status 1 when anything was found.
//
//===----------------------------------------------------------------------===//

#include "hisa/Target/PTXTranslation.h"
#include "hisa/Tools/Registration.h"
#include "hisa/Tools/SourceLimits.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <map>
#include <optional>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir;
using llvm::StringRef;

namespace cl = llvm::cl;

static cl::list<std::string>
    corpusPaths(cl::Positional, cl::desc("<corpus files or directories>"));
static cl::opt<uint64_t> seedOpt("seed", cl::desc("Campaign seed"),
                                 cl::init(1));
static cl::opt<unsigned> runsOpt("runs", cl::desc("Inputs to execute"),
                                 cl::init(1000));
static cl::opt<unsigned> firstOpt("first",
                                  cl::desc("Index of the first input (resume "
                                           "or replay part of a campaign)"),
                                  cl::init(0));
static cl::opt<unsigned> jobsOpt("jobs", cl::desc("Children run at once"),
                                 cl::init(1));
static cl::opt<std::string>
    modesOpt("mode",
             cl::desc("Comma-separated modes drawn per input: parse (parse "
                      "+ verify), nvvm (tile-to-nvvm, default parameters), "
                      "params (tile-to-nvvm with mutated bindings), ptx "
                      "(params + PTX serialization), jit "
                      "(hisa_kernel_compile of the runtime library: "
                      "mutated parameters and target, ptxas), report (the "
                      "analysis passes: inline, bind defaults, layouts, "
                      "tile-report-bank-conflicts, tile-report-resources); "
                      "'mix' = all but jit"),
             cl::init("mix"));
static cl::opt<double> timeoutOpt("timeout",
                                  cl::desc("CPU seconds per input (hang)"),
                                  cl::init(10));
static cl::opt<unsigned> memLimitOpt(
    "mem-limit-mb",
    cl::desc("Address-space limit per child (0: none, e.g. under "
             "AddressSanitizer, whose shadow memory needs terabytes of it)"),
    cl::init(4096));
static cl::opt<std::string>
    outOpt("out", cl::desc("Directory for crashing/hanging inputs"),
           cl::init(""));
static cl::opt<unsigned>
    maxSavedOpt("max-saved", cl::desc("Inputs saved per distinct signature"),
                cl::init(3));
static cl::opt<unsigned> maxFindingsOpt(
    "max-findings",
    cl::desc("Stop after this many crashing or hanging inputs (0: never), "
             "which bounds a campaign's time when every input hangs"),
    cl::init(0));
static cl::opt<unsigned> maxMutationsOpt("max-mutations",
                                         cl::desc("Mutations stacked at most"),
                                         cl::init(5));
static cl::opt<bool> minimizeOpt(
    "minimize",
    cl::desc("Shrink the first input of every distinct signature (lines, "
             "then parameter bindings) and save it as <sig>-min.mlir"),
    cl::init(false));
static cl::opt<unsigned>
    minimizeRunsOpt("minimize-runs",
                    cl::desc("Executions per signature when minimizing"),
                    cl::init(300));
static cl::opt<bool>
    roundTripOpt("roundtrip",
                 cl::desc("Print every module that passes and parse it back "
                          "(hisa-opt | hisa-translate must work)"),
                 cl::init(true));
static cl::opt<double> statusOpt("status-interval",
                                 cl::desc("Seconds between progress lines on "
                                          "stderr (0: none)"),
                                 cl::init(30));
static cl::opt<bool> dumpOpt("dump",
                             cl::desc("Print the inputs (mode, options, text) "
                                      "instead of running them"),
                             cl::init(false));
static cl::opt<bool>
    verboseOpt("verbose",
               cl::desc("Print every input's outcome and first diagnostic"),
               cl::init(false));
static cl::opt<bool> checkCorpusOpt(
    "check-corpus",
    cl::desc("Run every seed unmutated in each --mode and print the outcomes"),
    cl::init(false));
static cl::opt<std::string> runtimeLibOpt(
    "runtime-lib",
    cl::desc("libhisa_runtime.so for the jit mode (default: "
             "../lib/libhisa_runtime.so next to this executable)"),
    cl::init(""));
static cl::opt<std::string> featuresOpt(
    "features",
    cl::desc("Target features every lowering input gets unless it mutated "
             "its own (e.g. +elide-sync: a campaign over rules that are off "
             "by default)"),
    cl::init(""));
static cl::opt<std::string>
    replayOpt("replay",
              cl::desc("Run one file (with --replay-mode, "
                       "--replay-options) and print its outcome"),
              cl::init(""));
static cl::opt<std::string> replayModeOpt("replay-mode", cl::init("nvvm"),
                                          cl::desc("Mode of --replay"));
static cl::opt<std::string>
    replayOptionsOpt("replay-options", cl::init(""),
                     cl::desc("tile-to-nvvm options of --replay"));

//===----------------------------------------------------------------------===//
// Random numbers: input i of a campaign is generated from (seed, i) alone.
//===----------------------------------------------------------------------===//

namespace {

struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed) {}
  uint64_t next() { // splitmix64
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n ? next() % n : 0; }
  bool chance(unsigned percent) { return below(100) < percent; }
  template <typename T> const T &pick(const std::vector<T> &v) {
    return v[below(v.size())];
  }
};

/// A chip name near the supported ones: sm_<60..129>, sometimes with a
/// suffix or leading zeros (numbers inside the supported range that are no
/// chip, such as sm_85, used to make LLVM abort).
std::string randomChip(Rng &rng) {
  std::string chip = "sm_";
  if (rng.chance(10))
    chip += "0";
  chip += std::to_string(60 + rng.below(70));
  if (rng.chance(30))
    chip += rng.pick(std::vector<std::string>{"a", "f", "b"});
  return chip;
}

enum class Mode { Parse, NVVM, Params, PTX, JIT, Report };

StringRef modeName(Mode mode) {
  switch (mode) {
  case Mode::Parse:
    return "parse";
  case Mode::NVVM:
    return "nvvm";
  case Mode::Params:
    return "params";
  case Mode::PTX:
    return "ptx";
  case Mode::JIT:
    return "jit";
  case Mode::Report:
    return "report";
  }
  return "?";
}

std::optional<Mode> parseMode(StringRef name) {
  return llvm::StringSwitch<std::optional<Mode>>(name)
      .Case("parse", Mode::Parse)
      .Case("nvvm", Mode::NVVM)
      .Case("params", Mode::Params)
      .Case("ptx", Mode::PTX)
      .Case("jit", Mode::JIT)
      .Case("report", Mode::Report)
      .Default(std::nullopt);
}

/// Report mode's passes: what a user runs to ask where a kernel's
/// shared-memory banks conflict and what it uses.
constexpr const char *kReportPipeline =
    "tile-inline-functions,tile-bind-params,tile-assign-layouts,"
    "tile-report-bank-conflicts,tile-report-resources";

struct Input {
  std::string text;
  Mode mode = Mode::Parse;
  /// Options of tile-to-nvvm, e.g. "params=kb=64,dim=128 features=-tma".
  std::string options;
  /// Seed file and the mutations applied, for the report.
  std::string origin;
};

//===----------------------------------------------------------------------===//
// Corpus
//===----------------------------------------------------------------------===//

struct Seed {
  std::string name;
  std::string text;
  std::vector<std::string> lines;
};

struct Corpus {
  std::vector<Seed> seeds;
  /// Seeds drawn by index: valid kernels are listed more often than the
  /// negative tests (expected-error), whose mutants rarely get past the
  /// verifier.
  std::vector<size_t> draw;
  /// Seeds without expected errors, for inputs meant to reach the passes.
  std::vector<size_t> positive;
  /// Words seen in the corpus: dotted ones (op names) and plain ones
  /// (keywords, attribute and parameter names).
  std::vector<std::string> opNames, words;
};

std::vector<std::string> splitLines(StringRef text) {
  std::vector<std::string> lines;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    lines.push_back(line.str());
    text = rest;
  }
  return lines;
}

std::string joinLines(const std::vector<std::string> &lines) {
  std::string text;
  for (const std::string &line : lines) {
    text += line;
    text += '\n';
  }
  return text;
}

bool isIdentStart(char c) { return llvm::isAlpha(c) || c == '_'; }
bool isIdentChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '.' || c == '$';
}

/// Replaces whole words (`K` but not `KB`).
std::string replaceWord(StringRef text, StringRef word, StringRef with) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i).starts_with(word) &&
        (i == 0 || !isIdentChar(text[i - 1])) &&
        (i + word.size() >= text.size() ||
         !isIdentChar(text[i + word.size()]))) {
      out += with;
      i += word.size();
      continue;
    }
    out += text[i++];
  }
  return out;
}

/// Some test inputs are templates (the tests substitute ELEMENT, K,
/// NUM_STAGES...): instantiate them twice, the way the tests do.
std::vector<std::string> instantiate(StringRef text) {
  if (!text.contains("substituted"))
    return {text.str()};
  struct Variant {
    const char *element, *k, *stages;
  };
  std::vector<std::string> variants;
  for (const Variant &v :
       {Variant{"bf16", "64", "2"}, Variant{"f8E4M3FN", "128", "3"}}) {
    std::string k = v.k;
    std::pair<const char *, std::string> substitutions[] = {
        {"A_TILE", "[m, " + k + "]"},
        {"B_TILE", "[n, " + k + "]"},
        {"A_ROW", k},
        {"B_ROW", k},
        {"FLAGS", "transpose_b"},
        {"ELEMENT", v.element},
        {"EPILOGUE", "arith.addf %x, %x : f32"},
        {"THREADS", "128"},
        {"POLICY", "square"},
        {"NUM_STAGES", v.stages},
        {"K", k}};
    std::string t = text.str();
    for (const auto &[word, with] : substitutions)
      t = replaceWord(t, word, with);
    variants.push_back(std::move(t));
  }
  return variants;
}

/// Adds `path` (a file, split at `// -----` like lit's -split-input-file) or
/// every .mlir file under it (directories named "findings" excepted: they
/// hold reproducers of known crashes).
void loadCorpus(StringRef path, std::vector<std::string> &files) {
  if (llvm::sys::fs::is_directory(path)) {
    std::error_code ec;
    for (llvm::sys::fs::recursive_directory_iterator it(path, ec), end;
         it != end && !ec; it.increment(ec)) {
      if (llvm::sys::path::filename(it->path()) == "findings") {
        it.no_push();
        continue;
      }
      if (StringRef(it->path()).ends_with(".mlir") &&
          !llvm::sys::fs::is_directory(it->path()))
        files.push_back(it->path());
    }
    return;
  }
  files.push_back(path.str());
}

Corpus buildCorpus() {
  std::vector<std::string> files;
  for (const std::string &path : corpusPaths)
    loadCorpus(path, files);
  llvm::sort(files); // directory order is not deterministic
  files.erase(std::unique(files.begin(), files.end()), files.end());

  Corpus corpus;
  llvm::StringSet<> opNames, words;
  for (const std::string &file : files) {
    auto buffer = llvm::MemoryBuffer::getFile(file);
    if (!buffer) {
      llvm::errs() << "hisa-fuzz: cannot read " << file << "\n";
      continue;
    }
    std::vector<std::string> chunk;
    unsigned part = 0;
    auto flush = [&]() {
      bool blank = llvm::all_of(chunk, [](const std::string &line) {
        StringRef trimmed = StringRef(line).trim();
        return trimmed.empty() || trimmed.starts_with("//");
      });
      if (!blank) {
        std::vector<std::string> variants = instantiate(joinLines(chunk));
        for (size_t v = 0; v < variants.size(); ++v) {
          Seed seed;
          seed.name = file + (part ? "#" + std::to_string(part) : "") +
                      (v ? "~" + std::to_string(v) : "");
          seed.text = variants[v];
          seed.lines = splitLines(seed.text);
          corpus.seeds.push_back(std::move(seed));
        }
      }
      chunk.clear();
      ++part;
    };
    for (const std::string &line : splitLines((*buffer)->getBuffer())) {
      StringRef trimmed = StringRef(line).trim();
      if (trimmed.starts_with("// -----")) {
        flush();
        continue;
      }
      // Test directives only dilute line mutations.
      if (trimmed.starts_with("// RUN") || trimmed.starts_with("// CHECK"))
        continue;
      chunk.push_back(line);
    }
    flush();
  }

  for (size_t i = 0; i < corpus.seeds.size(); ++i) {
    bool negative = StringRef(corpus.seeds[i].text).contains("expected-error");
    for (int k = negative ? 1 : 4; k; --k)
      corpus.draw.push_back(i);
    if (!negative)
      corpus.positive.push_back(i);
  }

  for (const Seed &seed : corpus.seeds) {
    StringRef text = seed.text;
    for (size_t i = 0; i < text.size();) {
      if (isIdentStart(text[i]) &&
          (i == 0 || (text[i - 1] != '%' && text[i - 1] != '@' &&
                      !isIdentChar(text[i - 1])))) {
        size_t j = i;
        while (j < text.size() && isIdentChar(text[j]))
          ++j;
        StringRef word = text.slice(i, j);
        if (word.contains('.'))
          opNames.insert(word);
        else if (word.size() > 1)
          words.insert(word);
        i = j;
        continue;
      }
      ++i;
    }
  }
  for (const auto &entry : opNames)
    corpus.opNames.push_back(entry.getKey().str());
  for (const auto &entry : words)
    corpus.words.push_back(entry.getKey().str());
  llvm::sort(corpus.opNames);
  llvm::sort(corpus.words);
  return corpus;
}

//===----------------------------------------------------------------------===//
// Mutations
//===----------------------------------------------------------------------===//

std::vector<std::string> splitWords(StringRef words) {
  std::vector<std::string> result;
  for (StringRef word : llvm::split(words, ' '))
    if (!word.empty())
      result.push_back(word.str());
  return result;
}

/// Boundaries of the integer types, 2^31, 2^32, 2^40, 2^62, INT64_MAX/MIN,
/// 2^63 and 2^64 (do not fit), tile-ish sizes and their neighbours.
const std::vector<std::string> &interestingInts() {
  static const std::vector<std::string> values = splitWords(
      "0 1 -1 2 3 4 7 8 16 31 32 33 63 64 65 96 127 128 129 255 256 257 512 "
      "1023 1024 4096 65536 1048576 2147483647 2147483648 -2147483648 "
      "4294967295 4294967296 1099511627776 281474976710656 "
      "4611686018427387904 9223372036854775807 -9223372036854775808 "
      "9223372036854775808 18446744073709551616 99999999999999999999999999");
  return values;
}

const std::vector<std::string> &elementTypes() {
  static const std::vector<std::string> types = splitWords(
      "f8E4M3FN f8E5M2 bf16 f16 f32 f64 tf32 i1 i8 i16 i32 i64 index i4 ui8 "
      "f8E4M3FNUZ f4E2M1FN none complex<f32> vector<4xf32> memref<4xf32>");
  return types;
}

const std::vector<std::string> &garbageTokens() {
  static const std::vector<std::string> garbage = [] {
    std::vector<std::string> tokens = splitWords(
        "} { % [ ] ? * < > ( ) , : = \" #tile. !tile.frag<[ tile.launch - 0x "
        "// ^bb0: loc( ... @ ! # \xff");
    tokens.push_back(std::string(1, '\0'));
    tokens.push_back("\n");
    return tokens;
  }();
  return garbage;
}

enum class TokKind { Int, Ident, SSA, Symbol, Other };

struct Token {
  size_t begin, end;
  TokKind kind;
};

/// A rough MLIR lexer: enough to pick integers, words and SSA names.
std::vector<Token> tokenize(StringRef text) {
  std::vector<Token> tokens;
  size_t i = 0, n = text.size();
  while (i < n) {
    char c = text[i];
    if (llvm::isSpace(c)) {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n')
        ++i;
      continue;
    }
    size_t j = i + 1;
    TokKind kind = TokKind::Other;
    if (llvm::isDigit(c) ||
        (c == '-' && i + 1 < n && llvm::isDigit(text[i + 1]))) {
      while (j < n && llvm::isDigit(text[j]))
        ++j;
      // Floats, hex and dimension lists like 4x8xf32 are not plain ints.
      kind =
          (j < n && (text[j] == '.' || text[j] == 'x' || isIdentStart(text[j])))
              ? TokKind::Other
              : TokKind::Int;
      while (j < n && (isIdentChar(text[j])))
        ++j;
    } else if (isIdentStart(c)) {
      while (j < n && isIdentChar(text[j]))
        ++j;
      kind = TokKind::Ident;
    } else if (c == '%' || c == '@' || c == '^') {
      while (j < n && (isIdentChar(text[j]) || text[j] == '#'))
        ++j;
      kind = c == '%' ? TokKind::SSA : TokKind::Symbol;
    } else if (c == '"') {
      while (j < n && text[j] != '"' && text[j] != '\n')
        ++j;
      if (j < n)
        ++j;
    }
    tokens.push_back({i, j, kind});
    i = j;
  }
  return tokens;
}

class Mutator {
public:
  Mutator(const Corpus &corpus, Rng &rng) : corpus(corpus), rng(rng) {}

  /// Applies one random mutation to `text`; returns its name. `semantic`
  /// favours changes that keep the text parseable (values, shapes, types,
  /// parameters), for inputs meant to reach the passes.
  std::string mutate(std::string &text, bool semantic) {
    struct Choice {
      unsigned weight, semanticWeight;
      const char *name;
      bool (Mutator::*fn)(std::string &);
    };
    static const Choice choices[] = {
        {20, 30, "int", &Mutator::replaceInt},
        {10, 10, "type", &Mutator::swapType},
        {8, 4, "word", &Mutator::replaceWord},
        {5, 2, "ssa", &Mutator::swapSSA},
        {10, 20, "shape", &Mutator::mutateShape},
        {6, 15, "params", &Mutator::mutateParamsBlock},
        {6, 5, "del-line", &Mutator::deleteLine},
        {4, 3, "dup-line", &Mutator::duplicateLine},
        {2, 1, "swap-lines", &Mutator::swapLines},
        {5, 1, "splice", &Mutator::spliceLine},
        {2, 3, "concat", &Mutator::concatSeed},
        {5, 1, "del-token", &Mutator::deleteToken},
        {3, 1, "dup-token", &Mutator::duplicateToken},
        {2, 0, "truncate", &Mutator::truncate},
        {2, 0, "flip", &Mutator::flipByte},
        {3, 1, "garbage", &Mutator::insertGarbage},
    };
    everywhereBias = semantic ? 30 : 0;
    auto weight = [&](const Choice &choice) {
      return semantic ? choice.semanticWeight : choice.weight;
    };
    unsigned total = 0;
    for (const Choice &choice : choices)
      total += weight(choice);
    // A mutation may not apply (no integer to replace...): try another.
    for (int attempt = 0; attempt < 8; ++attempt) {
      unsigned r = rng.below(total);
      for (const Choice &choice : choices) {
        if (r >= weight(choice)) {
          r -= weight(choice);
          continue;
        }
        if ((this->*choice.fn)(text))
          return choice.name;
        break;
      }
    }
    return "none";
  }

  std::string interestingInt(StringRef original) {
    if (!original.empty() && rng.chance(25)) {
      int64_t value;
      if (!original.getAsInteger(10, value)) {
        switch (rng.below(4)) {
        case 0:
          return std::to_string(value + 1);
        case 1:
          return std::to_string(value - 1);
        case 2:
          return std::to_string(value * 2);
        default:
          return std::to_string(value / 2);
        }
      }
    }
    return rng.pick(interestingInts());
  }

private:
  const Corpus &corpus;
  Rng &rng;
  /// Added to the chance of changing every occurrence of a token.
  unsigned everywhereBias = 0;

  bool everywhere(unsigned percent) {
    return rng.chance(std::min(100u, percent + everywhereBias));
  }

  std::optional<Token> pickToken(StringRef text, TokKind kind) {
    std::vector<Token> all = tokenize(text), matching;
    for (const Token &token : all)
      if (token.kind == kind)
        matching.push_back(token);
    if (matching.empty())
      return std::nullopt;
    return rng.pick(matching);
  }

  /// Replaces the token, or (sometimes) every identical token, so that
  /// consistent changes (every `128` or every `[kb, dim]`) get past the
  /// verifier and reach the lowering.
  void replace(std::string &text, size_t begin, size_t end,
               const std::string &with, bool everywhere) {
    std::string old = text.substr(begin, end - begin);
    if (!everywhere || old.empty()) {
      text.replace(begin, end - begin, with);
      return;
    }
    std::string result;
    size_t pos = 0;
    while (true) {
      size_t hit = text.find(old, pos);
      if (hit == std::string::npos)
        break;
      bool wordLike = isIdentChar(old.front());
      bool boundary = !wordLike || ((hit == 0 || !isIdentChar(text[hit - 1])) &&
                                    (hit + old.size() >= text.size() ||
                                     !isIdentChar(text[hit + old.size()])));
      result.append(text, pos, hit - pos);
      result += boundary ? with : old;
      pos = hit + old.size();
    }
    result.append(text, pos, std::string::npos);
    text = std::move(result);
  }

  bool replaceInt(std::string &text) {
    auto token = pickToken(text, TokKind::Int);
    if (!token)
      return false;
    std::string with =
        interestingInt(StringRef(text).slice(token->begin, token->end));
    replace(text, token->begin, token->end, with, everywhere(30));
    return true;
  }

  bool swapType(std::string &text) {
    std::vector<Token> types;
    for (const Token &token : tokenize(text)) {
      if (token.kind != TokKind::Ident)
        continue;
      std::string word = text.substr(token.begin, token.end - token.begin);
      if (llvm::is_contained(elementTypes(), word))
        types.push_back(token);
    }
    if (types.empty())
      return false;
    const Token &token = rng.pick(types);
    replace(text, token.begin, token.end, rng.pick(elementTypes()),
            everywhere(30));
    return true;
  }

  bool replaceWord(std::string &text) {
    auto token = pickToken(text, TokKind::Ident);
    if (!token)
      return false;
    StringRef word = StringRef(text).slice(token->begin, token->end);
    const std::vector<std::string> &pool =
        word.contains('.') && !corpus.opNames.empty() ? corpus.opNames
                                                      : corpus.words;
    if (pool.empty())
      return false;
    replace(text, token->begin, token->end, rng.pick(pool), everywhere(20));
    return true;
  }

  bool swapSSA(std::string &text) {
    std::vector<Token> names;
    for (const Token &token : tokenize(text))
      if (token.kind == TokKind::SSA)
        names.push_back(token);
    if (names.size() < 2)
      return false;
    const Token &token = rng.pick(names);
    const Token &other = rng.pick(names);
    std::string with = rng.chance(10)
                           ? "%undefined"
                           : text.substr(other.begin, other.end - other.begin);
    text.replace(token.begin, token.end - token.begin, with);
    return true;
  }

  /// Finds a bracketed list `[...]` (shapes, parallel domains, indices).
  std::optional<std::pair<size_t, size_t>> pickBrackets(StringRef text) {
    std::vector<std::pair<size_t, size_t>> spans;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] != '[')
        continue;
      size_t close = text.find_first_of("[]\n", i + 1);
      if (close != StringRef::npos && text[close] == ']')
        spans.push_back({i + 1, close});
    }
    if (spans.empty())
      return std::nullopt;
    return rng.pick(spans);
  }

  std::string randomDim(StringRef list) {
    SmallVector<StringRef> elements;
    list.split(elements, ',');
    switch (rng.below(6)) {
    case 0:
      return "?";
    case 1:
      if (!elements.empty()) {
        std::string e = elements[rng.below(elements.size())].trim().str();
        return e + "*" + e;
      }
      return "kb*kb";
    case 2:
      return rng.pick(corpus.words);
    case 3: {
      // A product of several parameter names.
      std::string product = rng.pick(corpus.words);
      for (size_t k = rng.below(3); k; --k)
        product += "*" + rng.pick(corpus.words);
      return product;
    }
    default:
      return interestingInt("");
    }
  }

  bool mutateShape(std::string &text) {
    auto span = pickBrackets(text);
    if (!span)
      return false;
    auto [begin, end] = *span;
    std::string list = text.substr(begin, end - begin);
    SmallVector<StringRef> elements;
    StringRef(list).split(elements, ',');
    std::vector<std::string> dims;
    for (StringRef e : elements)
      dims.push_back(e.trim().str());
    switch (rng.below(5)) {
    case 0: // drop a dimension
      if (!dims.empty())
        dims.erase(dims.begin() + rng.below(dims.size()));
      break;
    case 1: // duplicate one
      if (!dims.empty()) {
        size_t k = rng.below(dims.size());
        dims.insert(dims.begin() + k, dims[k]);
      }
      break;
    case 2: // empty list
      dims.clear();
      break;
    default: // replace one
      if (dims.empty())
        dims.push_back(randomDim(list));
      else
        dims[rng.below(dims.size())] = randomDim(list);
      break;
    }
    std::string with;
    for (size_t k = 0; k < dims.size(); ++k)
      with += (k ? ", " : "") + dims[k];
    replace(text, begin, end, with, everywhere(50));
    return true;
  }

  /// `params {a = 1, b = 2}`: new values, duplicates, removals, unknowns.
  bool mutateParamsBlock(std::string &text) {
    size_t at = text.find("params {");
    if (at == std::string::npos)
      return false;
    size_t begin = at + strlen("params {");
    size_t end = text.find('}', begin);
    if (end == std::string::npos)
      return false;
    SmallVector<StringRef> entries;
    StringRef(text).slice(begin, end).split(entries, ',');
    std::vector<std::string> list;
    for (StringRef e : entries)
      if (!e.trim().empty())
        list.push_back(e.trim().str());
    switch (rng.below(5)) {
    case 0:
    case 1:
      if (!list.empty()) {
        std::string &entry = list[rng.below(list.size())];
        std::string name = StringRef(entry).split('=').first.trim().str();
        entry = name + " = " + interestingInt("");
      }
      break;
    case 2:
      if (!list.empty())
        list.push_back(list[rng.below(list.size())]);
      break;
    case 3:
      if (!list.empty())
        list.erase(list.begin() + rng.below(list.size()));
      break;
    default:
      list.push_back(rng.pick(corpus.words) + " = " + interestingInt(""));
      break;
    }
    std::string with;
    for (size_t k = 0; k < list.size(); ++k)
      with += (k ? ", " : "") + list[k];
    text.replace(begin, end - begin, with);
    return true;
  }

  bool deleteLine(std::string &text) {
    std::vector<std::string> lines = splitLines(text);
    if (lines.empty())
      return false;
    size_t at = rng.below(lines.size());
    size_t count = rng.chance(80) ? 1 : 1 + rng.below(8);
    lines.erase(lines.begin() + at,
                lines.begin() + std::min(lines.size(), at + count));
    text = joinLines(lines);
    return true;
  }

  bool duplicateLine(std::string &text) {
    std::vector<std::string> lines = splitLines(text);
    if (lines.empty())
      return false;
    std::string line = rng.pick(lines);
    lines.insert(lines.begin() + rng.below(lines.size() + 1), line);
    text = joinLines(lines);
    return true;
  }

  bool swapLines(std::string &text) {
    std::vector<std::string> lines = splitLines(text);
    if (lines.size() < 2)
      return false;
    std::swap(lines[rng.below(lines.size())], lines[rng.below(lines.size())]);
    text = joinLines(lines);
    return true;
  }

  /// A line of another corpus file, inserted or in place of one.
  bool spliceLine(std::string &text) {
    const Seed &other = rng.pick(corpus.seeds);
    if (other.lines.empty())
      return false;
    std::vector<std::string> lines = splitLines(text);
    size_t at = rng.below(lines.size() + 1);
    size_t from = rng.below(other.lines.size());
    size_t count = rng.chance(70) ? 1 : 1 + rng.below(6);
    std::vector<std::string> piece(
        other.lines.begin() + from,
        other.lines.begin() + std::min(other.lines.size(), from + count));
    if (at < lines.size() && rng.chance(50))
      lines.erase(lines.begin() + at);
    lines.insert(lines.begin() + std::min(at, lines.size()), piece.begin(),
                 piece.end());
    text = joinLines(lines);
    return true;
  }

  /// Another whole seed after this one: modules with several kernels, and
  /// clashing symbol names (two @k, a kernel next to a gpu.module).
  bool concatSeed(std::string &text) {
    const Seed &other = corpus.seeds[rng.pick(corpus.draw)];
    text += "\n" + other.text;
    return true;
  }

  bool deleteToken(std::string &text) {
    std::vector<Token> tokens = tokenize(text);
    if (tokens.empty())
      return false;
    const Token &token = rng.pick(tokens);
    text.erase(token.begin, token.end - token.begin);
    return true;
  }

  bool duplicateToken(std::string &text) {
    std::vector<Token> tokens = tokenize(text);
    if (tokens.empty())
      return false;
    const Token &token = rng.pick(tokens);
    const Token &where = rng.pick(tokens);
    text.insert(where.begin,
                text.substr(token.begin, token.end - token.begin) + " ");
    return true;
  }

  bool truncate(std::string &text) {
    if (text.empty())
      return false;
    text.resize(rng.below(text.size()));
    return true;
  }

  bool flipByte(std::string &text) {
    if (text.empty())
      return false;
    text[rng.below(text.size())] ^= char(1u << rng.below(8));
    return true;
  }

  bool insertGarbage(std::string &text) {
    std::vector<Token> tokens = tokenize(text);
    size_t at = tokens.empty() ? 0 : rng.pick(tokens).begin;
    text.insert(at, rng.pick(garbageTokens()));
    return true;
  }
};

/// Names declared in `params {a = 1, ...}` blocks of the text.
std::vector<std::string> declaredParams(StringRef text) {
  std::vector<std::string> names;
  size_t at = 0;
  while ((at = text.find("params {", at)) != StringRef::npos) {
    at += strlen("params {");
    size_t end = text.find('}', at);
    if (end == StringRef::npos)
      break;
    SmallVector<StringRef> entries;
    text.slice(at, end).split(entries, ',');
    for (StringRef entry : entries) {
      StringRef name = entry.split('=').first.trim();
      if (!name.empty() && !llvm::is_contained(names, name.str()))
        names.push_back(name.str());
    }
  }
  return names;
}

/// Mutated bindings "name=value,...": huge, zero and negative values,
/// duplicate and unknown names, malformed entries.
std::string mutateParamList(StringRef text, Mutator &mutator, Rng &rng) {
  std::vector<std::string> names = declaredParams(text);
  static const std::vector<std::string> plausible =
      splitWords("1 2 4 8 16 32 64 128 256 512");
  static const std::vector<std::string> malformed = {
      "", "abc", "1.5", "0x10", "-", "1e3", "+4", "4 4", "=", "kb"};
  std::vector<std::string> bindings;
  // Kernels without parameters mostly keep their (empty) bindings: every
  // name would be refused as undeclared.
  size_t count =
      names.empty() && rng.chance(80) ? 0 : rng.below(names.size() + 2);
  for (size_t k = 0; k < count; ++k) {
    std::string name;
    unsigned r = rng.below(100);
    if (r < 85 && !names.empty())
      name = rng.pick(names);
    else if (r < 92 && !bindings.empty())
      name = StringRef(rng.pick(bindings)).split('=').first.str();
    else
      name = rng.pick(splitWords("zz KB kb dim heads block_q x.y"));
    std::string value;
    r = rng.below(100);
    if (r < 45)
      value = rng.pick(plausible);
    else if (r < 92)
      value = mutator.interestingInt("");
    else
      value = rng.pick(malformed);
    if (rng.chance(3))
      bindings.push_back(name); // no '='
    else
      bindings.push_back(name + "=" + value);
  }
  return llvm::join(bindings, ",");
}

/// tile-to-nvvm options: mutated bindings and targets.
std::string mutateBindings(StringRef text, Mutator &mutator, Rng &rng) {
  std::string list = mutateParamList(text, mutator, rng);
  std::string options = list.empty() ? "" : "params=" + list;
  auto add = [&](StringRef option) {
    if (!options.empty())
      options += " ";
    options += option;
  };
  // The target options of tile-to-nvvm (see hisa-opt --help).
  if (rng.chance(10))
    add("chip=" + (rng.chance(50)
                       ? randomChip(rng)
                       : rng.pick(splitWords(
                             "sm_80 sm_86 sm_89 sm_90 sm_90a sm_70 sm_100a "
                             "sm_120a sm_ sm_90b gfx90a sm_4294967296 "
                             "sm_90a,-tma"))));
  if (rng.chance(10))
    add("features=" +
        rng.pick(splitWords("-tma -tma -tma +tma -tma,+tma +ptx80 garbage "
                            "+narrow-indices +narrow-indices,-tma "
                            "-narrow-indices +elide-sync +elide-sync "
                            "+elide-sync,-tma -elide-sync")));
  if (rng.chance(3))
    add("opt-level=" + rng.pick(splitWords("0 1 2 -1 99")));
  return options;
}

std::vector<Mode> campaignModes() {
  std::vector<Mode> modes;
  SmallVector<StringRef> names;
  StringRef(modesOpt).split(names, ',');
  for (StringRef name : names) {
    name = name.trim();
    if (name == "mix") {
      // Weighted: PTX serialization is the slowest and deepest.
      for (Mode mode : {Mode::Parse, Mode::Parse, Mode::Parse, Mode::NVVM,
                        Mode::NVVM, Mode::NVVM, Mode::Params, Mode::Params,
                        Mode::Params, Mode::PTX, Mode::Report})
        modes.push_back(mode);
      continue;
    }
    std::optional<Mode> mode = parseMode(name);
    if (!mode) {
      llvm::errs() << "hisa-fuzz: unknown mode '" << name << "'\n";
      exit(2);
    }
    modes.push_back(*mode);
  }
  return modes;
}

Input generateInput(const Corpus &corpus, const std::vector<Mode> &modes,
                    uint64_t seed, uint64_t index) {
  Rng rng(seed * 0x100000001b3ULL ^ (index + 1) * 0x9e3779b97f4a7c15ULL);
  rng.next();
  Input input;
  input.mode = rng.pick(modes);
  bool lowering = input.mode != Mode::Parse;
  const Seed &base =
      corpus.seeds[lowering && !corpus.positive.empty() && rng.chance(90)
                       ? rng.pick(corpus.positive)
                       : rng.pick(corpus.draw)];
  input.text = base.text;
  input.origin = base.name;
  Mutator mutator(corpus, rng);

  // Valid kernels with mutated bindings only are the way to deep defects of
  // the lowering, so parameter modes often leave the text alone.
  // Few stacked mutations for the lowering modes: each one makes it likelier
  // that the verifier refuses the input before the passes see it.
  unsigned mutations;
  if (input.mode != Mode::Parse && input.mode != Mode::NVVM && rng.chance(40))
    mutations = 0;
  else if (rng.chance(lowering ? 70 : 40))
    mutations = 1;
  else if (lowering)
    mutations = 2;
  else
    mutations = 2 + rng.below(std::max(1u, unsigned(maxMutationsOpt) - 1));
  for (unsigned k = 0; k < mutations; ++k)
    input.origin += " " + mutator.mutate(input.text, lowering);
  if (input.mode == Mode::Params || input.mode == Mode::PTX)
    input.options = mutateBindings(input.text, mutator, rng);
  // (After the draws above, so that a campaign's inputs are the same with
  // and without --features but for them.)
  if (!featuresOpt.empty() && input.mode != Mode::Parse &&
      input.mode != Mode::JIT && input.mode != Mode::Report &&
      !StringRef(input.options).contains("features=") &&
      !StringRef(input.options).contains("chip=sm_90a,"))
    input.options += (input.options.empty() ? "features=" : " features=") +
                     featuresOpt.getValue();
  if (input.mode == Mode::JIT) {
    // The JIT's own spellings: "heads=32,dim=64" and "sm_90a,-tma".
    input.options = "params=" + mutateParamList(input.text, mutator, rng);
    if (rng.chance(30))
      input.options +=
          " target=" +
          (rng.chance(50)
               ? randomChip(rng)
               : rng.pick(splitWords(
                     "sm_90a,-tma sm_90a,+tma sm_80 sm_90 sm_86 sm_70 sm_100a "
                     "sm_90a,-tma,-tma sm_90a, , garbage sm_90a,+ptx80 "
                     "sm_4294967296 sm_90a,+narrow-indices "
                     "sm_90a,-tma,+narrow-indices sm_80,+narrow-indices")));
  }
  return input;
}

//===----------------------------------------------------------------------===//
// The child: parse, verify, lower, serialize.
//===----------------------------------------------------------------------===//

constexpr int kExitRoundTrip = 3;
constexpr int kExitHang = 124;

/// Hex without printf: signal handlers may only use async-signal-safe calls.
void writeHex(int fd, uintptr_t value) {
  char buffer[2 + 16 + 1];
  int pos = sizeof(buffer);
  buffer[--pos] = '\n';
  do {
    buffer[--pos] = "0123456789abcdef"[value & 15];
    value >>= 4;
  } while (value);
  buffer[--pos] = 'x';
  buffer[--pos] = '0';
  (void)!write(fd, buffer + pos, sizeof(buffer) - pos);
}

/// What the child is doing (parse, a pass, serialize), for signatures; read
/// by the signal handlers, so a fixed buffer.
char currentPhase[128] = "start";

void setPhase(StringRef phase) {
  size_t n = std::min(phase.size(), sizeof(currentPhase) - 1);
  memcpy(currentPhase, phase.data(), n);
  currentPhase[n] = '\0';
}

void writePhase() {
  static const char tag[] = "\nHISA-FUZZ-PHASE ";
  (void)!write(2, tag, sizeof(tag) - 1);
  (void)!write(2, currentPhase, strlen(currentPhase));
  (void)!write(2, "\n", 1);
}

/// Names the running pass; a failed pass stays named.
struct PhaseTracker : public PassInstrumentation {
  std::vector<std::string> stack;
  bool failed = false;
  void runBeforePass(Pass *pass, Operation *) override {
    if (failed)
      return;
    stack.push_back(pass->getArgument().empty() ? pass->getName().str()
                                                : pass->getArgument().str());
    setPhase(stack.back());
  }
  void runAfterPass(Pass *, Operation *) override {
    if (failed || stack.empty())
      return;
    stack.pop_back();
    setPhase(stack.empty() ? "pipeline" : stack.back());
  }
  void runAfterPassFailed(Pass *, Operation *) override { failed = true; }
};

void writeFrames(int sig) {
  static const char header[] = "\nHISA-FUZZ-SIGNAL ";
  (void)!write(2, header, sizeof(header) - 1);
  writeHex(2, sig);
  writePhase();
  void *frames[48];
  int count = backtrace(frames, 48);
  for (int i = 0; i < count; ++i) {
    static const char tag[] = "HISA-FUZZ-FRAME ";
    (void)!write(2, tag, sizeof(tag) - 1);
    writeHex(2, reinterpret_cast<uintptr_t>(frames[i]));
  }
}

void onFatalSignal(int sig) {
  writeFrames(sig);
  signal(sig, SIG_DFL);
  raise(sig);
}

void onCpuLimit(int sig) {
  writeFrames(sig);
  _exit(kExitHang);
}

void setUpChild(int stderrFd) {
  // Limits first: the parent's mappings count towards RLIMIT_AS as well.
  if (memLimitOpt) {
    rlim_t bytes = rlim_t(memLimitOpt) << 20;
    struct rlimit memory = {bytes, bytes};
    setrlimit(RLIMIT_AS, &memory);
  }
  struct rlimit fileSize = {64u << 20, 64u << 20};
  setrlimit(RLIMIT_FSIZE, &fileSize);
  struct rlimit core = {0, 0};
  setrlimit(RLIMIT_CORE, &core);
  signal(SIGXFSZ, SIG_IGN);

  // A stack overflow (deep recursion) must still print its frames.
  static char altStack[1 << 16];
  stack_t ss = {};
  ss.ss_sp = altStack;
  ss.ss_size = sizeof(altStack);
  sigaltstack(&ss, nullptr);
  struct sigaction action = {};
  action.sa_handler = onFatalSignal;
  action.sa_flags = SA_ONSTACK;
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP})
    sigaction(sig, &action, nullptr);
  action.sa_handler = onCpuLimit;
  sigaction(SIGPROF, &action, nullptr);

  // CPU time, not wall time: a loaded machine (a build) is not a hang.
  double seconds = timeoutOpt;
  struct itimerval timer = {};
  timer.it_value.tv_sec = time_t(seconds);
  timer.it_value.tv_usec =
      suseconds_t((seconds - double(time_t(seconds))) * 1e6);
  setitimer(ITIMER_PROF, &timer, nullptr);

  int devNull = open("/dev/null", O_RDWR);
  dup2(devNull, 0);
  dup2(devNull, 1);
  dup2(stderrFd, 2);
}

[[noreturn]] void exitChild(int code) {
  if (code != 0)
    writePhase();
  _exit(code);
}

/// The runtime library's compile entry point, loaded by the parent
/// (RTLD_LOCAL: it carries its own LLVM).
using JitCompileFn = int (*)(const char *, const char *, const char *,
                             const char *, char *, int64_t);
using JitLastErrorFn = const char *(*)();
JitCompileFn jitCompile;
JitLastErrorFn jitLastError;

bool loadRuntime() {
  std::string path = runtimeLibOpt;
  if (path.empty()) {
    SmallString<256> exe(
        llvm::sys::fs::getMainExecutable(nullptr, (void *)&loadRuntime));
    llvm::sys::path::remove_filename(exe);
    llvm::sys::path::append(exe, "..", "lib", "libhisa_runtime.so");
    path = exe.str().str();
  }
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle) {
    jitCompile =
        reinterpret_cast<JitCompileFn>(dlsym(handle, "hisa_kernel_compile"));
    jitLastError =
        reinterpret_cast<JitLastErrorFn>(dlsym(handle, "hisa_last_error"));
  }
  if (!jitCompile || !jitLastError) {
    llvm::errs() << "hisa-fuzz: cannot load the runtime library " << path
                 << ": " << dlerror() << "\n";
    return false;
  }
  return true;
}

/// jit mode: "params=a=1,b=2 target=sm_90a,-tma" -> hisa_kernel_compile.
[[noreturn]] void runJit(const Input &input) {
  setPhase("jit");
  StringRef options = input.options, params, target = "sm_90a";
  size_t at = options.rfind(" target=");
  if (at != StringRef::npos) {
    target = options.substr(at + strlen(" target="));
    options = options.take_front(at);
  }
  if (options.consume_front("params="))
    params = options;
  // The first kernel of the source.
  StringRef text = input.text, name = "k";
  size_t kernel = text.find("tile.kernel @");
  if (kernel != StringRef::npos) {
    StringRef rest = text.substr(kernel + strlen("tile.kernel @"));
    name = rest.take_while(isIdentChar);
  }
  int status =
      jitCompile(input.text.c_str(), name.str().c_str(), params.str().c_str(),
                 target.str().c_str(), nullptr, 0);
  if (status == 0)
    exitChild(0);
  const char *error = jitLastError();
  if (error && *error)
    llvm::errs() << "error: " << error << "\n";
  exitChild(1);
}

[[noreturn]] void runChild(MLIRContext &context, const Input &input,
                           int stderrFd) {
  setUpChild(stderrFd);
  if (input.mode == Mode::JIT)
    runJit(input);
  setPhase("parse");

  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  unsigned bufferId = sourceMgr->AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(input.text, "input.mlir"),
      llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(*sourceMgr, &context, llvm::errs());
  // As hisa-opt, hisa-translate and the JIT do before parsing.
  if (hisa::reportSourceLimitViolation(*sourceMgr, bufferId))
    exitChild(1);

  ParserConfig config(&context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, config);
  if (!module)
    exitChild(1);

  if (input.mode != Mode::Parse) {
    setPhase("pipeline");
    PassManager pm(&context);
    pm.addInstrumentation(std::make_unique<PhaseTracker>());
    std::string pipeline = input.mode == Mode::Report
                               ? std::string(kReportPipeline)
                               : "tile-to-nvvm";
    if (input.mode != Mode::Report && !input.options.empty())
      pipeline += "{" + input.options + "}";
    std::string pipelineErrors;
    llvm::raw_string_ostream errorStream(pipelineErrors);
    if (failed(parsePassPipeline(pipeline, pm, errorStream))) {
      llvm::errs() << "error: invalid pipeline '" << pipeline
                   << "': " << pipelineErrors << "\n";
      exitChild(1);
    }
    if (failed(pm.run(*module)))
      exitChild(1);
    if (input.mode == Mode::PTX) {
      setPhase("serialize");
      std::string ptx;
      llvm::raw_string_ostream ptxStream(ptx);
      if (failed(hisa::serializeGPUModules(*module, ptxStream, "isa")))
        exitChild(1);
      exitChild(0);
    }
  }

  if (roundTripOpt) {
    // What hisa-opt prints must parse again (hisa-opt | hisa-translate).
    setPhase("print");
    std::string printed;
    llvm::raw_string_ostream os(printed);
    module->print(os);
    setPhase("reparse");
    auto reparsedMgr = std::make_shared<llvm::SourceMgr>();
    reparsedMgr->AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(printed, "printed.mlir"),
        llvm::SMLoc());
    SourceMgrDiagnosticHandler reparsedHandler(*reparsedMgr, &context,
                                               llvm::errs());
    OwningOpRef<ModuleOp> reparsed =
        parseSourceFile<ModuleOp>(reparsedMgr, config);
    if (!reparsed) {
      llvm::errs() << "HISA-FUZZ: printed module does not parse back\n";
      exitChild(kExitRoundTrip);
    }
    // Reading the output back must not change it (an attribute or type
    // that prints a value its parser reads differently).
    std::string reprinted;
    llvm::raw_string_ostream reprintedStream(reprinted);
    reparsed->print(reprintedStream);
    if (reprinted != printed) {
      llvm::errs() << "HISA-FUZZ: printed module changes when read back\n";
      exitChild(kExitRoundTrip);
    }
  }
  exitChild(0);
}

//===----------------------------------------------------------------------===//
// Classification and signatures
//===----------------------------------------------------------------------===//

enum class Outcome { Ok, Rejected, Crash, Hang };

struct Result {
  Outcome outcome = Outcome::Ok;
  std::string signature; // crashes and hangs
  std::string log;       // the child's stderr (tail)
  double seconds = 0;
};

/// Function symbols of the running executable, to name crash frames (the
/// tools link LLVM statically, so dladdr sees almost nothing).
class Symbolizer {
public:
  std::string name(uintptr_t address) {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void *>(address), &info) || !info.dli_fname)
      return "??";
    if (info.dli_sname)
      return shorten(llvm::demangle(info.dli_sname));
    // Not exported (the tools and the runtime link LLVM statically, with
    // hidden symbols): look in the module's own symbol table.
    Module &module = modules[info.dli_fname];
    if (!module.loaded)
      module.load(isMainExecutable(info) ? "/proc/self/exe" : info.dli_fname);
    uintptr_t base = reinterpret_cast<uintptr_t>(info.dli_fbase);
    uintptr_t offset = module.pie ? address - base : address;
    auto it = llvm::upper_bound(module.symbols, offset,
                                [](uintptr_t value, const Symbol &symbol) {
                                  return value < symbol.address;
                                });
    if (it != module.symbols.begin()) {
      --it;
      if (offset < it->address + std::max<uint64_t>(it->size, 1))
        return it->name;
    }
    return llvm::sys::path::filename(info.dli_fname).str() + "+?";
  }

  static std::string shorten(std::string name) {
    // Drop parameter lists and template arguments: the signature keeps the
    // qualified function name only.
    size_t anon;
    while ((anon = name.find("(anonymous namespace)")) != std::string::npos)
      name.replace(anon, strlen("(anonymous namespace)"), "anon");
    size_t paren = name.find('(');
    if (paren != std::string::npos && paren > 0)
      name.resize(paren);
    std::string out;
    int depth = 0;
    for (size_t i = 0; i < name.size(); ++i) {
      char c = name[i];
      bool isOperator = StringRef(name).take_front(i).ends_with("operator");
      if (c == '<' && !isOperator) {
        if (depth++ == 0)
          out += "<>";
        continue;
      }
      if (c == '>' && depth > 0) {
        --depth;
        continue;
      }
      if (depth == 0)
        out += c;
    }
    // Templates of a return type leave "type name": keep the name.
    size_t space = out.rfind(' ');
    if (space != std::string::npos && out.find("operator") == std::string::npos)
      out = out.substr(space + 1);
    return out;
  }

private:
  struct Symbol {
    uint64_t address, size;
    std::string name;
  };

  struct Module {
    std::vector<Symbol> symbols;
    bool loaded = false, pie = true;

    void load(StringRef path) {
      loaded = true;
      auto binary = llvm::object::ObjectFile::createObjectFile(path);
      if (!binary) {
        llvm::consumeError(binary.takeError());
        return;
      }
      llvm::object::ObjectFile *object = binary->getBinary();
      auto *elf = dyn_cast<llvm::object::ELFObjectFileBase>(object);
      if (!elf)
        return;
      pie = elf->getEType() == llvm::ELF::ET_DYN;
      for (const llvm::object::ELFSymbolRef &symbol : elf->symbols()) {
        auto type = symbol.getType();
        auto address = symbol.getAddress();
        auto name = symbol.getName();
        if (!type || !address || !name) {
          if (!type)
            llvm::consumeError(type.takeError());
          if (!address)
            llvm::consumeError(address.takeError());
          if (!name)
            llvm::consumeError(name.takeError());
          continue;
        }
        if (*type == llvm::object::SymbolRef::ST_Function)
          symbols.push_back(
              {*address, symbol.getSize(), shorten(llvm::demangle(*name))});
      }
      llvm::sort(symbols, [](const Symbol &a, const Symbol &b) {
        return a.address < b.address;
      });
    }
  };
  std::map<std::string, Module> modules;

  static bool isMainExecutable(const Dl_info &info) {
    Dl_info self;
    dladdr(reinterpret_cast<void *>(&writeHex), &self);
    return self.dli_fbase == info.dli_fbase;
  }
};

Symbolizer &symbolizer() {
  static Symbolizer instance;
  return instance;
}

/// Frames that say nothing about where the compiler went wrong: the
/// handlers, libc, error reporting, allocation, containers.
bool isNoiseFrame(StringRef name) {
  static const StringRef noise =
      "onFatalSignal|onCpuLimit|writeFrames|writeHex|__restore_rt|raise|"
      "gsignal|abort|pthread_kill|__GI_|__libc|libc.so|libstdc++|libgcc|"
      "report_fatal_error|reportFatal|report_bad_alloc_error|"
      "llvm_unreachable_internal|__cxa_|__cxxabiv1|std::terminate|"
      "__gnu_cxx::|operator new|malloc|calloc|realloc|safe_malloc|"
      "safe_realloc|std::__throw|_Unwind|SmallVectorBase|SmallVectorTemplate|"
      "SmallVectorImpl|std::vector|allocate|__assert_fail|llvm::sys::|memcpy|"
      "memset|memmove|std::__new_allocator|std::_Vector_base|"
      "llvm::allocate_buffer|llvm::deallocate_buffer|BumpPtrAllocator|"
      "llvm::DenseMapBase|llvm::StringMapImpl|??";
  return llvm::any_of(llvm::split(noise, '|'),
                      [&](StringRef n) { return name.contains(n); });
}

std::string normalizeMessage(StringRef message) {
  // Numbers vary with the input; the message shape is the class.
  std::string out;
  bool inNumber = false;
  for (char c : message.trim()) {
    if (llvm::isDigit(c)) {
      if (!inNumber)
        out += 'N';
      inNumber = true;
      continue;
    }
    inNumber = false;
    out += c;
  }
  if (out.size() > 120)
    out.resize(120);
  return out;
}

std::string signalName(int sig) {
  switch (sig) {
  case SIGSEGV:
    return "SIGSEGV";
  case SIGABRT:
    return "SIGABRT";
  case SIGBUS:
    return "SIGBUS";
  case SIGFPE:
    return "SIGFPE";
  case SIGILL:
    return "SIGILL";
  case SIGTRAP:
    return "SIGTRAP";
  case SIGKILL:
    return "SIGKILL";
  case SIGPROF:
    return "SIGPROF";
  default:
    return "signal " + std::to_string(sig);
  }
}

/// Kind, message, phase (parser, pass or serializer) and top frames of the
/// child's failure; all frames (names) go to `frameList`.
std::string crashSignature(StringRef kind, StringRef log,
                           std::string *frameList = nullptr) {
  std::string message, phase;
  std::vector<uintptr_t> frames;
  for (StringRef line : llvm::split(log, '\n')) {
    if (line.consume_front("HISA-FUZZ-FRAME ")) {
      uintptr_t address;
      if (!line.trim().getAsInteger(0, address))
        frames.push_back(address);
      continue;
    }
    if (line.consume_front("HISA-FUZZ-PHASE ")) {
      phase = line.trim().str();
      continue;
    }
    if (!message.empty())
      continue;
    size_t at = line.find("LLVM ERROR:");
    if (at != StringRef::npos)
      message = normalizeMessage(line.substr(at));
    else if (line.contains("std::bad_alloc") ||
             line.contains("Cannot allocate memory"))
      message = "out of memory";
    else if (line.contains("Assertion") && line.contains("failed"))
      message = normalizeMessage(line);
    else if (line.starts_with("HISA-FUZZ:"))
      message = normalizeMessage(line.drop_front(strlen("HISA-FUZZ:")));
  }
  std::string signature = kind.str();
  if (!message.empty())
    signature += ": " + message;
  if (!phase.empty())
    signature += " in " + phase;
  std::vector<std::string> names;
  for (size_t i = 0; i < frames.size(); ++i) {
    // Return addresses point past the call.
    std::string name = symbolizer().name(i ? frames[i] - 1 : frames[i]);
    if (!isNoiseFrame(name))
      names.push_back(name);
  }
  if (frameList)
    for (size_t i = 0; i < names.size() && i < 16; ++i)
      *frameList += "  #" + std::to_string(i) + " " + names[i] + "\n";
  // A hang is interrupted anywhere in its slow loop: the pass is the class.
  if (kind == "hang")
    return signature;
  std::string top;
  for (size_t i = 0; i < names.size() && i < 3; ++i)
    top += (i ? " < " : "") + names[i];
  if (!top.empty())
    signature += " @ " + top;
  return signature;
}

Result classify(int status, bool wallTimeout, std::string log, double seconds) {
  Result result;
  result.seconds = seconds;
  std::string frames;
  auto fail = [&](Outcome outcome, StringRef kind) {
    result.outcome = outcome;
    result.signature = crashSignature(kind, log, &frames);
  };
  if (wallTimeout) {
    result.outcome = Outcome::Hang;
    result.signature = "hang (wall clock)";
  } else if (WIFSIGNALED(status)) {
    fail(Outcome::Crash, signalName(WTERMSIG(status)));
  } else if (WIFEXITED(status)) {
    int code = WEXITSTATUS(status);
    if (code == 0)
      result.outcome = Outcome::Ok;
    else if (code == kExitHang)
      fail(Outcome::Hang, "hang");
    else if (code == kExitRoundTrip)
      fail(Outcome::Crash, "round trip");
    else if (code == 1 && StringRef(log).contains("LLVM ERROR"))
      fail(Outcome::Crash, "exit 1"); // reportFatalUsageError exits with 1
    else if (code == 1 && StringRef(log).contains("error:"))
      result.outcome = Outcome::Rejected;
    else if (code == 1)
      fail(Outcome::Crash, "failure without an error diagnostic");
    else
      fail(Outcome::Crash, "exit " + std::to_string(code));
  }
  // Keep the readable part of the log: diagnostics and frame names, not
  // frame addresses.
  std::string readable;
  for (StringRef line : llvm::split(log, '\n'))
    if (!line.starts_with("HISA-FUZZ-FRAME") && !line.empty())
      readable += line.str() + "\n";
  if (readable.size() > 4000)
    readable = readable.substr(0, 2000) + "\n[...]\n" +
               readable.substr(readable.size() - 2000);
  if (!frames.empty())
    readable += "frames:\n" + frames;
  result.log = std::move(readable);
  return result;
}

//===----------------------------------------------------------------------===//
// The parent: a pool of forked children.
//===----------------------------------------------------------------------===//

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

struct Slot {
  pid_t pid = 0;
  uint64_t index = 0;
  double start = 0;
  int stderrFd = -1;
  bool killed = false;
  Input input;
};

class Runner {
public:
  Runner(MLIRContext &context, unsigned jobs) : context(context) {
    slots.resize(std::max(1u, jobs));
    for (Slot &slot : slots) {
      char path[] = "/tmp/hisa-fuzz-XXXXXX";
      slot.stderrFd = mkstemp(path);
      if (slot.stderrFd < 0) {
        perror("hisa-fuzz: mkstemp");
        exit(2);
      }
      unlink(path);
    }
  }

  bool hasFreeSlot() const {
    return llvm::any_of(slots, [](const Slot &s) { return s.pid == 0; });
  }
  bool busy() const {
    return llvm::any_of(slots, [](const Slot &s) { return s.pid != 0; });
  }

  void start(uint64_t index, Input input) {
    auto slot = llvm::find_if(slots, [](const Slot &s) { return s.pid == 0; });
    (void)!ftruncate(slot->stderrFd, 0);
    lseek(slot->stderrFd, 0, SEEK_SET);
    llvm::outs().flush();
    llvm::errs().flush();
    pid_t pid = fork();
    if (pid < 0) {
      perror("hisa-fuzz: fork");
      exit(2);
    }
    if (pid == 0)
      runChild(context, input, slot->stderrFd);
    slot->pid = pid;
    slot->index = index;
    slot->start = now();
    slot->killed = false;
    slot->input = std::move(input);
  }

  /// Waits for one child to finish; returns its input and result.
  std::pair<Slot, Result> wait() {
    // Backstop for children that block without using CPU.
    double wallLimit = std::max(3 * double(timeoutOpt), timeoutOpt + 30.0);
    while (true) {
      int status;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid > 0) {
        auto slot =
            llvm::find_if(slots, [&](const Slot &s) { return s.pid == pid; });
        if (slot == slots.end())
          continue;
        std::string log = readLog(slot->stderrFd);
        Result result =
            classify(status, slot->killed, std::move(log), now() - slot->start);
        Slot done = *slot;
        slot->pid = 0;
        slot->input = Input();
        return {std::move(done), std::move(result)};
      }
      double t = now();
      for (Slot &slot : slots)
        if (slot.pid && !slot.killed && t - slot.start > wallLimit) {
          kill(slot.pid, SIGKILL);
          slot.killed = true;
        }
      usleep(1000);
    }
  }

  Result runOne(const Input &input) {
    start(0, input);
    return wait().second;
  }

private:
  MLIRContext &context;
  std::vector<Slot> slots;

  static std::string readLog(int fd) {
    // Only the head (diagnostics, "LLVM ERROR") and the tail (frames) matter.
    constexpr size_t kKeep = 256 << 10;
    off_t size = lseek(fd, 0, SEEK_END);
    std::string head(std::min<size_t>(size, kKeep), '\0');
    ssize_t got = pread(fd, head.data(), head.size(), 0);
    head.resize(got > 0 ? got : 0);
    if (size_t(size) <= kKeep)
      return head;
    std::string tail(kKeep, '\0');
    got = pread(fd, tail.data(), tail.size(), size - kKeep);
    tail.resize(got > 0 ? got : 0);
    return head + "\n" + tail;
  }
};

std::string shellQuote(StringRef s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string reproduceCommand(const Input &input, StringRef file) {
  if (input.mode == Mode::JIT)
    return "hisa-fuzz --replay=" + file.str() +
           " --replay-mode=jit --replay-options=" + shellQuote(input.options);
  std::string command = "hisa-opt " + file.str();
  if (input.mode == Mode::Report)
    return command + " --pass-pipeline='builtin.module(" +
           std::string(kReportPipeline) + ")' -o /dev/null";
  if (input.mode != Mode::Parse) {
    command += " --tile-to-nvvm";
    if (!input.options.empty())
      command += "=" + shellQuote(input.options);
  }
  if (input.mode == Mode::PTX)
    command += " | hisa-translate --gpu-to-ptx";
  return command;
}

std::string hashSignature(StringRef signature) {
  uint64_t h = 1469598103934665603ULL; // FNV-1a
  for (char c : signature)
    h = (h ^ uint8_t(c)) * 1099511628211ULL;
  return llvm::utohexstr(h & 0xffffffffULL, /*LowerCase=*/true, 8);
}

std::string kindPrefix(const Result &result) {
  return result.outcome == Outcome::Hang ? "hang" : "crash";
}

void writeFile(StringRef path, StringRef contents) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    llvm::errs() << "hisa-fuzz: cannot write " << path << ": " << ec.message()
                 << "\n";
    return;
  }
  os << contents;
}

struct Finding {
  std::string signature;
  Outcome outcome;
  unsigned count = 0;
  uint64_t firstIndex = 0;
  Input firstInput;
  std::string firstFile, log;
};

void saveInput(StringRef dir, StringRef stem, const Input &input,
               const Result &result, StringRef note) {
  std::string file = (dir + "/" + stem + ".mlir").str();
  writeFile(file, input.text);
  std::string info;
  llvm::raw_string_ostream os(info);
  os << "signature: " << result.signature << "\n"
     << "mode: " << modeName(input.mode) << "\n"
     << "options: " << input.options << "\n"
     << "origin: " << input.origin << "\n"
     << note << "reproduce: " << reproduceCommand(input, file) << "\n"
     << "seconds: " << llvm::format("%.2f", result.seconds) << "\n"
     << "log:\n"
     << result.log;
  writeFile((dir + "/" + stem + ".txt").str(), info);
}

/// The signature up to its first frame: a smaller input that runs out of
/// memory a few calls elsewhere still shows the same defect.
StringRef signatureCore(StringRef signature) {
  return signature.split(" < ").first;
}

/// Delta debugging over lines, then over the parameter bindings, keeping
/// each reduction that still gives the same signature (core).
Input minimize(Runner &runner, const Input &original,
               const std::string &signature, unsigned budget) {
  Input best = original;
  unsigned runs = 0;
  auto reproduces = [&](const Input &candidate) {
    ++runs;
    return signatureCore(runner.runOne(candidate).signature) ==
           signatureCore(signature);
  };

  std::vector<std::string> lines = splitLines(best.text);
  // Comment-only lines go first, all at once.
  {
    std::vector<std::string> code;
    for (const std::string &line : lines)
      if (!StringRef(line).trim().starts_with("//") &&
          !StringRef(line).trim().empty())
        code.push_back(line);
    if (code.size() < lines.size()) {
      Input candidate = best;
      candidate.text = joinLines(code);
      if (reproduces(candidate)) {
        best = candidate;
        lines = code;
      }
    }
  }
  size_t chunks = 2;
  while (lines.size() >= 2 && runs < budget) {
    size_t chunk = (lines.size() + chunks - 1) / chunks;
    bool reduced = false;
    for (size_t begin = 0; begin < lines.size() && runs < budget;
         begin += chunk) {
      std::vector<std::string> fewer(lines.begin(), lines.begin() + begin);
      fewer.insert(fewer.end(),
                   lines.begin() + std::min(lines.size(), begin + chunk),
                   lines.end());
      Input candidate = best;
      candidate.text = joinLines(fewer);
      if (reproduces(candidate)) {
        best = candidate;
        lines = fewer;
        chunks = std::max<size_t>(chunks - 1, 2);
        reduced = true;
        break;
      }
    }
    if (!reduced) {
      if (chunk == 1)
        break;
      chunks = std::min(lines.size(), chunks * 2);
    }
  }

  // Options: drop whole options, then single parameter bindings.
  std::vector<std::string> options;
  for (StringRef option : llvm::split(best.options, ' '))
    if (!option.empty())
      options.push_back(option.str());
  auto tryOptions = [&](const std::vector<std::string> &candidateOptions) {
    Input candidate = best;
    candidate.options = llvm::join(candidateOptions, " ");
    if (!reproduces(candidate))
      return false;
    best = candidate;
    return true;
  };
  for (size_t k = 0; k < options.size() && runs < budget;) {
    std::vector<std::string> fewer = options;
    fewer.erase(fewer.begin() + k);
    if (tryOptions(fewer))
      options = fewer;
    else
      ++k;
  }
  for (size_t o = 0; o < options.size(); ++o) {
    if (!StringRef(options[o]).starts_with("params="))
      continue;
    std::vector<std::string> bindings;
    for (StringRef binding :
         llvm::split(StringRef(options[o]).drop_front(strlen("params=")), ','))
      bindings.push_back(binding.str());
    for (size_t k = 0; k < bindings.size() && runs < budget;) {
      std::vector<std::string> fewer = bindings;
      fewer.erase(fewer.begin() + k);
      std::vector<std::string> candidateOptions = options;
      candidateOptions[o] = "params=" + llvm::join(fewer, ",");
      if (!fewer.empty() && tryOptions(candidateOptions)) {
        bindings = fewer;
        options = candidateOptions;
      } else {
        ++k;
      }
    }
  }
  return best;
}

/// A private JIT cache, removed at the end of the campaign.
struct JitCache {
  SmallString<128> path;
  ~JitCache() {
    if (!path.empty())
      llvm::sys::fs::remove_directories(path);
  }
};

/// Loads the runtime and gives the campaign a fresh JIT cache.
bool prepareJit(JitCache &cache) {
  if (!loadRuntime())
    return false;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("hisa-fuzz-cache", cache.path)) {
    llvm::errs() << "hisa-fuzz: cannot create a cache directory: "
                 << ec.message() << "\n";
    return false;
  }
  setenv("HISA_CACHE_DIR", cache.path.c_str(), 1);
  return true;
}

int replay(Runner &runner) {
  auto buffer = llvm::MemoryBuffer::getFile(replayOpt);
  if (!buffer) {
    llvm::errs() << "hisa-fuzz: cannot read " << replayOpt << "\n";
    return 2;
  }
  Input input;
  input.text = (*buffer)->getBuffer().str();
  std::optional<Mode> mode = parseMode(replayModeOpt);
  if (!mode) {
    llvm::errs() << "hisa-fuzz: unknown mode '" << replayModeOpt << "'\n";
    return 2;
  }
  input.mode = *mode;
  input.options = replayOptionsOpt;
  Result result = runner.runOne(input);
  static const char *const names[] = {"ok", "rejected", "crash", "hang"};
  llvm::outs() << names[int(result.outcome)];
  if (!result.signature.empty())
    llvm::outs() << ": " << result.signature;
  llvm::outs() << " (" << llvm::format("%.2f", result.seconds) << " s)\n"
               << result.log;
  return result.outcome == Outcome::Crash || result.outcome == Outcome::Hang;
}

} // namespace

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "hisa compiler fuzzer\n");

  // One context, loaded once, inherited by every child (copy on write).
  // Threading stays off: fork() only copies the calling thread.
  DialectRegistry registry;
  hisa::registerAllHisaDialects(registry);
  hisa::registerAllHisaPasses();
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  context.allowUnregisteredDialects(false);
  // backtrace() loads libgcc on first use; do it before any signal.
  void *warmUp[1];
  backtrace(warmUp, 1);

  Runner runner(context, replayOpt.empty() ? jobsOpt : 1);
  if (!replayOpt.empty()) {
    JitCache jitCache;
    if (replayModeOpt == "jit" && !prepareJit(jitCache))
      return 2;
    return replay(runner);
  }

  Corpus corpus = buildCorpus();
  if (corpus.seeds.empty()) {
    llvm::errs() << "hisa-fuzz: empty corpus (give .mlir files or "
                    "directories)\n";
    return 2;
  }
  std::vector<Mode> modes = campaignModes();
  JitCache jitCache;
  if (llvm::is_contained(modes, Mode::JIT) && !prepareJit(jitCache))
    return 2;

  if (checkCorpusOpt) {
    static const char *const names[] = {"ok", "rejected", "crash", "hang"};
    for (Mode mode : modes) {
      for (const Seed &seed : corpus.seeds) {
        Input input;
        input.text = seed.text;
        input.mode = mode;
        Result result = runner.runOne(input);
        llvm::outs() << modeName(mode) << " " << seed.name
                     << (StringRef(seed.text).contains("expected-error")
                             ? " (negative)"
                             : "")
                     << ": " << names[int(result.outcome)] << " "
                     << StringRef(result.log).split('\n').first << "\n";
      }
    }
    return 0;
  }

  if (dumpOpt) {
    for (uint64_t i = firstOpt; i < uint64_t(firstOpt) + runsOpt; ++i) {
      Input input = generateInput(corpus, modes, seedOpt, i);
      llvm::outs() << "// ===== input " << i << " mode=" << modeName(input.mode)
                   << " options=" << input.options << " origin=" << input.origin
                   << "\n"
                   << input.text << "\n";
    }
    return 0;
  }

  if (!outOpt.empty())
    llvm::sys::fs::create_directories(outOpt);

  std::map<std::string, Finding> findings;
  std::map<Mode, std::array<unsigned, 4>> perMode;
  unsigned counts[4] = {0, 0, 0, 0};
  uint64_t next = firstOpt, end = uint64_t(firstOpt) + runsOpt;
  unsigned executed = 0;
  double begin = now(), lastStatus = begin;

  auto report = [&](const Slot &slot, const Result &result) {
    ++executed;
    ++counts[int(result.outcome)];
    ++perMode[slot.input.mode][int(result.outcome)];
    if (verboseOpt) {
      static const char *const names[] = {"ok", "rejected", "crash", "hang"};
      StringRef log = result.log, firstLine = log.split('\n').first;
      size_t phaseAt = log.find("HISA-FUZZ-PHASE ");
      StringRef phase = phaseAt == StringRef::npos
                            ? ""
                            : log.substr(phaseAt + strlen("HISA-FUZZ-PHASE "))
                                  .split('\n')
                                  .first;
      llvm::errs() << "input " << slot.index << " " << modeName(slot.input.mode)
                   << " [" << slot.input.options << "] " << slot.input.origin
                   << ": " << names[int(result.outcome)] << " "
                   << llvm::format("%.2fs ", result.seconds) << "{" << phase
                   << "} " << firstLine.take_front(200) << "\n";
    }
    if (result.outcome != Outcome::Crash && result.outcome != Outcome::Hang)
      return;
    Finding &finding = findings[result.signature];
    bool first = finding.count++ == 0;
    if (first) {
      finding.signature = result.signature;
      finding.outcome = result.outcome;
      finding.firstIndex = slot.index;
      finding.firstInput = slot.input;
      finding.log = result.log;
      llvm::errs() << "hisa-fuzz: new " << kindPrefix(result) << " (input "
                   << slot.index << ", " << modeName(slot.input.mode)
                   << "): " << result.signature << "\n";
    }
    if (!outOpt.empty() && finding.count <= maxSavedOpt) {
      std::string stem = kindPrefix(result) + "-" +
                         hashSignature(result.signature) + "-" +
                         std::to_string(slot.index);
      saveInput(outOpt, stem, slot.input, result,
                "seed: " + std::to_string(seedOpt) +
                    " input: " + std::to_string(slot.index) + "\n");
      if (first)
        finding.firstFile = outOpt + "/" + stem + ".mlir";
    }
  };

  auto stop = [&]() {
    return maxFindingsOpt && counts[2] + counts[3] >= maxFindingsOpt;
  };
  while ((next < end && !stop()) || runner.busy()) {
    while (next < end && !stop() && runner.hasFreeSlot()) {
      runner.start(next, generateInput(corpus, modes, seedOpt, next));
      ++next;
    }
    auto [slot, result] = runner.wait();
    report(slot, result);
    if (statusOpt > 0 && now() - lastStatus >= statusOpt) {
      lastStatus = now();
      llvm::errs() << llvm::format(
          "hisa-fuzz: %u execs (%.1f/s): %u ok, %u rejected, %u crashes, %u "
          "hangs, %zu distinct\n",
          executed, executed / (lastStatus - begin), counts[0], counts[1],
          counts[2], counts[3], findings.size());
    }
  }
  double elapsed = now() - begin;

  unsigned distinctCrashes = 0, distinctHangs = 0;
  for (auto &[signature, finding] : findings)
    (finding.outcome == Outcome::Hang ? distinctHangs : distinctCrashes)++;

  if (minimizeOpt && !outOpt.empty()) {
    for (auto &[signature, finding] : findings) {
      Input small =
          minimize(runner, finding.firstInput, signature, minimizeRunsOpt);
      Result result = runner.runOne(small);
      std::string stem =
          std::string(finding.outcome == Outcome::Hang ? "hang-" : "crash-") +
          hashSignature(signature) + "-min";
      saveInput(outOpt, stem, small, result, "");
      finding.firstFile = outOpt + "/" + stem + ".mlir";
      finding.firstInput = small;
    }
  }

  std::string summary;
  llvm::raw_string_ostream os(summary);
  for (auto &[signature, finding] : findings)
    os << finding.count << "\t" << signature << "\n\tinput "
       << finding.firstIndex << ": "
       << reproduceCommand(finding.firstInput, finding.firstFile.empty()
                                                   ? "<input>"
                                                   : finding.firstFile)
       << "\n";
  if (!outOpt.empty())
    writeFile(outOpt + "/findings.txt", summary);

  llvm::outs() << "hisa-fuzz: seed " << seedOpt << ", mode " << modesOpt << ", "
               << corpus.seeds.size() << " seeds\n";
  for (auto &[mode, c] : perMode)
    llvm::outs() << "  " << modeName(mode) << ": " << c[0] << " ok, " << c[1]
                 << " rejected, " << c[2] << " crashes, " << c[3] << " hangs\n";
  llvm::outs() << summary;
  llvm::outs() << llvm::format(
      "hisa-fuzz: %u executions, %u ok, %u rejected, %u distinct crashes (%u "
      "inputs), %u distinct hangs (%u inputs), %.1f s\n",
      executed, counts[0], counts[1], distinctCrashes, counts[2], distinctHangs,
      counts[3], elapsed);
  return findings.empty() ? 0 : 1;
}
