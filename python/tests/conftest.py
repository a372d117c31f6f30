"""A private prismd per test: its own socket, state, cache and runtime directories."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import prism  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def pytest_configure(config):
    """One CPU description for every daemon the tests start (docs/tuning.md, "Peaks"): the first
    one to tune measures the machine (about 10 s) into a private directory of the run's."""
    if "PRISM_CPU_DESCRIPTION" not in os.environ:
        import tempfile

        config._prism_cpu_dir = tempfile.mkdtemp(prefix="prism-cpu-")
        os.environ["PRISM_CPU_DESCRIPTION"] = os.path.join(config._prism_cpu_dir, "cpu-target.txt")


def pytest_unconfigure(config):
    if getattr(config, "_prism_cpu_dir", None):
        import shutil

        shutil.rmtree(config._prism_cpu_dir, ignore_errors=True)
        del os.environ["PRISM_CPU_DESCRIPTION"]


def use_private_daemon(patch, root):
    """Points the environment (through `patch`, a pytest MonkeyPatch) at a prismd of its own under
    `root`: its socket, state, cache and runtime directories, never the user's. The CPU's
    description is the test run's (pytest_configure), not measured again by each daemon."""
    patch.delenv("PRISM_CACHE_DIR", raising=False)
    for name in ("XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"):
        directory = root / name.lower()
        directory.mkdir(mode=0o700)
        patch.setenv(name, str(directory))
    patch.setenv("PRISM_SOCKET", str(root / "run" / "prismd.sock"))


@pytest.fixture
def daemon_env(tmp_path, monkeypatch):
    use_private_daemon(monkeypatch, tmp_path)
    return tmp_path


@pytest.fixture
def client(daemon_env):
    c = prism.Client(timeout=120)
    yield c
    c.stop_daemon()


@pytest.fixture(scope="module")
def shared_daemon(tmp_path_factory):
    """One private prismd for a test file's tests, its state and caches (the CPU's description, the
    kernel cache) kept for them all; started again by the one that kills it."""
    root = tmp_path_factory.mktemp("daemon")
    with pytest.MonkeyPatch.context() as patch:
        use_private_daemon(patch, root)
        # Every tune stored, even where a busy machine makes rounds disagree: a second callable of
        # the same program is then answered by the first one's tune, never timed anew and found
        # on the other side of the eager plan.
        patch.setenv("PRISM_TUNE_NOISE_LIMIT", "off")
        yield
        prism.Client().stop_daemon()


def example(name):
    return os.path.abspath(os.path.join(EXAMPLES, name + ".prism"))


@pytest.fixture
def quiet_client(daemon_env, monkeypatch):
    """`client`, its daemon started with the noise limit off: every tune's result is stored, even
    where a busy machine makes rounds disagree (a test that counts what the DB answers)."""
    monkeypatch.setenv("PRISM_TUNE_NOISE_LIMIT", "off")
    c = prism.Client(timeout=120)
    yield c
    c.stop_daemon()



@pytest.fixture
def spy():
    """A torch.compile backend that runs prism's (top=1) and keeps what it returned, one GraphModule
    per compiled graph, in `spy.graphs`; dynamo's caches reset before and after."""
    import torch

    graphs = []

    def backend(graph_module, example_inputs):
        graphs.append(sys.modules["prism.torch_backend"].torch_backend(graph_module, example_inputs, top=1))
        return graphs[-1]

    torch._dynamo.reset()
    backend.graphs = graphs
    yield backend
    torch._dynamo.reset()
