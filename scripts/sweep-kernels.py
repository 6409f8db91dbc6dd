#!/usr/bin/env python3
"""Lowers every DSL kernel and variant with each specialization parameter
varied, and counts how the compiler answers: for checking that a new
compiler refusal (or a changed plan) leaves the kernels alone, or finding
the kernels it catches, across specializations the operators may use and
the lit tests do not.

For each `tile.kernel @name(...) params {p = default, ...}` in
kernels-dsl/*.mlir and build/kernels-dsl/*.mlir (the generated variants),
each parameter is varied alone: 1/4, 1/2, 2 and 4 times its default and 1,
2, 16, 32, 64, 128 (0 and 1 for flags). Each specialization runs through
`hisa-opt --tile-inline-functions --tile-bind-params --tile-to-nvvm`.
Refusals are grouped by the first error line, locations stripped and
numbers shown as N; many are by design (parameter combinations a kernel's
verifiers refuse).

    scripts/sweep-kernels.py [--grep TEXT] [--jobs N] [--chip sm_90a]

With --grep, every specialization refused with TEXT in its message is
listed; the exit status is 1 when there is one.
"""

import argparse
import collections
import concurrent.futures
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def specializations():
    files = sorted((ROOT / "kernels-dsl").glob("*.mlir")) + sorted(
        (ROOT / "build" / "kernels-dsl").glob("*.mlir"))
    for path in files:
        source = path.read_text()
        for match in re.finditer(
                r"tile\.kernel @(\w+)\(.*?\)\s*(?:params\s*\{(.*?)\}\s*)?\{", source, re.S):
            kernel = match.group(1)
            params = {k: int(v)
                      for k, v in re.findall(r"(\w+)\s*=\s*(-?\d+)", match.group(2) or "")}
            yield path, kernel, ""
            for name, default in params.items():
                values = {0, 1} if default <= 1 else (
                    {int(default * f) for f in (0.25, 0.5, 2, 4)} | {1, 2, 16, 32, 64, 128})
                for value in sorted(v for v in values if v != default and v >= 0):
                    yield path, kernel, f"{name}={value}"


def lower(hisa_opt, chip, spec):
    path, kernel, binding = spec
    options = f"kernel={kernel}" + (f" params={binding}" if binding else "")
    try:
        result = subprocess.run(
            [hisa_opt, str(path), "--tile-inline-functions", f"--tile-bind-params={options}",
             f"--tile-to-nvvm=chip={chip}", "-o", "/dev/null"],
            capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return spec, "timeout (120 s)"
    if result.returncode == 0:
        return spec, None
    first = next((line for line in result.stderr.splitlines() if "error:" in line),
                 result.stderr.strip().splitlines()[-1] if result.stderr.strip() else
                 f"exit status {result.returncode}")
    return spec, re.sub(r"^.*?error: ", "", first)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grep", help="list the specializations refused with this text")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--chip", default="sm_90a")
    parser.add_argument("--hisa-opt", default=str(ROOT / "build" / "bin" / "hisa-opt"))
    args = parser.parse_args()

    specs = list(specializations())
    answers = collections.Counter()
    matches = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for spec, error in pool.map(lambda s: lower(args.hisa_opt, args.chip, s), specs):
            answers[re.sub(r"\d+", "N", error) if error else "lowered"] += 1
            if error and args.grep and args.grep in error:
                matches.append((spec, error))
    print(f"{len(specs)} specializations of {len({(s[0], s[1]) for s in specs})} kernels "
          f"for {args.chip}")
    print("| answer | count |\n| --- | ---: |")
    for answer, count in answers.most_common():
        print(f"| {answer[:160]} | {count} |")
    for (path, kernel, binding), error in matches:
        print(f"{path.relative_to(ROOT)} @{kernel} {binding or '(defaults)'}: {error}")
    return 1 if matches else 0


if __name__ == "__main__":
    sys.exit(main())
