#!/usr/bin/env python3
"""What an L2 prefetch of a projection's weights buys at decode's m = 64
(hisa.l2_prefetch, kernels-dsl/l2_prefetch.mlir): L2 is flushed, then the
stream prefetches the first P MiB of the weights and idles for a window (a
sleep kernel standing in for the small launches of a decode step), then the
projection runs (the operator's tile and split choice, as
probes/linear_decode_sweep.py); its time alone is what the table shows.

    PYTHONPATH=python python3 python/bench/probes/l2_prefetch_ab.py
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
from bench_memory_bound import Timer, copy_bandwidth  # noqa: E402
from linear_decode_sweep import M, operator_choice  # noqa: E402

SHAPES = [("wq_b", 32768, 1024, 1), ("wo_a (8 groups)", 1024, 4096, 8),
          ("wo_b", 4096, 8192, 1), ("i_wq", 8192, 1024, 1), ("wq_a", 1024, 4096, 1)]
PREFETCH_MIB = (0, 8, 16, 24, 32, 40)
WINDOWS_US = (10, 30)


def main():
    timer = Timer()
    t, nbytes = copy_bandwidth(timer, 2.0, 10)
    copy_bw = nbytes / t
    props = torch.cuda.get_device_properties(0)
    print(f"# L2 prefetch of decode projection weights on {props.name}\n")
    print(f"copy {copy_bw / 1e9:.0f} GB/s, L2 {props.L2_cache_size / 2**20:.0f} MiB\n")
    flush = torch.empty(512 * 2**20, dtype=torch.uint8, device="cuda")
    # Sleep cycles per microsecond, from a timed sleep.
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(1_000_000)
    end.record()
    torch.cuda.synchronize()
    cycles_per_us = 1_000_000 / (start.elapsed_time(end) * 1e3)
    reduce = hisa.jit.get_kernel("linear_reduce", {})
    print("| projection | weights (MiB) | idle window (us) | prefetched (MiB) | "
          "projection (us) | % of copy | vs no prefetch |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, n, k, groups in SHAPES:
        x = torch.randn(M, groups * k, device="cuda").bfloat16()
        w = torch.randn(groups * n, k, device="cuda").bfloat16() * 0.05
        y = torch.empty(M, groups * n, device="cuda").bfloat16()
        want = (x.float().view(M, groups, k).transpose(0, 1)
                @ w.float().view(groups, n, k).transpose(1, 2)).transpose(0, 1).reshape(M, -1)
        block_n, block_k, splits = operator_choice(n, k, groups)
        base = {"k": k, "n": n, "groups": groups, "x_cols": groups * k, "y_cols": groups * n,
                "block_m": 64, "block_n": block_n, "block_k": block_k}
        if splits == 1:
            kernel = hisa.jit.get_kernel("linear", dict(base, splits=1))

            def project():
                kernel.launch(x, w, y)
        else:
            partial = torch.empty(splits, M, groups * n, device="cuda")
            first = hisa.jit.get_kernel("linear_partial", dict(base, splits=splits))

            def project():
                first.launch(x, w, partial)
                reduce.launch(partial, y)
        project()
        torch.cuda.synchronize()
        err = (y.float() - want).abs().max().item() / want.abs().max().item()
        assert err < 2e-2, f"{name}: wrong result ({err:.2e})"
        weight_bytes = w.numel() * 2
        for window in WINDOWS_US:
            baseline = None
            for mib in PREFETCH_MIB:
                prefetch = min(mib * 2**20, weight_bytes)
                times = []
                for _ in range(20):
                    flush.add_(1)
                    if prefetch:
                        hisa.l2_prefetch(w, prefetch)
                    torch.cuda._sleep(int(window * cycles_per_us))
                    start.record()
                    project()
                    end.record()
                    torch.cuda.synchronize()
                    times.append(start.elapsed_time(end) * 1e-3)
                times.sort()
                t = times[len(times) // 2]
                baseline = baseline or t
                print(f"| {name} | {weight_bytes / 2**20:.0f} | {window} | {prefetch / 2**20:.0f} | "
                      f"{t * 1e6:.1f} | {100 * weight_bytes / t / copy_bw:.0f} | "
                      f"{baseline / t:.2f}x |")
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
