"""The kernel variants a kernels-dsl source declares, as the build makes
them (cmake/KernelVariants.cmake): each `// hisa-variant NAME replaces "A"
with "B"` line applies to NAME's text (first the base kernel's)."""

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
