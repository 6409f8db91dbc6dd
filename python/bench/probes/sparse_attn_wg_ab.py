#!/usr/bin/env python3
"""A/B of sparse attention kernel sources (sparse_attn_wg by default) on
the shapes of bench_sparse_attn.py with at least 128 tokens (prefill and
batched decode), beside the sparse_attn operator, in one process on the
same inputs, every output checked against f32 torch first.

    PYTHONPATH=python python3 python/bench/probes/sparse_attn_wg_ab.py \
        [--kernel sparse_attn_ws] [--ablation] [--decode | --prefill] \
        - /tmp/variant.mlir[:PARAM=V,...][@TARGET] ...

Each variant is FILE[:PARAMS][@TARGET]; FILE "-" is the built-in source;
TARGET a JIT target string (default sm_90a; e.g. "-@sm_90a,+narrow-indices"
A/Bs the 32-bit index arithmetic); a file's
`hisa-variant` lines apply (so kernels-dsl/sparse_attn.mlir gives
sparse_attn_ws). sparse_attn_ws runs with partial_sums = 1, as the
operator does. Prints a markdown table (ms, TFLOP/s, time relative to the
operator). --decode times the decode shapes only, --prefill the prefill
shapes only. With --ablation a variant whose output is wrong (a kernel with
work removed on purpose, for an upper bound of what that work costs) is
still timed, its cell marked "wrong".
"""

from __future__ import annotations

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))

import torch  # noqa: E402

import hisa  # noqa: E402
from bench_mqa import bench  # noqa: E402
from bench_sparse_attn import D, SCALE, SHAPES, check, kernel_variant, make_inputs  # noqa: E402
from kernel_variants import with_variants  # noqa: E402


def main():
    if not torch.cuda.is_available():
        print("sparse_attn_wg_ab: no CUDA GPU", file=sys.stderr)
        return 1
    args = sys.argv[1:]
    kernel = "sparse_attn_wg"
    if args[:1] == ["--kernel"]:
        kernel, args = args[1], args[2:]
    ablation = args[:1] == ["--ablation"]
    if ablation:
        args = args[1:]
    decode_only = args[:1] == ["--decode"]
    if decode_only:
        args = args[1:]
    prefill_only = args[:1] == ["--prefill"]
    if prefill_only:
        args = args[1:]
    variants = []
    for arg in args or ["-"]:
        spec, _, target = arg.partition("@")
        path, _, overrides = spec.partition(":")
        params = {}
        for item in filter(None, overrides.split(",")):
            name, value = item.split("=")
            params[name] = int(value)
        if kernel == "sparse_attn_ws":
            params = {"partial_sums": 1, **params}
        source = None
        if path != "-":
            text = open(path).read()
            source = with_variants(text, text.split("tile.kernel @", 1)[1].split("(", 1)[0])[kernel]
        variants.append((arg, params, source, target or "sm_90a"))
    print("| shape | operator | " + " | ".join(os.path.basename(label) for label, *_ in variants)
          + " |")
    print("| --- | ---: |" + " ---: |" * len(variants))
    failures = 0
    for label, b, s, h, k, nkv in SHAPES:
        if b * s < 128:
            continue  # the operator splits few tokens' indices; wg does not
        if decode_only and label != "decode" or prefill_only and label != "prefill":
            continue
        q, kv, sink, idx = make_inputs(b, s, h, k, nkv)
        flops = 4 * b * s * h * k * D
        cells, base = [], None
        calls = [lambda: hisa.sparse_attn(q, kv, sink, idx, SCALE)]
        for _, params, source, target in variants:
            pad = 128 if kernel.startswith("sparse_attn_wg") else 64
            extra = {"topk_pad": -(-k // pad) * pad, **params}
            calls.append(kernel_variant(q, kv, sink, idx, kernel, extra, source, target))
        for call in calls:
            error = check(q, kv, sink, idx, call())
            wrong = not error < 1e-2
            if wrong and not ablation:
                cells.append(f"**error {error:.1e}**")
                failures += 1
                continue
            t = bench(call)
            base = base or t
            mark = " wrong" if wrong else ""
            cells.append(f"{t * 1e3:.3f} ({flops / t / 1e12:.0f}, {t / base:.3f}x{mark})")
        print(f"| {label} B={b} S={s} H={h} K={k} | " + " | ".join(cells) + " |")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
