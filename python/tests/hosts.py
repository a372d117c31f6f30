"""Hosts on one machine, for prism.batch across hosts (issue 67): each a network namespace with an
address of its own on a bridge in the test's namespace, its own HOME, state, cache and runtime
directories (so its own prismd and tuning DB), and programs started in it as a user would start
them on a host of that address. Nothing on disk is shared between hosts but the build and the
Python environment, which every host of a fleet has installed.

Making namespaces needs CAP_NET_ADMIN (root, or a CI container that grants it): `Hosts.available()`
says why not where it cannot, and the tests skip with those words.
"""
import itertools
import os
import shutil
import signal
import subprocess
import sys

_IP = shutil.which("ip") or "/usr/sbin/ip"
_NSENTER = shutil.which("nsenter") or "/usr/bin/nsenter"


def _run(*argv, check=True):
    return subprocess.run([_IP, *argv], capture_output=True, text=True, check=check)


class Hosts:
    """`count` hosts named h0, h1 … at 10.N.0.10, .11 …; the test's namespace reaches them at
    10.N.0.1 over a bridge. `root`: a directory of the test's, under which each host's home is."""

    _made = itertools.count()

    def __init__(self, root, count):
        serial = next(Hosts._made)  # several sets in one process each have names of their own
        tag = f"{os.getpid() % 10000}{serial % 10}"
        self.subnet = f"10.{100 + (os.getpid() + serial) % 150}.0"
        self.bridge = f"pb{tag}"
        self.names = [f"prism-{tag}-h{i}" for i in range(count)]
        self.links = [f"pv{tag}h{i}" for i in range(count)]  # each host's link, the bridge's side
        self.homes = [os.path.join(str(root), f"h{i}") for i in range(count)]
        self.processes = []
        self.made = []

    @staticmethod
    def available():
        """"" where namespaces can be made here, else why not."""
        if not os.path.exists(_IP):
            return "no `ip` command (iproute2)"
        probe = f"prism-probe-{os.getpid()}"
        made = _run("netns", "add", probe, check=False)
        if made.returncode != 0:
            return "cannot make a network namespace here (it needs CAP_NET_ADMIN): " + made.stderr.strip()
        _run("netns", "del", probe, check=False)
        return ""

    def address(self, i):
        return f"{self.subnet}.{10 + i}"

    def start(self):
        _run("link", "add", self.bridge, "type", "bridge")
        self.made.append(("link", self.bridge))
        _run("addr", "add", f"{self.subnet}.1/24", "dev", self.bridge)
        _run("link", "set", self.bridge, "up")
        for i, (name, link) in enumerate(zip(self.names, self.links)):
            _run("netns", "add", name)
            self.made.append(("netns", name))
            _run("link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", name)
            _run("link", "set", link, "master", self.bridge)
            _run("link", "set", link, "up")
            _run("netns", "exec", name, _IP, "addr", "add", f"{self.address(i)}/24", "dev", "eth0")
            _run("netns", "exec", name, _IP, "link", "set", "eth0", "up")
            _run("netns", "exec", name, _IP, "link", "set", "lo", "up")
            # A default route, as a host has: programs that find their own address by the route
            # out (Dask's scheduler without --host) find the host's, not 127.0.0.1.
            _run("netns", "exec", name, _IP, "route", "add", "default", "via", f"{self.subnet}.1")
            for sub in ("state", "cache", "runtime"):
                os.makedirs(os.path.join(self.homes[i], sub), mode=0o700, exist_ok=True)
        return self

    def env(self, i, extra=None):
        """Host i's environment: its own HOME and XDG directories, no PRISM_SOCKET or cache from
        the test's (its prismd is the default one of its runtime directory)."""
        env = {k: v for k, v in os.environ.items() if k not in ("PRISM_SOCKET", "PRISM_CACHE_DIR", "PRISM_CPU_DESCRIPTION")}
        home = self.homes[i]
        env.update(HOME=home, XDG_STATE_HOME=os.path.join(home, "state"), XDG_CACHE_HOME=os.path.join(home, "cache"),
                   XDG_RUNTIME_DIR=os.path.join(home, "runtime"), PRISM_IDLE_EXIT="600")
        env.update(extra or {})
        return env

    def spawn(self, i, argv, extra_env=None, log=None, host_sys=False):
        """A program started on host i (in its namespace, as its user would start it there).
        `ip netns exec` mounts a /sys of the namespace's own, without cgroups; `host_sys` enters
        the network namespace alone (nsenter), for a program that needs the machine's cgroups
        (slurmd)."""
        out = open(log, "w") if log else subprocess.DEVNULL
        enter = [_NSENTER, f"--net=/run/netns/{self.names[i]}"] if host_sys else [_IP, "netns", "exec", self.names[i]]
        p = subprocess.Popen([*enter, *argv], env=self.env(i, extra_env), stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True)
        p.host = i
        self.processes.append(p)
        return p

    def run(self, i, argv, extra_env=None, timeout=60):
        """A command run to its end on host i, its output captured."""
        return subprocess.run([_IP, "netns", "exec", self.names[i], *argv], env=self.env(i, extra_env), capture_output=True,
                              text=True, timeout=timeout)

    def kill(self, i):
        """Every program started on host i dies of SIGKILL (its prismd, started by them, stays)."""
        for p in self.processes:
            if p.host == i and p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)

    def cut(self, i):
        """Host i's link goes down: it is cut off from every other host."""
        _run("link", "set", self.links[i], "down")

    def stop_daemons(self):
        """Stops each host's prismd (started by the first job it ran), as its user would."""
        from prism.client import find_prism_binary

        for i, name in enumerate(self.names):
            subprocess.run([_IP, "netns", "exec", name, find_prism_binary(), "--no-start", "-c", "daemon stop"], env=self.env(i),
                           capture_output=True, timeout=60)

    def close(self):
        self.stop_daemons()
        for p in self.processes:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        for kind, name in reversed(self.made):
            _run(kind, "del", name, check=False)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc):
        self.close()


def copy_cpu_description(cache_home, source=None):
    """A host's own copy of the CPU description `source` (default: the test's
    PRISM_CPU_DESCRIPTION, where it exists) in its cache directory `cache_home` (its
    XDG_CACHE_HOME): a fleet of identical nodes shares one measurement."""
    source = source or os.environ.get("PRISM_CPU_DESCRIPTION", "")
    if os.path.exists(source):
        os.makedirs(os.path.join(cache_home, "prism"), mode=0o700, exist_ok=True)
        shutil.copy(source, os.path.join(cache_home, "prism", "cpu-target.txt"))


def dask_command(tool):
    """`dask scheduler` / `dask worker` from this Python's environment, as the docs start them."""
    return [os.path.join(os.path.dirname(sys.executable), "dask"), tool]

