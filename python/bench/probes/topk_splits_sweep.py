#!/usr/bin/env python3
"""Probe: topk_f32 with `splits` blocks per row (a thread-block cluster;
kernels-dsl/topk_f32.mlir) against hisa.topk's choice and torch.topk, on
rows too few to fill the GPU. Every output is first compared with
hisa.topk's (the same columns, ties included), then timed; the table says
which `splits` the operator should pick per shape.

    PYTHONPATH=python python3 python/bench/probes/topk_splits_sweep.py
"""

from __future__ import annotations

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))

import torch  # noqa: E402

import hisa  # noqa: E402
from hisa import jit  # noqa: E402
from bench_mqa import bench  # noqa: E402

LARGEST_CACHE = 49152


def params_for(columns, splits):
    part = -(-columns // splits)
    part = -(-part // 256) * 256
    cache = 256
    for size in (2048, 8192, 16384, 32768, LARGEST_CACHE):
        if part <= size:
            cache = size
            break
    return dict(cache=cache, candidates=512, compact=0, min_blocks=1, windowed=0,
                relative=0, splits=splits)


def main():
    if not torch.cuda.is_available():
        print("topk_splits_sweep: no CUDA GPU", file=sys.stderr)
        return 2
    gen = torch.Generator(device="cuda").manual_seed(20261206)
    shapes = [(64, 16384, 512), (64, 65536, 2048), (64, 131072, 2048), (16, 131072, 2048),
              (32, 262144, 2048), (64, 1 << 20, 4096), (8, 1 << 20, 2048), (128, 65536, 2048),
              (64, 8192, 512)]
    splits_list = [1, 2, 4, 8]
    print("| [R, C], k | torch.topk (us) | hisa.topk (us) | " +
          " | ".join(f"splits {s} (us)" for s in splits_list) + " |")
    print("| --- | ---: | ---: |" + " ---: |" * len(splits_list))
    failures = 0
    for rows, cols, k in shapes:
        x = torch.randn(rows, cols, device="cuda", generator=gen)
        dummy = torch.zeros(rows, device="cuda", dtype=torch.int32)
        ref = hisa.topk(x, k)
        t_torch = bench(lambda: torch.topk(x, k, dim=1, sorted=False))
        t_hisa = bench(lambda: hisa.topk(x, k))
        cells = []
        for s in splits_list:
            kernel = jit.get_kernel("topk_f32", params_for(cols, s))
            out = torch.full((rows, k), -7, device="cuda", dtype=torch.int32)
            kernel.launch(x, dummy, dummy, out)
            if not torch.equal(out.sort(1).values, ref.sort(1).values):
                failures += 1
                cells.append("MISMATCH")
                continue
            t = bench(lambda: kernel.launch(x, dummy, dummy, out))
            cells.append(f"{t * 1e6:.1f} ({t_torch / t:.2f}x)")
        print(f"| [{rows}, {cols}], {k} | {t_torch * 1e6:.1f} | {t_hisa * 1e6:.1f} "
              f"({t_torch / t_hisa:.2f}x) | " + " | ".join(cells) + " |", flush=True)
    print(f"mismatches: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
