#!/usr/bin/env bash
# Builds a candidate runtime library: this tree with a not-yet-landed
# compiler patch applied (docs/proposals/*.patch), packed for the GPU
# machine beside the C++ torch kernels, for scripts/gpu-owed.sh step 8
# (HISA_CANDIDATE_LIB). The tree and build/ are put back afterwards.
#
#   scripts/build-candidate.sh PATCH OUTDIR [TORCH_OPS_DIR]
#
# OUTDIR gets libhisa_runtime.so.xz and libhisa_torch.so* (from
# TORCH_OPS_DIR, default the newest build-torch-*/ of
# scripts/build-torch-ops.sh). Needs a configured build/ and a tree
# without uncommitted changes to tracked files.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [[ $# -lt 2 ]]; then
  echo "usage: scripts/build-candidate.sh PATCH OUTDIR [TORCH_OPS_DIR]" >&2
  exit 64
fi
patch=$(realpath "$1")
out=$2
torch_ops=${3:-$(ls -d build-torch-*/ 2>/dev/null | sort -V | tail -1)}
[[ -f build/build.ninja ]] || { echo "build-candidate.sh: build/ is not configured (scripts/build.sh)" >&2; exit 1; }
if ! git diff --quiet || ! git diff --cached --quiet; then
  echo "build-candidate.sh: tracked files have uncommitted changes; commit or stash them first" >&2
  exit 1
fi
git apply --check "$patch"
mkdir -p "$out"
git apply "$patch"
# Whatever happens, the tree and build/ go back to what they were.
trap 'git apply -R "$patch" && ninja -C build > /dev/null' EXIT
ninja -C build
xz -T2 -6 -c build/lib/libhisa_runtime.so > "$out/libhisa_runtime.so.xz"
if [[ -n $torch_ops && -f $torch_ops/libhisa_torch.so ]]; then
  cp "$torch_ops"/libhisa_torch.so* "$out"/
else
  echo "build-candidate.sh: no libhisa_torch.so (scripts/build-torch-ops.sh); the candidate's torch ops will be missing" >&2
fi
echo "candidate: $out/libhisa_runtime.so.xz ($(git rev-parse --short HEAD) + $(basename "$patch"))"
