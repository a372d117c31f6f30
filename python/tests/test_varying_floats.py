"""Floats dynamo lets vary: once a layer's eps or attention scale held another value in an earlier
compile of the same code (a second model of the class, another config), dynamo passes it as a 0-d
tensor read by `.item()`; prism compiles the graph for each set of values it is called with
(docs/python.md, "Floats dynamo lets vary")."""
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch, "compile"):
    pytest.skip("torch.compile needs PyTorch 2", allow_module_level=True)
transformers = pytest.importorskip("transformers")

import prism  # noqa: E402,F401  (registers the backend)
from prism import varying_floats  # noqa: E402
from prism import errors  # noqa: E402
from transformers import LlamaConfig  # noqa: E402
from transformers.models.llama.modeling_llama import LlamaMLP, LlamaRMSNorm  # noqa: E402

HIDDEN, HEADS = 64, 4
BACKEND = sys.modules["prism.torch_backend"]


class Block(torch.nn.Module):
    """transformers' LlamaRMSNorm (its eps an attribute), attention over the heads with the scale an
    attribute as modeling files keep it, and LlamaMLP, with the residual add."""

    def __init__(self, eps, scaling):
        super().__init__()
        self.norm, self.mlp = LlamaRMSNorm(HIDDEN, eps=eps), LlamaMLP(LlamaConfig(hidden_size=HIDDEN, intermediate_size=2 * HIDDEN))
        self.scaling = scaling
        with torch.no_grad():
            for p in self.parameters():
                p.normal_(0.0, 0.2)
            self.norm.weight.add_(1.0)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.norm(x).view(b, s, HEADS, HIDDEN // HEADS).transpose(1, 2)
        attention = torch.nn.functional.scaled_dot_product_attention(q, q, q, scale=self.scaling)
        return x + self.mlp(attention.transpose(1, 2).reshape(b, s, HIDDEN))


# Each eps makes a difference at these activations (rows of mean square ~7e-4). dynamo keeps the
# graph that reads both floats for a third set only where the scale is the same: it guards the value
# scaled_dot_product_attention takes as `scale`, not the norm's eps.
VALUES = ((1e-6, 0.25), (1e-4, 0.125), (1e-3, 0.125))


def activations():
    x = torch.randn(2, 8, HIDDEN) * 1e-2
    x[..., 3] *= 20
    return x


def graphs_of_two_blocks(backend):
    """The graphs dynamo gives `backend` for two Blocks of different values, compiled one after the
    other, and the Blocks: the second graph reads both floats with `.item()`."""
    torch._dynamo.reset()
    blocks = [Block(*v) for v in VALUES[:2]]
    with torch.no_grad():
        for block in blocks:
            torch.compile(block, backend=backend)(activations())
    return blocks


def captured_graphs():
    """[(graph, example inputs, the positions of its floats)] of graphs_of_two_blocks, as dynamo
    gave them, run by PyTorch. The positions are found in the backend's call, as dynamo's
    GraphArgs are on the placeholders only then."""
    captured = []

    def capture(graph_module, example_inputs):
        captured.append((graph_module, list(example_inputs), varying_floats.positions(graph_module, example_inputs)))
        return graph_module.forward

    graphs_of_two_blocks(capture)
    torch._dynamo.reset()  # the later tests' dynamo starts afresh
    return captured


def with_values(inputs, at, values):
    """The inputs with the floats at positions `at` of other values."""
    other = list(inputs)
    for i, value in zip(at, values):
        other[i] = torch.tensor(value, dtype=torch.float64)
    return other


def test_a_copy_of_the_graph_reads_the_floats_as_numbers_and_computes_the_same():
    (_, _, none), (second, inputs, at) = captured_graphs()
    assert none == []
    assert len(at) == 2
    values = [inputs[i].item() for i in at]
    assert sorted(values) == sorted(VALUES[1])
    copy = varying_floats.specialized(second, at, values)
    items = [n for n in copy.graph.nodes if n.op == "call_method" and n.target == "item"]
    assert not items, copy.code
    assert sum(n.op == "call_method" and n.target == "item" for n in second.graph.nodes) == 2  # left as it is
    with torch.no_grad():
        (got,), (want,) = copy(*inputs), second(*inputs)
        assert torch.equal(got, want)


@pytest.mark.parametrize("case", ["beyond its sets", "prism fails"])
def test_pytorch_runs_the_graph_for_a_set_prism_does_not_compile_and_a_warning_says_why(monkeypatch, case):
    graph, inputs, at = captured_graphs()[1]
    tried = []

    def compile_graph(copy, args):
        tried.append(copy)
        if len(tried) > 1 and case == "prism fails":
            raise RuntimeError("no kernel today")
        return copy

    monkeypatch.setattr(varying_floats, "_AT_MOST", 1 if case == "beyond its sets" else 8)
    by_values = varying_floats.ByValues(graph, inputs, at, compile_graph, errors.warn_once, BACKEND._failed_on_graph)
    errors.WARNED.clear()
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for args in (inputs, with_values(inputs, at, (2e-3, 0.3)), with_values(inputs, at, (2e-3, 0.3))):
            (got,), (want,) = by_values(*args), graph(*args)
            assert torch.equal(got, want)
    assert len(tried) == (1 if case == "beyond its sets" else 2)  # a set that failed is not tried again
    said = [str(w.message) for w in caught]
    expected = ("compiled for 1 sets of the floats dynamo lets vary" if case == "beyond its sets" else
                "PyTorch runs this graph as written: prism failed on it (RuntimeError: no kernel today; a bug")
    assert any(expected in text for text in said), said


def test_a_block_compiled_again_with_other_floats_runs_in_prism_for_each_set(shared_daemon, spy):
    blocks = graphs_of_two_blocks(spy)
    assert len(spy.graphs) == 2
    graph = spy.graphs[1]
    assert isinstance(graph, varying_floats.ByValues)
    assert not graph.prism_skipped, graph.prism_skipped
    assert graph.prism_share.flops >= 0.99 * graph.prism_share.all_flops, str(graph.prism_share)
    # A third set runs the same graph: compiled for it on its first call.
    blocks.append(Block(*VALUES[2]))
    with torch.no_grad():
        for block in blocks:
            x = activations()
            want, got = block(x), torch.compile(block, backend=spy)(x)
            assert torch.allclose(got, want, rtol=1e-4, atol=1e-4 * want.abs().max().item()), (got - want).abs().max()
    assert len(spy.graphs) == 2
    assert len(graph.compiled) == 2
    for compiled in graph.compiled.values():
        assert not compiled.prism_skipped, compiled.prism_skipped


def test_a_0d_tensor_the_caller_passes_and_the_graph_reads_is_no_float_to_compile_for(monkeypatch):
    # Its value may change at every call: compiled per value, it would search and tune each time.
    # (dynamo keeps `.item()` in the graph, not breaking it there, when told to capture scalars.)
    monkeypatch.setattr(torch._dynamo.config, "capture_scalar_outputs", True)
    found = []

    def capture(graph_module, example_inputs):
        reads = [n for n in graph_module.graph.nodes if n.op == "call_method" and n.target == "item"]
        found.append((len(reads), varying_floats.positions(graph_module, example_inputs)))
        return graph_module.forward

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(lambda x, t: torch.softmax(x / t.item(), -1), backend=capture)(torch.randn(4, 8), torch.tensor(0.7))
    torch._dynamo.reset()
    assert found == [(1, [])]
