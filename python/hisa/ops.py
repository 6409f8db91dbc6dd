"""The HISA memory-bound operators on torch tensors.

Names and signatures follow the TileLang anchors (examples/dsa_hisa), so that
these functions can be swapped in for them:

* ``fp8_block_mean_pooling(k, k_scale, k_block_size=128)``  (KERNELS.md 1.1)
* ``clean_and_maintain_logits_(logits, ks, ke)``             (KERNELS.md 1.3)

Every tensor is validated before the library is called; argument errors
raise ``hisa.InvalidArgumentError`` (a ValueError) naming the argument.
Kernels are launched on torch's current stream of the tensors' device.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from . import _lib
from ._torch_util import (
    check_aligned,
    check_contiguous,
    check_cuda,
    check_dtype,
    check_int,
    check_rank,
    check_same_device,
    check_shape,
    check_tensor,
    ensure_context,
    shape_str,
    stream_handle,
)
from ._lib import InvalidArgumentError

__all__ = ["fp8_block_mean_pooling", "clean_and_maintain_logits_"]

FP8 = torch.float8_e4m3fn
SUPPORTED_DIMS = (64, 128)
SUPPORTED_BLOCK_SIZES = (64, 128, 256)
# k and blocked_k are read/written with 16-byte vector accesses.
VECTOR_ALIGNMENT = 16
_INT32_MAX = 2**31 - 1


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
    k = check_tensor("k", k)
    k_scale = check_tensor("k_scale", k_scale)
    kb = check_int("k_block_size", k_block_size, SUPPORTED_BLOCK_SIZES)

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
    logits = check_tensor("logits", logits)
    ks = check_tensor("ks", ks)
    ke = check_tensor("ke", ke)

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
