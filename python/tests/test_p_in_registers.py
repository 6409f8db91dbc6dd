"""P in registers (test/Conversion/TileToGPU/Inputs/p-in-registers.mlir):
S = Q K^T on wgmma, P = bf16(S) in registers, O = P V on wgmma with A from
registers. Checked against torch (P rounded to bf16 the same way)."""

from hisa_testutil import fresh_seed, lowering_test_kernel, require_gpu

torch, hisa = require_gpu()


def test_p_in_registers():
    seed = fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "p-in-registers.mlir", "p_in_registers")
    for _ in range(3):
        q, k, v = (torch.randn(64, 64, device="cuda").to(torch.bfloat16) / 4 for _ in range(3))
        o = torch.full((64, 64), float("nan"), device="cuda")
        kernel.launch(q, k, v, o)
        torch.cuda.synchronize()
        p = (q.float() @ k.float().T).to(torch.bfloat16)
        expected = p.float() @ v.float()
        # S in f32 is summed in another order than torch's, so an element
        # of S next to a bf16 rounding boundary may round to the neighbour
        # (one ulp, 2^-8 relative): the bound allows that for every element
        # of P (the H200 showed 5 such outputs of 4096, 2.3e-3 off, at seed
        # 1266724309). A P taken from anywhere else is off far more.
        bound = 1e-3 + 2.0 ** -8 * (p.float().abs() @ v.float().abs())
        error = (o - expected).abs()
        assert not o.isnan().any(), f"unwritten outputs, seed {seed}"
        assert (error <= bound).all(), f"max error {error.max().item():.3g}, seed {seed}"
