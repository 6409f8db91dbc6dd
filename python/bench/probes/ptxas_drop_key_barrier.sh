#!/bin/sh
# Ablation for docs/proposals/stage2-iterations.md: a stand-in ptxas (run
# the JIT with HISA_PTXAS pointing here, REAL_PTXAS at ptxas and a fresh
# HISA_CACHE_DIR) that deletes, from block_sparse_topk_tokens_ws only, the
# consumers' barrier that ends each logits-loop iteration (the trailing
# barrier of the key stores, just before the per-warp arrival on the
# stage's "empty" mbarrier), then assembles with the real ptxas. The
# selection must not change (the keys are read after the loop only); the
# time says what the barrier costs. Other kernels pass through unchanged.
set -e
in=''
for arg in "$@"; do case "$arg" in *.ptx) in=$arg ;; esac; done
if [ -n "$in" ] && grep -q '^\.visible \.entry block_sparse_topk_tokens_ws(' "$in"; then
  edited="$in.ablated.ptx"
  # The barrier is the last "bar.sync 1, 128;" before the loop's first
  # "mbarrier.arrive.shared.b64" that follows a "wgmma.wait_group".
  awk '
    { line[NR] = $0 }
    /wgmma\.wait_group/ { seen_wait = 1 }
    seen_wait && !done && /mbarrier\.arrive\.shared\.b64/ { arrive = NR; done = 1 }
    END {
      drop = 0
      for (i = arrive - 1; i > 0 && arrive; --i)
        if (line[i] ~ /bar\.sync[ \t]+1, 128;/) { drop = i; break }
      if (!drop) { print "ptxas_drop_key_barrier: barrier not found" > "/dev/stderr"; exit 1 }
      for (i = 1; i <= NR; ++i) if (i != drop) print line[i]
    }' "$in" > "$edited"
  set -- $(for arg in "$@"; do [ "$arg" = "$in" ] && echo "$edited" || echo "$arg"; done)
fi
exec "${REAL_PTXAS:-ptxas}" "$@"
