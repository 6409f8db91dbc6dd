#!/usr/bin/env python3
"""L2 eviction priorities, measured before the DSL gets them: a stand-in
ptxas (run the JIT with HISA_PTXAS pointing here, a fresh HISA_CACHE_DIR
and L2_HINTS=...) that gives chosen kernels' global accesses an L2 cache
policy (createpolicy.fractional, then `.L2::cache_hint` on the access), then
assembles with REAL_PTXAS (default: ptxas on PATH).

The question (docs/performance.md, forty-eighth session): stage 2 of the
indexer costs ~8% more per key block at M = N = 131072 than at 32768. Its
16 MiB of fp8 keys are re-read by every query, while the queries (1 GiB),
the weights and the selected indices (1 GiB) stream through L2 once; if
the streams push keys out of L2, keeping the keys (evict_last) and letting
the streams go first (evict_first) should take that back. An eviction
priority changes no result.

L2_HINTS, ";"-separated KERNEL:ACCESS=PRIORITY+... (or ",") where KERNEL is an
entry's exact name, ACCESS one of
  tma  cp.async.bulk.tensor loads (the stage-2 key tiles and scales)
  cp   cp.async 16-byte copies (gathered rows)
  ld   plain ld.global loads (queries, weights, indices)
  st   st.global stores (outputs)
and PRIORITY `last` or `first`, e.g.
  L2_HINTS="block_sparse_topk_tokens_ws:tma=last+ld=first+st=first"
For cp and ld, PRIORITY may also be `256` (the `.L2::256B` prefetch size
alone: on a miss L2 fetches the 256-byte block, as FlashMLA's gathers ask)
or `last256` / `first256` (both), e.g. L2_HINTS="sparse_attn_ws:cp=256".
("+" keeps the value whole in probes/library_ab.py's LIB,NAME=VALUE list.)
Prints what it edited to stderr (and appends it to $PTX_EDIT_LOG if set).
"""

import os
import re
import sys

ACCESSES = {"tma", "cp", "ld", "st"}
POLICY = {"last": "%hisa_l2_last", "first": "%hisa_l2_first"}
# PRIORITY -> (policy or None, with the 256-byte prefetch size).
PRIORITIES = {"last": ("last", False), "first": ("first", False), "256": (None, True),
              "last256": ("last", True), "first256": ("first", True)}
PREFETCHABLE = {"cp", "ld"}

TMA = re.compile(r"^(\s*(?:@!?%p\d+\s+)?cp\.async\.bulk\.tensor\.\dd\.shared::cluster\.global"
                 r"\.tile\.mbarrier::complete_tx::bytes)( .*);$")
CP = re.compile(r"^(\s*(?:@!?%p\d+\s+)?cp\.async\.c[ag]\.shared\.global)"
                r"( \[[^\]]+\], \[[^\]]+\], \d+, [^,;]+);$")
LD = re.compile(r"^(\s*(?:@!?%p\d+\s+)?ld\.global)(\.(?:v[24]\.)?[bfus]\d+ .*\]);$")
ST = re.compile(r"^(\s*(?:@!?%p\d+\s+)?st\.global)(\.(?:v[24]\.)?[bfus]\d+ .*);$")


def parse(spec):
    kernels = {}
    for item in filter(None, spec.split(";")):
        name, sep, rest = item.partition(":")
        if not sep:
            raise SystemExit(f"ptxas_l2_hints: '{item}': expected KERNEL:ACCESS=PRIORITY")
        choice = {}
        for pair in filter(None, re.split(r"[,+]", rest)):
            access, _, priority = pair.partition("=")
            if (access not in ACCESSES or priority not in PRIORITIES
                    or (PRIORITIES[priority][1] and access not in PREFETCHABLE)):
                raise SystemExit(f"ptxas_l2_hints: '{pair}': accesses {sorted(ACCESSES)}, "
                                 f"priorities {sorted(PRIORITIES)} (256-byte prefetch: "
                                 f"{sorted(PREFETCHABLE)} only)")
            choice[access] = PRIORITIES[priority]
        kernels[name] = choice
    return kernels


def edit(lines, kernels):
    """Edits lines in place; returns {kernel: {access: count}}."""
    counts = {}
    i = 0
    while i < len(lines):
        match = re.match(r"^\.visible \.entry (\w+)\(", lines[i])
        if not match or match.group(1) not in kernels:
            i += 1
            continue
        name = match.group(1)
        choice = kernels[name]
        count = counts.setdefault(name, {access: 0 for access in choice})
        while not lines[i].startswith("{"):
            i += 1
        # Declarations first (PTX wants .reg before use), then the policies.
        body = i + 1
        while lines[body].strip().startswith((".reg", ".shared", ".local")):
            body += 1
        used = sorted({p for p, _ in choice.values() if p})
        lines[body:body] = (
            [f"\t.reg .b64 {POLICY[p]};" for p in used]
            + [f"\tcreatepolicy.fractional.L2::evict_{p}.b64 {POLICY[p]}, 1.0;" for p in used])
        i = body + 2 * len(used)
        depth = 1
        while i < len(lines) and depth > 0:
            line = lines[i]
            depth += line.count("{") - line.count("}")
            for access, pattern in (("tma", TMA), ("cp", CP), ("ld", LD), ("st", ST)):
                if access not in choice:
                    continue
                found = pattern.match(line)
                if found:
                    policy, prefetch = choice[access]
                    # PTX's order: .L2::cache_hint, then .L2::256B; the
                    # policy operand last.
                    qualifiers = (".L2::cache_hint" if policy else "") + (".L2::256B" if prefetch else "")
                    operand = f", {POLICY[policy]}" if policy else ""
                    lines[i] = f"{found.group(1)}{qualifiers}{found.group(2)}{operand};"
                    count[access] += 1
                    break
            i += 1
    return counts


def main():
    args = sys.argv[1:]
    kernels = parse(os.environ.get("L2_HINTS", ""))
    ptx = next((a for a in args if a.endswith(".ptx")), None)
    if ptx and kernels:
        with open(ptx) as f:
            lines = f.read().split("\n")
        counts = edit(lines, kernels)
        if counts:
            note = f"ptxas_l2_hints: {counts}\n"
            sys.stderr.write(note)
            if os.environ.get("PTX_EDIT_LOG"):
                with open(os.environ["PTX_EDIT_LOG"], "a") as log:
                    log.write(note)
            edited = ptx + ".l2hints.ptx"
            with open(edited, "w") as f:
                f.write("\n".join(lines))
            args = [edited if a == ptx else a for a in args]
    real = os.environ.get("REAL_PTXAS", "ptxas")
    os.execvp(real, [real] + args)


if __name__ == "__main__":
    main()
