#!/usr/bin/env python3
"""How many key blocks neighbouring queries share in HISA's stage 2: the
mean size of the union of the block_topk blocks that stage 1 selects for g
consecutive queries, and the key bytes stage 2 would gather per query if a
block of g queries gathered each block of the union once (today g = 1:
block_topk * kb rows of D bytes per query). bench_indexer.py's inputs
(random keys, and the block-structured generator).

    PYTHONPATH=python python3 python/bench/probes/stage2_block_sharing.py [--sizes=32768]
"""

from __future__ import annotations

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))

import torch  # noqa: E402

import hisa  # noqa: E402
from hisa import ops  # noqa: E402
from bench_indexer import BLOCK_TOPK, DIM, KB, inputs  # noqa: E402

GROUPS = [1, 2, 4, 8, 16, 32]


def mean_union(blocks: torch.Tensor, group: int) -> float:
    """Mean number of distinct valid block indices over groups of `group`
    consecutive rows (the tail rows that do not fill a group are left out)."""
    rows = blocks.shape[0] // group * group
    grouped = blocks[:rows].reshape(rows // group, group * blocks.shape[1])
    ordered = grouped.sort(dim=1).values
    distinct = torch.ones_like(ordered, dtype=torch.bool)
    distinct[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    distinct &= ordered >= 0
    return distinct.sum(dim=1).float().mean().item()


def main():
    sizes = [32768]
    for a in sys.argv[1:]:
        if a.startswith("--sizes="):
            sizes = [int(x) for x in a.split("=", 1)[1].split(",")]
    print("| M = N | keys | g | blocks in the union | per query | key MiB gathered per query |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    for n in sizes:
        for structured in (False, True):
            q, k, k_scale, weights, ks, ke = inputs(n, structured=structured)
            blocked_k, blocked_scale = hisa.fp8_block_mean_pooling(k, k_scale, KB)
            blocks = ops._pool_topk_blocks(q, blocked_k, blocked_scale, weights, ks, ke,
                                           BLOCK_TOPK, KB)
            # The first queries of a causal window have fewer blocks; the
            # question is about the long rows.
            blocks = blocks[n // 4:]
            for g in GROUPS:
                union = mean_union(blocks, g)
                mib = union * KB * DIM / g / 2**20
                print(f"| {n} | {'block-structured' if structured else 'random'} | {g} | "
                      f"{union:.1f} | {union / g:.1f} | {mib:.3f} |")
            del q, k, k_scale, weights, ks, ke, blocks


if __name__ == "__main__":
    main()
