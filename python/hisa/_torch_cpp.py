"""libhisa_torch.so: the CUDA kernels of torch.ops.hisa.{topk, hisa_indexer,
flat_indexer, sparse_attn} in C++ (python/csrc/TorchOps.cpp).

An eager call of those operators then costs one dispatch into C++ (checks,
allocations and the C ABI call there) instead of Python checks, Python
torch.empty calls and a ctypes call: on the GPU machine's host the Python
side cost more than the kernels' launches (docs/performance.md, host time).
The schemas and fake implementations stay in _torch_ops.py; the library
only adds CUDA kernels, so torch.compile and CUDA graphs see the same ops.

The library is looked for beside the loaded runtime library (or at
HISA_TORCH_LIB) when the first of those operators is called. torch's C++
ABI changes between versions, so it is loaded only into the torch version
it was built against (recorded in libhisa_torch.so.torch-version beside it).
When it is missing or was built for another torch, the operators run
through ctypes (same results, more host time): hisa warns once if the
library exists but cannot be used, and ``backend()`` says which path runs.
HISA_TORCH_OPS=0 turns the library off.
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Optional

import torch

from . import _lib

LIB_NAME = "libhisa_torch.so"
# The operators the library has CUDA kernels for.
OPS = ("topk", "hisa_indexer", "flat_indexer", "sparse_attn")

_lock = threading.Lock()
_state: Optional[str] = None  # "c++", or why not
_ops = None


def _torch_release() -> str:
    """'2.11.0' of torch.__version__ '2.11.0+cu130'."""
    return torch.__version__.split("+")[0]


def _library_path() -> Optional[Path]:
    env = os.environ.get("HISA_TORCH_LIB")
    if env:
        return Path(env)
    try:
        runtime = Path(_lib.lib_path())
    except _lib.HisaError:
        return None  # the ops' own calls say the runtime is missing
    return runtime.with_name(LIB_NAME)


def _load() -> Optional[str]:
    """Loads the library if it can be used; returns why not, or None."""
    if os.environ.get("HISA_TORCH_OPS", "1") == "0":
        return "turned off (HISA_TORCH_OPS=0)"
    path = _library_path()
    if path is None:
        return "the runtime library is not loaded"
    if not path.is_file():
        return f"{path} not found (built when CMake finds a CUDA build of torch)"
    stamp = path.with_name(path.name + ".torch-version")
    try:
        built_for = stamp.read_text().strip()
    except OSError:
        built_for = "unknown (no " + stamp.name + ")"
    if built_for != _torch_release():
        return (f"{path} was built for torch {built_for}, this is torch "
                f"{torch.__version__} (its C++ ABI differs); rebuild it against this torch "
                "(-DHISA_TORCH_DIR, python/csrc/CMakeLists.txt)")
    try:
        torch.ops.load_library(str(path))
    except (OSError, RuntimeError) as error:
        return f"{path} failed to load: {error}"
    return None


def ops():
    """The C++ kernels' entry points (torch.ops.hisa.<op>.default by name)
    when the library is loaded, else None (loads it on the first call)."""
    global _state, _ops
    if _state is None:
        with _lock:
            if _state is None:
                from . import _torch_ops  # noqa: F401  (defines the schemas)
                why = _load()
                if why is None:
                    # Bound once: calling an OpOverload skips the packet's
                    # overload resolution.
                    _ops = {name: getattr(torch.ops.hisa, name).default
                            for name in OPS}
                    _state = "c++"
                else:
                    _state = why
                    if "not found" not in why and "turned off" not in why \
                            and "not loaded" not in why:
                        warnings.warn(f"hisa: the C++ torch operators are not used: {why}; "
                                      f"{', '.join(OPS)} run through "
                                      "ctypes (same results, more host time per call)",
                                      RuntimeWarning, stacklevel=3)
    return _ops


def backend() -> str:
    """'c++' when libhisa_torch.so serves the operators of OPS, else
    'ctypes (<why>)'."""
    ops()
    return "c++" if _state == "c++" else f"ctypes ({_state})"


def is_hisa_error(error: Exception) -> bool:
    """Whether the C++ kernels raised `error` themselves: an argument they
    refused (ValueError; TypeError: an argument of the wrong type for the
    schema) or a runtime status ("... failed [HISA_..."). torch's own errors
    inside them (out of memory is a RuntimeError) are not."""
    return isinstance(error, (ValueError, TypeError)) or " failed [HISA_" in str(error)


def error_from(error: Exception) -> _lib.HisaError:
    """hisa's exception for an error the C++ kernels raised: their messages
    read "<function> failed [<STATUS>]: ..." for a runtime status, as
    _lib.check's do; anything else is an argument error."""
    message = str(error).split("\nException raised from")[0]
    function = message.split(" failed [")[0] if " failed [" in message else None
    for status, name in _lib._STATUS_NAMES.items():
        if f"[{name}]" in message:
            cls = _lib._STATUS_ERRORS.get(status, _lib.HisaError)
            return cls(message, status=status, function=function)
    return _lib.InvalidArgumentError(message, status=_lib.HISA_ERROR_INVALID_ARGUMENT)
