#!/usr/bin/env python3
"""The CUDA driver's own host time per call on this machine, the floor under
hisa's launch path: an empty kernel launched with cuLaunchKernel, with
cuLaunchKernelEx and no attribute, and with cuLaunchKernelEx and the
programmatic-stream-serialization attribute (what hisa's chained kernels
use); cuPointerGetAttribute (hisa's device-pointer check) and
cuCtxGetCurrent; and a ctypes call of a C function that does nothing, for
the binding's share. Launches are queued behind torch.cuda._sleep so that
none waits for the GPU.

    python3 python/bench/probes/driver_call_cost.py
"""

import ctypes
import time

import torch

PTX = b"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry empty(.param .u64 p) { ret; }
"""

CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6
CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2


class LaunchAttribute(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_char * 64)]


class LaunchConfig(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(LaunchAttribute)), ("num_attrs", ctypes.c_uint)]


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
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    buffer = torch.empty(1024, device="cuda")
    argument = ctypes.c_uint64(buffer.data_ptr())
    params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(argument), ctypes.c_void_p))

    def launch():
        cuda.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, stream, params, None)

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

    for fn, what in ((launch, "cuLaunchKernel"), (launch_ex, "cuLaunchKernelEx"),
                     (launch_pdl, "cuLaunchKernelEx+PDL")):
        fn()
        torch.cuda.synchronize()
    check(cuda.cuPointerGetAttribute(ctypes.byref(memory_type), CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                     pointer), "cuPointerGetAttribute")

    rows = [("ctypes call of cuDriverGetVersion (the binding's floor)", nothing),
            ("cuCtxGetCurrent", current_context),
            ("cuPointerGetAttribute(MEMORY_TYPE)", pointer_attribute),
            ("cuLaunchKernel, empty kernel", launch),
            ("cuLaunchKernelEx, no attribute", launch_ex),
            ("cuLaunchKernelEx, programmatic serialization", launch_pdl)]
    print(f"# {torch.cuda.get_device_name()}, driver calls through ctypes")
    print("| call | us/call (best of 20 rounds of 200) |")
    print("| --- | ---: |")
    base = None
    for what, fn in rows:
        us = per_call_us(fn)
        base = us if base is None else base
        print(f"| {what} | {us:.2f} |")
    print(f"(subtract ~{base:.2f} us of ctypes from each row for the driver's own time)")


if __name__ == "__main__":
    main()
