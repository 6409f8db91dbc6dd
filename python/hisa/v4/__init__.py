"""DeepSeek-V4 attention layer (issue 12): `hisa.v4.Attention` (the C++
layer of lib/V4 through the C ABI) and its torch reference
(`hisa.v4.reference`), which the layer's kernels and tests follow."""


def __getattr__(name):
    # Lazy: importing hisa.v4.reference needs no runtime library.
    if name == "Attention":
        from .layer import Attention
        return Attention
    raise AttributeError(name)
