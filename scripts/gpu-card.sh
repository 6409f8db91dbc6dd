#!/usr/bin/env bash
# The acceptance card of issues 10 and 11 on a GPU machine: bench_indexer.py,
# bench_topk.py and bench_sparse_attn.py (the issue's shapes) with
# TileLang's kernels from ../shared/anchors measured in the same process.
# Kept in the repository so that a fresh checkout can run it (earlier
# sessions kept it under build/, which a new checkout does not have).
#
#   scripts/gpu-card.sh ANCHORS [LIBRARY]
#
# ANCHORS is a copy of ../shared/anchors (tilelang-0.1.15-site.tar.xz,
# libtvm_ffi_testing.so, tilelang_examples/); LIBRARY the runtime library
# (.so, or .so.xz to unpack; default build/lib/libhisa_runtime.so). Tables
# and logs go to ${OUT:-/tmp/hisa-out}/card-*. Prints the GPU's name first:
# the issues' targets are stated for an H200, and a card from another GPU
# says so in its header line. HISA_CARD_ONLY=indexer, topk or sparse_attn
# runs one of the three. HISA_FLASHMLA_LIB=libflashmla_prefill.so (built by
# python/bench/probes/flashmla_build.sh) adds DeepSeek's FlashMLA sparse
# prefill to bench_sparse_attn.py's prefill rows.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1

if [[ $# -lt 1 || ! -d $1/tilelang_examples ]]; then
  echo "gpu-card.sh: first argument must be a copy of ../shared/anchors" >&2
  exit 64
fi
anchors=$(cd "$1" && pwd)
library=${2:-$root/build/lib/libhisa_runtime.so}
out=${OUT:-/tmp/hisa-out}
mkdir -p "$out"

if [[ $library == *.xz ]]; then
  unpacked=$(mktemp -d /tmp/hisa-card-lib.XXXXXX)/libhisa_runtime.so
  xz -dc "$library" > "$unpacked" || { echo "gpu-card.sh: cannot unpack $library" >&2; exit 1; }
  # The C++ torch kernels (libhisa_torch.so and its torch stamp) are
  # looked for beside the runtime library: take them along.
  cp "$(dirname "$library")"/libhisa_torch.so* "$(dirname "$unpacked")"/ 2>/dev/null
  library=$unpacked
fi
[[ -f $library ]] || { echo "gpu-card.sh: no runtime library at $library" >&2; exit 1; }

site=/tmp/hisa-card-site
if [[ ! -d $site/tilelang ]]; then
  mkdir -p "$site" &&
    tar -xJf "$anchors/tilelang-0.1.15-site.tar.xz" -C "$site" &&
    cp "$anchors/libtvm_ffi_testing.so" "$site/tvm_ffi/lib/" ||
    { echo "gpu-card.sh: cannot unpack TileLang" >&2; exit 1; }
fi

export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH="$root/python:$site${PYTHONPATH:+:$PYTHONPATH}"
export HISA_RUNTIME_LIB=$library
export HISA_TESTS_STRICT=1 HISA_STRICT_WGMMA=1
export HISA_CACHE_DIR=${HISA_CACHE_DIR:-$(mktemp -d /tmp/hisa-card-cache.XXXXXX)}
export TILELANG_CACHE_DIR=${TILELANG_CACHE_DIR:-/tmp/hisa-card-tilelang}

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "== gpu-card.sh on $gpu, library $(md5sum < "$library" | cut -c1-12), $(date -u +%FT%TZ)"
echo "== torch.ops.hisa backend: $(python3 -c 'import hisa; from hisa import _torch_cpp; print(_torch_cpp.backend())' 2>&1 | tail -1)"
rc=0
only=${HISA_CARD_ONLY:-}
if [[ -z $only || $only == indexer ]]; then
  echo "== bench_indexer.py"
  python3 python/bench/bench_indexer.py --out "$out/card-bench_indexer.md" \
    --anchors "$anchors/tilelang_examples" 2>&1 | tee "$out/card-bench_indexer.log"
  r=${PIPESTATUS[0]}; [[ $r != 0 ]] && rc=$r
fi
if [[ -z $only || $only == topk ]]; then
  echo "== bench_topk.py"
  python3 python/bench/bench_topk.py --out "$out/card-bench_topk.md" \
    --anchors "$anchors/tilelang_examples" 2>&1 | tee "$out/card-bench_topk.log"
  r=${PIPESTATUS[0]}; [[ $r != 0 ]] && rc=$r
fi
if [[ -z $only || $only == sparse_attn ]]; then
  echo "== bench_sparse_attn.py"
  flashmla=()
  [[ -n ${HISA_FLASHMLA_LIB:-} ]] && flashmla=(--flashmla "$(realpath "$HISA_FLASHMLA_LIB")")
  python3 python/bench/bench_sparse_attn.py --out "$out/card-bench_sparse_attn.md" \
    --anchors "$anchors/tilelang_examples" --anchor-shapes issue "${flashmla[@]}" 2>&1 |
    tee "$out/card-bench_sparse_attn.log"
  r=${PIPESTATUS[0]}; [[ $r != 0 ]] && rc=$r
fi
echo "== gpu-card.sh done on $gpu: status $rc"
exit $rc
