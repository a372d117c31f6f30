"""prism.batch: a model's tunes as one batch (docs/tuning.md, "Batches").

On one machine the batch is the daemon's `batch/run`. On a Dask cluster each job (a program at
one bindings on one target) is a Dask task that runs on its worker's host, against that host's
prismd; the task returns its result and its tuning DB entries, which are imported into the DB of
the daemon that asked as each job completes. A worker that dies loses only the job it was
running: Dask runs that task again on another worker, and a task that still fails is submitted once
more, then reported failed; the jobs that finished keep their entries.
"""
import json
import os

from .client import Client
from .errors import ConnectionLost, PrismError


def private_daemons(base, gpus=None):
    """A Dask worker plugin that gives each worker its own prismd, tuning DB and caches under
    `base` (worker-NAME/): several workers on one host (a LocalCluster) each keep state as a host
    of their own would. They share the host's one-tune-at-a-time lock (in $XDG_RUNTIME_DIR), as
    every tune on one machine must, so their timings stay honest. With `gpus` (device ids, as
    CUDA_VISIBLE_DEVICES names them), worker k sees only GPU gpus[k] and has a tune lock of its
    own: one runner per device, whose kernels are timed on that device alone (the CPU's work of
    two GPU tunes, compiling and the reference, overlaps). The CPU's description is the host's
    (PRISM_CPU_DESCRIPTION), measured once for all of them. Register it with
    `dask_client.register_plugin(...)`."""
    import distributed

    class PrivateDaemons(distributed.WorkerPlugin):
        def setup(self, worker):
            home = os.path.join(base, f"worker-{worker.name}")
            # The host's CPU description, measured once for every daemon on it (docs/tuning.md, "Peaks").
            os.environ.setdefault("PRISM_CPU_DESCRIPTION", os.path.join(_cache_root(), "cpu-target.txt"))
            os.environ.pop("PRISM_CACHE_DIR", None)  # the worker's cache is its own, under XDG_CACHE_HOME
            private = ("XDG_STATE_HOME", "XDG_CACHE_HOME") + (("XDG_RUNTIME_DIR",) if gpus else ())
            for name in private:
                os.makedirs(os.path.join(home, name.lower()), mode=0o700, exist_ok=True)
                os.environ[name] = os.path.join(home, name.lower())
            if gpus:
                os.environ["CUDA_VISIBLE_DEVICES"] = str(gpus[int(worker.name) % len(gpus)])
            os.environ["PRISM_SOCKET"] = os.path.join(home, "prismd.sock")
            os.environ.setdefault("PRISM_IDLE_EXIT", "600")  # a daemon no one stops goes by itself

    return PrivateDaemons()


def _cache_root():
    """prismd's cache root as engine/util/cache.h finds it: $PRISM_CACHE_DIR, $XDG_CACHE_HOME/prism,
    ~/.cache/prism."""
    if os.environ.get("PRISM_CACHE_DIR"):
        return os.environ["PRISM_CACHE_DIR"]
    if os.environ.get("XDG_CACHE_HOME"):
        return os.path.join(os.environ["XDG_CACHE_HOME"], "prism")
    return os.path.join(os.path.expanduser("~"), ".cache", "prism")


def visible_gpus():
    """This machine's GPUs as CUDA_VISIBLE_DEVICES names them: that variable's list where it is
    set, else one id per line of `nvidia-smi -L`; empty where there is none."""
    import subprocess

    if os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        return [d for d in os.environ["CUDA_VISIBLE_DEVICES"].split(",") if d.strip()]
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(line for line in listed.splitlines() if line.startswith("GPU "))]


def batch_on_gpus(manifest, gpus=None, base=None, fresh=False, progress=None):
    """Every job of `manifest` spread over this machine's GPUs (`gpus`: device ids; default
    visible_gpus()): a Dask LocalCluster of one worker per GPU, each with its own prismd that
    sees that GPU alone (private_daemons(base, gpus)), the results imported into this user's
    daemon's tuning DB as prism.batch does. `base` holds the workers' state (default: a
    temporary directory, removed after). Raises ValueError where there is no GPU."""
    import shutil
    import tempfile

    import distributed

    gpus = list(gpus) if gpus is not None else visible_gpus()
    if not gpus:
        raise ValueError("no GPU is visible here (CUDA_VISIBLE_DEVICES, nvidia-smi -L): run prism.batch on this machine's prismd instead")
    own_base = base is None
    base = base or tempfile.mkdtemp(prefix="prism-gpus-")
    try:
        with distributed.LocalCluster(n_workers=len(gpus), threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                distributed.Client(cluster) as dask:
            dask.register_plugin(private_daemons(base, gpus))
            return batch(manifest, client=dask, fresh=fresh, progress=progress)
    finally:
        stop_private_daemons(base)
        if own_base:
            shutil.rmtree(base, ignore_errors=True)


def stop_private_daemons(base):
    """Stops the daemons private_daemons(base) started."""
    import subprocess

    from .client import find_prism_binary
    for home in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        socket = os.path.join(base, home, "prismd.sock")
        if os.path.exists(socket):
            subprocess.run([find_prism_binary(), "--socket", socket, "--no-start", "-c", "daemon stop"], capture_output=True, timeout=60)


def load_manifest(manifest):
    """The jobs of `manifest` (a path to its JSON, or the dict itself), in its order: one per
    program x bindings x target, each with the program's source text read from its file (a path
    relative to the manifest's directory, or to the working directory for a dict)."""
    if isinstance(manifest, (str, os.PathLike)):
        base = os.path.dirname(os.path.abspath(manifest))
        with open(manifest) as f:
            manifest = json.load(f)
    else:
        base = os.getcwd()
    programs = manifest.get("programs") if isinstance(manifest, dict) else None
    if not isinstance(programs, list):
        raise ValueError('the manifest needs "programs": [{"program": NAME, "file": PATH, "bindings": [...]}, ...]')
    jobs = []
    for i, entry in enumerate(programs):
        where = f"programs[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("program"), str) or not isinstance(entry.get("file"), str):
            raise ValueError(f'{where} needs "program" (its name) and "file" (the .prism file defining it)')
        path = os.path.normpath(os.path.join(base, entry["file"]))
        with open(path) as f:
            text = f.read()
        bindings = entry.get("bindings")
        if not isinstance(bindings, list) or not bindings or not all(isinstance(b, dict) for b in bindings):
            raise ValueError(f'{where} needs "bindings": a list of {{DIM: VALUE}} objects')
        top = entry.get("top", manifest.get("top"))
        for target in entry.get("targets", manifest.get("targets", ["cpu"])):
            for b in bindings:
                job = {"program": entry["program"], "file": path, "text": text, "bindings": dict(b), "target": target}
                if top is not None:
                    job["top"] = top
                jobs.append(job)
    return jobs


def write_manifest(path, programs, targets=("cpu",), top=None):
    """Writes a manifest at `path` for `programs`, a list of (program, bindings): program an
    Imported (from_torch: a model's layers) whose source goes to NAME.prism beside the manifest,
    or the path of a .prism file defining it with its name as (path, name); bindings a list of
    {DIM: VALUE}. Returns the manifest as a dict."""
    base = os.path.dirname(os.path.abspath(path))
    entries = []
    for program, bindings in programs:
        if isinstance(program, tuple):
            file, name = program
            file = os.path.relpath(os.path.abspath(file), base)
        else:
            name, file = program.name, program.name + ".prism"
            with open(os.path.join(base, file), "w") as f:
                f.write(program.text)
        entries.append({"program": name, "file": file, "bindings": [dict(b) for b in bindings]})
    manifest = {"programs": entries, "targets": list(targets)}
    if top is not None:
        manifest["top"] = top
    with open(path, "w") as f:
        json.dump(manifest, f, indent=2)
    return manifest


def _tune_params(job, fresh):
    params = {"program": job["program"], "bindings": job["bindings"], "target": job["target"]}
    if "top" in job:
        params["top"] = job["top"]
    if fresh:
        params["fresh"] = True
    return params


def run_job(job, fresh=False):
    """One job on this host's prismd (a Dask task's body): its status ("tuned", "stored": the
    tuning DB answered, "failed"), its TuneResult or error, and its DB entries as exported. A
    daemon that cannot be reached or goes away is a failed job, in words, not an exception."""
    out = {"program": job["program"], "bindings": job["bindings"], "target": job["target"]}
    worker = _worker_name()
    if worker is not None:
        out["worker"] = worker  # what ran where: the Dask worker's name (its host's, as it was started)
    if os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        out["gpu"] = os.environ["CUDA_VISIBLE_DEVICES"]  # the one GPU this worker's daemon sees
    try:
        with Client() as client:
            client.open(text=job["text"], uri="untitled:batch" + job["file"])
            result = client.request("tune/run", _tune_params(job, fresh))
            entries = client.request("tuningDb/export", {"program": job["program"], "bindings": job["bindings"]})["text"]
    except PrismError as e:
        out.update(status="failed", error=str(e))
        return out
    except (ConnectionLost, OSError) as e:  # the daemon went away: the job may run again elsewhere
        out.update(status="failed", error=str(e), lost=True)
        return out
    out.update(status="stored" if result.get("fromDb") else "tuned", result=result, entries=entries)
    return out


def _worker_name():
    """The name of the Dask worker running this task, None outside one."""
    try:
        from distributed import get_worker

        return str(get_worker().name)
    except (ImportError, ValueError):
        return None


def batch(manifest, client=None, fresh=False, progress=None):
    """Tunes every job of `manifest` (load_manifest). `client`: a prism.Client (or None: this
    user's prismd) runs the batch on this machine; a dask.distributed.Client spreads the jobs
    over its workers and imports their results into this machine's tuning DB. `fresh` measures
    every job again. `progress` is called with each job's outcome as it completes (Dask) or with
    each $/progress value (one machine). Returns {"jobs": [...], "failed", "stored"}, the jobs in
    the manifest's order, as the protocol's batch/run."""
    jobs = load_manifest(manifest)
    if client is None or isinstance(client, Client):
        return _on_this_machine(jobs, client, fresh, progress)
    return _on_dask(jobs, client, fresh, progress)


def _on_this_machine(jobs, client, fresh, progress):
    own = client is None
    client = client or Client()
    try:
        for path in dict.fromkeys(job["file"] for job in jobs):
            client.open(path=path)
        return client.request("batch/run", {"jobs": [_tune_params(job, fresh) for job in jobs]}, progress=progress)
    finally:
        if own:
            client.close()


def _on_dask(jobs, dask_client, fresh, progress):
    """Each job as a Dask task; each outcome's entries imported into this machine's DB as it
    arrives, so a later failure loses none of them. A task that raised (its worker or daemon
    lost) is submitted once more; failing again, it is a failed job with the error's words."""
    from distributed import as_completed

    outcomes, tries = [None] * len(jobs), [0] * len(jobs)
    index = {}
    imported = {"added": 0, "present": 0, "rejected": 0}

    def submit(i):
        tries[i] += 1
        future = dask_client.submit(run_job, jobs[i], fresh, pure=False)
        index[future.key] = i
        return future

    with Client() as local:
        queue = as_completed([submit(i) for i in range(len(jobs))])
        for future in queue:
            i = index.pop(future.key)
            try:
                outcome = future.result()
            except Exception as e:  # noqa: BLE001 - a lost worker raises whatever distributed raises
                if dask_client.status != "running":  # the scheduler went away: no job can run any more
                    raise _scheduler_lost(dask_client, outcomes) from e
                outcome = _failed(jobs[i], e)
            if outcome.pop("lost", False) and tries[i] < 2:
                queue.add(submit(i))
                continue
            _import_entries(local, outcome, imported)
            outcomes[i] = outcome
            if progress is not None:
                progress(outcome)
    return {"jobs": outcomes, "failed": sum(o["status"] == "failed" for o in outcomes),
            "stored": sum(o["status"] == "stored" for o in outcomes), "imported": imported}


def _scheduler_lost(dask_client, outcomes):
    """The batch's end when its scheduler went away, in words: what finished is imported already."""
    finished = sum(o is not None for o in outcomes)
    address = getattr(dask_client.scheduler, "address", None) or "its address"
    return PrismError(None, f"the Dask scheduler at {address} went away after {finished} of {len(outcomes)} jobs: their "
                            f"results are in this machine's tuning DB; {len(outcomes) - finished} did not finish (run the "
                            "batch again on a scheduler: the DB answers the finished ones at once)")


def _failed(job, error):
    """A job whose task raised (its worker lost), as run_job reports a job whose daemon was lost."""
    return {"program": job["program"], "bindings": job["bindings"], "target": job["target"], "status": "failed",
            "error": str(error) or type(error).__name__, "lost": True}


def _import_entries(local, outcome, imported):
    """The outcome's DB entries into the local daemon's DB (taken out of the outcome); the answer's
    counts added to `imported`'s, its lists (the reasons for rejections) joined to its."""
    entries = outcome.pop("entries", "")
    if entries:
        for key, value in local.request("tuningDb/import", {"text": entries}).items():
            imported[key] = imported.get(key, [] if isinstance(value, list) else 0) + value
