#!/usr/bin/env bash
# The test suite: sets up, builds, and runs lit + FileCheck + gtest (check-hisa).
# GPU tests (python/tests) skip themselves without a GPU and are not run here.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" check-hisa

# The Python tests: those that need no GPU run (argument checks, the V4
# reference, the context-parallel plumbing over gloo), the GPU ones skip.
# torch (CPU wheel) and pytest live in a virtual environment under the build
# directory, made once.
build=${HISA_BUILD_DIR:-$root/build}
venv=$build/pyenv
if [[ ! -x $venv/bin/pytest ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --index-url https://download.pytorch.org/whl/cpu torch
  "$venv/bin/pip" install -q numpy pytest
fi
HISA_RUNTIME_LIB=$build/lib/libhisa_runtime.so PYTHONPATH=$root/python \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests"
