"""hisa: Python bindings of the hisa kernel compiler's runtime (torch tensors).

    import hisa
    blocked_k, blocked_scale = hisa.fp8_block_mean_pooling(k, k_scale, k_block_size=128)
    logits = hisa.pool_mqa_logits(q, blocked_k, blocked_scale, weights, s, e)
    hisa.clean_and_maintain_logits_(logits, s, e)
    out = hisa.block_sparse_mqa_logits(q, k, k_scale, topk_block_index, 128, weights, ks, ke)
    kernel = hisa.jit.get_kernel("fp8_block_mean_pooling", {"dim": 128, "kb": 128})

The runtime library (libhisa_runtime.so) is loaded on first use from
$HISA_RUNTIME_LIB or <repo>/build/lib. The torch operators are imported on
first access, so ``hisa.jit`` (e.g. ``hisa.jit.compile``) works without torch.
"""

from __future__ import annotations

from . import jit
from ._lib import (
    ArgumentTypeError,
    CompileError,
    CudaError,
    HisaError,
    InvalidArgumentError,
    LibraryNotFoundError,
    NoDeviceError,
    is_available,
    launch_graph_stats,
    lib_path,
    set_launch_graphs,
    set_programmatic_launch,
    version,
)

__version__ = "0.1.0"

_OPS = (
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
)

__all__ = [
    "ArgumentTypeError",
    "CompileError",
    "CudaError",
    "HisaError",
    "InvalidArgumentError",
    "LibraryNotFoundError",
    "NoDeviceError",
    "is_available",
    "jit",
    "launch_graph_stats",
    "lib_path",
    "ops",
    "set_launch_graphs",
    "set_programmatic_launch",
    "v4",
    "version",
    *_OPS,
]


def __getattr__(name: str):
    # PEP 562: import the torch-dependent operators lazily.
    if name == "v4":
        import importlib

        return importlib.import_module(__name__ + ".v4")
    if name == "ops" or name in _OPS:
        import importlib

        try:
            ops = importlib.import_module(__name__ + ".ops")
        except ModuleNotFoundError as exc:
            if exc.name != "torch":
                raise
            raise ImportError(
                f"hisa.{name} needs PyTorch (torch is not installed); hisa.jit works without it"
            ) from exc
        value = ops if name == "ops" else getattr(ops, name)
        # Bound here once: module attribute lookups then skip this function
        # (an import machinery call per operator call otherwise).
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hisa' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
