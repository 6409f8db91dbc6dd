#!/bin/sh
# Stand-in ptxas for jit-matches-tools.test: the "cubin" is an ELF magic
# followed by the PTX it was given, so the test can read the JIT's PTX.
out=''; in=''
while [ $# -gt 0 ]; do
  case "$1" in -o) out=$2; shift ;; *.ptx) in=$1 ;; esac
  shift
done
{ printf '\177ELF'; cat "$in"; } > "$out"
