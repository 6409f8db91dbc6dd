#!/usr/bin/env bash
# Installs every system package the build and the tests need. Idempotent:
# packages already present are left alone and apt is not touched at all.
set -euo pipefail

LLVM_VERSION=22
packages=(
  cmake ninja-build g++ python3 python3-pip
  "llvm-${LLVM_VERSION}-dev" "libmlir-${LLVM_VERSION}-dev"
  "mlir-${LLVM_VERSION}-tools" "llvm-${LLVM_VERSION}-tools" "lld-${LLVM_VERSION}"
  # Needed by the CMake export files of Debian's LLVM.
  libzstd-dev zlib1g-dev libedit-dev libxml2-dev libffi-dev
  libgtest-dev
)

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

# ptxas validates generated PTX; it ships with the CUDA toolkit, not apt.
if ! command -v ptxas >/dev/null && [[ ! -x /usr/local/cuda/bin/ptxas ]]; then
  echo "setup: note: ptxas not found; PTX is generated but not assembled (tests needing it are skipped)"
fi
