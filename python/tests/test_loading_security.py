"""What this process loads from the daemon's cache (issue 61): a kernel library or a CUDA plan is
used only from a directory of this user's that nobody else can write, never through a symlink,
and only when its bytes match the seal the daemon wrote beside it; a library runs from a private
copy of exactly the bytes checked."""
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import threading

import pytest

import prism
from conftest import use_private_daemon
from prism import checked_files
from prism.compiled import _CpuLibrary, _CudaPlan

np = pytest.importorskip("numpy")

RMS = "program rms(X: f32[n, d], W: f32[d, m]) {\n  return rms_norm(X, eps=1e-6) @ W\n}\n"
SIZES = {"n": 4, "d": 64, "m": 32}
NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a directory to another user")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A private prismd and the library it compiled for rms at SIZES: (its path, its threads)."""
    root = tmp_path_factory.mktemp("daemon")
    with pytest.MonkeyPatch.context() as patch:
        use_private_daemon(patch, root)
        with prism.Client(timeout=120) as client:
            client.open(text=RMS)
            client.search("rms")
            tuned = client.tune("rms", SIZES, top=1)
            answer = client.library("rms", bindings=SIZES)
        yield answer["library"], tuned["threads"]
        prism.Client().stop_daemon()


@pytest.fixture
def fresh_loads(monkeypatch):
    """Every load makes its copy and loads it, even of bytes an earlier test loaded; the paths
    handed to the loader are recorded. A library loaded by its own path (unchecked: it could hang
    on a FIFO or crash on a truncated file) fails the test instead of being loaded."""
    monkeypatch.setattr(checked_files, "_LOADED", {})
    opened = []
    real = ctypes.CDLL

    def recording(path, *args, **kwargs):
        opened.append(path)
        if not str(path).startswith("/proc/self/fd/"):
            raise AssertionError(f"{path} was loaded by its own path, unchecked")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(checked_files.ctypes, "CDLL", recording)
    return opened


def copy_of(built, directory):
    """The library and its seal copied into `directory` (made private); the copy's path."""
    directory.mkdir(mode=0o700, exist_ok=True)
    path = directory / os.path.basename(built[0])
    shutil.copyfile(built[0], path)
    shutil.copyfile(built[0] + ".sha256", str(path) + ".sha256")
    os.chmod(path, 0o600)
    return str(path)


def rms_runs(library, threads):
    """The library's kernel gives rms's values on random inputs."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((SIZES["n"], SIZES["d"]), dtype=np.float32)
    w = rng.standard_normal((SIZES["d"], SIZES["m"]), dtype=np.float32)
    out = np.zeros((SIZES["n"], SIZES["m"]), dtype=np.float32)
    ins = (ctypes.c_void_p * 2)(x.ctypes.data, w.ctypes.data)
    outs = (ctypes.c_void_p * 1)(out.ctypes.data)
    library.run(ins, outs, None)
    want = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6) @ w
    return np.allclose(out, want, rtol=1e-3, atol=1e-3 * np.abs(want).max())


def refused(path, words):
    with pytest.raises(prism.PrismError, match=words) as caught:
        _CpuLibrary(path, 1)
    assert f"cannot load the kernel library {path}" in str(caught.value)
    return str(caught.value)


def test_a_checked_library_loads_from_a_private_copy_that_is_gone_after_and_runs(built, tmp_path, fresh_loads):
    path = copy_of(built, tmp_path / "kernels")
    assert rms_runs(_CpuLibrary(path, built[1]), built[1])
    assert len(fresh_loads) == 1 and fresh_loads[0].startswith("/proc/self/fd/")
    assert sorted(os.listdir(tmp_path / "kernels")) == sorted([os.path.basename(path), os.path.basename(path) + ".sha256"])
    # A symlink to the directory is followed: the directory it leads to is what is checked.
    os.symlink(tmp_path / "kernels", tmp_path / "link")
    assert rms_runs(_CpuLibrary(str(tmp_path / "link" / os.path.basename(path)), built[1]), built[1])


def test_the_same_bytes_loaded_twice_are_one_handle(built, tmp_path, fresh_loads):
    a = _CpuLibrary(copy_of(built, tmp_path / "a"), 1)
    b = _CpuLibrary(copy_of(built, tmp_path / "b"), 1)
    assert a._lib is b._lib and a._lock is b._lock and len(fresh_loads) == 1


def test_a_directory_others_can_write_is_refused(built, tmp_path, fresh_loads):
    path = copy_of(built, tmp_path / "kernels")
    os.chmod(tmp_path / "kernels", 0o777)
    refused(path, r"the directory .*kernels is writable by other users \(mode 0777\)")
    assert fresh_loads == []


@as_root
def test_a_directory_of_another_user_is_refused(built, tmp_path, fresh_loads):
    path = copy_of(built, tmp_path / "kernels")
    os.chown(tmp_path / "kernels", NOBODY, NOBODY)
    refused(path, rf"the directory .*kernels belongs to another user \(uid {NOBODY}\)")
    assert fresh_loads == []


def test_a_symlink_in_place_of_the_library_is_refused(built, tmp_path, fresh_loads):
    good = copy_of(built, tmp_path / "good")
    path = copy_of(built, tmp_path / "kernels")
    os.unlink(path)
    os.symlink(good, path)
    refused(path, "cannot read .*: Too many levels of symbolic links")
    assert fresh_loads == []


@pytest.mark.parametrize("damage", ["truncated", "edited"])
def test_a_library_that_does_not_match_its_seal_is_refused(built, tmp_path, fresh_loads, damage):
    path = copy_of(built, tmp_path / "kernels")
    with open(path, "rb") as f:
        data = f.read()
    middle = len(data) // 2
    data = data[:middle] if damage == "truncated" else data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:]
    with open(path, "wb") as f:
        f.write(data)
    refused(path, "does not match its checksum: it was truncated or changed after prism wrote it")
    os.unlink(path + ".sha256")
    refused(path, r"has no checksum \(cannot read .*\.sha256: No such file or directory\)")
    assert fresh_loads == []


def test_a_fifo_in_place_of_the_library_is_refused_at_once(built, tmp_path, fresh_loads):
    path = copy_of(built, tmp_path / "kernels")
    os.unlink(path)
    os.mkfifo(path, 0o600)
    errors = []
    loading = threading.Thread(target=lambda: errors.append(pytest.raises(prism.PrismError, _CpuLibrary, path, 1)),
                               daemon=True)
    loading.start()
    loading.join(30)
    if loading.is_alive():  # release the open() that waits for a writer, then fail
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("loading waited on a FIFO")
    assert "is not a regular file (a FIFO)" in str(errors[0].value) and fresh_loads == []


@as_root
def test_a_cache_directory_swapped_after_the_reply_loads_nothing(built, tmp_path, fresh_loads):
    """Another user who owns a parent of the cache renames it aside once the daemon has named the
    library and puts a directory of theirs in its place, with a library of theirs (and its seal)
    under the same name: it is refused, and its code never runs."""
    library = built[0]
    cache = os.path.dirname(library)
    marker = tmp_path / "ran"
    source = tmp_path / "evil.c"
    source.write_text('#include <stdio.h>\n'
                      f'__attribute__((constructor)) static void run(void) {{ fclose(fopen("{marker}", "w")); }}\n'
                      'int prism_entry(const void* const* i, void* const* o, int t) { return 0; }\n'
                      'const char* prism_error(void) { return ""; }\n')
    attacker = tmp_path / "attacker"
    attacker.mkdir()
    evil = attacker / os.path.basename(library)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(evil), str(source)], check=True)
    (attacker / (evil.name + ".sha256")).write_text(hashlib.sha256(evil.read_bytes()).hexdigest() + "\n")
    for entry in [attacker, *attacker.iterdir()]:
        os.chown(entry, NOBODY, NOBODY)
    os.rename(cache, cache + ".aside")
    os.rename(attacker, cache)
    try:
        refused(library, rf"the directory {re.escape(cache)} belongs to another user \(uid {NOBODY}\)")
    finally:
        os.rename(cache, attacker)
        os.rename(cache + ".aside", cache)
    assert not marker.exists() and fresh_loads == []


def test_a_cuda_plan_is_read_only_through_the_same_checks(built, tmp_path):
    plans = tmp_path / "plans"
    plans.mkdir(mode=0o700)
    plan = plans / "malformed.plan"
    plan.write_bytes(b"kernel k\n")
    with pytest.raises(prism.PrismError, match=re.escape(f"cannot load the CUDA plan {plan}: {plan} has no checksum")):
        _CudaPlan(str(plan))
    (plans / "malformed.plan.sha256").write_text(hashlib.sha256(b"kernel k\n").hexdigest() + "\n")
    os.chmod(plans, 0o770)
    with pytest.raises(prism.PrismError, match="is writable by other users"):
        _CudaPlan(str(plan))
    os.chmod(plans, 0o700)
    # Checked, it reaches the plan library, which refuses a malformed plan in words.
    with pytest.raises(prism.PrismError, match=re.escape(f"cannot load the CUDA plan {plan}: ") + ".+"):
        _CudaPlan(str(plan))
