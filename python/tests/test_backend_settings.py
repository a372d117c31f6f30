"""What torch.compile(model, backend="prism", mode=..., options=...) asks of prism, and the target
a piece runs on: the one of the device its tensors are on (docs/python.md, "Modes, options and
devices")."""
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch, "compile"):
    pytest.skip("torch.compile needs PyTorch 2", allow_module_level=True)

import prism  # noqa: E402,F401  (registers the backend)
from prism import errors  # noqa: E402

HIDDEN = 64
BACKEND = sys.modules["prism.torch_backend"]


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.LayerNorm(HIDDEN), torch.nn.Linear(HIDDEN, 2 * HIDDEN), torch.nn.GELU(),
                               torch.nn.Linear(2 * HIDDEN, HIDDEN)).eval()


def compiled_with(**settings):
    """The GraphModules prism's backend returns for the MLP compiled with torch.compile's
    `settings` (mode, options), called once; and the output against eager's."""
    graphs = []

    def backend(graph_module, example_inputs, **kwargs):  # what dynamo passes, kept
        graphs.append(BACKEND.torch_backend(graph_module, example_inputs, **kwargs))
        return graphs[-1]

    model, x = mlp(), torch.randn(2, 8, HIDDEN)
    torch._dynamo.reset()
    try:
        with torch.no_grad():
            got, want = torch.compile(model, backend=backend, **settings)(x), model(x)
    finally:
        torch._dynamo.reset()
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-4 * want.abs().max().item())
    return graphs


@pytest.mark.parametrize("settings,top", [({}, None), ({"mode": "default"}, None), ({"mode": "max-autotune"}, 32),
                                          ({"mode": "max-autotune-no-cudagraphs"}, 32), ({"options": {"top": 2}}, 2)],
                         ids=["none", "default", "max-autotune", "no-cudagraphs", "top"])
def test_modes_and_options_set_how_many_instantiations_a_tune_times(shared_daemon, settings, top):
    (graph,) = compiled_with(**settings)
    ((_, compiled),) = graph.prism_partitions
    assert compiled.top == top and compiled.target == "cpu"


def test_reduce_overhead_runs_as_default_and_says_so(shared_daemon):
    errors.WARNED.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (graph,) = compiled_with(mode="reduce-overhead")
    assert graph.prism_partitions[0][1].top is None
    assert any("mode 'reduce-overhead' runs as 'default': prism captures no CUDA graphs" in str(w.message) for w in caught)


@pytest.mark.parametrize("settings,message", [
    ({"options": {"fast": True}}, "prism's torch.compile options are 'target' and 'top', not 'fast'"),
    ({"mode": "turbo"}, "prism's torch.compile modes are 'default', 'reduce-overhead', 'max-autotune', "
                        "'max-autotune-no-cudagraphs', not 'turbo'"),
    ({"options": {"top": 0}}, "prism's 'top' (instantiations a tune times) is an int from 1 to 256, not 0"),
    ({"options": {"target": "tpu"}}, "prism's targets are 'cpu' and 'cuda', not 'tpu'"),
], ids=["option", "mode", "top", "target"])
def test_a_mode_or_option_prism_does_not_know_is_an_error_that_names_what_it_takes(settings, message):
    torch._dynamo.reset()
    try:
        with pytest.raises(Exception) as raised, torch.no_grad():
            torch.compile(mlp(), backend="prism", **settings)(torch.randn(2, 8, HIDDEN))
    finally:
        torch._dynamo.reset()
    assert message in str(raised.value)


def graph_on(devices):
    """The MLP's graph as dynamo gives it, its values made fake tensors on `devices` (the input's,
    then the parameters'): what a model on a GPU gives the backend, without one."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    captured = []

    def keep(graph_module, example_inputs):
        captured.append(graph_module)
        return graph_module.forward

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(mlp(), backend=keep)(torch.randn(2, 8, HIDDEN))
    torch._dynamo.reset()
    (graph,) = captured
    placeholders = [n for n in graph.graph.nodes if n.op == "placeholder"]
    with FakeTensorMode(allow_non_fake_inputs=True):
        for node in graph.graph.nodes:
            value = node.meta.get("example_value")
            if isinstance(value, torch.Tensor):
                device = devices[0] if node is placeholders[0] else devices[-1]
                node.meta["example_value"] = torch.empty(value.shape, dtype=value.dtype, device=device)
        inputs = [torch.empty(n.meta["example_value"].shape, device=n.meta["example_value"].device) for n in placeholders]
    return graph, inputs


def test_a_piece_on_a_cuda_device_is_compiled_for_the_cuda_target(shared_daemon):
    graph, inputs = graph_on(["cuda"])
    with torch.no_grad():
        compiled = BACKEND.torch_backend(graph, inputs)
    assert [c.target for _, c in compiled.prism_partitions] == ["cuda"], compiled.prism_skipped
    graph, inputs = graph_on(["cuda"])
    with torch.no_grad():
        compiled = BACKEND.torch_backend(graph, inputs, options={"target": "cpu"})
    assert [c.target for _, c in compiled.prism_partitions] == ["cpu"]


def test_a_piece_whose_tensors_lie_on_two_kinds_of_device_is_pytorchs_with_the_reason(shared_daemon):
    graph, inputs = graph_on(["cpu", "cuda"])
    with torch.no_grad():
        compiled = BACKEND.torch_backend(graph, inputs)
    assert compiled.prism_partitions == []
    assert [why for _, why in compiled.prism_skipped] == ["its tensors are on cpu and cuda; prism's targets are 'cpu' and 'cuda'"]
