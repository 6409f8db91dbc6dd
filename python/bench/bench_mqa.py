"""Tensor-core kernels vs cuBLAS fp8/bf16 rates measured in the same run.

Prints a markdown table (and writes it to --out): the fp8 and bf16 gemms of
the DSL (kernels-dsl/{fp8,bf16}_gemm.mlir) against torch._scaled_mm and
torch.matmul (cuBLAS, 8192^3, same run), pool_mqa_logits (and
the flat V3.2 indexer = the same kernel on raw keys) and
block_sparse_mqa_logits. "TFLOP/s" of block_sparse_mqa_logits counts the
FLOPs it executes: every slot of the T blocks (2*M*T*kb*H*D, also the random
blocks' slots outside the causal window, which are -inf); its "useful
TFLOP/s" counts only the slots inside the window. For pool_mqa_logits and
the flat rows both columns count the same useful FLOPs: 2*H*D per (query,
key) pair inside each query's window (pool_inputs; the kernel's tiles that
cross a window's edge execute somewhat more, not counted). The gemm rows
count 2*size^3. The fp8 ceiling is
torch._scaled_mm with bf16 output (its fastest); the same-size fp8 cuBLAS
comparison writes f32 like the DSL kernel. Every hisa kernel's output is
checked first (gemms on a corner, the logits kernels on sampled rows against
an f64 torch reference within 1e-3 of sum |terms|: fp8 wgmma accumulation
is not exact f32); a failed check is named on stderr and makes the exit
status 1.
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
    """(seconds, FLOP/s) of cuBLAS(Lt) fp8 (torch._scaled_mm, bf16 out, its
    fastest output; f32 before) at size^3: the tensor-core ceiling the
    benchmarks measure in their run."""
    a8, b8 = fp8(size, size), fp8(size, size)
    one = torch.tensor(1.0, device="cuda")
    t = bench(lambda: torch._scaled_mm(a8, b8.T, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
    return t, 2 * size**3 / t


def mqa_reference(q_row, keys, scales, w_row):
    """f64 logits of one query over `keys` and their error bound:
    (logits [W], tol [W]) with logits[j] = sum_h ReLU(dot(q_row[h], keys[j])
    * scales[j]) * w_row[h] and tol[j] = 1e-3 * sum_h |w_row[h]| * |scales[j]|
    * sum_d |q_row[h, d] * keys[j, d]| (fp8 wgmma sums differ from the exact
    sum by up to ~3e-4 of sum |a*b|, TOOLCHAIN.md; f32 rounding of the head
    sum is far smaller). q_row [H, D], keys [W, D] (fp8 or already f64),
    scales [W], w_row [H]."""
    qd = q_row if q_row.dtype == torch.float64 else q_row.float().double()
    kd = keys if keys.dtype == torch.float64 else keys.float().double()
    sd, wd = scales.double().reshape(1, -1), w_row.double().reshape(-1, 1)
    logits = ((qd @ kd.T) * sd).clamp_min(0).mul(wd).sum(0)
    tol = 1e-3 * ((qd.abs() @ kd.abs().T) * sd.abs()).mul(wd.abs()).sum(0)
    return logits, tol


def sample_rows(n, count=32):
    """`count` spread row indices of [0, n), with the first and last rows."""
    return sorted(set(torch.linspace(0, n - 1, count).round().long().tolist()) | {0, 1, n - 1})


def check_pool_logits(launch_args, heads, dim, rows=None):
    """Failures (strings) of pool_mqa_logits' output (launch_args[-1]) on
    sampled rows, inside each row's window [bks, bke) (outside it the
    values are unspecified), against mqa_reference."""
    q, keys, scales, weights, bks, bke, logits = launch_args
    n = logits.shape[0]
    q3 = q.view(n, heads, dim)
    kd = keys.float().double()
    failures = []
    for m in rows if rows is not None else sample_rows(n):
        s, e = int(bks[m]), int(bke[m])
        if e <= s:
            continue
        ref, tol = mqa_reference(q3[m], kd[s:e], scales[s:e], weights[m])
        got = logits[m, s:e].double()
        bad = ~((got - ref).abs() <= tol)  # NaN counts as bad
        if bool(bad.any()):
            j = int(bad.nonzero()[0, 0])
            failures.append(f"row {m}: {int(bad.sum())} of {e - s} logits off, first at key {s + j}: "
                            f"{float(got[j]):.6g} vs {float(ref[j]):.6g} (tol {float(tol[j]):.2g})")
    return failures


def block_sparse_slots(index, kb, ks, ke, n):
    """[M, T*kb] key rows of block_sparse_mqa_logits' slots and whether each
    is valid (inside [ks, ke) and [0, N), of a block index >= 0)."""
    rows = (index.long()[:, :, None] * kb + torch.arange(kb, device=index.device)).flatten(1)
    valid = ((index[:, :, None] >= 0).expand(-1, -1, kb).flatten(1)
             & (rows >= ks.long()[:, None]) & (rows < ke.long()[:, None]) & (rows < n))
    return rows, valid


def check_block_sparse_logits(launch_args, kb, rows=None):
    """Failures (strings) of block_sparse_mqa_logits' output on sampled
    rows: slots outside the window exactly -inf, the others within
    mqa_reference's bound."""
    q, k, k_scale, index, weights, ks, ke, out = launch_args
    m_total, n = out.shape[0], k.shape[0]
    kf = k.float()  # gathered below (f32 indexes everywhere; fp8 may not)
    failures = []
    for m in rows if rows is not None else sample_rows(m_total):
        keys, valid = block_sparse_slots(index[m:m + 1], kb, ks[m:m + 1], ke[m:m + 1], n)
        keys, valid, got = keys[0], valid[0], out[m]
        masked = got[~valid]
        if not bool((masked == float("-inf")).all()):
            failures.append(f"row {m}: {int((masked != float('-inf')).sum())} slots outside the "
                            "window are not -inf")
        j = keys[valid]
        if j.numel() == 0:
            continue
        ref, tol = mqa_reference(q[m], kf[j], k_scale[j], weights[m])
        diff = got[valid].double() - ref
        bad = ~(diff.abs() <= tol)
        if bool(bad.any()):
            first = int(bad.nonzero()[0, 0])
            failures.append(f"row {m}: {int(bad.sum())} of {j.numel()} valid slots off, first key "
                            f"{int(j[first])}: {float(got[valid][first]):.6g} vs "
                            f"{float(ref[first]):.6g} (tol {float(tol[first]):.2g})")
    return failures


def block_sparse_useful_flops(launch_args, kb, heads, dim):
    """2*H*D per slot of block_sparse_mqa_logits inside its query's window
    (the slots that are not -inf)."""
    _, k, _, index, _, ks, ke, _ = launch_args
    lo = torch.maximum(index.long() * kb, ks.long()[:, None])
    hi = torch.minimum(torch.minimum(index.long() * kb + kb, ke.long()[:, None]),
                       torch.full_like(lo, k.shape[0]))
    count = (hi - lo).clamp_min(0) * (index >= 0)
    return 2 * heads * dim * int(count.sum())


def without_pdl(fn):
    """fn with hisa's programmatic dependent launch off for its launches
    (hisa.set_programmatic_launch(False), restored after each call), as
    TileLang and torch launch: back-to-back calls then do not start a call's
    blocks during the previous kernel's last wave."""
    def call():
        previous = hisa.set_programmatic_launch(False)
        try:
            return fn()
        finally:
            hisa.set_programmatic_launch(previous)
    return call


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
    failures = []
    one = torch.tensor(1.0, device="cuda")

    # Ceilings: cuBLAS(Lt) fp8 (bf16 output) and bf16 at 8192^3.
    size = 8192
    t, fp8_rate = fp8_gemm_ceiling(size)
    rows.append(("torch._scaled_mm fp8 (bf16 out)", f"{size}^3", t, fp8_rate, 1.0,
                 f"{fp8_rate / 1e12:.0f}", "-"))
    a16, b16 = fp8(size, size).to(torch.bfloat16), fp8(size, size).to(torch.bfloat16)
    t = bench(lambda: a16 @ b16.T)
    bf16_rate = 2 * size**3 / t
    rows.append(("torch.matmul bf16", f"{size}^3", t, bf16_rate, bf16_rate / fp8_rate,
                 f"{bf16_rate / 1e12:.0f}", "-"))
    del a16, b16

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
            if not ok:
                failures.append(f"{name} {size}^3: output differs from a[:512] @ b[:512].T")
            t = bench(lambda: kernel.launch(a, b, c))
            rate = 2 * size**3 / t
            # cuBLAS at the same size, in this run (fp8: f32 output, like the
            # DSL kernel's).
            if dtype == torch.float8_e4m3fn:
                t_ref = bench(
                    lambda: torch._scaled_mm(a, b.T, scale_a=one, scale_b=one, out_dtype=torch.float32)
                )
            else:
                t_ref = bench(lambda: a @ b.T)
            same_size = 2 * size**3 / t_ref
            rows.append(
                (
                    f"hisa {name} ({rate / same_size * 100:.1f}% of {ceiling_name} cuBLAS at "
                    f"{size}^3 with f32 output, as hisa's; {rate / ceiling * 100:.1f}% of its "
                    f"8192^3 rate)",
                    f"{size}^3",
                    t,
                    rate,
                    rate / fp8_rate,
                    f"{rate / 1e12:.0f}",
                    "ok" if ok else "**MISMATCH**",
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
        launch_args[-1].fill_(float("nan"))
        kernel.launch(*launch_args)
        torch.cuda.synchronize()
        bad = check_pool_logits(launch_args, heads, dim)
        failures += [f"{label} M=N={n}: {b}" for b in bad]
        t = bench(lambda: kernel.launch(*launch_args), reps=5, batch=3)
        rows.append((label, f"H={heads} D={dim} M=N={n}", t, flops / t, flops / t / fp8_rate,
                     f"{flops / t / 1e12:.0f}", "**MISMATCH**" if bad else "ok"))
        del launch_args

    # block_sparse_mqa_logits: M = N = 32768 and 131072, T = 64 blocks of 128.
    for n in (32768, 131072):
        topk = 64
        launch_args, flops = block_sparse_inputs(n, topk, kb, heads, dim)
        useful = block_sparse_useful_flops(launch_args, kb, heads, dim)
        kernel = jit.get_kernel("block_sparse_mqa_logits", {"heads": heads, "dim": dim, "kb": kb, "topk": topk})
        launch_args[-1].fill_(float("nan"))
        kernel.launch(*launch_args)
        torch.cuda.synchronize()
        bad = check_block_sparse_logits(launch_args, kb)
        failures += [f"block_sparse_mqa_logits M=N={n}: {b}" for b in bad]
        t = bench(lambda: kernel.launch(*launch_args), reps=5, batch=3)
        rows.append(("block_sparse_mqa_logits", f"H={heads} D={dim} kb={kb} T={topk} M=N={n}", t,
                     flops / t, flops / t / fp8_rate, f"{useful / t / 1e12:.0f}",
                     "**MISMATCH**" if bad else "ok"))
        del launch_args

    write_table(
        f"hisa tensor-core kernels on {torch.cuda.get_device_name()}",
        ("op", "config", "time (ms)", "TFLOP/s", "% of fp8 cuBLAS", "useful TFLOP/s", "check"),
        rows,
        args.out,
        notes=[
            "fp8 ceiling: torch._scaled_mm with bf16 output (earlier tables: f32 output; the "
            "same-size comparison in the gemm rows still writes f32, as the DSL kernel does). "
            "TFLOP/s: block_sparse_mqa_logits executed FLOPs (all T*kb slots, 2*M*T*kb*H*D, "
            "as before), its useful TFLOP/s the slots inside the causal window only; "
            "pool_mqa_logits and flat rows: both columns the useful FLOPs, 2*H*D per (query, "
            "key) pair inside each query's window (tiles crossing a window's edge execute "
            "more, not counted). "
            "check: the output against a torch reference (new for the logits rows).",
        ],
    )
    for failure in failures:
        print(f"bench_mqa: FAILED {failure}", file=sys.stderr)
    return 1 if failures else 0


def write_table(title, columns, rows, out=None, notes=()):
    """Prints (and writes to `out`) a markdown table of (name, detail, time
    in s, rate per s, ratio, *extra cells) rows; the rate is shown in units
    of 1e12; `notes` are lines printed between the title and the table."""
    lines = [f"# {title}", ""]
    if notes:
        lines += list(notes) + [""]
    lines += ["| " + " | ".join(columns) + " |",
              "| " + " | ".join(["---"] * 2 + ["---:"] * (len(columns) - 2)) + " |"]
    for name, detail, t, rate, ratio, *extra in rows:
        cells = [name, detail, f"{t * 1e3:.3f}", f"{rate / 1e12:.0f}", f"{ratio * 100:.1f}"]
        lines.append("| " + " | ".join(cells + [str(e) for e in extra]) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    sys.exit(main())
