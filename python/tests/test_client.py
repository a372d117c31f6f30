"""prism.Client against a real prismd: requests, errors, progress, cancellation, a lost daemon."""
import os
import pwd
import signal
import socket
import time

import pytest

import prism
from conftest import example

RMS = "program rms(X: f32[n, d], W: f32[d, m]) {\n  return rms_norm(X, eps=1e-6) @ W\n}\n"


def test_open_search_tune_and_source_of_the_best(client):
    assert client.open(example("rms_linear")) == ["rms_linear"]
    reports = []
    searched = client.search("rms_linear", progress=reports.append)
    assert searched["candidates"] > 0 and searched["stats"]["stopReason"] == "complete"
    assert reports[0]["kind"] == "begin" and reports[-1]["kind"] == "end"
    families = client.candidates("rms_linear")["candidates"]
    assert len(families) == searched["candidates"]
    tuned = client.tune("rms_linear", {"n": 4, "d": 64}, top=2)
    best = tuned["best"]
    assert best["candidate"] in {f["id"] for f in families}
    assert tuned["speedup"] > 0 and tuned["baselineMs"] > 0
    kernel = client.source("rms_linear")
    assert kernel["candidate"] == best["candidate"] and kernel["basis"] == "your tune"
    assert "prism_entry" in kernel["source"]


def test_a_program_text_with_errors_is_a_program_error_with_line_and_column(client):
    with pytest.raises(prism.ProgramError) as caught:
        client.open(text="program p(X: f32[n]) {\n  return exq(X)\n}\n")
    (line, column, message), = caught.value.diagnostics
    assert (line, column) == (2, 10)
    assert "unknown op 'exq'; did you mean 'exp'?" in message
    assert "p" not in [p["name"] for p in client.programs()]  # not kept
    assert client.open(text=RMS) == ["rms"]


def test_a_failed_request_says_why_and_names_its_subject(client):
    client.open(text=RMS)
    with pytest.raises(prism.PrismError) as caught:
        client.tune("rms", {"n": 4, "d": 64, "m": 32, "h": 2})
    assert caught.value.code == -32803
    assert "'h' is not a dim of rms" in caught.value.message
    assert caught.value.data == {"subject": "h"}
    with pytest.raises(prism.PrismError) as unknown:
        client.request("no/such/method")
    assert unknown.value.code == -32601


def test_the_interpreter_and_the_prover(client):
    client.open(text=RMS + "program rms2(X: f32[n, d], W: f32[d, m]) {\n"
                "  return X / sqrt(mean(X * X, axis=-1, keepdims=true) + 1e-6) @ W\n}\n"
                "program rms_twice(X: f32[n, d], W: f32[d, m]) {\n  return rms_norm(X, eps=1e-6) @ (W * 2)\n}\n")
    ran = client.run("rms", {"n": 2, "d": 8, "m": 4}, seed=3, head=4)
    out, = ran["outputs"]
    assert out["shape"] == [2, 4] and len(out["head"]) == 4
    assert client.equivalent("rms", "rms2")["result"] == "proved"
    refuted = client.equivalent("rms", "rms_twice")
    assert refuted["result"] == "refuted" and refuted["counterexample"]["detail"]


def test_ctrl_c_cancels_the_request_on_the_daemon_and_the_client_stays_usable(client):
    # causal_sdpa searches for seconds (it stops at its budget): a search that ends before its first
    # progress report (attention's, 0.1 s on a fast machine) would leave nothing to interrupt.
    client.open(example("layers/causal_sdpa"))

    def interrupt(value):
        if value["kind"] == "report":
            raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        client.search("causal_sdpa", progress=interrupt, budget_seconds=60)
    assert time.monotonic() - started < 20
    assert client.status()["documents"] >= 1


def test_a_daemon_that_dies_mid_request_is_reported_not_waited_for(client):
    # causal_sdpa searches for seconds on any machine (it stops at its budget), and the kill comes
    # with the first progress report, so the daemon dies while the request is in flight.
    client.open(example("layers/causal_sdpa"))
    pid = client.status()["pid"]

    def kill_the_daemon(value):
        os.kill(pid, signal.SIGKILL)

    started = time.monotonic()
    with pytest.raises(prism.ConnectionLost):
        client.search("causal_sdpa", progress=kill_the_daemon, budget_seconds=60)
    assert time.monotonic() - started < 10
    client.close()  # the daemon is gone: closing says nothing


def test_without_autostart_no_daemon_is_an_error_that_says_so(daemon_env):
    with pytest.raises(prism.ConnectionLost) as caught:
        prism.Client(autostart=False)
    assert "no prismd answers" in str(caught.value)


def serve_as_nobody(listener, ready, report):
    """A forked child's body: listen on `listener` as uid 65534 (SO_PEERCRED gives a client the
    credentials the server had at listen()), say so on `ready`, accept one client and write on
    `report` how many bytes it sent."""
    received = b""
    try:
        os.setgid(65534)
        os.setuid(65534)
        listener.listen(1)
        os.write(ready, b"1")
        listener.settimeout(20)
        conn, _ = listener.accept()
        conn.settimeout(20)
        while True:
            data = conn.recv(65536)
            if not data:
                break
            received += data
    finally:
        os.write(report, str(len(received)).encode())
        os._exit(0)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can run a server as another user")
def test_a_socket_served_by_another_user_is_refused_and_sent_nothing(tmp_path):
    path = str(tmp_path / "prismd.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    ready, ready_w = os.pipe()
    report, report_w = os.pipe()
    child = os.fork()
    if child == 0:
        serve_as_nobody(listener, ready_w, report_w)
    os.close(ready_w)
    os.close(report_w)
    try:
        assert os.read(ready, 1) == b"1"  # listening: a connect before would see root's credentials
        with pytest.raises(prism.ConnectionLost) as caught:
            prism.Client(socket_path=path, autostart=False)
        assert str(caught.value) == (
            f"refusing prismd at {path}: the socket is served by uid 65534 (user {pwd.getpwuid(65534).pw_name}), "
            "not by you (uid 0); another user's daemon could hand this process code to run")
        assert os.read(report, 16) == b"0"  # nothing was sent to it
    finally:
        if os.waitpid(child, os.WNOHANG) == (0, 0):
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
        for fd in (ready, report):
            os.close(fd)
        listener.close()
