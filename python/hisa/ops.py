"""The HISA memory-bound operators on torch tensors.

Names and signatures follow the TileLang anchors (examples/dsa_hisa), so that
these functions can be swapped in for them:

* ``fp8_block_mean_pooling(k, k_scale, k_block_size=128)``  (KERNELS.md 1.1)
* ``pool_mqa_logits(q, blocked_k, blocked_k_scale, weights, bks, bke)``
                                                             (KERNELS.md 1.2)
* ``clean_and_maintain_logits_(logits, ks, ke)``             (KERNELS.md 1.3)
* ``block_sparse_mqa_logits(q, k, k_scale, topk_block_index, k_block_size,
  weights, ks, ke)``                                         (KERNELS.md 2.1)
* ``mqa_logits(q, k, k_scale, weights, ks, ke)``  (the flat DeepSeek-V3.2
  indexer's logits, KERNELS.md "Flat indexer")
* ``topk(x, k, starts=None, ends=None)``  (exact top-k, KERNELS.md "Top-k,
  exactly")
* ``pool_topk_blocks`` and ``block_sparse_topk_tokens``  (the fused indexer
  stages 1 and 2, KERNELS.md "Fused indexer stages")
* ``hisa_indexer(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke, *,
  k_block_size, block_topk, topk_tokens)``  (HISA end to end)
* ``flat_indexer(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke,
  topk_tokens)``  (the V3.2 indexer: logits + exact top-k)

Every operator runs DSL kernels (kernels-dsl/) through the C ABI of
libhisa_runtime.so (include/hisa/Runtime/hisa_runtime.h), whose operator
layer (lib/Ops, lib/Indexer) checks sizes, picks the specialization and
launches; the first call for a specialization compiles it.

Every tensor is validated before the library is called; argument errors
raise ``hisa.InvalidArgumentError`` (a ValueError) naming the argument.
Kernels are launched on torch's current stream of the tensors' device.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Optional, Tuple

import torch

from . import _lib
from ._torch_util import (
    check_aligned,
    check_bool,
    check_contiguous,
    check_cuda,
    check_dtype,
    check_no_grad,
    check_int,
    check_no_overlap,
    check_rank,
    check_same_device,
    check_shape,
    check_tensor,
    context_ready,
    current_device_index,
    ensure_context,
    shape_str,
    stream_handle,
    stream_handle_of,
)
from ._lib import InvalidArgumentError

__all__ = [
    "fp8_block_mean_pooling",
    "clean_and_maintain_logits_",
    "pool_mqa_logits",
    "mqa_logits",
    "block_sparse_mqa_logits",
    "topk",
    "pool_topk_blocks",
    "block_sparse_topk_tokens",
    "hisa_indexer",
    "flat_indexer",
    "sparse_attn",
    "flash_attn",
    "l2_prefetch",
]

FP8 = torch.float8_e4m3fn
SUPPORTED_DIMS = (64, 128)
SUPPORTED_BLOCK_SIZES = (64, 128, 256)
# k and blocked_k are read/written with 16-byte vector accesses.
VECTOR_ALIGNMENT = 16
_INT32_MAX = 2**31 - 1
_INT32_MIN = -(2**31)
# Shapes the MQA logits kernels (pool_mqa_logits, block_sparse_mqa_logits)
# are compiled and tested for today.
MQA_SUPPORTED_HEADS = (16, 32, 64, 128)
MQA_SUPPORTED_DIMS = (64, 128)


def _into_out(out: torch.Tensor, name: str, result: torch.Tensor) -> torch.Tensor:
    """Under torch.compile, copies an op's result into the caller's `out`
    after the checks the eager path makes of it (copy_ alone would convert
    dtypes and broadcast shapes)."""
    if not isinstance(out, torch.Tensor):
        raise InvalidArgumentError(f"{name} must be a torch.Tensor, got {type(out).__qualname__}")
    if out.dtype != result.dtype or tuple(out.shape) != tuple(result.shape):
        raise InvalidArgumentError(
            f"{name} must be {list(result.shape)} {result.dtype}, got "
            f"{list(out.shape)} {out.dtype}")
    if out.device != result.device:
        raise InvalidArgumentError(f"{name} is on {out.device}; the inputs are on {result.device}")
    return out.copy_(result)


def fp8_block_mean_pooling(
    k: torch.Tensor,
    k_scale: torch.Tensor,
    k_block_size: int = 128,
    *,
    out: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Block mean pooling of fp8 keys (KERNELS.md 1.1).

    Args:
      k: [N, D] torch.float8_e4m3fn, CUDA, contiguous, 16-byte aligned; D in {64, 128}.
      k_scale: [N] (or [N, 1]) float32 per-token dequantization scale, same device.
      k_block_size: kb in {64, 128, 256}.
      out: optional preallocated (blocked_k, blocked_k_scale) to write into.

    Returns:
      (blocked_k [ceil(N/kb), D] float8_e4m3fn, blocked_k_scale [ceil(N/kb)] float32):
      block b pools rows [b*kb, min((b+1)*kb, N)); mean = sum(k*k_scale)/count,
      scale = max(max|mean|/448, 1e-10), blocked_k = fp8(mean/scale).
    """
    if torch.compiler.is_compiling():
        if out is None:
            return torch.ops.hisa.fp8_block_mean_pooling(k, k_scale, k_block_size)
        pooled, scale = torch.ops.hisa.fp8_block_mean_pooling(k, k_scale, k_block_size)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise InvalidArgumentError("out must be a (blocked_k, blocked_k_scale) pair")
        return _into_out(out[0], "out[0]", pooled), _into_out(out[1], "out[1]", scale)
    k = check_tensor("k", k)
    k_scale = check_tensor("k_scale", k_scale)
    kb = check_int("k_block_size", k_block_size, SUPPORTED_BLOCK_SIZES)
    check_no_grad("fp8_block_mean_pooling", (("k", k), ("k_scale", k_scale)))

    check_cuda("k", k)
    check_cuda("k_scale", k_scale)
    check_same_device("k_scale", k_scale, "k", k)
    check_dtype("k", k, FP8)
    check_dtype("k_scale", k_scale, torch.float32)
    check_rank("k", k, 2, "[N, D]")
    n, dim = (int(s) for s in k.shape)
    if dim not in SUPPORTED_DIMS:
        raise InvalidArgumentError(
            f"k has head dimension D={dim} (shape {shape_str(k.shape)}), which is not "
            f"supported (supported: {', '.join(map(str, SUPPORTED_DIMS))})"
        )
    if k_scale.dim() == 2 and int(k_scale.shape[1]) == 1:
        check_shape("k_scale", k_scale, (n, 1), "[N, 1]")
    else:
        check_shape("k_scale", k_scale, (n,), "[N]")
    check_contiguous("k", k)
    check_contiguous("k_scale", k_scale)
    check_aligned("k", k, VECTOR_ALIGNMENT)
    check_aligned("k_scale", k_scale, 4)

    nb = (n + kb - 1) // kb
    if out is not None:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise _lib.ArgumentTypeError(
                "out must be a tuple (blocked_k, blocked_k_scale), got "
                f"{type(out).__qualname__}"
            )
        blocked_k = check_tensor("out[0] (blocked_k)", out[0])
        blocked_scale = check_tensor("out[1] (blocked_k_scale)", out[1])
        for name, t, dtype, shape, sym in (
            ("out[0] (blocked_k)", blocked_k, FP8, (nb, dim), "[ceil(N/kb), D]"),
            ("out[1] (blocked_k_scale)", blocked_scale, torch.float32, (nb,), "[ceil(N/kb)]"),
        ):
            check_cuda(name, t)
            check_same_device(name, t, "k", k)
            check_dtype(name, t, dtype)
            check_shape(name, t, shape, sym)
            check_contiguous(name, t)
            check_no_overlap(name, t, (("k", k), ("k_scale", k_scale)))
        check_no_overlap("out[0] (blocked_k)", blocked_k,
                         (("out[1] (blocked_k_scale)", blocked_scale),))
    else:
        blocked_k = torch.empty((nb, dim), dtype=FP8, device=k.device)
        blocked_scale = torch.empty((nb,), dtype=torch.float32, device=k.device)
    check_aligned("blocked_k", blocked_k, VECTOR_ALIGNMENT)
    check_aligned("blocked_k_scale", blocked_scale, 4)

    if n == 0:
        return blocked_k, blocked_scale

    runtime = _lib.lib()
    with torch.cuda.device(k.device):
        ensure_context(k.device)
        status = runtime.hisa_fp8_block_mean_pooling(
            k.data_ptr(),
            k_scale.data_ptr(),
            blocked_k.data_ptr(),
            blocked_scale.data_ptr(),
            n,
            dim,
            kb,
            stream_handle(k.device),
        )
    _lib.check(status, "hisa_fp8_block_mean_pooling", f"n={n}, dim={dim}, kb={kb}")
    return blocked_k, blocked_scale


def clean_and_maintain_logits_(
    logits: torch.Tensor, ks: torch.Tensor, ke: torch.Tensor
) -> torch.Tensor:
    """Clean and maintain logits in place (KERNELS.md 1.3).

    Args:
      logits: [M, Nn] float32, CUDA, contiguous; modified in place.
      ks, ke: [M] int32 windows [ks[m], ke[m]) in logits' column coordinates
        (for HISA stage 1, the block windows s = ks // kb, e = ceil(ke / kb)).

    Columns outside [ks[m], ke[m]) become -inf, columns ks[m] and ke[m]-1
    become +inf, every other column keeps its value; an empty window
    (ks >= ke) leaves the row all -inf. Returns logits.
    """
    if torch.compiler.is_compiling():
        torch.ops.hisa.clean_and_maintain_logits_(logits, ks, ke)
        return logits
    logits = check_tensor("logits", logits)
    ks = check_tensor("ks", ks)
    ke = check_tensor("ke", ke)
    check_no_grad("clean_and_maintain_logits_", (("logits", logits),))

    check_cuda("logits", logits)
    check_cuda("ks", ks)
    check_cuda("ke", ke)
    check_same_device("ks", ks, "logits", logits)
    check_same_device("ke", ke, "logits", logits)
    check_dtype("logits", logits, torch.float32)
    check_dtype("ks", ks, torch.int32)
    check_dtype("ke", ke, torch.int32)
    check_rank("logits", logits, 2, "[M, Nn]")
    m, nn = (int(s) for s in logits.shape)
    check_shape("ks", ks, (m,), "[M]")
    check_shape("ke", ke, (m,), "[M]")
    if nn > _INT32_MAX:
        raise InvalidArgumentError(
            f"logits has {nn} columns; windows are int32, so at most {_INT32_MAX} are supported"
        )
    check_contiguous("logits", logits)
    check_contiguous("ks", ks)
    check_contiguous("ke", ke)

    if m == 0 or nn == 0:
        return logits

    runtime = _lib.lib()
    with torch.cuda.device(logits.device):
        ensure_context(logits.device)
        status = runtime.hisa_clean_and_maintain_logits(
            logits.data_ptr(),
            ks.data_ptr(),
            ke.data_ptr(),
            m,
            nn,
            stream_handle(logits.device),
        )
    _lib.check(status, "hisa_clean_and_maintain_logits", f"m={m}, n={nn}")
    return logits


# ---- MQA logits (DSL kernels, through the C ABI's operator layer) ---------------


# C ABI functions by name (ctypes attribute lookups cost a dictionary walk).
_C_FUNCTIONS: dict = {}

# The C++ kernels of topk, hisa_indexer and flat_indexer (_torch_cpp.py) by
# name, {} where libhisa_torch.so is not used; None until the first call.
_CPP_KERNELS: Optional[dict] = None


def _cpp_kernels() -> dict:
    global _CPP_KERNELS
    from . import _torch_cpp
    _CPP_KERNELS = _torch_cpp.ops() or {}
    return _CPP_KERNELS


def _cpp_failure(error: Exception) -> Exception:
    """An error of a C++ kernel that hisa explains (an argument it refused,
    a runtime status): returned, for the Python checks to name the argument
    before it is raised. Anything else (torch's out of memory, a CUDA error
    of torch's own ops) is raised as it came."""
    from . import _torch_cpp
    if not _torch_cpp.is_hisa_error(error):
        raise error
    return error


def _cpp_error(error: Exception) -> Exception:
    from . import _torch_cpp
    return _torch_cpp.error_from(error)


def _load_function(function: str):
    if not _C_FUNCTIONS:
        # The operators pass torch tensors checked to be CUDA memory of the
        # right device: the runtime's driver query per pointer and launch
        # (hisa_set_device_pointer_checks) would only repeat that.
        _lib.lib().hisa_set_device_pointer_checks(0)
    entry = _C_FUNCTIONS[function] = getattr(_lib.lib(), function)
    return entry


def _run(function: str, device: torch.device, *args, context: str = "") -> None:
    """Call C ABI operator `function` (hisa_runtime.h) with `args` (tensors
    become their device pointers; the caller holds them until the call
    returns) and torch's current stream of `device`; raise on a nonzero
    status. The operator layer behind it (lib/Ops) checks sizes and
    pointers, picks the kernel specialization and launches it."""
    entry = _C_FUNCTIONS.get(function)
    if entry is None:
        entry = _load_function(function)
    pointers = [arg.data_ptr() if type(arg) is torch.Tensor else _pointer_of(function, arg)
                for arg in args]
    index = device.index
    current = current_device_index()
    if index is None or index == current:
        if not context_ready(current):
            ensure_context(device)
        status = entry(*pointers, stream_handle_of(current))
    else:
        with torch.cuda.device(device):
            ensure_context(device)
            status = entry(*pointers, stream_handle_of(index))
    if status:
        _lib.check(status, function, context)


def _pointer_of(function: str, arg):
    """What _run passes for an argument that is not a plain tensor: a tensor
    subclass's data pointer, unless it holds no memory (a fake tensor of
    FakeTensorMode or make_fx outside torch.compile, or a meta tensor: its
    data_ptr() is made up, and a kernel writing there would fault the
    context); any other value as is."""
    if not isinstance(arg, torch.Tensor):
        return arg
    from torch._subclasses.fake_tensor import is_fake
    if arg.device.type == "meta" or is_fake(arg):
        raise InvalidArgumentError(
            f"{function}: a fake or meta tensor reached the eager call (no memory to "
            f"launch on); trace through torch.compile or call torch.ops.hisa.* "
            f"(which have fake implementations)")
    return arg.data_ptr()


def _check_index_dtype(name: str, t: torch.Tensor) -> None:
    if t.dtype not in (torch.int32, torch.int64):
        raise InvalidArgumentError(
            f"{name} must have dtype torch.int32 or torch.int64, got {t.dtype}"
        )


def _as_int32(t: torch.Tensor, lo: int = _INT32_MIN, hi: int = _INT32_MAX) -> torch.Tensor:
    """int32 as is; int64 converted to int32, clamped to [lo, hi] (within
    the int32 range).

    The clamping changes no result: every tensor these kernels index has
    fewer than 2**31 rows (checked), so a window bound or a block index
    beyond the int32 range selects the same (possibly empty) set of rows as
    its clamped value, and all negative block indices mean "no block". The
    conversion is a device-side op (no host synchronization).
    """
    if t.dtype == torch.int32:
        return t
    return t.clamp(max(lo, _INT32_MIN), min(hi, _INT32_MAX)).to(torch.int32)


def _check_mqa_q(name: str, q: torch.Tensor) -> Tuple[int, int, int]:
    """q [M, H, D] with H and D among the shapes the MQA kernels support."""
    check_rank(name, q, 3, "[M, H, D]")
    m, heads, dim = (int(s) for s in q.shape)
    if heads not in MQA_SUPPORTED_HEADS:
        raise InvalidArgumentError(
            f"{name} has H={heads} heads (shape {shape_str(q.shape)}), which is not "
            f"supported by the MQA logits kernels (supported: H in "
            f"{{{', '.join(map(str, MQA_SUPPORTED_HEADS))}}})"
        )
    if dim not in MQA_SUPPORTED_DIMS:
        raise InvalidArgumentError(
            f"{name} has head dimension D={dim} (shape {shape_str(q.shape)}), which is not "
            f"supported by the MQA logits kernels (supported: D in "
            f"{{{', '.join(map(str, MQA_SUPPORTED_DIMS))}}})"
        )
    return m, heads, dim


def _check_scale_shape(name: str, t: torch.Tensor, rows: int, sym: str) -> None:
    """[rows] or [rows, 1]."""
    if t.dim() == 2 and int(t.shape[1]) == 1:
        check_shape(name, t, (rows, 1), f"[{sym}, 1]")
    else:
        check_shape(name, t, (rows,), f"[{sym}]")


def _check_rows_fit_int32(name: str, rows: int, what: str) -> None:
    if rows > _INT32_MAX:
        raise InvalidArgumentError(
            f"{name} has {rows} rows; {what} are int32, so at most {_INT32_MAX} are supported"
        )


def _pool_mqa_logits(q, keys, scales, weights, starts, ends, names, rows_sym):
    """Shared body of pool_mqa_logits and mqa_logits; `names` are the
    caller's argument names (q, keys, scales, weights, starts, ends)."""
    q_name, k_name, s_name, w_name, start_name, end_name = names
    q = check_tensor(q_name, q)
    keys = check_tensor(k_name, keys)
    scales = check_tensor(s_name, scales)
    weights = check_tensor(w_name, weights)
    starts = check_tensor(start_name, starts)
    ends = check_tensor(end_name, ends)
    tensors = ((k_name, keys), (s_name, scales), (w_name, weights), (start_name, starts),
               (end_name, ends))
    check_no_grad("mqa_logits" if rows_sym == "N" else "pool_mqa_logits",
                  ((q_name, q), (k_name, keys), (s_name, scales), (w_name, weights)))

    check_cuda(q_name, q)
    for name, t in tensors:
        check_cuda(name, t)
    for name, t in tensors:
        check_same_device(name, t, q_name, q)
    check_dtype(q_name, q, FP8)
    check_dtype(k_name, keys, FP8)
    check_dtype(s_name, scales, torch.float32)
    check_dtype(w_name, weights, torch.float32)
    _check_index_dtype(start_name, starts)
    _check_index_dtype(end_name, ends)

    m, heads, dim = _check_mqa_q(q_name, q)
    check_rank(k_name, keys, 2, f"[{rows_sym}, D]")
    rows = int(keys.shape[0])
    check_shape(k_name, keys, (rows, dim), f"[{rows_sym}, D]")
    _check_scale_shape(s_name, scales, rows, rows_sym)
    check_shape(w_name, weights, (m, heads), "[M, H]")
    check_shape(start_name, starts, (m,), "[M]")
    check_shape(end_name, ends, (m,), "[M]")
    _check_rows_fit_int32(k_name, rows, f"the windows {start_name}/{end_name}")

    check_contiguous(q_name, q)
    for name, t in tensors:
        check_contiguous(name, t)
    # The runtime reads rows that are a multiple of 16 bytes as vectors, and
    # stages the scales in shared memory with 16-byte cp.async pieces.
    check_aligned(q_name, q, VECTOR_ALIGNMENT)
    check_aligned(k_name, keys, VECTOR_ALIGNMENT)
    check_aligned(s_name, scales, VECTOR_ALIGNMENT)
    check_aligned(w_name, weights, VECTOR_ALIGNMENT)

    logits = torch.empty((m, rows), dtype=torch.float32, device=q.device)
    if m == 0 or rows == 0:
        return logits

    # int64 windows are clamped to [0, rows], which leaves every window's
    # part inside [0, rows) as it was (the kernel also counts a negative
    # start as 0).
    # (Held in locals: a temporary's memory could be reused before the launch.)
    starts32 = _as_int32(starts, 0, rows)
    ends32 = _as_int32(ends, 0, rows)
    _run("hisa_pool_mqa_logits", q.device, q, keys, scales,
         weights, starts32, ends32, logits,
         m, rows, heads, dim)
    return logits


def pool_mqa_logits(
    q: torch.Tensor,
    blocked_k: torch.Tensor,
    blocked_k_scale: torch.Tensor,
    weights: torch.Tensor,
    bks: torch.Tensor,
    bke: torch.Tensor,
) -> torch.Tensor:
    """Pooled-key MQA logits, HISA stage 1.2 (KERNELS.md 1.2).

    Drop-in for TileLang's ``pool_mqa_attn_return_logits_fp8_interface``
    (same argument order, without its tuning flags)::

      logits[m, n] = sum_h ReLU(dot(q[m, h], blocked_k[n]) * blocked_k_scale[n]) * weights[m, h]

    for every n in the block window ``[bks[m], bke[m])`` (the dot product in
    f32 over the fp8 values). Values OUTSIDE a query's window are unspecified
    (the kernel computes the union window of a tile of queries, and nothing
    elsewhere): mask them, as HISA step 1.3 does with
    ``clean_and_maintain_logits_(logits, bks, bke)``. Windows should lie in
    ``[0, Nb]`` (as ``ks // kb`` and ``ceil(ke / kb)`` do): bke > Nb is
    clipped to Nb, a negative bks counts as 0 and int64 windows are clamped
    to [0, Nb]. An empty window (bks >= bke) computes nothing.

    Args:
      q: [M, H, D] torch.float8_e4m3fn, CUDA, contiguous, 16-byte aligned.
        Supported: H in {16, 32, 64, 128}, D in {64, 128} (others raise ValueError).
      blocked_k: [Nb, D] float8_e4m3fn pooled keys (``fp8_block_mean_pooling``).
      blocked_k_scale: [Nb] (or [Nb, 1]) float32 per-block dequantization scale.
      weights: [M, H] float32 per-(query, head) weights.
      bks, bke: [M] int32 (int64 accepted, converted on the device) block
        windows, for token windows ks/ke: ``bks = ks // kb``, ``bke = ceil(ke / kb)``.

    Returns:
      logits [M, Nb] float32 (new tensor, on q's device). With M == 0 or
      Nb == 0 nothing is launched.
    """
    if torch.compiler.is_compiling():
        return torch.ops.hisa.pool_mqa_logits(q, blocked_k, blocked_k_scale, weights, bks, bke)
    return _pool_mqa_logits(
        q, blocked_k, blocked_k_scale, weights, bks, bke,
        ("q", "blocked_k", "blocked_k_scale", "weights", "bks", "bke"), "Nb",
    )


def mqa_logits(
    q: torch.Tensor,
    k: torch.Tensor,
    k_scale: torch.Tensor,
    weights: torch.Tensor,
    ks: torch.Tensor,
    ke: torch.Tensor,
) -> torch.Tensor:
    """Flat MQA logits: the DeepSeek-V3.2 "lightning indexer" that HISA
    replaces (KERNELS.md, "Flat indexer")::

      logits[m, j] = sum_h ReLU(dot(q[m, h], k[j]) * k_scale[j]) * weights[m, h]

    for every raw token j of the window ``[ks[m], ke[m])``. It is
    ``pool_mqa_logits`` with blocked_k = k, blocked_k_scale = k_scale,
    bks = ks and bke = ke. As there, values OUTSIDE a query's window are
    unspecified: mask them (e.g. to -inf) before a top-k.

    Args:
      q: [M, H, D] torch.float8_e4m3fn, CUDA, contiguous, 16-byte aligned.
        Supported: H in {16, 32, 64, 128}, D in {64, 128} (others raise ValueError).
      k: [N, D] float8_e4m3fn keys.
      k_scale: [N] (or [N, 1]) float32 per-token dequantization scale.
      weights: [M, H] float32.
      ks, ke: [M] int32 (int64 accepted) token windows in k's rows, meant
        to lie in [0, N] (see ``pool_mqa_logits``).

    Returns:
      logits [M, N] float32. With M == 0 or N == 0 nothing is launched.
    """
    if torch.compiler.is_compiling():
        return torch.ops.hisa.mqa_logits(q, k, k_scale, weights, ks, ke)
    return _pool_mqa_logits(
        q, k, k_scale, weights, ks, ke,
        ("q", "k", "k_scale", "weights", "ks", "ke"), "N",
    )


def block_sparse_mqa_logits(
    q: torch.Tensor,
    k: torch.Tensor,
    k_scale: torch.Tensor,
    topk_block_index: torch.Tensor,
    k_block_size: int,
    weights: torch.Tensor,
    ks: torch.Tensor,
    ke: torch.Tensor,
) -> torch.Tensor:
    """Block-sparse MQA logits, HISA stage 2.1 (KERNELS.md 2.1).

    Drop-in for TileLang's
    ``fp8_native_block_sparse_mqa_attn_return_logits_interface`` (same
    argument order). With kb = k_block_size, slot ``t*kb + i`` of query m
    reads key row ``j = topk_block_index[m, t]*kb + i``::

      out[m, t*kb + i] = sum_h ReLU(dot(q[m, h], k[j]) * k_scale[j]) * weights[m, h]

    and ``-inf`` when j is outside ``[ks[m], ke[m])``, when ``j >= N``, or when
    the block index is negative (-1: "no block"; all its kb slots are -inf).
    Every slot is written.

    Args:
      q: [M, H, D] torch.float8_e4m3fn, CUDA, contiguous, 16-byte aligned.
        Supported: H in {16, 32, 64, 128}, D in {64, 128} (others raise ValueError).
      k: [N, D] float8_e4m3fn raw keys.
      k_scale: [N] (or [N, 1]) float32 per-token dequantization scale.
      topk_block_index: [M, T] int32 or int64 (e.g. torch.topk's indices of
        the stage-1 logits; int64 is converted on the device) block indices.
      k_block_size: kb in {64, 128, 256}.
      weights: [M, H] float32.
      ks, ke: [M] int32 (int64 accepted) token windows in k's rows.

    Returns:
      out [M, T*kb] float32. With M == 0 or T == 0 nothing is launched; with
      N == 0 every slot is -inf.
    """
    if torch.compiler.is_compiling():
        return torch.ops.hisa.block_sparse_mqa_logits(q, k, k_scale, topk_block_index,
                                                      k_block_size, weights, ks, ke)
    q = check_tensor("q", q)
    k = check_tensor("k", k)
    k_scale = check_tensor("k_scale", k_scale)
    topk_block_index = check_tensor("topk_block_index", topk_block_index)
    kb = check_int("k_block_size", k_block_size, SUPPORTED_BLOCK_SIZES)
    weights = check_tensor("weights", weights)
    ks = check_tensor("ks", ks)
    ke = check_tensor("ke", ke)
    check_no_grad("block_sparse_mqa_logits",
                  (("q", q), ("k", k), ("k_scale", k_scale), ("weights", weights)))
    tensors = (("k", k), ("k_scale", k_scale), ("topk_block_index", topk_block_index),
               ("weights", weights), ("ks", ks), ("ke", ke))

    check_cuda("q", q)
    for name, t in tensors:
        check_cuda(name, t)
    for name, t in tensors:
        check_same_device(name, t, "q", q)
    check_dtype("q", q, FP8)
    check_dtype("k", k, FP8)
    check_dtype("k_scale", k_scale, torch.float32)
    _check_index_dtype("topk_block_index", topk_block_index)
    check_dtype("weights", weights, torch.float32)
    _check_index_dtype("ks", ks)
    _check_index_dtype("ke", ke)

    m, heads, dim = _check_mqa_q("q", q)
    check_rank("k", k, 2, "[N, D]")
    n = int(k.shape[0])
    check_shape("k", k, (n, dim), "[N, D]")
    _check_scale_shape("k_scale", k_scale, n, "N")
    check_rank("topk_block_index", topk_block_index, 2, "[M, T]")
    topk = int(topk_block_index.shape[1])
    check_shape("topk_block_index", topk_block_index, (m, topk), "[M, T]")
    check_shape("weights", weights, (m, heads), "[M, H]")
    check_shape("ks", ks, (m,), "[M]")
    check_shape("ke", ke, (m,), "[M]")
    _check_rows_fit_int32("k", n, "the windows ks/ke")

    check_contiguous("q", q)
    for name, t in tensors:
        check_contiguous(name, t)
    check_aligned("q", q, VECTOR_ALIGNMENT)
    check_aligned("k", k, VECTOR_ALIGNMENT)
    check_aligned("k_scale", k_scale, VECTOR_ALIGNMENT)
    check_aligned("weights", weights, VECTOR_ALIGNMENT)

    out = torch.empty((m, topk * kb), dtype=torch.float32, device=q.device)
    if m == 0 or topk == 0:
        return out
    if n == 0:
        return out.fill_(float("-inf"))  # every row j >= N

    index32, ks32, ke32 = _as_int32(topk_block_index), _as_int32(ks), _as_int32(ke)
    _run("hisa_block_sparse_mqa_logits", q.device, q, k, k_scale,
         index32, weights, ks32, ke32, out,
         m, n, topk, kb, heads, dim)
    return out


# ---- Exact top-k (kernels-dsl/topk.mlir) ------------------------------------------

_TOPK_MAX_K = _INT32_MAX


_TOPK_FUNCTIONS = {torch.float32: "hisa_topk", torch.bfloat16: "hisa_topk_bf16"}


def topk(
    x: torch.Tensor,
    k: int,
    starts: Optional[torch.Tensor] = None,
    ends: Optional[torch.Tensor] = None,
    *,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Exact top-k column indices of each row (KERNELS.md "Top-k, exactly").

    ``out[r]`` holds the columns of the k largest values of ``x[r]`` (within
    ``[starts[r], ends[r])`` when windows are given), in no particular order.
    Ties at the threshold go to the lower columns, so the set is
    deterministic; -inf and NaN are never selected; when a row has fewer
    than k selectable values the remaining slots hold -1. Exact for every
    input (radix select without a candidate buffer).

    Args:
      x: [R, C] float32 or bfloat16 (selected as the float32 values it
        widens to), CUDA, contiguous (C < 2**31).
      k: 1 <= k <= C.
      starts, ends: optional [R] int32 (int64 accepted, converted on the
        device) column windows, clamped to [0, C]; both or neither.
      out: optional preallocated [R, k] int32 output.

    Returns:
      [R, k] int32 absolute column indices (-1 padded).
    """
    if torch.compiler.is_compiling():
        result = torch.ops.hisa.topk(x, k, starts, ends)
        return result if out is None else _into_out(out, "out", result)
    # With libhisa_torch.so, a call into a new output is one dispatch into its
    # C++ kernel. An error there is explained by the checks below, which name
    # the argument as they always did (and the C++ error is raised if they pass).
    failed = None
    # (A CPU x would dispatch back here through the op's Python kernel.)
    # (Sizes of other types than int, a bool or a numpy integer, take the
    # path below, which converts or refuses them as it always did.)
    if out is None and type(x) is torch.Tensor and type(k) is int and x.is_cuda:
        kernels = _CPP_KERNELS if _CPP_KERNELS is not None else _cpp_kernels()
        if kernels:
            try:
                return kernels["topk"](x, k, starts, ends)
            except (ValueError, TypeError, RuntimeError) as error:
                failed = _cpp_failure(error)
    return _topk_checked(x, k, starts, ends, out, failed)


def _topk_checked(x, k, starts, ends, out, failed):
    """topk past its C++ kernel: the checks that name the argument, then the
    C ABI. The op's Python kernel (_torch_ops.py) calls it directly: the
    dispatcher runs that kernel for tensors of another backend than CUDA
    (one outranking CUDA mixed with CUDA ones too), which the C++ kernel
    would send back to it without end."""
    # The common call (whole rows into a new output), checked with a few
    # attribute reads (host time per call matters to servers); anything else,
    # and anything wrong, takes the path below, which names what is wrong.
    if (failed is None and starts is None and ends is None and out is None
            and type(x) is torch.Tensor and type(k) is int and x.is_cuda and x.dim() == 2):
        function = _TOPK_FUNCTIONS.get(x.dtype)
        rows, columns = x.shape
        if function is not None and rows > 0 and 1 <= k <= columns <= _INT32_MAX \
                and x.is_contiguous():
            out = torch.empty((rows, k), dtype=torch.int32, device=x.device)
            _run(function, x.device, x, None, None, out, rows, columns, k, 0)
            return out
    x = check_tensor("x", x)
    check_cuda("x", x)
    if x.dtype not in (torch.float32, torch.bfloat16):
        raise InvalidArgumentError(
            f"x must have dtype torch.float32 or torch.bfloat16, got {x.dtype}"
        )
    check_rank("x", x, 2, "[R, C]")
    rows, columns = (int(s) for s in x.shape)
    check_contiguous("x", x)
    k = check_int("k", k)
    if k < 1 or k > columns:
        raise InvalidArgumentError(f"k must be in [1, C] = [1, {columns}], got {k}")
    if columns > _INT32_MAX:
        raise InvalidArgumentError(
            f"x has {columns} columns; indices are int32, so at most {_INT32_MAX} are supported"
        )
    if (starts is None) != (ends is None):
        raise InvalidArgumentError("starts and ends must be given together (or neither)")
    windowed = starts is not None
    if windowed:
        for name, t in (("starts", starts), ("ends", ends)):
            check_tensor(name, t)
            check_cuda(name, t)
            check_same_device(name, t, "x", x)
            _check_index_dtype(name, t)
            check_shape(name, t, (rows,), "[R]")
            check_contiguous(name, t)
        starts = _as_int32(starts)
        ends = _as_int32(ends)
    if failed is not None:
        raise _cpp_error(failed) from None
    if out is None:
        out = torch.empty(rows, k, dtype=torch.int32, device=x.device)
    else:
        check_tensor("out", out)
        check_cuda("out", out)
        check_same_device("out", out, "x", x)
        check_dtype("out", out, torch.int32)
        check_shape("out", out, (rows, k), "[R, k]")
        check_contiguous("out", out)
        check_no_overlap("out", out, (("x", x), ("starts", starts), ("ends", ends)))
    if rows == 0:
        return out
    _run(_TOPK_FUNCTIONS[x.dtype], x.device, x, starts if windowed else None,
         ends if windowed else None, out, rows, columns, k, 0)
    return out


# ---- Fused indexer stages and the HISA indexer (KERNELS.md "Fused indexer stages") --

def _check_windows(names, m: int, device_ref, ref_name: str):
    out = []
    for name, t in names:
        t = check_tensor(name, t)
        check_cuda(name, t)
        check_same_device(name, t, ref_name, device_ref)
        _check_index_dtype(name, t)
        check_shape(name, t, (m,), "[M]")
        check_contiguous(name, t)
        out.append(t)
    return out


def _check_keys(q_name, q, k_name, k, s_name, scale, w_name, weights, rows_sym):
    """q [M, H, D] fp8, keys [rows, D] fp8, scales [rows] f32, weights
    [M, H] f32: checks naming the argument; returns (m, heads, dim, rows)."""
    q = check_tensor(q_name, q)
    check_cuda(q_name, q)
    for name, t in ((k_name, k), (s_name, scale), (w_name, weights)):
        check_tensor(name, t)
        check_cuda(name, t)
        check_same_device(name, t, q_name, q)
    check_dtype(q_name, q, FP8)
    check_dtype(k_name, k, FP8)
    check_dtype(s_name, scale, torch.float32)
    check_dtype(w_name, weights, torch.float32)
    m, heads, dim = _check_mqa_q(q_name, q)
    check_rank(k_name, k, 2, f"[{rows_sym}, D]")
    rows = int(k.shape[0])
    check_shape(k_name, k, (rows, dim), f"[{rows_sym}, D]")
    _check_scale_shape(s_name, scale, rows, rows_sym)
    check_shape(w_name, weights, (m, heads), "[M, H]")
    _check_rows_fit_int32(k_name, rows, "the windows")
    for name, t in ((q_name, q), (k_name, k), (s_name, scale), (w_name, weights)):
        check_contiguous(name, t)
        check_aligned(name, t, VECTOR_ALIGNMENT)
    return m, heads, dim, rows


def _pool_topk_blocks(q, blocked_k, blocked_k_scale, weights, starts, ends, block_topk, kb):
    m, heads, dim = (int(t) for t in q.shape)
    nb = int(blocked_k.shape[0])
    out = torch.empty((m, min(block_topk, nb)), dtype=torch.int32, device=q.device)
    if m == 0 or nb == 0:
        return out
    _run("hisa_pool_topk_blocks", q.device, q, blocked_k,
         blocked_k_scale, weights, starts, ends,
         out, m, nb, heads, dim, out.shape[1], kb)
    return out


def pool_topk_blocks(
    q: torch.Tensor,
    blocked_k: torch.Tensor,
    blocked_k_scale: torch.Tensor,
    weights: torch.Tensor,
    bks: torch.Tensor,
    bke: torch.Tensor,
    block_topk: int,
) -> torch.Tensor:
    """HISA fused stage 1 (KERNELS.md 1.2 + 1.3 + 1.4) in one kernel: the
    pooled-key MQA logits of each query's block window ``[bks, bke)``,
    cleaned (the first and last block of the window become +inf, so they
    are always kept), and their exact top-``block_topk``. The [M, Nb]
    logits never reach global memory.

    Equals ``topk(clean_and_maintain_logits_(pool_mqa_logits(...), bks, bke),
    min(block_topk, Nb), bks, bke)`` up to the order inside a row (ties go
    to the lower block; -inf/NaN logits are never selected; -1 fills the
    slots past the window's blocks).

    Args:
      q, blocked_k, blocked_k_scale, weights: as ``pool_mqa_logits``.
      bks, bke: [M] int32 (int64 accepted) block windows, within [0, Nb]
        (bke is clipped to Nb, negative values count as 0).
      block_topk: >= 1; the output has min(block_topk, Nb) columns.

    Returns:
      [M, min(block_topk, Nb)] int32 block indices, -1 padded. Windows of
      up to 32768 pooled keys are supported (ValueError beyond).
    """
    if torch.compiler.is_compiling():
        return torch.ops.hisa.pool_topk_blocks(q, blocked_k, blocked_k_scale, weights, bks, bke,
                                               block_topk)
    m, heads, dim, nb = _check_keys("q", q, "blocked_k", blocked_k, "blocked_k_scale",
                                    blocked_k_scale, "weights", weights, "Nb")
    block_topk = check_int("block_topk", block_topk)
    if block_topk < 1:
        raise InvalidArgumentError(f"block_topk must be >= 1, got {block_topk}")
    bks, bke = _check_windows((("bks", bks), ("bke", bke)), m, q, "q")
    # Sizes the kernel cannot hold on chip are refused by lib/Ops.
    bks32, bke32 = _as_int32(bks, 0, nb), _as_int32(bke, 0, nb)
    return _pool_topk_blocks(q, blocked_k, blocked_k_scale, weights, bks32, bke32, block_topk, 1)


def _block_sparse_topk_tokens(q, k, k_scale, topk_block_index, kb, weights, ks, ke, topk_tokens):
    m, heads, dim = (int(t) for t in q.shape)
    n = int(k.shape[0])
    slots = int(topk_block_index.shape[1])
    if m > 0 and (slots == 0 or n == 0):
        return torch.full((m, topk_tokens), -1, dtype=torch.int32, device=q.device)
    out = torch.empty((m, topk_tokens), dtype=torch.int32, device=q.device)
    if m == 0:
        return out
    _run("hisa_block_sparse_topk_tokens", q.device, q, k, k_scale,
         topk_block_index, weights, ks, ke,
         out, m, n, slots, kb, heads, dim, topk_tokens)
    return out


def block_sparse_topk_tokens(
    q: torch.Tensor,
    k: torch.Tensor,
    k_scale: torch.Tensor,
    topk_block_index: torch.Tensor,
    k_block_size: int,
    weights: torch.Tensor,
    ks: torch.Tensor,
    ke: torch.Tensor,
    topk_tokens: int,
) -> torch.Tensor:
    """HISA fused stage 2 (KERNELS.md 2.1 + 2.2 + 2.3) in one kernel: the
    block-sparse MQA logits of the T selected key blocks of each query, their
    exact top-``topk_tokens`` and the conversion of the chosen slots to
    token offsets relative to ``ks``. The [M, T*kb] logits never reach
    global memory.

    Equals converting ``topk(block_sparse_mqa_logits(...), topk_tokens)``
    (slot ``t*kb + i`` -> ``topk_block_index[m, t]*kb + i - ks[m]``) up to the
    order inside a row, with the blocks of each row taken in ascending order:
    ties go to the lower token whatever order the blocks are given in (so
    two calls select the same set), slots outside ``[ks, ke)`` (or of -1
    blocks: any negative index) are never selected, -1 fills the rest.
    Missing blocks cost only their place in the kernel's sort of the row's
    blocks: it computes the logits of the blocks present only.

    Args:
      q, k, k_scale, topk_block_index, k_block_size, weights, ks, ke: as
        ``block_sparse_mqa_logits`` (T*kb at most 32768).
      topk_tokens: >= 1 (may exceed T*kb: the extra slots hold -1).

    Returns:
      [M, topk_tokens] int32 offsets in ``[0, ke - ks)``, -1 padded.
    """
    if torch.compiler.is_compiling():
        return torch.ops.hisa.block_sparse_topk_tokens(q, k, k_scale, topk_block_index,
                                                       k_block_size, weights, ks, ke, topk_tokens)
    m, heads, dim, n = _check_keys("q", q, "k", k, "k_scale", k_scale, "weights", weights, "N")
    kb = check_int("k_block_size", k_block_size, SUPPORTED_BLOCK_SIZES)
    topk_tokens = check_int("topk_tokens", topk_tokens)
    if topk_tokens < 1:
        raise InvalidArgumentError(f"topk_tokens must be >= 1, got {topk_tokens}")
    topk_block_index = check_tensor("topk_block_index", topk_block_index)
    check_cuda("topk_block_index", topk_block_index)
    check_same_device("topk_block_index", topk_block_index, "q", q)
    _check_index_dtype("topk_block_index", topk_block_index)
    check_rank("topk_block_index", topk_block_index, 2, "[M, T]")
    check_shape("topk_block_index", topk_block_index, (m, int(topk_block_index.shape[1])), "[M, T]")
    check_contiguous("topk_block_index", topk_block_index)
    ks, ke = _check_windows((("ks", ks), ("ke", ke)), m, q, "q")
    index32, ks32, ke32 = _as_int32(topk_block_index), _as_int32(ks), _as_int32(ke)
    return _block_sparse_topk_tokens(q, k, k_scale, index32, kb, weights, ks32, ke32,
                                     topk_tokens)


def hisa_indexer(
    q: torch.Tensor,
    k: torch.Tensor,
    k_scale: torch.Tensor,
    weights: torch.Tensor,
    cu_seqlen_ks: torch.Tensor,
    cu_seqlen_ke: torch.Tensor,
    *,
    k_block_size: int = 128,
    block_topk: int,
    topk_tokens: int,
) -> torch.Tensor:
    """The HISA hierarchical sparse indexer, end to end (KERNELS.md, HISA
    1.1 -> 2.3), as three kernels: block mean pooling of the keys, fused
    stage 1 (``pool_topk_blocks``: pooled logits, cleaning, top blocks) and
    fused stage 2 (``block_sparse_topk_tokens``: token logits in the chosen
    blocks, top tokens, offsets). Neither stage's logits reach global memory.

    Drop-in for TileLang's ``hisa_indexer`` (same arguments). Selections
    are exact in f32 (TileLang rounds the block scores to bf16), so results
    agree with it up to ties.

    Args:
      q: [M, H, D] float8_e4m3fn (H in {16, 32, 64, 128}, D in {64, 128}).
      k: [N, D] float8_e4m3fn keys; k_scale: [N] (or [N, 1]) float32.
      weights: [M, H] float32.
      cu_seqlen_ks, cu_seqlen_ke: [M] int32 (int64 accepted) token window
        [ks, ke) of each query in k's rows (ke <= N).
      k_block_size: kb in {64, 128, 256}.
      block_topk: key blocks kept per query in stage 1 (>= 1; T*kb <= 32768).
      topk_tokens: tokens kept per query (>= 1).

    Returns:
      topk_indices [M, topk_tokens] int32: offsets relative to ks, each in
      [0, ke - ks), distinct within a row, -1 padded.
    """
    if torch.compiler.is_compiling():
        return torch.ops.hisa.hisa_indexer(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke,
                                           k_block_size, block_topk, topk_tokens)
    failed = None
    if (type(q) is torch.Tensor and q.is_cuda and type(k_block_size) is int
            and type(block_topk) is int and type(topk_tokens) is int):
        kernels = _CPP_KERNELS if _CPP_KERNELS is not None else _cpp_kernels()
        if kernels:
            try:
                return kernels["hisa_indexer"](q, k, k_scale, weights, cu_seqlen_ks,
                                               cu_seqlen_ke, k_block_size, block_topk,
                                               topk_tokens)
            except (ValueError, TypeError, RuntimeError) as error:
                failed = _cpp_failure(error)  # the checks below name the argument
    return _hisa_indexer_checked(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke,
                                 k_block_size, block_topk, topk_tokens, failed)


def _hisa_indexer_checked(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke, k_block_size,
                          block_topk, topk_tokens, failed):
    """hisa_indexer past its C++ kernel (see _topk_checked)."""
    m, heads, dim, n = _check_keys("q", q, "k", k, "k_scale", k_scale, "weights", weights, "N")
    kb = check_int("k_block_size", k_block_size, SUPPORTED_BLOCK_SIZES)
    block_topk = check_int("block_topk", block_topk)
    if block_topk < 1:
        raise InvalidArgumentError(f"block_topk must be >= 1, got {block_topk}")
    topk_tokens = check_int("topk_tokens", topk_tokens)
    if topk_tokens < 1:
        raise InvalidArgumentError(f"topk_tokens must be >= 1, got {topk_tokens}")
    ks, ke = _check_windows((("cu_seqlen_ks", cu_seqlen_ks), ("cu_seqlen_ke", cu_seqlen_ke)),
                            m, q, "q")
    if failed is not None:
        raise _cpp_error(failed) from None
    ks = _as_int32(ks, 0, n)
    ke = _as_int32(ke, 0, n)
    if n == 0:
        return torch.full((m, topk_tokens), -1, dtype=torch.int32, device=q.device)
    # The workspace query checks the sizes (the stages' on-chip limits) in
    # lib/Indexer, also when there is nothing to compute.
    workspace_bytes = _workspace_bytes("hisa_hisa_indexer_workspace_size", m, n, heads, dim,
                                       kb, block_topk, topk_tokens)
    if m == 0:
        return torch.empty((0, topk_tokens), dtype=torch.int32, device=q.device)
    out = torch.empty((m, topk_tokens), dtype=torch.int32, device=q.device)
    workspace = torch.empty(workspace_bytes, dtype=torch.uint8, device=q.device)
    _run("hisa_hisa_indexer", q.device, q, k, k_scale,
         weights, ks, ke, out, m, n, heads, dim, kb,
         block_topk, topk_tokens, workspace, workspace.numel())
    return out


# ---- DeepSeek-V4 sparse attention (KERNELS.md "DeepSeek-V4 sparse attention") ----

SPARSE_ATTN_DIM = 512


def sparse_attn(
    q: torch.Tensor,
    kv: torch.Tensor,
    attn_sink: torch.Tensor,
    topk_idxs: torch.Tensor,
    softmax_scale: float,
    return_lse: bool = False,
):
    """DeepSeek-V4 sparse attention: one shared KV head as key and value.

    For each token (b, s) and head h: ``s_j = softmax_scale * q . kv[b, idx_j]``
    over the token's K indices; ``o = sum_j exp(s_j - m) kv[b, idx_j] /
    (sum_j exp(s_j - m) + exp(attn_sink[h] - m))``. Index -1 (and any index
    outside [0, Nkv)) contributes nothing; a token without a valid index gets
    o = 0.

    Args:
      q: [B, S, H, 512] bfloat16 (any H >= 1; blocks of 64 heads).
      kv: [B, Nkv, 512] bfloat16.
      attn_sink: [H] float32 (a logit per head, in the denominator only).
      topk_idxs: [B, S, K] int32 (int64 accepted), 1 <= K <= 4096, any order,
        repeats allowed.
      softmax_scale: the scale of the dot products (512 ** -0.5 in V4).
      return_lse: also return lse [B, S, H] float32, the natural log of each
        denominator (sink included), to merge with other attention.

    Returns:
      o [B, S, H, 512] bfloat16, or (o, lse).
    """
    check_bool("return_lse", return_lse)
    if torch.compiler.is_compiling():
        o, lse = torch.ops.hisa.sparse_attn(q, kv, attn_sink, topk_idxs, float(softmax_scale),
                                            return_lse)
        return (o, lse) if return_lse else o
    failed = None
    if type(q) is torch.Tensor and q.is_cuda and type(softmax_scale) in (float, int):
        kernels = _CPP_KERNELS if _CPP_KERNELS is not None else _cpp_kernels()
        if kernels:
            try:
                o, lse = kernels["sparse_attn"](q, kv, attn_sink, topk_idxs, softmax_scale,
                                                return_lse)
                return (o, lse) if return_lse else o
            except (ValueError, TypeError, RuntimeError) as error:
                failed = _cpp_failure(error)  # the checks below name the argument
    return _sparse_attn_checked(q, kv, attn_sink, topk_idxs, softmax_scale, return_lse, failed)


def _sparse_attn_checked(q, kv, attn_sink, topk_idxs, softmax_scale, return_lse, failed):
    """sparse_attn past its C++ kernel (see _topk_checked)."""
    check_no_grad("sparse_attn", (("q", q), ("kv", kv), ("attn_sink", attn_sink)))
    q = check_tensor("q", q)
    check_cuda("q", q)
    for name, t in (("kv", kv), ("attn_sink", attn_sink), ("topk_idxs", topk_idxs)):
        check_tensor(name, t)
        check_cuda(name, t)
        check_same_device(name, t, "q", q)
    check_dtype("q", q, torch.bfloat16)
    check_dtype("kv", kv, torch.bfloat16)
    check_dtype("attn_sink", attn_sink, torch.float32)
    _check_index_dtype("topk_idxs", topk_idxs)
    check_rank("q", q, 4, "[B, S, H, D]")
    batch, seq_len, heads, dim = (int(x) for x in q.shape)
    if dim != SPARSE_ATTN_DIM:
        raise InvalidArgumentError(
            f"q has D = {dim} (shape {shape_str(q.shape)}); sparse_attn supports "
            f"D = {SPARSE_ATTN_DIM} (DeepSeek-V4)"
        )
    check_rank("kv", kv, 3, "[B, Nkv, 512]")
    nkv = int(kv.shape[1])
    check_shape("kv", kv, (batch, nkv, SPARSE_ATTN_DIM), "[B, Nkv, 512]")
    check_shape("attn_sink", attn_sink, (heads,), "[H]")
    check_rank("topk_idxs", topk_idxs, 3, "[B, S, K]")
    topk = int(topk_idxs.shape[2])
    check_shape("topk_idxs", topk_idxs, (batch, seq_len, topk), "[B, S, K]")
    for name, t in (("q", q), ("kv", kv), ("attn_sink", attn_sink), ("topk_idxs", topk_idxs)):
        check_contiguous(name, t)
    if isinstance(softmax_scale, bool) or not isinstance(softmax_scale, (int, float)):
        raise _lib.ArgumentTypeError(
            f"softmax_scale must be a float, got {type(softmax_scale).__qualname__}"
        )
    if failed is not None:
        raise _cpp_error(failed) from None
    idx = _as_int32(topk_idxs, -1, _INT32_MAX)
    o = torch.empty_like(q)
    lse = (torch.empty((batch, seq_len, heads), dtype=torch.float32, device=q.device)
           if return_lse else None)
    # Sizes are checked by the size query, also when there is nothing to do.
    workspace_bytes = _workspace_bytes("hisa_sparse_attn_workspace_size", batch, seq_len,
                                       heads, topk, device=q.device)
    if batch * seq_len > 0:
        workspace = torch.empty(workspace_bytes, dtype=torch.uint8, device=q.device)
        _run("hisa_sparse_attn", q.device, q, kv, attn_sink, idx, o, lse,
             batch, seq_len, heads, nkv, topk, float(softmax_scale), workspace,
             workspace.numel())
    return (o, lse) if return_lse else o


def flash_attn(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool = False,
    softmax_scale: Optional[float] = None,
) -> torch.Tensor:
    """Dense attention forward: ``softmax(q k^T * scale [+ causal mask]) v``.

    The layout and semantics of ``torch.nn.functional.scaled_dot_product_attention``
    (``is_causal`` = ``causal``: query i sees keys 0..i).

    Args:
      q, k, v: [B, H, S, D] bfloat16, contiguous, D in {64, 128} (the same
        shape: one key/value head per query head).
      causal: mask keys after the query.
      softmax_scale: default D ** -0.5.

    Returns:
      o [B, H, S, D] bfloat16.
    """
    scale = softmax_scale
    check_bool("causal", causal)  # as SDPA's is_causal
    if torch.compiler.is_compiling():
        return torch.ops.hisa.flash_attn(q, k, v, causal,
                                         float(q.shape[-1] ** -0.5 if scale is None else scale))
    check_no_grad("flash_attn", (("q", q), ("k", k), ("v", v)))
    q = check_tensor("q", q)
    check_cuda("q", q)
    for name, t in (("k", k), ("v", v)):
        check_tensor(name, t)
        check_cuda(name, t)
        check_same_device(name, t, "q", q)
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_dtype(name, t, torch.bfloat16)
    check_rank("q", q, 4, "[B, H, S, D]")
    batch, heads, seq_len, dim = (int(x) for x in q.shape)
    if dim not in (64, 128):
        raise InvalidArgumentError(
            f"q has D = {dim} (shape {shape_str(q.shape)}); flash_attn supports D in (64, 128)"
        )
    for name, t in (("k", k), ("v", v)):
        check_shape(name, t, (batch, heads, seq_len, dim), "[B, H, S, D] (as q)")
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_contiguous(name, t)
    if scale is None:
        scale = dim ** -0.5
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise _lib.ArgumentTypeError(
            f"softmax_scale must be a float or None, got {type(scale).__qualname__}"
        )
    o = torch.empty_like(q)
    if q.numel() > 0:
        _run("hisa_flash_attn", q.device, q, k, v, o, batch, heads, seq_len, dim,
             1 if causal else 0, float(scale))
    return o


def l2_prefetch(t: torch.Tensor, nbytes: Optional[int] = None) -> None:
    """Start bringing the first ``nbytes`` bytes of ``t`` (default: all of
    it) into the GPU's L2 cache, on the current stream, and return.

    A hint: nothing waits for the prefetch and no result depends on it.
    Issue it on a side stream while the memory system idles (a chain of
    small launches), before a launch that streams ``t`` (the next
    projection's weights). Bytes past the last whole 16 are not prefetched.
    Not a torch custom op: it has no outputs for a graph to order.

    Args:
      t: a contiguous CUDA tensor, 16-byte aligned.
      nbytes: at most ``t.numel() * t.element_size()``.
    """
    t = check_tensor("t", t)
    check_cuda("t", t)
    check_contiguous("t", t)
    size = t.numel() * t.element_size()
    if nbytes is None:
        nbytes = size
    if isinstance(nbytes, bool) or not isinstance(nbytes, int):
        raise _lib.ArgumentTypeError(
            f"nbytes must be an int or None, got {type(nbytes).__qualname__}")
    if nbytes < 0 or nbytes > size:
        raise InvalidArgumentError(
            f"nbytes = {nbytes} must be in [0, {size}] (the bytes of t, shape "
            f"{shape_str(t.shape)}, {t.dtype})")
    if nbytes:
        _run("hisa_l2_prefetch", t.device, t, nbytes)


@functools.lru_cache(maxsize=4096)
def _workspace_bytes(size_function: str, *sizes, device: Optional[torch.device] = None) -> int:
    """The bytes C ABI `size_function` reports for `sizes`. With `device`,
    asked with that device's context current: a plan that depends on the
    device's SM count (sparse attention's splits) is then the one the launch
    on it makes."""
    size = ctypes.c_uint64()
    query = getattr(_lib.lib(), size_function)
    index = None if device is None else device.index
    current = current_device_index() if device is not None else None
    if device is None or ((index is None or index == current) and context_ready(current)):
        status = query(*sizes, ctypes.byref(size))
    else:
        with torch.cuda.device(device):
            ensure_context(device)
            status = query(*sizes, ctypes.byref(size))
    _lib.check(status, size_function)
    return max(int(size.value), 1)


def _workspace(size_function: str, device: torch.device, *sizes) -> torch.Tensor:
    """A workspace of the bytes C ABI `size_function` reports (from torch's
    caching allocator, so repeated calls do not reach cudaMalloc; the size
    is asked once per shape)."""
    return torch.empty(_workspace_bytes(size_function, *sizes), dtype=torch.uint8, device=device)


def flat_indexer(
    q: torch.Tensor,
    k: torch.Tensor,
    k_scale: torch.Tensor,
    weights: torch.Tensor,
    cu_seqlen_ks: torch.Tensor,
    cu_seqlen_ke: torch.Tensor,
    topk_tokens: int,
) -> torch.Tensor:
    """The flat DeepSeek-V3.2 indexer (KERNELS.md "Flat indexer"): the MQA
    logits of every token of each query's window, then their exact
    top-``topk_tokens`` (``mqa_logits`` + windowed ``topk``). The [M, N]
    logits are materialized (4 bytes per query and key).

    Returns:
      [M, topk_tokens] int32 offsets relative to ks, in [0, ke - ks),
      distinct within a row, -1 padded.
    """
    if torch.compiler.is_compiling():
        return torch.ops.hisa.flat_indexer(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke,
                                           topk_tokens)
    failed = None
    if type(q) is torch.Tensor and q.is_cuda and type(topk_tokens) is int:
        kernels = _CPP_KERNELS if _CPP_KERNELS is not None else _cpp_kernels()
        if kernels:
            try:
                return kernels["flat_indexer"](q, k, k_scale, weights, cu_seqlen_ks,
                                               cu_seqlen_ke, topk_tokens)
            except (ValueError, TypeError, RuntimeError) as error:
                failed = _cpp_failure(error)  # the checks below name the argument
    return _flat_indexer_checked(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke,
                                 topk_tokens, failed)


def _flat_indexer_checked(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke, topk_tokens,
                          failed):
    """flat_indexer past its C++ kernel (see _topk_checked)."""
    m, heads, dim, n = _check_keys("q", q, "k", k, "k_scale", k_scale, "weights", weights, "N")
    topk_tokens = check_int("topk_tokens", topk_tokens)
    if topk_tokens < 1:
        raise InvalidArgumentError(f"topk_tokens must be >= 1, got {topk_tokens}")
    ks, ke = _check_windows((("cu_seqlen_ks", cu_seqlen_ks), ("cu_seqlen_ke", cu_seqlen_ke)),
                            m, q, "q")
    if failed is not None:
        raise _cpp_error(failed) from None
    ks = _as_int32(ks, 0, n)
    ke = _as_int32(ke, 0, n)
    if m == 0 or n == 0:
        return torch.full((m, topk_tokens), -1, dtype=torch.int32, device=q.device)
    out = torch.empty((m, topk_tokens), dtype=torch.int32, device=q.device)
    workspace = _workspace("hisa_flat_indexer_workspace_size", q.device,
                           m, n, heads, dim, topk_tokens)
    _run("hisa_flat_indexer", q.device, q, k, k_scale,
         weights, ks, ke, out, m, n, heads, dim,
         topk_tokens, workspace, workspace.numel())
    return out


# torch.ops.hisa.*: the same operators as torch custom ops (torch.compile
# traces them; the branches above route compiled calls to them).
from . import _torch_ops  # noqa: E402,F401
