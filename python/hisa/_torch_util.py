"""Argument checking and CUDA-context/stream helpers shared by the torch ops."""

from __future__ import annotations

import threading
from typing import Iterable, Optional, Sequence

import torch

from ._lib import ArgumentTypeError, InvalidArgumentError

_ctx = threading.local()


def shape_str(shape: Iterable[int]) -> str:
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


def check_tensor(name: str, value) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise ArgumentTypeError(
            f"{name} must be a torch.Tensor, got {type(value).__module__}.{type(value).__qualname__}"
        )
    return value


def check_cuda(name: str, t: torch.Tensor) -> None:
    if not t.is_cuda:
        raise InvalidArgumentError(
            f"{name} must be a CUDA tensor, got a tensor on device '{t.device}'"
        )


def check_same_device(name: str, t: torch.Tensor, ref_name: str, ref: torch.Tensor) -> None:
    # get_device() is an int (-1 on the CPU): cheaper than comparing devices.
    if t.get_device() != ref.get_device():
        raise InvalidArgumentError(
            f"{name} must be on the same device as {ref_name} ({ref.device}), got '{t.device}'"
        )


def check_no_grad(op: str, named: Iterable) -> None:
    """hisa's operators have no backward: with grad mode on, an input that
    requires grad would get no gradient through them, silently. Refuse
    instead (torch.no_grad(), torch.inference_mode() or .detach() say the
    caller means it). `named`: (name, value) pairs; values that are not
    tensors are left to the other checks."""
    if not torch.is_grad_enabled():
        return
    for name, t in named:
        if isinstance(t, torch.Tensor) and t.requires_grad:
            raise InvalidArgumentError(
                f"{op}: {name} requires grad, but hisa's {op} has no backward, so "
                f"{name} would silently get no gradient through it; call it under "
                "torch.no_grad() or torch.inference_mode(), or pass "
                f"{name}.detach()"
            )


def check_dtype(name: str, t: torch.Tensor, dtype: torch.dtype) -> None:
    if t.dtype != dtype:
        raise InvalidArgumentError(f"{name} must have dtype {dtype}, got {t.dtype}")


def check_rank(name: str, t: torch.Tensor, rank: int, what: str) -> None:
    if t.dim() != rank:
        raise InvalidArgumentError(
            f"{name} must be {rank}-D {what}, got {t.dim()}-D shape {shape_str(t.shape)}"
        )


def check_shape(name: str, t: torch.Tensor, expected: Sequence[int], symbolic: str) -> None:
    """Exact shape; `symbolic` names the dimensions, e.g. "[N]"."""
    if tuple(t.shape) != tuple(expected):
        raise InvalidArgumentError(
            f"{name} must have shape {symbolic}={shape_str(expected)}, got {shape_str(t.shape)}"
        )


def check_contiguous(name: str, t: torch.Tensor) -> None:
    if not t.is_contiguous():
        raise InvalidArgumentError(
            f"{name} must be contiguous (row-major), got strides {tuple(t.stride())} "
            f"for shape {shape_str(t.shape)}; call .contiguous() first"
        )


def check_no_overlap(name: str, out: torch.Tensor, inputs) -> None:
    """An output must not share bytes with what the kernel reads (it would
    read values it already overwrote). `inputs`: (name, tensor or None)."""
    start = out.data_ptr()
    end = start + out.numel() * out.element_size()
    for other_name, t in inputs:
        if t is None or t.numel() == 0 or start == end:
            continue
        other = t.data_ptr()
        if other < end and start < other + t.numel() * t.element_size():
            raise InvalidArgumentError(
                f"{name} overlaps {other_name} in memory; the kernel reads "
                f"{other_name} while it writes {name}: pass separate tensors")


def check_aligned(name: str, t: torch.Tensor, alignment: int) -> None:
    if t.numel() > 0 and t.data_ptr() % alignment != 0:
        raise InvalidArgumentError(
            f"{name} data pointer 0x{t.data_ptr():x} must be {alignment}-byte aligned "
            f"(the kernel uses {alignment}-byte vector accesses); it is a view at storage "
            f"offset {t.storage_offset()}: pass a tensor that starts at an aligned address "
            "(e.g. .clone())"
        )


def check_bool(name: str, value) -> bool:
    """A flag must be a bool: read by truthiness, "no" or a one-element
    tensor would count as true."""
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be a bool, got {type(value).__qualname__}")
    return value


def check_int(name: str, value, allowed: Optional[Sequence[int]] = None) -> int:
    if isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be an int, got bool {value!r}")
    if not isinstance(value, int):
        # numpy / torch integer scalars convert through __index__.
        index = getattr(type(value), "__index__", None)
        try:
            if index is None:
                raise TypeError
            value = index(value)
        except (TypeError, RuntimeError):
            raise ArgumentTypeError(
                f"{name} must be an int, got {type(value).__qualname__} {value!r}"
            ) from None
    # ctypes would wrap a larger value silently (2**64 + 1 arrives as 1).
    if not -2**63 <= value < 2**63:
        raise InvalidArgumentError(f"{name}={value} does not fit in a 64-bit integer")
    if allowed is not None and value not in allowed:
        raise InvalidArgumentError(
            f"{name}={value} is not supported (supported: {', '.join(map(str, allowed))})"
        )
    return int(value)


# torch's current device index without the Python wrapper of
# torch.cuda.current_device() (the public API where it is missing).
current_device_index = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device


def context_ready(index: int) -> bool:
    """Whether ensure_context already ran for device `index` on this thread."""
    done = getattr(_ctx, "devices", None)
    return done is not None and index in done


def ensure_context(device: torch.device) -> None:
    """Make the primary CUDA context of `device` current on this thread.

    The runtime launches through the driver API on the thread's current
    context. torch binds the primary context to a thread lazily; one runtime
    call per (thread, device) does it. Call inside torch.cuda.device(device).
    """
    done = getattr(_ctx, "devices", None)
    if done is None:
        done = _ctx.devices = set()
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index in done:
        return
    if torch.cuda.is_current_stream_capturing():
        return  # capturing implies a current context
    # The device's primary context made current by the runtime, without a
    # synchronization (torch.cuda.synchronize did it before: it stalled
    # every stream and broke another thread's capture in global mode).
    from . import _lib
    _lib.check(_lib.lib().hisa_use_device(index), "hisa_use_device", f"device {index}")
    done.add(index)


# torch's current raw stream without building a torch.cuda.Stream object
# (what Triton's launcher uses); the public API where it is missing.
_current_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def stream_handle_of(index: int) -> int:
    """The CUstream of torch's current stream on device `index`."""
    if _current_raw_stream is not None:
        return int(_current_raw_stream(index))
    return int(torch.cuda.current_stream(index).cuda_stream)


def stream_handle(device: torch.device) -> int:
    """The CUstream of torch's current stream on `device` (0 = legacy default)."""
    if _current_raw_stream is not None:
        index = device.index if device.index is not None else torch.cuda.current_device()
        return int(_current_raw_stream(index))
    return int(torch.cuda.current_stream(device).cuda_stream)
