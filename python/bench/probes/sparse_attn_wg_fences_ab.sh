#!/usr/bin/env bash
# On the GPU machine, from the repository root: sparse_attn_wg with fences
# and warpgroup barriers deleted from its PTX (ptxas_sparse_attn_wg_fences.py
# as the JIT's ptxas) timed against the library's own kernel at the three
# prefill shapes (and, wrong on purpose, the kernel without its waits for
# the two late KV halves: the upper bound of what their refill costs), then
# the most edited (correct) kernel's warpgroup tests and racecheck/memcheck
# on two of them. Tables to ${OUT:-/tmp/out}.
#   python/bench/probes/sparse_attn_wg_fences_ab.sh [LIB.so]
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p "$out"
lib=$(realpath "${1:-build/lib/libhisa_runtime.so}")
export PYTHONPATH=$PWD/python PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
export REAL_PTXAS=${REAL_PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
w=$PWD/python/bench/probes/ptxas_sparse_attn_wg_fences.py
all=dedupe+publish+gemm+maxpub+readfence
nvidia-smi -L
timeout 420 python3 python/bench/probes/library_ab.py --only prefill --rounds 3 \
  --lib "$lib" --lib "$lib,HISA_PTXAS=$w,PTX_EDIT=maxpub+readfence" \
  --lib "$lib,HISA_PTXAS=$w,PTX_EDIT=$all" \
  --lib "$lib,HISA_PTXAS=$w,PTX_EDIT=latewait,HISA_AB_UNCHECKED=1" 2>&1 | tee "$out/fences_ab.txt"
export HISA_PTXAS=$w PTX_EDIT=$all HISA_CACHE_DIR=/tmp/hisa-cache-fences
export PTX_EDIT_LOG=$out/fences_edits.log HISA_RUNTIME_LIB=$lib HISA_TESTS_STRICT=1
timeout 120 python3 -m pytest -q -p no:cacheprovider python/tests/test_sparse_attn.py \
  -k "warpgroup or grow_late" 2>&1 | tail -4 | tee "$out/fences_tests.txt"
sort "$out/fences_edits.log" 2>/dev/null | uniq -c
printf '%s\n' \
  "test_sparse_attn.py::test_warpgroup_schedule_variant[2-9-64-300-100]" \
  "test_sparse_attn.py::test_row_maxima_that_grow_late[wg-1-8-128-1152-3.0]" > /tmp/fences_subset.txt
OUT=$out/san HISA_SANITIZE_SUBSET=/tmp/fences_subset.txt HISA_SANITIZE_BASELINE=0 \
  HISA_SANITIZE_TOOLS="racecheck memcheck" HISA_SANITIZE_BUDGET=100 timeout 110 \
  scripts/gpu-run.sh --sanitize > "$out/fences_sanitize.txt" 2>&1
grep -A4 "^| run" "$out/fences_sanitize.txt" | head -6
