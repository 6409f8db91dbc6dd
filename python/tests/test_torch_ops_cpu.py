"""torch.ops.hisa.* without a GPU: every op is defined with the schema its
annotations give, its fake implementation computes output shapes, and
torch.export traces a graph through them (fake tensors only; the real
kernels run in test_torch_ops.py on the GPU)."""

import pytest

from hisa_testutil import require_torch

torch = require_torch()

import hisa  # noqa: E402
import hisa.ops  # noqa: E402,F401  (registers torch.ops.hisa.*)
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

SCHEMAS = {
    "fp8_block_mean_pooling": "hisa::fp8_block_mean_pooling(Tensor k, Tensor k_scale, "
                              "SymInt k_block_size=128) -> (Tensor, Tensor)",
    "topk": "hisa::topk(Tensor x, SymInt k, Tensor? starts=None, Tensor? ends=None) -> Tensor",
    "clean_and_maintain_logits_":
        "hisa::clean_and_maintain_logits_(Tensor(a0!) logits, Tensor ks, Tensor ke) -> ()",
    "hisa_indexer": "hisa::hisa_indexer(Tensor q, Tensor k, Tensor k_scale, Tensor weights, "
                    "Tensor cu_seqlen_ks, Tensor cu_seqlen_ke, SymInt k_block_size, "
                    "SymInt block_topk, SymInt topk_tokens) -> Tensor",
    "sparse_attn": "hisa::sparse_attn(Tensor q, Tensor kv, Tensor attn_sink, Tensor topk_idxs, "
                   "float softmax_scale, bool return_lse=False) -> (Tensor, Tensor)",
    "flash_attn": "hisa::flash_attn(Tensor q, Tensor k, Tensor v, bool causal, "
                  "float softmax_scale) -> Tensor",
}


def indexer_inputs(m=700, n=1500, heads=64, dim=128):
    q = torch.empty(m, heads, dim, dtype=torch.float8_e4m3fn)
    k = torch.empty(n, dim, dtype=torch.float8_e4m3fn)
    ks = torch.zeros(m, dtype=torch.int32)
    return q, k, torch.empty(n), torch.empty(m, heads), ks, ks.clone()


def test_schemas():
    for name, schema in SCHEMAS.items():
        assert str(getattr(torch.ops.hisa, name).default._schema) == schema


def test_fake_shapes():
    with FakeTensorMode():
        q, k, k_scale, weights, ks, ke = indexer_inputs()
        assert torch.ops.hisa.hisa_indexer(q, k, k_scale, weights, ks, ke, 128, 8,
                                           256).shape == (700, 256)
        assert torch.ops.hisa.flat_indexer(q, k, k_scale, weights, ks, ke, 300).shape == (700, 300)
        assert torch.ops.hisa.mqa_logits(q, k, k_scale, weights, ks, ke).shape == (700, 1500)
        pooled, scale = torch.ops.hisa.fp8_block_mean_pooling(k, k_scale, 64)
        assert pooled.shape == (24, 128) and scale.shape == (24,) and scale.dtype == torch.float32
        top = torch.ops.hisa.topk(torch.empty(33, 500), 17)
        assert top.shape == (33, 17) and top.dtype == torch.int32
        o, lse = torch.ops.hisa.sparse_attn(torch.empty(2, 3, 16, 512, dtype=torch.bfloat16),
                                            torch.empty(2, 40, 512, dtype=torch.bfloat16),
                                            torch.empty(16),
                                            torch.empty(2, 3, 70, dtype=torch.int32), 0.05,
                                            True)
        assert o.shape == (2, 3, 16, 512) and lse.shape == (2, 3, 16)
        assert lse.dtype == torch.float32
        # Without return_lse (the default) no lse is computed: empty.
        o, lse = torch.ops.hisa.sparse_attn(torch.empty(2, 3, 16, 512, dtype=torch.bfloat16),
                                            torch.empty(2, 40, 512, dtype=torch.bfloat16),
                                            torch.empty(16),
                                            torch.empty(2, 3, 70, dtype=torch.int32), 0.05)
        assert o.shape == (2, 3, 16, 512) and lse.shape == (0,)


def test_export_traces_through_the_ops():
    class Indexer(torch.nn.Module):
        def forward(self, q, k, k_scale, weights, ks, ke, logits):
            indices = torch.ops.hisa.hisa_indexer(q, k, k_scale, weights, ks, ke, 128, 8, 256)
            torch.ops.hisa.clean_and_maintain_logits_(logits, ks, ke)
            return indices + 0, logits * 2

    program = torch.export.export(Indexer(), indexer_inputs() + (torch.empty(700, 1500),))
    code = program.graph_module.code
    assert "torch.ops.hisa.hisa_indexer.default" in code
    assert "torch.ops.hisa.clean_and_maintain_logits_.default" in code


def test_fake_implementations_refuse_inputs_that_require_grad():
    # A compiled graph runs the real kernel with grad mode off, where the
    # eager check passes: the fake implementation (what torch.compile
    # traces) refuses instead of losing the gradient.
    with FakeTensorMode():
        q = torch.empty(2, 3, 16, 512, dtype=torch.bfloat16, requires_grad=True)
        kv = torch.empty(2, 40, 512, dtype=torch.bfloat16)
        args = (kv, torch.empty(16), torch.empty(2, 3, 70, dtype=torch.int32), 0.05)
        try:
            torch.ops.hisa.sparse_attn(q, *args)
        except hisa.InvalidArgumentError as error:
            assert "q requires grad" in str(error)
        else:
            raise AssertionError("a q that requires grad was traced")
        with torch.no_grad():
            o, _ = torch.ops.hisa.sparse_attn(q, *args)
        assert o.shape == (2, 3, 16, 512)
        assert torch.ops.hisa.sparse_attn(q.detach(), *args)[0].shape == (2, 3, 16, 512)
        # The ops that return indices accept them, as their eager functions
        # do (weights from a trainable projection; no gradient flows
        # through a selection).
        x = torch.empty(4, 10, requires_grad=True)
        assert torch.ops.hisa.topk(x, 3).shape == (4, 3)
        q8, k, k_scale, weights, ks, ke = indexer_inputs(m=70, n=300)
        weights.requires_grad_(True)
        assert torch.ops.hisa.hisa_indexer(q8, k, k_scale, weights, ks, ke, 128, 8,
                                           64).shape == (70, 64)


def test_compiled_out_arguments_are_checked_like_eager_ones():
    # Under torch.compile the ops' results are copied into out=; copy_ alone
    # would convert an int64 out or broadcast into a larger one.
    result = torch.zeros(3, 5, dtype=torch.int32)
    # A tensor of the wrong dtype or shape: the message names what it must be
    # and what it is; not a tensor: the message says so.
    wanted = "out must be [3, 5] torch.int32"
    for out, words in ((torch.empty(3, 5, dtype=torch.int64), (wanted, "[3, 5] torch.int64")),
                       (torch.empty(2, 3, 5, dtype=torch.int32), (wanted, "[2, 3, 5] torch.int32")),
                       ([1], ("out must be a torch.Tensor, got list",))):
        try:
            hisa.ops._into_out(out, "out", result)
        except hisa.InvalidArgumentError as error:
            for part in words:
                assert part in str(error), (part, str(error))
        else:
            raise AssertionError(f"out {words} was accepted")
    good = torch.empty(3, 5, dtype=torch.int32)
    assert hisa.ops._into_out(good, "out", result) is good


def test_outputs_that_overlap_inputs_are_refused():
    # An out= sharing bytes with what the kernel reads would read values it
    # already overwrote (hisa.topk's out vs x or the windows, pooling's).
    from hisa._torch_util import check_no_overlap
    buffer = torch.zeros(64, dtype=torch.int32)
    out, starts = buffer[:32].view(4, 8), buffer[28:36]
    try:
        check_no_overlap("out", out, (("x", torch.zeros(4, 8)), ("starts", starts)))
    except hisa.InvalidArgumentError as error:
        assert "out overlaps starts" in str(error)
    else:
        raise AssertionError("an out overlapping starts was accepted")
    check_no_overlap("out", out, (("starts", buffer[32:40]), ("ends", None)))


def test_v4_layer_checks_its_config_and_weight_shapes():
    # The C++ layer reads every weight by the config's sizes and has its
    # head, RoPE, window and indexer dims fixed: anything else is refused
    # before a pointer is taken (a smaller tensor was read past its end).
    from hisa.v4 import reference as ref
    from hisa.v4.layer import check_config_and_weights
    config = ref.Config(dim=256, heads=16, q_lora=256, o_groups=2, o_lora=256,
                        compress_ratio=4, index_topk=16)
    weights = ref.random_weights(config)
    check_config_and_weights(config, weights)
    for change, words in ((dict(head_dim=256), "config.head_dim = 256"),
                          (dict(index_dim=64), "config.index_dim = 64")):
        other = ref.Config(**{**config.__dict__, **change})
        try:
            check_config_and_weights(other, ref.random_weights(other))
        except hisa.InvalidArgumentError as error:
            assert words in str(error)
        else:
            raise AssertionError(f"{change} was accepted")
    short = dict(weights, wkv=weights["wkv"][:100])
    try:
        check_config_and_weights(config, short)
    except hisa.InvalidArgumentError as error:
        assert "weights['wkv'] has shape [100, 256] (25600 elements); the config needs " \
            "[512, 256] (131072)" in str(error)
    else:
        raise AssertionError("a short wkv was accepted")
    # The same elements in another shape read the same; another ratio's
    # weights are not read.
    flat = dict(weights, wo_a=weights["wo_a"].reshape(-1, weights["wo_a"].shape[-1]))
    check_config_and_weights(config, flat)
    window_only = ref.Config(**{**config.__dict__, "compress_ratio": 0})
    check_config_and_weights(window_only, weights)


def test_eager_calls_refuse_fake_tensors_outside_compile(monkeypatch):
    """Under FakeTensorMode outside torch.compile the public functions take
    their eager path; a fake tensor's data_ptr() is made up, so the call
    is refused by name before any pointer reaches the C ABI (a kernel
    writing at such an address would fault the CUDA context)."""
    import pytest
    from hisa import ops
    reached = []
    monkeypatch.setitem(ops._C_FUNCTIONS, "hisa_topk", lambda *args: reached.append(args) or 0)
    monkeypatch.setattr(ops, "current_device_index", lambda: 0)
    monkeypatch.setattr(ops, "context_ready", lambda index: True)
    monkeypatch.setattr(ops, "stream_handle_of", lambda index: 0)
    with FakeTensorMode():
        x = torch.empty(44, device="cuda")[4:].view(4, 10)
        with pytest.raises(hisa.InvalidArgumentError, match="fake or meta tensor"):
            hisa.topk(x, 3)
    assert not reached


def test_a_meta_tensor_beside_a_real_one_is_refused():
    """Meta ranks above every backend in the dispatcher, so a call mixing a
    meta tensor with real ones reaches the fake implementation, whose output
    would be real memory never written: it refuses, naming the argument."""
    x = torch.randn(4, 100)
    starts = torch.zeros(4, dtype=torch.int32, device="meta")
    with pytest.raises(hisa.InvalidArgumentError, match="x is a real tensor on 'cpu'"):
        torch.ops.hisa.topk(x, 3, starts, starts)
    q, k, k_scale, weights, ks, ke = indexer_inputs()
    with pytest.raises(hisa.InvalidArgumentError, match="q is a real tensor"):
        torch.ops.hisa.hisa_indexer(q, k.to("meta"), k_scale, weights, ks, ke, 128, 8, 64)
    # All meta: shapes only, as before.
    out = torch.ops.hisa.topk(x.to("meta"), 3, starts, starts)
    assert out.shape == (4, 3) and out.device.type == "meta"
