"""Where the host time of one hisa.topk call goes (for the <= 15 us target).

Times, per call (mean over many calls, the GPU kept fed by small rows):
ctypes alone, the C ABI returning after its checks, the C ABI launching,
hisa.topk into a given output, hisa.topk allocating it, and torch's own
ops for scale.  PYTHONPATH=python python3 python/bench/probes/host_overhead.py
"""
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import torch  # noqa: E402

import hisa  # noqa: E402
from hisa import _lib  # noqa: E402
from hisa import ops  # noqa: E402
from hisa._torch_util import stream_handle  # noqa: E402


def per_call(fn, calls=100):
    """Host seconds per call: batches of `calls` queued behind a sleeping
    kernel (so that no launch waits for the GPU), the best of 20."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(20):
        torch.cuda._sleep(50_000_000)  # ~25 ms of GPU time
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        torch.cuda.synchronize()
        best = min(best, elapsed / calls)
    return best * 1e6


def main():
    rows, columns, k = 64, 1024, 64
    x = torch.randn(rows, columns, device="cuda")
    xb = x.bfloat16()
    out = torch.empty(rows, k, dtype=torch.int32, device="cuda")
    lib = _lib.lib()
    topk = lib.hisa_topk
    version = lib.hisa_version
    stream = stream_handle(x.device)
    xp, op = x.data_ptr(), out.data_ptr()
    dev = x.device
    rows_ = [
        ("ctypes: hisa_version()", lambda: version()),
        ("C ABI hisa_topk, rows = 0 (checks only)",
         lambda: topk(xp, None, None, op, 0, columns, k, 0, stream)),
        ("C ABI hisa_topk, launching", lambda: topk(xp, None, None, op, rows, columns, k, 0, stream)),
        ("stream_handle(device)", lambda: stream_handle(dev)),
        ("x.data_ptr() x2", lambda: (x.data_ptr(), out.data_ptr())),
        ("x.device", lambda: x.device),
        ("torch.cuda.current_device()", lambda: torch.cuda.current_device()),
        ("torch.compiler.is_compiling()", lambda: torch.compiler.is_compiling()),
        ("ops.current_device_index()", lambda: ops.current_device_index()),
        ("ops.context_ready(0)", lambda: ops.context_ready(0)),
        ("ops.stream_handle_of(0)", lambda: ops.stream_handle_of(0)),
        ("ops._run('hisa_topk', ...)",
         lambda: ops._run("hisa_topk", dev, x, None, None, out, rows, columns, k, 0)),
        ("hisa.topk(x, k, out=out)", lambda: hisa.topk(x, k, out=out)),
        ("hisa.topk(x, k)", lambda: hisa.topk(x, k)),
        ("hisa.topk(x bf16, k)", lambda: hisa.topk(xb, k)),
        ("torch.empty([64, 64] int32)", lambda: torch.empty(rows, k, dtype=torch.int32, device="cuda")),
        ("torch.topk(x, k)", lambda: torch.topk(x, k, dim=1, sorted=False)),
    ]
    # The indexer at M = N = 1024 (the bench's host row): the C call alone,
    # and its three operators called one by one.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from bench_indexer import inputs  # noqa: E402
    q, kk, k_scale, weights, ks, ke = inputs(1024)
    m, n, heads, dim, kb, bt, tt = 1024, 1024, q.shape[1], q.shape[2], 128, 8, 256
    wbytes = ops._workspace_bytes("hisa_hisa_indexer_workspace_size", m, n, heads, dim, kb, bt, tt)
    ws = torch.empty(wbytes, dtype=torch.uint8, device="cuda")
    iout = torch.empty(m, tt, dtype=torch.int32, device="cuda")
    ptrs = [t.data_ptr() for t in (q, kk, k_scale, weights, ks, ke, iout)]
    indexer = lib.hisa_hisa_indexer
    bk, bs = hisa.fp8_block_mean_pooling(kk, k_scale, kb)
    blocks = ops._pool_topk_blocks(q, bk, bs, weights, ks, ke, bt, kb)
    torch.cuda.synchronize()
    rows_ += [
        ("C ABI hisa_hisa_indexer (3 launches)",
         lambda: indexer(*ptrs, m, n, heads, dim, kb, bt, tt, ws.data_ptr(), wbytes, stream)),
        ("hisa.hisa_indexer(M = N = 1024)",
         lambda: hisa.hisa_indexer(q, kk, k_scale, weights, ks, ke, k_block_size=kb,
                                   block_topk=bt, topk_tokens=tt)),
        ("hisa.fp8_block_mean_pooling", lambda: hisa.fp8_block_mean_pooling(kk, k_scale, kb)),
        ("ops._pool_topk_blocks", lambda: ops._pool_topk_blocks(q, bk, bs, weights, ks, ke, bt, kb)),
        ("ops._block_sparse_topk_tokens",
         lambda: ops._block_sparse_topk_tokens(q, kk, k_scale, blocks, kb, weights, ks, ke, tt)),
    ]
    # The C++ torch kernels (libhisa_torch.so), where loaded: the whole op;
    # the op with M = 0 (its checks, the workspace query and the output's
    # allocation, no launch); and the C ABI under it, pointer checks off as
    # the C++ kernels run it, with and without the launch graph.
    from hisa import _torch_cpp  # noqa: E402
    if _torch_cpp.backend() == "c++":
        indexer_op = torch.ops.hisa.hisa_indexer.default
        q0, w0, ks0, ke0 = q[:0], weights[:0], ks[:0], ke[:0]

        def abi(graphs):
            def call():
                previous = lib.hisa_set_launch_graphs(graphs)
                checks = lib.hisa_set_device_pointer_checks(0)
                try:
                    return indexer(*ptrs, m, n, heads, dim, kb, bt, tt, ws.data_ptr(), wbytes,
                                   stream)
                finally:
                    lib.hisa_set_device_pointer_checks(checks)
                    lib.hisa_set_launch_graphs(previous)
            return call
        size = ctypes.c_uint64()
        rows_ += [
            ("torch.ops.hisa.hisa_indexer.default(M = N = 1024)",
             lambda: indexer_op(q, kk, k_scale, weights, ks, ke, kb, bt, tt)),
            ("torch.ops.hisa.hisa_indexer.default, M = 0 (no launch)",
             lambda: indexer_op(q0, kk, k_scale, w0, ks0, ke0, kb, bt, tt)),
            ("C ABI hisa_hisa_indexer, pointer checks off, launch graph",
             abi(1)),
            ("C ABI hisa_hisa_indexer, pointer checks off, no launch graph",
             abi(0)),
            ("ctypes: hisa_set_launch_graphs + set_device_pointer_checks x2 (the rows above)",
             lambda: (lib.hisa_set_launch_graphs(1), lib.hisa_set_device_pointer_checks(0),
                      lib.hisa_set_device_pointer_checks(0), lib.hisa_set_launch_graphs(1))),
            ("C ABI hisa_hisa_indexer_workspace_size",
             lambda: lib.hisa_hisa_indexer_workspace_size(m, n, heads, dim, kb, bt, tt,
                                                          ctypes.byref(size))),
            ("torch.ops.hisa.topk.default([64, 1024], 64)",
             lambda: torch.ops.hisa.topk.default(x, k, None, None)),
            ("torch.ops.aten.empty.memory_format([1024, 256] int32)",
             lambda: torch.ops.aten.empty.memory_format([m, tt], dtype=torch.int32,
                                                         device=dev)),
        ]
    launch = lambda: topk(xp, None, None, op, rows, columns, k, 0, stream)  # noqa: E731
    previous = lib.hisa_set_device_pointer_checks(1)
    checked = per_call(launch)
    lib.hisa_set_device_pointer_checks(0)
    unchecked = per_call(launch)
    lib.hisa_set_device_pointer_checks(previous)
    print(f"| host time per call, [{rows}, {columns}], k = {k} | us |")
    print("| --- | ---: |")
    print(f"| C ABI hisa_topk, launching, device pointer checks on | {checked:.2f} |")
    print(f"| C ABI hisa_topk, launching, device pointer checks off | {unchecked:.2f} |")
    for name, fn in rows_:
        print(f"| {name} | {per_call(fn):.2f} |")
    print("launch graph stats (instantiated, launches, updated nodes):",
          hisa.launch_graph_stats())


if __name__ == "__main__":
    main()
