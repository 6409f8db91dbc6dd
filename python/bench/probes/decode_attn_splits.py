#!/usr/bin/env python3
"""V4 decode's sparse attention (64 tokens x 64 heads, window and
window + compressed indices) with the operator's split of each token's
indices over blocks (sparse_attn, then sparse_attn_combine with the inverse
RoPE) against fewer splits (splits = 1: sparse_attn_ws, then v4_rope
inverse), each path CUDA-graph-timed as the decode step runs it; outputs
compared. Is the combine worth its launch at these sizes?

    PYTHONPATH=python python3 python/bench/probes/decode_attn_splits.py
"""

from __future__ import annotations

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))
sys.path.insert(0, here)

import torch  # noqa: E402

import hisa  # noqa: E402
from hisa.v4 import reference as ref  # noqa: E402
from split_k_one_launch_ab import graph_time  # noqa: E402

D = 512
TOKENS, HEADS, NKV = 64, 64, 8192


def rope_tables():
    """The V4 layer's cos / sin tables over NKV positions and a random
    position per token (shared with decode_attn_prologue.py)."""
    angles = ref.rope_angles(torch.arange(NKV), 64, 10000.0)
    cos, sin = angles.cos().float().cuda(), angles.sin().float().cuda()
    base = torch.randint(0, NKV - 1, (TOKENS,), dtype=torch.int32, device="cuda")
    return cos, sin, base


def decode_inputs(topk):
    """q [TOKENS, HEADS, 512], one kv cache of NKV rows per token, the sink
    and `topk` random indices per token (the last 5 of them -1)."""
    q = torch.randn(TOKENS, HEADS, D, device="cuda").bfloat16()
    kv = torch.randn(TOKENS * NKV, D, device="cuda").bfloat16()
    sink = torch.randn(HEADS, device="cuda")
    idx = torch.randint(0, NKV, (TOKENS, topk), dtype=torch.int32, device="cuda")
    idx[:, -5:] = -1
    return q, kv, sink, idx


def main():
    tokens, heads, nkv = TOKENS, HEADS, NKV
    cos, sin, base = rope_tables()
    print("| indices per token | path | time (us) | max abs diff vs splits=2 |")
    print("| ---: | --- | ---: | ---: |")
    for topk in (128, 640):
        q, kv, sink, idx = decode_inputs(topk)
        scale = D ** -0.5
        unused = torch.zeros(1, 1, device="cuda")
        results = {}
        for splits in (1, 2, 4):
            if (topk // 64) % splits and splits > 1:
                continue
            o = torch.empty(tokens, heads, D, device="cuda").bfloat16()
            params = {"head_blocks": 1, "lse": 0, "partial_sums": 1 if splits == 1 else 0,
                      "splits": splits, "topk_pad": -(-topk // 64) * 64}
            part_o = torch.empty(tokens if splits > 1 else 1, splits,
                                 heads if splits > 1 else 1, D, device="cuda")
            part_lse = torch.empty(tokens if splits > 1 else 1, splits,
                                   heads if splits > 1 else 1, device="cuda")
            attn = hisa.jit.get_kernel("sparse_attn_ws" if splits == 1 else "sparse_attn", params)
            args = (q, kv, sink, idx, o, unused, part_o, part_lse, cos, sin, base, 1, nkv,
                    scale, 0.0)
            if splits == 1:
                rope = hisa.jit.get_kernel("v4_rope", {"inverse": 1, "dim": D})

                def run(attn=attn, args=args, rope=rope, o=o):
                    attn.launch(*args)
                    rope.launch(o, cos, sin, base, 1)
                results["1, no RoPE"] = (graph_time(lambda attn=attn, args=args: attn.launch(*args)), None)
            else:
                combine = hisa.jit.get_kernel("sparse_attn_combine", {"lse": 0, "rope": 1})

                def run(attn=attn, args=args, combine=combine, o=o, part_o=part_o,
                        part_lse=part_lse):
                    attn.launch(*args)
                    combine.launch(part_o, part_lse, sink, o, unused, cos, sin, base, 1)
            run()
            torch.cuda.synchronize()
            results[str(splits)] = (graph_time(run), o.clone())
        want = results["2"][1]
        for name, (t, out) in results.items():
            diff = "-" if out is None else f"{(out.float() - want.float()).abs().max().item():.3g}"
            print(f"| {topk} | splits {name} | {t * 1e6:.1f} | {diff} |")
        del kv
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
