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
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
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

/// checkPointers, then that each pointer is device memory of the current
/// context, under these names (for operators whose kernels name their
/// arguments differently, so the launch's own check would not say which C
/// ABI argument was wrong). Callers then launch in a TrustedPointersScope.
llvm::Error
checkDevicePointerArguments(const char *op,
                            std::initializer_list<PointerArgument> arguments);

llvm::Error checkNonNegative(const char *op, const char *name, int64_t value);

/// `value` fits the kernels' int32 indices.
llvm::Error checkIndexRange(const char *op, const char *name, int64_t value);

/// The largest tensor an operator takes (docs/design.md, Limits: every byte
/// offset then fits in int64, with room to spare).
constexpr int64_t kMaxTensorBytes = int64_t(1) << 48;

/// A tensor of `sizes` (each >= 0) elements of `elementBytes` holds at most
/// kMaxTensorBytes, computed without overflow; `what` names it with the
/// arguments its sizes come from ("out [m, k]").
llvm::Error checkTensorBytes(const char *op, const char *what,
                             std::initializer_list<int64_t> sizes,
                             int64_t elementBytes);

/// The most blocks a grid's x dimension may have (CUDA's limit).
constexpr int64_t kMaxGridBlocks = INT32_MAX;

runtime::LaunchArgument tensor(const void *data,
                               std::initializer_list<int64_t> sizes);
runtime::LaunchArgument integer(int64_t value);
runtime::LaunchArgument floatScalar(double value);

/// The SM count the H100/H200 plans were measured with, and what
/// getPlanningMultiprocessors() answers without a device to ask.
constexpr int64_t kMeasuredMultiprocessors = 132;

/// What a plan is for: a launch (planned for the device it will run on:
/// the current context's, made current as the launch would if there is
/// none) or a size query (the current context's device if CUDA is already
/// in use; never loads or initializes the driver, so a process may size
/// its buffers and then fork).
enum class PlanFor { Launch, SizeQuery };

/// The SMs of the device a plan is for: the operators' plans (splits that
/// fill the GPU, rows per block...) scale their thresholds with it, so that
/// a Hopper with fewer SMs (H20: 78, H100 PCIe: 114) gets the same shape of
/// plan. kMeasuredMultiprocessors where there is no device to ask: a size
/// query before CUDA is in use (no driver loaded, no current context; the
/// plans never need more workspace with fewer SMs, so that answer covers
/// any Hopper), or a launch without a driver or context (nothing will run:
/// the launch reports that after the argument checks, which must not
/// depend on a device). An error when a device is there but its SM count
/// cannot be read: planning for a guess would hide a failing driver.
llvm::Expected<int64_t> getPlanningMultiprocessors(PlanFor purpose);

/// The dynamic shared memory of a builtin kernel's specialization, as its
/// plan allocates it: compiles it if needed (no GPU; the answer is kept per
/// process and specialization, like runOperator's kernels). For a plan that
/// only a planned size can decide (blocks per SM at the edge).
llvm::Expected<int64_t> getBuiltinKernelSharedBytes(const char *kernelName,
                                                    llvm::StringRef params);

/// Specialization parameters as text, on the stack: operators build them on
/// every call (a heap string and its growth were ~20% of a small call's host
/// code, fake driver).
using SpecializationText = llvm::SmallString<128>;

/// The specialization parameters "a=1,b=2" of `entries`, in their order:
/// what runOperator and the JIT take. (formatv's parse of a format string
/// on every launch cost more host time than the launch's own checks.)
SpecializationText
specialization(std::initializer_list<std::pair<const char *, int64_t>> entries);

/// Compiles (once per process and specialization) and launches a builtin
/// kernel of kernels-dsl/.
llvm::Error runOperator(const char *kernelName, llvm::StringRef params,
                        llvm::ArrayRef<runtime::LaunchArgument> arguments,
                        void *stream);

} // namespace hisa::ops::detail

#endif // HISA_LIB_OPS_OPERATORSUPPORT_H
