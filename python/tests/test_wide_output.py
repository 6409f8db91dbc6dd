"""A wide accumulator (test/Conversion/TileToGPU/Inputs/wide-output.mlir):
O [64, 512] = P V on two warpgroups split along N, stored as column pairs
(8-byte stores). Checked against torch."""

from hisa_testutil import fresh_seed, lowering_test_kernel, require_gpu

torch, hisa = require_gpu()


def test_wide_output():
    seed = fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "wide-output.mlir", "wide_output")
    p = torch.randn(64, 64, device="cuda").to(torch.bfloat16)
    v = torch.randn(64, 512, device="cuda").to(torch.bfloat16)
    o = torch.full((64, 512), float("nan"), device="cuda")
    kernel.launch(p, v, o)
    torch.cuda.synchronize()
    expected = p.float() @ v.float()
    assert torch.allclose(o, expected, rtol=1e-4, atol=1e-3), f"seed {seed}"
