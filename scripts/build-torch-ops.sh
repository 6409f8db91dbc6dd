#!/usr/bin/env bash
# Builds libhisa_torch.so (python/csrc) for another torch release than this
# machine's: the GPU machine's (2.11.0 there in 2026-11/12). torch's C++ ABI
# changes between releases, and the package loads the library only into the
# release it was built for. Downloads that release's wheel once (only its
# headers and libraries are used) and links against build/lib's runtime.
#
#   scripts/build-torch-ops.sh [RELEASE] [OUT_DIR]
#     RELEASE: default 2.11.0; OUT_DIR: default build-torch-RELEASE
# Then put OUT_DIR/libhisa_torch.so and libhisa_torch.so.torch-version beside
# libhisa_runtime.so on the GPU machine (docs/gpu-workflow.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
release=${1:-2.11.0}
out=${2:-$root/build-torch-$release}
wheels=${HISA_TORCH_WHEELS:-/tmp/hisa-torch-wheels}
runtime=$root/build/lib/libhisa_runtime.so
[[ -f $runtime ]] || { echo "build-torch-ops.sh: build $runtime first (scripts/build.sh)" >&2; exit 1; }

torch_dir=$wheels/torch-$release/torch
if [[ ! -f $torch_dir/include/torch/headeronly/version.h ]]; then
  mkdir -p "$wheels"
  python3 -m pip download --no-deps "torch==$release" -d "$wheels" -q
  wheel=$(ls "$wheels"/torch-"$release"-*.whl | head -1)
  python3 - "$wheel" "$wheels/torch-$release" <<'PY'
import sys, zipfile
wheel, into = sys.argv[1:]
z = zipfile.ZipFile(wheel)
keep = [n for n in z.namelist()
        if n.startswith("torch/include/") or n.startswith("torch/lib/libc10")
        or n.startswith("torch/lib/libtorch")]
z.extractall(into, keep)
PY
fi
mkdir -p "$out"
cmake -S "$root/python/csrc" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DHISA_TORCH_DIR="$torch_dir" -DHISA_RUNTIME_LIBRARY="$runtime" > "$out/cmake.log" 2>&1 ||
  { cat "$out/cmake.log" >&2; exit 1; }
ninja -C "$out"
echo "build-torch-ops.sh: $out/libhisa_torch.so for torch $(cat "$out/libhisa_torch.so.torch-version")"
