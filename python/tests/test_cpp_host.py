"""The C++ host program built against the installed package
(test/Install/hisa_indexer_host.cpp, built by
test/Install/build-against-install.sh, as the lit test Tools/install-package
does) runs the HISA indexer from C++ on the GPU; its result must equal
hisa.hisa_indexer's on the same inputs (as sets per row: the order inside a
row is unspecified).

The program is looked for at $HISA_CPP_HOST, then
build/gpu/install-test/out/hisa_indexer_host (what travels to the GPU
machine), then build/install-test/out/hisa_indexer_host; the test skips when
none exists.
"""

import os
import subprocess
from pathlib import Path

import pytest

from hisa_testutil import causal_indexer_inputs, fresh_seed, require_gpu

torch, hisa = require_gpu()

ROOT = Path(__file__).resolve().parents[2]


def host_program():
    candidates = [os.environ.get("HISA_CPP_HOST", ""),
                  ROOT / "build/gpu/install-test/out/hisa_indexer_host",
                  ROOT / "build/install-test/out/hisa_indexer_host"]
    for path in candidates:
        if path and Path(path).is_file():
            return Path(path)
    pytest.skip("the C++ host program is not built (test/Install/build-against-install.sh)")


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
