#!/usr/bin/env python3
"""The dense attention kernels across shapes: flash_attn_pp (one block per
SM, FA3's schedule), the plain flash_attn (two blocks per SM, 64-key tiles),
the operator (which picks one of them by length) and torch's SDPA, causal
and not, D 64 and 128, from short to long sequences. Every output checked
against SDPA first. Prints a markdown table.

    PYTHONPATH=python python3 python/bench/probes/flash_attn_shapes.py
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

SHAPES = [(16, 16, 512), (8, 16, 1024), (4, 16, 2048), (2, 16, 4096), (1, 16, 8192),
          (1, 32, 8192), (1, 8, 16384)]


def main():
    if not torch.cuda.is_available():
        print("flash_attn_shapes: no CUDA GPU", file=sys.stderr)
        return 2
    F = torch.nn.functional
    print("| [B, H, S, D] | causal | SDPA (ms) | flash_attn_pp (ms) | vs SDPA | "
          "flash_attn plain (ms) | vs SDPA | pp vs plain | operator vs SDPA |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    failed = 0
    for d in (128, 64):
        for b, h, s in SHAPES:
            q, k, v = (torch.randn(b, h, s, d, device="cuda").bfloat16() for _ in range(3))
            for causal in (True, False):
                ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                params = {"dim": d, "causal": int(causal), "fold_scale": 1}
                kernels = [hisa.jit.get_kernel(name, params)
                           for name in ("flash_attn_pp", "flash_attn")]
                outs = [torch.empty_like(q) for _ in kernels]

                def runner(kernel, o):
                    def run():
                        kernel.launch(q, k, v, o, d ** -0.5)
                        return o
                    return run

                rows = []
                for fn in [lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)] + \
                        [runner(kernel, o) for kernel, o in zip(kernels, outs)] + \
                        [lambda: hisa.flash_attn(q, k, v, causal=causal)]:
                    out = fn()
                    torch.cuda.synchronize()
                    error = float((out.float() - ref.float()).norm() / ref.float().norm())
                    if error > 1e-2:
                        failed += 1
                    rows.append((bench(fn), error))
                (t_sdpa, _), (t_pp, e_pp), (t_plain, e_plain), (t_op, e_op) = rows
                flag = "" if max(e_pp, e_plain, e_op) <= 1e-2 else " **WRONG**"
                print(f"| [{b}, {h}, {s}, {d}] | {causal} | {t_sdpa * 1e3:.3f} | "
                      f"{t_pp * 1e3:.3f} | {t_sdpa / t_pp:.2f}x | {t_plain * 1e3:.3f} | "
                      f"{t_sdpa / t_plain:.2f}x | {t_plain / t_pp:.2f}x | "
                      f"{t_sdpa / t_op:.2f}x{flag} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
