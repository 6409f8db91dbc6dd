"""The kernel variants a kernels-dsl source declares, as the build makes
them (cmake/KernelVariants.cmake): each `// hisa-variant NAME replaces "A"
with "B"` line applies to NAME's text (first the base kernel's); and the
command line of the source A/B probes (stage1/stage2_source_ab.py)."""

from __future__ import annotations

import re


def with_variants(text: str, base: str) -> dict:
    """{name: source}: `base` (the file's kernel) and every declared variant."""
    rules = re.findall(r'^// hisa-variant (\w+) replaces "(.*)" with "(.*)"$', text, re.M)
    # The rule lines themselves go first, as in the build.
    stripped = re.sub(r"^// hisa-variant [^\n]*\n", "", text, flags=re.M)
    sources = {base: stripped}
    for name, old, new in rules:
        source = sources.get(name, stripped)
        assert old in source, (name, old)
        sources[name] = source.replace(old, new)
    return sources


def parse_ab_args(argv, defaults, sizes=(32768, 131072)):
    """(variants, sizes) from a source A/B probe's arguments: each variant
    FILE[:name=value,...] as (label, path or "-" for the built-in source,
    the defaults with the overrides); `--sizes=a,b` replaces `sizes`."""
    sizes = list(sizes)
    variants = []
    for arg in argv:
        if arg.startswith("--sizes="):
            sizes = [int(x) for x in arg.split("=", 1)[1].split(",")]
        if arg.startswith("--"):
            continue
        path, _, overrides = arg.partition(":")
        params = dict(defaults)
        for item in filter(None, overrides.split(",")):
            param, value = item.split("=")
            params[param] = int(value)
        variants.append((arg, path, params))
    return variants, sizes
