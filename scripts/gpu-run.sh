#!/usr/bin/env bash
# Runs the GPU tests and benchmarks on a machine with an NVIDIA GPU, from a
# checkout that holds build/lib/libhisa_runtime.so (built on the CPU machine:
# see docs/gpu-workflow.md). Logs and tables go to ${OUT:-/tmp/hisa-out}.
#
#   scripts/gpu-run.sh                 # tests + both benchmarks
#   HISA_GPU_RUN_BENCH=0 scripts/gpu-run.sh   # tests only
#   PYTEST_ARGS='-k pooling -x' scripts/gpu-run.sh
#
# Exits nonzero if a test fails (or cannot run); benchmark errors are reported
# in the summary and also make the exit status nonzero (2).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
out=${OUT:-/tmp/hisa-out}
mkdir -p "$out"

export PYTHONUNBUFFERED=1
export PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
export HISA_RUNTIME_LIB=${HISA_RUNTIME_LIB:-$root/build/lib/libhisa_runtime.so}
# A missing GPU, torch or library fails the tests here instead of skipping them.
export HISA_TESTS_STRICT=${HISA_TESTS_STRICT:-1}
# A private JIT cache for this run (bench_jit.py makes its own fresh ones).
cache_tmp=""
if [[ -z ${HISA_CACHE_DIR:-} ]]; then
  cache_tmp=$(mktemp -d /tmp/hisa-cache.XXXXXX)
  export HISA_CACHE_DIR=$cache_tmp
fi
trap '[[ -n $cache_tmp ]] && rm -rf "$cache_tmp"' EXIT

python=${PYTHON:-python3}

echo "== GPU"
nvidia-smi -L || echo "nvidia-smi failed"
echo "== runtime"
if [[ -f $HISA_RUNTIME_LIB ]]; then
  ls -l "$HISA_RUNTIME_LIB"
else
  echo "missing: $HISA_RUNTIME_LIB (build it with scripts/build.sh and copy build/lib/ here)"
fi
"$python" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())'

echo "== tests (python/tests)"
# shellcheck disable=SC2086
"$python" -m pytest -q -p no:cacheprovider -rfEs --junitxml="$out/pytest.xml" \
  python/tests ${PYTEST_ARGS:-} 2>&1 | tee "$out/pytest.log"
test_rc=${PIPESTATUS[0]}

bench_rc=0
if [[ ${HISA_GPU_RUN_BENCH:-1} != 0 ]]; then
  echo "== bench_memory_bound.py"
  "$python" python/bench/bench_memory_bound.py --out "$out/bench_memory_bound.md" \
    2>&1 | tee "$out/bench_memory_bound.log"
  rc=${PIPESTATUS[0]}; [[ $rc != 0 ]] && bench_rc=$rc
  echo "== bench_mqa.py"
  "$python" python/bench/bench_mqa.py --out "$out/bench_mqa.md"
  rc=$?; [[ $rc != 0 ]] && bench_rc=$rc
  echo "== bench_jit.py"
  "$python" python/bench/bench_jit.py --out "$out/bench_jit.md" \
    2>&1 | tee "$out/bench_jit.log"
  rc=${PIPESTATUS[0]}; [[ $rc != 0 ]] && bench_rc=$rc
fi

{
  echo "# hisa GPU run summary"
  echo
  nvidia-smi -L 2>/dev/null | sed 's/^/    /'
  echo
  "$python" - "$out/pytest.xml" "$test_rc" <<'PY'
import sys, xml.etree.ElementTree as ET
path, rc = sys.argv[1], sys.argv[2]
try:
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    get = lambda key: sum(int(s.get(key, 0)) for s in suites)
    total, fail, err, skip = get("tests"), get("failures"), get("errors"), get("skipped")
    print(f"Tests: {total - fail - err - skip} passed, {fail} failed, {err} errors, "
          f"{skip} skipped (pytest exit status {rc})")
except Exception as exc:
    print(f"Tests: no junit report ({exc}); pytest exit status {rc}")
PY
  for table in bench_memory_bound bench_mqa bench_jit; do
    if [[ -f $out/$table.md ]]; then
      echo
      cat "$out/$table.md"
    elif [[ ${HISA_GPU_RUN_BENCH:-1} != 0 ]]; then
      echo
      echo "$table: no table (see $out/$table.log)"
    fi
  done
  [[ $bench_rc != 0 ]] && { echo; echo "Benchmarks reported errors (status $bench_rc)."; }
} > "$out/summary.md"

echo
echo "== summary ($out/summary.md)"
cat "$out/summary.md"

if [[ $test_rc != 0 ]]; then
  exit "$test_rc"
fi
[[ $bench_rc != 0 ]] && exit 2
exit 0
