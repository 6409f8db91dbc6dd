#!/usr/bin/env python3
"""Two runtime libraries (two builds of hisa) timed against each other on
the same shapes: prefill sparse attention (the issue's three shapes),
decode sparse attention (the issue's B = 128 shapes and the split ones),
top-k, hisa_indexer at M = N = 32768 and (group indexer131072) 131072. One
library per
process (each loads its own HISA_RUNTIME_LIB, with its own JIT cache
directory); the processes alternate A, B, A, B ... for --rounds rounds
with the same seeded inputs, and the table shows each shape's median over
the rounds and B / A. Each child checks that its outputs are finite and
that its top-k selects the exact values of torch.topk, so a broken build
does not pass as a fast one; the indexer's selections (as sets per row)
must be the same in every variant.

    PYTHONPATH=python python3 python/bench/probes/library_ab.py \\
        --lib A.so --lib B.so [--rounds 3] [--only decode,topk,indexer]

More than two variants are timed against the first; a variant may add to
its process's environment (LIB,NAME=VALUE,...), e.g. a stand-in ptxas
that edits one kernel's PTX: --lib A.so --lib A.so,HISA_PTXAS=$PWD/x.sh
(give the script an absolute path).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))

# (group, label, builder args)
CASES = [
    ("prefill", "sparse_attn S=4096 H=64 K=640", (1, 4096, 64, 640)),
    ("prefill", "sparse_attn S=8192 H=128 K=1152", (1, 8192, 128, 1152)),
    ("prefill", "sparse_attn S=4096 H=128 K=2048", (1, 4096, 128, 2048)),
    ("decode", "sparse_attn B=128 S=1 H=64 K=640", (128, 1, 64, 640)),
    ("decode", "sparse_attn B=128 S=2 H=64 K=640", (128, 2, 64, 640)),
    ("decode", "sparse_attn B=128 S=1 H=128 K=640", (128, 1, 128, 640)),
    ("decode", "sparse_attn B=128 S=2 H=128 K=640", (128, 2, 128, 640)),
    ("decode", "sparse_attn B=1 S=1 H=64 K=640", (1, 1, 64, 640)),
    ("decode", "sparse_attn B=16 S=1 H=128 K=1152", (16, 1, 128, 1152)),
    ("topk", "topk [32768, 8192] k=2048", (32768, 8192, 2048)),
    ("topk", "topk [32768, 1024] k=64", (32768, 1024, 64)),
    ("topk", "topk [64, 16384] k=2048", (64, 16384, 2048)),
    ("indexer", "hisa_indexer M=N=32768", (32768,)),
    ("indexer131072", "hisa_indexer M=N=131072", (131072,)),
]


def child(groups):
    sys.path.insert(0, os.path.join(here, "..", ".."))
    sys.path.insert(0, os.path.join(here, ".."))
    import torch
    import hisa
    from bench_mqa import bench
    import bench_indexer
    import bench_sparse_attn as bsa

    results = {}
    checks = {}
    for group, label, args in CASES:
        if group not in groups:
            continue
        torch.manual_seed(1234)
        if group == "decode":
            b, s, h, k = args
            # One kv cache (B x 65536 rows: 8 GiB at B = 128), 8 (q, idx)
            # sets rotated over so that the gathered rows exceed L2.
            q, kv, sink, idx = bsa.make_inputs(b, s, h, k, 65536)
            sets = [(q, kv, sink, idx)]
            for _ in range(7):
                q = torch.randn_like(q)
                sets.append((q, kv, sink, bsa.make_indices(b, s, k, 65536)))
            calls = [lambda q=q, kv=kv, sink=sink, idx=idx:
                     hisa.sparse_attn(q, kv, sink, idx, bsa.SCALE) for q, kv, sink, idx in sets]
            out = calls[0]()
            assert torch.isfinite(out.float()).all(), label
            fn = bsa.rotate(calls)
        elif group == "prefill":
            # Causal prefixes (kv of S rows, meant to sit in L2), as
            # bench_sparse_attn.py draws them.
            b, s, h, k = args
            q, kv, sink, idx = bsa.make_inputs(b, s, h, k, None)
            fn = lambda q=q, kv=kv, sink=sink, idx=idx: hisa.sparse_attn(  # noqa: E731
                q, kv, sink, idx, bsa.SCALE)
            # (A variant wrong on purpose, an ablation's upper bound, says so
            # with HISA_AB_UNCHECKED=1 and is timed without the check.)
            result = fn()
            if os.environ.get("HISA_AB_UNCHECKED") != "1":
                assert torch.isfinite(result.float()).all(), label
        elif group == "topk":
            rows, cols, k = args
            x = torch.randn(rows, cols, device="cuda")
            idx = hisa.topk(x, k)
            ref = torch.topk(x, k, dim=-1).values.sort(dim=-1).values
            got = x.gather(1, idx.long()).sort(dim=-1).values
            assert torch.equal(ref, got), label
            fn = lambda x=x, k=k: hisa.topk(x, k)  # noqa: E731
        else:
            (n,) = args
            q, k, k_scale, weights, ks, ke = bench_indexer.inputs(n)
            fn = lambda: hisa.hisa_indexer(q, k, k_scale, weights, ks, ke,  # noqa: E731
                                           k_block_size=128, block_topk=64, topk_tokens=2048)
            # The selection as a set per row, to compare across variants
            # (an edit that must not change results, e.g. cache policies).
            chosen = fn().sort(dim=1).values.long()
            weight = torch.arange(1, chosen.shape[1] + 1, device=chosen.device)
            checks[label] = int((chosen * weight).sum().item())
            del chosen
        results[label] = bench(fn, reps=15, batch=10)
        del fn
        torch.cuda.empty_cache()
    print("CHECK " + json.dumps(checks))
    print("RESULT " + json.dumps(results))


def parse_variant(spec):
    """LIB or LIB,NAME=VALUE,...: the library and the environment its child
    process runs with besides (e.g. HISA_PTXAS=probes/ptxas_*.sh for a
    PTX-level ablation of one library)."""
    lib, *assignments = spec.split(",")
    extra = {}
    for assignment in assignments:
        name, sep, value = assignment.partition("=")
        if not sep or not name:
            raise ValueError(f"--lib {spec}: expected NAME=VALUE after the library, got "
                             f"'{assignment}'")
        extra[name] = value
    return lib, extra


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lib", action="append", required=True,
                        help="runtime library, optionally ,NAME=VALUE,... for its "
                             "process's environment (two or more)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="prefill,decode,topk,indexer")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    groups = set(args.only.split(","))
    if args.child:
        child(groups)
        return 0
    if len(args.lib) < 2:
        parser.error("--lib: give at least two libraries (or one library twice, with "
                     "different environments)")
    try:
        variants = [parse_variant(spec) for spec in args.lib]
    except ValueError as error:
        parser.error(str(error))
    times = {which: {} for which in range(len(variants))}
    checks = {}
    for round_index in range(args.rounds):
        for which, (lib, extra) in enumerate(variants):
            env = dict(os.environ, HISA_RUNTIME_LIB=lib,
                       HISA_CACHE_DIR=os.environ.get("HISA_CACHE_DIR", "/tmp/hisa-ab") + f"-{which}",
                       **extra)
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child",
                                   "--lib", lib, "--only", args.only],
                                  env=env, capture_output=True, text=True)
            lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
            if proc.returncode != 0 or not lines:
                sys.stderr.write(f"library {args.lib[which]} round {round_index}: failed\n"
                                 f"{proc.stderr[-3000:]}\n")
                return 1
            for line in proc.stdout.splitlines():
                if not line.startswith("CHECK "):
                    continue
                for label, value in json.loads(line[len("CHECK "):]).items():
                    first = checks.setdefault(label, (value, args.lib[which]))
                    if first[0] != value:
                        sys.stderr.write(f"{label}: library {args.lib[which]} selected other "
                                         f"indices than {first[1]}\n")
                        return 1
            for label, seconds in json.loads(lines[-1][len("RESULT "):]).items():
                times[which].setdefault(label, []).append(seconds)
    names = [chr(ord("A") + which) for which in range(len(variants))]
    print("| case | A (us) | " + " | ".join(f"{n} (us) | {n} / A" for n in names[1:])
          + f" |  (median of {args.rounds} alternating rounds; "
          + ", ".join(f"{n} = {spec}" for n, spec in zip(names, args.lib)) + ")")
    print("| --- | ---: |" + " ---: | ---: |" * (len(names) - 1))
    for label in times[0]:
        a = statistics.median(times[0][label])
        cells = []
        for which in range(1, len(variants)):
            b = statistics.median(times[which][label])
            cells.append(f"{b * 1e6:.1f} | {b / a:.3f}")
        print(f"| {label} | {a * 1e6:.1f} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
