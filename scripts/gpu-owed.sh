#!/usr/bin/env bash
# The GPU runs owed since the forty-fourth session, most valuable first, in
# one call of at most ~10 minutes (each step has its own time limit, and its
# output is written to $OUT as it finishes, so a run cut short still returns
# what it did):
#   1. what bounds decode attention (probes/decode_floor.py: index
#      patterns, torch's gather; probes/sparse_attn_gather_only.mlir: the
#      kernel's gathers alone; probes/sparse_attn_sorted_rows.mlir: each
#      token's rows sorted in the kernel before its gathers). (Until the forty-sixth session, step 1 was
#      the A/B of deeper key pipelines, which measured slower:
#      docs/performance.md.)
#   2. test_torch_cpp.py, test_launch_graphs.py, test_torch_ops.py (all
#      passed on an H100 in the forty-sixth session), and the new
#      test_sparse_attn.py::test_narrower_key_tiles;
#   3. host time per Python call (bench_indexer.host_time_rows);
#   4. with ANCHORS: bench_topk.py against TileLang (scripts/gpu-card.sh);
#   5. probes/hbm_row_gather: random 1 KiB rows from HBM by gather
#      instruction, if its binary was built (ran on H100s in the
#      fifty-first session);
#   6. (fifty-first session; runs before step 1) prefill against
#      FlashMLA: sparse_attn_wg without any fence or warpgroup barrier
#      (upper bound, timing only), and probes/flashmla_ab.py if
#      libflashmla_prefill.so was built (HISA_FLASHMLA_LIB or the probes
#      folder).
#   7. (fifty-third session; runs first) the +elide-sync rules, before they
#      are on by default: racecheck and synccheck of
#      python/tests/sanitize_elide_sync.txt and the whole GPU suite with
#      HISA_ELIDE_SYNC=1, then sparse_attn_wg_ab.py twice (the built-in
#      source without and with +elide-sync, the sinks-first probe and
#      kernels-dsl's sparse_attn_wg_handover variant with it). If all pass and it is not slower:
#      `git apply docs/proposals/elide-sync-default.patch`, rebuild, and
#      the sparse_attn card (scripts/gpu-card.sh) on an H200.
#   8. (fifty-fourth session; runs right after 7) a candidate library built
#      with a not-yet-landed compiler change (HISA_CANDIDATE_LIB, .so or
#      .so.xz with its libhisa_torch.so beside it, from
#      scripts/build-candidate.sh; the first,
#      picked-staging-swizzle.patch, measured 3-8% faster at prefill and
#      landed in the fifty-fifth session): the sparse attention
#      tests that launch sparse_attn_wg, sparse_attn_ws and the epilogue
#      variants with it, then probes/library_ab.py on prefill, LIBRARY
#      against the candidate, two rounds. HISA_CANDIDATE_TESTS (pytest
#      files), HISA_CANDIDATE_FILTER (-k) and HISA_CANDIDATE_AB
#      (library_ab.py's groups; HISA_CANDIDATE_AB_TIMEOUT, default 170 s)
#      choose other tests and rows.
# All four ran on H100s in the forty-seventh session (docs/performance.md);
# what stays owed is an H200: scripts/gpu-card.sh ANCHORS for the card, and
# step 3 for the host time on an H200 host. (The forty-eighth session's new
# GPU tests and their sanitizer runs also passed on H100s only; on an H200,
# `scripts/gpu-run.sh --sanitize` covers them through sanitize_subset.txt.)
#
#   scripts/gpu-owed.sh LIBRARY [ANCHORS]
#
# LIBRARY is the runtime library (.so, or .so.xz to unpack), with the C++
# torch kernels (libhisa_torch.so and its .torch-version stamp, from
# scripts/build-torch-ops.sh for the GPU machine's torch) beside it; ANCHORS
# a copy of ../shared/anchors. HISA_OWED_ONLY="1 3" runs those steps only.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
if [[ $# -lt 1 || ! -f $1 ]]; then
  echo "gpu-owed.sh: first argument must be the runtime library (.so or .so.xz)" >&2
  exit 64
fi
library=$1
anchors=${2:-}
out=${OUT:-/tmp/hisa-out}
mkdir -p "$out" build/lib
if [[ $library == *.xz ]]; then
  xz -dc "$library" > build/lib/libhisa_runtime.so ||
    { echo "gpu-owed.sh: cannot unpack $library" >&2; exit 1; }
elif [[ $(realpath "$library") != $(realpath -m build/lib/libhisa_runtime.so) ]]; then
  cp "$library" build/lib/libhisa_runtime.so || exit 1
fi
cp "$(dirname "$library")"/libhisa_torch.so* build/lib/ 2>/dev/null

export PYTHONPATH=$root/python PYTHONDONTWRITEBYTECODE=1 HISA_TESTS_STRICT=1
only=${HISA_OWED_ONLY:-1 2 3 4 5 6 7 8}
wants() { [[ " $only " == *" $1 "* ]]; }
nvidia-smi -L
echo "== gpu-owed.sh, library $(md5sum < build/lib/libhisa_runtime.so | cut -c1-12), $(date -u +%FT%TZ)"

if wants 7; then
  # The fifty-second session's synchronization rules (+elide-sync, off by
  # default until this passes): the sanitizers on the kernels they change,
  # the whole GPU suite with them, and their timing on prefill.
  step7_start=$SECONDS
  # First: does racecheck take bar.arrive -> bar.sync as ordering (PTX
  # 9.7.15.1 says it orders the arriving thread's earlier accesses)? The
  # textbook hand-over in plain CUDA, without (0) and with a membar.cta
  # before each arrive (1) or a warpgroup bar.sync after the writes (2).
  probe=python/bench/probes/handover_racecheck
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  if [[ -x $probe && -n $cs ]]; then
    for mode in 0 1 2; do
      timeout 60 "$cs" --tool racecheck --racecheck-report hazard --print-limit 2 "$probe" "$mode" \
        > "$out/owed-elide-probe$mode.txt" 2>&1
      echo "== 7-. handover_racecheck mode $mode (status $?)"
      grep -E "mode|hazard|SUMMARY" "$out/owed-elide-probe$mode.txt" | head -4
    done
  fi
  HISA_ELIDE_SYNC=1 HISA_SANITIZE_SUBSET=$root/python/tests/sanitize_elide_sync.txt \
    HISA_SANITIZE_TOOLS="racecheck synccheck" HISA_SANITIZE_BUDGET=170 HISA_SANITIZE_TIMEOUT=90 \
    OUT=$out/owed-elide-sanitize timeout 185 scripts/gpu-run.sh --sanitize \
    > "$out/owed-elide-sanitize.txt" 2>&1
  echo "== 7a. +elide-sync under racecheck and synccheck (status $?)"
  tail -8 "$out/owed-elide-sanitize.txt"
  HISA_ELIDE_SYNC=1 HISA_GPU_RUN_BENCH=0 HISA_GPU_RUN_JOBS=6 OUT=$out/owed-elide-tests \
    timeout 180 scripts/gpu-run.sh > "$out/owed-elide-tests.txt" 2>&1
  echo "== 7b. the GPU suite with +elide-sync (status $?)"; tail -8 "$out/owed-elide-tests.txt"
  p=python/bench/probes
  for round in 1 2; do
    # (A second round only where it still fits one 10-minute call.)
    if ((round == 2 && SECONDS - step7_start > 440)); then
      echo "== 7c/7d. round 2 skipped: $((SECONDS - step7_start)) s into step 7"
      break
    fi
    HISA_CACHE_DIR=/tmp/hisa-owed-elide timeout 80 python3 $p/sparse_attn_wg_ab.py --prefill \
      - "-@sm_90a,+elide-sync" "$p/sparse_attn_wg_sink_first.mlir@sm_90a,+elide-sync" \
      > "$out/owed-elide-ab$round.txt" 2>&1
    echo "== 7c. prefill with +elide-sync, round $round (status $?)"
    tail -5 "$out/owed-elide-ab$round.txt"
    # kernels-dsl's hand-over variant (its "operator" column is the same).
    HISA_CACHE_DIR=/tmp/hisa-owed-elide timeout 60 python3 $p/sparse_attn_wg_ab.py \
      --kernel sparse_attn_wg_handover --prefill "-@sm_90a,+elide-sync" - \
      > "$out/owed-elide-handover$round.txt" 2>&1
    echo "== 7d. sparse_attn_wg_handover, round $round (status $?)"
    tail -5 "$out/owed-elide-handover$round.txt"
  done
fi
if wants 8 && [[ -n ${HISA_CANDIDATE_LIB:-} ]]; then
  # A candidate library (header, step 8): correct first, then timed against
  # LIBRARY in alternating processes.
  candidate_dir=$(mktemp -d /tmp/hisa-candidate.XXXXXX)
  if [[ $HISA_CANDIDATE_LIB == *.xz ]]; then
    xz -dc "$HISA_CANDIDATE_LIB" > "$candidate_dir/libhisa_runtime.so"
  else
    cp "$HISA_CANDIDATE_LIB" "$candidate_dir/libhisa_runtime.so"
  fi
  cp "$(dirname "$HISA_CANDIDATE_LIB")"/libhisa_torch.so* "$candidate_dir"/ 2>/dev/null
  # HISA_CANDIDATE_TESTS: pytest arguments (default the sparse attention
  # tests of sparse_attn_wg, sparse_attn_ws and the epilogue variants);
  # HISA_CANDIDATE_AB: library_ab.py's groups (default prefill,decode).
  read -r -a candidate_tests <<< "${HISA_CANDIDATE_TESTS:-python/tests/test_sparse_attn.py}"
  candidate_filter=${HISA_CANDIDATE_FILTER:-prefill_runs_flashmla or warpgroup_schedule or row_maxima_that_grow_late or inverse_rope_in_the_epilogue or decode_shapes or random}
  HISA_RUNTIME_LIB=$candidate_dir/libhisa_runtime.so HISA_CACHE_DIR=$candidate_dir/cache \
    timeout "${HISA_CANDIDATE_TEST_TIMEOUT:-150}" python3 -m pytest -q -p no:cacheprovider \
    "${candidate_tests[@]}" -k "$candidate_filter" \
    > "$out/owed-candidate-tests.txt" 2>&1
  echo "== 8a. the candidate's tests: ${candidate_tests[*]} -k '$candidate_filter' (status $?)"
  tail -4 "$out/owed-candidate-tests.txt"
  timeout "${HISA_CANDIDATE_AB_TIMEOUT:-170}" python3 python/bench/probes/library_ab.py --only "${HISA_CANDIDATE_AB:-prefill,decode}" --rounds 2 \
    --lib "$(realpath build/lib/libhisa_runtime.so)" --lib "$candidate_dir/libhisa_runtime.so" \
    > "$out/owed-candidate-ab.txt" 2>&1
  echo "== 8b. LIBRARY (A) against the candidate (B) (status $?)"
  tail -12 "$out/owed-candidate-ab.txt"
fi
if wants 6; then
  # Prefill against FlashMLA (docs/proposals/sparse-attn-flashmla-gap.md):
  # the upper bound of what sparse_attn_wg's fences and warpgroup barriers
  # cost together (deleted from its PTX: racy, timing only), then FlashMLA
  # beside hisa if libflashmla_prefill.so was built
  # (python/bench/probes/flashmla_build.sh on the CPU machine).
  lib=$(realpath build/lib/libhisa_runtime.so)
  w=$root/python/bench/probes/ptxas_sparse_attn_wg_fences.py
  REAL_PTXAS=${REAL_PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)} \
    timeout 240 python3 python/bench/probes/library_ab.py --only prefill --rounds 2 \
    --lib "$lib" --lib "$lib,HISA_PTXAS=$w,PTX_EDIT=allfences+allwgbar,HISA_AB_UNCHECKED=1" \
    > "$out/owed-allfences.txt" 2>&1
  echo "== 6a. fences and warpgroup barriers, upper bound (status $?)"; tail -6 "$out/owed-allfences.txt"
  fla=${HISA_FLASHMLA_LIB:-python/bench/probes/libflashmla_prefill.so}
  if [[ -f $fla ]]; then
    HISA_CACHE_DIR=/tmp/hisa-owed timeout 150 python3 python/bench/probes/flashmla_ab.py \
      --lib "$fla" > "$out/owed-flashmla.txt" 2>&1
    echo "== 6b. FlashMLA beside hisa (status $?)"; tail -5 "$out/owed-flashmla.txt"
  else
    echo "== 6b. skipped: build $fla first (python/bench/probes/flashmla_build.sh)"
  fi
fi
if wants 1; then
  # What bounds decode (the forty-sixth session's A/B ruled out the
  # gathers' latency): index patterns on the operator, torch's gather of the
  # same rows, and the operator's kernel reduced to its gathers.
  HISA_CACHE_DIR=/tmp/hisa-owed-ab timeout 120 python3 \
    python/bench/probes/decode_floor.py > "$out/owed-decode-floor.txt" 2>&1
  echo "== 1a. decode floor (status $?)"; tail -22 "$out/owed-decode-floor.txt"
  gather=python/bench/probes/sparse_attn_gather_only.mlir
  HISA_CACHE_DIR=/tmp/hisa-owed-ab timeout 90 python3 \
    python/bench/probes/sparse_attn_wg_ab.py --kernel sparse_attn_ws --ablation --decode \
    - $gather - $gather > "$out/owed-decode-gather-only.txt" 2>&1
  echo "== 1b. decode gathers only (status $?)"; tail -8 "$out/owed-decode-gather-only.txt"
  sorted=python/bench/probes/sparse_attn_sorted_rows.mlir
  HISA_CACHE_DIR=/tmp/hisa-owed-ab timeout 90 python3 \
    python/bench/probes/sparse_attn_wg_ab.py --kernel sparse_attn_ws --decode \
    - $sorted - $sorted > "$out/owed-decode-sorted-rows.txt" 2>&1
  echo "== 1c. decode, rows sorted in the kernel (status $?)"; tail -8 "$out/owed-decode-sorted-rows.txt"
fi
if wants 2; then
  HISA_CACHE_DIR=/tmp/hisa-owed timeout 150 python3 -m pytest -q \
    -p no:cacheprovider python/tests/test_torch_cpp.py \
    python/tests/test_launch_graphs.py python/tests/test_torch_ops.py \
    > "$out/owed-tests.txt" 2>&1
  echo "== 2. tests (status $?)"
  grep -E "passed|failed|FAILED|Error" "$out/owed-tests.txt" | tail -8
  HISA_CACHE_DIR=/tmp/hisa-owed timeout 90 python3 -m pytest -q \
    -p no:cacheprovider python/tests/test_sparse_attn.py -k narrower_key_tiles \
    > "$out/owed-tests-key-tiles.txt" 2>&1
  echo "== 2b. narrower key tiles (status $?)"
  grep -E "passed|failed|FAILED|Error" "$out/owed-tests-key-tiles.txt" | tail -4
fi
if wants 3; then
  HISA_CACHE_DIR=/tmp/hisa-owed timeout 60 python3 -c "
import sys; sys.path[:0] = ['python', 'python/bench']
import bench_indexer
lines, failures = [], []
bench_indexer.host_time_rows(lines, failures)
print('\n'.join(lines)); print('failures', failures)" > "$out/owed-host.txt" 2>&1
  echo "== 3. host time (status $?)"; tail -12 "$out/owed-host.txt"
fi
if wants 4 && [[ -n $anchors ]]; then
  HISA_CARD_ONLY=topk timeout 180 scripts/gpu-card.sh "$anchors" \
    build/lib/libhisa_runtime.so > "$out/owed-topk.txt" 2>&1
  echo "== 4. topk card (status $?)"; tail -20 "$out/owed-topk.txt"
fi
if wants 5; then
  # Random 1 KiB rows from HBM by gather instruction (decode H = 64's
  # bound; python/bench/probes/build.sh builds the binary on the CPU
  # machine, which has nvcc).
  probe=python/bench/probes/hbm_row_gather
  if [[ -x $probe ]]; then
    timeout 90 "$probe" > "$out/owed-hbm-row-gather.txt" 2>&1
    echo "== 5. hbm_row_gather (status $?)"; tail -26 "$out/owed-hbm-row-gather.txt"
  else
    echo "== 5. skipped: build $probe first (python/bench/probes/build.sh)"
  fi
fi
date -u
