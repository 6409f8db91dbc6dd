//===- SourceLimits.h - Input MLIR's parser would choke on ------*- C++ -*-===//
//
// MLIR's parser sizes a table by the result number of a use before it can
// check it (`%x#2147483647` asks for 2^31 entries: "LLVM ERROR: out of
// memory", found by hisa-fuzz), and it dereferences a null float type on a
// dense array of index elements (`array<index: 1>`, SIGSEGV in
// parseDenseArrayAttr, LLVM 22; hisa-fuzz). hisa-opt, hisa-translate, the
// JIT and the fuzzing harness scan their input for both first and refuse
// it with a diagnostic.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_TOOLS_SOURCELIMITS_H
#define HISA_TOOLS_SOURCELIMITS_H

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <optional>
#include <string>

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace hisa {

/// The largest result number a use (`%name#N`) may name.
constexpr uint64_t kMaxResultNumber = 1u << 16;

/// What is wrong with a source text, and where (a byte offset).
struct SourceLimitViolation {
  size_t offset;
  std::string message;
};

/// The first use of a result number above kMaxResultNumber or dense array
/// of index elements in `text` (comments and string literals skipped), if
/// any.
std::optional<SourceLimitViolation>
findSourceLimitViolation(llvm::StringRef text);

/// Prints the first violation in buffer `bufferId` of `sourceMgr` as an
/// error at its location; true when there was one.
bool reportSourceLimitViolation(const llvm::SourceMgr &sourceMgr,
                                unsigned bufferId);

} // namespace hisa

#endif // HISA_TOOLS_SOURCELIMITS_H
