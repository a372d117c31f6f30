"""A Slurm cluster on hosts made by hosts.py (issue 67): Debian's slurmctld on the first host (the
login node), a slurmd on each of the others (its compute nodes), and on every host a munged with
the cluster's one key, as an administrator sets them up; each daemon runs as root in the
foreground, its state and logs under the test's directory. Nothing in /etc is touched: every
daemon reads its own copy of slurm.conf, which differs between hosts only in where that host's
munged listens (the hosts share one file system; on a cluster each node has its own /run/munge).

`SlurmCluster.available()` says why not where Debian's slurmctld, slurmd, srun or munged is
missing (`scripts/setup.sh` installs them).
"""
import os
import shutil
import subprocess
import time

_PROGRAMS = ("slurmctld", "slurmd", "srun", "sinfo", "squeue", "scancel", "munged", "mungekey")


def _which(name):
    return shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.path.exists(p)), None)


class SlurmCluster:
    """Slurm on `hosts` (started): the controller on host 0, compute nodes node1, node2 … on
    hosts 1, 2 …, each with `cpus` CPUs (no more than any machine has: slurmd drains a node
    that has fewer than its slurm.conf says), in one partition `batch`. `root`: a directory of the
    test's for the cluster's files."""

    def __init__(self, hosts, root, cpus=1):
        self.hosts = hosts
        self.root = str(root)
        self.cpus = cpus
        self.nodes = [f"node{i}" for i in range(1, len(hosts.names))]
        port = 17000 + 2 * (os.getpid() % 500)
        self.ports = (port, port + 1)  # slurmctld's, slurmd's

    @staticmethod
    def available():
        """"" where Debian's Slurm and munge are installed, else what is missing."""
        missing = [p for p in _PROGRAMS if not _which(p)]
        return f"Slurm or munge is not installed ({', '.join(missing)} missing; scripts/setup.sh installs them)" if missing else ""

    def dir(self, i):
        return os.path.join(self.root, f"h{i}")

    def conf(self, i):
        """The slurm.conf host i's daemons and commands read."""
        return os.path.join(self.dir(i), "slurm.conf")

    def env(self, i):
        """What a user's shell on host i has: SLURM_CONF naming its slurm.conf."""
        return {"SLURM_CONF": self.conf(i)}

    def start(self):
        key = os.path.join(self.root, "munge.key")
        os.makedirs(self.root, exist_ok=True)
        subprocess.run([_which("mungekey"), "--create", "--keyfile", key], check=True, capture_output=True)
        for i in range(len(self.hosts.names)):
            self._start_munge(i, key)
        self._start(0, [_which("slurmctld"), "-D", "-f", self.conf(0)], "slurmctld")
        for i, node in enumerate(self.nodes, start=1):
            self._start(i, [_which("slurmd"), "-D", "-N", node, "-f", self.conf(i)], "slurmd", host_sys=True)
        self._wait_until_idle()
        return self

    def _start_munge(self, i, key):
        d = os.path.join(self.dir(i), "munge")
        os.makedirs(d, mode=0o700, exist_ok=True)
        for sub in ("state", "spool"):
            os.makedirs(os.path.join(self.dir(i), sub), mode=0o700, exist_ok=True)
        with open(self.conf(i), "w") as f:
            f.write(self._conf_text(i))
        # --force: munged refuses to run as root, or with a socket in a directory others cannot
        # enter, unless forced; neither matters here.
        self._start(i, [_which("munged"), "--foreground", "--force", f"--socket={d}/munge.socket.2", f"--key-file={key}",
                        f"--pid-file={d}/munged.pid", f"--seed-file={d}/munged.seed", f"--log-file={d}/munged.log"], "munged")
        for _ in range(100):
            if os.path.exists(f"{d}/munge.socket.2"):
                return
            time.sleep(0.05)
        raise RuntimeError(f"munged on h{i} did not start: see {self.dir(i)}/munged.out")

    def _start(self, i, argv, name, host_sys=False):
        # slurmd initializes its cgroup plugin even where nothing uses it: it needs the machine's.
        self.hosts.spawn(i, argv, extra_env=self.env(i), log=os.path.join(self.dir(i), f"{name}.out"), host_sys=host_sys)

    def _conf_text(self, i):
        d = self.dir(i)
        nodes = "\n".join(f"NodeName={node} NodeAddr={self.hosts.address(k)} CPUs={self.cpus} State=UNKNOWN"
                          for k, node in enumerate(self.nodes, start=1))
        return f"""ClusterName=prism
SlurmctldHost=localhost({self.hosts.address(0)})
SlurmctldPort={self.ports[0]}
SlurmdPort={self.ports[1]}
AuthType=auth/munge
AuthInfo=socket={d}/munge/munge.socket.2
CredType=cred/munge
DebugFlags=NO_CONF_HASH
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
{nodes}
PartitionName=batch Nodes={",".join(self.nodes)} Default=YES MaxTime=INFINITE State=UP
"""

    def close(self, seconds=30):
        """Cancels every job and waits for them to end while slurmd still runs (a job step whose
        slurmd is gone never ends); the hosts then stop the daemons."""
        self.run(0, [_which("scancel"), "--user", str(os.getuid())])
        deadline = time.time() + seconds
        while time.time() < deadline and self.run(0, [_which("squeue"), "--noheader"]).stdout.strip():
            time.sleep(0.2)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    def run(self, i, argv, timeout=60):
        """A Slurm command (sinfo, squeue, scancel …) run on host i as its user would."""
        return self.hosts.run(i, argv, self.env(i), timeout)

    def _wait_until_idle(self, seconds=60):
        deadline = time.time() + seconds
        states = ""
        while time.time() < deadline:
            states = self.run(0, [_which("sinfo"), "--noheader", "--Node", "--format=%N %t"]).stdout
            if states and all(f"{node} idle" in states for node in self.nodes):
                return
            time.sleep(0.2)
        raise RuntimeError(f"Slurm's nodes did not come up in {seconds} s (sinfo: {states.strip() or 'nothing'}); logs in {self.root}")
