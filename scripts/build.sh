#!/usr/bin/env bash
# Configures (once) and builds hisa into ${HISA_BUILD_DIR:-build}.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${HISA_BUILD_DIR:-$root/build}

if [[ ! -f $build/build.ninja ]]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
# Two parallel links of the static LLVM/MLIR tools fit comfortably in 24 GiB.
ninja -C "$build" "$@"
