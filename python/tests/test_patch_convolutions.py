"""A patch embedding's convolution (stride = kernel) as the linear it is, prism's
(python/prism/patch_convolutions.py; docs/python.md, "Patch convolutions")."""

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch, "compile"):
    pytest.skip("torch.compile needs PyTorch 2", allow_module_level=True)

import prism  # noqa: E402,F401  (registers the backend)
from prism import patch_convolutions, piece_calls  # noqa: E402


class PatchEmbedding(torch.nn.Module):
    """ViT's: patches of 4 x 8 (not square, so the two kernel sizes are not confused), flattened
    into tokens, then a LayerNorm."""

    def __init__(self, padding=0):
        super().__init__()
        self.projection = torch.nn.Conv2d(3, 32, kernel_size=(4, 8), stride=(4, 8), padding=padding)
        self.norm = torch.nn.LayerNorm(32)

    def forward(self, pixels):
        return self.norm(self.projection(pixels).flatten(2).transpose(1, 2))


def test_patch_rows_times_the_weights_rows_is_the_convolution():
    torch.manual_seed(31)
    conv = torch.nn.Conv2d(3, 32, kernel_size=(4, 8), stride=(4, 8))
    image = torch.randn(2, 3, 16, 24)
    rows = patch_convolutions.patch_rows(image, 4, 8)
    linear = torch.nn.functional.linear(rows, conv.weight.reshape(32, -1), conv.bias)
    got = patch_convolutions.patch_grid(linear, image, 4, 8)
    want = conv(image)
    assert got.shape == want.shape and torch.allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_patch_embedding_runs_in_prisms_kernel_with_eagers_values(shared_daemon, spy, monkeypatch):
    monkeypatch.setattr(piece_calls, "race", lambda prism_call, torch_call: (1e-3, 2e-3))  # prism's kernel runs
    torch.manual_seed(32)
    module, image = PatchEmbedding().eval(), torch.randn(2, 3, 16, 24)
    with torch.no_grad():
        want = module(image)
        got = torch.compile(module, backend=spy)(image)
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-4 * want.abs().max().item())
    (graph,) = spy.graphs
    assert graph.prism_share.flops == graph.prism_share.all_flops and not graph.prism_left, graph.prism_left
    ((name, compiled),) = graph.prism_partitions
    assert "@" in compiled.program.text
    assert all(call is not None for call in getattr(graph, name).calls.values()), "prism's kernel ran"


def test_a_convolution_with_padding_stays_pytorchs_and_is_said(monkeypatch, tmp_path):
    monkeypatch.setenv("PRISM_SOCKET", str(tmp_path / "none.sock"))
    monkeypatch.setenv("PRISM_BIN", str(tmp_path / "no-prism"))
    (graph,) = prism.explain(PatchEmbedding(padding=1).eval(), torch.randn(2, 3, 16, 24)).graphs
    assert any("(conv2d)" in node for node, _ in graph.prism_left), graph.prism_left


class AudioFrontend(torch.nn.Module):
    """Whisper's encoder front: two 1-D convolutions of kernel 3 (the second of stride 2), each
    with a GELU, then the channels as tokens."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv1d(16, 32, kernel_size=3, padding=1)
        self.conv2 = torch.nn.Conv1d(32, 32, kernel_size=3, stride=2, padding=1)

    def forward(self, features):
        x = torch.nn.functional.gelu(self.conv1(features))
        return torch.nn.functional.gelu(self.conv2(x)).permute(0, 2, 1)


def test_the_share_counts_the_convolutions_pytorch_runs(monkeypatch, tmp_path):
    # Whisper's report said 100% of its FLOPs where its two convolutions, PyTorch's, were 15%.
    monkeypatch.setenv("PRISM_SOCKET", str(tmp_path / "none.sock"))
    monkeypatch.setenv("PRISM_BIN", str(tmp_path / "no-prism"))
    (graph,) = prism.explain(AudioFrontend().eval(), torch.randn(2, 16, 64)).graphs
    convolutions = 2 * (2 * 32 * 64) * (16 * 3) + 2 * (2 * 32 * 32) * (32 * 3)  # 2 x outputs x kernel
    assert graph.prism_share.all_flops - graph.prism_share.flops >= convolutions, str(graph.prism_share)
    assert sum("(conv1d)" in node for node, _ in graph.prism_left) == 2, graph.prism_left


def test_under_autocast_the_patch_linear_computes_at_autocasts_dtype(shared_daemon, spy, monkeypatch):
    # Autocast runs a convolution at bf16; read as a norm's mixed-type kernel, the convolution was
    # written at f32 with its result cast, and its linear's own ops, under the autocast around
    # the call, gave bf16 where the graph said f32: the first call's check left it PyTorch's.
    # And the tuner's edge suite read the reshaped 4-D weight as an activation: its rows
    # mean-shifted, the LayerNorm cancelled the shift, and no kernel passed (kTunerRevision 65).
    import warnings

    monkeypatch.setattr(piece_calls, "race", lambda prism_call, torch_call: (1e-3, 2e-3))  # prism's kernel runs
    torch.manual_seed(33)
    module, image = PatchEmbedding().eval(), torch.randn(2, 3, 16, 24)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        want = module(image)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = torch.compile(module, backend=spy)(image)
    assert not [str(w.message) for w in caught if "a bug" in str(w.message)]
    assert got.dtype == want.dtype
    assert torch.allclose(got.float(), want.float(), rtol=0, atol=3e-2 * want.abs().max().item())
    (graph,) = spy.graphs
    ((name, compiled),) = graph.prism_partitions
    assert "bf16(" in compiled.program.text and not graph.prism_left, graph.prism_left
    assert all(call is not None for call in getattr(graph, name).calls.values()), "prism's kernel ran"
