#!/usr/bin/env python3
"""The V4 projections at decode's m = 64 over linear's tile parameters:
block_n in {64, 128, 256}, block_k in {64, 128} and split-k (linear_partial +
linear_reduce) for every split count that divides the k steps, against
what the operator picks today (marked) and cuBLAS; weight-streaming
bandwidth as % of the copy bandwidth of the run.
Every configuration's output is checked against torch first.

    PYTHONPATH=python python3 python/bench/probes/linear_decode_sweep.py
"""

from __future__ import annotations

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))

import torch  # noqa: E402

import hisa  # noqa: E402
from bench_memory_bound import Timer, copy_bandwidth  # noqa: E402
from bench_mqa import bench  # noqa: E402

M = 64
# (name, n, k, groups): V4-Flash (dim 4096, q_lora 1024, 64 heads of 512,
# 8 output groups, o_lora 1024) and the CSA indexer's query projection.
SHAPES = [("wq_a", 1024, 4096, 1), ("wq_b", 32768, 1024, 1), ("wkv", 512, 4096, 1),
          ("wo_a (8 groups)", 1024, 4096, 8), ("wo_b", 4096, 8192, 1),
          ("i_wq", 8192, 1024, 1)]


def operator_choice(n, k, groups, m=M):
    """ops::linearTile and ops::linearSplits (lib/Ops/V4Operators.cpp) at m <= 64."""
    wide = groups == 1 and ((n >= 1024 and k >= 4096) or n > 64 * 132)
    block_n, block_k = (128, 64) if wide else (64, 128)
    if k % block_k:
        block_k = 64
    splits = 1
    if groups == 1:
        tiles = -(-n // block_n)
        steps = k // block_k
        for nxt in (2, 4, 8, 16):
            if tiles * splits >= 128 or 4 * splits * m * n * 4 >= n * k * 2 or steps % nxt:
                break
            splits = nxt
    return block_n, block_k, splits


def reference(x, w, groups, k, n):
    xs = x.float().view(M, groups, k)
    ws = w.float().view(groups, n, k)
    return torch.einsum("mgk,gnk->mgn", xs, ws).reshape(M, groups * n)


def measured_copy_bandwidth():
    """The device-to-device copy bandwidth of this run (bytes/s), printed."""
    t, nbytes = copy_bandwidth(Timer(), 2.0, 10)
    print(f"copy {nbytes / t / 1e9:.0f} GB/s\n")
    return nbytes / t


def main():
    copy_bw = measured_copy_bandwidth()
    reduce = hisa.jit.get_kernel("linear_reduce", {})
    print("| projection | N | K | groups | config | time (us) | GB/s | % of copy |")
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |")
    for name, n, k, groups in SHAPES:
        x = torch.randn(M, groups * k, device="cuda").bfloat16()
        w = torch.randn(groups * n, k, device="cuda").bfloat16() * 0.05
        y = torch.empty(M, groups * n, device="cuda").bfloat16()
        want = reference(x, w, groups, k, n)
        weight_bytes = groups * n * k * 2
        results = []

        def record(label, fn):
            fn()
            torch.cuda.synchronize()
            err = (y.float() - want).abs().max().item() / want.abs().max().item()
            if err > 2e-2:
                results.append((float("inf"), label + f" WRONG ({err:.2e})"))
                return
            results.append((bench(fn), label))

        a = x.view(M, groups, k)
        b = w.view(groups, n, k)
        record("cuBLAS", lambda: y.copy_(torch.bmm(a.transpose(0, 1), b.transpose(1, 2))
                                         .transpose(0, 1).reshape(M, groups * n)))
        chosen = operator_choice(n, k, groups)
        for block_n in (64, 128, 256):
            if n % block_n and groups > 1:
                continue
            for block_k in (64, 128):
                if k % block_k:
                    continue
                steps = k // block_k
                tiles = groups * -(-n // block_n)
                base = {"k": k, "n": n, "groups": groups, "x_cols": groups * k,
                        "y_cols": groups * n, "block_m": 64, "block_n": block_n,
                        "block_k": block_k}
                for splits in (1, 2, 4, 8, 16):
                    if steps % splits or tiles * splits > 8 * 132:
                        continue
                    label = f"bn {block_n} bk {block_k} splits {splits} ({tiles * splits} blocks)"
                    if (block_n, block_k, splits) == chosen:
                        label += " (operator)"
                    try:
                        if splits == 1:
                            kernel = hisa.jit.get_kernel("linear", dict(base, splits=1))
                            record(label, lambda kernel=kernel: kernel.launch(x, w, y))
                        else:
                            partial = torch.empty(splits, M, groups * n, device="cuda")
                            first = hisa.jit.get_kernel("linear_partial", dict(base, splits=splits))

                            def call(first=first, partial=partial):
                                first.launch(x, w, partial)
                                reduce.launch(partial, y)
                            record(label, call)
                    except Exception as exc:  # noqa: BLE001
                        results.append((float("inf"), f"{label}: {str(exc).splitlines()[0][:60]}"))
        results.sort(key=lambda r: r[0])
        shown = results[:4] + [r for r in results[4:]
                               if r[1] == "cuBLAS" or r[1].endswith("(operator)")]
        for t, label in shown:
            cells = ["-", "-", "-"] if t == float("inf") else [
                f"{t * 1e6:.1f}", f"{weight_bytes / t / 1e9:.0f}",
                f"{100 * weight_bytes / t / copy_bw:.0f}"]
            print(f"| {name} | {n} | {k} | {groups} | {label} | " + " | ".join(cells) + " |")
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
