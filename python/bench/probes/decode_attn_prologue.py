#!/usr/bin/env python3
"""V4 decode's sparse attention kernel alone (sparse_attn_ws, 64 tokens x 64
heads, the window's 128 and HCA/CSA's 640 indices per token), CUDA-graph
timed with and without the V4 layer's work around the main loop: the
inverse RoPE of the output (rope = 1) and the query's norm + RoPE
(q_norm = 1). The difference is what the prologue and epilogue cost on the
decode step's critical path. Prints a checksum of each output's bits, so
that two runtime libraries (HISA_RUNTIME_LIB) can be compared.

    PYTHONPATH=python python3 python/bench/probes/decode_attn_prologue.py
"""

from __future__ import annotations

import hashlib
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))
sys.path.insert(0, here)

import torch  # noqa: E402

import hisa  # noqa: E402
from decode_attn_splits import D, HEADS, NKV, TOKENS, decode_inputs, rope_tables  # noqa: E402
from split_k_one_launch_ab import graph_time  # noqa: E402


def main():
    tokens, heads, nkv = TOKENS, HEADS, NKV
    torch.manual_seed(0)
    cos, sin, base = rope_tables()
    print("| indices per token | rope | q_norm | time (us) | output bits (sha1) |")
    print("| ---: | ---: | ---: | ---: | --- |")
    for topk in (128, 640):
        q, kv, sink, idx = decode_inputs(topk)
        unused = torch.zeros(1, 1, device="cuda")
        part_o = torch.empty(1, 1, 1, D, device="cuda")
        part_lse = torch.empty(1, 1, 1, device="cuda")
        for rope, q_norm in ((0, 0), (1, 0), (1, 1)):
            o = torch.empty(tokens, heads, D, device="cuda").bfloat16()
            params = {"head_blocks": 1, "lse": 0, "partial_sums": 1, "splits": 1,
                      "topk_pad": -(-topk // 64) * 64, "rope": rope, "q_norm": q_norm}
            attn = hisa.jit.get_kernel("sparse_attn_ws", params)
            args = (q, kv, sink, idx, o, unused, part_o, part_lse, cos, sin, base, 1, nkv,
                    D ** -0.5, 1e-6)
            t = graph_time(lambda attn=attn, args=args: attn.launch(*args))
            whole = o
            digest = hashlib.sha1(o.view(torch.int16).cpu().numpy().tobytes()).hexdigest()[:12]
            print(f"| {topk} | {rope} | {q_norm} | {t * 1e6:.1f} | {digest} |")
        # The layer's full work with each token's indices split over a
        # cluster of two blocks that merge through distributed shared
        # memory (what the operator runs at 44 to 66 blocks).
        tiles = -(-topk // 64)
        o = torch.empty(tokens, heads, D, device="cuda").bfloat16()
        params = {"head_blocks": 1, "lse": 0, "partial_sums": 1, "splits": 2,
                  "cluster_blocks": 2, "topk_pad": tiles * 64, "rope": 1, "q_norm": 1}
        attn = hisa.jit.get_kernel("sparse_attn_ws", params)
        args = (q, kv, sink, idx, o, unused, part_o, part_lse, cos, sin, base, 1, nkv,
                D ** -0.5, 1e-6)
        t = graph_time(lambda attn=attn, args=args: attn.launch(*args))
        print(f"| {topk} | cluster pair | 1 | {t * 1e6:.1f} | max abs diff vs whole "
              f"{(o.float() - whole.float()).abs().max().item():.3g} |")
        # ... or over 2 or 4 blocks merged by sparse_attn_combine, which
        # also rotates the output back.
        for kernel in ("sparse_attn_ws",):
            for splits in (2, 4):
                if splits > tiles:
                    continue
                o = torch.empty(tokens, heads, D, device="cuda").bfloat16()
                split_o = torch.empty(tokens, splits, heads, D, device="cuda")
                split_lse = torch.empty(tokens, splits, heads, device="cuda")
                params = {"head_blocks": 1, "lse": 0, "partial_sums": 0, "splits": splits,
                          "topk_pad": tiles * 64, "rope": 0, "q_norm": 1}
                attn = hisa.jit.get_kernel(kernel, params)
                combine = hisa.jit.get_kernel("sparse_attn_combine", {"lse": 0, "rope": 1})
                args = (q, kv, sink, idx, o, unused, split_o, split_lse, cos, sin, base, 1, nkv,
                        D ** -0.5, 1e-6)

                def run(attn=attn, args=args, combine=combine, o=o, split_o=split_o,
                        split_lse=split_lse):
                    attn.launch(*args)
                    combine.launch(split_o, split_lse, sink, o, unused, cos, sin, base, 1)
                t = graph_time(run)
                t_attn = graph_time(lambda attn=attn, args=args: attn.launch(*args))
                t_combine = graph_time(
                    lambda combine=combine, split_o=split_o, split_lse=split_lse, o=o:
                    combine.launch(split_o, split_lse, sink, o, unused, cos, sin, base, 1))
                print(f"| {topk} | {kernel}, {splits} splits + combine | 1 | {t * 1e6:.1f} "
                      f"(attention {t_attn * 1e6:.1f}, combine {t_combine * 1e6:.1f}) | "
                      f"max abs diff vs whole {(o.float() - whole.float()).abs().max().item():.3g} |")
        del kv
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
