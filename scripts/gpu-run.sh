#!/usr/bin/env bash
# Runs the GPU tests and benchmarks on a machine with an NVIDIA GPU, from a
# checkout that holds build/lib/libhisa_runtime.so (built on the CPU machine:
# see docs/gpu-workflow.md). Logs and tables go to ${OUT:-/tmp/hisa-out}.
#
#   scripts/gpu-run.sh                 # tests + both benchmarks
#   HISA_GPU_RUN_BENCH=0 scripts/gpu-run.sh   # tests only
#   PYTEST_ARGS='-k pooling -x' scripts/gpu-run.sh
#   HISA_GPU_RUN_JOBS=4 scripts/gpu-run.sh   # the tests in 4 pytest processes at once
#   scripts/gpu-run.sh --sanitize      # or HISA_GPU_RUN_SANITIZE=1: compute-sanitizer mode
#
# Exits nonzero if a test fails (or cannot run); benchmark errors are reported
# in the summary and also make the exit status nonzero (2).
#
# Sanitize mode (instead of the tests and benchmarks; fits one 10-minute run):
# the small-size subset of python/tests/sanitize_subset.txt, which launches
# every kernel the GPU tests exercise, runs once without a sanitizer
# (baseline, which also fills the JIT cache), then under `compute-sanitizer
# --tool T` for T in memcheck, synccheck, racecheck (slowest last). Logs go to
# $OUT/sanitize-<run>.log (JUnit: .xml) and summary.md gets one table row per
# run: tests, passed, failed, sanitizer errors ("ERROR SUMMARY"), exit status,
# and the kernels named in the reports. It exits 0 only if every run passed
# every listed test with no sanitizer error. The subset's node ids are
# checked first (scripts/check-sanitize-subset.py; lit runs it on CI too). Settings (environment):
#   COMPUTE_SANITIZER       the binary (default: PATH, $CUDA_HOME/bin,
#                           /usr/local/cuda*/bin, the nvidia-cuda-sanitizer-api wheel)
#   HISA_SANITIZE_TOOLS     tools to run (default "memcheck synccheck racecheck")
#   HISA_SANITIZE_BASELINE  0 skips the run without a sanitizer
#   HISA_SANITIZE_TIMEOUT   limit of one run in seconds (default 180)
#   HISA_SANITIZE_BUDGET    seconds for the whole script; runs that would not
#                           fit are reported as not run (default 540)
#   HISA_SANITIZE_EXCLUDE   kernel-name substrings not checked (default
#                           "_Z xmma nvjet sgemm cutlass": torch's mangled C++
#                           kernels and cuBLAS's; hisa kernels have plain C
#                           names); set it empty to check every kernel
#   HISA_SANITIZE_ARGS      extra compute-sanitizer options (not repeating ours)
#   HISA_SANITIZE_SUBSET    another list of node ids relative to python/tests
# PYTEST_ARGS is not used in this mode.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1

sanitize=${HISA_GPU_RUN_SANITIZE:-0}
for arg in "$@"; do
  case $arg in
    --sanitize) sanitize=1 ;;
    -h | --help)
      sed -n '2,/^set -uo pipefail$/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "gpu-run.sh: unknown argument '$arg' (--sanitize or --help)" >&2
      exit 64
      ;;
  esac
done

out=${OUT:-/tmp/hisa-out}
mkdir -p "$out"

export PYTHONUNBUFFERED=1
export PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
export HISA_RUNTIME_LIB=${HISA_RUNTIME_LIB:-$root/build/lib/libhisa_runtime.so}
# A missing GPU, torch or library fails the tests here instead of skipping them.
export HISA_TESTS_STRICT=${HISA_TESTS_STRICT:-1}
# A kernel whose wgmmas ptxas serialized fails its tests instead of running slow.
export HISA_STRICT_WGMMA=${HISA_STRICT_WGMMA:-1}
# A private JIT cache for this run (bench_jit.py makes its own fresh ones).
cache_tmp=""
if [[ -z ${HISA_CACHE_DIR:-} ]]; then
  cache_tmp=$(mktemp -d /tmp/hisa-cache.XXXXXX)
  export HISA_CACHE_DIR=$cache_tmp
fi
trap '[[ -n $cache_tmp ]] && rm -rf "$cache_tmp"' EXIT

python=${PYTHON:-python3}

# ---- sanitize mode (--sanitize, HISA_GPU_RUN_SANITIZE=1) -------------------------

# Prints the compute-sanitizer to use; fails if there is none.
find_compute_sanitizer() {
  if [[ -n ${COMPUTE_SANITIZER:-} ]]; then
    printf '%s\n' "$COMPUTE_SANITIZER"
    return 0
  fi
  command -v compute-sanitizer && return 0
  local candidates=() versioned=() c
  [[ -n ${CUDA_HOME:-} ]] && candidates+=("$CUDA_HOME/bin/compute-sanitizer")
  [[ -n ${CUDA_PATH:-} ]] && candidates+=("$CUDA_PATH/bin/compute-sanitizer")
  candidates+=(/usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer)
  mapfile -t versioned < <(printf '%s\n' /usr/local/cuda-*/bin/compute-sanitizer | sort -rV)
  candidates+=("${versioned[@]}")
  for c in "${candidates[@]}"; do
    if [[ -x $c ]]; then
      printf '%s\n' "$c"
      return 0
    fi
  done
  # The pip wheel nvidia-cuda-sanitizer-api-cu12 (beside torch's nvidia-* wheels).
  "$python" - 2>/dev/null <<'PY'
import importlib.util, os, sys
try:
    spec = importlib.util.find_spec("nvidia.cuda_sanitizer_api")
except ImportError:
    spec = None
for base in (spec.submodule_search_locations or []) if spec else []:
    for rel in ("bin/compute-sanitizer", "compute-sanitizer/compute-sanitizer"):
        path = os.path.join(base, rel)
        if os.access(path, os.X_OK):
            print(path)
            sys.exit(0)
sys.exit(1)
PY
}

# Writes $out/summary.md from the runs so far (sanitize_runs: name:status:seconds:limit);
# returns 0 only if every run passed every listed test with no sanitizer error.
write_sanitize_summary() {
  local rc
  {
    echo "# hisa GPU run summary: compute-sanitizer"
    echo
    nvidia-smi -L 2>/dev/null | sed 's/^/    /'
    echo
    printf '%s\n' "${sanitize_notes[@]}"
    echo
    "$python" - "$out" "$sanitize_expected" "$sanitize_aborted" "${sanitize_runs[@]}" <<'PY'
import collections, re, sys, xml.etree.ElementTree as ET

out, expected, aborted, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]


def junit(path):
    try:
        root = ET.parse(path).getroot()
    except Exception:
        return None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    get = lambda key: sum(int(s.get(key, 0)) for s in suites)
    return get("tests"), get("failures") + get("errors"), get("skipped")


def from_log(text):
    # pytest -v ends each test's line with "PASSED  [ 12%]" (a sanitizer
    # report may sit between the node id and the outcome).
    n = {k: len(re.findall(rf"\b{k}\b(?=\s+\[\s*\d+%\])", text))
         for k in ("PASSED", "FAILED", "ERROR", "SKIPPED")}
    return sum(n.values()), n["FAILED"] + n["ERROR"], n["SKIPPED"]


rows, notes, failed_runs = [], [], []
for run in runs:
    name, status, seconds, limit = run.split(":")
    if status == "not-run":
        rows.append(f"| {name} | - | - | - | - | - | - | - | not run: the time budget was spent |")
        failed_runs.append(name)
        continue
    status = int(status)
    try:
        with open(f"{out}/sanitize-{name}.log", errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    counts = junit(f"{out}/sanitize-{name}.xml")
    source = ""
    if counts is None:
        counts, source = from_log(text), " (from the log)"
    total, failed, skipped = counts
    passed = total - failed - skipped
    # racecheck ends with "RACECHECK SUMMARY: N hazards displayed (E errors,
    # W warnings)" instead of an ERROR SUMMARY line.
    sums = [int(x) for x in re.findall(r"ERROR SUMMARY: (\d+) errors?", text)]
    sums += [int(x) for x in re.findall(
        r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?", text)]
    errors = sum(sums) if sums else None
    reasons = []
    if status in (124, 137):
        reasons.append(f"timed out ({limit} s limit)")
    elif status == 86 and not errors:
        reasons.append("sanitizer errors")
    elif status == 5:
        reasons.append("pytest collected no test (exit 5)")
    elif status == 4:
        reasons.append("pytest usage error or a listed test not found (exit 4)")
    elif status != 0 and status != 86:
        reasons.append(f"exit status {status}")
    if name != "baseline":
        if errors is None:
            reasons.append("no ERROR/RACECHECK SUMMARY (the sanitizer did not finish)")
        elif errors:
            reasons.append(f"{errors} sanitizer errors")
    if passed != expected:
        reasons.append(f"{passed} of {expected} listed tests passed")
    verdict = "ok" if not reasons else "; ".join(reasons)
    if reasons:
        failed_runs.append(name)
    shown = "-" if name == "baseline" else ("?" if errors is None else str(errors))
    rows.append(f"| {name} | {total}{source} | {passed} | {failed} | {skipped} | {shown} | "
                f"{status} | {seconds} | {verdict} |")

    # What the reports name: kernels (at <kernel>+0x<offset>) and failing API calls.
    named = collections.Counter()
    for line in text.splitlines():
        if not line.startswith("=") or "Host Frame" in line:
            continue
        for m in re.finditer(r"\bat (?:0x[0-9a-fA-F]+ in )?([^\s+][^+]*?)\+0x[0-9a-fA-F]+", line):
            named[m.group(1).strip()[:80]] += 1
        for m in re.finditer(r"\bat 0x[0-9a-fA-F]+ in ([\w$.:]+)\s*$", line):
            named[m.group(1)[:80]] += 1
        for m in re.finditer(r"on CUDA API call to (\w+)", line):
            named[f"API call {m.group(1)}"] += 1
    race = re.findall(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)", text)
    warnings = sum(int(w) for _, _, w in race)
    details = []
    if named:
        details.append("reports name " + ", ".join(f"`{k}` ({v})" for k, v in named.most_common(8)))
    if warnings:
        details.append(f"{warnings} racecheck warnings (not errors)")
    if details:
        notes.append(f"- {name}: " + "; ".join(details))

print(f"Listed tests: {expected}. Logs: `sanitize-<run>.log`, JUnit: `sanitize-<run>.xml`.")
print()
print("| run | tests | passed | failed | skipped | sanitizer errors | exit status | time (s) | result |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
print("\n".join(rows))
if notes:
    print()
    print("\n".join(notes))
print()
if aborted:
    print(f"Result: FAILED (stopped: {aborted}).")
    sys.exit(1)
if not runs:
    print("Result: nothing ran.")
    sys.exit(1)
if failed_runs:
    print(f"Result: FAILED ({', '.join(failed_runs)}).")
    sys.exit(1)
print(f"Result: every run passed all {expected} listed tests with no sanitizer error.")
PY
    rc=$?
  } >"$out/summary.md"
  return "$rc"
}

# Stops sanitize mode before any run, saying why in summary.md.
sanitize_abort() {
  echo "gpu-run.sh --sanitize: $1" >&2
  sanitize_aborted=$1
  write_sanitize_summary
  cat "$out/summary.md"
  return 1
}

# run_subset NAME [COMMAND PREFIX...]: pytest over the listed tests, under the
# prefix (a compute-sanitizer command line; none for the baseline), within
# the per-run limit and what is left of the budget.
run_subset() {
  local name=$1
  shift
  local limit=$sanitize_limit left=$((sanitize_budget - SECONDS))
  ((left < limit)) && limit=$left
  if ((limit < 30)); then
    echo "== $name: not run (the ${sanitize_budget} s budget is spent)"
    sanitize_runs+=("$name:not-run:0:0")
    write_sanitize_summary
    return
  fi
  local log=$out/sanitize-$name.log xml=$out/sanitize-$name.xml
  rm -f "$log" "$xml"
  local pytest=("$python" -m pytest -v -p no:cacheprovider -rfEs --durations=5 --junitxml="$xml")
  echo "== $name (limit $limit s; progress: tail -f $log)"
  {
    printf '$'
    printf ' %q' timeout "$limit" "$@" "${pytest[@]}"
    printf ' <the %d tests of %s>\n' "$sanitize_expected" "$sanitize_subset"
  } >"$log"
  # Straight into the log, not through a pipe: a process left behind by a
  # timeout cannot hold the script up. timeout runs the command in a process
  # group of its own, which Ctrl-C or a TERM to this script also stops.
  local start=$SECONDS status pid
  timeout -k 20 "$limit" "$@" "${pytest[@]}" "${sanitize_ids[@]}" >>"$log" 2>&1 &
  pid=$!
  # shellcheck disable=SC2064  # $pid now, not when the trap runs
  trap "kill -TERM -- -$pid 2>/dev/null; echo 'gpu-run.sh: interrupted' >&2; exit 130" INT TERM
  wait "$pid"
  status=$?
  trap - INT TERM
  grep -E -e 'ERROR SUMMARY|RACECHECK SUMMARY|^(FAILED|ERROR)[: ]|^=+ .* in [0-9.]+s' "$log" |
    tail -n 12 | sed 's/^/    /'
  sanitize_runs+=("$name:$status:$((SECONDS - start)):$limit")
  write_sanitize_summary
}

run_sanitize_mode() {
  sanitize_subset=${HISA_SANITIZE_SUBSET:-$root/python/tests/sanitize_subset.txt}
  sanitize_limit=${HISA_SANITIZE_TIMEOUT:-180}
  sanitize_budget=${HISA_SANITIZE_BUDGET:-540}
  sanitize_runs=()
  sanitize_notes=()
  sanitize_expected=0
  sanitize_aborted=""
  local tools=${HISA_SANITIZE_TOOLS:-memcheck synccheck racecheck} tool

  echo "== compute-sanitizer"
  for tool in $tools; do
    if [[ ! $tool =~ ^[a-z]+$ ]]; then
      sanitize_abort "bad tool name '$tool' in HISA_SANITIZE_TOOLS"
      return 1
    fi
  done
  if [[ ! -r $sanitize_subset ]]; then
    sanitize_abort "cannot read the subset $sanitize_subset"
    return 1
  fi
  mapfile -t sanitize_ids < <(sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' \
    -e '/^$/d' "$sanitize_subset")
  sanitize_expected=${#sanitize_ids[@]}
  if ((sanitize_expected == 0)); then
    sanitize_abort "$sanitize_subset lists no test"
    return 1
  fi
  local twice
  twice=$(printf '%s\n' "${sanitize_ids[@]}" | sort | uniq -d)
  if [[ -n $twice ]]; then
    sanitize_abort "$sanitize_subset lists tests twice: ${twice//$'\n'/, }"
    return 1
  fi
  # A stale node id would stop pytest before any test runs (exit 4).
  local stale
  if ! stale=$("$python" "$root/scripts/check-sanitize-subset.py" "$root/python/tests" \
    "$sanitize_subset" 2>&1); then
    sanitize_abort "$sanitize_subset names tests pytest would not collect: ${stale//$'\n'/; }"
    return 1
  fi
  sanitize_ids=("${sanitize_ids[@]/#/python/tests/}")

  local cs
  if ! cs=$(find_compute_sanitizer) || [[ ! -x $cs ]]; then
    sanitize_abort "compute-sanitizer not found${cs:+ ($cs is not executable)}: set COMPUTE_SANITIZER to it (CUDA toolkit: bin/compute-sanitizer; the pip wheel nvidia-cuda-sanitizer-api-cu12: nvidia/cuda_sanitizer_api/bin/compute-sanitizer)"
    return 1
  fi
  local version help
  version=$("$cs" --version 2>&1 | grep -i -m1 'version')
  help=$("$cs" --help 2>&1)
  echo "$cs: $version"
  has_option() { grep -qE -e "--$1( |\$)" <<<"$help"; }

  # Options of every tool. --check-exit-code no: a failing test is pytest's
  # exit status, not a sanitizer error. Kernels whose mangled name contains
  # an excluded substring are not instrumented (torch's and cuBLAS's; hisa's
  # kernels are named by their tile.kernel symbol, a plain C name).
  local common=(--error-exitcode 86) pattern exclude_opt="" dir
  # The pip wheel's binary sits in bin/ with its injection libraries in lib/.
  dir=$(dirname "$(readlink -f "$cs")")
  if [[ ! -e $dir/libsanitizer-collection.so && -e $dir/../lib/libsanitizer-collection.so ]]; then
    common+=(--injection-path "$(cd "$dir/../lib" && pwd)")
  fi
  has_option print-limit && common+=(--print-limit 100)
  has_option target-processes && common+=(--target-processes all)
  has_option show-backtrace && common+=(--show-backtrace device)
  has_option check-exit-code && common+=(--check-exit-code no)
  if has_option kernel-name-exclude; then
    exclude_opt=--kernel-name-exclude
  elif has_option kernel-regex-exclude; then
    exclude_opt=--kernel-regex-exclude
  fi
  if [[ -n $exclude_opt ]]; then
    for pattern in ${HISA_SANITIZE_EXCLUDE-_Z xmma nvjet sgemm cutlass}; do
      common+=("$exclude_opt" "kns=$pattern")
    done
  fi
  local extra=()
  read -r -a extra <<<"${HISA_SANITIZE_ARGS:-}"
  # memcheck: every torch tensor in its own cudaMalloc (no caching
  # allocator) with padding after it, so that an access past a tensor's end
  # is reported even where another tensor would follow it; a kernel with an
  # error is terminated, later tests keep a working context.
  local memcheck=(--leak-check no)
  has_option padding && memcheck+=(--padding 32768)
  has_option destroy-on-device-error && memcheck+=(--destroy-on-device-error kernel)

  sanitize_notes=(
    "compute-sanitizer: \`$cs\` ($version)"
    ""
    "Subset: \`${sanitize_subset#"$root"/}\`, $sanitize_expected tests (node ids under python/tests); one JIT cache for all runs (\`$HISA_CACHE_DIR\`); baseline: the same tests without a sanitizer."
    ""
    "Options of every tool: \`${common[*]}${extra[*]:+ ${extra[*]}}\`; memcheck adds \`${memcheck[*]}\` and runs with PYTORCH_NO_CUDA_MEMORY_CACHING=1."
  )
  [[ -z $exclude_opt ]] && sanitize_notes+=("" "This compute-sanitizer has no kernel exclusion option: torch's and cuBLAS's kernels are checked too.")
  write_sanitize_summary

  if [[ ${HISA_SANITIZE_BASELINE:-1} != 0 ]]; then
    run_subset baseline
  fi
  for tool in $tools; do
    case $tool in
      memcheck)
        run_subset "$tool" env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$cs" --tool "$tool" "${common[@]}" \
          "${memcheck[@]}" "${extra[@]}"
        ;;
      *) run_subset "$tool" "$cs" --tool "$tool" "${common[@]}" "${extra[@]}" ;;
    esac
  done

  echo
  echo "== summary ($out/summary.md)"
  write_sanitize_summary
  local rc=$?
  cat "$out/summary.md"
  return "$rc"
}

echo "== GPU"
nvidia-smi -L || echo "nvidia-smi failed"
echo "== runtime"
if [[ -f $HISA_RUNTIME_LIB ]]; then
  ls -l "$HISA_RUNTIME_LIB"
else
  echo "missing: $HISA_RUNTIME_LIB (build it with scripts/build.sh and copy build/lib/ here)"
fi
"$python" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())'

if [[ $sanitize != 0 ]]; then
  run_sanitize_mode
  exit $?
fi

echo "== tests (python/tests)"
jobs=${HISA_GPU_RUN_JOBS:-1}
if ! [[ $jobs =~ ^[1-9][0-9]?$ ]]; then
  echo "gpu-run.sh: HISA_GPU_RUN_JOBS=$jobs is not a number from 1 to 99" >&2
  exit 64
fi
rm -f "$out"/pytest*.xml "$out"/pytest-*.log
if [[ $jobs == 1 ]]; then
  # shellcheck disable=SC2086
  "$python" -m pytest -q -p no:cacheprovider -rfEs --junitxml="$out/pytest.xml" \
    python/tests ${PYTEST_ARGS:-} 2>&1 | tee "$out/pytest.log"
  test_rc=${PIPESTATUS[0]}
else
  # The JIT's compiles are CPU-bound and the GPU machine has 16 cores or
  # more: the test files go to $jobs pytest processes at once (largest file
  # first, each to the group with the fewest bytes so far), each with a
  # JIT cache of its own; the whole suite took 132 s on an H200 in four
  # (forty-second session) instead of several 10-minute calls.
  mapfile -t groups < <("$python" - "$jobs" python/tests/test_*.py <<'PY'
import os, sys
jobs, files = int(sys.argv[1]), sys.argv[2:]
groups, sizes = [[] for _ in range(jobs)], [0] * jobs
for path in sorted(files, key=os.path.getsize, reverse=True):
    i = sizes.index(min(sizes))
    groups[i].append(path)
    sizes[i] += os.path.getsize(path)
for group in groups:
    print(" ".join(group))
PY
  )
  pids=()
  for i in "${!groups[@]}"; do
    [[ -z ${groups[$i]} ]] && continue
    # shellcheck disable=SC2086
    HISA_CACHE_DIR=$HISA_CACHE_DIR/job$i "$python" -m pytest -q -p no:cacheprovider -rfEs \
      --junitxml="$out/pytest-$i.xml" ${groups[$i]} ${PYTEST_ARGS:-} \
      > "$out/pytest-$i.log" 2>&1 &
    pids+=("$i:$!")
  done
  test_rc=0 collected=0
  for entry in "${pids[@]}"; do
    i=${entry%%:*}
    wait "${entry#*:}"
    rc=$?
    # pytest's 5 (no test collected: PYTEST_ARGS deselected a job's files)
    # fails the run only if no job collected any, as one process would.
    [[ $rc != 5 ]] && collected=1
    [[ $rc != 0 && $rc != 5 ]] && test_rc=$rc
    echo "-- pytest job $i (${groups[$i]//python\/tests\//}): $(tail -n 1 "$out/pytest-$i.log")"
  done
  [[ $test_rc == 0 && $collected == 0 ]] && test_rc=5
  cat "$out"/pytest-*.log > "$out/pytest.log"
fi

bench_rc=0
if [[ ${HISA_GPU_RUN_BENCH:-1} != 0 ]]; then
  echo "== bench_memory_bound.py"
  "$python" python/bench/bench_memory_bound.py --out "$out/bench_memory_bound.md" \
    2>&1 | tee "$out/bench_memory_bound.log"
  rc=${PIPESTATUS[0]}; [[ $rc != 0 ]] && bench_rc=$rc
  echo "== bench_mqa.py"
  "$python" python/bench/bench_mqa.py --out "$out/bench_mqa.md" \
    2>&1 | tee "$out/bench_mqa.log"
  rc=${PIPESTATUS[0]}; [[ $rc != 0 ]] && bench_rc=$rc
  echo "== bench_jit.py"
  "$python" python/bench/bench_jit.py --out "$out/bench_jit.md" \
    2>&1 | tee "$out/bench_jit.log"
  rc=${PIPESTATUS[0]}; [[ $rc != 0 ]] && bench_rc=$rc
  # The top-k and indexer tables measure TileLang's kernels too when
  # HISA_ANCHORS names the anchors' tilelang_examples folder (TileLang on
  # PYTHONPATH, see ../shared/anchors/README.md).
  anchor_args=()
  [[ -n ${HISA_ANCHORS:-} ]] && anchor_args=(--anchors "$HISA_ANCHORS")
  for bench in bench_topk bench_indexer bench_sparse_attn bench_v4_layer; do
    echo "== $bench.py"
    extra=()
    # The attention bench also times the warp-specialized kernel variants,
    # and TileLang on the shapes HISA_ANCHOR_SHAPES names: "all" (default),
    # "issue" (every shape of the issue's targets, bench_sparse_attn.ISSUE_SHAPES:
    # 3 prefill and the 4 decode shapes at B = 128) or indices; a list that
    # leaves out an issue shape is reported in the table.
    [[ $bench == bench_sparse_attn ]] &&
      extra=(--variants --anchor-shapes "${HISA_ANCHOR_SHAPES:-all}")
    "$python" python/bench/$bench.py --out "$out/$bench.md" "${anchor_args[@]}" "${extra[@]}" \
      2>&1 | tee "$out/$bench.log"
    rc=${PIPESTATUS[0]}; [[ $rc != 0 ]] && bench_rc=$rc
  done
  # The C ABI's host time per call with the real driver
  # (test/FakeDriver/HostOverheadBench.cpp; carry the 36 KB binary).
  host_bench=${HISA_HOST_BENCH:-$root/build/test/FakeDriver/HisaHostOverheadBench}
  if [[ -x $host_bench ]]; then
    echo "== HisaHostOverheadBench (real driver)"
    # The system's driver first (the binary's run path may name the fake).
    ldconfig_bin=$(command -v ldconfig || echo /sbin/ldconfig)
    cuda_lib=$("$ldconfig_bin" -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')
    LD_LIBRARY_PATH="${cuda_lib:+$(dirname "$cuda_lib"):}$(dirname "$HISA_RUNTIME_LIB")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      "$host_bench" 200 > "$out/host_overhead.md" 2> "$out/host_overhead.log"
    rc=$?; [[ $rc != 0 ]] && bench_rc=$rc
    if ! grep -q "real driver" "$out/host_overhead.md"; then
      echo "HisaHostOverheadBench did not run on the real driver (libcuda.so.1 not found by ldconfig)" \
        | tee -a "$out/host_overhead.md"
      bench_rc=3
    fi
    cat "$out/host_overhead.md"
  fi
fi

{
  echo "# hisa GPU run summary"
  echo
  nvidia-smi -L 2>/dev/null | sed 's/^/    /'
  echo
  "$python" - "$out" "$test_rc" <<'PY'
import glob, os, sys, xml.etree.ElementTree as ET
out, rc = sys.argv[1], sys.argv[2]
try:
    paths = sorted(glob.glob(os.path.join(out, "pytest*.xml")))
    if not paths:
        raise FileNotFoundError(os.path.join(out, "pytest.xml"))
    suites = []
    for path in paths:
        root = ET.parse(path).getroot()
        suites += [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    get = lambda key: sum(int(s.get(key, 0)) for s in suites)
    total, fail, err, skip = get("tests"), get("failures"), get("errors"), get("skipped")
    print(f"Tests: {total - fail - err - skip} passed, {fail} failed, {err} errors, "
          f"{skip} skipped (pytest exit status {rc})")
except Exception as exc:
    print(f"Tests: no junit report ({exc}); pytest exit status {rc}")
PY
  for table in bench_memory_bound bench_mqa bench_jit bench_topk bench_indexer bench_sparse_attn bench_v4_layer host_overhead; do
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
