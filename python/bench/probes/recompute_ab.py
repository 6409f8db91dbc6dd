#!/usr/bin/env python3
"""A/B of sparse_attn_ws and the same kernel with tile.pipelined
recompute_after ("sparse_attn_ws_recompute", made here from
kernels-dsl/sparse_attn.mlir) with the V4 layer's specialization at H = 128
(q_norm = 1, rope = 1, head_blocks = 2, lse), where sparse_attn_ws spills 28
bytes outside its key loop: does forming the epilogue's addresses after the
loop (no spill, ~420 more SASS instructions after it) change the time? It
ran 1.011-1.020x slower (H100, docs/performance.md, forty-seventh session),
so the operator keeps sparse_attn_ws. Decode (B =
128 tokens) and prefill (S = 4096) shapes, alternating rounds in one process,
outputs compared bit for bit first.

    PYTHONPATH=python python3 python/bench/probes/recompute_ab.py
"""

from __future__ import annotations

import math
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))

import torch  # noqa: E402

import hisa  # noqa: E402
from bench_mqa import bench  # noqa: E402
from kernel_variants import with_variants  # noqa: E402

D, H = 512, 128
KERNELS = ("sparse_attn_ws", "sparse_attn_ws_recompute")
# (label, batch, tokens per batch, K, Nkv)
SHAPES = [("decode", 128, 1, 1152, 65536), ("decode", 128, 2, 1152, 65536),
          ("prefill", 1, 4096, 1152, 4096)]


def sources():
    """{kernel name: source text} of the two kernels."""
    path = os.path.join(here, "..", "..", "..", "kernels-dsl", "sparse_attn.mlir")
    ws = with_variants(open(path).read(), "sparse_attn")["sparse_attn_ws"]
    old = "num_stages = 2 warp_specialized {"
    assert old in ws
    recompute = ws.replace(old, "num_stages = 2 warp_specialized recompute_after {").replace(
        "@sparse_attn_ws(", "@sparse_attn_ws_recompute(")
    return {"sparse_attn_ws": ws, "sparse_attn_ws_recompute": recompute}


SOURCES = sources()


def main():
    if not torch.cuda.is_available():
        print("recompute_ab: no CUDA GPU", file=sys.stderr)
        return 1
    print("| shape | " + " | ".join(f"{k} (us)" for k in KERNELS * 2) + " | recompute / ws |")
    print("| --- | " + " | ".join("---:" for _ in KERNELS * 2) + " | ---: |")
    failed = False
    for label, b, s, k, nkv in SHAPES:
        tokens = b * s
        q = torch.randn(tokens, H, D, device="cuda").bfloat16()
        kv = torch.randn(b * nkv, D, device="cuda").bfloat16()
        sink = torch.randn(H, device="cuda")
        idx = torch.randint(0, nkv, (tokens, k), device="cuda").int()
        idx[torch.rand(tokens, k, device="cuda") < 0.02] = -1
        positions = nkv + s + 8
        angles = torch.arange(positions)[:, None] * torch.exp(
            -torch.arange(32) * (math.log(10000.0) / 32))[None, :]
        cos, sin = angles.cos().float().cuda(), angles.sin().float().cuda()
        base = torch.randint(0, nkv + 1, (b,), dtype=torch.int32, device="cuda")
        params = {"topk_pad": -(-k // 64) * 64, "head_blocks": 2, "lse": 1,
                  "partial_sums": 1, "rope": 1, "q_norm": 1, "splits": 1}
        # (Unused with splits = 1: the split outputs.)
        unused_part = torch.empty(1, 1, 1, D, device="cuda")
        unused_lse = torch.empty(1, 1, 1, device="cuda")
        calls, outputs = {}, {}
        for name in KERNELS:
            kernel = hisa.jit.get_kernel(name, params, source=SOURCES[name])
            o = torch.empty_like(q)
            lse = torch.empty(tokens, H, device="cuda")

            def call(kernel=kernel, o=o, lse=lse):
                kernel.launch(q, kv, sink, idx, o, lse, unused_part, unused_lse,
                              cos, sin, base, s, nkv, D ** -0.5, 1e-6)
            call()
            calls[name], outputs[name] = call, (o, lse)
        torch.cuda.synchronize()
        same = all(torch.equal(a, c) for a, c in zip(*outputs.values()))
        if not same:
            print(f"recompute_ab: {label} B={b} S={s}: outputs differ", file=sys.stderr)
            failed = True
        times = [bench(calls[name]) for _ in range(2) for name in KERNELS]
        ratio = (times[1] + times[3]) / (times[0] + times[2])
        print(f"| {label} B={b} S={s} H={H} K={k} | "
              + " | ".join(f"{t * 1e6:.1f}" for t in times) + f" | {ratio:.3f} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
