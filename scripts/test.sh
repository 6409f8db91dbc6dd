#!/usr/bin/env bash
# The test suite: sets up, builds, and runs lit + FileCheck + gtest (check-hisa).
# GPU tests (python/tests) skip themselves without a GPU and are not run here.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" check-hisa
