"""In-place writes in a captured graph (effects.py; docs/python.md, "In-place writes"): which writes
another node can see, and a cache written in place and read after, as transformers' StaticCache
does, computed in eager's order under torch.compile(backend="prism")."""
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch, "compile"):
    pytest.skip("torch.compile needs PyTorch 2", allow_module_level=True)

import prism  # noqa: E402,F401  (registers the backend)
from prism import effects  # noqa: E402
from prism.share import op_name  # noqa: E402

F = torch.nn.functional
DIM, SLOTS = 32, 16


class Traced(torch.nn.Module):
    """A linear `self.proj`, buffers, and `body(self, x)` as its forward."""

    def __init__(self, body, **buffers):
        super().__init__()
        self.proj, self.body = torch.nn.Linear(DIM, DIM), body
        for name, value in buffers.items():
            self.register_buffer(name, value)

    def forward(self, x):
        return self.body(self, x)


def traced(body, **buffers):
    """`body`'s graph, by torch.fx's symbolic trace."""
    return torch.fx.symbolic_trace(Traced(body, **buffers))


def visible(graph_module):
    """The op names of the nodes whose writes another node can see, in order."""
    return [str(op_name(n)) for n in graph_module.graph.nodes if effects.writes_visibly(n)]


def test_a_write_into_an_input_a_buffer_a_view_or_a_value_read_twice_is_visible():
    cases = {
        "index_copy_": lambda self, x: self.cache.index_copy_(0, torch.arange(2), x),
        "__setitem__": lambda self, x: operator_setitem(self.cache, x),
        "add_": lambda self, x: x.add_(1.0),
        "relu": lambda self, x: F.relu(x, inplace=True),
        "mul": lambda self, x: torch.mul(x, 2.0, out=self.cache),
        "fill_": lambda self, x: fill_view(self.proj(x)),  # a view of a value read elsewhere too
        "sigmoid_": lambda self, x: both(self.proj(x)),  # a fresh value another op reads too
    }
    for name, forward in cases.items():
        graph_module = traced(forward, cache=torch.zeros(2, DIM))
        assert visible(graph_module) == [name], (name, graph_module.graph)


def operator_setitem(cache, x):
    cache[0] = x[0]
    return cache


def fill_view(h):
    h.view(-1).fill_(0.0)
    return h


def both(h):
    return h.sigmoid_() + h


def test_a_write_into_a_fresh_value_nothing_else_reads_is_computed_out_of_place():
    def forward(self, x):
        h = F.relu(self.proj(x), inplace=True)
        h += 1.0
        return F.silu(h, inplace=True) * 2.0

    graph_module = traced(forward)
    writes = [n for n in graph_module.graph.nodes if effects.written(n) is not None]
    assert len(writes) == 2 and visible(graph_module) == []  # symbolic_trace reads `h += 1` as `h + 1`
    assert all(effects.make_out_of_place(n) for n in writes)
    graph_module.recompile()
    x = torch.randn(3, DIM)
    assert all(n.kwargs["inplace"] is False for n in writes)
    assert torch.equal(graph_module(x), F.silu(F.relu(graph_module.proj(x)) + 1.0) * 2.0)
    # Through a view or a cast of a value nothing else reads, the write is seen by no one either.
    assert visible(traced(lambda self, x: self.proj(x).float().view(-1).mul_(2.0))) == []
    # `inplace` by position, as dynamo may record it: F.relu(x, True).
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    relu = graph.call_function(F.relu, (graph.call_function(torch.neg, (x,)), True))
    graph.output(relu)
    assert not effects.writes_visibly(relu) and effects.make_out_of_place(relu) and relu.args[1] is False


class CachedAttention(torch.nn.Module):
    """Two layers of one-head attention over key/value caches written in place at the call's
    positions (StaticCache's `keys.index_copy_(2, cache_position, k)`) and read whole after: no
    edge of the graph orders the reads after the writes."""

    def __init__(self, layers=2):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.ModuleDict({
            "k": torch.nn.Linear(DIM, DIM, bias=False), "v": torch.nn.Linear(DIM, DIM, bias=False),
            "q": torch.nn.Linear(DIM, DIM, bias=False), "o": torch.nn.Linear(DIM, DIM, bias=False)})
            for _ in range(layers))
        for i in range(layers):
            self.register_buffer(f"keys{i}", torch.zeros(1, SLOTS, DIM))
            self.register_buffer(f"values{i}", torch.zeros(1, SLOTS, DIM))

    def forward(self, x, position):
        for i, layer in enumerate(self.layers):
            keys, values = getattr(self, f"keys{i}"), getattr(self, f"values{i}")
            keys.index_copy_(1, position, layer["k"](x))
            values.index_copy_(1, position, layer["v"](x))
            seen = torch.arange(SLOTS) <= position[-1]
            scores = (layer["q"](x) @ keys.transpose(1, 2)) / DIM ** 0.5 + torch.where(seen, 0.0, float("-inf"))
            x = x + layer["o"](torch.softmax(scores, dim=-1) @ values)
        return x


def test_a_cache_written_in_place_is_read_after_the_write_as_eager_reads_it(shared_daemon, spy):
    torch.manual_seed(5)
    model, eager = CachedAttention().eval(), CachedAttention().eval()
    eager.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend=spy)
    prompt, step = torch.randn(1, 6, DIM), torch.randn(1, 1, DIM)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for x, position in ((prompt, torch.arange(6)), (step, torch.tensor([6]))):
            want, got = eager(x, position), compiled(x, position)
            assert torch.allclose(got, want, rtol=1e-4, atol=1e-5), (got - want).abs().max()
            for name, cache in eager.named_buffers():
                assert torch.allclose(model.get_buffer(name), cache, rtol=1e-4, atol=1e-5), name
    graph = spy.graphs[0]
    assert graph.prism_partitions, "prism ran no piece"
    # The writes are PyTorch's, each where the model wrote it: no piece holds nodes of both sides.
    writes = [n for n in graph.graph.nodes if str(op_name(n)) == "index_copy_"]
    assert len(writes) == 4
    assert any("writes in place" in why for _, why in graph.prism_left), graph.prism_left
