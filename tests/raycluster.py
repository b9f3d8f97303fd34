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
from typing import IO, Any

RAY = Path(sys.executable).with_name("ray")
# How long a test waits for the cluster's dashboard to answer again (a loaded machine
# makes it drop connections for a moment) and for a new cluster to run a first job.
ANSWER_SECONDS = 60.0
READY_SECONDS = 240.0
START_ATTEMPTS = 3


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
    A cluster that is not ready in READY_SECONDS (on a loaded machine Ray's dashboard can
    fail to start its modules) is stopped and another started, START_ATTEMPTS in all.
    """
    why = ""
    for _ in range(START_ATTEMPTS):
        cluster, temp, log = _start(hidden)
        try:
            why = _wait_until_it_runs_a_job(cluster, temp / "start.log")
        except BaseException:
            _stop(cluster, temp, log)
            raise
        if why:
            _stop(cluster, temp, log)
            continue
        try:
            yield _address(temp)
        finally:
            _stop(cluster, temp, log)
        return
    raise RuntimeError(f"no Ray cluster was ready in {START_ATTEMPTS} starts: {why}")


def _address(temp: Path) -> str:
    return (temp / "address").read_text()


def _start(hidden: Path | None) -> tuple[subprocess.Popen[bytes], Path, IO[bytes]]:
    temp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # socket paths must stay short
    dashboard = free_port()
    (temp / "address").write_text(f"http://127.0.0.1:{dashboard}")
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
    # Ray gives each dashboard module 30 s to start, which a loaded machine exceeds.
    env = {**os.environ, "RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT": "180"}
    log = open(temp / "start.log", "wb")  # noqa: SIM115
    cluster = subprocess.Popen(
        argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env
    )
    return cluster, temp, log


def _stop(cluster: subprocess.Popen[bytes], temp: Path, log: IO[bytes]) -> None:
    """Only this cluster: its session's processes, and any that left it but run from its
    temp dir."""
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
    shutil.rmtree(temp, ignore_errors=True)  # its session's logs and sockets: no leftovers


def _wait_until_it_runs_a_job(cluster: subprocess.Popen[bytes], log: Path) -> str:
    """ "" when the cluster is ready, else why not. Ready means a job ran to the end: the
    dashboard answering is not enough (its job agent on the node comes later, and a
    loaded machine delays it by seconds)."""
    from ray.job_submission import JobSubmissionClient

    address = log.with_name("address").read_text()
    deadline = time.monotonic() + READY_SECONDS
    submitted: str | None = None
    while True:
        try:
            client = JobSubmissionClient(address)
            if submitted is None:
                submitted = client.submit_job(entrypoint="true", submission_id="ready-probe")
            status = str(getattr(client.get_job_status(submitted), "value", ""))
            if status == "SUCCEEDED":
                return ""
            if status in ("FAILED", "STOPPED"):
                return f"its first job ended {status}"
        except Exception:  # not answering yet, or dropped the connection
            pass
        text = log.read_text(errors="replace")
        if "failed to start" in text or cluster.poll() is not None:
            return text[-2000:]  # its dashboard (or the cluster) gave up
        if time.monotonic() > deadline:
            return f"not ready after {READY_SECONDS:g} s: {text[-2000:]}"
        time.sleep(0.5)


def list_jobs(address: str) -> list[Any]:
    """Every job of the cluster; a dashboard that drops connections under load is asked
    again for up to ANSWER_SECONDS (then its error stands)."""
    from ray.job_submission import JobSubmissionClient

    deadline = time.monotonic() + ANSWER_SECONDS
    while True:
        try:
            return list(JobSubmissionClient(address).list_jobs())
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)


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
    return [str(j.submission_id) for j in list_jobs(address) if j.submission_id]
