"""A private one-node Ray cluster for tests and benchmarks: the dashboard (the Jobs API)
on 127.0.0.1, free ports, its own temp dir; stopping it stops only its own processes
(never `ray stop`, which would stop every Ray process of the machine). Ray gives a node
this machine's own interface address, never loopback, so its internal traffic stays on
this machine without being on 127.0.0.1."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

RAY = Path(sys.executable).with_name("ray")


def can_hide() -> bool:
    """Whether :func:`local_ray_cluster` can hide a directory (``unshare --mount`` works:
    root, or user namespaces)."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "true"], capture_output=True
    )
    return probe.returncode == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def local_ray_cluster(hidden: Path | None = None) -> Iterator[str]:
    """The address of a new one-node cluster (2 CPUs, 4 fake GPUs), stopped on exit.

    ``hidden``: a directory the cluster's processes see empty (a tmpfs mounted over it in
    their own mount namespace), as a node that lacks the submitter's filesystem would.
    """
    from ray.job_submission import JobSubmissionClient

    temp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # socket paths must stay short
    dashboard = free_port()
    ports = {
        "--port": free_port(),
        "--dashboard-port": dashboard,
        "--node-manager-port": free_port(),
        "--object-manager-port": free_port(),
        "--dashboard-agent-listen-port": free_port(),
        "--dashboard-agent-grpc-port": free_port(),
        "--runtime-env-agent-port": free_port(),
        "--metrics-export-port": free_port(),
        "--ray-client-server-port": free_port(),
    }
    argv = [str(RAY), "start", "--head", "--block", "--dashboard-host", "127.0.0.1"]
    argv += [f"{k}={v}" for k, v in ports.items()]
    argv += ["--num-cpus=2", "--num-gpus=4", f"--temp-dir={temp}", "--disable-usage-stats"]
    if hidden is not None:
        mount = 'mount -t tmpfs tmpfs "$0" && exec "$@"'
        argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount,
                str(hidden), *argv]  # fmt: skip
    log = open(temp / "start.log", "wb")  # noqa: SIM115
    cluster = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    address = f"http://127.0.0.1:{dashboard}"
    deadline = time.monotonic() + 240
    try:
        while True:
            try:
                JobSubmissionClient(address).list_jobs()
                break
            except Exception:
                if time.monotonic() > deadline or cluster.poll() is not None:
                    raise RuntimeError((temp / "start.log").read_text()[-2000:]) from None
                time.sleep(1.0)
        yield address
    finally:
        # Only this cluster: its session's processes, and any that left it but run from
        # its temp dir.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(cluster.pid, sig)
            except ProcessLookupError:
                break
            try:
                cluster.wait(timeout=5)  # it outlasted 20 s of SIGTERM here: then SIGKILL
                break
            except subprocess.TimeoutExpired:
                continue
        subprocess.run(["pkill", "-9", "-f", str(temp)], capture_output=True)
        log.close()


def ray_workspace(path: Path, address: str, **script: object) -> Path:
    """A two-stage fake-trainer workspace whose trainings go to the cluster at ``address``."""
    from fakes.workspace import fake_env, make_workspace

    ws = make_workspace(path, stages=["score", "defend"], trainer_script=script or None)
    # A job does not inherit the submitter's environment: pass the fake trainer's own.
    table = "\n".join(f"{k} = {json.dumps(v)}" for k, v in fake_env(ws).items())
    with open(ws / "stages.toml", "a") as fh:
        fh.write(f'\n[launcher]\nkind = "ray"\naddress = "{address}"\nnum_gpus = 1\n')
        fh.write(f"\n[launcher.env]\n{table}\n")
    return ws


def submission_ids(address: str) -> list[str]:
    """The ids of every job submitted to the cluster, in submission order."""
    from ray.job_submission import JobSubmissionClient

    return [
        str(j.submission_id) for j in JobSubmissionClient(address).list_jobs() if j.submission_id
    ]
