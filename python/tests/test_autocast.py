"""torch.autocast around a compiled model, and ops of mixed dtypes: the casts PyTorch makes without
the graph showing them are written into it (python/prism/implicit_casts.py), so that prism's
programs compute what eager autocast computes and give its dtypes (docs/python.md, "Autocast and
mixed dtypes")."""

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch, "compile"):
    pytest.skip("torch.compile needs PyTorch 2", allow_module_level=True)
transformers = pytest.importorskip("transformers")

import prism  # noqa: E402,F401  (registers the backend)
from prism import implicit_casts, piece_calls  # noqa: E402
from test_torch_compile import LlamaMLPBlock  # noqa: E402  (transformers' RMSNorm and MLP, weights drawn)
from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM  # noqa: E402

HIDDEN = 64


def prism_wins(prism_call, torch_call):  # the race's answer where a test is about prism's kernel
    return 1e-3, 2e-3


class MixedNorm(torch.nn.Module):
    """A projection autocast runs at bf16, a LayerNorm of its bf16 result with f32 gain and bias
    (PyTorch's mixed-type kernel: computed at f32, given as bf16) and a softmax of a projection,
    with the f32 residual."""

    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.Linear(HIDDEN, HIDDEN)
        self.norm = torch.nn.LayerNorm(HIDDEN)

    def forward(self, x):
        return x + self.norm(self.a(x)) + torch.softmax(self.b(x), dim=-1)


def activations(batch, seq):
    x = torch.randn(batch, seq, HIDDEN)
    x[..., 3] *= 20
    return x


def captured(module, *args, autocast=True, **kwargs):
    """The graph dynamo captures of `module(*args, **kwargs)`, under CPU autocast at bf16 where
    `autocast`, and the inputs it was given."""
    graphs = []

    def keep(graph_module, example_inputs):
        graphs.append((graph_module, example_inputs))
        return graph_module.forward

    torch._dynamo.reset()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        torch.compile(module, backend=keep)(*args, **kwargs)
    torch._dynamo.reset()
    (graph,) = graphs
    return graph


def casts_read_by(graph, op_name):
    """For each node of `op_name`, the dtypes of the `.to` casts it reads."""
    from prism import share

    return [[a.args[1] for a in n.all_input_nodes if n.op != "output" and share.op_name(a) == "to"]
            for n in graph.graph.nodes if share.op_name(n) == op_name]


def test_autocasts_casts_are_written_into_the_graph_and_compute_what_autocast_does():
    torch.manual_seed(0)
    module, x = MixedNorm().eval(), activations(2, 8)
    graph, inputs = captured(module, x)
    assert implicit_casts.write_casts(graph) == set()
    # Each linear reads its input, weight and bias cast to bf16; the LayerNorm its bf16 input cast
    # to f32 (its gain and bias are), and the softmax of a bf16 projection stays bf16 on the CPU.
    assert casts_read_by(graph, "linear") == [[torch.bfloat16] * 3] * 2
    assert casts_read_by(graph, "layer_norm") == [[torch.float32]]
    (norm,) = [n for n in graph.graph.nodes if getattr(n.target, "__name__", "") == "layer_norm"]
    assert [(u.target, u.args[1]) for u in norm.users] == [("to", torch.bfloat16)]
    # Without autocast, the graph now computes what eager autocast did, dtypes and values.
    with torch.no_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            want = module(x)
        (got,) = graph(*inputs)
    assert got.dtype == want.dtype
    assert torch.allclose(got, want, rtol=1e-2, atol=1e-2 * want.abs().max().item())


def test_a_bf16_model_without_autocast_gets_no_cast():
    # Llama at bf16 upcasts in its RMSNorm and casts back: every op reads what it computes in.
    torch.manual_seed(1)
    config = LlamaConfig(vocab_size=128, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2)
    model = LlamaForCausalLM(config).eval().to(torch.bfloat16)
    graph, _ = captured(model, torch.randint(0, 128, (2, 8)), autocast=False, use_cache=False)
    before = len(graph.graph.nodes)
    assert implicit_casts.write_casts(graph) == set()
    assert len(graph.graph.nodes) == before


def test_a_block_compiled_under_autocast_gives_eager_autocasts_dtype_from_prisms_kernel(shared_daemon, spy, monkeypatch):
    monkeypatch.setattr(piece_calls, "race", prism_wins)  # a loaded machine must not flip it
    torch.manual_seed(2)
    block, x = LlamaMLPBlock().eval(), activations(2, 8)
    with torch.no_grad():
        exact = block(x)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            want = block(x)
            got = torch.compile(block, backend=spy)(x)
    assert got.dtype == want.dtype
    # prism's kernel keeps f32 where autocast rounds to bf16: at least as close to the f32 result.
    scale = exact.abs().max().item()
    assert (got - exact).abs().max().item() <= (want - exact).abs().max().item() + 1e-6 * scale
    (graph,) = spy.graphs
    ((name, compiled),) = graph.prism_partitions
    assert "bf16(" in compiled.program.text  # the weights' casts, as autocast made them
    assert all(call is not None for call in getattr(graph, name).calls.values()), "prism's kernel ran"


def test_llama_under_autocast_runs_its_attention_block_in_prisms_kernel(shared_daemon, spy, monkeypatch):
    # The block (RMSNorm, bf16 projections, rotary at f32, bf16 scores, o_proj) found no kernel
    # that passed the edge suite: its weights, read through autocast's bf16 casts, were scaled as
    # activations, and rounding its bf16 values otherwise was not allowed for (docs/tuning.md,
    # "Rounding 16-bit values otherwise"). It stayed PyTorch's, with a warning.
    import warnings

    monkeypatch.setattr(piece_calls, "race", prism_wins)  # a loaded machine must not flip it
    torch.manual_seed(1)
    config = LlamaConfig(vocab_size=128, hidden_size=128, intermediate_size=256, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=4)
    model, ids = LlamaForCausalLM(config).eval(), torch.randint(0, 128, (2, 16))
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        want = model(ids, use_cache=False).logits
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = torch.compile(model, backend=spy)(ids, use_cache=False).logits
    assert not [str(w.message) for w in caught if "stays PyTorch's" in str(w.message)]
    assert got.dtype == want.dtype
    assert torch.allclose(got.float(), want.float(), rtol=0, atol=2e-2 * want.abs().max().item())
    (graph,) = spy.graphs
    attention = [name for name, compiled in graph.prism_partitions if "exp(" in compiled.program.text]
    assert len(attention) == 1
    assert all(call is not None for call in getattr(graph, attention[0]).calls.values()), "prism's kernel ran"


class AutocastInside(torch.nn.Module):
    """A block that turns autocast on in its own forward, as some modeling code does around its
    projections, and adds the f32 residual."""

    def __init__(self):
        super().__init__()
        self.block = LlamaMLPBlock()

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = self.block.mlp(self.block.norm(x))
        return x + h.float()


def test_a_model_that_turns_autocast_on_in_its_forward_has_its_region_in_prisms_kernel(shared_daemon, spy, monkeypatch):
    monkeypatch.setattr(piece_calls, "race", prism_wins)  # a loaded machine must not flip it
    torch.manual_seed(3)
    module, x = AutocastInside().eval(), activations(2, 8)
    with torch.no_grad():
        want = module(x)
        got = torch.compile(module, backend=spy)(x)
    assert got.dtype == want.dtype
    assert torch.allclose(got, want, rtol=2e-2, atol=2e-2 * want.abs().max().item())
    (graph,) = spy.graphs
    taken = [name for name, compiled in graph.prism_partitions if "@" in compiled.program.text]
    assert taken, "the region's projections are prism's"
    assert all(call is not None for name in taken for call in getattr(graph, name).calls.values()), "prism's kernel ran"


@pytest.mark.parametrize("model", ["region", "qwen3"])
def test_where_pytorch_runs_a_piece_it_runs_in_its_autocast_regions_state(shared_daemon, spy, monkeypatch, model):
    # Qwen3's rotary turns autocast off in its forward; the partitioner joined its matmul to the
    # v projection, whose norm comes after the region, so the piece, and the cos and sin PyTorch
    # runs on its output, ran after the region closed, under the bf16 autocast around the call:
    # bf16 tables where eager's are f32, and three pieces left PyTorch's. A piece now holds the
    # nodes of one region, or of none (docs/python.md, "Autocast and mixed dtypes"); here every
    # piece's own ops run, as where they beat prism's kernel.
    import warnings

    monkeypatch.setattr(piece_calls, "race", lambda prism_call, torch_call: (2e-3, 1e-3))
    torch.manual_seed(4)
    if model == "region":
        module, args = AutocastInside().eval(), (activations(2, 8),)
    else:
        config = Qwen3Config(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                             num_attention_heads=4, num_key_value_heads=2, head_dim=16)
        module, args = Qwen3ForCausalLM(config).eval(), (torch.randint(0, 128, (2, 8)),)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=model == "qwen3"):
        want = module(*args)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = torch.compile(module, backend=spy)(*args)
    if model == "qwen3":
        got, want = got.logits, want.logits
    (graph,) = spy.graphs
    assert graph.prism_partitions
    assert not [str(w.message) for w in caught if "a bug" in str(w.message)]
    assert got.dtype == want.dtype
    # PyTorch's ops, as eager ran them: only the order of a few adds differs.
    assert torch.allclose(got.float(), want.float(), rtol=0, atol=1e-2 * want.abs().max().item())
