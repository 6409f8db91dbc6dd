#!/usr/bin/env bash
# Builds libflashmla_prefill.so (flashmla_prefill.cu + FlashMLA's sm90 sparse
# prefill, d_qk = 512) for probes/flashmla_ab.py, on the CPU machine:
#
#   python/bench/probes/flashmla_build.sh FLASHMLA_CSRC [OUT]
#
# FLASHMLA_CSRC is a FlashMLA checkout's csrc/ with the CUTLASS headers in
# csrc/cutlass/include (its submodule, or any recent CUTLASS); OUT defaults
# to python/bench/probes/libflashmla_prefill.so (ignored by git). Flags as
# FlashMLA's setup.py gives them. ~5-10 minutes on two cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
csrc=$(cd "${1:?usage: flashmla_build.sh FLASHMLA_CSRC [OUT]}" && pwd)
out=${2:-$here/libflashmla_prefill.so}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
"$nvcc" -O3 -std=c++20 -DNDEBUG -D_USE_MATH_DEFINES \
  -Wno-deprecated-declarations --expt-relaxed-constexpr --expt-extended-lambda \
  --use_fast_math -U__CUDA_NO_BFLOAT16_CONVERSIONS__ \
  -gencode arch=compute_90a,code=sm_90a --ptxas-options=-v,--warn-on-spills \
  -Xcompiler -fPIC -shared \
  -I"$csrc" -I"$csrc/kerutils/include" -I"$csrc/sm90" \
  -I"$csrc/cutlass/include" -I"$csrc/cutlass/tools/util/include" \
  "$here/flashmla_prefill.cu" \
  "$csrc/sm90/prefill/sparse/instantiations/phase1_k512.cu" \
  -lcuda -o "$out"
echo "built $out"
