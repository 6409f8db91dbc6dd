#!/usr/bin/env python3
"""What bounds decode sparse attention: the operator timed on the issue's
decode shapes (B = 128, Nkv = 65536, K = 640) with the same kernel and
different index patterns, beside torch's gather of the same rows and the
device copy, all in one process.

The forty-sixth session measured that keeping more gathered bytes in flight
(32- or 16-row key tiles in 4 or 8 stages) or asking the next tiles' rows
into L2 does not make decode faster (docs/performance.md), so the gathers'
latency is not what bounds it. These patterns split the time:

  uniform  indices uniform over the cache, ~2% -1 (the benchmark's), calls
           rotating over sets that gather more than 3x L2
  sorted   the same indices sorted within each token (DRAM page locality,
           same bytes)
  l2       indices uniform over rows [0, 256) of each batch: 128 x 256 KiB
           = 32 MiB, served from L2 after the first call
  none     every index -1: no row is read (the gemms and the softmax still
           run): the compute and pipeline floor

plus "torch gather": kv.index_select of the uniform pattern's valid rows
(a generic kernel's random 1 KiB reads). Outputs of uniform, sorted and l2
are checked against f32 torch first, none's against zeros. The operator's
kernel with its key loop reduced to the gathers is
probes/sparse_attn_gather_only.mlir (sparse_attn_wg_ab.py --kernel
sparse_attn_ws --ablation --decode).

    PYTHONPATH=python python3 python/bench/probes/decode_floor.py
"""

from __future__ import annotations

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))

import torch  # noqa: E402

import hisa  # noqa: E402
from bench_memory_bound import Timer, copy_bandwidth, l2_bytes  # noqa: E402
from bench_mqa import bench  # noqa: E402
from bench_sparse_attn import D, SCALE, check, make_indices, make_inputs, rotation_sets  # noqa: E402

NKV, K = 65536, 640
SHAPES = [(128, 1, 64), (128, 2, 64), (128, 1, 128), (128, 2, 128)]


def patterns(b, s, k, idx_sets):
    """name -> list of [B, S, K] int32 index sets."""
    sorted_sets = []
    for idx in idx_sets:
        # -1 sorts first; the kernel masks it wherever it sits.
        sorted_sets.append(torch.sort(idx, dim=-1).values.contiguous())
    small = torch.randint(0, 256, (b, s, k), device="cuda").int()
    none = torch.full((b, s, k), -1, dtype=torch.int32, device="cuda")
    return {"uniform": idx_sets, "sorted": sorted_sets, "l2": [small], "none": [none]}


def main():
    if not torch.cuda.is_available():
        print("decode_floor: no CUDA GPU", file=sys.stderr)
        return 1
    timer = Timer()
    t_copy, copy_bytes = copy_bandwidth(timer, 1.0, 5)
    copy = copy_bytes / t_copy
    print(f"device copy: {copy / 1e9:.0f} GB/s; L2 {l2_bytes() / 2**20:.0f} MiB")
    rows = ["| shape | pattern | time (us) | valid rows | GB/s (valid rows) | % of copy |",
            "| --- | --- | ---: | ---: | ---: | ---: |"]
    failed = False
    for b, s, h in SHAPES:
        q, kv, sink, idx = make_inputs(b, s, h, K, NKV)
        sets = rotation_sets("decode", b, s, K, l2_bytes())
        idx_sets = [idx] + [make_indices(b, s, K, NKV) for _ in range(sets - 1)]
        for name, chosen in patterns(b, s, K, idx_sets).items():
            # Check the first set's output before timing.
            o = hisa.sparse_attn(q, kv, sink, chosen[0], SCALE)
            if name == "none":
                ok = bool((o == 0).all())
            else:
                ok = check(q, kv, sink, chosen[0], o) < 1e-2
            if not ok:
                print(f"decode_floor: B={b} S={s} H={h} {name}: wrong output",
                      file=sys.stderr)
                failed = True
                continue
            turn = [0]

            def call(chosen=chosen, turn=turn):
                turn[0] = (turn[0] + 1) % len(chosen)
                hisa.sparse_attn(q, kv, sink, chosen[turn[0]], SCALE)

            t = bench(call, reps=10, batch=len(chosen) * max(1, 8 // len(chosen)))
            valid = int((chosen[0] >= 0).sum())
            rate = valid * D * 2 / t
            rows.append(f"| B={b} S={s} H={h} | {name} | {t * 1e6:.1f} | {valid} | "
                        f"{rate / 1e9:.0f} | {100 * rate / copy:.0f}% |")
        # torch's gather of the uniform pattern's valid rows (one set).
        flat = kv.reshape(-1, D)
        base = (torch.arange(b, device="cuda") * NKV)[:, None, None]
        valid_rows = [(i + base)[i >= 0].long() for i in idx_sets]
        turn = [0]

        def gather(turn=turn):
            turn[0] = (turn[0] + 1) % len(valid_rows)
            flat.index_select(0, valid_rows[turn[0]])

        t = bench(gather, reps=10, batch=len(valid_rows) * max(1, 8 // len(valid_rows)))
        n = valid_rows[0].numel()
        rate = n * D * 2 / t
        rows.append(f"| B={b} S={s} H={h} | torch gather (index_select) | {t * 1e6:.1f} | "
                    f"{n} | {rate / 1e9:.0f} | {100 * rate / copy:.0f}% |")
    print("\n".join(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
