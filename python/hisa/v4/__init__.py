"""DeepSeek-V4 attention layer (issue 12). Today: the torch reference
(`hisa.v4.reference`) that the layer's kernels and tests will follow."""
