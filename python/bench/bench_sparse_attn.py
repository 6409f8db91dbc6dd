#!/usr/bin/env python3
"""DeepSeek-V4 sparse attention: hisa.sparse_attn against TileLang's
sparse_attn_fwd_sm90 (../shared/anchors) and the bf16 tensor-core ceiling;
then dense attention, hisa.flash_attn against torch's SDPA.

Measured in one run: cuBLAS bf16 8192^3 (the compute ceiling) and the
device copy bandwidth (the memory ceiling of decode), then per shape hisa
and, with --anchors, TileLang's kernel. FLOPs 4*B*S*H*K*D (D = 512).
Prefill: Nkv = S, indices uniform over each token's causal prefix, about 2%
-1. Decode: Nkv = 65536, indices uniform over the cache; "gathered GB/s"
counts K*D*2 bytes per token. Each hisa result is checked against an f32
torch reference on a few tokens before timing.

    PYTHONPATH=python python3 python/bench/bench_sparse_attn.py --out t.md \\
        [--anchors DIR_WITH_tilelang_examples]
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import hisa  # noqa: E402
from bench_memory_bound import (  # noqa: E402
    Timer, copy_bandwidth, emit_table, fmt_row, load_anchor)
from bench_mqa import bench  # noqa: E402

D = 512
SCALE = D ** -0.5
# (label, B, S, H, K, Nkv (None: = S, causal prefix))
SHAPES = [
    ("prefill", 1, 4096, 64, 640, None),
    ("prefill", 1, 8192, 128, 1152, None),
    ("prefill", 1, 4096, 128, 2048, None),
    ("decode", 128, 1, 64, 640, 65536),
    ("decode", 128, 2, 64, 640, 65536),
    ("decode", 128, 1, 128, 640, 65536),
    ("decode", 128, 2, 128, 640, 65536),
    # Few tokens: the operator splits each token's indices (split decode).
    ("decode", 1, 1, 64, 640, 65536),
    ("decode", 16, 1, 128, 1152, 65536),
]


def time_impls(impls, relative_error):
    """(name, seconds or None, status) per (name, fn) after checking fn's
    output with relative_error(out) < 1e-2, and the number of failures."""
    results, errors = [], 0
    for name, fn in impls:
        try:
            out = fn()
            torch.cuda.synchronize()
            err = relative_error(out)
            results.append((name, bench(fn), "ok" if err < 1e-2 else f"**error {err:.1e}**"))
            errors += 0 if err < 1e-2 else 1
        except Exception as exc:
            traceback.print_exc()
            results.append((name, None, f"error: {str(exc).splitlines()[0][:60]}"))
            errors += 1
    return results, errors


def make_inputs(b, s, h, k, nkv):
    causal = nkv is None
    nkv = s if causal else nkv
    q = torch.randn(b, s, h, D, device="cuda").bfloat16()
    # One spare row before kv: TileLang's kernel reads kv[b, -1] for a -1
    # index before masking it (../shared/anchors/README.md).
    kv_rows = torch.randn(b * nkv + 1, D, device="cuda").bfloat16()
    kv = kv_rows[1:].view(b, nkv, D)
    sink = torch.randn(h, device="cuda")
    if causal:
        limit = torch.arange(1, s + 1, device="cuda")[None, :, None]
        idx = (torch.rand(b, s, k, device="cuda") * limit).long().clamp(max=nkv - 1)
    else:
        idx = torch.randint(0, nkv, (b, s, k), device="cuda")
    idx = idx.int()
    idx[torch.rand(b, s, k, device="cuda") < 0.02] = -1
    return q, kv, sink, idx


def check(q, kv, sink, idx, o, tokens=8):
    """Relative L2 error of o on the first `tokens` tokens of batch 0."""
    qs, ids, os_ = q[0, :tokens].float(), idx[0, :tokens], o[0, :tokens].float()
    valid = ids >= 0
    g = kv[0].float()[ids.clamp(min=0).long()]                  # [t, K, D]
    scores = torch.einsum("thd,tkd->thk", qs, g) * SCALE
    scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
    m = torch.maximum(scores.amax(-1), sink[None, :])
    e = torch.exp(scores - m[..., None])
    ref = torch.einsum("thk,tkd->thd", e, g) / (e.sum(-1) + torch.exp(sink[None] - m))[..., None]
    return float((os_ - ref).norm() / ref.norm())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out")
    parser.add_argument("--anchors")
    parser.add_argument("--variants", action="store_true",
                        help="also time the kernel variants the operator does not pick: "
                             "the plain (not warp-specialized) sparse_attn where it would not "
                             "split, partial_sums=0, sparse_attn_wg, and the other flash_attn "
                             "kernel")
    parser.add_argument("--anchor-shapes", default=None,
                        help="comma-separated SHAPES indices the anchor runs on (default: all; "
                             "TileLang compiles each shape for tens of seconds)")
    args = parser.parse_args(argv)
    anchor_shapes = (set(range(len(SHAPES))) if args.anchor_shapes is None
                     else {int(i) for i in args.anchor_shapes.split(",")})
    if not torch.cuda.is_available():
        print("bench_sparse_attn: no CUDA GPU", file=sys.stderr)
        return 2
    anchor = None
    if args.anchors:
        try:
            anchor = load_anchor(args.anchors, "deepseek_v4/sparse_attn_fwd_sm90.py",
                                  "anchor_sparse_attn")
        except Exception:
            traceback.print_exc()
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    a = torch.randn(8192, 8192, device="cuda").bfloat16()
    t_gemm = bench(lambda: a @ a)
    gemm_rate = 2 * 8192**3 / t_gemm
    del a
    timer = Timer()
    copy_t, copy_bytes = copy_bandwidth(timer, 2.0, 10)
    copy_bw = copy_bytes / copy_t
    torch.cuda.empty_cache()
    lines = [
        f"# DeepSeek-V4 sparse attention on {props.name}",
        "",
        f"torch {torch.__version__}; {hisa.version()}; cuBLAS bf16 8192^3 "
        f"{gemm_rate / 1e12:.0f} TFLOP/s, copy {copy_bw / 1e9:.0f} GB/s (the ceilings, "
        "this run). FLOPs 4*B*S*H*K*D; median of 10 batches of 10 calls.",
        "",
        fmt_row(["case", "B", "S", "H", "K", "Nkv", "impl", "time (ms)", "TFLOP/s",
                 "% of bf16 cuBLAS", "gathered GB/s (% of copy)", "vs TileLang", "check"]),
        fmt_row(["---"] * 7 + ["---:"] * 5 + [":---:"]),
    ]
    errors = 0
    for shape_index, (label, b, s, h, k, nkv) in enumerate(SHAPES):
        q, kv, sink, idx = make_inputs(b, s, h, k, nkv)
        flops = 4 * b * s * h * k * D
        gathered = b * s * k * D * 2
        impls = [("hisa.sparse_attn", lambda: hisa.sparse_attn(q, kv, sink, idx, SCALE))]
        if args.variants and b * s * -(-h // 64) >= 132:
            # The operator runs sparse_attn_ws (partial_sums=1) when it does
            # not split, sparse_attn_wg at H = 128 with >= 1024 tokens.
            impls.append(("plain sparse_attn (variant)",
                          kernel_variant(q, kv, sink, idx, "sparse_attn")))
            impls.append(("ws, partial_sums=1 (variant)",
                          kernel_variant(q, kv, sink, idx, "sparse_attn_ws",
                                         {"partial_sums": 1})))
            impls.append(("ws, partial_sums=0 (variant)",
                          kernel_variant(q, kv, sink, idx, "sparse_attn_ws",
                                         {"partial_sums": 0})))
            impls.append(("sparse_attn_wg (variant)",
                          kernel_variant(q, kv, sink, idx, "sparse_attn_wg",
                                         {"topk_pad": -(-k // 128) * 128})))
        if anchor is not None and shape_index in anchor_shapes:
            try:
                kernel = anchor.sparse_attn_fwd(b, h, s, kv.shape[1], D, k, sm_scale=SCALE)
                sink_bf16 = sink.bfloat16()
                impls.append(("TileLang sparse_attn_fwd_sm90",
                              lambda: kernel(q, kv, idx, sink_bf16)))
            except Exception as exc:
                traceback.print_exc()
                lines.append(fmt_row([label, str(b), str(s), str(h), str(k), str(kv.shape[1]),
                                      "TileLang", "-", "-", "-", "-", "-",
                                      f"error: {str(exc).splitlines()[0][:60]}"]))
        results, failed = time_impls(impls, lambda out: check(q, kv, sink, idx, out))
        errors += failed
        anchor_time = next((t for n, t, _ in results if n.startswith("TileLang")), None)
        for name, t, status in results:
            cells = [label, str(b), str(s), str(h), str(k), str(kv.shape[1]), name]
            if t is None:
                lines.append(fmt_row(cells + ["-"] * 5 + [status]))
                continue
            vs = f"{anchor_time / t:.2f}x" if anchor_time else "-"
            lines.append(fmt_row(cells + [
                f"{t * 1e3:.3f}", f"{flops / t / 1e12:.0f}",
                f"{100 * flops / t / gemm_rate:.0f}",
                f"{gathered / t / 1e9:.0f} ({100 * gathered / t / copy_bw:.0f}%)", vs, status]))
        del q, kv, sink, idx
        torch.cuda.empty_cache()
    errors += dense_rows(lines, gemm_rate, args.variants)
    return emit_table(lines, args.out, errors)


def rope_tables_unused():
    """The rope_cos, rope_sin and rope_base arguments of a sparse_attn
    kernel launched with rope = 0 (not read)."""
    return (torch.zeros(1, 32, device="cuda"), torch.zeros(1, 32, device="cuda"),
            torch.zeros(1, dtype=torch.int32, device="cuda"))


def kernel_variant(q, kv, sink, idx, name, extra=None, source=None, target="sm_90a"):
    """A call of a sparse_attn kernel variant (plain or warp-specialized,
    other parameters, another `source` text of it, or another `target`
    string such as "sm_90a,+narrow-indices") with the operator's arguments
    (no split: enough tokens), through the JIT."""
    b, s, h, _ = q.shape
    nkv, k = kv.shape[1], idx.shape[2]
    params = {"topk_pad": -(-k // 64) * 64, "head_blocks": -(-h // 64), "lse": 0, "splits": 1}
    params.update(extra or {})
    kernel = hisa.jit.get_kernel(name, params, target=target, source=source)
    o = torch.empty_like(q)
    unused_part = torch.empty(1, 1, 1, D, device="cuda")
    unused_lse = torch.empty(1, 1, 1, device="cuda")
    no_rope = rope_tables_unused()
    args = (q.view(b * s, h, D), kv.reshape(b * nkv, D), sink, idx.view(b * s, k),
            o.view(b * s, h, D), sink.view(1, h), unused_part, unused_lse, *no_rope, s, nkv,
            SCALE, 0.0)

    def call():
        kernel.launch(*args)
        return o
    return call


def dense_rows(lines, gemm_rate, variants=False):
    """hisa.flash_attn against torch's scaled_dot_product_attention (flash
    backend) at B=1, H=32, S=8192, D=128: FLOPs 4*B*H*S*S*D (half causal)."""
    F = torch.nn.functional
    lines += ["", fmt_row(["dense attention", "causal", "impl", "time (ms)", "TFLOP/s",
                           "% of bf16 cuBLAS", "vs SDPA", "check"]),
              fmt_row(["---", "---", "---"] + ["---:"] * 4 + [":---:"])]
    errors = 0
    b, h, s, d = 1, 32, 8192, 128
    q, k, v = (torch.randn(b, h, s, d, device="cuda").bfloat16() for _ in range(3))
    for causal in (True, False):
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        impls = [("torch SDPA", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)),
                 ("hisa.flash_attn", lambda: hisa.flash_attn(q, k, v, causal=causal))]
        if variants:
            # The operator runs flash_attn_pp; the plain two-blocks-per-SM
            # kernel, as it ran before, for comparison.
            other = "flash_attn"
            kernel = hisa.jit.get_kernel(other, {"dim": d, "causal": int(causal),
                                                 "fold_scale": 1})
            o_ws = torch.empty_like(q)

            def call_ws(kernel=kernel, o_ws=o_ws):
                kernel.launch(q, k, v, o_ws, d ** -0.5)
                return o_ws
            impls.append((f"{other} (variant)", call_ws))
        results, failed = time_impls(
            impls, lambda out: float((out.float() - ref.float()).norm() / ref.float().norm()))
        errors += failed
        sdpa = results[0][1]
        for name, t, status in results:
            if t is None:
                lines.append(fmt_row([f"[{b}, {h}, {s}, {d}]", str(causal), name] + ["-"] * 4 + [status]))
                continue
            lines.append(fmt_row([f"[{b}, {h}, {s}, {d}]", str(causal), name, f"{t * 1e3:.3f}",
                                  f"{flops / t / 1e12:.0f}", f"{100 * flops / t / gemm_rate:.0f}",
                                  f"{sdpa / t:.2f}x" if sdpa else "-", status]))
    return errors


if __name__ == "__main__":
    sys.exit(main())
