#!/usr/bin/env python3
"""A/B of HISA's fused stage 1: the built-in pool_topk_blocks against the
same kernel compiled from other sources and/or parameters, in one process
on bench_indexer.py's inputs (H=64, D=128, kb=128, block_topk=64, one
causal sequence, M = N).

    PYTHONPATH=python python3 python/bench/probes/stage1_source_ab.py \
        other.mlir[:name=value,...] ... [--sizes=32768,131072]

Each variant is FILE[:PARAMS] (FILE "-" is the built-in source; PARAMS
override the operator's pick, given with --params=block_q=4,... when it
differs from PARAMS below). A variant whose output differs from the
built-in's as sets per row is still timed (an ablation, e.g.
stage1_logits_only.mlir, selects nothing) and marked MISMATCH.
"""

from __future__ import annotations

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))

import torch  # noqa: E402

import hisa  # noqa: E402
from hisa import jit, ops  # noqa: E402
from bench_indexer import BLOCK_TOPK, DIM, HEADS, KB, bench, inputs, overlap  # noqa: E402
from kernel_variants import parse_ab_args  # noqa: E402

# What lib/Ops/Operators.cpp picks at these shapes; nb_cache follows N.
PARAMS = dict(dim=DIM, heads=HEADS, kb=KB, block_q=4)


def cache_for(n):
    nb = -(-n // KB)
    for size in (256, 1024, 4096, 8192, 16384, 32768):
        if nb <= size:
            return size
    raise ValueError(n)


def main():
    variants, sizes = parse_ab_args(sys.argv[1:], PARAMS)
    specs = [(label, params, None if path == "-" else open(path).read())
             for label, path, params in variants]
    print("| M = N | built-in (ms) | " + " | ".join(label for label, _, _ in specs) + " |")
    print("| ---: | ---: |" + " ---: |" * len(specs))
    for n in sizes:
        q, k, k_scale, weights, ks, ke = inputs(n)
        blocked_k, blocked_scale = hisa.fp8_block_mean_pooling(k, k_scale, KB)
        built_in = lambda: ops._pool_topk_blocks(  # noqa: E731
            q, blocked_k, blocked_scale, weights, ks, ke, BLOCK_TOPK, KB)
        a = built_in()
        ta = bench(built_in)
        cells = []
        for _, params, source in specs:
            params = dict(params, nb_cache=params.get("nb_cache", cache_for(n)))
            kernel = jit.get_kernel("pool_topk_blocks", params, source=source)
            out_o = torch.full_like(a, -7)
            q2 = q.view(n * HEADS, DIM)
            other = lambda: kernel.launch(q2, blocked_k, blocked_scale, weights, ks, ke, out_o)  # noqa: E731
            other()
            torch.cuda.synchronize()
            same = torch.equal(torch.sort(a, 1).values, torch.sort(out_o, 1).values)
            to = bench(other)
            agreement = "" if same else f" MISMATCH: {100 * overlap(out_o, a):.2f}% shared"
            cells.append(f"{to * 1e3:.3f} ({to / ta:.3f}x){agreement}")
        print(f"| {n} | {ta * 1e3:.3f} | " + " | ".join(cells) + " |", flush=True)
        del q, k, k_scale, weights, ks, ke, blocked_k, blocked_scale


if __name__ == "__main__":
    main()
