"""The ``local`` launcher: the trainer as the leader of its own session on this machine.

Output goes to the log *file* (a child writing to a file outlives its parent; one writing
to a pipe dies with it). The child inherits the workspace lock's descriptor
(``pass_fds``), so an orphaned trainer keeps the workspace locked. A local trainer cannot
be followed again after its run died (its exit status went with that run): ``attach``
stops a recorded group that is verifiably still ours, and the curriculum then judges the
attempt by its artefacts.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from cosmic_curriculum.launchers import DEFAULT_GRACE_SECONDS, Handle, LaunchSpec, TrainerRecord
from cosmic_curriculum.system import processes as runner

TAG_ENV = "COSMIC_CURRICULUM_ATTEMPT"
# What a machine's shutdown or a scheduler sends before it ends the work (SIGINT is a
# user's own Ctrl-C, which also reaches the run: never a continuation).
OUTSIDE_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)


class LocalProcess:
    """A trainer running on this machine as the leader of its own session."""

    def __init__(self, popen: subprocess.Popen[bytes], tailer: runner.LogTailer, tag: str) -> None:
        self.popen = popen
        self.tag = tag
        self.pid = popen.pid
        self.pgid = popen.pid  # start_new_session makes the child its group's leader
        self.start_time = runner.process_start_time(popen.pid)
        self.tailer = tailer
        self.stopped = False  # our own stop() signalled it (then no signal is "outside")

    def record(self) -> TrainerRecord:
        return TrainerRecord(self.pgid, self.pid, self.start_time, self.tag)


def trainer_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The training command's environment: ours plus the contract's variables."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env["COSMIC_CURRICULUM_PYTHON"] = sys.executable
    # The orchestrator owns git; the trainer must not commit on its own.
    env["COSMIC_CURRICULUM_NO_GIT"] = "1"
    if extra:
        env.update(extra)
    return env


class LocalLauncher:
    """Run trainings as local subprocesses (argv list, new session, log file); ``env``
    (`[launcher.env]`) is added to each one's environment, as the Ray launcher does."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = dict(env or {})

    def check(self, workspace: Path) -> None:
        pass  # the workspace is here

    def start(self, spec: LaunchSpec) -> LocalProcess:
        spec.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(spec.log_path, "ab") as log:
            tailer = runner.LogTailer(spec.log_path, start=log.tell())
            popen = subprocess.Popen(
                list(spec.argv),
                cwd=spec.cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=trainer_environment(self._environment(spec)),
                start_new_session=True,
                pass_fds=spec.pass_fds,
                close_fds=True,
            )
        return LocalProcess(popen, tailer, spec.tag)

    def _environment(self, spec: LaunchSpec) -> dict[str, str]:
        # The config's names never clash with the curriculum's own (config_checks).
        env = {**spec.env, **self.env}
        return {**env, TAG_ENV: spec.tag} if spec.tag else env

    def stream(self, handle: Handle) -> list[str]:
        return _own(handle).tailer.read_lines()

    def result(self, handle: Handle) -> int | None:
        proc = _own(handle)
        code = proc.popen.poll()
        if code is None:
            return None
        # The leader is gone; workers it left behind in the group, or that left the group
        # (setsid), must not outlive it.
        if runner.group_members(proc.pgid):
            runner.stop_group(proc.pgid, grace=2.0)
        runner.stop_processes(runner.tagged_processes(TAG_ENV, proc.tag), grace=2.0)
        return code

    def ended_by(self, handle: Handle) -> str | None:
        """A trainer that a SIGTERM or SIGUSR1 our stop() did not send ended (a cloud VM's
        shutdown, a ``kill -TERM`` from outside): it saved a step checkpoint on the way out
        (exit 128 + the signal) or was killed by it outright."""
        proc = _own(handle)
        code = proc.popen.returncode
        if proc.stopped or code is None:
            return None
        for sig in OUTSIDE_SIGNALS:
            if code in (128 + sig, -sig):
                return f"{sig.name} from outside"
        return None

    def stop(self, handle: Handle, grace: float = DEFAULT_GRACE_SECONDS) -> None:
        proc = _own(handle)
        proc.stopped = True
        runner.stop_group(proc.pgid, grace, reap=proc.popen.poll)
        runner.stop_processes(runner.tagged_processes(TAG_ENV, proc.tag), grace)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.popen.wait(timeout=1.0)

    def attach(
        self, record: TrainerRecord, grace: float = DEFAULT_GRACE_SECONDS
    ) -> Literal["stopped", "gone"]:
        stopped = runner.stop_recorded_group(record.pgid, record.pid, record.start_time, grace)
        # A run killed before it recorded the group, or descendants that left the group:
        # the tag in their environment still names them.
        escaped = runner.tagged_processes(TAG_ENV, record.tag)
        runner.stop_processes(escaped, grace)
        return "stopped" if stopped or escaped else "gone"


def _own(handle: Handle) -> LocalProcess:
    if not isinstance(handle, LocalProcess):
        raise TypeError(f"the local launcher cannot follow {type(handle).__name__}")
    return handle
