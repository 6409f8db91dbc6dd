#!/usr/bin/env python3
"""sparse_attn_combine (kernels-dsl/, the operator's) against the sixteenth
session's version (probes/sparse_attn_combine_v1.mlir: each column's loop
over the splits recomputes every split's weight) on decode shapes: the same
bits out, and each one's time.

    PYTHONPATH=python python3 python/bench/probes/combine_ab.py
"""

from __future__ import annotations

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))

import torch  # noqa: E402

import hisa  # noqa: E402
from bench_mqa import bench  # noqa: E402

SHAPES = [(64, 2, 64), (128, 2, 64), (64, 2, 128), (128, 4, 64), (37, 3, 64)]


def main():
    with open(os.path.join(here, "sparse_attn_combine_v1.mlir")) as f:
        v1_source = f.read()
    print("| tokens | splits | heads | v1 (us) | now (us) | speedup | same bits |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for tokens, splits, heads in SHAPES:
        o_part = torch.randn(tokens, splits, heads, 512, device="cuda")
        lse_part = torch.randn(tokens, splits, heads, device="cuda") * 4
        lse_part[0, 0] = float("-inf")         # a split that saw no valid index
        o_part[0, 0] = 0
        sink = torch.randn(heads, device="cuda")
        outs = []
        times = []
        unused = (torch.zeros(1, 32, device="cuda"), torch.zeros(1, 32, device="cuda"),
                  torch.zeros(1, dtype=torch.int32, device="cuda"), 1)
        for source, extra in ((v1_source, ()), (None, unused)):
            kernel = hisa.jit.get_kernel("sparse_attn_combine", {"lse": 1}, source=source)
            o = torch.empty(tokens, heads, 512, device="cuda").bfloat16()
            lse = torch.empty(tokens, heads, device="cuda")
            kernel.launch(o_part, lse_part, sink, o, lse, *extra)
            torch.cuda.synchronize()
            outs.append((o, lse))
            times.append(bench(lambda k=kernel, o=o, lse=lse, extra=extra:
                               k.launch(o_part, lse_part, sink, o, lse, *extra)))
        same = torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])
        print(f"| {tokens} | {splits} | {heads} | {times[0] * 1e6:.1f} | {times[1] * 1e6:.1f} | "
              f"{times[0] / times[1]:.2f}x | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
