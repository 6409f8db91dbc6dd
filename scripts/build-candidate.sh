#!/usr/bin/env bash
# Builds a candidate runtime library: this tree with not-yet-landed
# patches applied (docs/proposals/*.patch), packed for the GPU
# machine beside the C++ torch kernels, for scripts/gpu-owed.sh step 8
# (HISA_CANDIDATE_LIB). The tree and build/ are put back afterwards.
#
#   scripts/build-candidate.sh PATCH[,PATCH...] OUTDIR [TORCH_OPS_DIR]
#
# Several patches (comma-separated) are applied in order, so that one
# candidate carries changes to different operators, each A/B-ed by its own
# rows of probes/library_ab.py.
# OUTDIR gets libhisa_runtime.so.xz and libhisa_torch.so* (from
# TORCH_OPS_DIR, default the newest build-torch-*/ of
# scripts/build-torch-ops.sh). Needs a configured build/ and a tree
# without uncommitted changes to tracked files.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [[ $# -lt 2 ]]; then
  echo "usage: scripts/build-candidate.sh PATCH[,PATCH...] OUTDIR [TORCH_OPS_DIR]" >&2
  exit 64
fi
IFS=, read -r -a patch_args <<< "$1"
patches=()
for patch in "${patch_args[@]}"; do
  [[ -f $patch ]] || { echo "build-candidate.sh: no patch file '$patch'" >&2; exit 1; }
  patches+=("$(realpath "$patch")")
done
out=$2
torch_ops=${3:-$(ls -d build-torch-*/ 2>/dev/null | sort -V | tail -1)}
[[ -f build/build.ninja ]] || { echo "build-candidate.sh: build/ is not configured (scripts/build.sh)" >&2; exit 1; }
if ! git diff --quiet || ! git diff --cached --quiet; then
  echo "build-candidate.sh: tracked files have uncommitted changes; commit or stash them first" >&2
  exit 1
fi
mkdir -p "$out"
# Whatever happens, the tree and build/ go back to what they were (the
# applied patches reverted, newest first).
applied=()
revert() {
  local i
  for ((i = ${#applied[@]} - 1; i >= 0; i--)); do
    git apply -R "${applied[i]}"
  done
  ninja -C build > /dev/null
}
trap revert EXIT
for patch in "${patches[@]}"; do
  git apply --check "$patch"
  git apply "$patch"
  applied+=("$patch")
done
ninja -C build
xz -T2 -6 -c build/lib/libhisa_runtime.so > "$out/libhisa_runtime.so.xz"
if [[ -n $torch_ops && -f $torch_ops/libhisa_torch.so ]]; then
  cp "$torch_ops"/libhisa_torch.so* "$out"/
else
  echo "build-candidate.sh: no libhisa_torch.so (scripts/build-torch-ops.sh); the candidate's torch ops will be missing" >&2
fi
names=$(for patch in "${patches[@]}"; do basename "$patch"; done | paste -sd, -)
echo "candidate: $out/libhisa_runtime.so.xz ($(git rev-parse --short HEAD) + $names)"
