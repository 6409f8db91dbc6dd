#!/usr/bin/env python3
"""A/B of HISA's fused stage 2: the built-in block_sparse_topk_tokens
against the same kernel compiled from another source file (e.g. the
previous commit's kernels-dsl/block_sparse_topk_tokens.mlir), in one process
on the same inputs (bench_indexer.py's: H=64, D=128, kb=128, block_topk=64,
topk_tokens=2048, one causal sequence, M = N).

    git show HEAD~1:kernels-dsl/block_sparse_topk_tokens.mlir > /tmp/old.mlir
    PYTHONPATH=python python3 python/bench/probes/stage2_source_ab.py /tmp/old.mlir [M ...]

Both outputs must be equal as sets per row before timing. Prints a table.
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
from bench_indexer import BLOCK_TOPK, DIM, HEADS, KB, TOPK_TOKENS, bench, inputs  # noqa: E402

# What the operator layer picks for these shapes (lib/Ops/Operators.cpp).
PARAMS = dict(dim=DIM, heads=HEADS, kb=KB, kt=64, min_blocks=3, topk=BLOCK_TOPK)


def main():
    source = open(sys.argv[1]).read()
    sizes = [int(a) for a in sys.argv[2:]] or [32768, 131072]
    kernel = jit.get_kernel("block_sparse_topk_tokens", PARAMS, source=source)
    print("| M = N | built-in (ms) | other source (ms) | other / built-in |")
    print("| ---: | ---: | ---: | ---: |")
    for n in sizes:
        q, k, k_scale, weights, ks, ke = inputs(n)
        blocked_k, blocked_scale = hisa.fp8_block_mean_pooling(k, k_scale, KB)
        blocks = ops._pool_topk_blocks(q, blocked_k, blocked_scale, weights, ks, ke, BLOCK_TOPK, KB)
        out_o = torch.empty(n, TOPK_TOKENS, device="cuda", dtype=torch.int32)
        built_in = lambda: ops._block_sparse_topk_tokens(  # noqa: E731
            q, k, k_scale, blocks, KB, weights, ks, ke, TOPK_TOKENS)
        other = lambda: kernel.launch(q, k, k_scale, blocks, weights, ks, ke, out_o)  # noqa: E731
        a = built_in()
        other()
        torch.cuda.synchronize()
        same = torch.equal(torch.sort(a, 1).values, torch.sort(out_o, 1).values)
        ta, to = bench(built_in), bench(other)
        print(f"| {n} | {ta * 1e3:.2f} | {to * 1e3:.2f} | {to / ta:.3f}x"
              f"{'' if same else ' MISMATCH'} |")
        del q, k, k_scale, weights, ks, ke, blocks, out_o


if __name__ == "__main__":
    main()
