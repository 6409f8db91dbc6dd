#!/usr/bin/env python3
"""A/B of the top-k kernel: hisa.topk (the built-in topk_f32) against the
same kernel compiled from another source file (e.g. the previous commit's
kernels-dsl/topk_f32.mlir), in one process on the same inputs.

    git show HEAD~1:kernels-dsl/topk_f32.mlir > /tmp/topk_old.mlir
    PYTHONPATH=python python3 python/bench/probes/topk_source_ab.py /tmp/topk_old.mlir

Both results are checked against torch.topk (selected values as a multiset)
before timing; the windowed case uses causal windows [0, r + 1) as the flat
indexer's rows have. Prints a markdown table.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

import hisa  # noqa: E402
from hisa import jit  # noqa: E402
from bench_memory_bound import Timer, copy_bandwidth  # noqa: E402

# (rows, columns, k, causal windows, the specialization topkParams picks)
CASES = [
    (32768, 8192, 2048, False, dict(cache=8192, candidates=32, compact=0, relative=0, windowed=0)),
    (32768, 1024, 64, False, dict(cache=2048, candidates=32, compact=0, relative=0, windowed=0)),
    (8192, 131072, 2048, False, dict(cache=256, candidates=1024, compact=1, relative=0, windowed=0)),
    (16384, 16384, 2048, True, dict(cache=16384, candidates=32, compact=0, relative=0, windowed=1)),
]


def check(x, k, idx, starts, ends):
    cols = torch.arange(x.shape[1], device=x.device)
    inside = (cols[None, :] >= starts[:, None].long()) & (cols[None, :] < ends[:, None].long())
    xm = torch.where(inside, x, torch.full_like(x, float("-inf")))
    ref = torch.topk(xm, k, dim=1).values
    got = xm.gather(1, idx.long().clamp(min=0))
    got = torch.where(idx >= 0, got, torch.full_like(got, float("-inf")))
    return bool(torch.equal(torch.sort(got, 1, descending=True).values, ref))


def main():
    source = open(sys.argv[1]).read()
    timer = Timer()
    t, nbytes = copy_bandwidth(timer, 1.0, 5)
    print(f"copy {nbytes / t / 1e9:.0f} GB/s\n")
    print("| [R, C], k | windows | built-in (us) | other source (us) | built-in / other |")
    print("| --- | --- | ---: | ---: | ---: |")
    for rows, columns, k, causal, params in CASES:
        x = torch.randn(rows, columns, device="cuda")
        if causal:
            ends = (torch.arange(rows, device="cuda", dtype=torch.int32) * columns // rows) + 1
        else:
            ends = torch.full((rows,), columns, device="cuda", dtype=torch.int32)
        starts = torch.zeros(rows, device="cuda", dtype=torch.int32)
        kernel = jit.get_kernel("topk_f32", params, source=source)
        out_b = torch.empty(rows, k, device="cuda", dtype=torch.int32)
        if causal:
            built_in = lambda i: hisa.topk(x, k, starts, ends, out=out_b)  # noqa: E731
        else:
            built_in = lambda i: hisa.topk(x, k, out=out_b)  # noqa: E731
        out_o = torch.empty(rows, k, device="cuda", dtype=torch.int32)
        other = lambda i: kernel.launch(x, starts, ends, out_o)  # noqa: E731
        built_in(0)
        other(0)
        torch.cuda.synchronize()
        # Row-clamped windows: topk_f32 clamps them to [0, C] itself.
        ok = check(x, k, out_b, starts, ends) and check(x, k, out_o, starts, ends)
        tb, _ = timer.run(built_in, inner=5, repeats=7)
        to, _ = timer.run(other, inner=5, repeats=7)
        print(f"| [{rows}, {columns}], {k} | {'causal' if causal else 'none'} | {tb * 1e6:.1f} | "
              f"{to * 1e6:.1f} | {to / tb:.2f}x faster{'' if ok else ' MISMATCH'} |")
        del x


if __name__ == "__main__":
    main()
