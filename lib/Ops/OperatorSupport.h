//===- OperatorSupport.h - What every operator file shares ------*- C++ -*-===//
//
// Internal to lib/Ops: argument checks that name the argument, launch
// arguments, and the cached kernel lookup + launch every operator ends with.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_LIB_OPS_OPERATORSUPPORT_H
#define HISA_LIB_OPS_OPERATORSUPPORT_H

#include "hisa/Runtime/Jit.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <initializer_list>
#include <string>

namespace hisa::ops::detail {

/// An invalid-argument error (the C ABI maps it to
/// HISA_ERROR_INVALID_ARGUMENT).
llvm::Error argumentError(const llvm::Twine &message);

/// `pointer` is given and aligned to `alignment` bytes (vector accesses and
/// 16-byte cp.async / TMA pieces need it).
llvm::Error checkPointer(const char *op, const char *name, const void *pointer,
                         uint64_t alignment);

/// A device pointer an operator reads or writes, and the alignment it needs.
struct PointerArgument {
  const char *name;
  const void *pointer;
  uint64_t alignment;
};

llvm::Error checkPointers(const char *op,
                          std::initializer_list<PointerArgument> arguments);

llvm::Error checkNonNegative(const char *op, const char *name, int64_t value);

/// `value` fits the kernels' int32 indices.
llvm::Error checkIndexRange(const char *op, const char *name, int64_t value);

runtime::LaunchArgument tensor(const void *data,
                               std::initializer_list<int64_t> sizes);
runtime::LaunchArgument integer(int64_t value);
runtime::LaunchArgument floatScalar(double value);

/// Compiles (once per process and specialization) and launches a builtin
/// kernel of kernels-dsl/.
llvm::Error runOperator(const char *kernelName, const std::string &params,
                        llvm::ArrayRef<runtime::LaunchArgument> arguments,
                        void *stream);

} // namespace hisa::ops::detail

#endif // HISA_LIB_OPS_OPERATORSUPPORT_H
