"""hisa.jit: hisa_kernel_get / compile / launch and the runtime cache."""

import os
import time

import pytest

from hisa_testutil import (
    assert_bitwise_equal,
    fresh_seed,
    random_fp8,
    random_k_scale,
    ref_block_mean,
    ref_block_scale,
    ref_clean_and_maintain,
    require_gpu,
)

torch, hisa = require_gpu()
jit = hisa.jit

POOLING = "fp8_block_mean_pooling"
CLEAN = "clean_and_maintain_logits"


def test_version_and_builtin_sources():
    assert hisa.version()
    src = jit.builtin_kernel_source(POOLING)
    assert src is not None and f"@{POOLING}" in src
    assert jit.builtin_kernel_source("no_such_kernel_xyz") is None


def test_get_kernel_twice_is_a_memory_hit():
    params = {"dim": 64, "kb": 256}
    first = jit.get_kernel(POOLING, params)
    before = jit.cache_stats()
    t0 = time.perf_counter()
    second = jit.get_kernel(POOLING, params)
    elapsed = time.perf_counter() - t0
    after = jit.cache_stats()
    assert after.memory_hits == before.memory_hits + 1, (before, after)
    assert after.compiles == before.compiles and after.disk_hits == before.disk_hits
    assert second.handle == first.handle
    assert elapsed < 0.05, f"second hisa_kernel_get took {elapsed * 1e3:.2f} ms"


def test_params_order_does_not_matter():
    a = jit.get_kernel(POOLING, {"dim": 128, "kb": 64})
    b = jit.get_kernel(POOLING, {"kb": 64, "dim": 128})
    assert a.handle == b.handle


def test_defaults_and_explicit_defaults():
    # Only checks both resolve; whether they share a cache entry is the runtime's choice.
    assert jit.get_kernel(CLEAN).handle
    assert jit.get_kernel(CLEAN, {"block_m": 4}).handle


def test_bad_param_name_is_named():
    with pytest.raises(hisa.HisaError) as info:
        jit.get_kernel(POOLING, {"hedas": 3})
    assert "hedas" in str(info.value)
    assert info.value.status != 0


def test_unknown_kernel_is_named():
    with pytest.raises(hisa.HisaError) as info:
        jit.get_kernel("no_such_kernel_xyz", {})
    assert "no_such_kernel_xyz" in str(info.value)


def test_compile_returns_cached_binary(tmp_path):
    path = jit.compile(POOLING, {"dim": 64, "kb": 64})
    assert path and os.path.isfile(path), path


def test_cache_stats_shape():
    stats = jit.cache_stats()
    assert all(isinstance(v, int) and v >= 0 for v in stats)
    assert set(stats._asdict()) == {"compiles", "disk_hits", "memory_hits", "rejected_entries"}


def test_launch_clean_through_jit():
    seed = fresh_seed(torch)
    m, nn = 5000, 77
    s = torch.randint(0, nn + 1, (m,), device="cuda", dtype=torch.int32)
    e = torch.randint(0, nn + 1, (m,), device="cuda", dtype=torch.int32)
    logits = torch.randn(m, nn, device="cuda")
    expected = ref_clean_and_maintain(torch, logits, s, e)
    kernel = jit.get_kernel(CLEAN, {})
    kernel.launch(logits, s, e)
    torch.cuda.synchronize()
    assert_bitwise_equal(torch, logits, expected, "clean via hisa_kernel_launch", f"(seed {seed})")


@pytest.mark.parametrize("d,kb", [(64, 64), (128, 128), (128, 256)])
def test_launch_pooling_through_jit(d, kb):
    seed = fresh_seed(torch)
    n = 3 * kb + 7
    nb = (n + kb - 1) // kb
    k = random_fp8(torch, n, d)
    k_scale = random_k_scale(torch, n)
    blocked_k = torch.empty((nb, d), dtype=torch.float8_e4m3fn, device="cuda")
    blocked_scale = torch.full((nb,), float("nan"), device="cuda")
    kernel = jit.get_kernel(POOLING, {"dim": d, "kb": kb})
    kernel.launch(k, k_scale, blocked_k, blocked_scale)
    torch.cuda.synchronize()
    mean = ref_block_mean(torch, k, k_scale, kb)
    torch.testing.assert_close(blocked_scale.double(), ref_block_scale(torch, mean), rtol=1e-5, atol=0.0)
    torch.testing.assert_close(
        blocked_k.float() * blocked_scale[:, None], mean.float(), rtol=5e-2, atol=5e-3,
        msg=lambda msg: f"seed {seed}: {msg}",
    )


def test_launch_checks_signature():
    kernel = jit.get_kernel(CLEAN, {})
    logits = torch.randn(16, 8, device="cuda")
    s = torch.zeros(16, dtype=torch.int32, device="cuda")
    # Wrong rank of the first tensor: the runtime checks ranks against the signature.
    with pytest.raises(hisa.InvalidArgumentError):
        kernel.launch(logits.view(-1), s, s)
    # Wrong number of arguments.
    with pytest.raises(hisa.InvalidArgumentError):
        kernel.launch(logits, s)
    # Python-side: CPU tensors and unsupported argument types.
    with pytest.raises(ValueError, match="CUDA"):
        kernel.launch(logits.cpu(), s, s)
    with pytest.raises(ValueError, match="argument 1"):
        kernel.launch(logits, "s", s)
    # Elements smaller than the kernel reads: refused, not read past the end.
    with pytest.raises(hisa.InvalidArgumentError, match="float16 .2 bytes.*f32 .4 bytes"):
        kernel.launch(logits.half(), s, s)
    # Of the same size but another type: refused, not reinterpreted.
    with pytest.raises(hisa.InvalidArgumentError, match="torch.int32, but the kernel takes f32"):
        kernel.launch(logits.view(torch.int32), s, s)
    with pytest.raises(hisa.InvalidArgumentError, match="torch.float32, but the kernel takes i32"):
        kernel.launch(logits, s.view(torch.float32), s)
    assert kernel.argument_types() == [("f32", 4), ("i32", 4), ("i32", 4)]


def test_compiles_from_several_threads_match_one_at_a_time():
    """hisa_kernel_compile from four threads at once (the JIT compiles
    without holding its lock): sources no cache has seen (a fresh comment
    each), two threads on the same one. Each kernel is compiled once, and
    each caller gets the binary of a lone call on the same source."""
    import concurrent.futures
    import uuid

    base = jit.builtin_kernel_source(POOLING)
    sources = [base + f"\n// {uuid.uuid4()}\n" for _ in range(3)]
    requests = [(sources[0], {"dim": 64, "kb": 64}), (sources[1], {"dim": 128, "kb": 128}),
                (sources[2], {"dim": 64, "kb": 256}), (sources[1], {"dim": 128, "kb": 128})]
    before = jit.cache_stats().compiles
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        paths = list(pool.map(lambda r: jit.compile(POOLING, r[1], source=r[0]), requests))
    assert jit.cache_stats().compiles - before == 3
    binaries = [open(path, "rb").read() for path in paths]
    assert binaries[1] == binaries[3]
    assert len({binaries[0], binaries[1], binaries[2]}) == 3
    for (source, params), binary in zip(requests, binaries):
        assert open(jit.compile(POOLING, params, source=source), "rb").read() == binary


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_kernels_run_on_every_device():
    """One process, two GPUs: a kernel handle and the operators work on
    whichever device is current (the runtime loads each kernel into each
    device's context on its first launch there), alternating."""
    seed = fresh_seed(torch)
    kernel = jit.get_kernel(CLEAN, {})
    for device in ("cuda:0", "cuda:1", "cuda:0", "cuda:1"):
        m, nn = 301, 77
        s = torch.randint(0, nn + 1, (m,), device=device, dtype=torch.int32)
        e = torch.randint(0, nn + 1, (m,), device=device, dtype=torch.int32)
        logits = torch.randn(m, nn, device=device)
        expected = ref_clean_and_maintain(torch, logits, s, e)
        with torch.cuda.device(device):
            kernel.launch(logits, s, e)
        torch.cuda.synchronize(device)
        assert_bitwise_equal(torch, logits, expected, f"clean on {device}", f"(seed {seed})")
        x = torch.randn(33, 1000, device=device)
        got = hisa.topk(x, 17)
        want = torch.topk(x, 17, dim=1).indices
        assert got.device == x.device
        assert torch.equal(torch.sort(got.long(), dim=1).values,
                           torch.sort(want, dim=1).values), f"topk on {device} (seed {seed})"


E5M2_ROUND_TRIP = """
tile.kernel @e5m2_round_trip(%x: !tile.global<[256], f32>, %q: !tile.global<[256], f8E5M2>,
                             %y: !tile.global<[256], f32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %a = tile.alloc : !tile.frag<[256], f32>
    %b = tile.alloc : !tile.frag<[256], f8E5M2>
    %c = tile.alloc : !tile.frag<[256], f32>
    tile.copy %x to %a : !tile.global<[256], f32> to !tile.frag<[256], f32>
    tile.cast %a to %b : !tile.frag<[256], f32> to !tile.frag<[256], f8E5M2>
    tile.copy %b to %q : !tile.frag<[256], f8E5M2> to !tile.global<[256], f8E5M2>
    tile.cast %b to %c : !tile.frag<[256], f8E5M2> to !tile.frag<[256], f32>
    tile.copy %c to %y : !tile.frag<[256], f32> to !tile.global<[256], f32>
  }
}
"""


def test_e5m2_conversions_match_torch():
    # f8E5M2 casts (PTX's paired e5m2 cvt, round to nearest even) against
    # torch's float8_e5m2 conversion, within the finite range (the cvt
    # saturates where torch gives inf), subnormals included.
    seed = fresh_seed(torch)
    x = torch.randn(256, device="cuda") * torch.logspace(-6, 4, 256, device="cuda")
    x[:4] = torch.tensor([0.0, -0.0, 57344.0, -57344.0], device="cuda")
    kernel = jit.get_kernel("e5m2_round_trip", source=E5M2_ROUND_TRIP)
    q = torch.empty(256, dtype=torch.float8_e5m2, device="cuda")
    y = torch.empty(256, device="cuda")
    kernel.launch(x, q, y)
    torch.cuda.synchronize()
    expected = x.to(torch.float8_e5m2)
    assert torch.equal(q.view(torch.uint8), expected.view(torch.uint8)), f"seed {seed}"
    assert torch.equal(y, expected.float()), f"seed {seed}"
