"""Loading of libhisa_runtime.so and the ctypes declarations of its C ABI.

The C ABI is include/hisa/Runtime/hisa_runtime.h. Every function that can
fail returns 0 on success and a nonzero status otherwise; the message of the
failure is then read from hisa_last_error() (per thread) and raised as a
HisaError subclass chosen by the status.

The library is loaded lazily, on the first call that needs it, so that
``import hisa`` works (and argument validation runs) on a machine where it
has not been built.
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Optional

__all__ = [
    "HISA_OK",
    "HISA_ERROR_INVALID_ARGUMENT",
    "HISA_ERROR_COMPILE",
    "HISA_ERROR_CUDA",
    "HISA_ERROR_NO_DEVICE",
    "HisaError",
    "InvalidArgumentError",
    "ArgumentTypeError",
    "CompileError",
    "CudaError",
    "NoDeviceError",
    "LibraryNotFoundError",
    "HisaArg",
    "MAX_RANK",
    "lib",
    "lib_path",
    "check",
    "last_error",
    "version",
]

# Status codes (hisa_runtime.h).
HISA_OK = 0
HISA_ERROR_INVALID_ARGUMENT = 1
HISA_ERROR_COMPILE = 2
HISA_ERROR_CUDA = 3
HISA_ERROR_NO_DEVICE = 4

_STATUS_NAMES = {
    HISA_OK: "HISA_OK",
    HISA_ERROR_INVALID_ARGUMENT: "HISA_ERROR_INVALID_ARGUMENT",
    HISA_ERROR_COMPILE: "HISA_ERROR_COMPILE",
    HISA_ERROR_CUDA: "HISA_ERROR_CUDA",
    HISA_ERROR_NO_DEVICE: "HISA_ERROR_NO_DEVICE",
}

LIB_NAME = "libhisa_runtime.so"


# ---- exceptions ------------------------------------------------------------


class HisaError(RuntimeError):
    """A failure reported by the hisa runtime (or found before calling it).

    ``status`` is the C status code (0 when the error was raised on the
    Python side before any call), ``function`` the C function concerned.
    """

    def __init__(self, message: str, status: int = 0, function: Optional[str] = None):
        super().__init__(message)
        self.status = status
        self.function = function


class InvalidArgumentError(HisaError, ValueError):
    """Bad shape, dtype, device, pointer or parameter (HISA_ERROR_INVALID_ARGUMENT)."""


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument of the wrong Python type (also a ValueError, like every
    argument error of hisa, so that callers need to catch only one)."""


class CompileError(HisaError):
    """The DSL kernel failed to compile (HISA_ERROR_COMPILE)."""


class CudaError(HisaError):
    """A CUDA driver call failed (HISA_ERROR_CUDA)."""


class NoDeviceError(HisaError):
    """libcuda.so.1 or a GPU is missing (HISA_ERROR_NO_DEVICE)."""


class LibraryNotFoundError(HisaError, ImportError):
    """libhisa_runtime.so could not be found or loaded."""


_STATUS_ERRORS = {
    HISA_ERROR_INVALID_ARGUMENT: InvalidArgumentError,
    HISA_ERROR_COMPILE: CompileError,
    HISA_ERROR_CUDA: CudaError,
    HISA_ERROR_NO_DEVICE: NoDeviceError,
}


# ---- C structures ----------------------------------------------------------

MAX_RANK = 8

ARG_TENSOR = 0
ARG_INT = 1
ARG_FLOAT = 2


class HisaArg(ctypes.Structure):
    """``hisa_arg``: one kernel argument, in the order of the tile.kernel signature."""

    _fields_ = [
        ("kind", ctypes.c_int32),  # 0: tensor, 1: integer scalar, 2: float scalar
        ("rank", ctypes.c_int32),
        ("data", ctypes.c_void_p),
        ("sizes", ctypes.c_int64 * MAX_RANK),
        ("int_value", ctypes.c_int64),
        ("float_value", ctypes.c_double),
    ]


# Offsets the C compiler gives the struct on x86-64 / aarch64 (LP64).
assert ctypes.sizeof(HisaArg) == 96, ctypes.sizeof(HisaArg)
assert HisaArg.data.offset == 8 and HisaArg.sizes.offset == 16
assert HisaArg.int_value.offset == 80 and HisaArg.float_value.offset == 88

_c_int64_p = ctypes.POINTER(ctypes.c_int64)


class HisaV4Config(ctypes.Structure):
    """hisa_v4_config of hisa_runtime.h."""
    _fields_ = [(name, ctypes.c_int64) for name in (
        "dim", "heads", "q_lora", "o_groups", "o_lora", "compress_ratio", "index_heads",
        "index_topk")] + [(name, ctypes.c_float) for name in (
            "eps", "rope_theta", "compress_rope_theta")]


class HisaV4Weights(ctypes.Structure):
    """hisa_v4_weights of hisa_runtime.h: device pointers (0 = absent)."""
    _fields_ = [(name, ctypes.c_void_p) for name in (
        "wq_a", "wq_b", "wkv", "wo_a", "wo_b", "q_norm", "kv_norm", "attn_sink", "c_wkv",
        "c_wgate", "c_ape", "c_norm", "i_wq", "i_weights", "i_wkv", "i_wgate", "i_ape",
        "i_norm")]

# name -> (restype, argtypes). Pointers to device memory are passed as
# c_void_p (integers from torch's data_ptr()), which is ABI-compatible with
# the typed pointers of the header.
_SIGNATURES = {
    "hisa_last_error": (ctypes.c_char_p, []),
    "hisa_v4_attention_create": (ctypes.c_int, [ctypes.POINTER(HisaV4Config),
                                                ctypes.POINTER(HisaV4Weights), ctypes.c_int64,
                                                ctypes.c_int64, ctypes.c_int64,
                                                ctypes.POINTER(ctypes.c_void_p)]),
    "hisa_v4_attention_set_l2_prefetch": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int64]),
    "hisa_v4_attention_set_length": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int64,
                                                    ctypes.c_void_p]),
    "hisa_v4_attention_prefill": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p,
                                                 ctypes.c_int64, ctypes.c_void_p,
                                                 ctypes.c_void_p]),
    "hisa_v4_attention_decode": (ctypes.c_int, [ctypes.c_void_p] * 4),
    "hisa_v4_attention_info": (ctypes.c_int, [ctypes.c_void_p, _c_int64_p, _c_int64_p,
                                              ctypes.POINTER(ctypes.c_void_p),
                                              ctypes.POINTER(ctypes.c_void_p)]),
    "hisa_v4_attention_index_keys": (ctypes.c_int, [ctypes.c_void_p,
                                                    ctypes.POINTER(ctypes.c_void_p),
                                                    ctypes.POINTER(ctypes.c_void_p), _c_int64_p]),
    "hisa_v4_attention_destroy": (None, [ctypes.c_void_p]),
    "hisa_version": (ctypes.c_char_p, []),
    "hisa_set_device_pointer_checks": (ctypes.c_int, [ctypes.c_int]),
    "hisa_set_programmatic_launch": (ctypes.c_int, [ctypes.c_int]),
    "hisa_set_launch_graphs": (ctypes.c_int, [ctypes.c_int]),
    "hisa_launch_graph_stats": (None, [ctypes.POINTER(ctypes.c_int64)] * 3),
    "hisa_builtin_kernel_source": (ctypes.c_char_p, [ctypes.c_char_p]),
    "hisa_kernel_get": (
        ctypes.c_int,
        [
            ctypes.c_char_p,  # source (NULL = built-in)
            ctypes.c_char_p,  # kernel_name
            ctypes.c_char_p,  # params "a=1,b=2"
            ctypes.c_char_p,  # target
            ctypes.POINTER(ctypes.c_void_p),  # hisa_kernel **out
        ],
    ),
    "hisa_kernel_compile": (
        ctypes.c_int,
        [
            ctypes.c_char_p,  # source
            ctypes.c_char_p,  # kernel_name
            ctypes.c_char_p,  # params
            ctypes.c_char_p,  # target
            ctypes.c_char_p,  # char *out_path (a writable buffer, or NULL)
            ctypes.c_int64,  # path_capacity
        ],
    ),
    "hisa_kernel_launch": (
        ctypes.c_int,
        [
            ctypes.c_void_p,  # hisa_kernel *
            ctypes.POINTER(HisaArg),  # const hisa_arg *args
            ctypes.c_int32,  # num_args
            ctypes.c_void_p,  # CUstream
        ],
    ),
    "hisa_use_device": (ctypes.c_int, [ctypes.c_int32]),
    "hisa_kernel_argument_type": (
        ctypes.c_int,
        [
            ctypes.c_void_p,  # hisa_kernel *
            ctypes.c_int32,  # index
            ctypes.POINTER(ctypes.c_char_p),  # const char **element_type
            ctypes.POINTER(ctypes.c_int32),  # int32_t *element_bytes
        ],
    ),
    "hisa_cache_stats": (None, [_c_int64_p, _c_int64_p, _c_int64_p]),
    "hisa_cache_stats2": (None, [_c_int64_p, _c_int64_p, _c_int64_p, _c_int64_p]),
    "hisa_fp8_block_mean_pooling": (
        ctypes.c_int,
        [
            ctypes.c_void_p,  # const void *k          [n, dim] fp8
            ctypes.c_void_p,  # const float *k_scale   [n] f32
            ctypes.c_void_p,  # void *blocked_k        [ceil(n/kb), dim] fp8
            ctypes.c_void_p,  # float *blocked_scale   [ceil(n/kb)] f32
            ctypes.c_int64,  # n
            ctypes.c_int64,  # dim
            ctypes.c_int64,  # kb
            ctypes.c_void_p,  # CUstream
        ],
    ),
    "hisa_clean_and_maintain_logits": (
        ctypes.c_int,
        [
            ctypes.c_void_p,  # float *logits        [m, n] f32
            ctypes.c_void_p,  # const int32_t *s     [m]
            ctypes.c_void_p,  # const int32_t *e     [m]
            ctypes.c_int64,  # m
            ctypes.c_int64,  # n
            ctypes.c_void_p,  # CUstream
        ],
    ),
    # q, blocked_k, blocked_k_scale, weights, bks, bke, logits; m, nb, heads, dim; stream
    "hisa_pool_mqa_logits": (ctypes.c_int, [ctypes.c_void_p] * 7 + [ctypes.c_int64] * 4
                             + [ctypes.c_void_p]),
    # q, k, k_scale, topk_block_index, weights, ks, ke, out; m, n, topk, kb, heads, dim; stream
    "hisa_block_sparse_mqa_logits": (ctypes.c_int, [ctypes.c_void_p] * 8 + [ctypes.c_int64] * 6
                                     + [ctypes.c_void_p]),
    # x, starts, ends, out; rows, columns, k; relative; stream
    "hisa_topk": (ctypes.c_int, [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 3
                  + [ctypes.c_int32, ctypes.c_void_p]),
    # q, kv, attn_sink, topk_idxs, o, lse; batch, seq_len, heads, nkv, topk;
    # softmax_scale; stream
    "hisa_sparse_attn": (ctypes.c_int, [ctypes.c_void_p] * 6 + [ctypes.c_int64] * 5
                         + [ctypes.c_float, ctypes.c_void_p, ctypes.c_uint64,
                            ctypes.c_void_p]),
    # batch, seq_len, heads, topk; uint64_t *bytes
    "hisa_sparse_attn_workspace_size": (ctypes.c_int, [ctypes.c_int64] * 4
                                        + [ctypes.POINTER(ctypes.c_uint64)]),
    # q, k, v, o; batch, heads, seq_len, dim; causal; softmax_scale; stream
    "hisa_flash_attn": (ctypes.c_int, [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 4
                        + [ctypes.c_int32, ctypes.c_float, ctypes.c_void_p]),
    # data; bytes; stream
    "hisa_l2_prefetch": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p]),
    "hisa_topk_bf16": (ctypes.c_int, [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 3
                       + [ctypes.c_int32, ctypes.c_void_p]),
    # q, blocked_k, blocked_k_scale, weights, starts, ends, out; m, nb, heads, dim,
    # out_columns, window_kb; stream
    "hisa_pool_topk_blocks": (ctypes.c_int, [ctypes.c_void_p] * 7 + [ctypes.c_int64] * 6
                              + [ctypes.c_void_p]),
    # q, k, k_scale, topk_block_index, weights, ks, ke, out; m, n, topk, kb, heads, dim,
    # topk_tokens; stream
    "hisa_block_sparse_topk_tokens": (ctypes.c_int, [ctypes.c_void_p] * 8 + [ctypes.c_int64] * 7
                                      + [ctypes.c_void_p]),
    # m, n, heads, dim, kb, block_topk, topk_tokens; uint64_t *bytes
    "hisa_hisa_indexer_workspace_size": (ctypes.c_int, [ctypes.c_int64] * 7
                                         + [ctypes.POINTER(ctypes.c_uint64)]),
    # q, k, k_scale, weights, ks, ke, out; m, n, heads, dim, kb, block_topk, topk_tokens;
    # workspace, workspace_bytes, stream
    "hisa_hisa_indexer": (ctypes.c_int, [ctypes.c_void_p] * 7 + [ctypes.c_int64] * 7
                          + [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p]),
    # m, n, heads, dim, topk_tokens; uint64_t *bytes
    "hisa_flat_indexer_workspace_size": (ctypes.c_int, [ctypes.c_int64] * 5
                                         + [ctypes.POINTER(ctypes.c_uint64)]),
    # q, k, k_scale, weights, ks, ke, out; m, n, heads, dim, topk_tokens;
    # workspace, workspace_bytes, stream
    "hisa_flat_indexer": (ctypes.c_int, [ctypes.c_void_p] * 7 + [ctypes.c_int64] * 5
                          + [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p]),
}


# ---- locating and loading --------------------------------------------------

_REPO_ROOT = Path(__file__).resolve().parents[2]

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
_lib_path: Optional[str] = None


def _build_hint() -> str:
    return (
        "Build it on a machine with LLVM/MLIR 22 with `./scripts/build.sh` "
        "(it produces build/lib/libhisa_runtime.so in the repository), or point "
        "HISA_RUNTIME_LIB at an existing libhisa_runtime.so. On a GPU machine, "
        "copy the library built elsewhere to <repo>/build/lib/ "
        "(see docs/gpu-workflow.md)."
    )


def candidate_paths() -> list[Path]:
    """Where the library is looked for, in order (HISA_RUNTIME_LIB excluded)."""
    paths = []
    build_dir = os.environ.get("HISA_BUILD_DIR")
    if build_dir:
        paths.append(Path(build_dir) / "lib" / LIB_NAME)
    paths.append(_REPO_ROOT / "build" / "lib" / LIB_NAME)
    return paths


def _find() -> Path:
    env = os.environ.get("HISA_RUNTIME_LIB")
    if env:
        path = Path(env)
        if not path.is_file():
            raise LibraryNotFoundError(
                f"HISA_RUNTIME_LIB={env!r} does not name an existing file. " + _build_hint()
            )
        return path
    tried = candidate_paths()
    for path in tried:
        if path.is_file():
            return path
    raise LibraryNotFoundError(
        f"{LIB_NAME} not found (HISA_RUNTIME_LIB is not set; looked in "
        + ", ".join(str(p) for p in tried)
        + "). "
        + _build_hint()
    )


def _declare(cdll: ctypes.CDLL, path: Path) -> None:
    missing = []
    for name, (restype, argtypes) in _SIGNATURES.items():
        try:
            fn = getattr(cdll, name)
        except AttributeError:
            missing.append(name)
            continue
        fn.restype = restype
        fn.argtypes = argtypes
    if missing:
        raise LibraryNotFoundError(
            f"{path} does not export {', '.join(missing)}: it is not a libhisa_runtime.so "
            "matching include/hisa/Runtime/hisa_runtime.h (rebuild it). " + _build_hint()
        )


def lib() -> ctypes.CDLL:
    """The loaded runtime library (loaded on first use)."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            path = _find()
            try:
                # RTLD_LOCAL (the ctypes default): the runtime's own LLVM stays
                # private next to the copies that torch/triton load.
                cdll = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
            except OSError as exc:
                raise LibraryNotFoundError(
                    f"failed to load {path}: {exc}. " + _build_hint()
                ) from exc
            _declare(cdll, path)
            _lib_path = str(path)
            _lib = cdll
    return _lib


def lib_path() -> str:
    """Path of the loaded library (loads it if needed)."""
    lib()
    assert _lib_path is not None
    return _lib_path


def is_available() -> bool:
    """True if the library can be loaded; never raises."""
    try:
        lib()
        return True
    except HisaError:
        return False


def _decode(raw: Optional[bytes]) -> str:
    if raw is None:
        return ""
    return raw.decode("utf-8", errors="replace")


def last_error() -> str:
    """hisa_last_error() of this thread ("" if none)."""
    return _decode(lib().hisa_last_error())


def version() -> str:
    """hisa_version(): the compiler version (part of every cache key)."""
    return _decode(lib().hisa_version())


def set_programmatic_launch(enabled: bool) -> bool:
    """hisa_set_programmatic_launch(): whether hisa's kernels are launched as
    programmatic dependents of the previous kernel in their stream (their
    blocks are scheduled while its last wave runs; the results are the
    same). On by default; HISA_PDL=0 turns it off. Returns the previous
    setting."""
    return bool(lib().hisa_set_programmatic_launch(1 if enabled else 0))


def set_launch_graphs(enabled: bool) -> bool:
    """hisa_set_launch_graphs(): whether an operator that launches several
    kernels (hisa_indexer, flat_indexer) issues them as one CUDA graph
    launch (less host time per call; the same results). On by default;
    HISA_LAUNCH_GRAPHS=0 turns it off. Returns the previous setting."""
    return bool(lib().hisa_set_launch_graphs(1 if enabled else 0))


def launch_graph_stats() -> dict:
    """hisa_launch_graph_stats(): graphs instantiated, graph launches and
    kernel-node parameter updates so far."""
    values = [ctypes.c_int64() for _ in range(3)]
    lib().hisa_launch_graph_stats(*(ctypes.byref(v) for v in values))
    return dict(zip(("instantiated", "launched", "node_updates"), (v.value for v in values)))


def check(status: int, function: str, context: str = "") -> None:
    """Raise the HisaError subclass matching a nonzero status.

    The message holds the C function, the optional Python-side context (e.g.
    the kernel name), the status name and hisa_last_error().
    """
    if status == HISA_OK:
        return
    message = last_error() or "(hisa_last_error() is empty)"
    where = f"{function}({context})" if context else function
    status_name = _STATUS_NAMES.get(status, f"status {status}")
    cls = _STATUS_ERRORS.get(status, HisaError)
    raise cls(f"{where} failed [{status_name}]: {message}", status=status, function=function)
