#!/usr/bin/env python3
"""The HISA indexer end to end: hisa.hisa_indexer against TileLang's
hisa_indexer (../shared/anchors), and the flat V3.2 indexer.

Measured in one run: the fp8 tensor-core ceiling (torch._scaled_mm at
8192^3), then per size (one causal sequence, H=64, D=128, kb=128,
block_topk=64, topk_tokens=2048) hisa_indexer and its three kernels
(pooling, fused stage 1, fused stage 2), TileLang's hisa_indexer, the peak
device memory each takes beyond its inputs and output, and how many of
TileLang's indices hisa also returns (the two differ only at ties: TileLang
rounds block scores to bf16). Then hisa.flat_indexer against TileLang's flat
logits + tl_topk, and the recall of HISA's selection against the flat
indexer's (random keys, and keys with block structure), reported, not
asserted.

    PYTHONPATH=python python3 python/bench/bench_indexer.py --out table.md \\
        [--anchors DIR_WITH_tilelang_examples]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import hisa  # noqa: E402
from hisa import ops  # noqa: E402
from bench_memory_bound import Timer, emit_table  # noqa: E402
from bench_mqa import bench, causal_windows, fp8, fp8_gemm_ceiling  # noqa: E402

HEADS, DIM, KB, BLOCK_TOPK, TOPK_TOKENS = 64, 128, 128, 64, 2048


def load(directory, sub, name):
    path = os.path.join(directory, sub, name + ".py")
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location("anchor_" + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def inputs(n, structured=False):
    q = fp8(n, HEADS, DIM)
    if structured:
        # Keys near a per-block centre: pooled keys then say where the
        # large logits are (what HISA's first stage relies on).
        centres = torch.randn(-(-n // KB), DIM, device="cuda")
        k = (centres.repeat_interleave(KB, 0)[:n] + 0.5 * torch.randn(n, DIM, device="cuda"))
        k = k.to(torch.float8_e4m3fn)
    else:
        k = fp8(n, DIM)
    k_scale = torch.rand(n, device="cuda") * 0.5 + 0.5
    weights = torch.randn(n, HEADS, device="cuda")
    ks, ke = causal_windows(n)
    return q, k, k_scale, weights, ks, ke


def peak_extra(fn, out_bytes):
    """Peak device memory allocated by fn beyond what existed before it and its output."""
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base - out_bytes
    del out
    return peak


def overlap(a, b):
    """Mean fraction of b's valid entries per row that a also holds."""
    a = a.long()
    b = b.long()
    total, hit = 0, 0
    for r0 in range(0, a.shape[0], 4096):
        x, y = a[r0:r0 + 4096], b[r0:r0 + 4096]
        xs = x.sort(1).values
        pos = torch.searchsorted(xs, y).clamp(max=xs.shape[1] - 1)
        found = (xs.gather(1, pos) == y) & (y >= 0)
        hit += int(found.sum())
        total += int((y >= 0).sum())
    return hit / max(total, 1)


def fmt(cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out")
    parser.add_argument("--anchors")
    parser.add_argument("--sizes", default="32768,131072")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench_indexer: no CUDA GPU", file=sys.stderr)
        return 2
    anchor = flat_anchor = topk_anchor = None
    if args.anchors:
        try:
            anchor = load(args.anchors, "dsa_hisa", "hisa")
            flat_anchor = load(args.anchors, "deepseek_v32", "fp8_lighting_indexer")
            topk_anchor = load(args.anchors, "deepseek_v32", "topk_selector")
        except Exception:
            traceback.print_exc()
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    _, fp8_rate = fp8_gemm_ceiling(8192)
    torch.cuda.empty_cache()

    lines = [
        f"# HISA indexer on {props.name}",
        "",
        f"torch {torch.__version__}; hisa {hisa.version()}; fp8 cuBLAS 8192^3 "
        f"{fp8_rate / 1e12:.0f} TFLOP/s (the ceiling). H={HEADS}, D={DIM}, kb={KB}, "
        f"block_topk={BLOCK_TOPK}, topk_tokens={TOPK_TOKENS}, one causal sequence, "
        "M = N. Median of 10 batches of 10 calls (CUDA events). Stage-2 FLOPs "
        "2*M*block_topk*kb*H*D.",
        "",
        fmt(["M = N", "impl", "time (ms)", "stage-2 TFLOP/s", "% of fp8 cuBLAS",
             "vs TileLang", "extra memory (MiB)", "agreement with TileLang"]),
        fmt(["---", "---"] + ["---:"] * 6),
    ]
    errors = 0
    for n in (int(s) for s in args.sizes.split(",")):
        q, k, k_scale, weights, ks, ke = inputs(n)
        flops = 2 * n * BLOCK_TOPK * KB * HEADS * DIM
        out_bytes = n * TOPK_TOKENS * 4
        call = lambda: hisa.hisa_indexer(q, k, k_scale, weights, ks, ke, k_block_size=KB,
                                         block_topk=BLOCK_TOPK, topk_tokens=TOPK_TOKENS)
        ours = call()
        t_ours = bench(call)
        mem_ours = peak_extra(call, out_bytes)
        # Its kernels one by one.
        blocked_k, blocked_scale = hisa.fp8_block_mean_pooling(k, k_scale, KB)
        blocks = ops._pool_topk_blocks(q, blocked_k, blocked_scale, weights, ks, ke, BLOCK_TOPK, KB)
        parts = [
            ("  pooling", lambda: hisa.fp8_block_mean_pooling(k, k_scale, KB), 0),
            ("  stage 1 (pool logits + clean + top blocks)",
             lambda: ops._pool_topk_blocks(q, blocked_k, blocked_scale, weights, ks, ke, BLOCK_TOPK, KB), 0),
            ("  stage 2 (block-sparse logits + top tokens)",
             lambda: ops._block_sparse_topk_tokens(q, k, k_scale, blocks, KB, weights, ks, ke, TOPK_TOKENS),
             flops),
        ]
        t_anchor = theirs = mem_anchor = None
        if anchor is not None:
            try:
                anchor_call = lambda: anchor.hisa_indexer(q, k, k_scale, weights, ks, ke, k_block_size=KB,
                                                          block_topk=BLOCK_TOPK, topk_tokens=TOPK_TOKENS)
                theirs = anchor_call()
                t_anchor = bench(anchor_call, reps=3, batch=2)
                mem_anchor = peak_extra(anchor_call, out_bytes)
            except Exception:
                traceback.print_exc()
                errors += 1
        agree = f"{overlap(ours, theirs) * 100:.2f}%" if theirs is not None else "-"
        lines.append(fmt([n, "hisa.hisa_indexer", f"{t_ours * 1e3:.2f}", f"{flops / t_ours / 1e12:.0f}",
                          f"{flops / t_ours / fp8_rate * 100:.0f}",
                          f"{t_anchor / t_ours:.2f}x" if t_anchor else "-",
                          f"{mem_ours / 2**20:.0f}", agree]))
        for name, fn, f in parts:
            t = bench(fn)
            lines.append(fmt([n, name, f"{t * 1e3:.2f}", f"{f / t / 1e12:.0f}" if f else "-",
                              f"{f / t / fp8_rate * 100:.0f}" if f else "-", "-", "-", "-"]))
        if t_anchor:
            lines.append(fmt([n, "TileLang hisa_indexer", f"{t_anchor * 1e3:.2f}",
                              f"{flops / t_anchor / 1e12:.0f}", f"{flops / t_anchor / fp8_rate * 100:.0f}",
                              "1.00x", f"{mem_anchor / 2**20:.0f}", "-"]))
        del q, k, k_scale, weights, ks, ke, ours, theirs, blocked_k, blocked_scale, blocks
        torch.cuda.empty_cache()

    # The flat indexer at 32768.
    n = 32768
    q, k, k_scale, weights, ks, ke = inputs(n)
    flat_flops = 2 * HEADS * DIM * n * (n + 1) // 2
    lines += ["", fmt(["flat indexer, M = N", "impl", "time (ms)", "logits TFLOP/s", "% of fp8 cuBLAS",
                       "vs anchor", "", ""]), fmt(["---", "---"] + ["---:"] * 6)]
    call = lambda: hisa.flat_indexer(q, k, k_scale, weights, ks, ke, TOPK_TOKENS)
    t_flat = bench(call, reps=5, batch=3)
    t_flat_anchor = None
    if flat_anchor is not None and topk_anchor is not None:
        try:
            def anchor_flat():
                logits = flat_anchor.mqa_attn_return_logits_interface(q, k, k_scale, weights, ks, ke,
                                                                     clean_logits=True)
                return topk_anchor.tl_topk(logits, ks, ke, TOPK_TOKENS)
            t_flat_anchor = bench(anchor_flat, reps=3, batch=2)
        except Exception:
            traceback.print_exc()
    lines.append(fmt([n, "hisa.flat_indexer", f"{t_flat * 1e3:.2f}", f"{flat_flops / t_flat / 1e12:.0f}",
                      f"{flat_flops / t_flat / fp8_rate * 100:.0f}",
                      f"{t_flat_anchor / t_flat:.2f}x" if t_flat_anchor else "-", "", ""]))
    if t_flat_anchor:
        lines.append(fmt([n, "TileLang flat logits + tl_topk", f"{t_flat_anchor * 1e3:.2f}",
                          f"{flat_flops / t_flat_anchor / 1e12:.0f}",
                          f"{flat_flops / t_flat_anchor / fp8_rate * 100:.0f}", "1.00x", "", ""]))
    del q, k, k_scale, weights, ks, ke
    torch.cuda.empty_cache()

    # Host time per call (the GPU work of these small calls overlaps).
    timer = Timer()
    q, k, k_scale, weights, ks, ke = inputs(1024)
    x = torch.randn(64, 1024, device="cuda")
    calls = [
        ("hisa.topk([64, 1024], 64)", lambda i: hisa.topk(x, 64)),
        ("hisa.hisa_indexer(M = N = 1024)",
         lambda i: hisa.hisa_indexer(q, k, k_scale, weights, ks, ke, k_block_size=KB, block_topk=8,
                                     topk_tokens=256)),
        ("torch.ops.hisa.hisa_indexer(M = N = 1024)",
         lambda i: torch.ops.hisa.hisa_indexer(q, k, k_scale, weights, ks, ke, KB, 8, 256)),
        ("torch.topk([64, 1024], 64) (for scale)", lambda i: torch.topk(x, 64)),
    ]
    lines += ["", fmt(["host time per Python call", "", "us/call", "", "", "", "", ""]),
              fmt(["---", "---", "---:", "", "", "", "", ""])]
    for name, fn in calls:
        for i in range(20):
            fn(i)
        host = min(timer.host_time(fn, 200) for _ in range(5))
        lines.append(fmt([name, "", f"{host * 1e6:.1f}", "", "", "", "", ""]))
    del q, k, k_scale, weights, ks, ke, x

    # Recall of HISA against the flat indexer.
    lines += ["", fmt(["recall of the flat top-2048, M = N", "keys", "HISA recall", "", "", "", "", ""]),
              fmt(["---", "---", "---:", "", "", "", "", ""])]
    for structured in (False, True):
        n = 16384
        q, k, k_scale, weights, ks, ke = inputs(n, structured)
        flat = hisa.flat_indexer(q, k, k_scale, weights, ks, ke, TOPK_TOKENS)
        ours = hisa.hisa_indexer(q, k, k_scale, weights, ks, ke, k_block_size=KB,
                                 block_topk=BLOCK_TOPK, topk_tokens=TOPK_TOKENS)
        # Rows whose window is longer than topk_tokens (shorter ones take everything).
        long_rows = (ke - ks) > TOPK_TOKENS
        recall = overlap(ours[long_rows], flat[long_rows])
        lines.append(fmt([n, "block-structured" if structured else "random", f"{recall * 100:.1f}%",
                          "", "", "", "", ""]))
        del q, k, k_scale, weights, ks, ke, flat, ours
        torch.cuda.empty_cache()

    return emit_table(lines, args.out, errors)


if __name__ == "__main__":
    sys.exit(main())
