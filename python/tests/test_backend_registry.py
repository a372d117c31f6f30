"""A backend a build registers reaches prism.compile through the daemon alone (issue 66):
prismd-scalar is prismd with the tests' scalar backend (tests/backends/scalar) registered; the
package learns its target, its machine's words, the torch device its tensors are on and how its
libraries load from daemon/status and kernel/library, and names no backend itself."""
import os
import sys

import pytest

torch = pytest.importorskip("torch")

import prism  # noqa: E402
from prism.client import find_prism_binary  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python"))
from layers import LlamaMLPBlock  # noqa: E402

DIM, HIDDEN = 32, 64


@pytest.fixture
def scalar_daemon(daemon_env, monkeypatch):
    monkeypatch.setenv("PRISMD", os.path.join(os.path.dirname(find_prism_binary()), "prismd-scalar"))
    monkeypatch.setenv("PRISM_TUNE_NOISE_LIMIT", "off")
    yield
    prism.Client().stop_daemon()


def test_prism_compile_tunes_on_a_registered_backend_and_loads_its_library(scalar_daemon):
    torch.manual_seed(0)
    block = LlamaMLPBlock(DIM, HIDDEN).eval()  # RMSNorm with its gain, then a SwiGLU of nn.Linear weights
    x = torch.randn(2, 3, DIM)  # [batch, seq, hidden]
    x[..., 5] *= 20  # an outlier channel
    compiled = prism.compile(block, x, target="scalar", top=2)
    with torch.no_grad():
        want = block(x)
    got = compiled(x)
    assert got.shape == want.shape
    assert torch.allclose(got, want, rtol=1e-3, atol=1e-4 * want.abs().max().item())
    (kernel,) = compiled.kernels.values()
    assert kernel.tune["target"] == "scalar"
    assert kernel.tune["targetMachine"] == "the scalar test machine"
    with pytest.raises(ValueError, match=r"input 'x' is on meta; this callable runs on the scalar test machine"):
        compiled(torch.empty(2, 3, DIM, device="meta"))
    compiled.close()


def test_prism_compile_names_the_daemons_targets_for_one_it_does_not_have(scalar_daemon):
    with pytest.raises(ValueError, match=r"prism.compile's targets are 'cpu', 'cuda' and 'scalar', not 'tpu'"):
        prism.compile(LlamaMLPBlock(DIM, HIDDEN), torch.randn(2, DIM), target="tpu")
