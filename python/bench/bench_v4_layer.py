"""DeepSeek-V4 attention layer (hisa.v4.Attention, the C++ layer of lib/V4)
on V4-Flash dimensions: prefill of one layer at S tokens (B = 1) with the
time split by kernel (torch.profiler's CUDA activity, grouped: projections,
compressor, sparse attention, the rest), each projection against cuBLAS bf16
on its shape, and a decode step at B sequences of a long context (set_length:
the caches are not filled by a prefill of that length, their contents do not
change the work) eager and replayed from a CUDA graph, against the memory
floor (weights + gathered kv rows at the copy bandwidth of this run).

    python3 python/bench/bench_v4_layer.py [--seq 65536] [--decode-batch 64]
        [--context 65536] [--decode-only] [--l2-prefetch -1,0,24] [--out table.md]
"""

import argparse
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import hisa  # noqa: E402
from hisa.v4 import reference as ref  # noqa: E402
from bench_memory_bound import (  # noqa: E402
    Timer, copy_bandwidth, describe, emit_table, fmt_row, release)
from bench_mqa import bench  # noqa: E402

GROUPS = (("linear", "projections"), ("v4_compress", "compressor"),
          ("pool_mqa_logits", "indexer"), ("mqa_logits_decode", "indexer"), ("topk", "indexer"),
          ("v4_to_fp8", "indexer"), ("v4_index_query", "indexer"),
          ("v4_hadamard_fp4", "indexer"), ("v4_index_windows", "indexer"),
          ("sparse_attn", "sparse attention"))
LABELS = ("projections", "compressor", "indexer", "sparse attention")


def flash_weights(config):
    """V4-Flash shapes, random values (the work does not depend on them)."""
    return ref.random_weights(config, device="cuda")


def kernel_split(fn):
    """{group: seconds} of one call of fn from torch.profiler's kernels."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    split = {}
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        group = next((label for prefix, label in GROUPS if event.name.startswith(prefix)),
                     "the rest")
        split[group] = split.get(group, 0.0) + event.device_time_total * 1e-6
    return split


def cublas_time(x, w, m, n, k, groups):
    """torch's (cuBLAS) time for the same product: matmul, or a batched
    matmul over the groups."""
    if groups == 1:
        return bench(lambda: torch.matmul(x, w.T))
    xs = x.view(m, groups, k).transpose(0, 1)
    ws = w.view(groups, n, k)
    return bench(lambda: torch.bmm(xs, ws.transpose(1, 2)))


def projection_rows_checked(m, spread=256):
    """The rows projection_error checks by default: the first and last 128
    (tail tiles included) and `spread` rows spread over [0, m)."""
    spread_rows = torch.linspace(0, m - 1, spread).round().long().tolist() if m > 0 else []
    return sorted(set(range(min(128, m))) | set(range(max(m - 128, 0), m)) | set(spread_rows))


def projection_error(x, w, y, groups, rows=None):
    """None if y (bf16) equals x @ w.T per group within bf16 rounding, else a
    description of the worst element: checked on `rows` (default
    projection_rows_checked: the first and last 128 rows and 256 spread
    rows) against an f64 reference, |y - ref| <= 1e-2 |ref| + 1e-4 sum |x*w|.
    The bf16 x and w multiply exactly in f32; rounding y to bf16 adds <=
    2^-8 |y| (the 1e-2 |ref| term). f32 accumulation adds at most
    K * 2^-24 sum |x*w| in the worst case (4.9e-4 at K = 8192, all terms of
    one sign), but on these random-sign inputs the partial sums stay near
    sqrt(K) terms: simulated sequential f32 sums of K = 8192 randn bf16
    products, rounded to nearest or truncated, stay below 5e-6 sum |x*w|,
    20x under 1e-4 (earlier tables: 1e-3)."""
    m = x.shape[0]
    if rows is None:
        rows = projection_rows_checked(m)
    rows = torch.as_tensor(rows, dtype=torch.long).to(x.device)
    k = x.shape[1] // groups
    n = w.shape[0] // groups
    xs = x[rows].double().view(-1, groups, k).transpose(0, 1)       # [g, r, k]
    ws = w.double().view(groups, n, k)                              # [g, n, k]
    ref = torch.bmm(xs, ws.transpose(1, 2)).transpose(0, 1).reshape(len(rows), groups * n)
    magnitude = torch.bmm(xs.abs(), ws.abs().transpose(1, 2)).transpose(0, 1).reshape(
        len(rows), groups * n)
    got = y[rows].double()
    excess = (got - ref).abs() - (1e-2 * ref.abs() + 1e-4 * magnitude)
    excess = torch.where(torch.isnan(got), torch.full_like(excess, float("inf")), excess)
    worst = int(excess.argmax())
    if float(excess.flatten()[worst]) <= 0:
        return None
    r, c = divmod(worst, groups * n)
    return (f"y[{int(rows[r])}, {c}] = {float(got[r, c]):.5g}, x @ w.T = {float(ref[r, c]):.5g}; "
            f"{int((excess > 0).sum())} elements beyond tolerance")


def projection_rows(config, tokens, lines):
    """Each projection of the layer: hisa's kernel for prefill-sized m
    (linear_staged, the epilogue through shared memory) against torch
    (cuBLAS), and linear's direct stores beside it; returns how many
    projections were wrong (the two computed differently, or linear's
    output is not x @ w.T within bf16 rounding): an error of the run."""
    c = config
    shapes = [("wq_a", tokens, c.q_lora, c.dim, 1), ("wq_b", tokens, c.heads * 512, c.q_lora, 1),
              ("wkv", tokens, 512, c.dim, 1), ("c_wkv / c_wgate", tokens, 512, c.dim, 1),
              ("wo_a (8 groups)", tokens, c.o_lora, c.heads // c.o_groups * 512, c.o_groups),
              ("wo_b", tokens, c.dim, c.o_groups * c.o_lora, 1)]
    lines += ["", fmt_row(["projection", "M", "N", "K", "groups", "hisa, staged epilogue (ms)",
                           "cuBLAS (ms)", "TFLOP/s", "% of cuBLAS",
                           "direct stores (ms, % of cuBLAS)"]),
              fmt_row(["---"] + ["---:"] * 9)]
    differing = 0
    for name, m, n, k, groups in shapes:
        x = torch.randn(m, groups * k, device="cuda").bfloat16()
        w = torch.randn(groups * n, k, device="cuda").bfloat16()
        y = torch.empty(m, groups * n, device="cuda").bfloat16()
        params = {"k": k, "n": n, "groups": groups, "x_cols": groups * k, "y_cols": groups * n}
        kernel = hisa.jit.get_kernel("linear", params)
        t_hisa = bench(lambda: kernel.launch(x, w, y))
        # The operator's kernel for this m: the epilogue staged through
        # shared memory; its output must be linear's bits.
        staged = hisa.jit.get_kernel("linear_staged", params)
        y_staged = torch.full_like(y, float("nan"))
        staged.launch(x, w, y_staged)
        y.fill_(float("nan"))
        kernel.launch(x, w, y)
        torch.cuda.synchronize()
        same = torch.equal(y, y_staged)
        wrong = projection_error(x, w, y, groups)
        if not same:
            print(f"bench_v4_layer: FAILED projection {name}: linear_staged's output differs "
                  "from linear's", file=sys.stderr)
        if wrong:
            print(f"bench_v4_layer: FAILED projection {name}: not x @ w.T: {wrong}",
                  file=sys.stderr)
        differing += 0 if same and not wrong else 1
        t_staged = bench(lambda: staged.launch(x, w, y_staged))
        t_ref = cublas_time(x, w, m, n, k, groups)
        flops = 2 * m * n * k * groups
        lines.append(fmt_row([name, str(m), str(n), str(k), str(groups), f"{t_staged * 1e3:.3f}",
                              f"{t_ref * 1e3:.3f}", f"{flops / t_staged / 1e12:.0f}",
                              f"{100 * t_ref / t_staged:.0f}",
                              f"{t_hisa * 1e3:.3f} ({100 * t_ref / t_hisa:.0f})"
                              + ("" if same else " OUTPUT DIFFERS")
                              + (" WRONG (not x @ w.T)" if wrong else "")]))
    torch.cuda.empty_cache()
    return differing


def decode_projection_rows(config, lines, copy_bw, m=64):
    """The projections at decode's m (one token per sequence): the operator's
    whole-k 64x64 tiles, split-k (linear_partial + linear_reduce) and
    cuBLAS, as weight-streaming bandwidth (the bound at this m). Returns
    how many outputs were not x @ w.T (projection_error)."""
    c = config
    shapes = [("wq_a", c.q_lora, c.dim, 1), ("wq_b", c.heads * 512, c.q_lora, 1),
              ("wkv", 512, c.dim, 1), ("wo_a (8 groups)", c.o_lora, c.heads // c.o_groups * 512,
                                       c.o_groups), ("wo_b", c.dim, c.o_groups * c.o_lora, 1)]
    lines += ["", fmt_row(["projection at m = 64", "N", "K", "whole-k (us)", "split-k (us)",
                           "splits", "cuBLAS (us)", "best GB/s (% of copy)"]),
              fmt_row(["---"] + ["---:"] * 7)]
    failures = 0
    for name, n, k, groups in shapes:
        x = torch.randn(m, groups * k, device="cuda").bfloat16()
        w = torch.randn(groups * n, k, device="cuda").bfloat16()
        y = torch.empty(m, groups * n, device="cuda").bfloat16()
        base = {"k": k, "n": n, "groups": groups, "x_cols": groups * k, "y_cols": groups * n,
                "block_m": 64, "block_n": 64, "block_k": 128}
        whole = hisa.jit.get_kernel("linear", base)
        y.fill_(float("nan"))
        whole.launch(x, w, y)
        torch.cuda.synchronize()
        wrong = [f"whole-k: {e}" for e in [projection_error(x, w, y, groups)] if e]
        t_whole = bench(lambda: whole.launch(x, w, y))
        # Enough blocks for 132 SMs, dividing the k steps.
        tiles = groups * -(-n // 64)
        steps = k // 128
        splits = next((s for s in (16, 8, 4, 2) if steps % s == 0 and tiles * s <= 4 * 132), 1)
        t_split = None
        if splits > 1:
            partial = torch.empty(splits, m, groups * n, device="cuda")
            first = hisa.jit.get_kernel("linear_partial", dict(base, splits=splits))
            reduce = hisa.jit.get_kernel("linear_reduce", {})

            def split_call():
                first.launch(x, w, partial)
                reduce.launch(partial, y)
            y.fill_(float("nan"))
            split_call()
            torch.cuda.synchronize()
            wrong += [f"split-k: {e}" for e in [projection_error(x, w, y, groups)] if e]
            t_split = bench(split_call)
        t_ref = cublas_time(x, w, m, n, k, groups)
        best = min(t for t in (t_whole, t_split) if t)
        weight_bytes = groups * n * k * 2
        for e in wrong:
            print(f"bench_v4_layer: FAILED decode projection {name}: not x @ w.T: {e}",
                  file=sys.stderr)
        failures += 1 if wrong else 0
        lines.append(fmt_row([name, str(n), str(k), f"{t_whole * 1e6:.1f}",
                              f"{t_split * 1e6:.1f}" if t_split else "-", str(splits),
                              f"{t_ref * 1e6:.1f}",
                              f"{weight_bytes / best / 1e9:.0f} "
                              f"({100 * weight_bytes / best / copy_bw:.0f}%)"
                              + (" WRONG (not x @ w.T)" if wrong else "")]))
    return failures


def decode_indexer_rows(lines, copy_bw, batch=64, context=65536, topk=512):
    """The CSA decode indexer's two kernels at the decode shape (every
    sequence's query over its context // 4 compressed keys, all visible):
    mqa_logits_decode against the bandwidth of its fp8 keys, then the exact
    top-k of the [batch, keys] logits."""
    keys = context // 4
    stride = (keys + 3) // 4 * 4
    q = torch.randn(batch * 64, 128, device="cuda").to(torch.float8_e4m3fn)
    k = torch.randn(batch * stride, 128, device="cuda").to(torch.float8_e4m3fn)
    scale = torch.rand(batch * stride, device="cuda") + 0.5
    weights = torch.randn(batch, 64, device="cuda")
    starts = torch.zeros(batch, dtype=torch.int32, device="cuda")
    ends = torch.full((batch,), keys, dtype=torch.int32, device="cuda")
    logits = torch.empty(batch, stride, device="cuda")
    # The operator's specialization (ops::mqaLogitsDecode: 8 blocks per SM).
    kernel = hisa.jit.get_kernel("mqa_logits_decode",
                                 {"heads": 64, "dim": 128, "min_blocks": 8})
    t_logits = bench(lambda: kernel.launch(q, k, scale, weights, starts, ends, logits))
    kernel.launch(q, k, scale, weights, starts, ends, logits)
    t_topk = bench(lambda: hisa.topk(logits, topk, starts=starts, ends=ends))
    key_bytes = batch * keys * (128 + 4)
    logit_bytes = batch * keys * 4
    lines += ["", fmt_row([f"decode indexer kernel (B = {batch}, {keys} keys each)", "time (us)",
                           "bytes read (MB)", "GB/s (% of copy)"]),
              fmt_row(["---"] + ["---:"] * 3)]
    for name, t, nbytes in (("mqa_logits_decode", t_logits, key_bytes),
                            (f"topk k = {topk}", t_topk, logit_bytes)):
        lines.append(fmt_row([name, f"{t * 1e6:.1f}", f"{nbytes / 1e6:.0f}",
                              f"{nbytes / t / 1e9:.0f} ({100 * nbytes / t / copy_bw:.0f}%)"]))
    torch.cuda.empty_cache()


def prefill_rows(ratio, seq, lines):
    config = ref.Config(compress_ratio=ratio)
    weights = flash_weights(config)
    layer = hisa.v4.Attention(config, weights, 1, seq)
    x = torch.randn(1, seq, config.dim, device="cuda").bfloat16()
    t = bench(lambda: layer.forward(x, 0), reps=3, batch=2)
    split = kernel_split(lambda: layer.forward(x, 0))
    total = sum(split.values())
    cells = [f"{ratio}", f"{seq}", f"{t * 1e3:.2f}"]
    for label in LABELS + ("the rest",):
        cells.append(f"{split.get(label, 0) * 1e3:.2f} ({100 * split.get(label, 0) / total:.0f}%)")
    other = split.get("compressor", 0) + split.get("the rest", 0)
    cells.append(f"{100 * other / total:.0f}%")
    lines.append(fmt_row(cells))
    torch.cuda.empty_cache()


def fill_random_index_keys(layer):
    """CSA: random fp8 keys with power-of-two scales in the layer's indexer
    key cache, as a real cache at a long context holds (after set_length
    its entries are zeros, and every score ties). No-op for other ratios."""
    keys = layer.index_key_cache()
    if keys is None:
        return
    codes, scales = keys
    codes.copy_((torch.randn(codes.shape, device="cuda") * 64).to(torch.float8_e4m3fn))
    scales.copy_(2.0 ** -torch.randint(5, 9, scales.shape, device="cuda").float())


def decode_rows(ratio, batch, context, copy_bw, lines, prefetch_values=(-1,)):
    """The decode step rows of one ratio; returns how many CUDA graph
    captures failed (an error of the run)."""
    config = ref.Config(compress_ratio=ratio)
    weights = flash_weights(config)
    # Headroom past the context: graph replays advance the positions.
    layer = hisa.v4.Attention(config, weights, batch, context + 64,
                              max_prefill_tokens=batch * 128)
    prompt = torch.randn(batch, 128, config.dim, device="cuda").bfloat16()
    layer.forward(prompt, 0)
    layer.set_length(context)
    x = torch.randn(batch, 1, config.dim, device="cuda").bfloat16()
    # CSA: the indexer's keys past the prompt are zeros after set_length, so
    # every score ties (the top-k's slowest input); a real cache holds
    # distinct keys. Both are measured.
    key_fills = ("zeros", "random") if ratio == 4 else ("-",)
    failures = 0
    for keys in key_fills:
        if keys == "random":
            fill_random_index_keys(layer)
        for prefetch in prefetch_values:
            layer.set_l2_prefetch(prefetch)
            failures += decode_row(layer, config, weights, ratio, batch, context, x, copy_bw,
                                   lines, prefetch, keys) or 0
    del layer
    torch.cuda.empty_cache()
    return failures


def decode_row(layer, config, weights, ratio, batch, context, x, copy_bw, lines, prefetch,
               keys="-"):
    position = [context]

    def step():
        out = layer.forward(x, position[0])
        layer.set_length(position[0])   # stay at the same context
        return out

    eager = bench(step, reps=5, batch=5)
    split = kernel_split(step)
    split_cell = " / ".join(f"{split.get(label, 0) * 1e6:.0f}"
                            for label in LABELS + ("the rest",))
    # Host time per step: the wall clock of synchronized back-to-back steps.
    import time
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - start) / 20
    graph_time = None
    try:
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            step()
            with torch.cuda.graph(graph, stream=stream):
                layer.forward(x, position[0])
        layer.set_length(context)
        graph_time = bench(graph.replay, reps=4, batch=10)   # 52 replays < 64
        graph_cell = f"{graph_time * 1e6:.0f}"
    except Exception as exc:  # the table says why; an error of the run
        graph_cell = f"capture failed: {describe(exc, 60)}"
        print(f"bench_v4_layer: FAILED CUDA graph capture of the decode step (ratio {ratio}, "
              f"B = {batch}): {describe(exc)}", file=sys.stderr)
    # The floor: every weight read once, the gathered kv rows (window + the
    # visible compressed entries; CSA: index_topk of them, and the indexer's
    # fp8 keys with their scales), at this run's copy bandwidth.
    matrices = {"wq_a", "wq_b", "wkv", "wo_a", "wo_b", "c_wkv", "c_wgate", "i_wq", "i_weights",
                "i_wkv", "i_wgate"}
    weight_bytes = sum(v.numel() * (2 if k in matrices else 4) for k, v in weights.items())
    entries = context // ratio if ratio else 0
    rows = 128 + (min(entries, config.index_topk) if ratio == 4 else entries)
    kv_bytes = batch * rows * 512 * 2
    if ratio == 4:
        kv_bytes += batch * entries * (128 + 4)
    floor = (weight_bytes + kv_bytes) / copy_bw
    best = graph_time or eager
    prefetch_cell = ("auto" if prefetch < 0 else "off" if prefetch == 0
                     else f"{prefetch / 2**20:.0f} MiB")
    lines.append(fmt_row([f"{ratio}", f"{batch}", f"{context}", keys, prefetch_cell,
                          f"{eager * 1e6:.0f}",
                          graph_cell, f"{wall * 1e6:.0f}", split_cell,
                          f"{(weight_bytes + kv_bytes) / 1e6:.0f}", f"{floor * 1e6:.0f}",
                          f"{100 * floor / best:.0f}"]))
    return 0 if graph_time else 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out")
    parser.add_argument("--anchors", help="accepted for scripts/gpu-run.sh; the anchors have "
                                          "no V4 layer to compare with")
    parser.add_argument("--seq", type=int, default=65536)
    parser.add_argument("--decode-batch", type=int, default=64)
    parser.add_argument("--context", type=int, default=65536)
    parser.add_argument("--decode-only", action="store_true",
                        help="only the decode step table")
    parser.add_argument("--l2-prefetch", default="0",
                        help="decode's L2 prefetch per weight to measure, comma-separated "
                             "MiB (-1: the layer's automatic share of L2, 0: off, the default)")
    args = parser.parse_args(argv)
    prefetch_values = [int(float(v) * 2**20) if float(v) > 0 else int(v)
                       for v in args.l2_prefetch.split(",")]
    if not torch.cuda.is_available():
        print("bench_v4_layer: no CUDA GPU", file=sys.stderr)
        return 2
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    timer = Timer()
    copy_t, copy_bytes = copy_bandwidth(timer, 2.0, 10)
    copy_bw = copy_bytes / copy_t
    a = torch.randn(8192, 8192, device="cuda").bfloat16()
    t_gemm = bench(lambda: a @ a)
    lines = [f"# DeepSeek-V4 attention layer (V4-Flash dims) on {props.name}", "",
             f"torch {torch.__version__}; cuBLAS bf16 8192^3 {2 * 8192**3 / t_gemm / 1e12:.0f} "
             f"TFLOP/s, copy {copy_bw / 1e9:.0f} GB/s (this run).", "",
             fmt_row(["ratio", "S", "prefill (ms)", "projections", "compressor", "indexer",
                      "sparse attention", "the rest",
                      "neither gemm, indexer nor attention"]),
             fmt_row(["---"] * 2 + ["---:"] * 7)]
    errors = 0
    if not args.decode_only:
        for ratio in (4, 128, 0):
            try:
                prefill_rows(ratio, args.seq, lines)
            except Exception as exc:
                traceback.print_exc()
                print(f"bench_v4_layer: FAILED prefill ratio {ratio}: {describe(exc)}",
                      file=sys.stderr)
                errors += 1
                lines.append(fmt_row([str(ratio), str(args.seq), f"error: {describe(exc, 113)}"]
                                     + [""] * 6))
        for name, rows in (
                ("projections", lambda: projection_rows(ref.Config(), args.seq, lines)),
                ("decode projections", lambda: decode_projection_rows(ref.Config(), lines,
                                                                      copy_bw)),
                ("decode indexer kernels",
                 lambda: decode_indexer_rows(lines, copy_bw, args.decode_batch, args.context))):
            try:
                errors += rows() or 0
            except Exception as exc:  # named in the table; the next table runs
                traceback.print_exc()
                print(f"bench_v4_layer: FAILED {name}: {describe(exc)}", file=sys.stderr)
                errors += 1
                lines += ["", f"{name}: error: {describe(exc, 200)}"]
            release()
    lines += ["", fmt_row(["ratio", "B", "context", "CSA indexer keys", "L2 prefetch per weight",
                           "decode step eager (us)",
                           "CUDA graph (us)", "host wall per step (us)",
                           "kernels: projections / compressor / indexer / attention / rest (us)",
                           "bytes (MB)", "memory floor (us)", "% of floor"]),
              fmt_row(["---"] * 5 + ["---:"] * 7)]
    for ratio in (4, 128, 0):
        try:
            errors += decode_rows(ratio, args.decode_batch, args.context, copy_bw, lines,
                                  prefetch_values)
        except Exception as exc:
            traceback.print_exc()
            print(f"bench_v4_layer: FAILED decode ratio {ratio}: {describe(exc)}", file=sys.stderr)
            errors += 1
            lines.append(fmt_row([str(ratio), str(args.decode_batch), str(args.context),
                                  f"error: {describe(exc, 113)}"] + [""] * 8))
    return emit_table(lines, args.out, errors)


if __name__ == "__main__":
    sys.exit(main())
