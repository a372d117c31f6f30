#!/usr/bin/env python3
"""The time of a batch of N jobs on K Dask workers (issue 51): examples/rms_linear, gated_mlp and
lora at n = 1, 2, 4, … until N jobs, tuned --top 2 at d = 256, on a LocalCluster of K worker
processes on this host, each with its own prismd, tuning DB and caches (prism.batch's
private_daemons: every run measures, none is answered by a DB), beside the same jobs in one daemon's
batch/run. Prints the seconds, jobs per minute and the speedup over one daemon. Arguments: N and
the worker counts (default: 12 1 2). On one host, K workers tune at once and share its cores: the
measured speedup is what spreading buys there, not a cluster's.

  ~/.cache/prism/venv/bin/python scripts/bench_batch.py 12 1 2
"""
import os
import sys
import tempfile
import time

import distributed

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import prism  # noqa: E402
from prism.batch import private_daemons, stop_private_daemons  # noqa: E402

EXAMPLES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "examples"))


def manifest(path, jobs):
    extra = {"rms_linear": {}, "gated_mlp": {}, "lora": {"o": 128, "r": 16}}
    rows = {name: [] for name in extra}
    for i in range(jobs):
        name = list(extra)[i % 3]
        rows[name].append(dict({"n": 2 ** (i // 3), "d": 256}, **extra[name]))
    prism.write_manifest(path, [((os.path.join(EXAMPLES, n + ".prism"), n), r) for n, r in rows.items() if r], top=2)


def on_workers(path, workers, base):
    os.environ["PYTHONPATH"] = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "python"))
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as dask:
        dask.register_worker_plugin(private_daemons(base))
        start = time.perf_counter()
        r = prism.batch(path, client=dask)
        seconds = time.perf_counter() - start
    stop_private_daemons(base)
    return seconds, r


def main():
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    counts = [int(k) for k in sys.argv[2:]] or [1, 2]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.json")
        manifest(path, jobs)
        base = os.path.join(tmp, "one")
        for name in ("XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"):
            os.makedirs(os.path.join(base, name.lower()), mode=0o700)
            os.environ[name] = os.path.join(base, name.lower())
        os.environ["PRISM_SOCKET"] = os.path.join(base, "prismd.sock")
        with prism.Client() as client:
            start = time.perf_counter()
            r = prism.batch(path, client=client)
            alone = time.perf_counter() - start
            client.stop_daemon()
        print(f"{'JOBS':>5} {'WORKERS':>8} {'SECONDS':>9} {'JOBS/MIN':>9} {'SPEEDUP':>8} {'FAILED':>7}")
        print(f"{jobs:5d} {'daemon':>8} {alone:9.1f} {60 * jobs / alone:9.1f} {1:8.2f}x {r['failed']:7d}")
        for k in counts:
            seconds, r = on_workers(path, k, os.path.join(tmp, f"workers-{k}"))
            print(f"{jobs:5d} {k:8d} {seconds:9.1f} {60 * jobs / seconds:9.1f} {alone / seconds:8.2f}x {r['failed']:7d}")


if __name__ == "__main__":
    main()
