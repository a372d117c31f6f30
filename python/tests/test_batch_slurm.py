"""prism.batch on Slurm (issue 67): docs/tuning.md's recipe ("On Slurm") run against a real Slurm
from Debian's packages, started by the test (slurm.py): the controller and the Dask scheduler on
a login host, a compute node on another (network namespaces, hosts.py), the worker started on the
node by `srun` as the docs write it. Run with `-s` to see what a user sees (docs/tuning.md shows it)."""
import json
import os
import time

import distributed
import pytest

import prism
from hosts import Hosts, copy_cpu_description, dask_command
from slurm import SlurmCluster
from test_batch import PACKAGE
from test_batch_hosts import manifest_and_logs, tuned_entries

WHY_NOT = Hosts.available() or SlurmCluster.available()
pytestmark = pytest.mark.skipif(bool(WHY_NOT), reason=WHY_NOT or "Slurm can run here")


def node_local(home):
    """docs/tuning.md's `env XDG_…` before `dask worker` in srun: the node's prismd keeps its state,
    caches and socket on the node's own disk (the docs' /tmp/$USER/prism-*), not in the login
    host's directories, which srun passes along. (srun's own `--export=ALL,VAR=…` leaves a
    variable the login shell has as it was: Slurm 22.05 gave the task the login host's.)"""
    local = os.path.join(home, "local")  # short: a socket's path has at most 107 bytes
    return {"XDG_STATE_HOME": f"{local}/state", "XDG_CACHE_HOME": f"{local}/cache", "XDG_RUNTIME_DIR": f"{local}/run"}


def wait_for(path, seconds=60):
    deadline = time.time() + seconds
    while not os.path.exists(path):
        if time.time() > deadline:
            raise TimeoutError(f"{path} did not appear in {seconds} s")
        time.sleep(0.1)


def test_the_docs_slurm_recipe_runs_a_batch_on_a_slurm_node(quiet_client, tmp_path):
    manifest, logs = manifest_and_logs(tmp_path)
    with Hosts(tmp_path / "hosts", 2) as hosts, SlurmCluster(hosts, tmp_path / "slurm") as slurm:
        login = {"PYTHONPATH": PACKAGE, "PRISM_TUNE_NOISE_LIMIT": "off", **slurm.env(0)}
        scheduler_file = os.path.join(hosts.homes[0], "dask.json")
        hosts.spawn(0, dask_command("scheduler") + ["--scheduler-file", scheduler_file, "--no-dashboard"], extra_env=login,
                    log=os.path.join(logs, "scheduler.log"))
        wait_for(scheduler_file)
        node = node_local(hosts.homes[1])
        copy_cpu_description(node["XDG_CACHE_HOME"])
        srun = ["srun", "--nodes=1", "--ntasks-per-node=1", "env"] + [f"{k}={v}" for k, v in node.items()]
        hosts.spawn(0, srun + dask_command("worker") + ["--scheduler-file", scheduler_file, "--nthreads", "1", "--no-dashboard"],
                    extra_env=login, log=os.path.join(logs, "srun.log"))
        dask = distributed.Client(scheduler_file=scheduler_file, timeout=60)
        try:
            dask.wait_for_workers(1, timeout=120)
            nodes = slurm.run(0, ["sinfo"]).stdout
            listed = slurm.run(0, ["squeue", "--format=%.6i %.9P %.8j %.2t %.6D %R"])
            queue = listed.stdout + listed.stderr
            r = prism.batch(str(manifest), client=dask)
        finally:
            dask.close()
            hosts.run(1, [prism.find_prism_binary(), "--no-start", "-c", "daemon stop"], node)  # the node's prismd
        scheduler = json.load(open(scheduler_file))["address"]
        node_entries = tuned_entries(os.path.dirname(node["XDG_STATE_HOME"]))
        login_entries = tuned_entries(hosts.homes[0])
    # What a user sees (docs/tuning.md shows it; top 1 at d = 64: the path is tested, not speed).
    print(f"\n$ sinfo\n{nodes}$ squeue\n{queue}$ cat ~/dask.json  # address: {scheduler}\n$ python3 -c 'import prism, …'")
    for job in r["jobs"]:
        bindings = ",".join(f"{k}={v}" for k, v in job["bindings"].items())
        best = f"best {job['result']['bestMs'] * 1000:.1f} µs" if "result" in job else job.get("error", "")
        print(f"{job['program']:10} {bindings:18} {job['status']:6} on {job['worker']}  {best}")
    print("imported into this machine's DB:", r["imported"])

    # The scheduler is on the login host, found by its route out (not 127.0.0.1).
    assert scheduler.startswith(f"tcp://{hosts.address(0)}:"), scheduler
    assert "node1" in queue and " R " in queue, queue  # the worker is a Slurm job step on node1
    assert r["failed"] == 0, r
    assert len(r["jobs"]) == 6 and all(job["status"] == "tuned" for job in r["jobs"]), r
    assert all(f"//{hosts.address(1)}:" in job["worker"] for job in r["jobs"]), r  # each ran on node1
    # The node kept its measurements on its own disk; the login node measured nothing.
    assert len(node_entries) >= 6 and not login_entries
    assert {k: r["imported"][k] for k in ("added", "present", "rejected")} == {"added": 6, "present": 0, "rejected": 0}
