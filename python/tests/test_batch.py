"""prism.batch (issue 51): a model's tunes as one batch, on this machine and on a Dask cluster of
two workers, each with its own prismd and state, one of them killed while it runs a job."""
import json
import os
import signal

import distributed
import pytest

import prism
from conftest import example
from prism.batch import private_daemons, stop_private_daemons

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
        dask.register_worker_plugin(private_daemons(workers))

        def kill_a_busy_worker(outcome):
            # After the first job, a worker with a job in flight dies; Dask runs that job again.
            if killed:
                return
            busy = [worker for worker, tasks in dask.processing().items() if tasks]
            for pid in dask.run(os.getpid, workers=busy[:1]).values():
                os.kill(pid, signal.SIGKILL)
            killed.append(busy[:1])

        return prism.batch(str(manifest), client=dask, progress=kill_a_busy_worker)


def test_a_batch_on_two_dask_workers_survives_a_killed_worker_and_lands_in_this_db(client, tmp_path, monkeypatch):
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
    assert r["imported"] == {"added": 6, "present": 0, "rejected": 0}
    # The rows answer this machine's questions: the same batch here measures nothing.
    again = prism.batch(str(manifest), client=client)
    assert again["stored"] == 6 and again["failed"] == 0


def test_one_worker_per_gpu_sees_its_gpu_alone_with_its_own_daemon_and_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", PACKAGE)
    base = str(tmp_path / "gpus")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as dask:
        dask.register_worker_plugin(private_daemons(base, gpus=["2", "5"]))
        seen = dask.run(lambda: (os.environ["CUDA_VISIBLE_DEVICES"], os.environ["PRISM_SOCKET"], os.environ["XDG_RUNTIME_DIR"]))
    devices = sorted(d for d, _, _ in seen.values())
    assert devices == ["2", "5"]
    assert len({s for _, s, _ in seen.values()}) == 2 and len({r for _, _, r in seen.values()}) == 2  # a daemon and a lock each
    assert all(r.startswith(base) for _, _, r in seen.values())


def test_a_batch_spread_over_gpus_runs_every_job_on_one_of_them_and_lands_in_this_db(client, tmp_path, monkeypatch):
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
    assert prism.batch(str(manifest), client=client)["stored"] == 4
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(ValueError, match="no GPU is visible"):
        prism.batch_on_gpus(str(manifest))
