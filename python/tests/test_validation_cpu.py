"""Validation that needs torch but no GPU and no runtime library: CPU tensors
and non-tensors are refused with a ValueError naming the argument."""

import pytest

from hisa_testutil import require_torch

torch = require_torch()

import hisa  # noqa: E402


def test_pooling_rejects_cpu_tensors():
    k = torch.randn(256, 128).to(torch.float8_e4m3fn)
    k_scale = torch.rand(256)
    with pytest.raises(ValueError, match=r"(?<!\w)k(?!\w).*CUDA.*cpu"):
        hisa.fp8_block_mean_pooling(k, k_scale, 128)


def test_clean_rejects_cpu_tensors():
    logits = torch.randn(4, 8)
    s = torch.zeros(4, dtype=torch.int32)
    e = torch.full((4,), 8, dtype=torch.int32)
    with pytest.raises(ValueError, match=r"(?<!\w)logits(?!\w).*CUDA.*cpu"):
        hisa.clean_and_maintain_logits_(logits, s, e)


def test_non_tensor_arguments():
    with pytest.raises(ValueError, match=r"(?<!\w)k(?!\w).*torch.Tensor.*list"):
        hisa.fp8_block_mean_pooling([[1.0]], torch.ones(1))
    with pytest.raises(ValueError, match=r"(?<!\w)ke(?!\w).*torch.Tensor"):
        hisa.clean_and_maintain_logits_(torch.zeros(1, 1), torch.zeros(1, dtype=torch.int32), "x")


def test_integers_past_64_bits_are_refused_not_wrapped():
    # ctypes would pass 2**64 + 1 as 1: the checks refuse it by name.
    from hisa._torch_util import check_int
    assert check_int("k", 2**63 - 1) == 2**63 - 1
    for value in (2**63, 2**64 + 1, -2**63 - 1):
        with pytest.raises(hisa.InvalidArgumentError, match="k=.*64-bit"):
            check_int("k", value)
    with pytest.raises(hisa.InvalidArgumentError, match="max_seq=.*64-bit"):
        from hisa.v4.reference import Config
        hisa.v4.Attention(Config(), {}, 1, 2**64 + 64)


def test_errors_are_hisa_errors():
    with pytest.raises(hisa.InvalidArgumentError) as info:
        hisa.fp8_block_mean_pooling(None, None)
    assert isinstance(info.value, hisa.HisaError)
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, ValueError)


def test_jit_params_validation():
    with pytest.raises(ValueError, match="dim"):
        hisa.jit.format_params({"dim": "64"})
    with pytest.raises(ValueError, match="dim"):
        hisa.jit.format_params({"dim": True})
    with pytest.raises(ValueError, match="not an identifier"):
        hisa.jit.format_params({"a=b": 1})
    assert hisa.jit.format_params({"kb": 64, "dim": 128}) == "dim=128,kb=64"
    assert hisa.jit.format_params(None) == "" and hisa.jit.format_params({}) == ""


# hisa's operators have no backward: with grad mode on, an input that
# requires grad is refused (its gradient would silently be lost), before
# any other check, so these run without a GPU.
GRAD_CASES = [
    ("sparse_attn", lambda q: hisa.sparse_attn(q, q, q, q, 0.1), "q"),
    ("flash_attn", lambda q: hisa.flash_attn(q, q, q), "q"),
    ("mqa_logits", lambda w: hisa.mqa_logits(w, w, w, w, w, w), "q"),
    ("pool_mqa_logits", lambda w: hisa.pool_mqa_logits(w, w, w, w, w, w), "q"),
    ("block_sparse_mqa_logits",
     lambda w: hisa.block_sparse_mqa_logits(w, w, w, w, 128, w, w, w), "q"),
    ("fp8_block_mean_pooling", lambda w: hisa.fp8_block_mean_pooling(w, w), "k"),
    ("clean_and_maintain_logits_", lambda w: hisa.clean_and_maintain_logits_(w, w, w),
     "logits"),
]


@pytest.mark.parametrize("op,call,first", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_inputs_that_require_grad_are_refused(op, call, first):
    x = torch.zeros(2, 2, requires_grad=True)
    with pytest.raises(ValueError, match=rf"{op}: {first} requires grad.*no backward"):
        call(x)
    # Under no_grad / inference_mode the same call goes on to the other
    # checks (here: CPU tensors are not CUDA tensors).
    with torch.no_grad():
        with pytest.raises(ValueError) as info:
            call(x)
        assert "requires grad" not in str(info.value)
    with torch.inference_mode():
        with pytest.raises(ValueError) as info:
            call(x)
        assert "requires grad" not in str(info.value)
    # Detached inputs pass this check too.
    with pytest.raises(ValueError) as info:
        call(x.detach())
    assert "requires grad" not in str(info.value)


def test_flash_attn_causal_must_be_a_bool():
    # Read by truthiness, "no" or a one-element tensor would mean causal.
    q = torch.zeros(1, 1, 1, 64, dtype=torch.bfloat16)
    for causal in ("no", 1, torch.tensor(False), None):
        with pytest.raises(hisa.ArgumentTypeError, match="causal must be a bool"):
            hisa.flash_attn(q, q, q, causal=causal)


def test_sparse_attn_return_lse_must_be_a_bool():
    q = torch.zeros(1, 1, 1, 512, dtype=torch.bfloat16)
    for flag in ("no", 1, torch.tensor(True)):
        with pytest.raises(hisa.ArgumentTypeError, match="return_lse must be a bool"):
            hisa.sparse_attn(q, q[0], torch.zeros(1), torch.zeros(1, 1, 1, dtype=torch.int32),
                             0.1, return_lse=flag)
