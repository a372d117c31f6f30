"""prism.Client: a JSON-RPC client of prismd (docs/protocol.md) over its Unix socket.

The daemon is found, and started when none answers, by the `prism` REPL binary itself
(`prism --json -c "daemon status"` reports the socket it reached), so the socket path rules and
the start-up live in one place: repl/daemon_launcher.cpp.
"""
import itertools
import json
import os
import pwd
import shutil
import socket
import struct
import subprocess

from .errors import ConnectionLost, PrismError, ProgramError
from .framing import FrameReader, encode

REQUEST_CANCELLED = -32800
_LIMIT_NAMES = {"max_ops": "maxOps", "max_kernels": "maxKernels", "max_accumulators": "maxAccumulators",
                "library_kernels": "libraryKernels", "kernel_cuts": "kernelCuts", "threads": "threads", "budget_seconds": "budgetSeconds",
                "prune": "prune"}


def find_prism_binary():
    """$PRISM_BIN, else the build tree's build/bin/prism beside this package, else `prism` on PATH."""
    if os.environ.get("PRISM_BIN"):
        return os.environ["PRISM_BIN"]
    beside = os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin", "prism")
    if os.access(beside, os.X_OK):
        return os.path.abspath(beside)
    found = shutil.which("prism")
    if not found:
        raise ConnectionLost("no prism binary: build prism (scripts/build.sh) or set $PRISM_BIN")
    return found


def daemon_socket(prism_binary=None, autostart=True, timeout=60):
    """The Unix socket of the user's prismd ($PRISM_SOCKET, else the default), started when none
    answers and `autostart` allows."""
    command = [prism_binary or find_prism_binary(), "--json", "-c", "daemon status"]
    if not autostart:
        command.insert(1, "--no-start")
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise ConnectionLost(done.stderr.strip() or "prism could not reach prismd")
    status = json.loads(done.stdout.splitlines()[-1])
    if not status.get("socket"):
        raise ConnectionLost("prismd reported no Unix socket: " + done.stdout.strip())
    return status["socket"]


def _peer_refusal(sock, path):
    """Why the server on `sock` is not this user's own prismd (its uid from SO_PEERCRED, as the
    REPL checks in repl/client.cpp); "" when it is. Another user's server is never talked to: it
    could name a library for this process to load."""
    try:
        _, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    except OSError as e:
        return f"refusing prismd at {path}: cannot tell which user serves the socket ({e.strerror})"
    if uid == os.geteuid():
        return ""
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = "unknown"
    return (f"refusing prismd at {path}: the socket is served by uid {uid} (user {name}), not by you "
            f"(uid {os.geteuid()}); another user's daemon could hand this process code to run")


def _diagnostics(state):
    """A DocumentState's errors as (line, column, message), 1-based."""
    return [(d["range"]["start"]["line"] + 1, d["range"]["start"]["character"] + 1, d["message"])
            for d in state.get("diagnostics", []) if d.get("severity") == 1]


class Client:
    """One connection to prismd. Each method sends one request and returns its JSON result as
    Python values; a JSON-RPC error raises PrismError, a lost daemon ConnectionLost, and so does a
    socket served by another user (nothing is sent to it). search and
    tune take `progress`, called with each `$/progress` value. Ctrl-C while a request runs
    cancels it on the daemon (`$/cancelRequest`), waits for its answer, then raises
    KeyboardInterrupt: the connection stays usable."""

    def __init__(self, socket_path=None, autostart=True, timeout=None):
        path = socket_path or daemon_socket(autostart=autostart)
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._socket.connect(path)
        except OSError as e:
            self._socket.close()
            raise ConnectionLost(f"cannot connect to prismd at {path}: {e}") from None
        refusal = _peer_refusal(self._socket, path)
        if refusal:
            self._socket.close()
            raise ConnectionLost(refusal)
        self._socket.settimeout(timeout)
        self.socket_path = path
        self._reader = FrameReader()
        self._ids = itertools.count(1)
        self._documents = itertools.count(1)
        self.server_info = self.request("initialize", {
            "processId": os.getpid(), "clientInfo": {"name": "prism-python"},
            "capabilities": {"general": {"positionEncodings": ["utf-8"]}}})["serverInfo"]
        self._send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    # ---- the connection -----------------------------------------------------------------

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        # A client dropped without close() (a Compiled kept until the process ends): its socket
        # closed quietly; the daemon ends the session when the connection goes.
        connection = getattr(self, "_socket", None)
        if connection is not None:
            connection.close()

    def close(self):
        """Ends the session (shutdown, exit) and closes the socket; the daemon keeps serving."""
        if self._socket is None:
            return
        try:
            self.request("shutdown")
            self._send({"jsonrpc": "2.0", "method": "exit"})
        except (ConnectionLost, PrismError, OSError):
            pass
        self._socket.close()
        self._socket = None

    def _send(self, message):
        try:
            self._socket.sendall(encode(message))
        except OSError as e:
            raise ConnectionLost(f"prismd went away: {e}") from None

    def _receive(self):
        while True:
            message = self._reader.pop()
            if message is not None:
                return message
            try:
                data = self._socket.recv(65536)
            except socket.timeout:
                raise ConnectionLost("prismd did not answer in time") from None
            except OSError as e:
                raise ConnectionLost(f"prismd went away: {e}") from None
            if not data:
                raise ConnectionLost("prismd closed the connection")
            self._reader.feed(data)

    def request(self, method, params=None, progress=None):
        """Sends `method` with `params` and waits for its answer. With `progress`, the request
        carries a workDoneToken and each `$/progress` value for it is passed to `progress`."""
        request_id = next(self._ids)
        params = dict(params or {})
        token = f"python/{request_id}"
        if progress is not None:
            params["workDoneToken"] = token
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        cancelled = False
        while True:
            try:
                message = self._receive()
                if message.get("id") == request_id and "method" not in message:
                    break
                self._notice(message, token, progress)
            except KeyboardInterrupt:
                if cancelled:
                    raise
                cancelled = True  # cancel on the daemon, then wait for its answer
                self._send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": request_id}})
        if cancelled:
            raise KeyboardInterrupt
        if "error" in message:
            error = message["error"]
            raise PrismError(error.get("code"), error.get("message", ""), error.get("data"))
        return message.get("result")

    def _notice(self, message, token, progress):
        """A message that is not the answer: a progress report, or a request of the daemon's."""
        if message.get("method") == "$/progress":
            if progress is not None and message["params"].get("token") == token:
                progress(message["params"]["value"])
        elif "id" in message and "method" in message:
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})

    # ---- documents ----------------------------------------------------------------------

    def open(self, path=None, text=None, uri=None):
        """Opens a .prism file (`path`) or a program text; returns the programs it defines. A text
        with errors is not kept and raises ProgramError with each error's line and column."""
        if (path is None) == (text is None):
            raise ValueError("open takes a path or a text")
        params = {"replace": True}
        if path is not None:
            params["uri"] = os.path.abspath(path)
        else:
            params.update(uri=uri or f"untitled:python-{os.getpid()}-{next(self._documents)}", text=text,
                          rejectOnError=True)
        state = self.request("program/open", params)
        errors = _diagnostics(state)
        if errors:
            raise ProgramError(state["uri"], errors)
        return state["programs"]

    def programs(self):
        return self.request("program/list")["programs"]

    def show(self, program):
        return self.request("program/show", {"program": program})

    # ---- running, proving, searching, tuning ----------------------------------------------

    def run(self, program, bindings=None, seed=0, inputs=None, output=None, head=None):
        """Runs the reference interpreter; `inputs` maps input names to .npy paths."""
        params = {"program": program, "bindings": bindings or {}, "seed": seed}
        for key, value in (("inputs", inputs), ("output", output), ("head", head)):
            if value is not None:
                params[key] = value
        return self.request("program/run", params)

    def equivalent(self, a, b, nodes=None, iterations=None, seconds=None):
        """Whether programs (or expressions over one program's inputs) `a` and `b` are equal:
        `result` is "proved", "refuted" (with a counterexample) or "unknown"."""
        limits = {k: v for k, v in (("nodes", nodes), ("iterations", iterations), ("seconds", seconds)) if v is not None}
        return self.request("program/equivalent", {"a": a, "b": b, **({"limits": limits} if limits else {})})

    def search(self, program, progress=None, **limits):
        """Searches for verified families; limits as the REPL's flags (max_ops=, budget_seconds=…)."""
        unknown = set(limits) - set(_LIMIT_NAMES)
        if unknown:
            raise TypeError(f"search: unknown limits {sorted(unknown)}; known: {sorted(_LIMIT_NAMES)}")
        wire = {_LIMIT_NAMES[k]: v for k, v in limits.items()}
        return self.request("search/run", {"program": program, **({"limits": wire} if wire else {})}, progress)

    def candidates(self, program):
        return self.request("search/candidates", {"program": program})

    def tune(self, program, bindings, target="cpu", top=None, threads=None, seed=None, fresh=False, progress=None):
        """Tunes the program's families at `bindings` on `target`; the result has the table's rows,
        the best and its ratios to the eager baseline and the roofline."""
        params = {"program": program, "bindings": bindings, "target": target, "fresh": fresh}
        for key, value in (("top", top), ("threads", threads), ("seed", seed)):
            if value is not None:
                params[key] = value
        return self.request("tune/run", params, progress)

    def source(self, program, candidate=None, bindings=None, target=None, export=None):
        """A kernel's source and header (kernel/source): the tuned best without `candidate`;
        `export=True`: the source with its C ABI named after the answer's `symbol`."""
        params = {"program": program}
        for key, value in (("candidate", candidate), ("bindings", bindings), ("target", target), ("export", export)):
            if value is not None:
                params[key] = value
        return self.request("kernel/source", params)

    def library(self, program, candidate=None, bindings=None, target=None, eager=None):
        """The same kernel compiled (kernel/library): `library` is the path of a shared object
        with the C ABI of engine/backend/cpu/abi.h, for a caller that runs it in its own process;
        `eager=True`: the eager baseline's plan at `bindings` instead."""
        params = {"program": program}
        for key, value in (("candidate", candidate), ("bindings", bindings), ("target", target), ("eager", eager)):
            if value is not None:
                params[key] = value
        return self.request("kernel/library", params)

    # ---- the daemon ---------------------------------------------------------------------

    def status(self):
        return self.request("daemon/status")

    def stop_daemon(self):
        """Stops the whole daemon (every client is disconnected); nothing when already closed."""
        if self._socket is None:
            return
        try:
            self.request("daemon/stop")
        except ConnectionLost:
            pass
        self._socket.close()
        self._socket = None
