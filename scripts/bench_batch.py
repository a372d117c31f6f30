#!/usr/bin/env python3
"""The time of a batch of N jobs on K Dask workers (issue 51): examples/rms_linear, gated_mlp and
lora at n = 1, 2, 4, … until N jobs, tuned --top 2 at d = 256, on a LocalCluster of K worker
processes on this host, each with its own prismd, tuning DB and caches (prism.batch's
private_daemons: every run measures, none is answered by a DB), beside the same jobs in one daemon's
batch/run. Prints the seconds, jobs per minute and the speedup over one daemon. Arguments: N and
the worker counts (default: 12 1 2). On one host, K workers tune at once and share its cores: the
measured speedup is what spreading buys there, not a cluster's.

With --hosts (issue 67; root, or CAP_NET_ADMIN): each worker is a host of its own, a network
namespace with its own prismd, DB, caches and tune lock (python/tests/hosts.py), the Dask scheduler
on one more, started as docs/tuning.md starts them. Every worker host runs on one core (taskset,
core k mod the machine's cores), and so does the one daemon it is compared with: each job is tuned
on the same kind of machine either way. Beside the wall time, the overhead per job: the core-seconds
the workers spent beyond the one daemon's, min(K, cores) x wall minus the daemon's, over N.

  ~/.cache/prism/venv/bin/python scripts/bench_batch.py 12 1 2
  ~/.cache/prism/venv/bin/python scripts/bench_batch.py --hosts 24 1 2 4
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
        dask.register_plugin(private_daemons(base))
        start = time.perf_counter()
        r = prism.batch(path, client=dask)
        seconds = time.perf_counter() - start
    stop_private_daemons(base)
    return seconds, r


def on_hosts(path, workers, root, description):
    """The batch on `workers` namespaced hosts, each worker on one core, the scheduler on one more;
    the seconds from submitting the first job to importing the last."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "tests"))
    from hosts import Hosts, copy_cpu_description, dask_command

    package = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "python"))
    cores = sorted(os.sched_getaffinity(0))
    with Hosts(root, workers + 1) as hosts:
        address = f"tcp://{hosts.address(0)}:8786"
        hosts.spawn(0, dask_command("scheduler") + ["--host", hosts.address(0), "--no-dashboard"], extra_env={"PYTHONPATH": package})
        for i in range(1, workers + 1):
            copy_cpu_description(os.path.join(hosts.homes[i], "cache"), description)
            core = str(cores[(i - 1) % len(cores)])
            hosts.spawn(i, ["taskset", "--cpu-list", core] + dask_command("worker") +
                        [address, "--nthreads", "1", "--name", f"h{i}", "--host", hosts.address(i), "--no-dashboard"],
                        extra_env={"PYTHONPATH": package})
        with distributed.Client(address, timeout=60) as dask:
            dask.wait_for_workers(workers, timeout=120)
            start = time.perf_counter()
            r = prism.batch(path, client=dask)
            seconds = time.perf_counter() - start
    return seconds, r


def use_daemon_in(base):
    """This process's prismd from now on: the one with its state, caches and socket under `base`."""
    for name in ("XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"):
        os.makedirs(os.path.join(base, name.lower()), mode=0o700)
        os.environ[name] = os.path.join(base, name.lower())
    os.environ["PRISM_SOCKET"] = os.path.join(base, "prismd.sock")


def one_daemon(path, base):
    """The jobs in one daemon's batch/run; its state, caches and socket under `base`."""
    use_daemon_in(base)
    with prism.Client() as client:
        start = time.perf_counter()
        r = prism.batch(path, client=client)
        seconds = time.perf_counter() - start
        client.stop_daemon()
    return seconds, r


def described(base):
    """The description of this machine's CPU (as this process's affinity shows it), measured by a
    daemon of its own (the kernel source of a small program needs it) before anything is timed: the
    one description every timed daemon then reads (PRISM_CPU_DESCRIPTION), as a fleet of identical
    nodes shares it."""
    use_daemon_in(base)
    with prism.Client() as client:
        client.open(path=os.path.join(EXAMPLES, "rms_linear.prism"))
        client.source("rms_linear", bindings={"n": 1, "d": 64})
        client.stop_daemon()
    return os.path.join(base, "xdg_cache_home", "prism", "cpu-target.txt")


def main_hosts(jobs, counts, tmp, path):
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[0]})  # the daemons this process starts, on one core
    try:
        description = described(os.path.join(tmp, "describe"))
        os.environ["PRISM_CPU_DESCRIPTION"] = description
        alone, r = one_daemon(path, os.path.join(tmp, "one"))
    finally:
        os.sched_setaffinity(0, set(cores))
    # The workers' results go to a daemon of this process's own, outside the timed hosts.
    use_daemon_in(os.path.join(tmp, "caller"))
    print(f"{'JOBS':>5} {'WORKERS':>8} {'SECONDS':>9} {'JOBS/MIN':>9} {'SPEEDUP':>8} {'OVERHEAD/JOB':>13} {'FAILED':>7}")
    print(f"{jobs:5d} {'daemon':>8} {alone:9.1f} {60 * jobs / alone:9.1f} {1:8.2f}x {'-':>13} {r['failed']:7d}")
    for k in counts:
        seconds, r = on_hosts(path, k, os.path.join(tmp, f"hosts-{k}"), description)
        overhead = (min(k, len(cores)) * seconds - alone) / jobs
        print(f"{jobs:5d} {k:8d} {seconds:9.1f} {60 * jobs / seconds:9.1f} {alone / seconds:8.2f}x {overhead:12.2f}s {r['failed']:7d}")
    with prism.Client(autostart=False) as caller:
        caller.stop_daemon()


def main_local(jobs, counts, tmp, path):
    os.environ["PRISM_CPU_DESCRIPTION"] = described(os.path.join(tmp, "describe"))
    alone, r = one_daemon(path, os.path.join(tmp, "one"))
    print(f"{'JOBS':>5} {'WORKERS':>8} {'SECONDS':>9} {'JOBS/MIN':>9} {'SPEEDUP':>8} {'FAILED':>7}")
    print(f"{jobs:5d} {'daemon':>8} {alone:9.1f} {60 * jobs / alone:9.1f} {1:8.2f}x {r['failed']:7d}")
    for k in counts:
        seconds, r = on_workers(path, k, os.path.join(tmp, f"workers-{k}"))
        print(f"{jobs:5d} {k:8d} {seconds:9.1f} {60 * jobs / seconds:9.1f} {alone / seconds:8.2f}x {r['failed']:7d}")


def main():
    hosts = "--hosts" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--hosts"]
    jobs = int(args[0]) if args else 12
    counts = [int(k) for k in args[1:]] or [1, 2]
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:  # short: sockets' paths have at most 107 bytes
        path = os.path.join(tmp, "model.json")
        manifest(path, jobs)
        (main_hosts if hosts else main_local)(jobs, counts, tmp, path)


if __name__ == "__main__":
    main()
