"""libhisa_torch.so without a GPU (python/csrc/TorchOps.cpp, _torch_cpp.py):
where it is built for this torch it is loaded and serves the CUDA dispatch
key of topk, hisa_indexer and flat_indexer; built for another torch, or
turned off, it is not loaded and hisa says why (a warning where the library
exists but cannot be used); the C++ kernels' errors become hisa's classes.
Each loading case runs in a fresh interpreter: a library, once loaded,
stays registered in the process."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hisa_testutil import require_torch

torch = require_torch()

import hisa  # noqa: E402
from hisa import _lib, _torch_cpp  # noqa: E402

PYTHON_DIR = Path(__file__).resolve().parents[1]
OPS = ("topk", "hisa_indexer", "flat_indexer", "sparse_attn")


def built_library():
    """The libhisa_torch.so beside the runtime, if both exist."""
    try:
        path = Path(_lib.lib_path()).with_name(_torch_cpp.LIB_NAME)
    except _lib.HisaError:
        pytest.skip("libhisa_runtime.so is not built")
    if not path.is_file():
        pytest.skip("libhisa_torch.so is not built (no CUDA build of torch at configure time)")
    return path


def probe(env):
    """backend(), the CUDA kernels registered and the warnings of a fresh
    interpreter with `env` added."""
    code = (
        "import json, warnings, torch\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    import hisa\n"
        "    from hisa import _torch_cpp\n"
        "    backend = _torch_cpp.backend()\n"
        "has = {op: torch._C._dispatch_has_kernel_for_dispatch_key('hisa::' + op, 'CUDA')\n"
        "       for op in %r}\n"
        "print(json.dumps({'backend': backend, 'cuda': has,\n"
        "                  'warnings': [str(w.message) for w in seen]}))\n" % (OPS,))
    environment = dict(os.environ, PYTHONPATH=str(PYTHON_DIR), **env)
    result = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_loaded_for_its_torch():
    path = built_library()
    stamp = path.with_name(path.name + ".torch-version").read_text().strip()
    if stamp != torch.__version__.split("+")[0]:
        pytest.skip(f"libhisa_torch.so was built for torch {stamp}, this is "
                    f"{torch.__version__} (test_refused_for_another_torch covers that)")
    seen = probe({})
    assert seen["backend"] == "c++"
    assert seen["cuda"] == {op: True for op in OPS}
    assert seen["warnings"] == []


def test_turned_off():
    seen = probe({"HISA_TORCH_OPS": "0"})
    assert seen["backend"].startswith("ctypes (turned off")
    assert seen["cuda"] == {op: False for op in OPS}
    assert seen["warnings"] == []


def test_refused_for_another_torch(tmp_path):
    """A library built for another torch is never loaded (its C++ ABI would
    not match): hisa warns, names both versions, and runs through ctypes."""
    path = built_library()
    copy = tmp_path / _torch_cpp.LIB_NAME
    shutil.copy(path, copy)
    (tmp_path / (copy.name + ".torch-version")).write_text("1.0.0\n")
    seen = probe({"HISA_TORCH_LIB": str(copy)})
    assert seen["backend"].startswith("ctypes (")
    assert "built for torch 1.0.0" in seen["backend"]
    assert seen["cuda"] == {op: False for op in OPS}
    assert len(seen["warnings"]) == 1 and "not used" in seen["warnings"][0]


def test_missing_version_stamp_is_refused(tmp_path):
    path = built_library()
    copy = tmp_path / _torch_cpp.LIB_NAME
    shutil.copy(path, copy)
    seen = probe({"HISA_TORCH_LIB": str(copy)})
    assert "built for torch unknown" in seen["backend"]
    assert seen["cuda"] == {op: False for op in OPS}


def test_errors_become_hisa_classes():
    cases = [
        (ValueError("q must be a CUDA tensor"), hisa.InvalidArgumentError, 1, None),
        (RuntimeError("hisa_hisa_indexer failed [HISA_ERROR_CUDA]: launch failed"),
         hisa.CudaError, 3, "hisa_hisa_indexer"),
        (ValueError("hisa_hisa_indexer_workspace_size failed [HISA_ERROR_INVALID_ARGUMENT]: "
                    "hisa_indexer: k_block_size"), hisa.InvalidArgumentError, 1,
         "hisa_hisa_indexer_workspace_size"),
        (RuntimeError("hisa_topk failed [HISA_ERROR_COMPILE]: ptxas\nException raised from x"),
         hisa.CompileError, 2, "hisa_topk"),
    ]
    for raised, cls, status, function in cases:
        error = _torch_cpp.error_from(raised)
        assert type(error) is cls, (raised, error)
        assert error.status == status and error.function == function
        assert "Exception raised from" not in str(error)


def test_torch_errors_pass_through():
    """torch's own errors inside a C++ kernel (out of memory) reach the
    caller as they came, not as hisa's argument errors."""
    assert not _torch_cpp.is_hisa_error(torch.OutOfMemoryError("CUDA out of memory."))
    assert not _torch_cpp.is_hisa_error(RuntimeError("CUDA error: an illegal memory access"))
    assert _torch_cpp.is_hisa_error(ValueError("q must be a CUDA tensor"))
    assert _torch_cpp.is_hisa_error(RuntimeError("hisa_topk failed [HISA_ERROR_CUDA]: x"))


def test_cpu_tensors_are_refused_by_the_python_checks():
    """A CPU x never reaches the C++ kernel (it would dispatch back into the
    Python kernel); the Python checks name it."""
    with pytest.raises(hisa.InvalidArgumentError, match="x must be a CUDA tensor"):
        hisa.topk(torch.randn(4, 100), 3)
