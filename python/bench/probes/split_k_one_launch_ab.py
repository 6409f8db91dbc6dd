#!/usr/bin/env python3
"""Split-k in one launch (linear_split_k: the last block of each output tile
adds the partial sums up) against two launches (linear_partial +
linear_reduce), on the V4 decode projections that split (m = 64), with the
operator's tiles and splits; the bits must agree. Times are CUDA-graph
replays of each path (so the second launch's gap counts as it does in the
decode step), weight bytes as % of the copy bandwidth of the run.
(docs/proposals/decode-weight-streaming.md, step 4.)

    PYTHONPATH=python python3 python/bench/probes/split_k_one_launch_ab.py
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
from linear_decode_sweep import (M, SHAPES, measured_copy_bandwidth,  # noqa: E402
                                 operator_choice)


def graph_time(fn, replays=200, copies=20):
    """Seconds per call: `copies` calls captured in one graph, replayed."""
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(copies):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / (replays * copies)


def main():
    copy_bw = measured_copy_bandwidth()
    reduce = hisa.jit.get_kernel("linear_reduce", {})
    print("| projection | splits | path | time (us) | % of copy | same bits |")
    print("| --- | ---: | --- | ---: | ---: | --- |")
    for name, n, k, groups in SHAPES + [("wo_b, 8 splits", 4096, 8192, 1)]:
        block_n, block_k, splits = operator_choice(n, k, groups)
        if name.endswith("8 splits"):
            splits = 8
        if splits == 1:
            continue
        x = torch.randn(M, groups * k, device="cuda").bfloat16()
        w = (torch.randn(groups * n, k, device="cuda") * 0.05).bfloat16()
        params = {"k": k, "n": n, "groups": groups, "x_cols": groups * k,
                  "y_cols": groups * n, "block_m": 64, "block_n": block_n,
                  "block_k": block_k, "splits": splits}
        partial = torch.empty(splits, M, groups * n, device="cuda")
        counters = torch.zeros(1024, dtype=torch.int32, device="cuda")
        y_two = torch.empty(M, groups * n, device="cuda").bfloat16()
        y_one = torch.empty_like(y_two)
        first = hisa.jit.get_kernel("linear_partial", params)
        fused = hisa.jit.get_kernel("linear_split_k", params)

        def two():
            first.launch(x, w, partial)
            reduce.launch(partial, y_two)

        def one():
            fused.launch(x, w, partial, counters, y_one)

        weight_bytes = w.numel() * 2
        times = {"two launches": graph_time(two), "one launch": graph_time(one)}
        same = torch.equal(y_one, y_two) and not counters.any()
        for path, t in times.items():
            print(f"| {name} | {splits} | {path} | {t * 1e6:.1f} | "
                  f"{100 * weight_bytes / t / copy_bw:.0f} | {'yes' if same else 'NO'} |")
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
