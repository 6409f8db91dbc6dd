#!/usr/bin/env python3
"""The CUDA driver's own host time per call on this machine, the floor under
hisa's launch path: an empty kernel launched with cuLaunchKernel, with
cuLaunchKernelEx and no attribute, and with cuLaunchKernelEx and the
programmatic-stream-serialization attribute (what hisa's chained kernels
use), with 1 and with 24 parameters; cuPointerGetAttribute (hisa's
device-pointer check) and cuCtxGetCurrent; a CUDA graph of three such
launches (what a three-kernel operator such as hisa_indexer could replay):
cuGraphLaunch alone and with its three kernel nodes' parameters set first
(new pointers each call); and a ctypes call of a C function that does
nothing, for the binding's share. Launches are queued behind
torch.cuda._sleep so that none waits for the GPU; the rows are timed in
alternating order over several passes, best of all.

    python3 python/bench/probes/driver_call_cost.py
"""

import ctypes
import time

import torch

PTX = (b"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry empty(.param .u64 p) { ret; }
.visible .entry empty24(""" + b", ".join(b".param .u64 p%d" % i for i in range(24))
       + b""") { ret; }
""")

CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6
CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2


class LaunchAttribute(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_char * 64)]


class LaunchConfig(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(LaunchAttribute)), ("num_attrs", ctypes.c_uint)]


class KernelNodeParams(ctypes.Structure):  # CUDA_KERNEL_NODE_PARAMS_v2
    _fields_ = [("func", ctypes.c_void_p), ("grid", ctypes.c_uint * 3),
                ("block", ctypes.c_uint * 3), ("shared", ctypes.c_uint),
                ("params", ctypes.c_void_p), ("extra", ctypes.c_void_p),
                ("kern", ctypes.c_void_p), ("ctx", ctypes.c_void_p)]


def check(result, what):
    if result != 0:
        raise RuntimeError(f"{what} failed with CUresult {result}")


def per_call_us(fn, calls=200, rounds=20):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(rounds):
        torch.cuda._sleep(20_000_000)
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
        torch.cuda.synchronize()
    return best * 1e6


def main():
    torch.zeros(1, device="cuda")  # makes torch's primary context current
    cuda = ctypes.CDLL("libcuda.so.1")
    module, function = ctypes.c_void_p(), ctypes.c_void_p()
    check(cuda.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(PTX)), "cuModuleLoadData")
    check(cuda.cuModuleGetFunction(ctypes.byref(function), module, b"empty"), "cuModuleGetFunction")
    function24 = ctypes.c_void_p()
    check(cuda.cuModuleGetFunction(ctypes.byref(function24), module, b"empty24"),
          "cuModuleGetFunction")
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    buffer = torch.empty(1024, device="cuda")
    argument = ctypes.c_uint64(buffer.data_ptr())
    params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(argument), ctypes.c_void_p))

    arguments24 = [ctypes.c_uint64(buffer.data_ptr()) for _ in range(24)]
    params24 = (ctypes.c_void_p * 24)(
        *[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in arguments24])

    def launch():
        cuda.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, stream, params, None)

    def launch24():
        cuda.cuLaunchKernel(function24, 1, 1, 1, 32, 1, 1, 0, stream, params24, None)

    def config(attribute_count):
        attribute = LaunchAttribute()
        attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        attribute.value = (1).to_bytes(4, "little") + bytes(60)
        cfg = LaunchConfig((1, 1, 1), (32, 1, 1), 0, stream,
                           ctypes.pointer(attribute) if attribute_count else None,
                           attribute_count)
        cfg._keep = attribute
        return cfg

    plain_config, pdl_config = config(0), config(1)

    def launch_ex():
        cuda.cuLaunchKernelEx(ctypes.byref(plain_config), function, params, None)

    def launch_pdl():
        cuda.cuLaunchKernelEx(ctypes.byref(pdl_config), function, params, None)

    memory_type = ctypes.c_uint()
    pointer = ctypes.c_uint64(buffer.data_ptr())

    def pointer_attribute():
        cuda.cuPointerGetAttribute(ctypes.byref(memory_type), CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   pointer)

    context = ctypes.c_void_p()

    def current_context():
        cuda.cuCtxGetCurrent(ctypes.byref(context))

    def nothing():
        cuda.cuDriverGetVersion(ctypes.byref(memory_type))

    # A graph of three launches, captured on a stream of its own.
    capture, graph, graph_exec = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    check(cuda.cuStreamCreate(ctypes.byref(capture), 1), "cuStreamCreate")
    check(cuda.cuStreamBeginCapture_v2(capture, 2), "cuStreamBeginCapture")
    for _ in range(3):
        check(cuda.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, capture, params, None),
              "cuLaunchKernel (capture)")
    check(cuda.cuStreamEndCapture(capture, ctypes.byref(graph)), "cuStreamEndCapture")
    check(cuda.cuGraphInstantiateWithFlags(ctypes.byref(graph_exec), graph, ctypes.c_ulonglong(0)),
          "cuGraphInstantiateWithFlags")
    nodes, count = (ctypes.c_void_p * 3)(), ctypes.c_size_t(3)
    check(cuda.cuGraphGetNodes(graph, nodes, ctypes.byref(count)), "cuGraphGetNodes")
    node_params = KernelNodeParams(function.value, (1, 1, 1), (32, 1, 1), 0,
                                   ctypes.cast(params, ctypes.c_void_p).value, None, None, None)

    def graph_launch():
        cuda.cuGraphLaunch(graph_exec, stream)

    def graph_set_and_launch():
        for node in nodes:
            cuda.cuGraphExecKernelNodeSetParams_v2(graph_exec, ctypes.c_void_p(node),
                                                   ctypes.byref(node_params))
        cuda.cuGraphLaunch(graph_exec, stream)

    for fn, what in ((launch, "cuLaunchKernel"), (launch_ex, "cuLaunchKernelEx"),
                     (launch_pdl, "cuLaunchKernelEx+PDL"), (launch24, "cuLaunchKernel (24)")):
        fn()
        torch.cuda.synchronize()
    for node in nodes:
        check(cuda.cuGraphExecKernelNodeSetParams_v2(graph_exec, ctypes.c_void_p(node),
                                                     ctypes.byref(node_params)),
              "cuGraphExecKernelNodeSetParams")
    check(cuda.cuGraphLaunch(graph_exec, stream), "cuGraphLaunch")
    torch.cuda.synchronize()
    check(cuda.cuPointerGetAttribute(ctypes.byref(memory_type), CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                     pointer), "cuPointerGetAttribute")

    rows = [("ctypes call of cuDriverGetVersion (the binding's floor)", nothing),
            ("cuCtxGetCurrent", current_context),
            ("cuPointerGetAttribute(MEMORY_TYPE)", pointer_attribute),
            ("cuLaunchKernel, empty kernel", launch),
            ("cuLaunchKernelEx, no attribute", launch_ex),
            ("cuLaunchKernelEx, programmatic serialization", launch_pdl),
            ("cuLaunchKernel, 24 pointer parameters", launch24),
            ("cuGraphLaunch, 3 kernel nodes", graph_launch),
            ("3 x cuGraphExecKernelNodeSetParams + cuGraphLaunch", graph_set_and_launch)]
    best = {what: float("inf") for what, _ in rows}
    for sweep in range(4):
        for what, fn in (rows if sweep % 2 == 0 else rows[::-1]):
            best[what] = min(best[what], per_call_us(fn, rounds=5))
    print(f"# {torch.cuda.get_device_name()}, driver calls through ctypes")
    print("| call | us/call (best of 4 passes x 5 rounds of 200) |")
    print("| --- | ---: |")
    for what, _ in rows:
        print(f"| {what} | {best[what]:.2f} |")
    base = best[rows[0][0]]
    print(f"(subtract ~{base:.2f} us of ctypes from each row for the driver's own time)")


if __name__ == "__main__":
    main()
