"""pytest setup for the hisa GPU tests.

The test modules skip themselves (at module level, see hisa_testutil.py) when
torch, a CUDA GPU or libhisa_runtime.so is missing. With HISA_TESTS_STRICT=1
(scripts/gpu-run.sh sets it) a missing requirement fails instead of skipping.

The tests listed in sanitize_subset.txt (small sizes covering every kernel,
run under compute-sanitizer by `scripts/gpu-run.sh --sanitize`) carry the
marker `sanitize`, so `pytest -m sanitize python/tests` runs the same set;
with -m naming `sanitize`, a listed test that its module no longer defines is
a usage error (exit status 4), not a silent omission.
"""

import os
import sys

import pytest

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


# ---- the compute-sanitizer subset (sanitize_subset.txt) -------------------------

SANITIZE_SUBSET = os.path.join(_TESTS_DIR, "sanitize_subset.txt")


def read_sanitize_subset(path=SANITIZE_SUBSET):
    """The node ids listed in sanitize_subset.txt (relative to python/tests),
    in file order; '#' starts a comment."""
    ids = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                ids.append(line)
    return ids


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "sanitize: in the compute-sanitizer subset (python/tests/sanitize_subset.txt, "
        "scripts/gpu-run.sh --sanitize)",
    )


def _subset_key(item):
    """'<file name>::<test name[params]>', independent of pytest's rootdir."""
    path = getattr(item, "path", None)
    name = path.name if path is not None else os.path.basename(str(item.fspath))
    return f"{name}::{item.name}"


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    try:
        wanted = read_sanitize_subset()
    except OSError as exc:
        if "sanitize" in (config.option.markexpr or ""):
            raise pytest.UsageError(f"cannot read {SANITIZE_SUBSET}: {exc}")
        return
    wanted_set = set(wanted)
    found = set()
    collected_files = set()
    for item in items:
        key = _subset_key(item)
        collected_files.add(key.split("::", 1)[0])
        if key in wanted_set:
            item.add_marker(pytest.mark.sanitize)
            found.add(key)
    if "sanitize" not in (config.option.markexpr or ""):
        return
    # A module that skipped itself (no GPU, torch or library, without
    # HISA_TESTS_STRICT) collects nothing: its listed tests are not "missing";
    # those of a module that is gone are.
    missing = [
        key
        for key in wanted
        if key not in found
        and (
            key.split("::", 1)[0] in collected_files
            or not os.path.isfile(os.path.join(_TESTS_DIR, key.split("::", 1)[0]))
        )
    ]
    if missing:
        raise pytest.UsageError(
            "python/tests/sanitize_subset.txt lists tests that were not collected "
            "(renamed or removed? update the list): " + ", ".join(missing)
        )
