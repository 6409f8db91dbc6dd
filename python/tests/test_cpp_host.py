"""The C++ host program built against the installed package
(test/Install/hisa_indexer_host.cpp, built by
test/Install/build-against-install.sh, as the lit test Tools/install-package
does) runs the HISA indexer from C++ on the GPU; its result must equal
hisa.hisa_indexer's on the same inputs (as sets per row: the order inside a
row is unspecified).

The program is looked for at $HISA_CPP_HOST, then
build/gpu/install-test/out/hisa_indexer_host (what travels to the GPU
machine), then build/install-test/out/hisa_indexer_host; the test skips when
none exists (fails under HISA_TESTS_STRICT=1).
"""

import os
import subprocess
from pathlib import Path

import pytest

from hisa_testutil import _missing, causal_indexer_inputs, fresh_seed, require_gpu

torch, hisa = require_gpu()

ROOT = Path(__file__).resolve().parents[2]


def host_program(name="hisa_indexer_host"):
    candidates = [os.environ.get("HISA_CPP_HOST", "") if name == "hisa_indexer_host" else "",
                  ROOT / f"build/gpu/install-test/out/{name}",
                  ROOT / f"build/install-test/out/{name}"]
    for path in candidates:
        if path and Path(path).is_file():
            return Path(path)
    # Under HISA_TESTS_STRICT=1 a missing program fails: a GPU run that
    # forgot to carry it would otherwise pass without testing the package.
    _missing(f"the C++ host program {name} is not built "
             "(test/Install/build-against-install.sh build "
             "build/gpu/install-test/prefix build/gpu/install-test/out)")


@pytest.mark.parametrize("m,n,heads,kb,block_topk,topk_tokens", [
    (1000, 1000, 64, 128, 16, 256),
    (777, 3001, 32, 64, 8, 300),
])
def test_cpp_host_matches_python(tmp_path, m, n, heads, kb, block_topk, topk_tokens):
    program = host_program()
    fresh_seed(torch)
    dim = 128
    q, k, k_scale, weights, ks, ke = causal_indexer_inputs(torch, m, n, heads, dim)
    for name, t in (("q", q.view(torch.uint8)), ("k", k.view(torch.uint8)),
                    ("k_scale", k_scale), ("weights", weights), ("ks", ks), ("ke", ke)):
        t.cpu().numpy().tofile(tmp_path / f"{name}.bin")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.dirname(hisa.lib_path()) + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    run = subprocess.run([str(program), str(tmp_path), str(m), str(n), str(heads), str(dim), str(kb),
                          str(block_topk), str(topk_tokens)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr + run.stdout
    out = torch.from_numpy(
        __import__("numpy").fromfile(tmp_path / "out.bin", dtype="int32")).view(m, topk_tokens)
    expected = hisa.hisa_indexer(q, k, k_scale, weights, ks, ke, k_block_size=kb,
                                 block_topk=block_topk, topk_tokens=topk_tokens).cpu()
    assert torch.equal(out.long().sort(1).values, expected.long().sort(1).values)


@pytest.mark.parametrize("ratio", [0, 4, 128])
def test_v4_layer_from_cpp_matches_python(tmp_path, ratio):
    """test/Install/v4_attention_host.cpp runs a V4 attention layer through
    the installed package (hisa::v4::Attention): its prefill and decode
    outputs are those of hisa.v4.Attention on the same weights and inputs
    (the same C++ layer behind both: bit for bit)."""
    import numpy
    from hisa.v4 import reference as ref
    program = host_program("v4_attention_host")
    seed = fresh_seed(torch)
    config = ref.Config(dim=256, heads=16, q_lora=256, o_groups=2, o_lora=256,
                        compress_ratio=ratio, index_topk=16)
    batch, seq, steps, max_seq = 2, 150, 5, 300
    weights = {k: v.cuda() for k, v in
               ref.random_weights(config, torch.Generator().manual_seed(seed)).items()}
    matrices = {"wq_a", "wq_b", "wkv", "wo_a", "wo_b", "c_wkv", "c_wgate", "i_wq", "i_weights",
                "i_wkv", "i_wgate"}
    for name, t in weights.items():
        t = t.bfloat16().view(torch.int16) if name in matrices else t.float()
        t.contiguous().cpu().numpy().tofile(tmp_path / f"{name}.bin")
    x = torch.randn(batch, seq + steps, config.dim, device="cuda").bfloat16()
    x.view(torch.int16).cpu().numpy().tofile(tmp_path / "x.bin")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.dirname(hisa.lib_path()) + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    run = subprocess.run([str(program), str(tmp_path), str(ratio), str(batch), str(seq), str(steps),
                          str(config.dim), str(config.heads), str(config.q_lora),
                          str(config.o_groups), str(config.o_lora), str(config.index_topk),
                          str(max_seq)], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr + run.stdout
    layer = hisa.v4.Attention(config, weights, batch, max_seq)
    expected = layer.forward(x[:, :seq], 0)
    got = torch.from_numpy(numpy.fromfile(tmp_path / "prefill.bin", dtype="int16")).view(
        torch.bfloat16).view(batch, seq, config.dim)
    assert torch.equal(got, expected.cpu()), "prefill"
    decoded = torch.from_numpy(numpy.fromfile(tmp_path / "decode.bin", dtype="int16")).view(
        torch.bfloat16).view(steps, batch, config.dim)
    for t in range(steps):
        out = layer.forward(x[:, seq + t:seq + t + 1], seq + t)
        assert torch.equal(decoded[t], out[:, 0].cpu()), f"decode step {t}"
