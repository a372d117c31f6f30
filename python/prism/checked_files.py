"""Files from the daemon's cache that this process loads: kernel libraries and CUDA plans (issue 61).

They are checked as the daemon checks its own before it loads them (engine/util/private_dir.h,
engine/util/sealed_file.h, engine/backend/cpu/compiler.cpp's LoadedLibrary): the file's directory
is opened and held, it must be this user's and writable by nobody else; the file and its
`<name>.sha256` seal are read through that descriptor, never through a symlink, and must be
regular files of this user's; the bytes must match the seal. A library is then loaded from a
private copy of exactly those bytes, made in that same directory and named through its descriptor:
what runs is what was checked, whatever another user renames around the directory meanwhile.
"""
import ctypes
import hashlib
import itertools
import os
import stat
import threading

from .errors import PrismError

MAX_LIBRARY_BYTES = 256 << 20
MAX_SEAL_BYTES = 256
_COPIES = itertools.count()
# One handle per library content: loading the same bytes again returns the handle they have.
_LOADED = {}
_LOADED_LOCK = threading.Lock()


def unsafe_dir_reason(directory, uid, mode):
    """Why a directory of this owner and mode is not private, in the daemon's words; "" when it is."""
    if uid != os.geteuid():
        return (f"the directory {directory} belongs to another user (uid {uid}); "
                "prism keeps its files only in directories of its own user")
    if mode & 0o022:
        return (f"the directory {directory} is writable by other users (mode {mode & 0o7777:04o}), so what is "
                "in it cannot be trusted; remove it or `chmod 700` it after checking its contents")
    return ""


def open_private_dir(directory):
    """A descriptor of `directory` (a symlink to it followed: the directory reached is what is
    checked), after checking it is this user's and writable by nobody else. Raises PrismError."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except NotADirectoryError:
        raise PrismError(None, f"{directory} is not a directory") from None
    except OSError as e:
        raise PrismError(None, f"cannot open the directory {directory}: {e.strerror}") from None
    st = os.fstat(fd)
    problem = unsafe_dir_reason(directory, st.st_uid, st.st_mode)
    if problem:
        os.close(fd)
        raise PrismError(None, problem)
    return fd


def _not_regular_reason(path, mode):
    kinds = ((stat.S_ISFIFO, " (a FIFO)"), (stat.S_ISDIR, " (a directory)"), (stat.S_ISCHR, " (a device)"),
             (stat.S_ISBLK, " (a device)"), (stat.S_ISSOCK, " (a socket)"))
    return f"{path} is not a regular file" + next((words for test, words in kinds if test(mode)), "")


def read_private_file(dir_fd, directory, name, max_bytes):
    """The bytes of `name` in the directory open at `dir_fd`: a regular file (never a symlink;
    a FIFO is refused without waiting for a writer) of this user's that others cannot write, of at
    most `max_bytes`. Raises PrismError."""
    path = os.path.join(directory, name)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as e:
        raise PrismError(None, f"cannot read {path}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise PrismError(None, _not_regular_reason(path, st.st_mode))
        if st.st_uid != os.geteuid():
            raise PrismError(None, f"{path} belongs to another user (uid {st.st_uid})")
        if st.st_mode & 0o022:
            raise PrismError(None, f"{path} is writable by other users (mode {st.st_mode & 0o7777:04o})")
        if st.st_size > max_bytes:
            raise PrismError(None, f"{path} is {st.st_size} bytes, more than the limit of {max_bytes}")
        return _read_up_to(fd, path, max_bytes)
    finally:
        os.close(fd)


def _read_up_to(fd, path, max_bytes):
    """What the file holds when read to its end; it may have grown since fstat, not past the limit."""
    chunks, size = [], 0
    while True:
        try:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
        except OSError as e:
            raise PrismError(None, f"cannot read {path}: {e.strerror}") from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            raise PrismError(None, f"{path} grew past the limit of {max_bytes} bytes while it was read")


def read_sealed_file(dir_fd, directory, name, max_bytes):
    """The bytes of `name` when they match the SHA-256 its seal `<name>.sha256` records (the daemon
    writes it with the file). Raises PrismError when either is unsafe, the seal is missing, or the
    bytes do not match."""
    data = read_private_file(dir_fd, directory, name, max_bytes)
    path = os.path.join(directory, name)
    try:
        seal = read_private_file(dir_fd, directory, name + ".sha256", MAX_SEAL_BYTES)
    except PrismError as e:
        raise PrismError(None, f"{path} has no checksum ({e})") from None
    if seal[:64].decode("ascii", "replace") != hashlib.sha256(data).hexdigest():
        raise PrismError(None, f"{path} does not match its checksum: it was truncated or changed after prism wrote it")
    return data


def read_checked(path, max_bytes=MAX_LIBRARY_BYTES):
    """(bytes, dir_fd): the file at `path` read through its directory's descriptor after every
    check above, and that descriptor, still open: the caller closes it. Raises PrismError."""
    directory, name = os.path.split(os.path.abspath(path))
    dir_fd = open_private_dir(directory)
    try:
        return read_sealed_file(dir_fd, directory, name, max_bytes), dir_fd
    except BaseException:
        os.close(dir_fd)
        raise


def read_checked_bytes(path, max_bytes=MAX_LIBRARY_BYTES):
    """The file at `path`'s bytes, checked as read_checked checks them."""
    data, dir_fd = read_checked(path, max_bytes)
    os.close(dir_fd)
    return data


def load_library(path):
    """The kernel library at `path` loaded into this process (a ctypes.CDLL), from a private copy
    of the bytes read_checked checked, in the same directory under a name used once and opened by
    a path through the directory's descriptor; the copy is removed once loaded. Not a memfd: the
    loader would take a reused /proc/self/fd/N name for the library loaded under it before. Raises
    PrismError, which names the library and why."""
    try:
        data, dir_fd = read_checked(path, MAX_LIBRARY_BYTES)
        try:
            digest = hashlib.sha256(data).hexdigest()
            with _LOADED_LOCK:
                if digest not in _LOADED:
                    _LOADED[digest] = _load_copy(dir_fd, path, data)
                return _LOADED[digest]
        finally:
            os.close(dir_fd)
    except PrismError as e:
        raise PrismError(None, f"cannot load the kernel library {path}: {e}") from None


def _load_copy(dir_fd, path, data):
    """`data` written to a new file in the directory at `dir_fd` (O_EXCL, never through a symlink),
    loaded by its /proc/self/fd path, then unlinked: the mapping keeps it."""
    copy = f"{os.path.basename(path)}.tmp.{os.getpid()}.{next(_COPIES)}.so"
    try:
        fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    except OSError as e:
        raise PrismError(None, f"cannot create its copy {copy}: {e.strerror}") from None
    try:
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        except OSError as e:
            raise PrismError(None, f"cannot write its copy {copy}: {e.strerror}") from None
        try:
            return ctypes.CDLL(f"/proc/self/fd/{dir_fd}/{copy}")
        except OSError as e:
            raise PrismError(None, str(e)) from None
    finally:
        os.unlink(copy, dir_fd=dir_fd)
