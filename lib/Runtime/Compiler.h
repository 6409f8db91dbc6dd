//===- Compiler.h - DSL source to PTX and cubin -----------------*- C++ -*-===//

#ifndef HISA_LIB_RUNTIME_COMPILER_H
#define HISA_LIB_RUNTIME_COMPILER_H

#include "hisa/Runtime/Jit.h"

namespace hisa::runtime {

/// Parses `source`, binds `params` (sorted name=value), lowers the kernel
/// to PTX for `target` and assembles it with ptxas (or keeps the PTX when
/// ptxas is missing, saying so on stderr). Errors carry the diagnostics.
llvm::Expected<CompiledKernel> compileKernel(llvm::StringRef source,
                                             llvm::StringRef kernelName,
                                             llvm::ArrayRef<std::string> params,
                                             llvm::StringRef target);

} // namespace hisa::runtime

#endif // HISA_LIB_RUNTIME_COMPILER_H
