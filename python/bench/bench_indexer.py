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

Before timing, every output is checked (check_* below): on every row the
index rules (offsets in [0, ke - ks), distinct, as many valid as
KERNELS.md says: -1 only where fewer than topk_tokens rows are selectable),
and on ~64 sampled rows the selection against f64 torch logits up to ties
(hisa_indexer: the candidates are the rows of the blocks stage 1 selects up
to near-ties of the pooled logits, from hisa's own pooled keys, which
bench_memory_bound checks; stage 2 alone: the rows of its given blocks;
flat_indexer: the whole window); with TileLang, hisa returning < 95% of
TileLang's indices is a warning (a note under the table), < 90% an error.
A failure (a check, a TileLang run or anchor load, a size or table that
raises, a host-time sample) is named on stderr and in the table and makes
the exit status 1; the rows measured before a late error are still
printed. "(PDL off)" rows time hisa with programmatic dependent launch off
(hisa.set_programmatic_launch(False)), as TileLang launches.

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
from bench_memory_bound import Timer, describe, emit_table, release  # noqa: E402
from bench_mqa import (  # noqa: E402
    bench, causal_windows, fp8, fp8_gemm_ceiling, mqa_reference, sample_rows, without_pdl)

HEADS, DIM, KB, BLOCK_TOPK, TOPK_TOKENS = 64, 128, 128, 64, 2048
# Of TileLang's indices hisa must also return (the two differ at near-ties
# only; 96.95% measured at 131072 on unseeded inputs): below WARN_AGREEMENT a
# warning note, below MIN_AGREEMENT an error.
WARN_AGREEMENT, MIN_AGREEMENT = 0.95, 0.90


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


def same_sets(a, b, chunk=4096):
    """Whether two [M, k] selections hold the same entries per row (in any
    order)."""
    if a.shape != b.shape:
        return False
    return all(torch.equal(a[r:r + chunk].sort(1).values, b[r:r + chunk].sort(1).values)
               for r in range(0, a.shape[0], chunk))


def fmt(cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"


# ---- Checks of the selections (KERNELS.md "HISA", "Top-k, exactly") ---------------
#
# A kernel's logits differ from the exact ones by up to ~3e-4 of sum |terms|
# (fp8 wgmma accumulation); mqa_reference bounds each by tol = 1e-3 of it.
# So a selection is right "up to ties" when no candidate left out could have
# a kernel logit above a chosen one: max(P - tol) over the candidates left
# out <= min(P + tol) over the chosen.


def stage1_valid_blocks(ks, ke, kb, block_topk):
    """[M] blocks stage 1 selects per row: min(block_topk, blocks in the window)."""
    bks = torch.div(ks.long(), kb, rounding_mode="floor")
    bke = torch.div(ke.long() + kb - 1, kb, rounding_mode="floor")
    return torch.minimum((bke - bks).clamp_min(0), torch.full_like(bks, block_topk))


def hisa_expected_valid(ks, ke, kb, block_topk, topk):
    """[M] valid offsets per row of hisa_indexer (KERNELS.md: min(topk_tokens,
    rows inside the selected blocks)): the whole window when it spans at
    most block_topk blocks, else the window's rows in its first and last
    block (always selected) and block_topk - 2 whole blocks between (with
    block_topk = 1, the tie of the two +inf edge blocks goes to the first)."""
    ks, ke = ks.long(), ke.long()
    window = (ke - ks).clamp_min(0)
    bks = torch.div(ks, kb, rounding_mode="floor")
    bke = torch.div(ke + kb - 1, kb, rounding_mode="floor")
    first = torch.minimum(ke, (bks + 1) * kb) - ks
    last = ke - (bke - 1) * kb
    if block_topk >= 2:
        partial = first + last + (block_topk - 2) * kb
    else:
        partial = first
    avail = torch.where(bke - bks <= block_topk, window, partial)
    return torch.minimum(avail, torch.full_like(avail, topk))


def check_index_rules(idx, ks, ke, expected, chunk=4096):
    """Failures (strings) of the rules every row of an indexer output must
    follow: entries in [0, ke - ks) or -1, distinct, and expected[m] of them
    valid (-1 only where fewer than topk_tokens rows can be selected)."""
    failures = []
    window = (ke.long() - ks.long()).clamp_min(0)
    for r0 in range(0, idx.shape[0], chunk):
        x = idx[r0:r0 + chunk].long()
        w = window[r0:r0 + chunk, None]
        out_of_range = ((x < -1) | (x >= w)).any(1)
        count = (x >= 0).sum(1)
        wrong_count = count != expected[r0:r0 + chunk]
        xs = x.sort(1).values
        duplicate = ((xs[:, 1:] == xs[:, :-1]) & (xs[:, 1:] >= 0)).any(1)
        for what, bad in (("an entry outside [-1, ke - ks)", out_of_range),
                          ("a repeated entry", duplicate)):
            if bool(bad.any()):
                row = r0 + int(bad.nonzero()[0, 0])
                failures.append(f"row {row} (window {int(window[row])}): {what}; "
                                f"{int(bad.sum())} such rows in rows {r0}-{r0 + x.shape[0] - 1}")
        if bool(wrong_count.any()):
            row = int(wrong_count.nonzero()[0, 0])
            failures.append(f"row {r0 + row} (window {int(window[r0 + row])}): {int(count[row])} "
                            f"valid entries, expected {int(expected[r0 + row])}; "
                            f"{int(wrong_count.sum())} such rows in rows {r0}-{r0 + x.shape[0] - 1}")
        if len(failures) >= 8:
            break
    return failures


def check_row_selection(row, ref, tol, chosen, certain, possible, topk):
    """A failure string, or None: `chosen` [W] bool (the row's selected
    window rows) against the reference logits `ref` / `tol` [W]; the
    candidates are `certain` rows (in the candidate set whatever the ties
    of an earlier stage) and `possible` rows (may be in it)."""
    if bool((chosen & ~possible).any()):
        j = int((chosen & ~possible).nonzero()[0, 0])
        return f"row {row}: offset {j} is in a block that stage 1 cannot have selected"
    if not bool(chosen.any()):
        return None
    low = (ref + tol)[chosen].min()
    left_out = certain & ~chosen
    if not bool(left_out.any()):
        return None
    if int(chosen.sum()) < topk:
        j = int(left_out.nonzero()[0, 0])
        return (f"row {row}: {int(chosen.sum())} < {topk} rows chosen but candidate offset {j} "
                "left out")
    high, j = (ref - tol).masked_fill(~left_out, float("-inf")).max(0)
    if float(high) > float(low):
        c = int(((ref + tol).masked_fill(~chosen, float("inf"))).argmin())
        return (f"row {row}: offset {int(j)} (logit {float(ref[j]):.6g}) left out while offset {c} "
                f"(logit {float(ref[c]):.6g}) chosen; tolerance {float(tol[j]):.2g} / "
                f"{float(tol[c]):.2g}")
    return None


def stage1_block_sets(q_row, blocked_k, blocked_scale, w_row, bks, bke, block_topk):
    """(certain, possible) [bke - bks] bool: the window's blocks stage 1
    selects whatever its logits' rounding (within mqa_reference's tol), and
    those it may select. The first and last block are +inf (always)."""
    nblk = bke - bks
    if nblk <= block_topk:
        everything = torch.ones(nblk, dtype=torch.bool, device=blocked_k.device)
        return everything, everything
    ref, tol = mqa_reference(q_row, blocked_k[bks:bke], blocked_scale[bks:bke], w_row)
    ref[0] = ref[-1] = float("inf")
    tol[0] = tol[-1] = 0.0
    hi, lo = ref + tol, ref - tol
    # Block c can outrank b when hi[c] >= lo[b] (b itself counts: -1);
    # it surely outranks b when lo[c] > hi[b].
    can_beat = (hi[None, :] >= lo[:, None]).sum(1) - 1
    surely_beat = (lo[None, :] > hi[:, None]).sum(1)
    return can_beat < block_topk, surely_beat < block_topk


def check_selection(idx, q, k, k_scale, weights, ks, ke, topk, rows, kb=None, block_topk=None,
                    pooled=None, blocks=None):
    """Failures (strings) of an indexer's selection on the sampled `rows`,
    against f64 torch logits of the window's rows: hisa_indexer (kb,
    block_topk and the pooled keys `pooled` = (blocked_k, blocked_scale)
    given; its candidates are the rows of the blocks stage 1 selects up to
    ties), stage 2 alone (`blocks`: its exact candidate blocks), or the flat
    indexer (neither: every row of the window)."""
    failures = []
    kd = k.float().double()
    bk = pooled[0].float().double() if pooled is not None else None
    for m in rows:
        s, e = int(ks[m]), int(ke[m])
        if e <= s:
            continue
        offsets = idx[m].long()
        offsets = offsets[(offsets >= 0) & (offsets < e - s)]
        chosen = torch.zeros(e - s, dtype=torch.bool, device=idx.device)
        chosen[offsets] = True
        ref, tol = mqa_reference(q[m], kd[s:e], k_scale[s:e], weights[m])
        if blocks is not None or pooled is not None:
            bks, bke = s // kb, -(-e // kb)
            block_of_row = torch.arange(s, e, device=idx.device) // kb - bks
            if blocks is not None:
                b = blocks[m].long()
                b = b[(b >= bks) & (b < bke)] - bks
                certain = torch.zeros(bke - bks, dtype=torch.bool, device=idx.device)
                certain[b] = True
                possible = certain
            else:
                certain, possible = stage1_block_sets(q[m], bk, pooled[1], weights[m], bks, bke,
                                                      block_topk)
            certain, possible = certain[block_of_row], possible[block_of_row]
        else:
            certain = possible = torch.ones(e - s, dtype=torch.bool, device=idx.device)
        failure = check_row_selection(m, ref, tol, chosen, certain, possible, topk)
        if failure:
            failures.append(failure)
    return failures


def check_blocks(blocks, q, blocked_k, blocked_scale, weights, ks, ke, kb, block_topk, rows):
    """Failures (strings) of stage 1's block selection on sampled rows: the
    count, distinct, and every certain block in, nothing impossible."""
    failures = []
    bk = blocked_k.float().double()
    for m in rows:
        bks, bke = int(ks[m]) // kb, -(-int(ke[m]) // kb)
        b = blocks[m].long()
        valid = b[b >= 0]
        want = min(block_topk, max(bke - bks, 0))
        if valid.numel() != want or valid.unique().numel() != valid.numel():
            failures.append(f"row {m}: {valid.numel()} block indices ({valid.unique().numel()} "
                            f"distinct), expected {want}")
            continue
        if want == 0:
            continue
        if bool(((valid < bks) | (valid >= bke)).any()):
            failures.append(f"row {m}: a block outside the window [{bks}, {bke})")
            continue
        certain, possible = stage1_block_sets(q[m], bk, blocked_scale, weights[m], bks, bke,
                                              block_topk)
        chosen = torch.zeros(bke - bks, dtype=torch.bool, device=blocks.device)
        chosen[valid - bks] = True
        if bool((certain & ~chosen).any()) or bool((chosen & ~possible).any()):
            failures.append(f"row {m}: block selection differs from the top {block_topk} "
                            "beyond near-ties")
    return failures


def check_rows(n):
    """About 64 sampled query rows of an M = N = n causal sequence: spread
    rows and the edges (windows shorter than topk_tokens, one block, the
    stage-1 limit of block_topk blocks)."""
    special = {0, 1, 2, KB - 1, KB, KB + 1, TOPK_TOKENS - 2, TOPK_TOKENS - 1, TOPK_TOKENS,
               BLOCK_TOPK * KB - 1, BLOCK_TOPK * KB, BLOCK_TOPK * KB + 1, n - 2, n - 1}
    return sorted((set(sample_rows(n, 50)) | special) & set(range(n)))


def load_anchors(directory):
    """({name: module or None} of TileLang's hisa, fp8_lighting_indexer and
    topk_selector under `directory`, [one note per module that failed to
    load]), each loaded on its own so that one failure keeps the others."""
    modules, notes = {}, []
    for key, sub, name in (("hisa", "dsa_hisa", "hisa"),
                           ("flat", "deepseek_v32", "fp8_lighting_indexer"),
                           ("topk", "deepseek_v32", "topk_selector")):
        modules[key] = None
        if not directory:
            continue
        try:
            modules[key] = load(directory, sub, name)
        except Exception as exc:  # an error of the run, named in the table
            traceback.print_exc()
            notes.append(f"TileLang anchors failed to load: {sub}/{name}.py: {describe(exc)}")
    return modules, notes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out")
    parser.add_argument("--anchors")
    parser.add_argument("--sizes", default="32768,131072")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench_indexer: no CUDA GPU", file=sys.stderr)
        return 2
    anchors, load_notes = load_anchors(args.anchors)
    lines, failures = [], []
    # Whatever raises below, the rows measured so far are printed (finally).
    try:
        measure(args, anchors, load_notes, lines, failures)
    except Exception as exc:
        traceback.print_exc()
        failures.append(f"run aborted: {describe(exc)}")
        lines += ["", f"**Run aborted: {describe(exc)}**; the rows above it, if any, were "
                      "measured before it."]
    finally:
        for failure in failures:
            print(f"bench_indexer: FAILED {failure}", file=sys.stderr)
        status = emit_table(lines, args.out, len(failures))
    return status


def measure(args, anchors, load_notes, lines, failures):
    """The ceiling, then the tables, appended to lines as they are measured;
    failures (strings) appended to failures. A section (or a size of the
    first table) that raises is named in the table and the next one runs."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    _, fp8_rate = fp8_gemm_ceiling(8192)
    torch.cuda.empty_cache()
    lines += [
        f"# HISA indexer on {props.name}",
        "",
        f"torch {torch.__version__}; hisa {hisa.version()}; fp8 cuBLAS 8192^3 "
        f"{fp8_rate / 1e12:.0f} TFLOP/s (the ceiling; torch._scaled_mm with bf16 output, f32 in "
        f"earlier tables). H={HEADS}, D={DIM}, kb={KB}, "
        f"block_topk={BLOCK_TOPK}, topk_tokens={TOPK_TOKENS}, one causal sequence, "
        "M = N. Median of 10 batches of 10 calls (CUDA events). Stage-2 TFLOP/s: "
        "2*M*block_topk*kb*H*D (as in earlier tables: every query's block_topk slots, also "
        "those windows shorter than block_topk blocks leave empty, which hisa's stage 2 "
        "computed until the thirty-fourth session and now skips); useful stage-2 TFLOP/s: "
        "2*H*D*kb*sum_m min(block_topk, blocks in m's window), what hisa now executes. \"(PDL off)\": hisa's kernels "
        "launched without programmatic dependent launch, as TileLang's are. check: the index "
        "rules on every row (offsets in [0, ke - ks), distinct, -1 only where fewer than "
        "topk_tokens rows are selectable) and, on ~64 sampled rows, the selection against f64 "
        "torch logits up to ties; with TileLang, agreement below "
        f"{WARN_AGREEMENT:.0%} is a warning (a note below the table) and below "
        f"{MIN_AGREEMENT:.0%} an error (earlier tables: below 95% an error).",
    ]
    for note in load_notes:
        lines += ["", f"**{note}**: its TileLang rows are missing."]
        failures.append(note)
    if not args.anchors:
        lines += ["", "No --anchors: no TileLang rows."]
    sections = [
        ("hisa_indexer table", lambda: hisa_indexer_rows(args, anchors["hisa"], fp8_rate, lines,
                                                         failures)),
        ("flat indexer table", lambda: flat_indexer_rows(anchors, fp8_rate, lines, failures)),
        ("host time table", lambda: host_time_rows(lines, failures)),
        ("recall table", lambda: recall_rows(lines)),
    ]
    for name, section in sections:
        try:
            section()
        except Exception as exc:  # named in the table; the next section runs
            traceback.print_exc()
            failures.append(f"{name}: raised {describe(exc)}")
            lines += ["", f"**{name}: error: {describe(exc)}**; its remaining rows were not "
                          "measured."]
        release()


def record(failures, case, bad):
    """Appends a check's failures (strings) to failures, each after `case`;
    returns the check cell."""
    failures.extend(f"{case}: {b}" for b in bad)
    return "**MISMATCH**" if bad else "ok"


def hisa_indexer_rows(args, anchor, fp8_rate, lines, failures):
    """hisa_indexer, its three kernels and TileLang's hisa_indexer per size;
    a size that raises gives an error row and the next size runs."""
    lines += [
        "",
        fmt(["M = N", "impl", "time (ms)", "stage-2 TFLOP/s", "% of fp8 cuBLAS",
             "vs TileLang", "extra memory (MiB)", "agreement with TileLang",
             "useful stage-2 TFLOP/s", "check"]),
        fmt(["---", "---"] + ["---:"] * 7 + [":---:"]),
    ]
    warnings = []
    for n in (int(s) for s in args.sizes.split(",")):
        try:
            hisa_indexer_size(n, anchor, fp8_rate, lines, failures, warnings)
        except Exception as exc:  # this size's row says why
            traceback.print_exc()
            failures.append(f"hisa_indexer M=N={n}: raised {describe(exc)}")
            lines.append(fmt([n, "hisa.hisa_indexer", "-", "-", "-", "-", "-", "-", "-",
                              f"error: {describe(exc, 80)}"]))
        release()
    if warnings:
        lines += [""] + warnings


def hisa_indexer_size(n, anchor, fp8_rate, lines, failures, warnings):
    """The rows of one size of the hisa_indexer table."""
    q, k, k_scale, weights, ks, ke = inputs(n)
    flops = 2 * n * BLOCK_TOPK * KB * HEADS * DIM
    useful = 2 * HEADS * DIM * KB * int(stage1_valid_blocks(ks, ke, KB, BLOCK_TOPK).sum())
    out_bytes = n * TOPK_TOKENS * 4
    rows = check_rows(n)
    expected = hisa_expected_valid(ks, ke, KB, BLOCK_TOPK, TOPK_TOKENS)
    call = lambda: hisa.hisa_indexer(q, k, k_scale, weights, ks, ke, k_block_size=KB,
                                     block_topk=BLOCK_TOPK, topk_tokens=TOPK_TOKENS)
    ours = call()
    torch.cuda.synchronize()
    # Its kernels one by one (the pooled keys are also the reference's).
    blocked_k, blocked_scale = hisa.fp8_block_mean_pooling(k, k_scale, KB)
    blocks = ops._pool_topk_blocks(q, blocked_k, blocked_scale, weights, ks, ke, BLOCK_TOPK, KB)
    tokens = ops._block_sparse_topk_tokens(q, k, k_scale, blocks, KB, weights, ks, ke,
                                           TOPK_TOKENS)
    torch.cuda.synchronize()
    status = record(failures, f"hisa_indexer M=N={n}",
                    check_index_rules(ours, ks, ke, expected)
                    + check_selection(ours, q, k, k_scale, weights, ks, ke, TOPK_TOKENS, rows,
                                      kb=KB, block_topk=BLOCK_TOPK,
                                      pooled=(blocked_k, blocked_scale)))
    stage1_status = record(failures, f"stage 1 (pool_topk_blocks) M=N={n}",
                           check_blocks(blocks, q, blocked_k, blocked_scale, weights, ks, ke,
                                        KB, BLOCK_TOPK, rows))
    stage2_status = record(failures, f"stage 2 (block_sparse_topk_tokens) M=N={n}",
                           check_index_rules(tokens, ks, ke, expected)
                           + check_selection(tokens, q, k, k_scale, weights, ks, ke,
                                             TOPK_TOKENS, rows, kb=KB, blocks=blocks))
    del tokens
    t_ours = bench(call)
    no_pdl = without_pdl(call)
    pdl_off_status = record(failures, f"hisa_indexer (PDL off) M=N={n}",
                            [] if same_sets(no_pdl(), ours)
                            else ["the selection differs from the one with PDL on"])
    t_no_pdl = bench(no_pdl)
    mem_ours = peak_extra(call, out_bytes)
    parts = [
        ("  pooling", lambda: hisa.fp8_block_mean_pooling(k, k_scale, KB), 0, 0, "-"),
        ("  stage 1 (pool logits + clean + top blocks)",
         lambda: ops._pool_topk_blocks(q, blocked_k, blocked_scale, weights, ks, ke, BLOCK_TOPK, KB),
         0, 0, stage1_status),
        ("  stage 2 (block-sparse logits + top tokens)",
         lambda: ops._block_sparse_topk_tokens(q, k, k_scale, blocks, KB, weights, ks, ke, TOPK_TOKENS),
         flops, useful, stage2_status),
    ]
    t_anchor = theirs = mem_anchor = anchor_error = None
    if anchor is not None:
        try:
            anchor_call = lambda: anchor.hisa_indexer(q, k, k_scale, weights, ks, ke, k_block_size=KB,
                                                      block_topk=BLOCK_TOPK, topk_tokens=TOPK_TOKENS)
            theirs = anchor_call()
            t_anchor = bench(anchor_call, reps=3, batch=2)
            mem_anchor = peak_extra(anchor_call, out_bytes)
        except Exception as exc:
            traceback.print_exc()
            failures.append(f"TileLang hisa_indexer M=N={n}: raised {describe(exc)}")
            anchor_error = describe(exc, 80)
            t_anchor = mem_anchor = None
    agree = "-"
    if theirs is not None:
        agreement = overlap(ours, theirs)
        agree = f"{agreement * 100:.2f}%"
        if agreement < MIN_AGREEMENT:
            failures.append(f"hisa_indexer M=N={n}: agreement with TileLang "
                            f"{agreement * 100:.2f}% < {MIN_AGREEMENT * 100:.0f}%")
            status = "**MISMATCH**"
        elif agreement < WARN_AGREEMENT:
            warning = (f"Warning: hisa_indexer M=N={n} returns {agreement * 100:.2f}% of "
                       f"TileLang's indices, below {WARN_AGREEMENT:.0%} (an error below "
                       f"{MIN_AGREEMENT:.0%}; the two differ at near-ties).")
            print(f"bench_indexer: {warning}", file=sys.stderr)
            warnings.append(warning)
            agree += " (warning)"
    lines.append(fmt([n, "hisa.hisa_indexer", f"{t_ours * 1e3:.2f}", f"{flops / t_ours / 1e12:.0f}",
                      f"{flops / t_ours / fp8_rate * 100:.0f}",
                      f"{t_anchor / t_ours:.2f}x" if t_anchor else "-",
                      f"{mem_ours / 2**20:.0f}", agree, f"{useful / t_ours / 1e12:.0f}", status]))
    lines.append(fmt([n, "hisa.hisa_indexer (PDL off)", f"{t_no_pdl * 1e3:.2f}",
                      f"{flops / t_no_pdl / 1e12:.0f}", f"{flops / t_no_pdl / fp8_rate * 100:.0f}",
                      f"{t_anchor / t_no_pdl:.2f}x" if t_anchor else "-", "-", "-",
                      f"{useful / t_no_pdl / 1e12:.0f}", pdl_off_status]))
    for name, fn, f, u, part_status in parts:
        t = bench(fn)
        lines.append(fmt([n, name, f"{t * 1e3:.2f}", f"{f / t / 1e12:.0f}" if f else "-",
                          f"{f / t / fp8_rate * 100:.0f}" if f else "-", "-", "-", "-",
                          f"{u / t / 1e12:.0f}" if u else "-", part_status]))
    if t_anchor:
        lines.append(fmt([n, "TileLang hisa_indexer", f"{t_anchor * 1e3:.2f}",
                          f"{flops / t_anchor / 1e12:.0f}", f"{flops / t_anchor / fp8_rate * 100:.0f}",
                          "1.00x", f"{mem_anchor / 2**20:.0f}", "-",
                          f"{useful / t_anchor / 1e12:.0f}", "-"]))
    elif anchor_error:
        lines.append(fmt([n, "TileLang hisa_indexer", "-", "-", "-", "-", "-", "-", "-",
                          f"error: {anchor_error}"]))


def flat_indexer_rows(anchors, fp8_rate, lines, failures):
    """hisa.flat_indexer against TileLang's flat logits + tl_topk at 32768."""
    n = 32768
    q, k, k_scale, weights, ks, ke = inputs(n)
    flat_flops = 2 * HEADS * DIM * n * (n + 1) // 2
    lines += ["", fmt(["flat indexer, M = N", "impl", "time (ms)", "logits TFLOP/s", "% of fp8 cuBLAS",
                       "vs anchor", "", "", "check"]), fmt(["---", "---"] + ["---:"] * 6 + [":---:"])]
    call = lambda: hisa.flat_indexer(q, k, k_scale, weights, ks, ke, TOPK_TOKENS)
    flat = call()
    torch.cuda.synchronize()
    window = (ke.long() - ks.long()).clamp_min(0)
    flat_status = record(failures, f"flat_indexer M=N={n}",
                         check_index_rules(flat, ks, ke, window.clamp(max=TOPK_TOKENS))
                         + check_selection(flat, q, k, k_scale, weights, ks, ke, TOPK_TOKENS,
                                           check_rows(n)))
    t_flat = bench(call, reps=5, batch=3)
    no_pdl = without_pdl(call)
    flat_pdl_off_status = record(failures, f"flat_indexer (PDL off) M=N={n}",
                                 [] if same_sets(no_pdl(), flat)
                                 else ["the selection differs from the one with PDL on"])
    t_flat_no_pdl = bench(no_pdl, reps=5, batch=3)
    del flat
    t_flat_anchor = None
    flat_anchor, topk_anchor = anchors["flat"], anchors["topk"]
    anchor_error = None
    if flat_anchor is not None and topk_anchor is not None:
        try:
            def anchor_flat():
                logits = flat_anchor.mqa_attn_return_logits_interface(q, k, k_scale, weights, ks, ke,
                                                                     clean_logits=True)
                return topk_anchor.tl_topk(logits, ks, ke, TOPK_TOKENS)
            t_flat_anchor = bench(anchor_flat, reps=3, batch=2)
        except Exception as exc:  # an error of the run
            traceback.print_exc()
            anchor_error = describe(exc, 80)
            failures.append(f"TileLang flat logits + tl_topk M=N={n}: raised {describe(exc)}")
    for name, t, flat_check in (("hisa.flat_indexer", t_flat, flat_status),
                                ("hisa.flat_indexer (PDL off)", t_flat_no_pdl, flat_pdl_off_status)):
        lines.append(fmt([n, name, f"{t * 1e3:.2f}", f"{flat_flops / t / 1e12:.0f}",
                          f"{flat_flops / t / fp8_rate * 100:.0f}",
                          f"{t_flat_anchor / t:.2f}x" if t_flat_anchor else "-", "", "", flat_check]))
    if t_flat_anchor:
        lines.append(fmt([n, "TileLang flat logits + tl_topk", f"{t_flat_anchor * 1e3:.2f}",
                          f"{flat_flops / t_flat_anchor / 1e12:.0f}",
                          f"{flat_flops / t_flat_anchor / fp8_rate * 100:.0f}", "1.00x", "", "", "-"]))
    elif anchor_error:
        lines.append(fmt([n, "TileLang flat logits + tl_topk", "-", "-", "-", "-", "", "",
                          f"error: {anchor_error}"]))


def host_time_rows(lines, failures):
    """Host time per call (the GPU work of these small calls overlaps); a
    call whose samples fail (e.g. Timer.host_time's RuntimeError when they
    outlast the sleeping kernel) gives an error row."""
    from hisa import _torch_cpp
    timer = Timer()
    q, k, k_scale, weights, ks, ke = inputs(1024)
    x = torch.randn(64, 1024, device="cuda")
    backend = _torch_cpp.backend()

    def ctypes_path(fn):
        """fn through the ctypes binding even where libhisa_torch.so is loaded."""
        def call(i):
            kernels, ops._CPP_KERNELS = ops._CPP_KERNELS, {}
            try:
                return fn(i)
            finally:
                ops._CPP_KERNELS = kernels
        return call

    topk_call = lambda i: hisa.topk(x, 64)  # noqa: E731
    indexer_call = lambda i: hisa.hisa_indexer(  # noqa: E731
        q, k, k_scale, weights, ks, ke, k_block_size=KB, block_topk=8, topk_tokens=256)
    path = "C++ kernel" if backend == "c++" else "ctypes"
    calls = [
        (f"hisa.topk([64, 1024], 64) ({path})", topk_call),
        (f"hisa.hisa_indexer(M = N = 1024) ({path})", indexer_call),
        ("torch.ops.hisa.hisa_indexer(M = N = 1024)",
         lambda i: torch.ops.hisa.hisa_indexer(q, k, k_scale, weights, ks, ke, KB, 8, 256)),
    ]
    def graphs_off(fn):
        """fn with the indexer's three launches issued one by one."""
        def call(i):
            previous = hisa.set_launch_graphs(False)
            try:
                return fn(i)
            finally:
                hisa.set_launch_graphs(previous)
        return call

    calls.append((f"hisa.hisa_indexer(M = N = 1024) ({path}, launch graphs off)",
                  graphs_off(indexer_call)))
    if backend == "c++":
        # The same calls through ctypes, for the difference (the swap of the
        # kernels' table adds ~0.1 us to these rows).
        calls += [("hisa.topk([64, 1024], 64) (ctypes)", ctypes_path(topk_call)),
                  ("hisa.hisa_indexer(M = N = 1024) (ctypes)", ctypes_path(indexer_call)),
                  ("hisa.hisa_indexer(M = N = 1024) (ctypes, launch graphs off)",
                   graphs_off(ctypes_path(indexer_call)))]
    calls.append(("torch.topk([64, 1024], 64) (for scale)", lambda i: torch.topk(x, 64)))
    lines += ["", "us/call: the minimum of 5 samples of 200 calls queued behind a sleeping kernel "
                  "(as before); median us/call: their median. torch.ops.hisa backend: "
                  f"{backend}.", "",
              fmt(["host time per Python call", "", "us/call", "median us/call", "", "", "", ""]),
              fmt(["---", "---", "---:", "---:", "", "", "", ""])]
    for name, fn in calls:
        try:
            for i in range(20):
                fn(i)
            median, best = timer.host_times(fn, 200)
            lines.append(fmt([name, "", f"{best * 1e6:.1f}", f"{median * 1e6:.1f}", "", "", "", ""]))
        except Exception as exc:  # this call's row says why; the next call runs
            traceback.print_exc()
            failures.append(f"host time of {name}: raised {describe(exc)}")
            lines.append(fmt([name, f"error: {describe(exc, 100)}", "-", "-", "", "", "", ""]))


def recall_rows(lines):
    """Recall of HISA against the flat indexer (reported, not asserted)."""
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


if __name__ == "__main__":
    sys.exit(main())
