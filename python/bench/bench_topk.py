#!/usr/bin/env python3
"""Exact top-k: hisa.topk against torch.topk and TileLang's topk_selector.

Measured in one run: the device-to-device copy bandwidth (the ceiling: a
top-k must read its input once), then per shape hisa.topk, torch.topk
(sorted=False) and, with --anchors, TileLang 0.1.15's `tl_topk` from
../shared/anchors (deepseek_v32/topk_selector.py; it takes windows, given
as [0, C); f32 only). Bytes = R*C*(4 or 2) read + R*k*4 written. Each result is checked
against torch (selected values as a multiset) before timing. A mismatch, an
implementation that raises, or anchors that fail to load (with --anchors)
are named on stderr and in the table and make the exit status 1.

    PYTHONPATH=python python3 python/bench/bench_topk.py --out table.md \\
        [--anchors DIR_WITH_tilelang_examples]

The anchor needs TileLang on PYTHONPATH (see ../shared/anchors/README.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import hisa  # noqa: E402
from bench_memory_bound import (  # noqa: E402
    Timer, copy_bandwidth, describe, emit_table, fmt_row, l2_bytes, load_anchor)

# (rows, columns, k, dtype, whether the anchor is run: its fixed
# 4096-candidate buffer overflows on long random rows, killing the CUDA
# context, and it takes f32 only).
SHAPES = [
    (32768, 8192, 2048, torch.float32, True),
    (30720, 8192, 2048, torch.float32, True),
    (32768, 1024, 64, torch.float32, True),
    (8192, 131072, 2048, torch.float32, False),
    (64, 1 << 20, 4096, torch.float32, False),
    # Decode: few rows (a cluster of blocks per row past 16384 columns).
    (64, 131072, 2048, torch.float32, False),
    (64, 16384, 512, torch.float32, False),
    (32768, 8192, 2048, torch.bfloat16, False),
    (8192, 131072, 2048, torch.bfloat16, False),
]


def same_values(x, k, idx):
    """The selected values equal torch.topk's as a multiset (finite inputs)."""
    ref = torch.topk(x, k, dim=1).values
    got = torch.sort(x.gather(1, idx.long().clamp(min=0)), dim=1, descending=True).values
    return bool(torch.equal(got, ref)) and bool((idx >= 0).all())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="also write the markdown table to this file")
    parser.add_argument("--anchors", help="the anchors' tilelang_examples folder")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench_topk: no CUDA GPU", file=sys.stderr)
        return 2
    anchor = anchor_note = None
    if args.anchors:
        try:
            anchor = load_anchor(args.anchors, "deepseek_v32/topk_selector.py",
                                  "anchor_topk_selector")
        except Exception as exc:  # an error of the run: named, and the rest benchmarked
            traceback.print_exc()
            anchor_note = f"TileLang anchors failed to load: {describe(exc)}"
            print(f"bench_topk: FAILED {anchor_note}", file=sys.stderr)
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    timer = Timer()
    copy_t, copy_bytes = copy_bandwidth(timer, 2.0, args.repeats)
    copy_bw = copy_bytes / copy_t
    torch.cuda.empty_cache()
    lines = [
        f"# Exact top-k on {props.name}",
        "",
        f"torch {torch.__version__}; runtime {hisa.lib_path()} ({hisa.version()}); "
        f"copy {copy_bw / 1e9:.0f} GB/s (= 100%). Time per call, median of "
        f"{args.repeats} batches, inputs rotating over > 3x L2 ({l2_bytes() / 2**20:.0f} MiB, "
        "device properties). host us/call: median of 5 samples of 20 calls (earlier tables: "
        "one sample of 5 calls); host min: their minimum.",
        "",
    ]
    errors = 0
    if anchor_note:
        lines += [f"**{anchor_note}**: no TileLang rows.", ""]
        errors += 1
    lines += [
        fmt_row(["shape [R, C], k", "impl", "time (us)", "GB/s", "% of copy",
                 "vs torch.topk", "host us/call", "check", "host min us/call"]),
        fmt_row(["---", "---"] + ["---:"] * 5 + [":---:", "---:"]),
    ]
    for rows, columns, k, dtype, run_anchor in SHAPES:
        element = torch.tensor([], dtype=dtype).element_size()
        per_set = rows * columns * element
        sets = max(2, -(-3 * l2_bytes() // per_set))
        xs = [torch.randn(rows, columns, device="cuda").to(dtype) for _ in range(sets)]
        moved = rows * columns * element + rows * k * 4
        shape = f"[{rows}, {columns}], {k}" + (" bf16" if dtype == torch.bfloat16 else "")
        starts = torch.zeros(rows, dtype=torch.int32, device="cuda")
        ends = torch.full((rows,), columns, dtype=torch.int32, device="cuda")
        # torch first: the other rows give their speedup over it.
        impls = [
            ("torch.topk(sorted=False)", lambda x: torch.topk(x, k, dim=1, sorted=False).indices),
            ("hisa.topk", lambda x: hisa.topk(x, k)),
        ]
        if anchor is not None and run_anchor:
            impls.append(("TileLang tl_topk", lambda x: anchor.tl_topk(x, starts, ends, k)))
        torch_time = None
        for name, fn in impls:
            try:
                ok = same_values(xs[0], k, fn(xs[0]))
                t, host = timer.run(lambda i: fn(xs[i % sets]), inner=5, repeats=args.repeats)
                if name.startswith("torch"):
                    torch_time = t
                bw = moved / t
                speedup = f"{torch_time / t:.2f}x" if torch_time else "-"
                lines.append(fmt_row([
                    shape, name, f"{t * 1e6:.1f}", f"{bw / 1e9:.0f}",
                    f"{100 * bw / copy_bw:.1f}", speedup, f"{host * 1e6:.1f}",
                    "ok" if ok else "**MISMATCH**", f"{timer.host_min * 1e6:.1f}"]))
                if not ok:
                    print(f"bench_topk: {name} on {shape}: selection MISMATCH", file=sys.stderr)
                errors += 0 if ok else 1
            except Exception as exc:
                traceback.print_exc()
                print(f"bench_topk: FAILED {name} on {shape}: {describe(exc)}", file=sys.stderr)
                lines.append(fmt_row([shape, name] + ["-"] * 5
                                     + [f"error: {describe(exc, 80)}", "-"]))
                errors += 1
        del xs
        torch.cuda.empty_cache()
    return emit_table(lines, args.out, errors)


if __name__ == "__main__":
    sys.exit(main())
