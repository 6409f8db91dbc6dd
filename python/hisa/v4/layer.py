"""hisa.v4.Attention: the DeepSeek-V4 attention layer on hisa's kernels,
through the C ABI (hisa_v4_attention_*; the layer itself is C++, lib/V4).

    layer = hisa.v4.Attention(config, weights, batch=2, max_seq=4096)
    out = layer.forward(x, start_pos=0)            # prefill, x [B, S, dim] bf16
    out = layer.forward(x_next, start_pos=S)       # decode, x_next [B, 1, dim]

`config` is a hisa.v4.reference.Config (or anything with its fields);
`weights` maps the names of reference.random_weights to CUDA tensors, which
the layer converts once (bf16 matrices, f32 vectors) and keeps. The layer
owns its caches, sized at construction; calls allocate nothing.
"""

from __future__ import annotations

import ctypes
import dataclasses
import weakref
from typing import Dict, Optional

import torch

from . import reference
from .. import _lib
from .._lib import InvalidArgumentError
from .._torch_util import check_int, check_no_grad, ensure_context, stream_handle

_MATRICES = ("wq_a", "wq_b", "wkv", "wo_a", "wo_b", "c_wkv", "c_wgate", "i_wq", "i_weights",
             "i_wkv", "i_wgate")
_VECTORS = ("q_norm", "kv_norm", "attn_sink", "c_ape", "c_norm", "i_ape", "i_norm")


# The dimensions the C++ layer has fixed (include/hisa/V4/Attention.h).
_FIXED = {"head_dim": 512, "rope_dim": 64, "window": 128, "index_dim": 128}


def check_config_and_weights(config, weights: Dict[str, torch.Tensor]) -> None:
    """Refuses a config whose fixed dimensions differ from the layer's, and
    weights with another number of elements than the config gives (the
    layer reads them by the config's sizes: a smaller tensor would be read
    past its end). Weights of another ratio's layer are not read."""
    for name, value in _FIXED.items():
        given = getattr(config, name, value)
        if given != value:
            raise InvalidArgumentError(
                f"config.{name} = {given}: the layer is built for {name} = {value}")
    # (A config with only some of reference.Config's fields has the
    # defaults, i.e. the layer's fixed dims, for the others.)
    full = reference.Config(**{f.name: getattr(config, f.name)
                               for f in dataclasses.fields(reference.Config)
                               if hasattr(config, f.name)})
    shapes = reference.weight_shapes(full)
    for name, tensor in weights.items():
        if name not in _MATRICES and name not in _VECTORS:
            raise InvalidArgumentError(f"unknown weight {name!r}")
        if name not in shapes:
            continue  # a weight of another ratio's layer: not read
        if not isinstance(tensor, torch.Tensor):
            raise InvalidArgumentError(f"weights[{name!r}] must be a torch.Tensor")
        # Read as contiguous memory of the config's shape: any shape of
        # that many elements (a checkpoint's 2-D wo_a, say) reads the same.
        expected = 1
        for size in shapes[name]:
            expected *= size
        if tensor.numel() != expected:
            raise InvalidArgumentError(
                f"weights[{name!r}] has shape {list(tensor.shape)} ({tensor.numel()} "
                f"elements); the config needs {list(shapes[name])} ({expected})")
    # (A missing weight is named by the C++ layer: "weight ... must not be
    # NULL".)


class Attention:
    """One V4 attention layer with its kv cache and compressor state."""

    def __init__(self, config, weights: Dict[str, torch.Tensor], batch: int, max_seq: int,
                 max_prefill_tokens: int = 0):
        check_config_and_weights(config, weights)
        batch, max_seq = check_int("batch", batch), check_int("max_seq", max_seq)
        max_prefill_tokens = check_int("max_prefill_tokens", max_prefill_tokens)
        self.config = config
        device = weights["wq_a"].device
        if device.type != "cuda":
            raise InvalidArgumentError(f"weights must be CUDA tensors, wq_a is on {device}")
        self.device = device
        # The caller's weights, weakly (the layer runs on converted copies
        # and must not keep fp32 originals alive): forward refuses to run
        # with grad mode on while one of them requires grad (the layer has
        # no backward; their gradients would be silently lost).
        self._originals = [(f"weights['{name}']", weakref.ref(t))
                           for name, t in weights.items() if isinstance(t, torch.Tensor)]
        # The layer reads the weights in place: keep converted copies alive.
        self._weights = {}
        for name, tensor in weights.items():
            if name in _MATRICES:
                self._weights[name] = tensor.to(device=device, dtype=torch.bfloat16).contiguous()
            elif name in _VECTORS:
                self._weights[name] = tensor.to(device=device, dtype=torch.float32).contiguous()
            else:
                raise InvalidArgumentError(f"unknown weight {name!r}")
        c = _lib.HisaV4Config(
            dim=config.dim, heads=config.heads, q_lora=config.q_lora, o_groups=config.o_groups,
            o_lora=config.o_lora, compress_ratio=config.compress_ratio,
            index_heads=config.index_heads, index_topk=config.index_topk, eps=config.eps,
            rope_theta=config.rope_theta, compress_rope_theta=config.compress_rope_theta)
        w = _lib.HisaV4Weights(**{name: t.data_ptr() for name, t in self._weights.items()})
        handle = ctypes.c_void_p()
        runtime = _lib.lib()
        with torch.cuda.device(device):
            ensure_context(device)
            status = runtime.hisa_v4_attention_create(ctypes.byref(c), ctypes.byref(w), batch,
                                                      max_seq, max_prefill_tokens,
                                                      ctypes.byref(handle))
        _lib.check(status, "hisa_v4_attention_create", f"batch={batch}, max_seq={max_seq}")
        self._handle = handle
        self.batch, self.max_seq = batch, max_seq
        # Rows of the index buffer (Attention::create's clamp of
        # max_prefill_tokens): last_indices reads no further.
        self._index_rows = (batch * max_seq if max_prefill_tokens <= 0
                            else min(max(max_prefill_tokens, batch), batch * max_seq))

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle:
            _lib.lib().hisa_v4_attention_destroy(handle)
            self._handle = None

    # -- state -----------------------------------------------------------------------
    def _info(self):
        length, columns = ctypes.c_int64(), ctypes.c_int64()
        cache, indices = ctypes.c_void_p(), ctypes.c_void_p()
        status = _lib.lib().hisa_v4_attention_info(self._handle, ctypes.byref(length),
                                                   ctypes.byref(columns), ctypes.byref(cache),
                                                   ctypes.byref(indices))
        _lib.check(status, "hisa_v4_attention_info")
        return length.value, columns.value, cache.value, indices.value

    @property
    def length(self) -> int:
        return self._info()[0]

    def set_length(self, length: int) -> None:
        """The sequences hold `length` tokens (host count and device
        positions, on torch's current stream): after replaying a captured
        decode step n times, set_length(length + n) (capturing the step
        leaves `length` as it was: nothing ran); benchmarks also use it
        to time decode at a long context without its prefill."""
        length = check_int("length", length)
        with torch.cuda.device(self.device):
            status = _lib.lib().hisa_v4_attention_set_length(self._handle, length,
                                                             stream_handle(self.device))
        _lib.check(status, "hisa_v4_attention_set_length", f"length={length}")

    def set_l2_prefetch(self, nbytes: int) -> None:
        """Opt-in: decode warms L2 with the head of its next big projection's
        weights (wq_b, wo_a) on a side stream while the step's small
        launches leave the memory system idle: at most `nbytes` per weight;
        -1 picks a share of the device's L2, 0 (the default) turns it off
        (it measured slower on the H200 at B = 64: docs/performance.md).
        Takes effect at the next forward (a captured graph keeps what it
        captured)."""
        if isinstance(nbytes, bool) or not isinstance(nbytes, int):
            raise _lib.ArgumentTypeError(
                f"nbytes must be an int, got {type(nbytes).__qualname__}")
        status = _lib.lib().hisa_v4_attention_set_l2_prefetch(self._handle, nbytes)
        _lib.check(status, "hisa_v4_attention_set_l2_prefetch", f"nbytes={nbytes}")

    def kv_cache(self) -> torch.Tensor:
        """A copy of the kv cache [B, 128 + max_seq // ratio, 512] bf16."""
        _, _, pointer, _ = self._info()
        ratio = self.config.compress_ratio
        rows = 128 + (self.max_seq // ratio if ratio else 0)
        return _copy_from(pointer, (self.batch, rows, 512), torch.bfloat16, self.device)

    def index_key_cache(self):
        """CSA layers: the indexer's key cache as writable views of the
        layer's memory, (codes [B, rows, 128] float8_e4m3fn, scales [B,
        rows] float32; entry j of sequence b at row j); None for other
        ratios. Benchmarks that time decode at a long context set with
        set_length fill it (otherwise its entries are zeros and every score
        ties)."""
        keys, scales, rows = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int64()
        status = _lib.lib().hisa_v4_attention_index_keys(self._handle, ctypes.byref(keys),
                                                         ctypes.byref(scales),
                                                         ctypes.byref(rows))
        _lib.check(status, "hisa_v4_attention_index_keys")
        if not keys.value:
            return None
        shape = (self.batch, rows.value)
        # The views keep the layer (whose memory they are) alive.
        codes = torch.as_tensor(_DeviceArray(keys.value, shape + (128,), torch.uint8, self),
                                device=self.device).view(torch.float8_e4m3fn)
        scale = torch.as_tensor(_DeviceArray(scales.value, shape, torch.float32, self),
                                device=self.device)
        return codes, scale

    def last_indices(self, tokens: int) -> torch.Tensor:
        """A copy of the last call's index rows [tokens, columns] int32
        (tokens = batch * seq of that call)."""
        if not isinstance(tokens, int) or not 0 <= tokens <= self._index_rows:
            raise InvalidArgumentError(
                f"last_indices: tokens = {tokens!r} must be an int in [0, "
                f"{self._index_rows}] (the layer's index rows)")
        _, columns, _, pointer = self._info()
        return _copy_from(pointer, (tokens, columns), torch.int32, self.device)

    # -- forward ---------------------------------------------------------------------
    def forward(self, x: torch.Tensor, start_pos: int,
                out: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Prefill (start_pos 0, x [B, S, dim]) or decode (start_pos = the
        tokens so far, x [B, 1, dim]); returns [B, S, dim] bf16, in `out`
        when given (a contiguous bf16 tensor of x's shape on the layer's
        device: a CUDA graph capture then allocates nothing)."""
        if torch.is_grad_enabled():
            # The copies too: one made from a weight that requires grad
            # requires grad (its original may be gone: a temporary).
            check_no_grad("v4.Attention",
                          [("x", x)] + [(name, ref()) for name, ref in self._originals]
                          + [(f"weights['{name}']", t) for name, t in self._weights.items()])
        if x.device != self.device:
            raise InvalidArgumentError(f"x is on {x.device}, the layer on {self.device}")
        if x.dim() != 3 or x.shape[0] != self.batch or x.shape[2] != self.config.dim:
            raise InvalidArgumentError(
                f"x must be [batch={self.batch}, tokens, dim={self.config.dim}], got "
                f"{list(x.shape)}")
        x = x.to(torch.bfloat16).contiguous()
        if out is None:
            out = torch.empty_like(x)
        elif (out.device != self.device or out.dtype != torch.bfloat16
              or out.shape != x.shape or not out.is_contiguous()):
            raise InvalidArgumentError(
                f"out must be a contiguous bfloat16 tensor of x's shape {list(x.shape)} on "
                f"{self.device}, got {out.dtype} {list(out.shape)} on {out.device}"
                f"{'' if out.is_contiguous() else ', not contiguous'}")
        runtime = _lib.lib()
        with torch.cuda.device(self.device):
            ensure_context(self.device)
            stream = stream_handle(self.device)
            if start_pos == 0:
                status = runtime.hisa_v4_attention_prefill(self._handle, x.data_ptr(),
                                                           x.shape[1], out.data_ptr(), stream)
                name = "hisa_v4_attention_prefill"
            else:
                if x.shape[1] != 1:
                    raise InvalidArgumentError(
                        f"decode takes one token per sequence, x has {x.shape[1]}")
                if start_pos != self.length:
                    raise InvalidArgumentError(
                        f"start_pos = {start_pos}, but the sequences hold {self.length} "
                        "tokens: decode continues them")
                status = runtime.hisa_v4_attention_decode(self._handle, x.data_ptr(),
                                                          out.data_ptr(), stream)
                name = "hisa_v4_attention_decode"
        _lib.check(status, name, f"x {list(x.shape)}, start_pos={start_pos}")
        return out

    __call__ = forward


# bf16 travels as int16 (the interface has no bf16 type string).
_TYPESTR = {torch.int32: "<i4", torch.uint8: "|u1", torch.float32: "<f4"}


class _DeviceArray:
    """Device memory the layer owns, seen through __cuda_array_interface__.
    `owner` (the layer, for views handed out) stays alive as long as a
    tensor made from this does (torch keeps the interface's object)."""

    def __init__(self, pointer: int, shape, dtype, owner=None):
        self.owner = owner
        self.__cuda_array_interface__ = {
            "shape": tuple(shape), "typestr": _TYPESTR.get(dtype, "<i2"),
            "data": (pointer, False), "version": 3, "strides": None}


def _copy_from(pointer: int, shape, dtype, device) -> torch.Tensor:
    """A copy of device memory the layer owns (after the device is idle)."""
    torch.cuda.synchronize(device)
    view = torch.as_tensor(_DeviceArray(pointer, shape, dtype), device=device)
    # bf16 travels as int16 (the interface has no bf16 type string).
    return view.clone().view(dtype)
