"""A private prismd per test: its own socket, state, cache and runtime directories."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import prism  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


@pytest.fixture
def daemon_env(tmp_path, monkeypatch):
    for name in ("XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"):
        directory = tmp_path / name.lower()
        directory.mkdir(mode=0o700)
        monkeypatch.setenv(name, str(directory))
    monkeypatch.setenv("PRISM_SOCKET", str(tmp_path / "run" / "prismd.sock"))
    return tmp_path


@pytest.fixture
def client(daemon_env):
    c = prism.Client(timeout=120)
    yield c
    c.stop_daemon()


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

