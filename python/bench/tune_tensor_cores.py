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

from bench_mqa import bench, block_sparse_inputs, fp8_gemm_ceiling, pool_inputs, write_table  # noqa: E402
from hisa import jit  # noqa: E402

KERNELS = os.path.join(HERE, "..", "..", "kernels-dsl")


def variant(name, threads=128, stages=None, element=None, blocks_per_sm=None):
    with open(os.path.join(KERNELS, f"{name}.mlir")) as f:
        text = f.read()
    launch = f"threads {threads}" + (f" blocks_per_sm {blocks_per_sm}" if blocks_per_sm else "")
    text = re.sub(r'threads \d+( blocks_per_sm (\d+|"\w+"))?', launch, text)
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
        for threads, bm, bn, stages, blocks in (
            (128, 128, 128, 3, None),
            (128, 128, 128, 3, 2),
            (128, 128, 128, 4, None),
            (256, 128, 128, 3, 2),
            (256, 128, 256, 3, None),
            (256, 128, 256, 4, None),
            (256, 256, 128, 3, None),
            (256, 256, 128, 4, None),
        ):
            try:
                source = variant("fp8_gemm", threads, stages, element, blocks_per_sm=blocks)
                params = {"k": size, "block_m": bm, "block_n": bn, "block_k": block_k}
                kernel = jit.get_kernel("fp8_gemm", params, source=source)
                c.fill_(float("nan"))
                kernel.launch(a, b, c)
                torch.cuda.synchronize()
                ok = bool(((c[:256, :256] - ref).abs() <= 2e-3 * magnitude + 1e-3).all())
                t = bench(lambda: kernel.launch(a, b, c))
                rate = 2 * size**3 / t
                label = (
                    f"{element} gemm {size}^3 threads={threads} tile={bm}x{bn}x{block_k} "
                    f"stages={stages} blocks_per_sm={blocks}"
                )
                rows.append((label, "ok" if ok else "MISMATCH", t, rate, rate / fp8_rate))
            except Exception as exc:  # a variant that does not compile is reported
                rows.append((f"{element} threads={threads} tile={bm}x{bn} stages={stages}", f"error: {exc}"[:120], 0, 0, 0))
    return rows


def sparse_rows(fp8_rate):
    rows = []
    heads, dim, kb, n, topk = 64, 128, 128, 32768, 64
    launch_args, flops = block_sparse_inputs(n, topk, kb, heads, dim)
    out = launch_args[-1]
    reference = None
    for threads, stages, blocks in (
        (128, 2, None),
        (128, 2, 4),
        (128, 2, 5),
        (128, 3, 4),
        (128, 4, None),
        (256, 2, None),
        (256, 2, 3),
    ):
        try:
            source = variant("block_sparse_mqa_logits", threads, stages, blocks_per_sm=blocks)
            kernel = jit.get_kernel(
                "block_sparse_mqa_logits", {"heads": heads, "dim": dim, "kb": kb, "topk": topk}, source=source
            )
            out.fill_(float("nan"))
            kernel.launch(*launch_args)
            torch.cuda.synchronize()
            if reference is None:
                reference = out.clone()
            ok = bool(torch.allclose(out, reference, rtol=1e-5, atol=1e-5, equal_nan=False))
            t = bench(lambda: kernel.launch(*launch_args), reps=5, batch=3)
            label = f"block_sparse T={topk} M=N={n} threads={threads} stages={stages} blocks_per_sm={blocks}"
            rows.append((label, "ok" if ok else "MISMATCH", t, flops / t, flops / t / fp8_rate))
        except Exception as exc:
            rows.append((f"block_sparse threads={threads} stages={stages} blocks_per_sm={blocks}", f"error: {exc}"[:120], 0, 0, 0))
    return rows


def pool_rows(fp8_rate):
    rows = []
    heads, dim, block = 64, 128, 128
    for n in (131072, 32768):
        pooled = block if n == 131072 else 1
        launch_args, flops = pool_inputs(n, pooled, heads, dim)
        bke, logits = launch_args[5], launch_args[6]
        nkeys = logits.shape[1]
        inside = torch.arange(nkeys, device="cuda")[None, :] < bke[:, None]
        reference = None
        for threads, block_q, block_n, stages, blocks in (
            (128, 2, 128, 2, None),
            (128, 2, 128, 2, 3),
            (128, 2, 128, 3, 3),
            (128, 2, 64, 2, None),
            (128, 2, 64, 2, 3),
            (128, 2, 64, 2, 4),
            (128, 2, 64, 3, 3),
            (128, 2, 64, 4, 3),
            (128, 4, 64, 2, 3),
            (256, 2, 128, 2, None),
        ):
            try:
                source = variant("pool_mqa_logits", threads, stages, blocks_per_sm=blocks)
                params = {"heads": heads, "dim": dim, "block_q": block_q, "block_n": block_n}
                kernel = jit.get_kernel("pool_mqa_logits", params, source=source)
                logits.fill_(float("nan"))
                kernel.launch(*launch_args)
                torch.cuda.synchronize()
                got = torch.where(inside, logits, torch.zeros_like(logits))
                if reference is None:
                    reference = got.clone()
                ok = bool(torch.allclose(got, reference, rtol=1e-5, atol=1e-5))
                t = bench(lambda: kernel.launch(*launch_args), reps=5, batch=3)
                label = (
                    f"{'pool' if pooled > 1 else 'flat'} M=N={n} threads={threads} "
                    f"block_q={block_q} block_n={block_n} stages={stages} blocks_per_sm={blocks}"
                )
                rows.append((label, "ok" if ok else "MISMATCH", t, flops / t, flops / t / fp8_rate))
            except Exception as exc:
                rows.append((f"pool threads={threads} block_q={block_q} block_n={block_n}", f"error: {exc}"[:120], 0, 0, 0))
        del launch_args, logits, reference, got
    return rows


def clean_rows(copy_rate):
    """clean_and_maintain_logits_ (memory-bound, for its tuning record):
    rows per warp and warps per block."""
    from bench_memory_bound import clean_bytes, clean_windows

    rows = []
    n, kb = 131072, 128
    nn = n // kb
    for num_seqs in (1, 16):
        s, e = clean_windows(n, kb, num_seqs)
        moved = clean_bytes(s, e, nn)
        sets = [torch.randn(n, nn, device="cuda") for _ in range(4)]
        reference = None
        for threads, block_m, rows_per_warp in (
            (256, 8, 2),
            (256, 8, 4),
            (256, 8, 8),
            (128, 4, 4),
            (128, 4, 8),
            (128, 4, 16),
            (64, 2, 8),
        ):
            kernel = jit.get_kernel(
                "clean_and_maintain_logits",
                {"block_m": block_m, "rows_per_warp": rows_per_warp},
                source=variant("clean_and_maintain_logits", threads),
            )
            check = sets[0].clone()
            kernel.launch(check, s, e)
            if reference is None:
                reference = check
            ok = torch.equal(check.view(torch.int32), reference.view(torch.int32))
            state = {"i": 0}

            def run():
                state["i"] += 1
                kernel.launch(sets[state["i"] % 4], s, e)

            t = bench(run, reps=10, batch=8)
            label = f"clean {num_seqs} seq(s) threads={threads} block_m={block_m} rows_per_warp={rows_per_warp}"
            rows.append((label, "ok" if ok else "MISMATCH", t, moved / t, moved / t / copy_rate))
        del sets, reference, check
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=["gemm", "sparse", "pool", "clean"])
    parser.add_argument("--out")
    args = parser.parse_args()

    t, fp8_rate = fp8_gemm_ceiling(8192)
    rows = [("torch._scaled_mm fp8 8192^3", "ceiling", t, fp8_rate, 1.0)]
    if args.only in (None, "gemm"):
        rows += gemm_rows(fp8_rate)
    if args.only in (None, "sparse"):
        rows += sparse_rows(fp8_rate)
    if args.only in (None, "pool"):
        rows += pool_rows(fp8_rate)
    if args.only in (None, "clean"):
        src = torch.empty(2**29, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        t = bench(lambda: dst.copy_(src))
        copy_rate = 2 * src.numel() / t
        del src, dst
        rows.append(("device copy 512 MiB (read + write bytes, rate in TB/s)", "ceiling", t, copy_rate, 1.0))
        rows += clean_rows(copy_rate)

    write_table(
        f"tensor-core tuning sweep on {torch.cuda.get_device_name()}",
        ("variant", "check", "time (ms)", "TFLOP/s (clean: TB/s)", "% of fp8 cuBLAS (clean: of copy)"),
        rows,
        args.out,
    )


if __name__ == "__main__":
    main()
