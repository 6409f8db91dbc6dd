#!/usr/bin/env bash
# Installs hisa from BUILD_DIR into PREFIX (cmake --install) and builds this
# folder's program against it in OUT_DIR, with nothing but the package on
# the compiler's include path.
#   test/Install/build-against-install.sh BUILD_DIR PREFIX OUT_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$2" "$3"
build=$(cd "$1" && pwd) prefix=$(cd "$2" && pwd) out=$(cd "$3" && pwd)
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S "$here" -B "$out" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$out" >/dev/null
