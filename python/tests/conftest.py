"""pytest setup for the hisa GPU tests.

The test modules skip themselves (at module level, see hisa_testutil.py) when
torch, a CUDA GPU or libhisa_runtime.so is missing. With HISA_TESTS_STRICT=1
(scripts/gpu-run.sh sets it) a missing requirement fails instead of skipping.
"""

import os
import sys

_PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _PYTHON_DIR not in sys.path:
    sys.path.insert(0, _PYTHON_DIR)
_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)


def pytest_report_header(config):
    lines = []
    try:
        import hisa

        if hisa.is_available():
            lines.append(f"hisa runtime: {hisa.lib_path()} (version {hisa.version()})")
        else:
            lines.append("hisa runtime: libhisa_runtime.so not found (GPU tests skip)")
    except Exception as exc:  # never break collection here
        lines.append(f"hisa runtime: {exc}")
    try:
        import torch

        if torch.cuda.is_available():
            lines.append(f"torch {torch.__version__}, GPU: {torch.cuda.get_device_name()}")
        else:
            lines.append(f"torch {torch.__version__}, no CUDA GPU")
    except ImportError:
        lines.append("torch: not installed")
    return lines
