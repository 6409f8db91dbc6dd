#!/usr/bin/env bash
# The test suite: sets up, builds, and runs lit + FileCheck + gtest (check-hisa).
# GPU tests (python/tests) skip themselves without a GPU and are not run here.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" check-hisa

# The Python tests that need no GPU (argument checks, the V4 reference, the
# context-parallel plumbing over gloo; GPU tests skip), when a Python with
# torch is at hand: HISA_TEST_PYTHON, else python3. This machine kind
# reaches only PyPI, whose torch wheels bring the CUDA libraries (several
# GB), so the suite does not install torch itself; it says so instead.
build=${HISA_BUILD_DIR:-$root/build}
python=${HISA_TEST_PYTHON:-python3}
if "$python" -c "import torch, pytest" 2>/dev/null; then
  HISA_RUNTIME_LIB=$build/lib/libhisa_runtime.so PYTHONPATH=$root/python \
    "$python" -m pytest -q -p no:cacheprovider "$root/python/tests"
else
  echo "test.sh: note: the Python tests did not run ($python has no torch/pytest;" \
    "set HISA_TEST_PYTHON to a Python that has them)"
fi
