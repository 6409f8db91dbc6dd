#!/usr/bin/env python3
"""DeepSeek-V4 sparse attention: hisa.sparse_attn against TileLang's
sparse_attn_fwd_sm90 (../shared/anchors) and the bf16 tensor-core ceiling;
then dense attention, hisa.flash_attn against torch's SDPA (flash backend,
pinned).

Measured in one run: cuBLAS bf16 8192^3 (the compute ceiling) and the
device copy bandwidth (the memory ceiling of decode), then per shape hisa
and, with --anchors, TileLang's kernel. FLOPs 4*B*S*H*K*D (D = 512).
Prefill: Nkv = S, indices uniform over each token's causal prefix, about 2%
-1. Decode: Nkv = 65536, indices uniform over the cache, about 2% -1; the
timed calls rotate over 4-64 independent (q, idx) sets (kv shared), enough
that the rows they gather exceed 3x L2 where the cache allows, so repeats
do not hit L2.
"gathered kv GB/s" counts D*2 bytes per valid (>= 0) index (-1 is read as
zeros without memory traffic); "all bytes GB/s" adds q read, o written
(2*B*S*H*D*2) and the indices (4*B*S*K): +41% at H = 128, K = 640. Their %
of copy is shown only where the distinct rows gathered over the rotation
exceed 3x L2 ("-" where they fit: prefill's kv of S rows, decode at B = 1).
"target" (the issue shapes): decode passes when t <= max(gathered /
(0.6 * copy), FLOPs / 450 TFLOP/s), gathered = the kv bytes alone as the
issue defines it (60% of copy or 450 TFLOP/s, either suffices: the cell
names the larger, binding one) and when it is 1.3x TileLang; prefill when
it is 1.5x TileLang. TileLang's time counts (vs TileLang, targets) only
where its own output passed the check; where it was to run and did not,
the target cell says so. "(PDL off)" rows time hisa with programmatic
dependent launch off (hisa.set_programmatic_launch(False)), as TileLang and
torch launch. Each result is checked against an f32 torch reference before
timing (every batch at S <= 2, else batches 0, B/2 and B-1; positions
0..7, S/2 and S-1). A failed check, a shape or anchor that raises, or
anchors that fail to load are named on stderr and in the table and make
the exit status 1; the rows measured before a late error are still printed.

    PYTHONPATH=python python3 python/bench/bench_sparse_attn.py --out t.md \\
        [--anchors DIR_WITH_tilelang_examples] [--anchor-shapes all|issue|0,1,...] \\
        [--flashmla libflashmla_prefill.so]

--flashmla adds DeepSeek's FlashMLA sm90 sparse prefill (d_qk = 512, the
same operation; the strongest hand-written kernel of this design) on the
prefill shapes, checked like the others; its "vs TileLang" cell is its own.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import flashmla  # noqa: E402
import hisa  # noqa: E402
from bench_memory_bound import (  # noqa: E402
    Timer, copy_bandwidth, describe, emit_table, fmt_row, l2_bytes, load_anchor, release)
from bench_mqa import bench, without_pdl  # noqa: E402

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
# The shapes of the issue's targets (3 prefill, 4 decode at B = 128): an
# --anchor-shapes list should keep all of them (the run warns otherwise).
ISSUE_SHAPES = tuple(range(7))
DECODE_COPY_SHARE, DECODE_TFLOPS = 0.6, 450e12   # decode: 60% of copy or 450 TFLOP/s
DECODE_VS_TILELANG, PREFILL_VS_TILELANG = 1.3, 1.5


def time_impls(impls, relative_error, where=""):
    """(name, seconds or None, status) per (name, fn) or (name, fn, timed)
    after checking fn's output with relative_error(out) < 1e-2; `timed`
    (default fn) is what is timed, e.g. fn rotating over input sets. Also
    returns the number of failures (named on stderr, after `where`)."""
    results, errors = [], 0
    for name, fn, *timed in impls:
        try:
            out = fn()
            torch.cuda.synchronize()
            err = relative_error(out)
            ok = err < 1e-2   # False for NaN
            results.append((name, bench(timed[0] if timed else fn),
                            "ok" if ok else f"**error {err:.1e}**"))
            if not ok:
                print(f"bench_sparse_attn: FAILED {where}{name}: relative error {err:.2e}",
                      file=sys.stderr)
            errors += 0 if ok else 1
        except Exception as exc:
            traceback.print_exc()
            results.append((name, None, f"error: {describe(exc, 60)}"))
            print(f"bench_sparse_attn: FAILED {where}{name}: raised {describe(exc)}",
                  file=sys.stderr)
            errors += 1
    return results, errors


def rotate(calls):
    """A call that runs calls[0], calls[1], ... in turn (the last result)."""
    if len(calls) == 1:
        return calls[0]
    state = [0]

    def call():
        fn = calls[state[0] % len(calls)]
        state[0] += 1
        return fn()
    return call


def make_inputs(b, s, h, k, nkv):
    causal = nkv is None
    nkv = s if causal else nkv
    q = torch.randn(b, s, h, D, device="cuda").bfloat16()
    # One spare row before kv: TileLang's kernel reads kv[b, -1] for a -1
    # index before masking it (../shared/anchors/README.md).
    kv_rows = torch.randn(b * nkv + 1, D, device="cuda").bfloat16()
    kv = kv_rows[1:].view(b, nkv, D)
    sink = torch.randn(h, device="cuda")
    return q, kv, sink, make_indices(b, s, k, nkv)


def make_indices(b, s, k, nkv):
    """[B, S, K] int32 indices as make_inputs draws them (nkv None: each
    token's causal prefix of S rows), about 2% -1."""
    causal = nkv is None
    nkv = s if causal else nkv
    if causal:
        limit = torch.arange(1, s + 1, device="cuda")[None, :, None]
        idx = (torch.rand(b, s, k, device="cuda") * limit).long().clamp(max=nkv - 1)
    else:
        idx = torch.randint(0, nkv, (b, s, k), device="cuda")
    idx = idx.int()
    idx[torch.rand(b, s, k, device="cuda") < 0.02] = -1
    return idx


def rotation_sets(label, b, s, k, l2):
    """How many (q, idx) sets a shape's timed calls rotate over: prefill 1
    (its q and o alone stream more than L2 per call; its kv of S rows is
    meant to sit in L2), decode >= 4 and enough that the rows they gather
    exceed 3x L2 (at most 64)."""
    if label != "decode":
        return 1
    per_set = b * s * k * D * 2
    return min(64, max(4, -(-3 * l2 // per_set)))


def check_batches(batches, seq):
    """The batches a check covers: all of them at S <= 2 tokens each (decode:
    the reference is cheap), else 0, B/2 and B-1."""
    if seq <= 2:
        return list(range(batches))
    return sorted({0, batches // 2, batches - 1})


def reference(q, kv, sink, idx, tokens=8, chunk_bytes=1 << 28):
    """The f32 reference of the checked outputs: (batches, positions [t],
    ref [len(batches), t, H, D]) for the batches of check_batches at the
    positions 0..tokens-1, S/2 and S-1, computed a chunk of batches at a
    time (each chunk's temporaries about chunk_bytes)."""
    batches, seq, heads = q.shape[0], q.shape[1], q.shape[2]
    nkv, k, d = kv.shape[1], idx.shape[2], kv.shape[2]
    chosen = check_batches(batches, seq)
    pos = torch.tensor(sorted(set(range(min(tokens, seq))) | {seq // 2, seq - 1}),
                       device=q.device)
    # Per batch: the gathered rows (bf16, then f32) and the scores (f32, twice).
    per_batch = len(pos) * (k * d * 6 + heads * k * 8)
    step = max(1, chunk_bytes // per_batch)
    refs = []
    for c0 in range(0, len(chosen), step):
        bs = torch.tensor(chosen[c0:c0 + step], device=q.device)
        qs = q[bs[:, None], pos[None, :]].float()                          # [c, t, H, D]
        ids = idx[bs[:, None], pos[None, :]]                               # [c, t, K]
        valid = (ids >= 0) & (ids < nkv)
        g = kv[bs[:, None, None], ids.clamp(0, nkv - 1).long()].float()   # [c, t, K, D]
        scores = torch.einsum("cthd,ctkd->cthk", qs, g) * SCALE
        scores = scores.masked_fill(~valid[:, :, None, :], float("-inf"))
        m = torch.maximum(scores.amax(-1), sink)
        e = torch.exp(scores - m[..., None])
        refs.append(torch.einsum("cthk,ctkd->cthd", e, g)
                    / (e.sum(-1) + torch.exp(sink - m))[..., None])
        del qs, ids, valid, g, scores, m, e
    return chosen, pos, torch.cat(refs)


def relative_error(expected, o):
    """The largest over the checked batches of the relative L2 error of o
    against reference()'s `expected` on the checked positions (NaN if any
    is NaN)."""
    chosen, pos, ref = expected
    bs = torch.tensor(chosen, device=ref.device)
    got = o[bs[:, None], pos[None, :]].float()
    err = ((got - ref).flatten(1).norm(dim=1)
           / ref.flatten(1).norm(dim=1).clamp_min(1e-30))
    if bool(torch.isnan(err).any()):
        return float("nan")
    return float(err.max())


def check(q, kv, sink, idx, o, tokens=8):
    """Relative L2 error of o against an f32 reference: the largest over the
    batches of check_batches (every batch at S <= 2, else 0, B/2 and B-1)
    of the error on the positions 0..tokens-1, S/2 and S-1 (NaN if any is
    NaN)."""
    return relative_error(reference(q, kv, sink, idx, tokens), o)


NO_ANCHOR_TIME = "? (no valid TileLang time)"


def decode_target(t, gathered, flops, copy_bw, anchor_time, anchor_expected=False):
    """The target cell of a decode time t (unrounded values): t <=
    max(gathered / (0.6 copy), flops / 450 TFLOP/s), with `gathered` the
    bytes of the kv rows gathered (the issue's measure: q, o and the
    indices not counted), and 1.3x TileLang (anchor_time: TileLang's time
    where it ran and passed its check; anchor_expected: it was to run, so a
    missing time is shown as such)."""
    t_copy = gathered / (DECODE_COPY_SHARE * copy_bw)
    t_flops = flops / DECODE_TFLOPS
    bound = (f"{DECODE_COPY_SHARE:.0%} copy" if t_copy >= t_flops
             else f"{DECODE_TFLOPS / 1e12:.0f} TFLOP/s")
    t_target = max(t_copy, t_flops)
    cell = f"{bound} ({t_target * 1e3:.4f} ms) {'✓' if t <= t_target else '✗'}"
    if anchor_time:
        cell += f", {DECODE_VS_TILELANG}x {'✓' if anchor_time / t >= DECODE_VS_TILELANG else '✗'}"
    elif anchor_expected:
        cell += f", {DECODE_VS_TILELANG}x {NO_ANCHOR_TIME}"
    return cell


def parse_anchor_shapes(text):
    """The SHAPES indices of --anchor-shapes: all (default), issue, or a
    comma-separated list."""
    if text is None or text == "all":
        return set(range(len(SHAPES)))
    if text == "issue":
        return set(ISSUE_SHAPES)
    chosen = {int(i) for i in text.split(",") if i.strip()}
    unknown = sorted(i for i in chosen if not 0 <= i < len(SHAPES))
    if unknown:
        raise ValueError(f"--anchor-shapes: no shape {unknown} (0..{len(SHAPES) - 1})")
    return chosen


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out")
    parser.add_argument("--anchors")
    parser.add_argument("--variants", action="store_true",
                        help="also time the kernel variants the operator does not pick: "
                             "the plain (not warp-specialized) sparse_attn where it would not "
                             "split, partial_sums=0, sparse_attn_wg, and the other flash_attn "
                             "kernel")
    parser.add_argument("--flashmla", metavar="LIB",
                        help="also time DeepSeek's FlashMLA sm90 sparse prefill "
                             "(libflashmla_prefill.so from probes/flashmla_build.sh) on the "
                             "prefill shapes it takes (B = 1, H a multiple of 64, K of 128)")
    parser.add_argument("--anchor-shapes", default="all",
                        help="the SHAPES the anchor runs on: all (default), issue (the "
                             f"issue's shapes {','.join(map(str, ISSUE_SHAPES))}) or "
                             "comma-separated indices; TileLang compiles each shape for tens "
                             "of seconds. A list without every issue shape is reported.")
    args = parser.parse_args(argv)
    try:
        anchor_shapes = parse_anchor_shapes(args.anchor_shapes)
    except ValueError as exc:
        parser.error(str(exc))
    if not torch.cuda.is_available():
        print("bench_sparse_attn: no CUDA GPU", file=sys.stderr)
        return 2
    anchor = anchor_note = None
    if args.anchors:
        try:
            anchor = load_anchor(args.anchors, "deepseek_v4/sparse_attn_fwd_sm90.py",
                                  "anchor_sparse_attn")
        except Exception as exc:  # an error of the run, named in the table
            traceback.print_exc()
            anchor_note = f"TileLang anchors failed to load: {describe(exc)}"
            print(f"bench_sparse_attn: FAILED {anchor_note}", file=sys.stderr)
    args.flashmla_prefill = args.flashmla_note = None
    if args.flashmla:
        try:
            args.flashmla_prefill = flashmla.load(args.flashmla)
        except Exception as exc:  # an error of the run, named in the table
            traceback.print_exc()
            args.flashmla_note = f"FlashMLA failed to load: {describe(exc)}"
            print(f"bench_sparse_attn: FAILED {args.flashmla_note}", file=sys.stderr)
    lines, errors = [], 0
    # Whatever raises below, the rows measured so far are printed (finally).
    try:
        errors += measure(args, anchor, anchor_note, anchor_shapes, lines)
    except Exception as exc:
        traceback.print_exc()
        print(f"bench_sparse_attn: FAILED run aborted: {describe(exc)}", file=sys.stderr)
        lines += ["", f"**Run aborted: {describe(exc)}**; the rows above it, if any, were "
                      "measured before it."]
        errors += 1
    finally:
        status = emit_table(lines, args.out, errors)
    return status


def measure(args, anchor, anchor_note, anchor_shapes, lines):
    """The ceilings, then the sparse and dense tables, appended to lines as
    they are measured; returns the number of errors. A shape that raises
    gives an error row and the next shape runs."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = l2_bytes()
    a = torch.randn(8192, 8192, device="cuda").bfloat16()
    t_gemm = bench(lambda: a @ a)
    gemm_rate = 2 * 8192**3 / t_gemm
    del a
    timer = Timer()
    copy_t, copy_bytes = copy_bandwidth(timer, 2.0, 10)
    copy_bw = copy_bytes / copy_t
    torch.cuda.empty_cache()
    lines += [
        f"# DeepSeek-V4 sparse attention on {props.name}",
        "",
        f"torch {torch.__version__}; {hisa.version()}; cuBLAS bf16 8192^3 "
        f"{gemm_rate / 1e12:.0f} TFLOP/s, copy {copy_bw / 1e9:.0f} GB/s (the ceilings, "
        "this run). FLOPs 4*B*S*H*K*D; median of 10 batches of 10 calls.",
        "",
        "Since these columns were added: gathered kv GB/s counts the D*2 bytes of each valid "
        "(>= 0) index only (earlier tables: all K, with the ~2% -1); all bytes GB/s adds q "
        "read, o written and the indices (2*B*S*H*D*2 + 4*B*S*K: +41% at H = 128, K = 640); "
        "decode calls rotate over the \"sets\" "
        "of independent (q, idx) (earlier tables: one set, partly served from L2); % of copy "
        f"is \"-\" where the rows gathered over the rotation fit in 3x L2 ({l2 / 2**20:.0f} "
        "MiB, device properties); checks cover every batch at S <= 2 (decode), else batches "
        "0, B/2, B-1, at positions 0..7, S/2, S-1 (earlier: batches 0, B/2, B-1 at decode "
        "too; before that the first 8 tokens of batch 0). target: decode t <= "
        f"max(gathered kv bytes / ({DECODE_COPY_SHARE:.0%} copy), FLOPs / "
        f"{DECODE_TFLOPS / 1e12:.0f} TFLOP/s) (the issue's measure: kv rows only, not q, o "
        "or the indices; the binding bound named) and "
        f"{DECODE_VS_TILELANG}x TileLang; prefill {PREFILL_VS_TILELANG}x TileLang; issue "
        "shapes only; TileLang's time counts only where its own check passed "
        f"(\"{NO_ANCHOR_TIME}\" otherwise). (PDL off): hisa without programmatic dependent "
        "launch, as TileLang launches.",
    ]
    errors = 0
    if anchor_note:
        lines += ["", f"**{anchor_note}**: no TileLang rows, and the TileLang parts of the "
                      "targets are not evaluated."]
        errors += 1
    elif not args.anchors:
        lines += ["", "No --anchors: no TileLang rows; the TileLang parts of the targets are "
                      "not evaluated."]
    if args.flashmla_note:
        lines += ["", f"**{args.flashmla_note}**: no FlashMLA rows."]
        errors += 1
    missing = [i for i in ISSUE_SHAPES if i not in anchor_shapes]
    if anchor is not None and missing:
        note = ("TileLang NOT run on issue shapes "
                + ", ".join(f"{i} ({SHAPES[i][0]} B={SHAPES[i][1]} S={SHAPES[i][2]} "
                            f"H={SHAPES[i][3]} K={SHAPES[i][4]})" for i in missing)
                + f" (--anchor-shapes {args.anchor_shapes}).")
        print(f"bench_sparse_attn: warning: {note}", file=sys.stderr)
        lines += ["", note]
    lines += [
        "",
        fmt_row(["case", "B", "S", "H", "K", "Nkv", "impl", "time (ms)", "TFLOP/s",
                 "% of bf16 cuBLAS", "gathered kv GB/s (% of copy)",
                 "all bytes GB/s (% of copy)", "vs TileLang", "check", "target", "sets"]),
        fmt_row(["---"] * 7 + ["---:"] * 6 + [":---:", "---", "---:"]),
    ]
    for shape_index, shape in enumerate(SHAPES):
        try:
            errors += sparse_shape_rows(args, anchor, anchor_shapes, shape_index, lines,
                                        gemm_rate, copy_bw, l2)
        except Exception as exc:  # this shape's row says why; the next shape runs
            traceback.print_exc()
            label, b, s, h, k, nkv = shape
            print(f"bench_sparse_attn: FAILED {label} B={b} S={s} H={h} K={k}: "
                  f"{describe(exc)}", file=sys.stderr)
            lines.append(fmt_row([label, str(b), str(s), str(h), str(k), str(nkv or s), "-"]
                                 + ["-"] * 6 + [f"error: {describe(exc, 80)}", "-", "-"]))
            errors += 1
        release()
    try:
        errors += dense_rows(lines, gemm_rate, args.variants)
    except Exception as exc:
        traceback.print_exc()
        print(f"bench_sparse_attn: FAILED dense attention: {describe(exc)}", file=sys.stderr)
        lines += ["", f"dense attention: error: {describe(exc)}"]
        errors += 1
    return errors


def sparse_shape_rows(args, anchor, anchor_shapes, shape_index, lines, gemm_rate, copy_bw, l2):
    """The rows of one SHAPES entry; returns its number of errors."""
    label, b, s, h, k, nkv = SHAPES[shape_index]
    errors = 0
    q, kv, sink, idx = make_inputs(b, s, h, k, nkv)
    sets = rotation_sets(label, b, s, k, l2)
    qs, idxs = [q], [idx]
    for _ in range(sets - 1):
        qs.append(torch.randn_like(q))
        idxs.append(make_indices(b, s, k, nkv))
    flops = 4 * b * s * h * k * D
    # Bytes of the valid rows a call gathers (the mean over the sets): the
    # issue's measure of decode's traffic.
    valid_rows = sum(int((i >= 0).sum()) for i in idxs) / sets
    gathered = valid_rows * D * 2
    # Every byte a call moves: also q read, o written (bf16) and the indices.
    moved = gathered + 2 * b * s * h * D * 2 + b * s * k * 4
    # Distinct rows gathered over the rotation, at most the whole kv.
    footprint = min(sets * gathered, kv.numel() * 2)
    copy_share_shown = footprint > 3 * l2

    def impl(name, make):
        """(name, call on set 0, call rotating over the sets)."""
        calls = [make(qi, ii) for qi, ii in zip(qs, idxs)]
        return (name, calls[0], rotate(calls))

    def operator(qi, ii):
        return lambda: hisa.sparse_attn(qi, kv, sink, ii, SCALE)

    impls = [impl("hisa.sparse_attn", operator),
             impl("hisa.sparse_attn (PDL off)", lambda qi, ii: without_pdl(operator(qi, ii)))]
    if args.variants and b * s * -(-h // 64) >= 132:
        # The operator runs sparse_attn_ws (partial_sums=1) when it does
        # not split, sparse_attn_wg at H = 128 with >= 1024 tokens.
        for name, kernel_name, extra in (
                ("plain sparse_attn (variant)", "sparse_attn", None),
                ("ws, partial_sums=1 (variant)", "sparse_attn_ws", {"partial_sums": 1}),
                ("ws, partial_sums=0 (variant)", "sparse_attn_ws", {"partial_sums": 0}),
                ("sparse_attn_wg (variant)", "sparse_attn_wg",
                 {"topk_pad": -(-k // 128) * 128})):
            impls.append(impl(name, lambda qi, ii, kernel_name=kernel_name, extra=extra:
                              kernel_variant(qi, kv, sink, ii, kernel_name, extra)))
    if args.flashmla_prefill and label == "prefill" and flashmla.supports(b, h, k):
        prefill = args.flashmla_prefill
        impls.append(impl("FlashMLA sparse prefill (sm90, reference)",
                          lambda qi, ii: lambda: prefill(qi, kv, sink, ii, SCALE)))
    anchor_expected = bool(args.anchors) and shape_index in anchor_shapes
    if anchor is not None and shape_index in anchor_shapes:
        try:
            kernel = anchor.sparse_attn_fwd(b, h, s, kv.shape[1], D, k, sm_scale=SCALE)
            sink_bf16 = sink.bfloat16()
            impls.append(impl("TileLang sparse_attn_fwd_sm90",
                              lambda qi, ii, kernel=kernel: (
                                  lambda: kernel(qi, kv, ii, sink_bf16))))
        except Exception as exc:  # an error of the run
            traceback.print_exc()
            print(f"bench_sparse_attn: FAILED TileLang build on {label} B={b} S={s} H={h} "
                  f"K={k}: {describe(exc)}", file=sys.stderr)
            errors += 1
            lines.append(fmt_row([label, str(b), str(s), str(h), str(k), str(kv.shape[1]),
                                  "TileLang", "-", "-", "-", "-", "-", "-",
                                  f"error: {describe(exc, 60)}", "-", "-"]))
    expected = reference(qs[0], kv, sink, idxs[0])
    results, failed = time_impls(impls, lambda out: relative_error(expected, out),
                                 f"{label} B={b} S={s} H={h} K={k}: ")
    errors += failed
    # TileLang's time only where it ran and passed its own check.
    anchor_time = next((t for n, t, status in results
                        if n.startswith("TileLang") and status == "ok" and t), None)
    for name, t, status in results:
        cells = [label, str(b), str(s), str(h), str(k), str(kv.shape[1]), name]
        if t is None:
            lines.append(fmt_row(cells + ["-"] * 6 + [status, "-", str(sets)]))
            continue
        vs = f"{anchor_time / t:.2f}x" if anchor_time else "-"
        share = f"{100 * gathered / t / copy_bw:.0f}%" if copy_share_shown else "-"
        share_all = f"{100 * moved / t / copy_bw:.0f}%" if copy_share_shown else "-"
        target = "-"
        if shape_index in ISSUE_SHAPES and name.startswith("hisa.sparse_attn"):
            if label == "decode":
                target = decode_target(t, gathered, flops, copy_bw, anchor_time,
                                       anchor_expected)
            elif anchor_time:
                ok = anchor_time / t >= PREFILL_VS_TILELANG
                target = f"{PREFILL_VS_TILELANG}x {'✓' if ok else '✗'}"
            elif anchor_expected:
                target = f"{PREFILL_VS_TILELANG}x {NO_ANCHOR_TIME}"
        lines.append(fmt_row(cells + [
            f"{t * 1e3:.3f}", f"{flops / t / 1e12:.0f}",
            f"{100 * flops / t / gemm_rate:.0f}",
            f"{gathered / t / 1e9:.0f} ({share})", f"{moved / t / 1e9:.0f} ({share_all})",
            vs, status, target, str(sets)]))
    return errors


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


def sdpa_flash(q, k, v, causal):
    """torch's SDPA pinned to its flash backend (raises where that backend
    cannot run these inputs, instead of timing another one)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


def dense_rows(lines, gemm_rate, variants=False):
    """hisa.flash_attn against torch's scaled_dot_product_attention at B=1,
    H=32, S=8192, D=128: FLOPs 4*B*H*S*S*D (half causal). SDPA twice: its
    flash backend pinned, and torch's own choice (cuDNN's attention on the
    H200, about twice as fast: GPU run of 2026-12-05); "vs SDPA" is
    against the faster of the two. The reference of the checks is SDPA with
    torch's own choice."""
    F = torch.nn.functional
    lines += ["", "torch SDPA: once pinned to SDPBackend.FLASH_ATTENTION "
                  "(torch.nn.attention.sdpa_kernel), once with torch's own backend choice; "
                  "vs SDPA: against the faster SDPA row; "
                  "(PDL off): hisa without programmatic dependent launch.",
              "", fmt_row(["dense attention", "causal", "impl", "time (ms)", "TFLOP/s",
                           "% of bf16 cuBLAS", "vs SDPA", "check"]),
              fmt_row(["---", "---", "---"] + ["---:"] * 4 + [":---:"])]
    errors = 0
    b, h, s, d = 1, 32, 8192, 128
    q, k, v = (torch.randn(b, h, s, d, device="cuda").bfloat16() for _ in range(3))
    for causal in (True, False):
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        flash = lambda: hisa.flash_attn(q, k, v, causal=causal)
        impls = [("torch SDPA (flash backend)", lambda: sdpa_flash(q, k, v, causal)),
                 ("torch SDPA (torch's choice)",
                  lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)),
                 ("hisa.flash_attn", flash),
                 ("hisa.flash_attn (PDL off)", without_pdl(flash))]
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
        sdpa_times = [t for _, t, _ in results[:2] if t is not None]
        sdpa = min(sdpa_times) if sdpa_times else None
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
