"""prism.batch (issue 51): a model's tunes as one batch, on this machine and on a Dask cluster of
two workers, each with its own prismd and state, one of them killed while it runs a job."""
import importlib
import json
import os
import signal

import distributed
import pytest

import prism
from conftest import example
from prism.batch import private_daemons, stop_private_daemons

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.dirname(os.path.abspath(__file__))
batch_module = importlib.import_module("prism.batch")  # prism.batch is the function
LOST = ("gated_mlp", 8)  # the job whose daemon goes away each time it runs


def model_manifest(path):
    """3 programs x 2 bindings at small sizes, timed once each."""
    rows = [{"n": 4, "d": 64}, {"n": 8, "d": 64}]
    return prism.write_manifest(str(path), [
        ((example("rms_linear"), "rms_linear"), rows),
        ((example("gated_mlp"), "gated_mlp"), rows),
        ((example("lora"), "lora"), [dict(r, o=32, r=8) for r in rows]),
    ], top=1)


def test_a_manifest_lists_every_program_at_every_bindings_and_target(tmp_path):
    model_manifest(tmp_path / "model.json")
    jobs = prism.load_manifest(str(tmp_path / "model.json"))
    assert [(j["program"], j["bindings"]["n"], j["target"]) for j in jobs] == [
        (p, n, "cpu") for p in ("rms_linear", "gated_mlp", "lora") for n in (4, 8)]
    assert all(j["top"] == 1 and "program rms_linear" in jobs[0]["text"] for j in jobs)
    (tmp_path / "bad.json").write_text(json.dumps({"programs": [{"program": "x", "file": "x.prism"}]}))
    with pytest.raises(FileNotFoundError):
        prism.load_manifest(str(tmp_path / "bad.json"))
    with pytest.raises(ValueError, match="bindings"):
        (tmp_path / "x.prism").write_text("")
        prism.load_manifest(str(tmp_path / "bad.json"))


def batch_killing_a_worker(manifest, workers, killed):
    """The batch on a LocalCluster of two workers, each with its own prismd; after the first job
    ends, a worker with a job in flight is killed (appended to `killed`)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as dask:
        dask.register_plugin(private_daemons(workers))

        def kill_a_busy_worker(outcome):
            # After the first job, a worker with a job in flight dies; Dask runs that job again.
            if killed:
                return
            busy = [worker for worker, tasks in dask.processing().items() if tasks]
            for pid in dask.run(os.getpid, workers=busy[:1]).values():
                os.kill(pid, signal.SIGKILL)
            killed.append(busy[:1])

        return prism.batch(str(manifest), client=dask, progress=kill_a_busy_worker)


def test_a_batch_on_two_dask_workers_survives_a_killed_worker_and_lands_in_this_db(quiet_client, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", PACKAGE)  # the workers import prism
    monkeypatch.setenv("PRISM_TUNE_NOISE_LIMIT", "off")  # every result stored, even on a busy machine
    manifest = tmp_path / "model.json"
    model_manifest(manifest)
    killed = []
    try:
        r = batch_killing_a_worker(manifest, str(tmp_path / "workers"), killed)
    finally:
        stop_private_daemons(str(tmp_path / "workers"))
    assert killed and killed[0], "no worker had a job in flight to kill"
    assert len(r["jobs"]) == 6 and r["failed"] == 0
    for job in r["jobs"]:
        assert job["status"] in ("tuned", "stored"), job
        assert job["result"]["bestMs"] > 0 and job["result"]["rows"][0]["ok"]  # checked against the reference
    assert {k: r["imported"][k] for k in ("added", "present", "rejected")} == {"added": 6, "present": 0, "rejected": 0}
    assert_claims_measured_here_once(manifest, quiet_client, 6)


def assert_claims_measured_here_once(manifest, client, jobs):
    """The workers' rows are other machines' claims (docs/tuning.md, "Sharing a tuning DB"): the
    same batch here measures exactly those rows once, and is then answered by this DB."""
    again = prism.batch(str(manifest), client=client)
    assert again["failed"] == 0 and again["stored"] == 0
    for job in again["jobs"]:
        assert job["result"]["measured"]["confirmed"], job  # the claim, measured here
        assert len(job["result"]["rows"]) == 1  # the manifest's top 1: the claimed row alone
    assert prism.batch(str(manifest), client=client)["stored"] == jobs


def test_one_worker_per_gpu_sees_its_gpu_alone_with_its_own_daemon_and_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", PACKAGE)
    base = str(tmp_path / "gpus")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as dask:
        dask.register_plugin(private_daemons(base, gpus=["2", "5"]))
        seen = dask.run(lambda: (os.environ["CUDA_VISIBLE_DEVICES"], os.environ["PRISM_SOCKET"], os.environ["XDG_RUNTIME_DIR"]))
        described = dask.run(lambda: os.environ["PRISM_CPU_DESCRIPTION"])
    devices = sorted(d for d, _, _ in seen.values())
    assert devices == ["2", "5"]
    assert len({s for _, s, _ in seen.values()}) == 2 and len({r for _, _, r in seen.values()}) == 2  # a daemon and a lock each
    assert all(r.startswith(base) for _, _, r in seen.values())
    assert set(described.values()) == {os.environ["PRISM_CPU_DESCRIPTION"]}  # the host's, measured once


def test_a_batch_spread_over_gpus_runs_every_job_on_one_of_them_and_lands_in_this_db(quiet_client, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", PACKAGE)
    monkeypatch.setenv("PRISM_TUNE_NOISE_LIMIT", "off")
    manifest = tmp_path / "model.json"
    rows = [{"n": 4, "d": 64}, {"n": 8, "d": 64}]
    prism.write_manifest(str(manifest), [((example("rms_linear"), "rms_linear"), rows), ((example("gated_mlp"), "gated_mlp"), rows)], top=1)
    # No GPU here: the CPU target stands in; each worker is told its GPU all the same.
    r = prism.batch_on_gpus(str(manifest), gpus=["0", "1"], base=str(tmp_path / "gpus"))
    assert r["failed"] == 0 and len(r["jobs"]) == 4
    assert all(job["status"] == "tuned" and job["gpu"] in ("0", "1") for job in r["jobs"])
    assert r["imported"]["added"] == 4
    assert_claims_measured_here_once(manifest, quiet_client, 4)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(ValueError, match="no GPU is visible"):
        prism.batch_on_gpus(str(manifest))


def run_job_losing_one(job, fresh=False):
    """prism.batch.run_job on a Dask worker, except that the LOST job's task loses its daemon each
    time it runs, raising as a task whose worker or daemon died does; its runs are counted, a line
    each, in $PRISM_TEST_ATTEMPTS."""
    if (job["program"], job["bindings"]["n"]) != LOST:
        return batch_module.run_job(job, fresh)
    with open(os.environ["PRISM_TEST_ATTEMPTS"], "a") as f:
        f.write("ran\n")
    raise prism.ConnectionLost("prismd closed the connection")


def test_a_job_that_loses_its_daemon_twice_fails_in_words_and_the_finished_jobs_land_in_this_db(client, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([PACKAGE, TESTS]))  # the workers import this file
    monkeypatch.setenv("PRISM_TUNE_NOISE_LIMIT", "off")
    monkeypatch.setenv("PRISM_TEST_ATTEMPTS", str(tmp_path / "attempts"))
    monkeypatch.setattr(batch_module, "run_job", run_job_losing_one)
    manifest = tmp_path / "model.json"
    rows = [{"n": 4, "d": 64}, {"n": 8, "d": 64}]
    prism.write_manifest(str(manifest), [((example("rms_linear"), "rms_linear"), rows),
                                         ((example("gated_mlp"), "gated_mlp"), rows)], top=1)
    outcomes = []
    try:
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                distributed.Client(cluster) as dask:
            dask.register_plugin(private_daemons(str(tmp_path / "workers")))
            r = prism.batch(str(manifest), client=dask, progress=outcomes.append)
    finally:
        stop_private_daemons(str(tmp_path / "workers"))
    assert (tmp_path / "attempts").read_text() == "ran\nran\n"  # run, then run once more
    assert len(outcomes) == 4 and len(r["jobs"]) == 4 and r["failed"] == 1
    lost = r["jobs"][3]
    assert (lost["program"], lost["bindings"]["n"], lost["status"]) == ("gated_mlp", 8, "failed")
    assert lost["error"] == "prismd closed the connection" and "lost" not in lost
    assert all(job["status"] == "tuned" for job in r["jobs"][:3])
    assert {k: r["imported"][k] for k in ("added", "present", "rejected")} == {"added": 3, "present": 0, "rejected": 0}
    assert client.request("tuningDb/export", {})["entries"] == 3


def test_a_job_whose_daemon_goes_away_is_a_failed_job_in_words(monkeypatch):
    class LosingClient:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def open(self, **kwargs):
            pass

        def request(self, method, params=None):
            raise prism.ConnectionLost("prismd closed the connection")

    monkeypatch.setattr(batch_module, "Client", LosingClient)
    job = {"program": "p", "file": "p.prism", "text": "", "bindings": {"n": 4}, "target": "cpu"}
    out = batch_module.run_job(job)
    assert out["status"] == "failed" and out["error"] == "prismd closed the connection" and "entries" not in out
    assert out["lost"]  # prism.batch runs such a job once more
