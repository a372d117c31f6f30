"""Selects by a boolean mask (torch.where, masked_fill) in prism's pieces: the mask cast to floats
by PyTorch, the select prism's where (python/prism/bool_selects.py; docs/python.md, "Selects by a
boolean mask")."""

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch, "compile"):
    pytest.skip("torch.compile needs PyTorch 2", allow_module_level=True)
transformers = pytest.importorskip("transformers")

import prism  # noqa: E402,F401  (registers the backend)
from prism import piece_calls  # noqa: E402

T = transformers
# Eager attention as each writes it: GPT-2's and GPT-Neo's `where(causal, scores, finfo.min)`
# (a 0-d tensor from `full` or `tensor`), DistilBERT's `scores.masked_fill(mask, finfo.min)`.
EAGER = {
    "gpt2": (T.GPT2LMHeadModel, lambda: T.GPT2Config(vocab_size=128, n_embd=64, n_layer=2, n_head=4, n_positions=64)),
    "gpt_neo": (T.GPTNeoForCausalLM, lambda: T.GPTNeoConfig(vocab_size=128, hidden_size=64, num_layers=2, num_heads=4,
                                                             attention_types=[[["global", "local"], 1]], window_size=4,
                                                             max_position_embeddings=64)),
    "distilbert": (T.DistilBertModel, lambda: T.DistilBertConfig(vocab_size=128, dim=64, hidden_dim=128, n_layers=2,
                                                                  n_heads=4, max_position_embeddings=64)),
}


def eager_model(name):
    """The model with eager attention (as output_attentions=True needs), a channel 20x the others."""
    torch.manual_seed(21)
    cls, config = EAGER[name]
    config = config()
    config._attn_implementation = "eager"
    model = cls(config).eval()
    with torch.no_grad():
        channels = model.get_input_embeddings().weight.T
        channels[3] *= 20
    return model


def padded_tokens(batch, seq):
    mask = torch.ones(batch, seq, dtype=torch.long)
    mask[1, :2] = 0
    return {"input_ids": torch.randint(0, 128, (batch, seq)), "attention_mask": mask}


def test_gpt2s_eager_attention_is_one_piece_with_its_mask_select(monkeypatch, tmp_path):
    # Before: the select read a boolean and `.type(dtype)` had no translation, so the attention
    # was four pieces around two PyTorch ops; and the piece was cut after `q @ k^T`.
    monkeypatch.setenv("PRISM_SOCKET", str(tmp_path / "none.sock"))
    monkeypatch.setenv("PRISM_BIN", str(tmp_path / "no-prism"))
    (graph,) = prism.explain(eager_model("gpt2"), **padded_tokens(2, 8)).graphs
    attention = [p.text for _, p in graph.prism_programs if "maximum(max(" in p.text or "softmax(" in p.text]
    assert len(attention) == 2 and all("where(" in t and t.count("@") >= 3 for t in attention), attention
    left = [node for node, _ in graph.prism_left]
    assert not any("(where)" in node and "modeling_gpt2" in node or "(type)" in node for node in left), left


@pytest.mark.parametrize("name", sorted(EAGER))
def test_eager_attention_with_a_boolean_mask_gives_eagers_values_in_prisms_pieces(shared_daemon, spy, monkeypatch, name):
    monkeypatch.setattr(piece_calls, "race", lambda prism_call, torch_call: (1e-3, 2e-3))  # prism's kernels run
    model, inputs = eager_model(name), padded_tokens(2, 8)
    with torch.no_grad():
        want = model(**inputs)[0]
        got = torch.compile(model, backend=spy)(**inputs)[0]
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-4 * want.abs().max().item()), (got - want).abs().max()
    (graph,) = spy.graphs
    assert not graph.prism_skipped, graph.prism_skipped
    selects = [name for name, compiled in graph.prism_partitions if "where(" in compiled.program.text]
    assert len(selects) == 2, selects  # each layer's select, prism's
    assert all(call is not None for name in selects for call in getattr(graph, name).calls.values()), "prism's kernel ran"


class MaskedScores(torch.nn.Module):
    """Scores masked by a boolean causal mask with finfo.min, then softmax and the values."""

    def forward(self, q, k, v, causal):
        scores = q @ k.transpose(-1, -2)
        scores = torch.where(causal, scores, torch.tensor(torch.finfo(scores.dtype).min))
        return torch.softmax(scores, dim=-1) @ v


def test_an_infinite_score_the_mask_drops_is_dropped_as_pytorch_drops_it(shared_daemon, spy, monkeypatch):
    # A select by bits: prism's where gives the fill where the mask drops a score, whatever that
    # score is; a product by 0 and 1 would make NaN of an infinity there.
    monkeypatch.setattr(piece_calls, "race", lambda prism_call, torch_call: (1e-3, 2e-3))  # prism's kernel runs
    torch.manual_seed(22)
    q, k, v = torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 16)
    q[..., 0, :] *= 1e19  # the first query's scores overflow to +-inf: only its first is kept
    k[..., 1:, :] *= 1e19
    causal = torch.ones(8, 8, dtype=torch.bool).tril()
    assert torch.isinf(q @ k.transpose(-1, -2)).any()
    module = MaskedScores()
    with torch.no_grad():
        want = module(q, k, v, causal)
        got = torch.compile(module, backend=spy)(q, k, v, causal)
    assert torch.isfinite(want).all() and torch.isfinite(got).all()
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-4)
    (graph,) = spy.graphs
    ((name, compiled),) = graph.prism_partitions
    assert "where(" in compiled.program.text
    assert all(call is not None for call in getattr(graph, name).calls.values()), "prism's kernel ran"
