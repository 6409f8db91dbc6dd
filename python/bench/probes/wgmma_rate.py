#!/usr/bin/env python3
"""The tensor-core rate of stage 2's gemm shapes alone: a loop of fp8 wgmma
gemms on one query's [64 heads, 128] Q and a [kt, 128] key tile already in
shared memory, nothing else (no loads in the loop, no epilogue), so the
time is what the wgmma forms themselves allow:

- ss_n64 (wgmma_rate_ss.mlir): stage 2 today, keys as M (64 rows), heads as
  N = 64, both operands from shared memory;
- rs_kt* (wgmma_rate_rs.mlir): Q as a register A operand (M = 64 heads),
  keys as N = kt from shared memory.

Every variant does M x 8192 keys x 64 heads x 128 x 2 FLOPs; printed as a
table with cuBLAS fp8 8192^3 from the same run.

    PYTHONPATH=python python3 python/bench/probes/wgmma_rate.py [M]
"""

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))

import torch  # noqa: E402

from hisa import jit  # noqa: E402
from bench_mqa import bench, fp8, fp8_gemm_ceiling  # noqa: E402

VARIANTS = [
    ("wgmma_rate_ss.mlir", "ss_n64", dict(iters=128, min_blocks=3), 64),
    ("wgmma_rate_ss.mlir", "ss_n64", dict(iters=128, min_blocks=6), 64),
    ("wgmma_rate_rs.mlir", "rs_n128", dict(kt=64, iters=128, min_blocks=3), 64),
    ("wgmma_rate_rs.mlir", "rs_n128", dict(kt=64, iters=128, min_blocks=6), 64),
    ("wgmma_rate_rs.mlir", "rs_n128", dict(kt=256, iters=32, min_blocks=3), 256),
    ("wgmma_rate_rs.mlir", "rs_n128", dict(kt=256, iters=32, min_blocks=2), 256),
]


def main():
    m = int(sys.argv[1]) if len(sys.argv) > 1 else 32768
    t_ceiling, ceiling = fp8_gemm_ceiling()
    print(f"cuBLAS fp8 8192^3: {ceiling / 1e12:.0f} TFLOP/s")
    q = fp8(m, 64, 128)
    k = fp8(4096, 128)
    flops = m * 8192 * 64 * 128 * 2
    print("| kernel | params | ms | TFLOP/s | % of cuBLAS fp8 |")
    print("| --- | --- | ---: | ---: | ---: |")
    for path, name, params, kt in VARIANTS:
        source = open(os.path.join(here, path)).read()
        kernel = jit.get_kernel(name, params, source=source)
        out = torch.empty(m, 64, kt if name != "ss_n64" else 64, device="cuda")
        t = bench(lambda: kernel.launch(q, k, out))
        label = ",".join(f"{a}={b}" for a, b in params.items())
        print(f"| {name} | {label} | {t * 1e3:.3f} | {flops / t / 1e12:.0f} | "
              f"{100 * flops / t / ceiling:.0f} |")


if __name__ == "__main__":
    main()
