#!/usr/bin/env python3
"""A/B of the dense flash_attn kernels: the built-in sources (any `kt`)
against kernels-dsl/flash_attn.mlir from another commit, in one process on
the same inputs ([1, 32, 8192, 128] bf16, causal and not), every output
checked against torch's scaled_dot_product_attention first.

    git show HEAD~1:kernels-dsl/flash_attn.mlir > /tmp/flash_old.mlir
    PYTHONPATH=python python3 python/bench/probes/flash_attn_ab.py \
        [--old /tmp/flash_old.mlir] [--kt 64,128]

The old file's `hisa-variant` lines are applied as cmake/KernelVariants.cmake
does, so its flash_attn_ws is compared too. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))

import torch  # noqa: E402

import hisa  # noqa: E402
from bench_mqa import bench  # noqa: E402
from kernel_variants import with_variants  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", help="another commit's kernels-dsl/flash_attn.mlir")
    parser.add_argument("--kt", default="64", help="key tile sizes of the built-in kernels")
    parser.add_argument("--old-kernel", default="flash_attn",
                        help="the kernel of --old (its hisa-variant lines add more)")
    parser.add_argument("--old-params", default="",
                        help="parameters for --old's kernels, e.g. kt=128,fold_scale=1")
    parser.add_argument("--kernels", default="flash_attn,flash_attn_ws,flash_attn_pp",
                        help="built-in kernels to run at each key tile size")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("flash_attn_ab: no CUDA GPU", file=sys.stderr)
        return 2
    F = torch.nn.functional
    b, h, s, d = 1, 32, 8192, 128
    q, k, v = (torch.randn(b, h, s, d, device="cuda").bfloat16() for _ in range(3))
    old = with_variants(open(args.old).read(), args.old_kernel) if args.old else {}
    old_params = {key: int(value) for key, value in
                  (item.split("=") for item in args.old_params.split(",") if item)}
    print("| causal | kernel | source | params | ms | TFLOP/s | vs SDPA | rel. error |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for causal in (True, False):
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        sdpa = bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
        print(f"| {causal} | torch SDPA | - | - | {sdpa * 1e3:.3f} | {flops / sdpa / 1e12:.0f} | 1.00x | - |")
        t = bench(lambda: hisa.flash_attn(q, k, v, causal=causal))
        print(f"| {causal} | hisa.flash_attn (operator) | built-in | - | {t * 1e3:.3f} | "
              f"{flops / t / 1e12:.0f} | {sdpa / t:.2f}x | - |")
        # (kernel, label, source, params): the built-in kernels with each
        # key tile and both scale forms, the plain kernel's row statistics
        # in 2 and 4 register chains, and the old source.
        variants = [(name, "built-in", None, {"kt": kt, "fold_scale": fold})
                    for name in args.kernels.split(",")
                    for kt in map(int, args.kt.split(","))
                    for fold in (0, 1)]
        for name in args.kernels.split(","):
            if name == "flash_attn_ws":  # (its rules give it four chains)
                continue
            source = hisa.jit.builtin_kernel_source(name)
            kt = {"kt": 128} if name == "flash_attn_pp" else {}
            variants += [(name, f"chains = {n}", source.replace("chains = 1", f"chains = {n}"),
                          dict(kt, fold_scale=1)) for n in (2, 4)]
        variants += [(name, "old", source, old_params) for name, source in old.items()]
        for name, label, source, extra in variants:
            params = dict(extra, dim=d, causal=int(causal))
            shown = ",".join(f"{key}={value}" for key, value in extra.items()) or "-"
            try:
                kernel = hisa.jit.get_kernel(name, params, source=source)
            except Exception as exc:  # a variant that does not compile is a row
                print(f"| {causal} | {name} | {label} | {shown} | - | - | - | "
                      f"{str(exc).splitlines()[0][:80]} |")
                continue
            o = torch.empty_like(q)

            def call(kernel=kernel, o=o):
                kernel.launch(q, k, v, o, d ** -0.5)
                return o
            call()
            torch.cuda.synchronize()
            err = float((o.float() - ref.float()).norm() / ref.float().norm())
            t = bench(call)
            flag = "" if err < 1e-2 else " **WRONG**"
            print(f"| {causal} | {name} | {label} | {shown} | {t * 1e3:.3f} | "
                  f"{flops / t / 1e12:.0f} | {sdpa / t:.2f}x | {err:.1e}{flag} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
