#!/usr/bin/env python3
"""Probe: exact top-k of few long rows over a cluster of blocks per row
(python/bench/probes/topk_cluster.mlir; docs/proposals/
decode-topk-several-blocks-per-row.md) against hisa.topk and
torch.topk(sorted=False), in one process on the same inputs.

Every output is checked first against a stable descending sort (the exact
rule: the k largest, ties to the lower columns, -inf and NaN never
selected, -1 after the selectable ones) on random rows, rows of a few
distinct values, all-equal rows, rows mostly -inf, NaN and +inf, k = C and
parts of a row smaller than a block's 256 threads; then the shapes of the
table are timed.

    PYTHONPATH=python python3 python/bench/probes/topk_cluster_ab.py [--splits 2,4,8] [--check-only]
"""

from __future__ import annotations

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))

import torch  # noqa: E402

import hisa  # noqa: E402
from hisa import jit  # noqa: E402
from bench_mqa import bench  # noqa: E402

SOURCE = os.path.join(here, "topk_cluster.mlir")


def expected_sets(x, k):
    """The exact selection of each row as sorted columns, -1 padded."""
    key = torch.nan_to_num(x, nan=float("-inf"), posinf=float("inf"), neginf=float("-inf"))
    order = torch.sort(key, dim=1, descending=True, stable=True).indices[:, :k]
    selectable = ~torch.isneginf(key.gather(1, order))
    chosen = torch.where(selectable, order, torch.full_like(order, 2**62))
    chosen = chosen.sort(1).values
    return torch.where(chosen == 2**62, torch.full_like(chosen, -1), chosen)


def check(out, x, k, what):
    got = out.long()
    # Exactly -1 where nothing is selected: an unwritten slot keeps the
    # launch's sentinel (run() fills -7).
    assert bool((got >= -1).all()), f"{what}: a slot was not written"
    valid = got >= 0
    got = torch.where(valid, got, torch.full_like(got, 2**62)).sort(1).values
    got = torch.where(got == 2**62, torch.full_like(got, -1), got)
    want = expected_sets(x, k)
    if want.shape[1] < k:  # k > C: the extra slots hold -1
        want = torch.nn.functional.pad(want, (0, k - want.shape[1]), value=-1)
    bad = (got != want).any(1)
    if bool(bad.any()):
        row = int(bad.nonzero()[0])
        # What differs, so a failure on the GPU can be read without a rerun.
        g, w = got[row], want[row]
        g_set, w_set = set(g[g >= 0].tolist()), set(w[w >= 0].tolist())
        extra, missing = sorted(g_set - w_set)[:8], sorted(w_set - g_set)[:8]
        values = x[row].tolist()
        raise AssertionError(
            f"{what}: row {row} differs from the exact selection: "
            f"{len(g_set)} selected ({int((out[row] == -1).sum())} slots -1), want "
            f"{len(w_set)}; extra {[(c, values[c]) for c in extra]}, "
            f"missing {[(c, values[c]) for c in missing]}; raw slots "
            f"{out[row][:12].tolist()}")
    # -1 only after the selections.
    assert bool((valid[:, :-1] | ~valid[:, 1:]).all()), f"{what}: -1 before a selection"


def inputs(kind, rows, cols, gen):
    if kind == "random":
        return torch.randn(rows, cols, device="cuda", generator=gen)
    if kind == "few values":
        return torch.randint(0, 5, (rows, cols), device="cuda", generator=gen).float()
    if kind == "all equal":
        return torch.full((rows, cols), 0.25, device="cuda")
    if kind == "mostly -inf":
        x = torch.full((rows, cols), float("-inf"), device="cuda")
        n = max(1, cols // 1000)
        where = torch.randint(0, cols, (rows, n), device="cuda", generator=gen)
        x.scatter_(1, where, torch.randn(rows, n, device="cuda", generator=gen))
        return x
    if kind == "signed zeros":
        choice = torch.randint(0, 3, (rows, cols), device="cuda", generator=gen)
        values = torch.tensor([-0.0, 0.0, 1.0e-40], device="cuda")
        return values[choice]
    if kind == "nan and inf":
        x = torch.randn(rows, cols, device="cuda", generator=gen)
        u = torch.rand(rows, cols, device="cuda", generator=gen)
        x[u < 0.01] = float("nan")
        x[(u > 0.5) & (u < 0.501)] = float("inf")
        x[(u > 0.7) & (u < 0.75)] = float("-inf")
        return x
    raise ValueError(kind)


def main():
    if not torch.cuda.is_available():
        print("topk_cluster_ab: no CUDA GPU", file=sys.stderr)
        return 2
    splits = [2, 4, 8]
    check_only = small_only = False
    for a in sys.argv[1:]:
        if a.startswith("--splits"):
            splits = [int(s) for s in a.split("=", 1)[1].split(",")]
        # For compute-sanitizer: the small checks only, no timing.
        check_only = check_only or a == "--check-only"
        small_only = small_only or a == "--check-only"
    text = open(SOURCE).read()
    kernels = {s: jit.get_kernel("topk_cluster", dict(splits=s), source=text) for s in splits}

    def run(kernel, x, k):
        # A sentinel, not torch.empty: a kernel that leaves slots unwritten
        # could otherwise pass on the previous launch's answer.
        out = torch.full((x.shape[0], k), -7, device="cuda", dtype=torch.int32)
        kernel.launch(x, out)
        return out

    gen = torch.Generator(device="cuda").manual_seed(20261206)
    failures = 0
    cases = [(64, 16384, 512), (7, 100003, 1000), (3, 5000, 5000), (5, 300, 1),
             (4, 1000, 999), (3, 100, 150), (2, 5, 3), (64, 1 << 20, 4096)]
    if small_only:
        cases = [c for c in cases if c[0] * c[1] <= 1 << 20]
    for rows, cols, k in cases:
        for kind in ["random", "few values", "all equal", "mostly -inf", "signed zeros",
                     "nan and inf"]:
            x = inputs(kind, rows, cols, gen)
            for s, kernel in kernels.items():
                what = f"[{rows}, {cols}] k={k} {kind} splits={s}"
                try:
                    check(run(kernel, x, k), x, k, what)
                except AssertionError as error:
                    failures += 1
                    print(f"FAILED {error}")
    print(f"checks: {failures} failed")
    if check_only:
        return 1 if failures else 0

    print("| [R, C], k | torch.topk (us) | hisa.topk (us) | " +
          " | ".join(f"cluster {s} (us)" for s in splits) + " |")
    print("| --- | ---: | ---: |" + " ---: |" * len(splits))
    for rows, cols, k in [(64, 1 << 20, 4096), (64, 16384, 512), (64, 131072, 2048),
                          (128, 65536, 2048)]:
        x = torch.randn(rows, cols, device="cuda", generator=gen)
        t_torch = bench(lambda: torch.topk(x, k, dim=1, sorted=False))
        t_hisa = bench(lambda: hisa.topk(x, k))
        cells = []
        for s, kernel in kernels.items():
            out = torch.empty(rows, k, device="cuda", dtype=torch.int32)
            t = bench(lambda: kernel.launch(x, out))
            cells.append(f"{t * 1e6:.1f} ({t_torch / t:.2f}x torch)")
        print(f"| [{rows}, {cols}], {k} | {t_torch * 1e6:.1f} | {t_hisa * 1e6:.1f} "
              f"({t_torch / t_hisa:.2f}x) | " + " | ".join(cells) + " |")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
