"""Warp-specialized pipelines (tile.pipelined warp_specialized): the lowering
test kernels of test/Conversion/TileToGPU/Inputs/warp-specialized-*.mlir
against torch, and the warp-specialized variants of the attention kernels
(kernels-dsl: sparse_attn_ws, flash_attn_ws) against the operators, which
must agree bit for bit (the consumers compute the same thing in the same
order; only who issues the copies changes)."""

import faulthandler

import pytest

from hisa_testutil import fresh_seed, lowering_test_kernel, require_gpu

torch, hisa = require_gpu()


@pytest.fixture(autouse=True)
def hang_watchdog():
    """A mistake in the mbarrier handshake hangs the GPU, not the test: stop
    the whole run (with every thread's traceback) instead of waiting for the
    machine's time limit."""
    faulthandler.dump_traceback_later(90, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def test_gather_producer():
    seed = fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "warp-specialized-gather.mlir", "ws_gather")
    a = torch.randn(64, 64, device="cuda").bfloat16()
    b = torch.randn(500, 64, device="cuda").bfloat16()
    rows = torch.randint(0, 500, (256,), device="cuda", dtype=torch.int32)
    rows[::7] = -1
    out = torch.full((64, 64), float("nan"), device="cuda")
    kernel.launch(a, b, rows, out)
    torch.cuda.synchronize()
    gathered = torch.where((rows >= 0)[:, None], b[rows.clamp(min=0).long()],
                           torch.zeros_like(b[:1])).float()
    expected = sum(a.float() @ gathered[t * 64:(t + 1) * 64].T for t in range(4))
    assert torch.allclose(out, expected, rtol=1e-3, atol=1e-2), f"seed {seed}"


@pytest.mark.parametrize("n", [128, 1000, 64 * 128 + 5])
def test_tma_producer(n):
    seed = fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "warp-specialized-tma.mlir", "ws_tma")
    a = torch.randn(64, 64, device="cuda").bfloat16()
    b = torch.randn(n, 64, device="cuda").bfloat16()
    out = torch.full((64, 128), float("nan"), device="cuda")
    kernel.launch(a, b, out)
    torch.cuda.synchronize()
    padded = torch.zeros(-(-n // 128) * 128, 64, device="cuda")
    padded[:n] = b.float()
    expected = sum(a.float() @ padded[t * 128:(t + 1) * 128].T
                   for t in range(padded.shape[0] // 128))
    assert torch.allclose(out, expected, rtol=1e-3, atol=5e-2), f"seed {seed}"


# Enough tokens that the operator does not split them (split decode is
# another specialization).
@pytest.mark.parametrize("b,s,h,nkv,k", [(1, 160, 64, 4096, 640), (2, 70, 128, 300, 100)])
def test_sparse_attn_ws_matches_the_plain_kernel(b, s, h, nkv, k):
    """The operator runs sparse_attn_ws with partial_sums=1 here (no
    split); the plain kernel with the same parameters, launched directly,
    must give the same bits."""
    fresh_seed(torch)
    q = torch.randn(b, s, h, 512, device="cuda").bfloat16()
    kv = torch.randn(b, nkv, 512, device="cuda").bfloat16()
    sink = torch.randn(h, device="cuda")
    idx = torch.randint(-1, nkv, (b, s, k), device="cuda", dtype=torch.int32)
    scale = 512 ** -0.5
    operator = hisa.sparse_attn(q, kv, sink, idx, scale)
    params = {"topk_pad": -(-k // 64) * 64, "head_blocks": -(-h // 64), "lse": 0, "splits": 1,
              "partial_sums": 1}
    outputs = {}
    for name in ("sparse_attn", "sparse_attn_ws"):
        kernel = hisa.jit.get_kernel(name, params)
        o = torch.full_like(q, float("nan"))
        unused_part = torch.empty(1, 1, 1, 512, device="cuda")  # split decode only
        unused_lse = torch.empty(1, 1, 1, device="cuda")
        kernel.launch(q.view(b * s, h, 512), kv.view(b * nkv, 512), sink, idx.view(b * s, k),
                      o.view(b * s, h, 512), sink.view(1, h), unused_part, unused_lse,
                      torch.zeros(1, 32, device="cuda"), torch.zeros(1, 32, device="cuda"),
                      torch.zeros(1, dtype=torch.int32, device="cuda"), s, nkv, scale, 0.0)
        outputs[name] = o
    torch.cuda.synchronize()
    assert not outputs["sparse_attn"].isnan().any()
    assert torch.equal(outputs["sparse_attn_ws"], outputs["sparse_attn"])
    assert torch.equal(operator, outputs["sparse_attn_ws"])


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("s,picked", [(1000, "folded"), (4096, "pp")])
def test_flash_attn_ws_matches_the_plain_kernel(causal, s, picked):
    """The operator runs the plain flash_attn below 4096 queries (D = 128)
    and flash_attn_pp (FA3's ping-pong schedule, 128-key tiles) from there
    on, with the scale folded into the exponent (fold_scale = 1 for a
    positive scale): it gives the picked kernel's bits. flash_attn_ws and the
    ping-pong kernel differ from the plain kernel in how a thread's row max
    and sum are chained or in the key tile, and fold_scale in where the
    scale rounds, so they agree to rounding, not bit for bit."""
    fresh_seed(torch)
    q, k, v = (torch.randn(2, 3, s, 128, device="cuda").bfloat16() for _ in range(3))
    operator = hisa.flash_attn(q, k, v, causal=causal)
    outputs = {}
    for label, name, fold in (("plain", "flash_attn", 0), ("folded", "flash_attn", 1),
                              ("ws", "flash_attn_ws", 0), ("pp", "flash_attn_pp", 1)):
        kernel = hisa.jit.get_kernel(name, {"dim": 128, "causal": int(causal),
                                            "fold_scale": fold})
        o = torch.full_like(q, float("nan"))
        kernel.launch(q, k, v, o, 128 ** -0.5)
        outputs[label] = o
    torch.cuda.synchronize()
    for label, o in outputs.items():
        assert not o.isnan().any(), label
    for label in ("ws", "folded", "pp"):
        torch.testing.assert_close(outputs[label].float(), outputs["plain"].float(),
                                   rtol=1e-2, atol=1e-2)
    assert torch.equal(operator, outputs[picked])


def test_overlap_gemm_with_gathers_and_a_second_gemm():
    """overlap_gemm over gathered stages, with P V after the scores
    (Inputs/overlap-gemm-attention.mlir): o = sum over 8 tiles of 32 rows
    of bf16(Q K_t^T) K_t, -1 rows reading zeros."""
    seed = fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "overlap-gemm-attention.mlir", "overlap_gemm_attention")
    q = torch.randn(64, 64, device="cuda").bfloat16()
    kv = torch.randn(777, 64, device="cuda").bfloat16()
    idx = torch.randint(0, 777, (256,), device="cuda", dtype=torch.int32)
    idx[::5] = -1
    out = torch.full((64, 64), float("nan"), device="cuda")
    kernel.launch(q, kv, idx, out)
    torch.cuda.synchronize()
    rows = torch.where((idx >= 0)[:, None], kv[idx.clamp(min=0).long()],
                       torch.zeros_like(kv[:1])).float()
    expected = torch.zeros(64, 64, device="cuda")
    for t in range(8):
        tile = rows[t * 32:(t + 1) * 32]
        p = (q.float() @ tile.T).bfloat16().float()
        expected += p @ tile
    assert torch.allclose(out, expected, rtol=2e-2, atol=0.5), (
        f"seed {seed}: max error {(out - expected).abs().max().item()}")


def test_rejoin_runs_on_the_producer_threads_too():
    """tile.rejoin (Inputs/rejoin.mlir): the consumers leave each key
    tile's row sums in shared memory; then all 256 threads (the producer
    warpgroup's included) scan them and store one element each. Exact:
    the inputs are -1, 0 and 1, so every sum is an integer."""
    seed = fresh_seed(torch)
    kernel = lowering_test_kernel(hisa, "rejoin.mlir", "rejoin")
    q = torch.randint(-1, 2, (64, 64), device="cuda").bfloat16()
    k = torch.randint(-1, 2, (256, 64), device="cuda").bfloat16()
    out = torch.full((256,), -12345, device="cuda", dtype=torch.int32)
    kernel.launch(q, k, out)
    torch.cuda.synchronize()
    sums = (k.float() @ q.float().T).sum(dim=1).to(torch.int64)
    expected = torch.cumsum(sums, 0).to(torch.int32)
    assert torch.equal(out, expected), f"seed {seed}"
