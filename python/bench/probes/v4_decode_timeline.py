#!/usr/bin/env python3
"""Where a V4 decode step's time goes, launch by launch: one step of
hisa.v4.Attention (V4-Flash dimensions, B sequences at a long context, as
bench_v4_layer.py) captured in a CUDA graph and replayed under
torch.profiler; every kernel with its stream, start (from the step's first
kernel), duration, and the gap since the previous kernel on its stream
ended. The critical path is the caller's stream (the q branch, then the
index rows, attention and the output projections); side streams carry the
kv, compressor and indexer branches.

    PYTHONPATH=python python3 python/bench/probes/v4_decode_timeline.py [--ratios 0,128,4]
"""

from __future__ import annotations

import argparse
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(here, ".."))

import torch  # noqa: E402

import hisa  # noqa: E402
from hisa.v4 import reference as ref  # noqa: E402
from bench_v4_layer import fill_random_index_keys  # noqa: E402


def timeline(ratio, batch, context, prefetch, eager=False, pdl=True, zero_keys=False):
    config = ref.Config(compress_ratio=ratio)
    weights = ref.random_weights(config, device="cuda")
    layer = hisa.v4.Attention(config, weights, batch, context + 64,
                              max_prefill_tokens=batch * 128)
    layer.set_l2_prefetch(prefetch)
    layer.forward(torch.randn(batch, 128, config.dim, device="cuda").bfloat16(), 0)
    layer.set_length(context)
    if not zero_keys:
        fill_random_index_keys(layer)
    x = torch.randn(batch, 1, config.dim, device="cuda").bfloat16()
    out = torch.empty_like(x)
    layer.forward(x, context, out=out)
    layer.set_length(context)
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            layer.forward(x, context, out=out)
    torch.cuda.current_stream().wait_stream(stream)
    layer.set_length(context)
    for _ in range(5):
        graph.replay()
    torch.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        if eager:
            layer.forward(x, context, out=out)
        else:
            graph.replay()
        torch.cuda.synchronize()
    kernels = []
    for event in prof.profiler.kineto_results.events():
        if event.device_type() != torch.autograd.DeviceType.CUDA:
            continue
        name = event.name()
        if name.startswith("Memcpy") or name.startswith("Memset"):
            continue
        kernels.append((event.start_ns() / 1e3, event.duration_ns() / 1e3,
                        event.device_resource_id(), name))
    kernels.sort()
    t0 = kernels[0][0]
    end = max(start + duration for start, duration, _, _ in kernels)
    print(f"\n## ratio {ratio}: B = {batch}, context {context}, L2 prefetch {prefetch}, "
          f"{'eager' if eager else 'graph replay'}, programmatic launch "
          f"{'on' if pdl else 'off'}"
          f"{', indexer keys zeros' if zero_keys and ratio == 4 else ''}: "
          f"{len(kernels)} kernels, first start to last end {end - t0:.1f} us, "
          f"kernel time {sum(k[1] for k in kernels):.1f} us\n")
    print("| start (us) | duration (us) | stream | gap on its stream (us) | kernel |")
    print("| ---: | ---: | ---: | ---: | --- |")
    last_end = {}
    for start, duration, stream_id, name in kernels:
        gap = start - last_end[stream_id] if stream_id in last_end else float("nan")
        last_end[stream_id] = start + duration
        print(f"| {start - t0:.1f} | {duration:.1f} | {stream_id} | {gap:.1f} | {name[:60]} |")
    del layer, graph
    torch.cuda.empty_cache()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ratios", default="0,128,4")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--context", type=int, default=65536)
    parser.add_argument("--l2-prefetch", type=int, default=0)
    parser.add_argument("--eager", action="store_true", help="profile an eager step")
    parser.add_argument("--zero-keys", action="store_true",
                        help="CSA: leave the indexer's keys at zeros (every score ties)")
    parser.add_argument("--no-pdl", action="store_true",
                        help="launch without programmatic dependent launch")
    args = parser.parse_args()
    pdl = not args.no_pdl
    hisa.set_programmatic_launch(pdl)
    print(f"# V4 decode step timeline on {torch.cuda.get_device_name()}")
    for ratio in (int(r) for r in args.ratios.split(",")):
        timeline(ratio, args.batch, args.context, args.l2_prefetch, args.eager, pdl,
                 args.zero_keys)


if __name__ == "__main__":
    main()
