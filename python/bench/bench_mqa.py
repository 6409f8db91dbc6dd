"""Tensor-core kernels vs cuBLAS fp8/bf16 rates measured in the same run.

Prints a markdown table (and writes it to --out): the fp8 and bf16 gemms of
the DSL (kernels-dsl/{fp8,bf16}_gemm.mlir) against torch._scaled_mm and
torch.matmul (cuBLAS, 8192^3, same run), pool_mqa_logits (and
the flat V3.2 indexer = the same kernel on raw keys) and
block_sparse_mqa_logits, counting useful FLOPs only.
"""

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import torch  # noqa: E402

import hisa  # noqa: E402
from hisa import jit  # noqa: E402


def bench(fn, reps=10, batch=10):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(20_000_000)  # keep the GPU busy while enqueueing
        start.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / batch * 1e-3)
    return statistics.median(times)


def fp8(*shape):
    return (torch.randn(*shape, device="cuda")).to(torch.float8_e4m3fn)


def fp8_gemm_ceiling(size=8192):
    """(seconds, FLOP/s) of cuBLAS(Lt) fp8 (torch._scaled_mm, f32 out) at
    size^3: the tensor-core ceiling the benchmarks measure in their run."""
    a8, b8 = fp8(size, size), fp8(size, size)
    one = torch.tensor(1.0, device="cuda")
    t = bench(lambda: torch._scaled_mm(a8, b8.T, scale_a=one, scale_b=one, out_dtype=torch.float32))
    return t, 2 * size**3 / t


def causal_windows(n):
    pos = torch.arange(n, device="cuda", dtype=torch.int32)
    return torch.zeros(n, device="cuda", dtype=torch.int32), pos + 1


def pool_inputs(n, block, heads, dim):
    """Launch arguments of pool_mqa_logits for one causal sequence of n
    tokens pooled in blocks of `block` (1: the flat indexer on raw keys),
    M = n, and the useful FLOPs (2 H D per visible (query, key) pair)."""
    ks, ke = causal_windows(n)
    nkeys = -(-n // block)
    bks = (ks // block).int()
    bke = ((ke + block - 1) // block).int()
    q = fp8(n * heads, dim)
    keys = fp8(nkeys, dim)
    scales = torch.rand(nkeys, device="cuda") + 0.5
    weights = torch.randn(n, heads, device="cuda")
    logits = torch.empty(n, nkeys, device="cuda")
    flops = 2 * heads * dim * int((bke - bks).sum().item())
    return [q, keys, scales, weights, bks, bke, logits], flops


def block_sparse_inputs(n, topk, kb, heads, dim):
    """Launch arguments of block_sparse_mqa_logits for M = N = n causal
    queries with topk random blocks of kb keys each, and its FLOPs."""
    ks, ke = causal_windows(n)
    q = fp8(n, heads, dim)
    k = fp8(n, dim)
    k_scale = torch.rand(n, device="cuda") + 0.5
    weights = torch.randn(n, heads, device="cuda")
    index = torch.randint(0, -(-n // kb), (n, topk), device="cuda", dtype=torch.int32)
    out = torch.empty(n, topk * kb, device="cuda")
    return [q, k, k_scale, index, weights, ks, ke, out], 2 * n * topk * kb * heads * dim


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    args = parser.parse_args()
    rows = []

    # Ceilings: cuBLAS(Lt) fp8 and bf16 at 8192^3.
    size = 8192
    t, fp8_rate = fp8_gemm_ceiling(size)
    rows.append(("torch._scaled_mm fp8", f"{size}^3", t, fp8_rate, 1.0))
    a16, b16 = fp8(size, size).to(torch.bfloat16), fp8(size, size).to(torch.bfloat16)
    t = bench(lambda: a16 @ b16.T)
    bf16_rate = 2 * size**3 / t
    rows.append(("torch.matmul bf16", f"{size}^3", t, bf16_rate, bf16_rate / fp8_rate))

    for name, dtype, ceiling, ceiling_name in (
        ("fp8_gemm", torch.float8_e4m3fn, fp8_rate, "fp8"),
        ("bf16_gemm", torch.bfloat16, bf16_rate, "bf16"),
    ):
        for size in (4096, 8192):
            a = torch.randn(size, size, device="cuda").to(dtype)
            b = torch.randn(size, size, device="cuda").to(dtype)
            c = torch.empty(size, size, device="cuda")
            kernel = jit.get_kernel(name, {"k": size})
            kernel.launch(a, b, c)
            torch.cuda.synchronize()
            # wgmma accumulation is not exact f32 (TOOLCHAIN.md): compare with
            # a float reference within 1e-3 of sum |a*b|, on a corner.
            corner = slice(0, 512)
            ref = a[corner].float() @ b[corner].float().T
            magnitude = a[corner].float().abs() @ b[corner].float().abs().T
            ok = bool(((c[corner, corner] - ref).abs() <= 1e-3 * magnitude + 1e-3).all())
            t = bench(lambda: kernel.launch(a, b, c))
            rate = 2 * size**3 / t
            # cuBLAS at the same size, in this run.
            if dtype == torch.float8_e4m3fn:
                t_ref = bench(
                    lambda: torch._scaled_mm(a, b.T, scale_a=one, scale_b=one, out_dtype=torch.float32)
                )
            else:
                t_ref = bench(lambda: a @ b.T)
            same_size = 2 * size**3 / t_ref
            rows.append(
                (
                    f"hisa {name} ({'ok' if ok else 'MISMATCH'}; {rate / same_size * 100:.1f}% of {ceiling_name} "
                    f"cuBLAS at {size}^3, {rate / ceiling * 100:.1f}% of it at 8192^3)",
                    f"{size}^3",
                    t,
                    rate,
                    rate / fp8_rate,
                )
            )
            del a, b, c

    heads, dim, kb = 64, 128, 128
    # pool_mqa_logits: one causal sequence, M = N = 131072, pooled keys.
    for n, label, block in ((131072, "pool_mqa_logits", kb), (32768, "mqa_logits (flat, raw keys)", 1)):
        launch_args, flops = pool_inputs(n, block, heads, dim)
        kernel = jit.get_kernel(
            "pool_mqa_logits", {"heads": heads, "dim": dim, "block_q": 256 // heads}
        )
        t = bench(lambda: kernel.launch(*launch_args), reps=5, batch=3)
        rows.append((label, f"H={heads} D={dim} M=N={n}", t, flops / t, flops / t / fp8_rate))
        del launch_args

    # block_sparse_mqa_logits: M = N = 32768 and 131072, T = 64 blocks of 128.
    for n in (32768, 131072):
        topk = 64
        launch_args, flops = block_sparse_inputs(n, topk, kb, heads, dim)
        kernel = jit.get_kernel("block_sparse_mqa_logits", {"heads": heads, "dim": dim, "kb": kb, "topk": topk})
        t = bench(lambda: kernel.launch(*launch_args), reps=5, batch=3)
        rows.append(("block_sparse_mqa_logits", f"H={heads} D={dim} kb={kb} T={topk} M=N={n}", t, flops / t, flops / t / fp8_rate))

    write_table(
        f"hisa tensor-core kernels on {torch.cuda.get_device_name()}",
        ("op", "config", "time (ms)", "TFLOP/s", "% of fp8 cuBLAS"),
        rows,
        args.out,
    )


def write_table(title, columns, rows, out=None):
    """Prints (and writes to `out`) a markdown table of (name, detail, time
    in s, rate per s, ratio) rows; the rate is shown in units of 1e12."""
    lines = [f"# {title}", "", "| " + " | ".join(columns) + " |", "| --- | --- | ---: | ---: | ---: |"]
    for name, detail, t, rate, ratio in rows:
        lines.append(f"| {name} | {detail} | {t * 1e3:.3f} | {rate / 1e12:.0f} | {ratio * 100:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
