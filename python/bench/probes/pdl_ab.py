#!/usr/bin/env python3
"""Programmatic dependent launch on and off, in one process
(hisa.set_programmatic_launch): the V4 layer's decode step (B = 64 at
65536 tokens of context; eager and replayed from a CUDA graph captured
with the setting in force), hisa_indexer at M = N = 1024 and 32768,
flat_indexer at 4096 and top-k at decode's [64, 16388]. The selections
must be equal either way (as sets per row: checked); prints a markdown
table.

    PYTHONPATH=python python3 python/bench/probes/pdl_ab.py
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
import bench_indexer  # noqa: E402
import bench_v4_layer  # noqa: E402


def indexer_case(n):
    q, k, k_scale, weights, ks, ke = bench_indexer.inputs(n)
    return lambda: hisa.hisa_indexer(q, k, k_scale, weights, ks, ke, k_block_size=128,
                                     block_topk=64, topk_tokens=2048)


def flat_case(n):
    q, k, k_scale, weights, ks, ke = bench_indexer.inputs(n)
    return lambda: hisa.flat_indexer(q, k, k_scale, weights, ks, ke, 2048)


def topk_case():
    x = torch.randn(64, 16388, device="cuda")
    starts = torch.zeros(64, dtype=torch.int32, device="cuda")
    ends = torch.full((64,), 16388, dtype=torch.int32, device="cuda")
    out = torch.empty(64, 512, dtype=torch.int32, device="cuda")
    return lambda: hisa.topk(x, 512, starts, ends, out=out)


def main():
    timer = Timer()
    t, nbytes = copy_bandwidth(timer, 2.0, 10)
    copy_bw = nbytes / t
    print(f"copy {copy_bw / 1e9:.0f} GB/s\n")
    cases = [("hisa_indexer M = N = 1024", indexer_case(1024)),
             ("hisa_indexer M = N = 32768", indexer_case(32768)),
             ("flat_indexer M = N = 4096", flat_case(4096)),
             ("topk [64, 16388] k = 512 (out=)", topk_case())]
    print("| case | PDL off (us) | PDL on (us) | on / off | outputs equal |")
    print("| --- | ---: | ---: | ---: | :---: |")
    for label, fn in cases:
        times, outs = [], []
        for enabled in (False, True):
            hisa.set_programmatic_launch(enabled)
            outs.append(fn().clone())
            torch.cuda.synchronize()
            times.append(bench(fn))
        # Selections come in no particular order (slots are claimed with
        # atomics): compare each row as a set.
        same = bool(torch.equal(outs[0].sort(dim=-1).values, outs[1].sort(dim=-1).values))
        print(f"| {label} | {times[0] * 1e6:.1f} | {times[1] * 1e6:.1f} | "
              f"{times[1] / times[0]:.3f} | {'yes' if same else 'NO'} |")
    print()
    header = ["ratio", "B", "context", "eager (us)", "CUDA graph (us)", "host wall / step (us)",
              "projections / compressor / indexer / attention / rest (us)", "bytes (MB)",
              "floor (us)", "% of floor"]
    print("| PDL | " + " | ".join(header) + " |")
    print("| --- " * (len(header) + 1) + "|")
    for enabled in (False, True):
        hisa.set_programmatic_launch(enabled)
        for ratio in (4, 128, 0):
            lines = []
            try:
                bench_v4_layer.decode_rows(ratio, 64, 65536, copy_bw, lines)
            except Exception as exc:  # keep measuring the others
                lines.append(f"| {ratio} | error: {str(exc).splitlines()[0][:100]} |")
            for line in lines:
                print(f"| {'on' if enabled else 'off'} " + line)
    hisa.set_programmatic_launch(True)


if __name__ == "__main__":
    main()
