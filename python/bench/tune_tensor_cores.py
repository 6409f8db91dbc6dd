"""Tuning sweep of the tensor-core kernels: thread count (warpgroups), tile
sizes and pipeline depth, each variant checked against a reference first.

The DSL sources of kernels-dsl/ are specialized by text (thread count,
element type, pipeline depth) and compiled through the JIT; every variant
prints one row (time, TFLOP/s, % of the fp8 cuBLAS rate of the same run).
This is the record behind the defaults of the kernels; it is not a test.

  python/bench/tune_tensor_cores.py [--only gemm|sparse|pool] [--out FILE]
"""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import torch  # noqa: E402

from bench_mqa import bench, causal_windows, fp8  # noqa: E402
from hisa import jit  # noqa: E402

KERNELS = os.path.join(HERE, "..", "..", "kernels-dsl")


def variant(name, threads=128, stages=None, element=None):
    with open(os.path.join(KERNELS, f"{name}.mlir")) as f:
        text = f.read()
    text = re.sub(r"threads \d+", f"threads {threads}", text)
    if stages is not None:
        text = re.sub(r"num_stages = \d+", f"num_stages = {stages}", text)
    if element is not None:
        text = text.replace("f8E4M3FN", element)
    return text


def gemm_rows(fp8_rate):
    rows = []
    size = 4096
    for element, block_k in (("f8E4M3FN", 128), ("bf16", 64)):
        dtype = torch.float8_e4m3fn if element == "f8E4M3FN" else torch.bfloat16
        a = torch.randn(size, size, device="cuda").to(dtype)
        b = torch.randn(size, size, device="cuda").to(dtype)
        c = torch.empty(size, size, device="cuda")
        ref = a[:256].float() @ b[:256].float().T
        magnitude = a[:256].float().abs() @ b[:256].float().abs().T
        for threads, bm, bn, stages in (
            (128, 128, 128, 3),
            (128, 128, 128, 4),
            (256, 128, 256, 3),
            (256, 128, 256, 4),
            (256, 256, 128, 3),
            (256, 256, 128, 4),
        ):
            try:
                source = variant("fp8_gemm", threads, stages, element)
                params = {"k": size, "block_m": bm, "block_n": bn, "block_k": block_k}
                kernel = jit.get_kernel("fp8_gemm", params, source=source)
                c.fill_(float("nan"))
                kernel.launch(a, b, c)
                torch.cuda.synchronize()
                ok = bool(((c[:256, :256] - ref).abs() <= 2e-3 * magnitude + 1e-3).all())
                t = bench(lambda: kernel.launch(a, b, c))
                rate = 2 * size**3 / t
                label = f"{element} gemm {size}^3 threads={threads} tile={bm}x{bn}x{block_k} stages={stages}"
                rows.append((label, "ok" if ok else "MISMATCH", t, rate, rate / fp8_rate))
            except Exception as exc:  # a variant that does not compile is reported
                rows.append((f"{element} threads={threads} tile={bm}x{bn} stages={stages}", f"error: {exc}"[:120], 0, 0, 0))
    return rows


def sparse_rows(fp8_rate):
    rows = []
    heads, dim, kb, n, topk = 64, 128, 128, 32768, 64
    m = n
    ks, ke = causal_windows(n)
    q = fp8(m, heads, dim)
    k = fp8(n, dim)
    k_scale = torch.rand(n, device="cuda") + 0.5
    weights = torch.randn(m, heads, device="cuda")
    index = torch.randint(0, -(-n // kb), (m, topk), device="cuda", dtype=torch.int32)
    out = torch.empty(m, topk * kb, device="cuda")
    flops = 2 * m * topk * kb * heads * dim
    reference = None
    for threads, stages in ((128, 2), (128, 3), (128, 4), (256, 2), (256, 3), (256, 4)):
        try:
            source = variant("block_sparse_mqa_logits", threads, stages)
            kernel = jit.get_kernel(
                "block_sparse_mqa_logits", {"heads": heads, "dim": dim, "kb": kb, "topk": topk}, source=source
            )
            out.fill_(float("nan"))
            kernel.launch(q, k, k_scale, index, weights, ks, ke, out)
            torch.cuda.synchronize()
            if reference is None:
                reference = out.clone()
            ok = bool(torch.allclose(out, reference, rtol=1e-5, atol=1e-5, equal_nan=False))
            t = bench(lambda: kernel.launch(q, k, k_scale, index, weights, ks, ke, out), reps=5, batch=3)
            label = f"block_sparse T={topk} M=N={n} threads={threads} stages={stages}"
            rows.append((label, "ok" if ok else "MISMATCH", t, flops / t, flops / t / fp8_rate))
        except Exception as exc:
            rows.append((f"block_sparse threads={threads} stages={stages}", f"error: {exc}"[:120], 0, 0, 0))
    return rows


def pool_rows(fp8_rate):
    rows = []
    heads, dim, block = 64, 128, 128
    for n in (131072, 32768):
        pooled = block if n == 131072 else 1
        m = n
        ks, ke = causal_windows(n)
        nkeys = -(-n // pooled)
        bks = (ks // pooled).int()
        bke = ((ke + pooled - 1) // pooled).int()
        q = fp8(m * heads, dim)
        keys = fp8(nkeys, dim)
        scales = torch.rand(nkeys, device="cuda") + 0.5
        weights = torch.randn(m, heads, device="cuda")
        logits = torch.empty(m, nkeys, device="cuda")
        flops = 2 * heads * dim * int((bke - bks).sum().item())
        inside = torch.arange(nkeys, device="cuda")[None, :] < bke[:, None]
        reference = None
        for threads, block_q, block_n, stages in (
            (128, 2, 128, 2),
            (128, 2, 128, 3),
            (128, 2, 64, 2),
            (128, 2, 64, 3),
            (128, 1, 128, 2),
            (128, 4, 64, 2),
            (256, 2, 128, 2),
            (256, 4, 128, 2),
            (256, 2, 256, 2),
            (256, 4, 256, 2),
        ):
            try:
                source = variant("pool_mqa_logits", threads, stages)
                params = {"heads": heads, "dim": dim, "block_q": block_q, "block_n": block_n}
                kernel = jit.get_kernel("pool_mqa_logits", params, source=source)
                logits.fill_(float("nan"))
                kernel.launch(q, keys, scales, weights, bks, bke, logits)
                torch.cuda.synchronize()
                got = torch.where(inside, logits, torch.zeros_like(logits))
                if reference is None:
                    reference = got.clone()
                ok = bool(torch.allclose(got, reference, rtol=1e-5, atol=1e-5))
                t = bench(lambda: kernel.launch(q, keys, scales, weights, bks, bke, logits), reps=5, batch=3)
                label = (
                    f"{'pool' if pooled > 1 else 'flat'} M=N={n} threads={threads} "
                    f"block_q={block_q} block_n={block_n} stages={stages}"
                )
                rows.append((label, "ok" if ok else "MISMATCH", t, flops / t, flops / t / fp8_rate))
            except Exception as exc:
                rows.append((f"pool threads={threads} block_q={block_q} block_n={block_n}", f"error: {exc}"[:120], 0, 0, 0))
        del q, keys, logits, reference, got
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=["gemm", "sparse", "pool"])
    parser.add_argument("--out")
    args = parser.parse_args()

    size = 8192
    a8, b8 = fp8(size, size), fp8(size, size)
    one = torch.tensor(1.0, device="cuda")
    t = bench(lambda: torch._scaled_mm(a8, b8.T, scale_a=one, scale_b=one, out_dtype=torch.float32))
    fp8_rate = 2 * size**3 / t
    del a8, b8
    rows = [("torch._scaled_mm fp8 8192^3", "ceiling", t, fp8_rate, 1.0)]
    if args.only in (None, "gemm"):
        rows += gemm_rows(fp8_rate)
    if args.only in (None, "sparse"):
        rows += sparse_rows(fp8_rate)
    if args.only in (None, "pool"):
        rows += pool_rows(fp8_rate)

    lines = [
        f"# tensor-core tuning sweep on {torch.cuda.get_device_name()}",
        "",
        "| variant | check | time (ms) | TFLOP/s | % of fp8 cuBLAS |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for label, check, t, rate, ratio in rows:
        lines.append(f"| {label} | {check} | {t * 1e3:.3f} | {rate / 1e12:.0f} | {ratio * 100:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
