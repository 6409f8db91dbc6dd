#!/usr/bin/env bash
# Builds the standalone CUDA probes (no hisa code: plain CUDA C++, to measure
# the H200 memory system that the kernels' designs rely on). Run on the CPU
# machine (nvcc 13.0), carry the binaries, run them on the GPU machine:
#   python/bench/probes/build.sh && python/bench/probes/write_pattern && python/bench/probes/l2_gather
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
for probe in write_pattern l2_gather hbm_row_gather handover_racecheck; do
  "$nvcc" -O3 -arch=sm_90a -o "$here/$probe" "$here/$probe.cu"
done
