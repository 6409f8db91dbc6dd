#!/usr/bin/env python3
"""A/B of HISA's fused stage 2: the built-in block_sparse_topk_tokens
against the same kernel compiled from other sources and/or parameters
(e.g. the previous commit's kernels-dsl/block_sparse_topk_tokens.mlir), in
one process on the same inputs (bench_indexer.py's: H=64, D=128, kb=128,
block_topk=64, topk_tokens=2048, one causal sequence, M = N).

    git show HEAD~1:kernels-dsl/block_sparse_topk_tokens.mlir > /tmp/old.mlir
    PYTHONPATH=python python3 python/bench/probes/stage2_source_ab.py \
        /tmp/old.mlir [other.mlir:name=value,...] ... [--sizes 32768,131072]

Each variant is FILE[:PARAMS] (FILE "-" is the built-in source; PARAMS
override the operator's pick). `--kernel block_sparse_topk_tokens_ws`
compiles each source's warp-specialized variant (its `hisa-variant`
lines), the kernel the operator runs; the default is the plain kernel. Every output must equal the built-in's as
sets per row before timing (else the table says MISMATCH and how many
selected slots the variant shares with the built-in). Prints a table.
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
from kernel_variants import parse_ab_args, with_variants  # noqa: E402
from bench_indexer import BLOCK_TOPK, DIM, HEADS, KB, TOPK_TOKENS, bench, inputs, overlap  # noqa: E402

# What the operator layer picks for these shapes (lib/Ops/Operators.cpp).
PARAMS = dict(dim=DIM, heads=HEADS, kb=KB, kt=64, min_blocks=3, topk=BLOCK_TOPK)


def main():
    argv = sys.argv[1:]
    name = "block_sparse_topk_tokens"
    if "--kernel" in argv:
        at = argv.index("--kernel")
        name = argv[at + 1]
        argv = argv[:at] + argv[at + 2:]
    specs, sizes = parse_ab_args(argv, PARAMS)
    variants = []
    for arg, path, params in specs:
        source = None
        if path != "-":
            text = open(path).read()
            base = text.split("tile.kernel @", 1)[1].split("(", 1)[0]
            source = with_variants(text, base)[name]
        kernel = jit.get_kernel(name, params, source=source)
        variants.append((arg, kernel))
    print("| M = N | built-in (ms) | " + " | ".join(label for label, _ in variants) + " |")
    print("| ---: | ---: |" + " ---: |" * len(variants))
    for n in sizes:
        q, k, k_scale, weights, ks, ke = inputs(n)
        blocked_k, blocked_scale = hisa.fp8_block_mean_pooling(k, k_scale, KB)
        blocks = ops._pool_topk_blocks(q, blocked_k, blocked_scale, weights, ks, ke, BLOCK_TOPK, KB)
        built_in = lambda: ops._block_sparse_topk_tokens(  # noqa: E731
            q, k, k_scale, blocks, KB, weights, ks, ke, TOPK_TOKENS)
        a = built_in()
        ta = bench(built_in)
        cells = []
        for _, kernel in variants:
            out_o = torch.empty(n, TOPK_TOKENS, device="cuda", dtype=torch.int32)
            other = lambda: kernel.launch(q, k, k_scale, blocks, weights, ks, ke, out_o)  # noqa: E731
            other()
            torch.cuda.synchronize()
            rows_differ = int((torch.sort(a, 1).values != torch.sort(out_o, 1).values).any(1).sum())
            to = bench(other)
            # A variant that computes the logits differently (rounds them) may
            # select other slots near the threshold: how many it shares, and
            # in how many rows.
            agreement = "" if rows_differ == 0 else (
                f" MISMATCH: {100 * overlap(out_o, a):.4f}% shared, {rows_differ} of {n} rows differ")
            cells.append(f"{to * 1e3:.2f} ({to / ta:.3f}x){agreement}")
            del out_o
        print(f"| {n} | {ta * 1e3:.2f} | " + " | ".join(cells) + " |")
        del q, k, k_scale, weights, ks, ke, blocks


if __name__ == "__main__":
    main()
