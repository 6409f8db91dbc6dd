#!/usr/bin/env python3
"""Correctness of probes/sparse_attn_fa3_order.mlir (sparse_attn_ws with
overlap_gemm: tile t + 1's scores issued before tile t's softmax and P V)
beyond the timing shapes of sparse_attn_wg_ab.py: odd and single tile
counts (the overlapped loop runs two iterations a trip), K not a multiple of
the 32-row tile, H = 128 (two head blocks), B > 1, whole rows of -1 (o must
be 0) and a large sink. Each output against bench_sparse_attn's f32
reference (relative L2 < 1e-2, no NaN); exits nonzero on any failure.

    PYTHONPATH=python python3 python/bench/probes/fa3_order_check.py
"""

from __future__ import annotations

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))

import torch  # noqa: E402

from bench_sparse_attn import check, kernel_variant, make_inputs  # noqa: E402
from kernel_variants import with_variants  # noqa: E402

TILE = 32  # the probe's key tile (key_half = 16)

# (B, S, H, K, Nkv, what)
CASES = [
    (4, 1, 64, 608, 4096, "19 tiles (odd)"),
    (4, 2, 64, 32, 4096, "one tile"),
    (3, 1, 64, 1, 100, "K = 1"),
    (2, 1, 64, 77, 300, "K = 77: a partial last tile"),
    (8, 2, 128, 640, 65536, "H = 128, 20 tiles"),
    (5, 1, 128, 1152, 2048, "H = 128, K = 1152"),
]


def main():
    if not torch.cuda.is_available():
        print("fa3_order_check: no CUDA GPU", file=sys.stderr)
        return 1
    path = os.path.join(here, "sparse_attn_fa3_order.mlir")
    text = open(path).read()
    source = with_variants(text, "sparse_attn")["sparse_attn_ws"]
    torch.manual_seed(20261207)
    failures = 0
    for b, s, h, k, nkv, what in CASES:
        for variant in ("random", "all -1", "large sink"):
            q, kv, sink, idx = make_inputs(b, s, h, k, nkv)
            if variant == "all -1":
                idx[0].fill_(-1)
            if variant == "large sink":
                sink = sink * 0 + 30.0
            params = {"topk_pad": -(-k // TILE) * TILE, "partial_sums": 1}
            call = kernel_variant(q, kv, sink, idx, "sparse_attn_ws", params, source)
            o = call()
            torch.cuda.synchronize()
            error = check(q, kv, sink, idx, o)
            ok = error < 1e-2 and bool(torch.isfinite(o.float()).all())
            if variant == "all -1":
                ok = ok and bool((o[0].float() == 0).all())
            failures += not ok
            print(f"B={b} S={s} H={h} K={k} Nkv={nkv} ({what}, {variant}): "
                  f"error {error:.2e} {'ok' if ok else 'FAILED'}")
    print(f"fa3_order_check: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
