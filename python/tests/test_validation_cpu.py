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
