"""The ``ray`` launcher: each training is a Ray Job on a cluster (`[launcher] kind = "ray"`).

A job outlives the process that submitted it, which is what a kill -9-safe curriculum
wants: the submission id (``LaunchSpec.launch_id``) is derived from the attempt and saved
before the job is submitted, so a resumed run finds the same job (`attach`) and follows
it, adopts its result, or reports its failure; one id is never submitted twice. The job's
entrypoint is the local launcher's argv (``shlex.join``, never a shell string built from
config) after a ``cd`` into the workspace: a job's working directory is not the
submitter's, and the workspace must be on a filesystem every node sees
(:meth:`RayLauncher.check` proves it before any GPU time). The job's
output is copied into the attempt's log as it comes.

Ray's Jobs API runs any command for whoever reaches the dashboard port: keep it on
localhost or behind an SSH tunnel or Ray's token authentication (docs/SCALING.md).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from cosmic_curriculum.defaults import RAY_DASHBOARD_ADDRESS
from cosmic_curriculum.launchers import (
    DEFAULT_GRACE_SECONDS,
    Handle,
    LaunchError,
    LaunchSpec,
    TrainerRecord,
)
from cosmic_curriculum.system.python import python_argv
from cosmic_curriculum.workspace.config import LauncherConfig
from cosmic_curriculum.workspace.config_checks import dashboard_address_problem

PROBE_SECONDS = 120.0
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
# A call whose connection is refused or dropped is tried this often, RETRY_SECONDS x 2^n
# apart (0.5, 1, 2 s): a dashboard under load drops connections for a moment.
CALL_ATTEMPTS = 4
RETRY_SECONDS = 0.5
LOG_POLL_SECONDS = 1.0  # the Jobs API returns the whole log: fetch it at most this often
HEADER_RE = re.compile(r"^# \d{4}-\d\d-\d\dT.*\n", re.MULTILINE)


class RayJob:
    """A training submitted as a Ray Job; ``written`` counts log characters copied."""

    def __init__(self, spec_log: Path, launch_id: str, tag: str) -> None:
        self.log_path = spec_log
        self.launch_id = launch_id
        self.tag = tag
        self.written = 0
        self.partial = ""
        self.fetched_at = 0.0
        self.message = ""  # how Ray says the job ended: "<error_type>: <message>"

    def record(self) -> TrainerRecord:
        return TrainerRecord(None, None, None, self.tag, self.launch_id)


class RayLauncher:
    """Submit, follow, stop and find again trainings that run as Ray Jobs."""

    def __init__(self, config: LauncherConfig) -> None:
        self.config = config
        self.address = config.address or os.environ.get("RAY_ADDRESS") or RAY_DASHBOARD_ADDRESS
        self._client: Any = None

    # -- the launcher protocol -------------------------------------------------------

    def start(self, spec: LaunchSpec) -> RayJob:
        if not spec.launch_id:
            raise LaunchError("a Ray job needs the attempt's launch id")
        env = {
            "PYTHONUNBUFFERED": "1",
            "COSMIC_CURRICULUM_NO_GIT": "1",  # the curriculum commits, not the trainer
            "COSMIC_CURRICULUM_PYTHON": sys.executable,
            **dict(spec.env),
            **self.config.env,
        }
        entrypoint = f"cd {shlex.quote(str(spec.cwd))} && exec {shlex.join(list(spec.argv))}"
        resources: dict[str, Any] = {
            "entrypoint_num_gpus": self.config.num_gpus,
            "entrypoint_num_cpus": self.config.num_cpus,
        }
        if self.config.memory is not None:
            resources["entrypoint_memory"] = self.config.memory
        self._call(
            "submit_job",
            entrypoint=entrypoint,
            submission_id=spec.launch_id,
            runtime_env={"env_vars": env},
            **resources,
        )
        return RayJob(spec.log_path, spec.launch_id, spec.tag)

    def stream(self, handle: Handle, force: bool = False) -> list[str]:
        job = _own(handle)
        if not force and time.monotonic() - job.fetched_at < LOG_POLL_SECONDS:
            return []
        job.fetched_at = time.monotonic()
        logs = str(self._call("get_job_logs", job.launch_id) or "")
        new = logs[job.written :]
        if not new:
            return []
        with open(job.log_path, "a", encoding="utf-8") as log:
            log.write(new)
        job.written = len(logs)
        *lines, job.partial = (job.partial + new).split("\n")
        return lines

    def result(self, handle: Handle) -> int | None:
        job = _own(handle)
        info = self._call("get_job_info", job.launch_id)
        status = str(getattr(info.status, "value", info.status))
        if status not in TERMINAL:
            return None
        self.stream(job, force=True)  # the last lines before the exit status
        kind = getattr(info, "error_type", None)
        job.message = f"{getattr(kind, 'value', kind) or ''}: {getattr(info, 'message', '') or ''}"
        code = getattr(info, "driver_exit_code", None)
        if status == "SUCCEEDED":
            return 0 if code is None else int(code)
        if code is not None:
            return int(code)
        return -15 if status == "STOPPED" else 1

    def ended_by(self, handle: Handle) -> str | None:
        """``NODE_FAIL`` when Ray says the job's supervisor died with its node; Ray has
        no time limits or preemption of its own, so anything else is the job's own end."""
        kind, _, message = _own(handle).message.partition(": ")
        died = kind == "JOB_SUPERVISOR_ACTOR_DIED" and "node" in message.lower()
        return "NODE_FAIL" if died else None

    def stop(self, handle: Handle, grace: float = DEFAULT_GRACE_SECONDS) -> None:
        job = _own(handle)
        try:
            self._call("stop_job", job.launch_id)
        except LaunchError:
            return  # unreachable: nothing more we can do from here
        deadline = time.monotonic() + grace + 10.0  # Ray kills after its own wait
        while time.monotonic() < deadline and self.result(job) is None:
            time.sleep(0.2)

    def attach(
        self, record: TrainerRecord, grace: float = DEFAULT_GRACE_SECONDS
    ) -> Handle | Literal["stopped", "gone"]:
        if not record.launch_id:
            return "gone"
        try:
            self._call("get_job_info", record.launch_id)
        except LaunchError as exc:
            if "does not exist" in str(exc):
                return "gone"  # killed between saving the launch and submitting it
            raise
        job = RayJob(Path(record.log_path or os.devnull), record.launch_id, record.tag)
        job.written = _copied_since_launch(job.log_path)
        return job

    # -- before any GPU time ----------------------------------------------------------

    def check(self, workspace: Path) -> None:
        """A probe job reads a nonce this machine wrote in the workspace and writes one
        back: the workspace must be on a filesystem the cluster's nodes see."""
        nonce = secrets.token_hex(8)
        probe = workspace / f".cosmic-probe-{nonce}"
        reply = workspace / f".cosmic-probe-{nonce}.reply"
        probe.write_text(nonce)
        code = (
            "import pathlib, sys; p = pathlib.Path(sys.argv[1]); "
            "pathlib.Path(sys.argv[2]).write_text(p.read_text()[::-1])"
        )
        argv = python_argv("-c", code, str(probe), str(reply))
        launch_id = f"cosmic-probe-{nonce}"
        try:
            self._call(
                "submit_job",
                entrypoint=f"cd {shlex.quote(str(workspace))} && exec {shlex.join(argv)}",
                submission_id=launch_id,
                entrypoint_num_cpus=0,
            )
            deadline = time.monotonic() + PROBE_SECONDS
            while time.monotonic() < deadline:
                info = self._call("get_job_info", launch_id)
                if str(getattr(info.status, "value", info.status)) in TERMINAL:
                    break
                time.sleep(0.2)
            answer = reply.read_text() if reply.exists() else ""
        finally:
            probe.unlink(missing_ok=True)
            reply.unlink(missing_ok=True)
        if answer != nonce[::-1]:
            raise LaunchError(
                f"a Ray job could not read and write the workspace {workspace} (probe job "
                f"{launch_id}); mount it at the same path on every node (NFS, a shared "
                'home) or use [launcher] kind = "local"'
            )

    # -- plumbing ---------------------------------------------------------------------

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        client = self._connect()
        for attempt in range(1, CALL_ATTEMPTS + 1):
            try:
                with _quiet_ray():
                    return getattr(client, method)(*args, **kwargs)
            except Exception as exc:  # connection refused, HTTP errors: Ray's own types
                if attempt < CALL_ATTEMPTS and _dropped(exc):
                    time.sleep(RETRY_SECONDS * 2 ** (attempt - 1))
                    continue
                if method == "submit_job" and attempt > 1 and "already exists" in str(exc):
                    return kwargs.get("submission_id")  # the dropped try had submitted it
                raise LaunchError(f"Ray at {self.address}: {self._fault(exc)}") from None
        raise AssertionError("unreachable")  # the last attempt returns or raises

    def _connect(self) -> Any:
        if self._client is None:
            problem = dashboard_address_problem(self.address)
            if problem:
                source = "[launcher] address" if self.config.address else "RAY_ADDRESS"
                raise LaunchError(f"{source} {self.address!r}: {problem}")
            try:
                client_class = _timed_client_class()
            except ImportError:
                raise LaunchError(
                    "[launcher] kind = \"ray\" needs Ray: pip install 'cosmic-curriculum[ray]'"
                ) from None
            for attempt in range(1, CALL_ATTEMPTS + 1):
                try:
                    with _quiet_ray():
                        self._client = client_class(self.address, self.config.request_timeout)
                    break
                except Exception as exc:
                    if attempt < CALL_ATTEMPTS and _dropped(exc):
                        time.sleep(RETRY_SECONDS * 2 ** (attempt - 1))
                        continue
                    raise LaunchError(
                        f"cannot reach the Ray cluster at {self.address}: {self._fault(exc)}; "
                        "start one with `ray start --head`, or set [launcher] address or "
                        "RAY_ADDRESS"
                    ) from None
        return self._client

    def _fault(self, exc: BaseException) -> str:
        """One line for what went wrong talking to the dashboard."""
        import requests

        if isinstance(exc, requests.exceptions.Timeout):
            return (
                f"no answer within {self.config.request_timeout:g} s ([launcher] "
                "request_timeout); is it the dashboard's address (port 8265 by default)?"
            )
        if isinstance(exc, json.JSONDecodeError | KeyError):  # not JSON, or not Ray's
            return "the answer is not a Ray dashboard's (Jobs API); check the address and port"
        text = str(exc).strip()
        return text.splitlines()[0] if text else type(exc).__name__


def _dropped(exc: BaseException) -> bool:
    """A connection refused or dropped (a dashboard restarting or loaded): worth asking
    again. A timeout is not (a silent server stays silent: request_timeout bounds it)."""
    import requests

    if isinstance(exc, requests.exceptions.Timeout):
        return False
    return isinstance(exc, ConnectionError | requests.exceptions.ConnectionError)


def _timed_client_class() -> type:
    """Ray's JobSubmissionClient whose every HTTP request has a timeout (Ray's has none:
    a server that accepts and never answers would hang the run) and that talks to the
    address it is given (Ray's prefers RAY_ADDRESS / RAY_API_SERVER_ADDRESS over it)."""
    from ray.job_submission import JobSubmissionClient

    class TimedClient(JobSubmissionClient):
        def __init__(self, address: str, timeout: float) -> None:
            self._cosmic_timeout = timeout
            with _without_env(*ADDRESS_VARIABLES):
                super().__init__(address)

        def _do_request(self, method: str, endpoint: str, **kwargs: Any) -> Any:
            kwargs.setdefault("timeout", self._cosmic_timeout)
            return super()._do_request(method, endpoint, **kwargs)

    return TimedClient


# What Ray's client reads instead of the address it is given.
ADDRESS_VARIABLES = ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS")


@contextlib.contextmanager
def _without_env(*names: str) -> Iterator[None]:
    saved = {n: os.environ.pop(n) for n in names if n in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


@contextlib.contextmanager
def _quiet_ray() -> Iterator[None]:
    """Ray's own INFO/WARNING lines stay out of the run's output (errors are ours)."""
    loggers = [logging.getLogger(n) for n in ("ray", "ray.dashboard")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _copied_since_launch(log_path: Path) -> int:
    """Characters of the job's output an earlier run already copied into the log: all
    that follows the launch's header line (`# <time> <argv>`, written before submitting)."""
    try:
        text = log_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    headers = list(HEADER_RE.finditer(text))
    return len(text) - headers[-1].end() if headers else 0


def _own(handle: Handle) -> RayJob:
    if not isinstance(handle, RayJob):
        raise TypeError(f"the ray launcher cannot follow {type(handle).__name__}")
    return handle
