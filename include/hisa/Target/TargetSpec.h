//===- TargetSpec.h - Target chips and hisa target features -----*- C++ -*-===//
//
// One spelling of the target everywhere: a chip ("sm_90a") and optional
// features ("+tma" / "-tma"). The JIT takes them as one string
// ("sm_90a,-tma"); the tile-to-nvvm pipeline as `chip=sm_90a features=-tma`.
// Unknown features are refused, never ignored.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_TARGET_TARGETSPEC_H
#define HISA_TARGET_TARGETSPEC_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace hisa {

struct TargetSpec {
  std::string chip = "sm_90a";
  /// Stage eligible pipelined copies through TMA (sm_90 and newer).
  bool tma = true;
  /// Do the index arithmetic of run-time sizes in 32 bits where their
  /// range allows (tile-bound-dims + int-range narrowing); the kernels then
  /// refuse sizes from 2^31 on at launch. Off by default (not yet measured).
  bool narrowIndices = false;
  /// Drop the synchronization that the kernel's own named barriers and
  /// stage waits already give (tile-elide-proxy-fences, gemms on settled
  /// or other warpgroups' operands, hand-overs between warpgroups: the
  /// fifty-second session). Off by default until GPU-checked (racecheck,
  /// the GPU tests) and timed.
  bool elideSync = false;
};

/// The features every spelling accepts, for messages: "+tma, -tma,
/// +narrow-indices, -narrow-indices, +elide-sync, -elide-sync".
llvm::StringRef getKnownTargetFeatures();

/// Whether the lowering can target `chip`: sm_80, sm_86, sm_87, sm_89, sm_90
/// or sm_90a (it emits PTX ISA 8.0, which stops at sm_90a, and cp.async,
/// which starts at sm_80). Other chips are refused up front: LLVM would
/// abort the process on them.
bool isSupportedChip(llvm::StringRef chip);
/// For messages: the chips isSupportedChip accepts, and why.
llvm::StringRef getSupportedChips();

/// Applies `features` ("+tma", "-tma") to `spec`. On an unknown feature
/// returns false and sets `error` (naming `target`, the whole target string,
/// when given).
bool applyTargetFeatures(llvm::ArrayRef<std::string> features, TargetSpec &spec,
                         std::string &error, llvm::StringRef target = "");

/// Parses "sm_90a" or "sm_90a,-tma". Returns false and sets `error` on a
/// malformed chip or an unknown feature.
bool parseTargetSpec(llvm::StringRef text, TargetSpec &spec,
                     std::string &error);

} // namespace hisa

#endif // HISA_TARGET_TARGETSPEC_H
