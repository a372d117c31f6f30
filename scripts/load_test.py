#!/usr/bin/env python3
"""A load test of one prismd (docs/testing.md, "The load test"): C clients at once, each sending
N pipelined requests whose answers are known, checked one by one; then one client that sends
without reading. Prints requests a second, wrong or missing answers, and the daemon's resident
memory before, at its peak and after. Exits 1 on any wrong or missing answer.

    python3 scripts/load_test.py [--clients 30] [--requests 3000] [--flood 200000] [--prismd PATH]

The daemon is a private one (its own socket, state and cache in a temp directory), stopped at
the end; every connection is to that socket on this machine.
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from prism.framing import FrameReader, encode  # noqa: E402

PROGRAM = "program scale(X: f32[n]) {\n  return X * 2\n}\n"


def resident_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return -1.0


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def request(i, method, params):
    return encode({"jsonrpc": "2.0", "id": i, "method": method, "params": params})


def expected(i):
    """Request i of a client and a check of its answer: alternately program/show and program/run."""
    if i % 2:
        return (request(i, "program/show", {"program": "scale"}),
                lambda r: r.get("result", {}).get("name") == "scale")
    n = 1 + i % 7
    return (request(i, "program/run", {"program": "scale", "bindings": {"n": n}, "seed": i}),
            lambda r: r.get("result", {}).get("outputs", [{}])[0].get("shape") == [n]
            and r["result"]["bindings"] == {"n": n})


def one_client(path, count, tally):
    s = connect(path)
    s.sendall(request(0, "initialize", {"capabilities": {}}))
    checks = {}
    batch = b""
    for i in range(1, count + 1):
        frame, check = expected(i)
        checks[i] = check
        batch += frame
    sender = threading.Thread(target=s.sendall, args=(batch,))
    sender.start()
    reader, answered, wrong = FrameReader(), set(), 0
    s.settimeout(120)
    while len(answered) < count:
        message = reader.pop()
        if message is None:
            data = s.recv(1 << 16)
            if not data:
                break
            reader.feed(data)
            continue
        i = message.get("id")
        if i in checks:
            wrong += i in answered or not checks[i](message)
            answered.add(i)
    sender.join()
    s.close()
    with tally["lock"]:
        tally["answered"] += len(answered)
        tally["missing"] += count - len(answered)
        tally["wrong"] += wrong


def flood(path, count, pid, peak):
    """One client that sends `count` requests without reading a reply for a while."""
    s = connect(path)
    s.setblocking(False)
    data = request(0, "initialize", {"capabilities": {}}) + b"".join(expected(i)[0] for i in range(1, count + 1))
    sent, deadline = 0, time.time() + 20
    while sent < len(data) and time.time() < deadline:
        try:
            sent += s.send(data[sent:sent + (1 << 20)])
        except BlockingIOError:
            peak[0] = max(peak[0], resident_mb(pid))
            time.sleep(0.01)
    peak[0] = max(peak[0], resident_mb(pid))
    s.close()
    return sent, len(data)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=30)
    parser.add_argument("--requests", type=int, default=3000, help="per client")
    parser.add_argument("--flood", type=int, default=200000, help="requests of the client that does not read")
    parser.add_argument("--prismd", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "bin", "prismd"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "prismd.sock")
        env = dict(os.environ, PRISM_CACHE_DIR=os.path.join(tmp, "cache"))
        daemon = subprocess.Popen([args.prismd, "--socket", path, "--state-dir", os.path.join(tmp, "state")],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(200):
                if os.path.exists(path):
                    break
                time.sleep(0.05)
            setup = connect(path)
            setup.sendall(request(0, "initialize", {"capabilities": {}}) +
                          request(1, "program/open", {"uri": "file:///scale.prism", "text": PROGRAM}))
            reader, seen = FrameReader(), set()
            while not {0, 1} <= seen:
                message = reader.pop()
                if message is None:
                    reader.feed(setup.recv(1 << 16))
                elif "error" in message:
                    raise SystemExit(f"setting up: {message['error']}")
                else:
                    seen.add(message.get("id"))
            before = resident_mb(daemon.pid)
            tally = {"lock": threading.Lock(), "answered": 0, "missing": 0, "wrong": 0}
            start = time.time()
            threads = [threading.Thread(target=one_client, args=(path, args.requests, tally)) for _ in range(args.clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            seconds = time.time() - start
            after_clients = resident_mb(daemon.pid)
            peak = [after_clients]
            sent, total = flood(path, args.flood, daemon.pid, peak)
            time.sleep(2)
            after = resident_mb(daemon.pid)
            setup.close()
            print(f"{args.clients} clients x {args.requests} requests: {tally['answered']} answered in {seconds:.1f} s "
                  f"({tally['answered'] / seconds:.0f}/s), {tally['wrong']} wrong, {tally['missing']} missing")
            print(f"flood: {sent} of {total} bytes taken before the daemon stopped reading ({args.flood} requests offered)")
            print(f"prismd resident memory: {before:.0f} MB before, {after_clients:.0f} MB after the clients, "
                  f"{peak[0]:.0f} MB at the flood's peak, {after:.0f} MB after it")
            return 1 if tally["wrong"] or tally["missing"] else 0
        finally:
            daemon.terminate()
            daemon.wait(timeout=20)


if __name__ == "__main__":
    sys.exit(main())
