#!/usr/bin/env python3
"""Host time of torch's two ways of registering a custom op, on a stand-in
with hisa_indexer's signature (six tensors, three ints, one new output),
against calling the Python function directly: torch.library.custom_op
(what python/hisa/_torch_ops.py uses) and torch.library.Library.define +
impl (CompositeExplicitAutograd) + register_fake. The difference is what
torch.ops.hisa.* add to an eager call and to a compiled graph's call.
CUDA tensors when a GPU is present, else CPU (the dispatcher's cost is
mostly the same).

    python3 python/bench/probes/torch_op_dispatch.py
"""

import time

import torch
from torch import Tensor


def body(q: Tensor, k: Tensor, k_scale: Tensor, weights: Tensor, ks: Tensor, ke: Tensor,
         k_block_size: int, block_topk: int, topk_tokens: int) -> Tensor:
    return torch.empty((q.shape[0], topk_tokens), dtype=torch.int32, device=q.device)


def fake(q, k, k_scale, weights, ks, ke, k_block_size, block_topk, topk_tokens):
    return q.new_empty((q.shape[0], topk_tokens), dtype=torch.int32)


custom = torch.library.custom_op("hisa_dispatch_probe::custom", body, mutates_args=())
custom.register_fake(fake)
library = torch.library.Library("hisa_dispatch_probe", "FRAGMENT")
library.define("plain" + torch.library.infer_schema(body, mutates_args=()))
library.impl("plain", body, "CompositeExplicitAutograd")
torch.library.register_fake("hisa_dispatch_probe::plain", fake)


def per_call_us(fn, calls=20000, rounds=5):
    for _ in range(1000):
        fn()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    args = [torch.empty(64, 8, device=device) for _ in range(6)] + [128, 8, 256]
    rows = [("the Python function itself", lambda: body(*args)),
            ("torch.library.custom_op", lambda: torch.ops.hisa_dispatch_probe.custom(*args)),
            ("Library.define + impl", lambda: torch.ops.hisa_dispatch_probe.plain(*args))]
    print(f"# custom-op dispatch, torch {torch.__version__}, {device} tensors")
    print("| call | us/call | over the function |")
    print("| --- | ---: | ---: |")
    base = None
    for label, fn in rows:
        us = per_call_us(fn)
        base = us if base is None else base
        print(f"| {label} | {us:.2f} | {us - base:+.2f} |")


if __name__ == "__main__":
    main()
