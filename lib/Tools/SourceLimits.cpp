//===- SourceLimits.cpp - Input MLIR's parser would choke on --------------===//

#include "hisa/Tools/SourceLimits.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"

using namespace llvm;

namespace {

bool isSuffixIdChar(char c) {
  return isAlnum(c) || c == '_' || c == '$' || c == '.' || c == '-';
}

} // namespace

std::optional<hisa::SourceLimitViolation>
hisa::findSourceLimitViolation(StringRef text) {
  size_t size = text.size();
  for (size_t i = 0; i < size; ++i) {
    char c = text[i];
    if (c == '/' && i + 1 < size && text[i + 1] == '/') {
      i = text.find('\n', i);
      if (i == StringRef::npos)
        break;
      continue;
    }
    if (c == '"') {
      for (++i; i < size && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      continue;
    }
    if (c == 'a' && text.substr(i).starts_with("array<") &&
        (i == 0 || !isSuffixIdChar(text[i - 1]))) {
      size_t element = i + 6;
      while (element < size && isSpace(text[element]))
        ++element;
      if (text.substr(element).starts_with("index") &&
          (element + 5 >= size || !isSuffixIdChar(text[element + 5])))
        return SourceLimitViolation{
            i, "a dense array of index elements ('array<index...>') is not "
               "supported (MLIR's parser crashes on it): use i32 or i64"};
      continue;
    }
    if (c != '%')
      continue;
    size_t start = i;
    for (++i; i < size && isSuffixIdChar(text[i]);)
      ++i;
    if (i >= size || text[i] != '#' || i + 1 >= size || !isDigit(text[i + 1])) {
      --i;
      continue;
    }
    size_t digits = i + 1, end = digits;
    uint64_t number = 0;
    bool tooLarge = false;
    for (; end < size && isDigit(text[end]); ++end) {
      number = number * 10 + (text[end] - '0');
      tooLarge |= number > kMaxResultNumber;
    }
    if (tooLarge)
      return SourceLimitViolation{
          start, formatv("result number {0} of '{1}' is too large (hisa "
                         "accepts at most {2}: no operation has more results)",
                         text.slice(digits, end), text.slice(start, i),
                         kMaxResultNumber)
                     .str()};
    i = end - 1;
  }
  return std::nullopt;
}

bool hisa::reportSourceLimitViolation(const SourceMgr &sourceMgr,
                                      unsigned bufferId) {
  StringRef text = sourceMgr.getMemoryBuffer(bufferId)->getBuffer();
  std::optional<SourceLimitViolation> violation =
      findSourceLimitViolation(text);
  if (!violation)
    return false;
  sourceMgr.PrintMessage(SMLoc::getFromPointer(text.data() + violation->offset),
                         SourceMgr::DK_Error, violation->message);
  return true;
}
