#!/usr/bin/env python3
"""How much of a sparse attention block's time does not depend on K: the
operator (prefill: sparse_attn_wg, one block per token and 64 heads, one
block per SM) timed at S = 4096 for several K, and a least-squares fit of
the time per wave of blocks, t = fixed + iterations * per_iteration
(iterations = ceil(K / 128)). The fixed part is each block's prologue
(indices, queries, the first gathers), epilogue and launch, which one
block per SM cannot overlap with another block's loop.

    PYTHONPATH=python python3 python/bench/probes/sparse_attn_k_sweep.py [H ...]
"""

from __future__ import annotations

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))

import torch  # noqa: E402

import hisa  # noqa: E402
from bench_mqa import bench  # noqa: E402
from bench_sparse_attn import D, SCALE, make_inputs  # noqa: E402

S = 4096
KS = (128, 256, 384, 640, 1024, 1536, 2048)


def main():
    if not torch.cuda.is_available():
        print("sparse_attn_k_sweep: no CUDA GPU", file=sys.stderr)
        return 1
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print("| H | K | ms | TFLOP/s | us per wave of blocks |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for h in map(int, sys.argv[1:] or ["64", "128"]):
        rows = []
        for k in KS:
            q, kv, sink, idx = make_inputs(1, S, h, k, None)
            t = bench(lambda: hisa.sparse_attn(q, kv, sink, idx, SCALE))
            waves = S * (h // 64) / sms
            per_wave = t / waves * 1e6
            rows.append((-(-k // 128), per_wave))
            print(f"| {h} | {k} | {t * 1e3:.3f} | {4 * S * h * k * D / t / 1e12:.0f} | "
                  f"{per_wave:.2f} |")
        x = torch.tensor([r[0] for r in rows], dtype=torch.float64)
        y = torch.tensor([r[1] for r in rows], dtype=torch.float64)
        a = torch.stack([torch.ones_like(x), x], 1)
        fixed, per_iteration = torch.linalg.lstsq(a, y[:, None]).solution[:, 0].tolist()
        print(f"\nH = {h}: fixed {fixed:.2f} us per block, {per_iteration:.2f} us per "
              f"128-key iteration (fit over K = {', '.join(map(str, KS))})\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
