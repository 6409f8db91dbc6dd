#!/usr/bin/env bash
# Mutation fuzzing of the compiler (tools/hisa-fuzz): builds hisa-fuzz, then
# runs a campaign of RUNS inputs generated from SEED over the project's own
# .mlir files (test/ and kernels-dsl/): parse + verify, tile-to-nvvm with
# default and mutated parameter bindings, PTX serialization. Each input runs
# in a forked child with a CPU-time limit (a hang) and an address-space limit
# (out of memory is a crash).
#
#   scripts/fuzz.sh [RUNS [SEED [OUT]]] [more hisa-fuzz options]
#
# RUNS defaults to 20000, SEED to 1, OUT to build/fuzz-SEED. Crashing and
# hanging inputs, a minimized reproducer per distinct signature
# (*-min.mlir, with the hisa-opt command line in *-min.txt) and
# findings.txt go to OUT; the log to OUT/log.txt. Input i of a campaign
# depends only on SEED and i (for a given tree), so `hisa-fuzz --seed=SEED
# --first=i --runs=1 --dump ...` prints it again. Exit status 1 when
# anything was found.
#
# Environment: HISA_FUZZ_MODES (default mix: parse, nvvm, params, ptx;
# mix,jit adds hisa_kernel_compile of the runtime library, which is then
# built too), HISA_FUZZ_JOBS children at once (default 1; use 2 on two idle
# cores), HISA_FUZZ_TIMEOUT CPU seconds per input (default 10),
# HISA_FUZZ_MEM_MB address-space limit per child (default 4096),
# HISA_BUILD_DIR, HISA_BUILD_LOCK (a lock file shared with other builds;
# default /tmp/hisa-build.lock, unused when flock is missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${HISA_BUILD_DIR:-$root/build}
runs=${1:-20000}
seed=${2:-1}
out=${3:-$build/fuzz-$seed}
shift $(($# < 3 ? $# : 3))

modes=${HISA_FUZZ_MODES:-mix}
targets=(hisa-fuzz)
if [[ $modes == *jit* ]]; then
  targets+=(hisa_runtime)
fi
lock=${HISA_BUILD_LOCK:-/tmp/hisa-build.lock}
if command -v flock >/dev/null; then
  flock "$lock" "$root/scripts/build.sh" "${targets[@]}"
else
  "$root/scripts/build.sh" "${targets[@]}"
fi

mkdir -p "$out"
# Run a private copy: a rebuild during the campaign must not replace it.
cp "$build/bin/hisa-fuzz" "$out/hisa-fuzz"
set +e
"$out/hisa-fuzz" --seed="$seed" --runs="$runs" --mode="$modes" \
  --runtime-lib="$build/lib/libhisa_runtime.so" \
  --jobs="${HISA_FUZZ_JOBS:-1}" --timeout="${HISA_FUZZ_TIMEOUT:-10}" \
  --mem-limit-mb="${HISA_FUZZ_MEM_MB:-4096}" --out="$out" --minimize \
  "$@" "$root/test" "$root/kernels-dsl" 2>"$out/log.txt" | tee "$out/summary.txt"
status=${PIPESTATUS[0]}
rm -f "$out/hisa-fuzz"
echo "findings and log in $out"
exit "$status"
