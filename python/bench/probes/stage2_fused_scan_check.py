#!/usr/bin/env python3
"""Exactness of probes/stage2_fused_scan.mlir (stage 2's radix select with
fused per-digit phases) on the inputs that reach its rare paths: ties at
the threshold from 4 to 100000 distinct logits, every logit equal, rows
with most blocks missing (few selectable keys: every key taken), one token
asked for, more tokens asked for than slots. Each case runs the probe's
warp-specialized kernel (kt = 128 and 64) and the operator on the same
inputs and requires the same set in every row. Exits nonzero on a
difference.

    PYTHONPATH=python python3 python/bench/probes/stage2_fused_scan_check.py [SOURCE]

SOURCE (default: the probe) may be any stage-2 source, e.g. the kernel
before the change, to compare it with the operator's.
"""

from __future__ import annotations

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))
sys.path.insert(0, os.path.join(here, "..", "..", "tests"))

import torch  # noqa: E402

from hisa import jit, ops  # noqa: E402
from kernel_variants import with_variants  # noqa: E402
from test_hisa_indexer import distinct_block_index, make_inputs  # noqa: E402

SOURCE = os.path.join(here, "stage2_fused_scan.mlir")


def probe_kernel(kt, t):
    text = open(sys.argv[1] if len(sys.argv) > 1 else SOURCE).read()
    source = with_variants(text, "block_sparse_topk_tokens")["block_sparse_topk_tokens_ws"]
    return jit.get_kernel("block_sparse_topk_tokens_ws",
                          dict(dim=128, heads=64, kb=128, kt=kt, min_blocks=3, topk=t),
                          source=source)


def compare(label, q, k, k_scale, index, weights, ks, ke, topk_tokens):
    want = ops._block_sparse_topk_tokens(q, k, k_scale, index, 128, weights, ks, ke, topk_tokens)
    failures = 0
    for kt in (128, 64):
        got = torch.empty_like(want)
        probe_kernel(kt, index.shape[1]).launch(q, k, k_scale, index, weights, ks, ke, got)
        torch.cuda.synchronize()
        differ = int((want.sort(1).values != got.sort(1).values).any(1).sum())
        print(f"{label}, kt = {kt}: {'ok' if differ == 0 else f'{differ} rows differ'}")
        failures += differ != 0
    return failures


def main():
    seed = 20261249
    failures = 0
    n, heads, dim = 8192, 64, 128
    for levels in (4, 40, 600, 100000):
        q, k, k_scale, weights, ks, ke = make_inputs(n, 2, heads, dim, 700, seed)
        q = torch.full(q.shape, 0.5, device="cuda").to(q.dtype)
        k = torch.full(k.shape, 1.0, device="cuda").to(k.dtype)
        gen = torch.Generator(device="cuda").manual_seed(seed + levels)
        k_scale = torch.randint(1, levels + 1, (n,), device="cuda", generator=gen).float() / levels
        weights = torch.full(weights.shape, 1.0 / heads, device="cuda")
        index = distinct_block_index(ks, ke, 128, n, 32)
        failures += compare(f"{levels} levels", q, k, k_scale, index, weights, ks, ke, 700)
    q, k, k_scale, weights, ks, ke = make_inputs(n, 1, heads, dim, 900, seed)
    index = distinct_block_index(ks, ke, 128, n, 64)
    failures += compare("every logit 0", q, k, k_scale, index, torch.zeros_like(weights),
                        ks, ke, 2048)
    missing = torch.rand(index.shape, device="cuda") < 0.9
    failures += compare("90% of blocks missing", q, k, k_scale,
                        torch.where(missing, torch.full_like(index, -1), index), weights, ks, ke,
                        2048)
    failures += compare("random, one token", q, k, k_scale, index, weights, ks, ke, 1)
    failures += compare("random, more tokens than slots", q, k, k_scale, index[:, :8].contiguous(),
                        weights, ks, ke, 1500)
    failures += compare("random, 2048 tokens", q, k, k_scale, index, weights, ks, ke, 2048)
    print("all equal" if failures == 0 else f"{failures} cases differ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
