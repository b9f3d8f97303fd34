"""A private one-node Ray cluster for tests and benchmarks: the dashboard (the Jobs API)
on 127.0.0.1, free ports, its own temp dir; stopping it stops only its own processes
(never `ray stop`, which would stop every Ray process of the machine). Ray gives a node
this machine's own interface address, never loopback, so its internal traffic stays on
this machine without being on 127.0.0.1."""

from __future__ import annotations

import os
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def local_ray_cluster() -> Iterator[str]:
    """The address of a new one-node cluster (2 CPUs, 4 fake GPUs), stopped on exit."""
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
                cluster.wait(timeout=20)
                break
            except subprocess.TimeoutExpired:
                continue
        subprocess.run(["pkill", "-9", "-f", str(temp)], capture_output=True)
        log.close()
