#!/usr/bin/env python3
"""Launches HISA's fused stage 2 (block_sparse_topk_tokens, the operator's
specialization) a few times on bench_indexer.py's inputs at M = N (default
32768), for a profiler (ncu --kernel-name block_sparse_topk_tokens ...).

    PYTHONPATH=python python3 python/bench/probes/stage2_profile.py [M]
"""

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))

import torch  # noqa: E402

import hisa  # noqa: E402
from hisa import ops  # noqa: E402
from bench_indexer import BLOCK_TOPK, KB, TOPK_TOKENS, inputs  # noqa: E402


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 32768
    q, k, k_scale, weights, ks, ke = inputs(n)
    blocked_k, blocked_scale = hisa.fp8_block_mean_pooling(k, k_scale, KB)
    blocks = ops._pool_topk_blocks(q, blocked_k, blocked_scale, weights, ks, ke, BLOCK_TOPK, KB)
    for _ in range(3):
        ops._block_sparse_topk_tokens(q, k, k_scale, blocks, KB, weights, ks, ke, TOPK_TOKENS)
    torch.cuda.synchronize()
    print(f"block_sparse_topk_tokens M = N = {n}: launched")


if __name__ == "__main__":
    main()
