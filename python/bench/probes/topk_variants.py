#!/usr/bin/env python3
"""Top-k specializations side by side: hisa.topk (what the operator layer
picks), the built-in topk_f32 with other parameters, and optionally the
kernel compiled from another source file (e.g. the previous commit's
kernels-dsl/topk_f32.mlir), with torch.topk(sorted=False) for scale; one
process, the same inputs.

    git show HEAD~1:kernels-dsl/topk_f32.mlir > /tmp/topk_old.mlir
    PYTHONPATH=python python3 python/bench/probes/topk_variants.py [/tmp/topk_old.mlir]

Every result is checked against torch.topk (selected values as a multiset)
before timing; the windowed case uses causal windows, as the flat
indexer's rows have. Prints a markdown table.
"""

from __future__ import annotations

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))

import torch  # noqa: E402

import hisa  # noqa: E402
from hisa import jit  # noqa: E402
from bench_memory_bound import Timer, copy_bandwidth  # noqa: E402


def spec(cache, candidates, compact, min_blocks=1, windowed=0):
    return dict(cache=cache, candidates=candidates, compact=compact, min_blocks=min_blocks,
                relative=0, windowed=windowed)


# (rows, columns, k, causal windows, {label: parameters of the built-in source},
#  parameters for the other source: what the operator layer picks today,
#  ops::topkParams in lib/Ops/Operators.cpp)
CASES = [
    (32768, 8192, 2048, False, {}, spec(8192, 128, 1, 5)),
    (32768, 1024, 64, False, {}, spec(2048, 32, 0, 6)),
    (8192, 131072, 2048, False, {}, spec(256, 1024, 1, 5)),
    (16384, 16384, 2048, True, {}, spec(256, 1024, 1, 5, 1)),
    (32768, 32768, 2048, True, {}, spec(256, 1024, 1, 5, 1)),
    (64, 16388, 512, True, {}, spec(32768, 128, 1, 1, 1)),
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
    other_source = open(sys.argv[1]).read() if len(sys.argv) > 1 else None
    timer = Timer()
    t, nbytes = copy_bandwidth(timer, 1.0, 5)
    print(f"copy {nbytes / t / 1e9:.0f} GB/s\n")
    print("| [R, C], k | windows | impl | time (us) | vs torch.topk |")
    print("| --- | --- | --- | ---: | ---: |")
    for rows, columns, k, causal, variants, other_params in CASES:
        x = torch.randn(rows, columns, device="cuda")
        starts = torch.zeros(rows, device="cuda", dtype=torch.int32)
        if causal:
            ends = (torch.arange(rows, device="cuda", dtype=torch.int32) * columns // rows) + 1
            if rows < 1024:  # decode rows: long windows of different lengths
                ends = columns - torch.randint(0, 64, (rows,), device="cuda", dtype=torch.int32)
        else:
            ends = torch.full((rows,), columns, device="cuda", dtype=torch.int32)
        out = torch.empty(rows, k, device="cuda", dtype=torch.int32)
        impls = [("torch.topk(sorted=False)", None, None)]
        if causal:
            impls.append(("hisa.topk", lambda i: hisa.topk(x, k, starts, ends, out=out), out))
        else:
            impls.append(("hisa.topk", lambda i: hisa.topk(x, k, out=out), out))
        for label, params in variants.items():
            kernel = jit.get_kernel("topk_f32", params)
            buf = torch.empty_like(out)
            impls.append((label, lambda i, kernel=kernel, buf=buf: kernel.launch(x, starts, ends, buf), buf))
        if other_source is not None and other_params is not None:
            kernel = jit.get_kernel("topk_f32", other_params, source=other_source)
            buf = torch.empty_like(out)
            impls.append(("previous source", lambda i, kernel=kernel, buf=buf: kernel.launch(x, starts, ends, buf), buf))
        xm = x
        if causal:
            cols = torch.arange(columns, device="cuda")
            inside = (cols[None, :] >= starts[:, None].long()) & (cols[None, :] < ends[:, None].long())
            xm = torch.where(inside, x, torch.full_like(x, float("-inf")))
        t_torch = None
        for label, fn, buf in impls:
            try:
                if fn is None:
                    fn = lambda i: torch.topk(xm, k, dim=1, sorted=False)  # noqa: E731
                    ok = True
                else:
                    fn(0)
                    torch.cuda.synchronize()
                    ok = check(x, k, buf, starts, ends)
                t, _ = timer.run(fn, inner=5, repeats=7)
                if t_torch is None:
                    t_torch = t
                print(f"| [{rows}, {columns}], {k} | {'causal' if causal else 'none'} | {label} | "
                      f"{t * 1e6:.1f} | {t_torch / t:.2f}x{'' if ok else ' MISMATCH'} |")
            except Exception as exc:  # keep measuring the others
                print(f"| [{rows}, {columns}], {k} | | {label} | error: {str(exc).splitlines()[0][:90]} | |")
        del x, xm


if __name__ == "__main__":
    main()
