#!/usr/bin/env python3
"""The V4 CSA decode step's indexer kernels at its shape (B = 64 sequences,
one query of 64 heads x 128 dims each over its 16384 compressed fp8 keys,
rows of 16400 as the layer lays them out): mqa_logits_decode over its
specializations (key chunk per block `split_n`, key tile `block_n`, the
blocks-per-SM register bound `min_blocks`), CUDA-graph-timed, against the
copy bandwidth on the key bytes; every specialization's logits compared
with the operator's (same bits expected: each logit is one block's sum);
then the exact top-k of those logits (k = 512) over its specializations.

    PYTHONPATH=python python3 python/bench/probes/mqa_logits_decode_sweep.py
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
from linear_decode_sweep import measured_copy_bandwidth  # noqa: E402
from split_k_one_launch_ab import graph_time  # noqa: E402

BATCH, KEYS, STRIDE, HEADS, DIM, TOPK = 64, 16384, 16400, 64, 128, 512


def main():
    copy_bw = measured_copy_bandwidth()
    q = torch.randn(BATCH * HEADS, DIM, device="cuda").mul(16).to(torch.float8_e4m3fn)
    k = torch.randn(BATCH * STRIDE, DIM, device="cuda").mul(64).to(torch.float8_e4m3fn)
    scale = 2.0 ** -torch.randint(5, 9, (BATCH * STRIDE,), device="cuda").float()
    weights = torch.randn(BATCH, HEADS, device="cuda") / HEADS
    starts = torch.zeros(BATCH, dtype=torch.int32, device="cuda")
    ends = torch.full((BATCH,), KEYS, dtype=torch.int32, device="cuda")
    key_bytes = BATCH * KEYS * (DIM + 4)

    def logits_with(params):
        out = torch.full((BATCH, STRIDE), float("nan"), device="cuda")
        kernel = hisa.jit.get_kernel("mqa_logits_decode", params)
        call = lambda: kernel.launch(q, k, scale, weights, starts, ends, out)  # noqa: E731
        return out, call

    base_params = {"heads": HEADS, "dim": DIM}
    reference, call = logits_with(base_params)
    call()
    torch.cuda.synchronize()
    print(f"# mqa_logits_decode, B = {BATCH}, {KEYS} keys each ({key_bytes / 1e6:.0f} MB "
          f"of fp8 keys and scales), copy {copy_bw / 1e9:.0f} GB/s\n")
    print("| split_n | block_n | min_blocks | blocks | time (us) | % of copy | same bits |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for split_n in (512, 1024, 2048, 4096):
        for block_n in (64, 128):
            for min_blocks in (4, 6, 8):
                if block_n == 128 and min_blocks > 4:
                    continue      # spills (ptxas)
                params = dict(base_params, split_n=split_n, block_n=block_n,
                              min_blocks=min_blocks)
                try:
                    out, call = logits_with(params)
                    t = graph_time(call)
                    torch.cuda.synchronize()
                    same = torch.equal(out[:, :KEYS], reference[:, :KEYS])
                except Exception as exc:  # the row says why
                    print(f"| {split_n} | {block_n} | {min_blocks} | error: {exc} | | | |")
                    continue
                blocks = -(-STRIDE // split_n) * BATCH
                print(f"| {split_n} | {block_n} | {min_blocks} | {blocks} | {t * 1e6:.1f} | "
                      f"{100 * key_bytes / t / copy_bw:.0f} | {same} |")

    print(f"\n# exact top-k (k = {TOPK}) of those logits, windows [0, {KEYS})\n")
    print("| cache | candidates | compact | min_blocks | time (us) | same selection |")
    print("| ---: | ---: | ---: | ---: | ---: | --- |")
    ref_sel = hisa.topk(reference, TOPK, starts=starts, ends=ends)
    ref_sorted = ref_sel.sort(dim=1).values
    for cache, candidates, compact, min_blocks in ((32768, 128, 1, 1), (16384, 128, 1, 1),
                                                   (256, 1024, 1, 5), (256, 1024, 1, 2),
                                                   (32768, 1024, 1, 1)):
        params = {"cache": cache, "candidates": candidates, "compact": compact,
                  "min_blocks": min_blocks, "relative": 1, "windowed": 1}
        try:
            kernel = hisa.jit.get_kernel("topk_f32", params)
            out = torch.empty(BATCH, TOPK, dtype=torch.int32, device="cuda")
            call = lambda: kernel.launch(reference, starts, ends, out)  # noqa: E731
            t = graph_time(call)
            torch.cuda.synchronize()
            same = torch.equal(out.sort(dim=1).values, ref_sorted)
        except Exception as exc:  # the row says why
            print(f"| {cache} | {candidates} | {compact} | {min_blocks} | error: {exc} | |")
            continue
        print(f"| {cache} | {candidates} | {compact} | {min_blocks} | {t * 1e6:.1f} | {same} |")


if __name__ == "__main__":
    main()
