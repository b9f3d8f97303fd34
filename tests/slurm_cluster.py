"""A private one-node Slurm cluster for tests and benchmarks: munged, slurmctld and slurmd
run as root with every file in one temp dir (config, state, spool, logs, munge key and
socket, fake GPU device files), on free ports; stopping it stops only its own processes,
by pid. Clients find it through ``SLURM_CONF`` (:meth:`SlurmCluster.env`).

Needs Debian 12's ``slurmctld slurmd slurm-client munge`` (scripts/install_slurm.sh, which
scripts/test.sh runs, installs them as root) and root (slurmd runs jobs as their users);
:func:`cluster_problem` says why a test must skip (in CI it fails instead). Scheduler
delays are lowered so a job starts within about a second; a requeued job waits
``cred_expire`` + 1 s (set low here).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

NODE = "cosmic1"
PARTITION = "debug"
SHORT = "short"  # a one-minute limit
DOWN = "broken"  # its one node is down
DOWN_NODE = "cosmic9"
GPUS = 4
CPUS = 8  # more than the machine's: config_overrides lets the node declare them
READY_SECONDS = 60.0
COMMAND_SECONDS = 20.0
DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol")


@dataclass(frozen=True)
class SlurmCluster:
    """A running cluster: its temp dir, config file and job-completion log."""

    root: Path
    conf: Path
    jobcomp: Path

    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str) -> str:
        """A Slurm client command's stdout against this cluster (raises on failure)."""
        done = subprocess.run(
            list(argv), env=self.env(), capture_output=True, text=True, timeout=COMMAND_SECONDS
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")
        return done.stdout

    def job_names(self) -> list[str]:
        """The names of every job the cluster ran or runs (squeue for live ones and the
        job-completion log for finished ones), one per job id."""
        names: dict[str, str] = {}
        for line in self.run("squeue", "-h", "-t", "all", "-o", "%i|%j").splitlines():
            job, _, name = line.partition("|")
            names[job] = name
        if self.jobcomp.exists():
            for line in self.jobcomp.read_text().splitlines():
                fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
                if "JobId" in fields:
                    names.setdefault(fields["JobId"], fields.get("Name", ""))
        return list(names.values())


def cluster_problem() -> str | None:
    """Why this machine cannot start the cluster (then tests skip), else None."""
    missing = [d for d in DAEMONS if shutil.which(d) is None]
    if missing:
        return f"needs {', '.join(missing)} (scripts/install_slurm.sh installs Slurm as root)"
    if os.geteuid() != 0:
        return "slurmd runs jobs as their users: needs root"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _write_config(root: Path) -> Path:
    munge = root / "munge"
    for d in ("state", "spool", "dev", "log"):
        (root / d).mkdir()
    munge.mkdir(mode=0o755)
    munge.chmod(0o755)  # munged refuses a socket directory that is not world-executable
    for n in range(GPUS):  # fake GPUs: gres needs device files (NVIDIA's major number)
        subprocess.run(["mknod", str(root / "dev" / f"nvidia{n}"), "c", "195", str(n)], check=True)
    (root / "gres.conf").write_text(
        f"NodeName={NODE} Name=gpu File={root}/dev/nvidia[0-{GPUS - 1}]\n"
    )
    lines = {
        "ClusterName": "cosmic",
        "SlurmctldHost": f"{socket.gethostname()}(127.0.0.1)",
        "SlurmctldPort": _free_port(),
        "SlurmdPort": _free_port(),
        "SrunPortRange": f"{_free_port()}-{_free_port()}",
        "AuthType": "auth/munge",
        "CredType": "cred/munge",
        "AuthInfo": f"socket={munge}/munge.socket.2,cred_expire=5",
        "SlurmUser": "root",
        "SlurmdUser": "root",
        "StateSaveLocation": root / "state",
        "SlurmdSpoolDir": root / "spool",
        "SlurmctldPidFile": root / "slurmctld.pid",
        "SlurmdPidFile": root / "slurmd.pid",
        "SlurmctldLogFile": root / "log" / "slurmctld.log",
        "SlurmdLogFile": root / "log" / "slurmd.log",
        "ProctrackType": "proctrack/linuxproc",  # nothing under /sys/fs/cgroup
        "TaskPlugin": "task/none",
        "MpiDefault": "none",
        "SchedulerType": "sched/backfill",
        "SchedulerParameters": "batch_sched_delay=0,sched_interval=1,bf_interval=1",
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_Core",
        "GresTypes": "gpu",
        "MinJobAge": 300,
        "KillWait": 5,
        "JobCompType": "jobcomp/filetxt",
        "JobCompLoc": root / "jobcomp.txt",
        "AccountingStorageType": "accounting_storage/none",
        "JobAcctGatherType": "jobacct_gather/none",
        "SlurmdParameters": "config_overrides",
        "ReturnToService": 2,
        "InactiveLimit": 0,
    }
    text = "".join(f"{k}={v}\n" for k, v in lines.items())
    text += (
        f"NodeName={NODE} NodeHostname={socket.gethostname()} NodeAddr=127.0.0.1 "
        f"CPUs={CPUS} RealMemory=4000 Gres=gpu:{GPUS} State=UNKNOWN\n"
        f"PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP\n"
        # A job asking for more than a minute here waits forever (PartitionTimeLimit).
        f"PartitionName={SHORT} Nodes={NODE} MaxTime=1 State=UP\n"
        # A node no slurmd serves (a port nothing listens on), DOWN: its partition's jobs
        # never start.
        f"NodeName={DOWN_NODE} NodeHostname=nowhere NodeAddr=127.0.0.1 Port={_free_port()} "
        "CPUs=1 State=DOWN\n"
        f"PartitionName={DOWN} Nodes={DOWN_NODE} MaxTime=INFINITE State=UP\n"
    )
    conf = root / "slurm.conf"
    conf.write_text(text)
    return conf


def _start_munged(root: Path) -> None:
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    subprocess.run(
        [
            "munged", "--force", f"--socket={root}/munge/munge.socket.2",
            f"--key-file={key}", f"--pid-file={root}/munge/munged.pid",
            f"--log-file={root}/log/munged.log", f"--seed-file={root}/munge/seed",
        ],
        check=True, capture_output=True, timeout=COMMAND_SECONDS,
    )  # fmt: skip


def _wait_ready(cluster: SlurmCluster) -> None:
    """Until the node is idle and a job has run to its end."""
    deadline = time.monotonic() + READY_SECONDS
    job = ""
    while time.monotonic() < deadline:
        try:
            if not job:
                job = cluster.run("sbatch", "--parsable", "-J", "ready-probe",
                                  "-o", "/dev/null", "--wrap", "true").strip()  # fmt: skip
            state = cluster.run("squeue", "-h", "-t", "all", "-j", job, "-o", "%T").strip()
            if state == "COMPLETED":
                return
        except (RuntimeError, subprocess.TimeoutExpired):
            pass
        time.sleep(0.3)
    logs = (cluster.root / "log" / "slurmctld.log").read_text(errors="replace")[-2000:]
    raise RuntimeError(f"the test Slurm cluster ran no job in {READY_SECONDS:g} s: {logs}")


def _pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _stop(root: Path) -> None:
    """Its own daemons, by the pids they wrote (slurmd's job steps first, with it)."""
    for name in ("slurmd.pid", "slurmctld.pid", "munge/munged.pid"):
        pid = _pid(root / name)
        if pid is None:
            continue
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
                time.sleep(0.1)
            if not Path(f"/proc/{pid}").exists():
                break


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """One cluster for the session (each xdist worker its own). Without Slurm it skips,
    except in CI (``CI=true``), where the Slurm tests must run: there it fails."""
    problem = cluster_problem()
    if problem and os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(f"CI=true but the Slurm test cluster cannot start: {problem}")
    if problem:
        pytest.skip(problem)
    with local_slurm_cluster() as cluster:
        yield cluster


@contextmanager
def local_slurm_cluster() -> Iterator[SlurmCluster]:
    """A new one-node cluster (partition ``debug``, 8 CPUs, 4 fake GPUs), stopped on exit."""
    root = Path(tempfile.mkdtemp(prefix="slurm", dir="/tmp"))  # socket paths stay short
    root.chmod(0o755)
    cluster = SlurmCluster(root, _write_config(root), root / "jobcomp.txt")
    env = cluster.env()
    try:
        _start_munged(root)
        for daemon in (["slurmctld", "-i"], ["slurmd", "-N", NODE]):
            subprocess.run(daemon, env=env, check=True, capture_output=True, timeout=30)
        _wait_ready(cluster)
        yield cluster
    finally:
        _stop(root)
        shutil.rmtree(root, ignore_errors=True)


def slurm_workspace(
    path: Path, cluster: SlurmCluster, launcher: str = 'gres = "gpu:1"\n', **script: object
) -> Path:
    """A two-stage fake-trainer workspace whose trainings are jobs on ``cluster`` (in
    partition ``debug`` unless ``launcher``, the [launcher] table's keys, names one)."""
    from fakes.workspace import make_workspace

    ws = make_workspace(path, stages=["score", "defend"], trainer_script=script or None)
    if "partition" not in launcher:
        launcher = f'partition = "{PARTITION}"\n{launcher}'
    with open(ws / "stages.toml", "a") as fh:
        fh.write(f'\n[launcher]\nkind = "slurm"\n{launcher}')
    return ws
