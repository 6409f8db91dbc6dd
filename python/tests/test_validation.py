"""Argument validation of the torch operators: every bad tensor raises a
ValueError naming the argument, before anything is launched.

Needs torch and a CUDA GPU (the tensors are CUDA tensors); the runtime library
is not needed, since validation runs before it is loaded.
"""

import pytest

from hisa_testutil import require_torch_gpu

torch = require_torch_gpu()

import hisa  # noqa: E402

FP8 = torch.float8_e4m3fn


def names(arg):
    """Regex matching `arg` as a whole word (so 'k' does not match 'k_scale')."""
    return rf"(?<![\w.]){arg}(?!\w)"


def good_pooling(n=1000, d=128):
    k = (torch.randn(n, d, device="cuda") + 3.0).to(FP8)
    k_scale = torch.rand(n, device="cuda") + 0.1
    return k, k_scale


def good_logits(m=300, nn=40):
    logits = torch.randn(m, nn, device="cuda")
    ks = torch.zeros(m, dtype=torch.int32, device="cuda")
    ke = torch.full((m,), nn, dtype=torch.int32, device="cuda")
    return logits, ks, ke


# ---- fp8_block_mean_pooling ----------------------------------------------------


def test_pooling_not_a_tensor():
    k, k_scale = good_pooling()
    with pytest.raises(ValueError, match=names("k") + ".*torch.Tensor"):
        hisa.fp8_block_mean_pooling([1, 2], k_scale)
    with pytest.raises(ValueError, match=names("k_scale") + ".*torch.Tensor"):
        hisa.fp8_block_mean_pooling(k, 1.0)
    with pytest.raises(TypeError):  # also a TypeError
        hisa.fp8_block_mean_pooling(k, None)


def test_pooling_cpu_tensors():
    k, k_scale = good_pooling()
    with pytest.raises(ValueError, match=names("k") + ".*CUDA"):
        hisa.fp8_block_mean_pooling(k.cpu(), k_scale)
    with pytest.raises(ValueError, match=names("k_scale") + ".*CUDA"):
        hisa.fp8_block_mean_pooling(k, k_scale.cpu())


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_pooling_different_devices():
    k, k_scale = good_pooling()
    with pytest.raises(ValueError, match=names("k_scale") + ".*same device"):
        hisa.fp8_block_mean_pooling(k, k_scale.to("cuda:1"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.uint8, torch.float8_e5m2])
def test_pooling_k_dtype(dtype):
    k, k_scale = good_pooling()
    bad = k.to(torch.float32).to(dtype) if dtype != torch.uint8 else k.view(torch.uint8)
    with pytest.raises(ValueError, match=names("k") + ".*float8_e4m3fn"):
        hisa.fp8_block_mean_pooling(bad, k_scale)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.float16, torch.int32])
def test_pooling_k_scale_dtype(dtype):
    k, k_scale = good_pooling()
    with pytest.raises(ValueError, match=names("k_scale") + ".*float32"):
        hisa.fp8_block_mean_pooling(k, k_scale.to(dtype))


def test_pooling_k_rank():
    k, k_scale = good_pooling()
    with pytest.raises(ValueError, match=names("k") + ".*2-D"):
        hisa.fp8_block_mean_pooling(k.view(1000, 2, 64), k_scale)
    with pytest.raises(ValueError, match=names("k") + ".*2-D"):
        hisa.fp8_block_mean_pooling(k.view(-1), k_scale)


def test_pooling_k_scale_shape():
    k, k_scale = good_pooling()
    with pytest.raises(ValueError, match=r"k_scale must have shape \[N\]=\[1000\], got \[999\]"):
        hisa.fp8_block_mean_pooling(k, k_scale[:999])
    with pytest.raises(ValueError, match=names("k_scale") + ".*shape"):
        hisa.fp8_block_mean_pooling(k, k_scale.view(500, 2))
    with pytest.raises(ValueError, match=names("k_scale") + ".*shape"):
        hisa.fp8_block_mean_pooling(k, k_scale.view(1, 1000))
    with pytest.raises(ValueError, match=names("k_scale") + ".*shape"):
        hisa.fp8_block_mean_pooling(k[:999], k_scale[:, None])


@pytest.mark.parametrize("d", [32, 96, 192, 256])
def test_pooling_unsupported_dim(d):
    k, k_scale = good_pooling(d=d)
    with pytest.raises(ValueError, match=r"D=" + str(d)):
        hisa.fp8_block_mean_pooling(k, k_scale)


@pytest.mark.parametrize("kb", [0, 1, 32, 100, 127, 512, -128])
def test_pooling_unsupported_block_size(kb):
    k, k_scale = good_pooling()
    with pytest.raises(ValueError, match=names("k_block_size") + f"={kb}"):
        hisa.fp8_block_mean_pooling(k, k_scale, kb)


@pytest.mark.parametrize("kb", [128.0, "128", True, None])
def test_pooling_block_size_type(kb):
    k, k_scale = good_pooling()
    with pytest.raises(ValueError, match=names("k_block_size")):
        hisa.fp8_block_mean_pooling(k, k_scale, kb)


def test_pooling_non_contiguous():
    k, k_scale = good_pooling(d=128)
    wide = torch.cat([k.view(torch.uint8), k.view(torch.uint8)], dim=1).view(FP8)
    with pytest.raises(ValueError, match=names("k") + ".*contiguous"):
        hisa.fp8_block_mean_pooling(wide[:, :128], k_scale)
    with pytest.raises(ValueError, match=names("k") + ".*contiguous"):
        hisa.fp8_block_mean_pooling(k.view(torch.uint8).t().contiguous().t().view(FP8), k_scale)
    strided_scale = torch.stack([k_scale, k_scale], dim=1)[:, 0]
    with pytest.raises(ValueError, match=names("k_scale") + ".*contiguous"):
        hisa.fp8_block_mean_pooling(k, strided_scale)


def test_pooling_misaligned_k():
    n, d = 1000, 128
    flat = torch.zeros(n * d + 16, dtype=torch.uint8, device="cuda")
    k = flat[1 : 1 + n * d].view(n, d).view(FP8)
    assert k.is_contiguous() and k.data_ptr() % 16 != 0
    _, k_scale = good_pooling(n, d)
    with pytest.raises(ValueError, match=names("k") + ".*16-byte aligned"):
        hisa.fp8_block_mean_pooling(k, k_scale)


def test_pooling_bad_out():
    k, k_scale = good_pooling(1000, 128)
    nb = 8
    good_k = torch.empty((nb, 128), dtype=FP8, device="cuda")
    good_s = torch.empty((nb,), dtype=torch.float32, device="cuda")
    with pytest.raises(ValueError, match=r"blocked_k\).*shape"):
        hisa.fp8_block_mean_pooling(k, k_scale, 128, out=(good_k[:7], good_s))
    with pytest.raises(ValueError, match=r"blocked_k_scale\).*float32"):
        hisa.fp8_block_mean_pooling(k, k_scale, 128, out=(good_k, good_s.double()))
    with pytest.raises(ValueError, match=r"blocked_k\).*CUDA"):
        hisa.fp8_block_mean_pooling(k, k_scale, 128, out=(good_k.cpu(), good_s))
    with pytest.raises(ValueError, match=names("out")):
        hisa.fp8_block_mean_pooling(k, k_scale, 128, out=good_k)


def test_pooling_empty_returns_without_library():
    for d in (64, 128):
        k = torch.empty((0, d), dtype=FP8, device="cuda")
        k_scale = torch.empty((0,), dtype=torch.float32, device="cuda")
        blocked_k, blocked_scale = hisa.fp8_block_mean_pooling(k, k_scale, 64)
        assert blocked_k.shape == (0, d) and blocked_k.dtype == FP8 and blocked_k.is_cuda
        assert blocked_scale.shape == (0,) and blocked_scale.dtype == torch.float32


# ---- clean_and_maintain_logits_ -------------------------------------------------


def test_clean_not_a_tensor():
    logits, ks, ke = good_logits()
    with pytest.raises(ValueError, match=names("logits") + ".*torch.Tensor"):
        hisa.clean_and_maintain_logits_([[0.0]], ks, ke)
    with pytest.raises(ValueError, match=names("ks") + ".*torch.Tensor"):
        hisa.clean_and_maintain_logits_(logits, 0, ke)
    with pytest.raises(ValueError, match=names("ke") + ".*torch.Tensor"):
        hisa.clean_and_maintain_logits_(logits, ks, None)


def test_clean_cpu_tensors():
    logits, ks, ke = good_logits()
    with pytest.raises(ValueError, match=names("logits") + ".*CUDA"):
        hisa.clean_and_maintain_logits_(logits.cpu(), ks, ke)
    with pytest.raises(ValueError, match=names("ks") + ".*CUDA"):
        hisa.clean_and_maintain_logits_(logits, ks.cpu(), ke)
    with pytest.raises(ValueError, match=names("ke") + ".*CUDA"):
        hisa.clean_and_maintain_logits_(logits, ks, ke.cpu())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64, torch.int32])
def test_clean_logits_dtype(dtype):
    logits, ks, ke = good_logits()
    with pytest.raises(ValueError, match=names("logits") + ".*float32"):
        hisa.clean_and_maintain_logits_(logits.to(dtype), ks, ke)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int16, torch.float32, torch.uint8])
def test_clean_window_dtype(dtype):
    logits, ks, ke = good_logits()
    with pytest.raises(ValueError, match=names("ks") + ".*int32"):
        hisa.clean_and_maintain_logits_(logits, ks.to(dtype), ke)
    with pytest.raises(ValueError, match=names("ke") + ".*int32"):
        hisa.clean_and_maintain_logits_(logits, ks, ke.to(dtype))


def test_clean_shapes():
    logits, ks, ke = good_logits(300, 40)
    with pytest.raises(ValueError, match=names("logits") + ".*2-D"):
        hisa.clean_and_maintain_logits_(logits.view(-1), ks, ke)
    with pytest.raises(ValueError, match=r"ks must have shape \[M\]=\[300\], got \[299\]"):
        hisa.clean_and_maintain_logits_(logits, ks[:299], ke)
    with pytest.raises(ValueError, match=r"ke must have shape \[M\]=\[300\], got \[300, 1\]"):
        hisa.clean_and_maintain_logits_(logits, ks, ke[:, None])


def test_clean_non_contiguous():
    logits, ks, ke = good_logits(64, 64)
    with pytest.raises(ValueError, match=names("logits") + ".*contiguous"):
        hisa.clean_and_maintain_logits_(logits.t(), ks, ke)
    with pytest.raises(ValueError, match=names("logits") + ".*contiguous"):
        hisa.clean_and_maintain_logits_(torch.randn(64, 128, device="cuda")[:, ::2], ks, ke)
    strided = torch.zeros(128, dtype=torch.int32, device="cuda")[::2]
    with pytest.raises(ValueError, match=names("ks") + ".*contiguous"):
        hisa.clean_and_maintain_logits_(logits, strided, ke)
    with pytest.raises(ValueError, match=names("ke") + ".*contiguous"):
        hisa.clean_and_maintain_logits_(logits, ks, strided)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_clean_different_devices():
    logits, ks, ke = good_logits()
    with pytest.raises(ValueError, match=names("ke") + ".*same device"):
        hisa.clean_and_maintain_logits_(logits, ks, ke.to("cuda:1"))


def test_clean_validation_leaves_logits_alone():
    logits, ks, ke = good_logits()
    before = logits.clone()
    with pytest.raises(ValueError):
        hisa.clean_and_maintain_logits_(logits, ks.long(), ke)
    torch.cuda.synchronize()
    assert torch.equal(logits, before)
