"""prism.batch across hosts (issue 67): three hosts as network namespaces on this machine (hosts.py),
each with its own address, HOME, caches and prismd; the Dask scheduler on one and a worker on each
of the others, started as docs/tuning.md ("Batches") tells a user to start them. Jobs carry the
program's text and bindings, never a path of the submitting host's."""
import os
import threading
import time

import distributed
import pytest

import prism
from hosts import Hosts, copy_cpu_description, dask_command
from test_batch import PACKAGE, model_manifest

WHY_NOT = Hosts.available()
pytestmark = pytest.mark.skipif(bool(WHY_NOT), reason=WHY_NOT or "hosts can be made")


def start_cluster(hosts, logs, one_core=()):
    """The scheduler on h0, a worker on each other host, one thread each (docs/tuning.md); a client
    of the scheduler's from the test's own namespace. Hosts in `one_core` run theirs on one core
    (taskset): a machine of another kind, as the tuner tells kinds apart."""
    port = 8786 + os.getpid() % 1000
    address = f"tcp://{hosts.address(0)}:{port}"
    # The scheduler unpickles the tasks too: prism must be importable on its host as on the workers'.
    hosts.spawn(0, dask_command("scheduler") + ["--host", hosts.address(0), "--port", str(port), "--no-dashboard"],
                extra_env={"PYTHONPATH": PACKAGE}, log=os.path.join(logs, "scheduler.log"))
    for i in range(1, len(hosts.names)):
        copy_cpu_description(os.path.join(hosts.homes[i], "cache"))
        pin = ["taskset", "--cpu-list", str(min(os.sched_getaffinity(0)))] if i in one_core else []
        hosts.spawn(i, pin + dask_command("worker") + [address, "--nthreads", "1", "--name", f"h{i}", "--host", hosts.address(i),
                                                 "--no-dashboard"],
                    extra_env={"PYTHONPATH": PACKAGE, "PRISM_TUNE_NOISE_LIMIT": "off"}, log=os.path.join(logs, f"worker-h{i}.log"))
    client = distributed.Client(address, timeout=60)
    client.wait_for_workers(len(hosts.names) - 1, timeout=120)
    return client


def manifest_and_logs(tmp_path):
    """The batch's manifest (test_batch's model: 3 programs x 2 bindings) and a directory for the
    hosts' logs."""
    manifest = tmp_path / "model.json"
    model_manifest(manifest)
    logs = tmp_path / "logs"
    logs.mkdir()
    return manifest, logs


def tuned_entries(home):
    """The tuning DB entries a host's daemon keeps (one file per question)."""
    directory = os.path.join(home, "state", "prism", "tune")
    return [f for f in os.listdir(directory) if not f.startswith(".")] if os.path.isdir(directory) else []


def test_a_whole_models_batch_runs_across_hosts_each_tuning_with_its_own_daemon_and_db(quiet_client, tmp_path):
    """The manifest prism.model_manifest writes for a small Llama (test_model_manifest: its decoder
    layer, the final norm, the LM head, each at 1 and 8 tokens) runs across the hosts."""
    from test_model_manifest import example

    model, inputs = example()
    manifest = tmp_path / "model.json"
    prism.model_manifest(str(manifest), model, inputs, tokens=[1, 8], top=1)
    logs = tmp_path / "logs"
    logs.mkdir()
    with Hosts(tmp_path / "hosts", 3) as hosts:
        dask = start_cluster(hosts, str(logs))
        try:
            r = prism.batch(str(manifest), client=dask)
        finally:
            dask.close()
        ran = {job["worker"] for job in r["jobs"]}
        entries = [tuned_entries(home) for home in hosts.homes]
    assert [(job["program"], job["bindings"]) for job in r["jobs"]] == [(p, {"n": n}) for p in ("decoder", "rms_norm", "linear")
                                                                         for n in (1, 8)]
    for job in r["jobs"]:
        assert job["status"] == "tuned", job
        assert job["result"]["bestMs"] > 0 and job["result"]["rows"][0]["ok"]
    assert ran <= {"h1", "h2"} and ran, ran
    # Each host kept what it measured in its own DB; the scheduler's host ran nothing.
    assert not entries[0]
    assert sum(len(e) for e in entries[1:]) >= 6
    assert {k: r["imported"][k] for k in ("added", "present", "rejected")} == {"added": 6, "present": 0, "rejected": 0}, r["imported"]


def host_of(hosts, worker_address):
    """The index of the host a worker's address is on."""
    return next(i for i in range(len(hosts.names)) if f"//{hosts.address(i)}:" in worker_address)


@pytest.mark.parametrize("fault", ["cut", "kill"])
def test_a_host_lost_mid_batch_loses_nothing_and_counts_no_job_twice(fault, quiet_client, tmp_path):
    """A host with a job in flight is cut off (its link down: the scheduler hears nothing more from
    it) or its worker is killed (SIGKILL): its job runs again on the other host, the jobs that
    finished keep their results, and no job is counted twice."""
    manifest, logs = manifest_and_logs(tmp_path)
    cut = []
    with Hosts(tmp_path / "hosts", 3) as hosts:
        # The scheduler gives a worker it has not heard from 10 s up (Dask's default waits 5 minutes).
        os.environ["DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL"] = "10s"
        try:
            dask = start_cluster(hosts, str(logs))
        finally:
            del os.environ["DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL"]

        # Once a job has ended, the first host seen with a job in flight is cut off (a watcher of
        # the scheduler's task states: the jobs are short).
        batch_done = threading.Event()

        def states(dask_scheduler):
            ended = sum(ts.state == "memory" for ts in dask_scheduler.tasks.values())
            return ended, [ws.address for ws in dask_scheduler.workers.values() if ws.processing]

        def cut_a_busy_host():
            while not batch_done.is_set() and not cut:
                ended, busy = dask.run_on_scheduler(states)
                if ended and busy:
                    i = host_of(hosts, busy[0])
                    hosts.cut(i) if fault == "cut" else hosts.kill(i)
                    cut.append(f"h{i}")
                time.sleep(0.01)

        watcher = threading.Thread(target=cut_a_busy_host, daemon=True)
        watcher.start()
        try:
            r = prism.batch(str(manifest), client=dask)
        finally:
            batch_done.set()
            watcher.join(60)
            dask.close()
    assert cut, f"no host had a job in flight to {fault}"
    assert r["failed"] == 0, r
    jobs = [(j["program"], j["bindings"]["n"]) for j in r["jobs"]]
    assert len(jobs) == 6 and len(set(jobs)) == 6
    # What finished before the cut stays; what the cut host was running ran on the other host.
    assert {k: r["imported"][k] for k in ("added", "present", "rejected")} == {"added": 6, "present": 0, "rejected": 0}
    assert any(j["worker"] != cut[0] for j in r["jobs"])


def test_a_scheduler_that_goes_away_is_said_in_words_and_what_was_imported_stays(quiet_client, tmp_path):
    manifest, logs = manifest_and_logs(tmp_path)
    outcomes = []
    with Hosts(tmp_path / "hosts", 3) as hosts:
        dask = start_cluster(hosts, str(logs))

        def stop_the_scheduler(outcome):
            outcomes.append(outcome)
            if len(outcomes) == 1:
                hosts.kill(0)

        try:
            with pytest.raises(prism.PrismError, match=r"the Dask scheduler at tcp://\S+ went away after 1 of 6 jobs: "
                                                       r"their results are in this machine's tuning DB; 5 did not finish"):
                prism.batch(str(manifest), client=dask, progress=stop_the_scheduler)
        finally:
            dask.close()
    # The job that ended before is in this machine's DB: asked again, the DB answers it.
    done = outcomes[0]
    again = quiet_client.request("tuningDb/export", {"program": done["program"], "bindings": done["bindings"]})["text"]
    assert again.strip()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core here: a host pinned to one is of the same kind")
def test_a_host_of_another_kind_never_answers_for_this_one(quiet_client, tmp_path):
    """h2's worker runs on one core, h1's on all of this machine's: their measurements are of two
    kinds of machine. Both land in this machine's DB; a tune here is answered (after measuring the
    claimed rows) by h1's, never by h2's."""
    manifest, logs = manifest_and_logs(tmp_path)
    with Hosts(tmp_path / "hosts", 3) as hosts:
        dask = start_cluster(hosts, str(logs), one_core={2})
        try:
            r = prism.batch(str(manifest), client=dask)
        finally:
            dask.close()
    assert r["failed"] == 0, r
    by_host = {}
    for job in r["jobs"]:
        by_host.setdefault(job["worker"], []).append(job)
    assert set(by_host) == {"h1", "h2"}, f"the jobs ran on {sorted(by_host)} alone"
    kinds = {host: {job["result"]["targetModel"] for job in jobs} for host, jobs in by_host.items()}
    assert len(kinds["h1"]) == 1 and len(kinds["h2"]) == 1 and kinds["h1"] != kinds["h2"], kinds
    assert ", 1 core," in next(iter(kinds["h2"])), kinds
    assert r["imported"]["added"] == 6 and r["imported"]["rejected"] == 0, r

    files = {job["program"]: job["file"] for job in prism.load_manifest(str(manifest))}
    for path in set(files.values()):
        quiet_client.open(path=path)
    for host in ("h1", "h2"):
        job = by_host[host][0]
        mine = quiet_client.tune(job["program"], job["bindings"], top=1)
        assert mine["targetModel"] in kinds["h1"]  # this machine is h1's kind
        # h1's claim is measured here and answers; h2's is no answer: a tune of this machine's own.
        assert bool(mine["measured"]["confirmed"]) == (host == "h1"), (host, mine["measured"])
    # h2's entry stays, filed under its own kind, beside what this machine measured.
    job = by_host["h2"][0]
    text = quiet_client.request("tuningDb/export", {"program": job["program"], "bindings": job["bindings"]})["text"]
    assert text.count("\ntarget\tcpu\t") == 2 and ", 1 core," in text
