#!/usr/bin/env bash
# The main job: set up, build, compile every kernel in kernels-dsl/ (default
# DeepSeek parameters) to PTX and cubin, and print a per-kernel summary. On a
# machine with a GPU it then runs the GPU tests and benchmarks.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${HISA_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
"$root/scripts/build.sh" hisa-opt hisa-translate hisa_runtime

out=$build/kernels
mkdir -p "$out"
ptxas=${HISA_PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
printf '\n%-26s %-8s %-10s %-12s %-10s %s\n' kernel threads registers "shared (B)" "PTX (B)" status
# The kernels, then the variants they declare (generated into the build).
for source in "$root"/kernels-dsl/*.mlir "$build"/kernels-dsl/*.mlir; do
  name=$(basename "$source" .mlir)
  report=$("$build/bin/hisa-opt" "$source" --tile-inline-functions --tile-bind-params --tile-report-resources -o /dev/null)
  threads=$(sed -n 's/.* threads=\([0-9]*\).*/\1/p' <<<"$report")
  if ! "$build/bin/hisa-opt" "$source" --tile-to-nvvm -o "$out/$name.nvvm.mlir" 2>"$out/$name.log"; then
    reason=$(grep -m1 -o "error: .*" "$out/$name.log" | cut -c8-90)
    printf '%-26s %-8s %-10s %-12s %-10s %s\n' "$name" "$threads" - - - "not lowered: $reason"
    continue
  fi
  shared=$(grep -m1 -o 'tile.shared_bytes = [0-9]*' "$out/$name.nvvm.mlir" | grep -o '[0-9]*$' || echo 0)
  "$build/bin/hisa-translate" --gpu-to-ptx "$out/$name.nvvm.mlir" -o "$out/$name.ptx"
  ptx_bytes=$(wc -c <"$out/$name.ptx")
  registers=-
  status="PTX"
  if [[ -x $ptxas ]]; then
    info=$("$ptxas" -arch=sm_90a -v "$out/$name.ptx" -o "$out/$name.cubin" 2>&1)
    registers=$(grep -o 'Used [0-9]* registers' <<<"$info" | grep -o '[0-9]*')
    status="PTX + cubin ($(grep -o '[0-9]* bytes stack frame' <<<"$info"))"
  fi
  printf '%-26s %-8s %-10s %-12s %-10s %s\n' "$name" "$threads" "$registers" "${shared:-0}" "$ptx_bytes" "$status"
done
echo "(outputs in $out)"

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo; echo "GPU found: running the GPU tests and benchmarks"
  "$root/scripts/gpu-run.sh"
fi
