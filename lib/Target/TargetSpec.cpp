//===- TargetSpec.cpp - Target chips and hisa target features -------------===//

#include "hisa/Target/TargetSpec.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

using namespace hisa;

llvm::StringRef hisa::getKnownTargetFeatures() {
  return "+tma, -tma, +narrow-indices, -narrow-indices, +elide-sync, "
         "-elide-sync";
}

llvm::StringRef hisa::getSupportedChips() {
  return "sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a: the lowering emits PTX "
         "ISA 8.0 and cp.async";
}

bool hisa::isSupportedChip(llvm::StringRef chip) {
  // The chips LLVM's NVPTX backend knows in that range; any other name
  // (sm_85, sm_090, ...) would make it abort in instruction selection.
  return llvm::is_contained(
      {"sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a"}, chip);
}

bool hisa::applyTargetFeatures(llvm::ArrayRef<std::string> features,
                               TargetSpec &spec, std::string &error,
                               llvm::StringRef target) {
  for (llvm::StringRef feature : features) {
    feature = feature.trim();
    if (feature == "+tma" || feature == "-tma") {
      spec.tma = feature == "+tma";
      continue;
    }
    if (feature == "+narrow-indices" || feature == "-narrow-indices") {
      spec.narrowIndices = feature == "+narrow-indices";
      continue;
    }
    if (feature == "+elide-sync" || feature == "-elide-sync") {
      spec.elideSync = feature == "+elide-sync";
      continue;
    }
    error = ("unknown feature '" + feature + "'" +
             (target.empty() ? "" : " in target '" + target + "'") +
             " (known: " + getKnownTargetFeatures() + ")")
                .str();
    return false;
  }
  return true;
}

bool hisa::parseTargetSpec(llvm::StringRef text, TargetSpec &spec,
                           std::string &error) {
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',');
  llvm::StringRef chip = parts.front().trim();
  // sm_<digits>[a|f]: what ptxas and the NVVM target accept.
  llvm::StringRef version = chip.drop_front(3).rtrim("af");
  if (!chip.starts_with("sm_") || version.empty() ||
      !llvm::all_of(version, llvm::isDigit) ||
      chip.size() - 3 - version.size() > 1) {
    error = ("invalid target '" + text +
             "' (expected a chip such as sm_90a, optionally with features: "
             "sm_90a,-tma)")
                .str();
    return false;
  }
  if (!isSupportedChip(chip)) {
    error = ("unsupported target '" + chip + "' (hisa compiles for " +
             getSupportedChips() + ")")
                .str();
    return false;
  }
  spec.chip = chip.str();
  llvm::SmallVector<std::string> features;
  for (llvm::StringRef feature : llvm::ArrayRef(parts).drop_front())
    features.push_back(feature.str());
  return applyTargetFeatures(features, spec, error, text);
}
