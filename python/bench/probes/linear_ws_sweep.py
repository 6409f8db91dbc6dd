#!/usr/bin/env python3
"""Warp-specialized variants of `linear` for decode's m = 64 (proposal
docs/proposals/decode-weight-streaming.md, step 1): the kernels-dsl source
with its `tile.pipelined` made `warp_specialized` (a producer warpgroup keeps
`num_stages` TMA loads in flight while the two consumer warpgroups run the
wgmmas) at 3-8 stages, 1 or 2 blocks per SM, block_n 64-256, block_k 64 or
128, whole-k or split over k (the linear_partial variant + linear_reduce),
on the three 64 MB projections of a V4-Flash decode step, against the
operator's choice (today's non-specialized loop) and cuBLAS. Each variant's
output is compared with the operator's (same bits expected: the same wgmma
sequence over the same k order); variants that do not compile (shared
memory, registers) are listed as such.

    PYTHONPATH=python python3 python/bench/probes/linear_ws_sweep.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))
sys.path.insert(0, here)

import torch  # noqa: E402

import hisa  # noqa: E402
from bench_mqa import bench  # noqa: E402
from kernel_variants import with_variants  # noqa: E402
from linear_decode_sweep import M, measured_copy_bandwidth, operator_choice  # noqa: E402

SHAPES = [("wq_b", 32768, 1024, 1), ("wo_a (8 groups)", 1024, 4096, 8), ("wo_b", 4096, 8192, 1)]


def variant_sources():
    """{name: source} of linear and linear_partial from kernels-dsl/linear.mlir."""
    path = os.path.join(here, "..", "..", "..", "kernels-dsl", "linear.mlir")
    with open(path) as f:
        return with_variants(f.read(), "linear")


def specialize(source, stages, blocks_per_sm):
    text = source.replace("num_stages = 4 {", f"num_stages = {stages} warp_specialized {{")
    return text.replace("threads 256 {", f"threads 256 blocks_per_sm {blocks_per_sm} {{")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a smaller sweep")
    args = parser.parse_args()
    copy_bw = measured_copy_bandwidth()
    sources = variant_sources()
    reduce = hisa.jit.get_kernel("linear_reduce", {})
    # --quick: 12 variants a shape (about a minute of JIT compiles each).
    stage_counts = (4, 6) if args.quick else (3, 4, 6, 8)
    widths = (128,) if args.quick else (64, 128, 256)
    depths = (64,) if args.quick else (64, 128)
    print("| projection | config | time (us) | % of copy | same bits as the operator's |")
    print("| --- | --- | ---: | ---: | --- |")
    for name, n, k, groups in SHAPES:
        x = torch.randn(M, groups * k, device="cuda").bfloat16()
        w = (torch.randn(groups * n, k, device="cuda") * 0.05).bfloat16()
        weight_bytes = w.numel() * 2
        rows = []

        def run(kernel_name, params, source, splits):
            y = torch.empty(M, groups * n, device="cuda").bfloat16()
            if splits == 1:
                kernel = hisa.jit.get_kernel(kernel_name, params, source=source)

                def call():
                    kernel.launch(x, w, y)
            else:
                partial = torch.empty(splits, M, groups * n, device="cuda")
                kernel = hisa.jit.get_kernel(kernel_name, params, source=source)

                def call():
                    kernel.launch(x, w, partial)
                    reduce.launch(partial, y)
            call()
            torch.cuda.synchronize()
            return y, bench(call)

        block_n, block_k, splits = operator_choice(n, k, groups)
        base = {"k": k, "n": n, "groups": groups, "x_cols": groups * k, "y_cols": groups * n,
                "block_m": 64}
        chosen = dict(base, block_n=block_n, block_k=block_k, splits=splits)
        want, t_op = run("linear" if splits == 1 else "linear_partial", chosen, None, splits)
        rows.append((t_op, f"operator: bn {block_n} bk {block_k} splits {splits}", "-"))
        a, b = x.view(M, groups, k), w.view(groups, n, k)
        t_cublas = bench(lambda: torch.bmm(a.transpose(0, 1), b.transpose(1, 2)))
        rows.append((t_cublas, "cuBLAS", "-"))
        for bn in widths:
            if groups > 1 and n % bn:
                continue
            for bk in depths:
                steps = k // bk
                for sp in ((1, 2, 4) if args.quick else (1, 2, 4, 8)):
                    if steps % sp or (groups * -(-n // bn) * sp) > 4 * 132:
                        continue
                    for stages in stage_counts:
                        for per_sm in (1, 2):
                            label = (f"ws: bn {bn} bk {bk} splits {sp} stages {stages} "
                                     f"blocks/SM {per_sm}")
                            kernel_name = "linear" if sp == 1 else "linear_partial"
                            source = specialize(sources[kernel_name], stages, per_sm)
                            try:
                                y, t_v = run(kernel_name, dict(base, block_n=bn, block_k=bk,
                                                               splits=sp), source, sp)
                            except Exception as exc:  # noqa: BLE001
                                rows.append((float("inf"), label,
                                             f"does not build: {str(exc).splitlines()[0][:50]}"))
                                continue
                            same = torch.equal(y, want)
                            close = (y.float() - want.float()).abs().max().item() <= \
                                2e-2 * want.float().abs().max().item()
                            rows.append((t_v, label, "yes" if same else
                                         ("no (close)" if close else "NO: WRONG")))
        rows.sort(key=lambda r: r[0])
        for t_v, label, same in rows[:8] + [r for r in rows[8:] if not r[1].startswith("ws")]:
            cells = ("-", "-") if t_v == float("inf") else (
                f"{t_v * 1e6:.1f}", f"{100 * weight_bytes / t_v / copy_bw:.0f}")
            print(f"| {name} | {label} | {cells[0]} | {cells[1]} | {same} |")
        broken = [r for r in rows if r[2].startswith("NO")]
        for t_v, label, same in broken:
            print(f"| {name} | {label} | {t_v * 1e6:.1f} | - | {same} |")
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
