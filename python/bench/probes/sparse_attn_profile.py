#!/usr/bin/env python3
"""Launches one sparse_attn kernel variant a few times on the first prefill
shape of bench_sparse_attn.py (S = 4096, H = 64, K = 640), or on a decode
shape (B S H K Nkv given), for a profiler (ncu --kernel-name ...) to look at.

    PYTHONPATH=python python3 python/bench/probes/sparse_attn_profile.py sparse_attn_wg
    PYTHONPATH=python python3 python/bench/probes/sparse_attn_profile.py sparse_attn_ws 128 1 64 640 65536
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from bench_sparse_attn import kernel_variant, make_inputs  # noqa: E402


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "sparse_attn_wg"
    b, s, h, k, nkv = (int(a) for a in sys.argv[2:7]) if len(sys.argv) > 6 \
        else (1, 4096, 64, 640, None)
    q, kv, sink, idx = make_inputs(b, s, h, k, nkv)
    extra = {"topk_pad": -(-k // 128) * 128} if name == "sparse_attn_wg" else None
    if name == "sparse_attn_ws":
        extra = {"partial_sums": 1}
    call = kernel_variant(q, kv, sink, idx, name, extra)
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    print(f"{name}: launched")


if __name__ == "__main__":
    main()
