#!/usr/bin/env python3
"""DeepSeek's FlashMLA sm90 sparse prefill (d_qk = d_v = 512, the V4
operation) beside hisa.sparse_attn, in one process on the same inputs: the
issue's three prefill shapes (bench_sparse_attn.py's inputs: Nkv = S,
indices uniform over each token's causal prefix, about 2% -1, a random
sink). Each output is checked against bench_sparse_attn's f32 reference
first (relative L2 < 1e-2), then the two are timed in alternating rounds
(bench_mqa.bench: batches of 10 calls behind a sleeping kernel, median).
Also hisa with programmatic dependent launch off (FlashMLA launches
without it).

Why: FlashMLA's d_qk = 576 kernel is the 640 TFLOP/s (H800) that issue 11
points at; its d_qk = 512 instantiation has hisa's CTA, shared memory and
schedule (docs/proposals/sparse-attn-critical-chains.md, forty-first
section). Timing it on these shapes says how much of the 1.5x-TileLang
target a hand-written kernel of the same design reaches on this GPU.

    python/bench/probes/flashmla_build.sh FLASHMLA_CSRC   # on the CPU machine
    PYTHONPATH=python python3 python/bench/probes/flashmla_ab.py [--lib PATH] [--rounds 3]

`--profile S,H,K` only launches each kernel three times on that shape
(after the check), for a profiler: ncu --kernel-name regex:sparse_attn_wg
(hisa's operator kernel at these shapes) or regex:sparse_attn_fwd_kernel
(FlashMLA's).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))

import torch  # noqa: E402

import hisa  # noqa: E402
import flashmla  # noqa: E402
from bench_mqa import bench, without_pdl  # noqa: E402
from bench_sparse_attn import D, SCALE, make_inputs, reference, relative_error  # noqa: E402

SHAPES = [(4096, 64, 640), (8192, 128, 1152), (4096, 128, 2048)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lib", default=os.path.join(here, "libflashmla_prefill.so"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shapes", metavar="S,H,K;...",
                        help="these shapes instead of the issue's three (e.g. a K sweep)")
    parser.add_argument("--profile", metavar="S,H,K",
                        help="launch each kernel three times on this shape only")
    args = parser.parse_args(argv)
    shapes = SHAPES
    if args.shapes:
        shapes = [tuple(int(v) for v in item.split(",")) for item in args.shapes.split(";")]
    if args.profile:
        shapes = [tuple(int(v) for v in args.profile.split(","))]
    prefill = flashmla.load(args.lib)
    print(f"== flashmla_ab on {torch.cuda.get_device_name(0)}")
    print("| S | H | K | hisa (ms) | hisa, PDL off | FlashMLA (ms) | FlashMLA / hisa time |"
          " hisa TFLOP/s | FlashMLA TFLOP/s | errors (hisa, FlashMLA) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    failures = 0
    for s, h, k in shapes:
        q, kv, sink, idx = make_inputs(1, s, h, k, None)
        out = torch.empty_like(q)

        def flashmla_call():
            return prefill(q, kv, sink, idx, SCALE, out)

        def operator():
            return hisa.sparse_attn(q, kv, sink, idx, SCALE)

        expected = reference(q, kv, sink, idx)
        errs = [relative_error(expected, operator()), relative_error(expected, flashmla_call())]
        torch.cuda.synchronize()
        ok = all(e < 1e-2 for e in errs)   # False for NaN
        failures += 0 if ok else 1
        if args.profile:
            for call in (operator, flashmla_call):
                for _ in range(3):
                    call()
            torch.cuda.synchronize()
            print(f"| {s} | {h} | {k} | launched for the profiler | errors "
                  f"{errs[0]:.1e}, {errs[1]:.1e}{'' if ok else ' FAILED'} |")
            continue
        times = {"hisa": [], "pdl_off": [], "flashmla": []}
        for _ in range(args.rounds):
            times["hisa"].append(bench(operator))
            times["flashmla"].append(bench(flashmla_call))
            times["pdl_off"].append(bench(without_pdl(operator)))
        t = {name: statistics.median(v) for name, v in times.items()}
        flops = 4 * s * h * k * D
        print(f"| {s} | {h} | {k} | {t['hisa'] * 1e3:.3f} | {t['pdl_off'] * 1e3:.3f} | "
              f"{t['flashmla'] * 1e3:.3f} | {t['flashmla'] / t['hisa']:.3f} | "
              f"{flops / t['hisa'] / 1e12:.0f} | {flops / t['flashmla'] / 1e12:.0f} | "
              f"{errs[0]:.1e}, {errs[1]:.1e}{'' if ok else ' FAILED'} |", flush=True)
        del q, kv, sink, idx, out, expected
        torch.cuda.empty_cache()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
