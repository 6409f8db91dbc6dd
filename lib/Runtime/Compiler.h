//===- Compiler.h - DSL source to PTX and cubin -----------------*- C++ -*-===//

#ifndef HISA_LIB_RUNTIME_COMPILER_H
#define HISA_LIB_RUNTIME_COMPILER_H

#include "hisa/Runtime/Jit.h"

namespace hisa::runtime {

/// Writes `line` (and a newline) to stderr in one piece: compilations run
/// on several threads at once, and their warnings must not interleave.
void reportLine(const llvm::Twine &line);

/// The limit on one compilation, in seconds: $HISA_COMPILE_TIMEOUT_S if it
/// is a positive number, else kDefaultCompileTimeoutSeconds (an invalid
/// value is ignored, with a warning on stderr once).
double getCompileTimeoutFromEnvironment();

/// The ptxas reports that refuse a kernel in this environment
/// (HISA_STRICT_WGMMA, HISA_STRICT_LOCAL_MEMORY set), e.g.
/// "strict=wgmma,local-memory", or "" when every report is only a warning.
/// Part of the cache key: an entry compiled leniently (with a warning) is
/// not handed to a strict caller, whose compile then refuses it.
std::string describeStrictness();

/// Which ptxas would compile a kernel now (its path, size and modification
/// time; "ptxas=none": the kernel is kept as PTX): part of every cache key
/// (as the process first found it), so that a binary another ptxas made
/// (or PTX stored without one) is not served to a process that has a
/// different one.
std::string describeBackend();

/// Parses `source`, binds `params` (sorted name=value), lowers the kernel
/// to PTX for `target` and assembles it with ptxas (or keeps the PTX when
/// ptxas is missing, saying so on stderr). Errors carry the diagnostics: a
/// ParameterError when the kernel refuses the parameters the caller gave,
/// else a CompileError (also when compilation takes longer than
/// `timeoutSeconds`: no pass starts and ptxas does not run past the
/// deadline) or a plain error for a bad request.
llvm::Expected<CompiledKernel> compileKernel(llvm::StringRef source,
                                             llvm::StringRef kernelName,
                                             llvm::ArrayRef<std::string> params,
                                             llvm::StringRef target,
                                             double timeoutSeconds);

} // namespace hisa::runtime

#endif // HISA_LIB_RUNTIME_COMPILER_H
