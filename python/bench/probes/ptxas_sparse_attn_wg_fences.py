#!/usr/bin/env python3
"""Ablation of sparse_attn_wg's fences and warpgroup barriers
(docs/proposals/sparse-attn-critical-chains.md): a stand-in ptxas (run the
JIT with HISA_PTXAS pointing here, a fresh HISA_CACHE_DIR and
PTX_EDIT=...) that edits the PTX of sparse_attn_wg only, then assembles with
REAL_PTXAS (default: ptxas on PATH). Other kernels pass through unchanged.

PTX_EDIT, a list of (separated by "," or "+"):
  dedupe  a fence.proxy.async right after another (nothing but comments
          between) is dropped: always sound (the second orders nothing the
          first did not). ptxas keeps both (two MEMBAR.ALL.CTA + FENCE.VIEW).
  publish the hand-over of a shared tile to the other warpgroup,
          "fence; bar.sync wg, 128; fence; bar.arrive" (the copy's trailing
          warpgroup barrier, then the named barrier's fence), becomes
          "fence; bar.arrive": FlashMLA's form. Not what the compiler may
          emit without an argument that every writer fenced (timing only).
  gemm    the warpgroup barrier between a fence and wgmma.fence (a gemm's
          operands published) is dropped: timing only.
  maxpub  the two warpgroup barriers around the row maxima's shared stores
          before their hand-over (bar.arrive) are dropped: timing only.
  readfence the fence before waiting on a named barrier of both warpgroups
          (the reader's side of a hand-over): timing only.
  allfences every fence.proxy.async of the kernel dropped (fifty-first
          session: the upper bound of what they cost; racy, timing only).
  allwgbar every warpgroup barrier (bar.sync %r, 128) dropped (the same).
  latewait the consumers' waits for the two late KV halves (kv1_lo, kv0_hi)
          become no-ops: the upper bound of their refill latency's cost
          (wrong results; timing only, e.g. probes/library_ab.py, which
          checks only that outputs are finite).
Prints what it dropped to stderr (and appends it to $PTX_EDIT_LOG if set:
the JIT keeps ptxas's output only on failure).
"""

import os
import re
import sys

EDITS = {"dedupe", "publish", "gemm", "readfence", "maxpub", "latewait", "allfences",
         "allwgbar"}
FENCE = "fence.proxy.async.shared::cta;"
WG_BARRIER = re.compile(r"^bar\.sync\s+%r\d+, 128;$")


def significant(line):
    text = line.strip()
    return bool(text) and not text.startswith("//")


def edit(lines, edits):
    """Indices of the lines to drop."""
    index = [i for i, line in enumerate(lines) if significant(line)]
    text = [lines[i].strip() for i in index]
    drop = set()
    for k, t in enumerate(text):
        if "allfences" in edits and t == FENCE:
            drop.add(index[k])
        if "allwgbar" in edits and WG_BARRIER.match(t):
            drop.add(index[k])
        if "dedupe" in edits and t == FENCE and k > 0 and text[k - 1] == FENCE:
            drop.add(index[k])
        if ("publish" in edits and WG_BARRIER.match(t) and k > 0 and k + 2 < len(text)
                and text[k - 1] == FENCE and text[k + 1] == FENCE
                and text[k + 2].startswith("bar.arrive")):
            drop.update((index[k], index[k + 1]))
        if "gemm" in edits and WG_BARRIER.match(t) and k > 0 and text[k - 1] == FENCE:
            # (The wgmma lowering's move of the shared base may come between.)
            n = k + 1
            while n < len(text) and text[n].startswith("mov.b64") and "__dynamic_shmem" in text[n]:
                n += 1
            if n < len(text) and text[n] == "wgmma.fence.sync.aligned;":
                drop.add(index[k])
        if ("readfence" in edits and t == FENCE and k + 1 < len(text)
                and re.match(r"^bar\.sync\s+\d+, 256;$", text[k + 1])):
            drop.add(index[k])
        if "maxpub" in edits and WG_BARRIER.match(t):
            # bar.sync wg; [the row maxima's shared stores, maybe under a
            # branch]; bar.sync wg; [selp]; fence; bar.arrive: both
            # warpgroup barriers go.
            n = k + 1
            while n < len(text) and n <= k + 8 and (
                    text[n].startswith(("st.shared", "add.", "@%p")) or text[n].endswith(":")):
                n += 1
            if n < len(text) and n > k + 1 and WG_BARRIER.match(text[n]):
                m = n + 1
                if m < len(text) and text[m].startswith("selp"):
                    m += 1
                if (m + 1 < len(text) and text[m] == FENCE
                        and text[m + 1].startswith("bar.arrive")):
                    drop.update((index[k], index[n]))
    return drop


def drop_late_waits(lines):
    """The consumers' waits for the two late halves' copies (kv1_lo and
    kv0_hi, the third and fourth copies of the body, whose buffers the
    previous iteration frees last), made no-ops: the upper bound of what
    their refill latency costs (the results are wrong: timing only).
    Returns how many waits it disabled."""
    full = []
    for line in lines:
        m = re.search(r"cp\.async\.mbarrier\.arrive\.noinc\.shared\.b64\s+"
                      r"\[__dynamic_shmem__0\+(\d+)\]", line)
        if m and int(m.group(1)) not in full:
            full.append(int(m.group(1)))
    if len(full) != 4:
        raise SystemExit(f"ptxas_sparse_attn_wg_fences: expected 4 copies' full "
                         f"mbarriers, found {full}")
    late = {full[2], full[3]}
    registers = set()
    for line in lines:
        m = re.match(r"\s*add\.s32\s+(%r\d+), %r\d+, (\d+);", line)
        if m and int(m.group(2)) in late:
            registers.add(m.group(1))
    disabled = 0
    for i, line in enumerate(lines):
        m = re.match(r"mbarrier\.try_wait\.parity\.shared::cta\.b64 done, \[(%r\d+)\]", line)
        if m and m.group(1) in registers:
            lines[i] = "setp.eq.u32 done, 1, 1;"
            disabled += 1
    return disabled


def main():
    args = sys.argv[1:]
    edits = set(filter(None, re.split(r"[,+]", os.environ.get("PTX_EDIT", ""))))
    if edits - EDITS:
        # A misspelt edit would otherwise time the unedited kernel as if edited.
        raise SystemExit(f"ptxas_sparse_attn_wg_fences: PTX_EDIT names unknown edits "
                         f"{sorted(edits - EDITS)}; known: {sorted(EDITS)}")
    ptx = next((a for a in args if a.endswith(".ptx")), None)
    if ptx and edits:
        with open(ptx) as f:
            lines = f.read().split("\n")
        if any(line.startswith(".visible .entry sparse_attn_wg(") for line in lines):
            drop = edit(lines, edits)
            waits = drop_late_waits(lines) if "latewait" in edits else 0
            note = (f"ptxas_sparse_attn_wg_fences: {sorted(edits)}: dropped {len(drop)} "
                    f"lines, disabled {waits} waits\n")
            sys.stderr.write(note)
            if os.environ.get("PTX_EDIT_LOG"):
                with open(os.environ["PTX_EDIT_LOG"], "a") as log:
                    log.write(note)
            edited = ptx + ".edited.ptx"
            with open(edited, "w") as f:
                f.write("\n".join(line for i, line in enumerate(lines) if i not in drop))
            args = [edited if a == ptx else a for a in args]
    real = os.environ.get("REAL_PTXAS", "ptxas")
    os.execvp(real, [real] + args)


if __name__ == "__main__":
    main()
