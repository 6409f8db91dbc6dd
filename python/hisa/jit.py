"""Thin wrappers over the JIT part of the C ABI (hisa_kernel_get & co.).

    k = hisa.jit.get_kernel("fp8_block_mean_pooling", {"dim": 128, "kb": 128})
    k.launch(k_fp8, k_scale, blocked_k, blocked_scale)   # torch tensors / ints / floats
    hisa.jit.cache_stats()  # CacheStats(compiles=1, disk_hits=0, memory_hits=0, rejected_entries=0)

torch is not needed by this module: ``compile`` works on a machine with no
GPU and no torch. When torch is imported, ``get_kernel`` and ``launch`` make
torch's CUDA context current and launch on torch's current stream.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any, Mapping, NamedTuple, Optional

from . import _lib
from ._lib import (
    ARG_FLOAT,
    ARG_INT,
    ARG_TENSOR,
    MAX_RANK,
    ArgumentTypeError,
    HisaArg,
    InvalidArgumentError,
)

__all__ = [
    "CacheStats",
    "Kernel",
    "builtin_kernel_source",
    "cache_stats",
    "compile",
    "format_params",
    "get_kernel",
    "version",
]

# HISA_ELIDE_SYNC=1 adds the fifty-second session's synchronization rules
# (+elide-sync), as the C++ operators do, so that the GPU tests and the
# sanitizer runs check them before they are on by default.
DEFAULT_TARGET = "sm_90a,+elide-sync" if os.environ.get("HISA_ELIDE_SYNC") == "1" else "sm_90a"
_PATH_CAPACITY = 4096


class CacheStats(NamedTuple):
    """hisa_cache_stats2() for this process. ``rejected_entries`` counts disk
    cache entries found but refused (modified, damaged, stored for another
    key, not regular files) and rebuilt."""

    compiles: int
    disk_hits: int
    memory_hits: int
    rejected_entries: int


def version() -> str:
    return _lib.version()


def builtin_kernel_source(name: str) -> Optional[str]:
    """DSL text of a kernel shipped in kernels-dsl/, or None."""
    raw = _lib.lib().hisa_builtin_kernel_source(_encode("name", name))
    return None if raw is None else raw.decode("utf-8")


def format_params(params: Optional[Mapping[str, int]]) -> str:
    """{"heads": 32, "dim": 64} -> "dim=64,heads=32" (sorted, so equal dicts give equal keys)."""
    if params is None:
        return ""
    if not isinstance(params, Mapping):
        raise ArgumentTypeError(
            f"params must be a dict of name -> int, got {type(params).__qualname__}"
        )
    items = []
    for key, value in params.items():
        if not isinstance(key, str) or not key.isidentifier():
            raise InvalidArgumentError(f"params: parameter name {key!r} is not an identifier")
        if isinstance(value, bool) or not isinstance(value, int):
            raise ArgumentTypeError(
                f"params[{key!r}] must be an int, got {type(value).__qualname__} {value!r}"
            )
        items.append(f"{key}={value}")
    return ",".join(sorted(items))


def _encode(name: str, value: Optional[str]) -> Optional[bytes]:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be a str, got {type(value).__qualname__}")
    if "\0" in value:
        raise InvalidArgumentError(f"{name} must not contain NUL characters")
    return value.encode("utf-8")


_DTYPES_OF = None


def _dtypes_of(element_type: str):
    """The torch dtypes a tensor argument of DSL element type
    `element_type` may have (None: not known here, the size check alone
    applies). Integers of either signedness (the DSL's are signless); fp8
    also as raw bytes (uint8). The table is built once (launches are on the
    host's critical path)."""
    global _DTYPES_OF
    if _DTYPES_OF is None:
        torch = _torch()
        _DTYPES_OF = {
            "f32": (torch.float32,), "f64": (torch.float64,), "f16": (torch.float16,),
            "bf16": (torch.bfloat16,),
            "f8E4M3FN": (torch.float8_e4m3fn, torch.uint8),
            "f8E5M2": (torch.float8_e5m2, torch.uint8),
            "i64": (torch.int64, getattr(torch, "uint64", torch.int64)),
            "i32": (torch.int32, getattr(torch, "uint32", torch.int32)),
            "i16": (torch.int16, getattr(torch, "uint16", torch.int16)),
            "i8": (torch.int8, torch.uint8), "i1": (torch.bool,),
        }
    return _DTYPES_OF.get(element_type)


def _torch():
    """torch if the caller has imported it (this module never imports it itself)."""
    return sys.modules.get("torch")


def _ensure_torch_context(device=None) -> None:
    torch = _torch()
    if torch is None or not torch.cuda.is_available():
        return
    from ._torch_util import ensure_context

    dev = torch.device("cuda", torch.cuda.current_device()) if device is None else device
    with torch.cuda.device(dev):
        ensure_context(dev)


def _describe(name: str, params: str, target: str) -> str:
    return f"kernel '{name}', params '{params}', target '{target}'"


class Kernel:
    """A compiled and loaded kernel (owned by the runtime cache; never freed)."""

    __slots__ = ("handle", "name", "params", "target", "_argument_types")

    def __init__(self, handle: int, name: str, params: str, target: str):
        self.handle = handle
        self.name = name
        self.params = params
        self.target = target
        self._argument_types = None

    def argument_types(self):
        """[(element type as the DSL names it, its bytes)] per argument of the
        kernel signature; ("", 0) for scalars."""
        if self._argument_types is None:
            runtime = _lib.lib()
            types = []
            i = 0
            while True:
                name, size = ctypes.c_char_p(), ctypes.c_int32()
                status = runtime.hisa_kernel_argument_type(self.handle, i, ctypes.byref(name),
                                                           ctypes.byref(size))
                if status != 0:
                    break  # past the last argument
                types.append(((name.value or b"").decode(), size.value))
                i += 1
            self._argument_types = types
        return self._argument_types

    def __repr__(self) -> str:
        return f"hisa.jit.Kernel({self.name!r}, params={self.params!r}, target={self.target!r})"

    def launch(self, *args: Any, stream: Optional[int] = None) -> None:
        """Launch with args in the order of the tile.kernel signature.

        Tensor arguments are torch CUDA tensors (contiguous; rank <= 8);
        Python ints become integer scalars, floats float scalars. `stream`
        is a CUstream handle; default: torch's current stream of the first
        tensor's device (or the default stream without torch).
        """
        c_args = (HisaArg * max(len(args), 1))()
        device = None
        for i, value in enumerate(args):
            arg = c_args[i]
            what = f"argument {i} of kernel '{self.name}'"
            torch = _torch()
            if torch is not None and isinstance(value, torch.Tensor):
                if value.device.type != "cuda":
                    raise InvalidArgumentError(f"{what} must be a CUDA tensor, got device '{value.device}'")
                if device is None:
                    device = value.device
                elif value.device != device:
                    raise InvalidArgumentError(
                        f"{what} is on {value.device}, but earlier tensors are on {device}"
                    )
                if not value.is_contiguous():
                    raise InvalidArgumentError(f"{what} must be contiguous, got strides {tuple(value.stride())}")
                if value.dim() > MAX_RANK:
                    raise InvalidArgumentError(f"{what} has rank {value.dim()} > {MAX_RANK}")
                # hisa_arg has no element type: a tensor of smaller elements
                # than the kernel reads would be read or written past its end.
                types = self.argument_types()
                if i < len(types) and types[i][1] and value.element_size() != types[i][1]:
                    raise InvalidArgumentError(
                        f"{what} is {value.dtype} ({value.element_size()} bytes an element), "
                        f"but the kernel takes {types[i][0]} ({types[i][1]} bytes)")
                # Of the same size, a tensor of another type would be read
                # as the kernel's type (int32 bits as f32, f16 as bf16).
                allowed = _dtypes_of(types[i][0]) if i < len(types) else None
                if allowed is not None and value.dtype not in allowed:
                    raise InvalidArgumentError(
                        f"{what} is {value.dtype}, but the kernel takes {types[i][0]} "
                        f"({' or '.join(str(d) for d in allowed)})")
                arg.kind = ARG_TENSOR
                arg.rank = value.dim()
                arg.data = value.data_ptr()
                for d, size in enumerate(value.shape):
                    arg.sizes[d] = int(size)
            elif isinstance(value, bool):
                raise ArgumentTypeError(f"{what} is a bool; pass an int")
            elif isinstance(value, int):
                # ctypes would wrap a larger value silently.
                if not -2**63 <= value < 2**63:
                    raise InvalidArgumentError(f"{what} = {value} does not fit in 64 bits")
                arg.kind = ARG_INT
                arg.int_value = value
            elif isinstance(value, float):
                arg.kind = ARG_FLOAT
                arg.float_value = value
            else:
                raise ArgumentTypeError(
                    f"{what} must be a torch.Tensor, int or float, got {type(value).__qualname__}"
                )
        runtime = _lib.lib()
        torch = _torch()
        if device is not None:
            with torch.cuda.device(device):
                from ._torch_util import ensure_context, stream_handle

                ensure_context(device)
                handle = stream_handle(device) if stream is None else int(stream)
                status = runtime.hisa_kernel_launch(self.handle, c_args, len(args), handle)
        else:
            status = runtime.hisa_kernel_launch(self.handle, c_args, len(args), stream or 0)
        _lib.check(status, "hisa_kernel_launch", f"kernel '{self.name}'")


def get_kernel(
    name: str,
    params: Optional[Mapping[str, int]] = None,
    target: str = DEFAULT_TARGET,
    source: Optional[str] = None,
) -> Kernel:
    """hisa_kernel_get: compile (or fetch from the memory/disk cache) and load.

    `name` is the tile.kernel name (a built-in kernel when `source` is None),
    `params` the specialization ({} or None = the kernel's defaults),
    `target` the SM ("sm_90a"), optionally with features: "sm_90a,-tma"
    stages pipelined copies with cp.async instead of TMA;
    "sm_90a,+narrow-indices" does the index arithmetic of run-time sizes in
    32 bits where it can (launches then refuse sizes from 2^31 on).
    An unknown parameter name or a bad value raises HisaError naming it.
    """
    c_name = _encode("name", name)
    c_params = _encode("params", format_params(params))
    c_target = _encode("target", target)
    c_source = _encode("source", source)
    runtime = _lib.lib()
    _ensure_torch_context()
    out = ctypes.c_void_p()
    status = runtime.hisa_kernel_get(c_source, c_name, c_params, c_target, ctypes.byref(out))
    _lib.check(status, "hisa_kernel_get", _describe(name, c_params.decode(), target))
    if not out.value:
        raise _lib.HisaError(
            f"hisa_kernel_get({_describe(name, c_params.decode(), target)}) returned success "
            "but no kernel", function="hisa_kernel_get"
        )
    return Kernel(out.value, name, c_params.decode(), target)


def compile(
    name: str,
    params: Optional[Mapping[str, int]] = None,
    target: str = DEFAULT_TARGET,
    source: Optional[str] = None,
) -> str:
    """hisa_kernel_compile: compile into the disk cache without loading (no GPU
    needed). Returns the path of a regular file holding the binary: the cache
    entry, or a private temporary file when the cache directory cannot be
    written. Parameters the kernel refuses raise InvalidArgumentError; a
    compilation longer than $HISA_COMPILE_TIMEOUT_S seconds (default 120)
    raises CompileError."""
    c_name = _encode("name", name)
    c_params = _encode("params", format_params(params))
    c_target = _encode("target", target)
    c_source = _encode("source", source)
    runtime = _lib.lib()
    buf = ctypes.create_string_buffer(_PATH_CAPACITY)
    status = runtime.hisa_kernel_compile(c_source, c_name, c_params, c_target, buf, _PATH_CAPACITY)
    _lib.check(status, "hisa_kernel_compile", _describe(name, c_params.decode(), target))
    return buf.value.decode("utf-8")


def cache_stats() -> CacheStats:
    """Compiles, disk hits, memory hits and rejected disk entries of this
    process's runtime cache."""
    compiles, disk, memory, rejected = (ctypes.c_int64() for _ in range(4))
    _lib.lib().hisa_cache_stats2(
        ctypes.byref(compiles), ctypes.byref(disk), ctypes.byref(memory), ctypes.byref(rejected)
    )
    return CacheStats(compiles.value, disk.value, memory.value, rejected.value)
