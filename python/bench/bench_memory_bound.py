#!/usr/bin/env python3
"""Bandwidth of the memory-bound HISA operators against the H200's copy bandwidth.

Measured in one run, so that ratios are meaningful:
  * device-to-device copy of a >= 1 GiB buffer (torch), bytes read + written;
  * hisa.fp8_block_mean_pooling, N = 1,048,576 (D = 128, kb = 128),
    bytes = N*D + 4N + Nb*D + 4Nb (KERNELS.md 1.1), and its latency at N = 131072;
  * hisa.clean_and_maintain_logits_ on a causal single sequence, M = N = 131072,
    kb = 128 (Nn = 1024), bytes = 4 per position it must write (outside the
    window, plus the +inf edges) + 8 per row (reading s and e); also 16 packed
    ragged sequences.

Timing: CUDA events around a batch of back-to-back calls, after warm-up, with
the GPU held busy (torch.cuda._sleep) while the batch is queued so that host
overhead is not timed; the median over batches. Inputs rotate over several
sets whose total exceeds 3x the device's L2 (its size read from
torch.cuda.get_device_properties: 50 MiB on H100/H200), so every call reads
from HBM. The host columns are the Python + ctypes cost of one call (wall
clock, no sync): median and minimum of 5 samples of at least 20 calls
queued behind a sleeping kernel (a sample that outlasts the sleep is
retried with a longer one).

    PYTHONPATH=python python3 python/bench/bench_memory_bound.py --out table.md
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import statistics
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

import hisa  # noqa: E402

FP8 = torch.float8_e4m3fn


def l2_bytes() -> int:
    """The L2 cache size of the current CUDA device in bytes (50 MiB on
    H100 and H200), from torch's device properties; 50 MiB if torch does
    not report it."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 0) or 50 * 1024**2)


class Timer:
    """Median per-call GPU time of fn(i) over batches of back-to-back calls."""

    def __init__(self):
        self.cycles_per_s = None
        self.host_min = None  # the minimum host sample of the last run()

    def calibrate(self):
        """Clock of torch.cuda._sleep, measured after warm-up (clocks ramp up)."""
        if not hasattr(torch.cuda, "_sleep"):
            return
        best = 0.0
        for _ in range(3):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.cuda._sleep(5_000_000)
            end.record()
            end.synchronize()
            best = max(best, 5_000_000 / (start.elapsed_time(end) / 1e3))
        self.cycles_per_s = best

    def host_time(self, fn, calls: int) -> float:
        """Host seconds per call of fn(i), the calls queued behind a sleeping
        kernel so that no launch waits for the GPU (the launch queue fills
        when the GPU is the slower side). The sample must end before the
        sleep does (else the GPU ran the calls' work while they were being
        timed): a sample that outlasts it is retried with a sleep 4x longer,
        and one that outlasts a 3.2 s sleep raises RuntimeError."""
        torch.cuda.synchronize()
        if self.cycles_per_s is None:
            self.calibrate()
        sleep_s = 0.05
        while True:
            if self.cycles_per_s:
                torch.cuda._sleep(int(self.cycles_per_s * sleep_s))
            t0 = time.perf_counter()
            for i in range(calls):
                fn(i)
            elapsed = time.perf_counter() - t0
            torch.cuda.synchronize()
            if not self.cycles_per_s or elapsed < sleep_s:
                return elapsed / calls
            if sleep_s >= 3.2:
                raise RuntimeError(
                    f"host_time: {calls} calls took {elapsed * 1e3:.1f} ms, longer than the "
                    f"{sleep_s * 1e3:.0f} ms sleeping kernel they were queued behind")
            sleep_s *= 4

    def host_times(self, fn, calls: int, samples: int = 5) -> tuple[float, float]:
        """(median, minimum) over `samples` samples of host_time(fn, calls)."""
        times = [self.host_time(fn, calls) for _ in range(samples)]
        return statistics.median(times), min(times)

    def run(self, fn, inner: int, repeats: int, warmup: int = 3) -> tuple[float, float]:
        """(median GPU seconds per call, host seconds per call: the median of
        5 samples of max(inner, 20) calls; their minimum is kept in
        self.host_min)."""
        for i in range(warmup * inner):
            fn(i)
        host, self.host_min = self.host_times(fn, max(inner, 20))
        self.calibrate()
        times = []
        counter = 0
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if self.cycles_per_s:
                # Keep the GPU busy while the batch is queued (1.5x the host time + 0.5 ms).
                torch.cuda._sleep(int(self.cycles_per_s * (1.5 * host * inner + 5e-4)))
            start.record()
            for _ in range(inner):
                fn(counter)
                counter += 1
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3 / inner)
        return statistics.median(times), host


def random_fp8(n, d):
    x = torch.randn(n, d, device="cuda") * 2.0
    return x.clamp_(-448, 448).to(FP8)


def copy_bandwidth(timer, gib: float, repeats: int):
    size = int(gib * 1024**3)
    src = torch.empty(size, dtype=torch.uint8, device="cuda").fill_(7)
    dst = torch.empty_like(src)
    t, _ = timer.run(lambda i: dst.copy_(src), inner=4, repeats=repeats, warmup=2)
    return t, 2 * size


def pooling_case(timer, n, d, kb, repeats, inner):
    nb = (n + kb - 1) // kb
    per_set = n * d + 4 * n + nb * d + 4 * nb
    sets = max(2, -(-3 * l2_bytes() // per_set))  # total > 3x L2
    ks = [random_fp8(n, d) for _ in range(sets)]
    scales = [torch.rand(n, device="cuda") * 0.045 + 0.005 for _ in range(sets)]
    outs = [
        (torch.empty((nb, d), dtype=FP8, device="cuda"), torch.empty((nb,), device="cuda"))
        for _ in range(sets)
    ]

    # One correctness spot check before timing (KERNELS.md 1.1 tolerance).
    hisa.fp8_block_mean_pooling(ks[0], scales[0], kb, out=outs[0])
    x = ks[0].float() * scales[0][:, None]
    pad = torch.zeros(nb * kb, d, device="cuda")
    pad[:n] = x
    counts = torch.full((nb,), float(kb), device="cuda")
    counts[-1] = n - (nb - 1) * kb
    mean = pad.view(nb, kb, d).sum(1) / counts[:, None]
    deq = outs[0][0].float() * outs[0][1][:, None]
    ok = bool(torch.isclose(deq, mean, rtol=5e-2, atol=5e-3).all())

    def fn(i):
        j = i % sets
        hisa.fp8_block_mean_pooling(ks[j], scales[j], kb, out=outs[j])

    t, host = timer.run(fn, inner=inner, repeats=repeats)
    return t, per_set, (host, timer.host_min), ok, sets


def clean_windows(n, kb, num_seqs):
    """Block windows of num_seqs equal-ish causal sequences packed into n tokens."""
    bounds = torch.linspace(0, n, num_seqs + 1, device="cuda").round().long()
    lengths = bounds[1:] - bounds[:-1]
    starts = torch.repeat_interleave(bounds[:-1], lengths)
    ks = starts
    ke = torch.arange(n, device="cuda") + 1
    s = torch.div(ks, kb, rounding_mode="floor").int()
    e = torch.div(ke + kb - 1, kb, rounding_mode="floor").int()
    return s, e


def clean_bytes(s, e, nn):
    s64, e64 = s.long().clamp(0, nn), e.long().clamp(0, nn)
    width = (e64 - s64).clamp_min(0)
    edges = torch.where(width >= 2, 2, width)  # 0, 1 or 2 +inf writes
    positions = int((nn - width + edges).sum())
    return positions * 4 + 8 * s.numel()


def clean_case(timer, n, kb, num_seqs, repeats, inner):
    nn = (n + kb - 1) // kb
    s, e = clean_windows(n, kb, num_seqs)
    moved = clean_bytes(s, e, nn)
    per_set = n * nn * 4
    sets = max(2, -(-3 * l2_bytes() // per_set))
    logits = [torch.randn(n, nn, device="cuda") for _ in range(sets)]

    # Spot check (exact).
    col = torch.arange(nn, device="cuda")[None, :]
    expected = logits[0].clone()
    expected.masked_fill_((col < s.long()[:, None]) | (col >= e.long()[:, None]), float("-inf"))
    edge = ((col == s.long()[:, None]) | (col == e.long()[:, None] - 1)) & (s < e)[:, None]
    expected.masked_fill_(edge, float("inf"))
    hisa.clean_and_maintain_logits_(logits[0], s, e)
    ok = torch.equal(logits[0].view(torch.int32), expected.view(torch.int32))
    del expected, edge

    def fn(i):
        hisa.clean_and_maintain_logits_(logits[i % sets], s, e)

    t, host = timer.run(fn, inner=inner, repeats=repeats)
    return t, moved, (host, timer.host_min), ok, sets


def emit_table(lines, out_path, errors: int) -> int:
    """Print the markdown table, also write it to out_path when given, and
    return the benchmark's exit status (1 when a case had errors)."""
    table = "\n".join(lines) + "\n"
    print(table)
    if out_path:
        with open(out_path, "w") as f:
            f.write(table)
    return 1 if errors else 0


def load_anchor(directory, relative_path, module_name):
    """A kernel module of the anchors' tilelang_examples folder (TileLang on
    PYTHONPATH), loaded from its file with its folder importable."""
    path = os.path.join(directory, relative_path)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(path))
    spec.loader.exec_module(module)
    return module


def fmt_row(cells):
    return "| " + " | ".join(cells) + " |"


def describe(exc, width=120):
    """One line naming an exception for a table cell or note: its type and
    the first non-empty line of its message, cut to `width` characters
    ("|" escaped, so that it does not split a markdown cell)."""
    text = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text[:width].replace("|", "\\|")


def release():
    """gc.collect() and torch.cuda.empty_cache() (after an exception, its
    frames may hold tensors in reference cycles), ignoring a failure (after
    a CUDA error the context may refuse it; the next measurement then
    reports the error)."""
    try:
        gc.collect()
        torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001
        pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="also write the markdown table to this file")
    parser.add_argument("--copy-gib", type=float, default=2.0, help="copy buffer size (GiB, >= 1)")
    parser.add_argument("--repeats", type=int, default=25, help="timed batches per case")
    parser.add_argument("--quick", action="store_true", help="fewer repeats (smoke test)")
    args = parser.parse_args(argv)
    if args.copy_gib < 1:
        parser.error("--copy-gib must be >= 1")
    if not torch.cuda.is_available():
        print("bench_memory_bound: no CUDA GPU", file=sys.stderr)
        return 2
    repeats = 5 if args.quick else args.repeats
    try:
        runtime = f"{hisa.lib_path()} ({hisa.version()})"
    except hisa.HisaError as exc:
        print(f"bench_memory_bound: {exc}", file=sys.stderr)
        return 2

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    header = [
        f"# hisa memory-bound kernels on {props.name}",
        "",
        f"torch {torch.__version__}, {props.multi_processor_count} SMs, "
        f"{props.total_memory / 2**30:.0f} GiB; runtime {runtime}",
        "",
    ]
    timer = Timer()
    copy_t, copy_bytes = copy_bandwidth(timer, args.copy_gib, repeats)
    torch.cuda.empty_cache()
    copy_bw = copy_bytes / copy_t
    header.append(
        f"Device-to-device copy: {args.copy_gib:g} GiB buffer, {copy_bytes / 1e9:.2f} GB moved "
        f"(read + write) in {copy_t * 1e3:.3f} ms = **{copy_bw / 1e9:.0f} GB/s** (100% below)."
    )
    header.append("")
    header.append(
        f"L2 {l2_bytes() / 2**20:.0f} MiB (device properties): input sets rotate over > 3x that. "
        "host us/call: median of 5 samples of max(inner, 20) calls (earlier tables: one sample "
        "of `inner` calls); host min: their minimum.")
    header.append("")

    cols = ["op", "config", "bytes (MB)", "time (us)", "GB/s", "% of copy", "host us/call", "sets", "check",
            "host min us/call"]
    rows = [
        fmt_row(cols),
        fmt_row(["---"] * 2 + ["---:"] * 6 + [":---:", "---:"]),
        fmt_row(
            ["torch copy_", f"{args.copy_gib:g} GiB", f"{copy_bytes / 1e6:.1f}",
             f"{copy_t * 1e6:.1f}", f"{copy_bw / 1e9:.0f}", "100.0", "-", "1", "-", "-"]
        ),
    ]
    errors = 0
    cases = [
        ("fp8_block_mean_pooling", "N=1048576 D=128 kb=128",
         lambda: pooling_case(timer, 1048576, 128, 128, repeats, inner=20)),
        ("fp8_block_mean_pooling", "N=131072 D=128 kb=128 (latency)",
         lambda: pooling_case(timer, 131072, 128, 128, repeats, inner=50)),
        ("clean_and_maintain_logits_", "causal, 1 seq, M=N=131072 kb=128 Nn=1024",
         lambda: clean_case(timer, 131072, 128, 1, repeats, inner=20)),
        ("clean_and_maintain_logits_", "causal, 16 seqs, M=N=131072 kb=128 Nn=1024",
         lambda: clean_case(timer, 131072, 128, 16, repeats, inner=20)),
    ]
    for op, config, run in cases:
        try:
            t, moved, (host, host_min), ok, sets = run()
            bw = moved / t
            rows.append(fmt_row([
                op, config, f"{moved / 1e6:.1f}", f"{t * 1e6:.1f}", f"{bw / 1e9:.0f}",
                f"{100 * bw / copy_bw:.1f}", f"{host * 1e6:.1f}", str(sets),
                "ok" if ok else "**MISMATCH**", f"{host_min * 1e6:.1f}",
            ]))
            if not ok:
                print(f"bench_memory_bound: {op} {config}: output MISMATCH", file=sys.stderr)
            errors += 0 if ok else 1
            torch.cuda.empty_cache()
        except Exception as exc:  # keep benchmarking the other cases
            traceback.print_exc()
            message = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
            rows.append(fmt_row([op, config, "-", "-", "-", "-", "-", "-", f"error: {message}", "-"]))
            errors += 1
            torch.cuda.empty_cache()

    return emit_table(header + rows, args.out, errors)


if __name__ == "__main__":
    sys.exit(main())
