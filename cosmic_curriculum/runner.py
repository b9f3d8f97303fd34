"""Launch the training command in its own process group and watch it.

The runner decides nothing: it starts an argv list (never a shell string) in a new
session, appends the child's stdout and stderr to a log *file* (a child writing to a pipe
dies with its parent; one writing to a file lives on and can be found again), tails that
file for ``@progress`` lines, and stops whole process groups with TERM, a grace period,
then KILL. A recorded group is only ever killed after its leader's start time (field 22
of ``/proc/<pid>/stat``) proves it is still the process we started: pids are reused.

:class:`Launcher` is the seam a cluster launcher can replace: it only has to hand back a
:class:`TrainingProcess` that can be polled and stopped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

DEFAULT_GRACE_SECONDS = 10.0
POLL_SECONDS = 0.2


# --------------------------------------------------------------------------- /proc helpers


def _read_stat(pid: int) -> list[str] | None:
    """Fields of ``/proc/<pid>/stat`` (1-based field n is index n - 1), or None if gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError, OSError):
        return None
    # The command name (field 2) is in parentheses and may contain spaces or ")".
    close = raw.rfind(")")
    if close < 0:
        return None
    head = raw[: raw.find("(")].strip()
    rest = raw[close + 2 :].split()
    return [head, raw[raw.find("(") + 1 : close], *rest]


def process_start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (stat field 22), None if gone."""
    fields = _read_stat(pid)
    if fields is None or len(fields) < 22:
        return None
    return int(fields[21])


def _is_zombie(fields: list[str]) -> bool:
    return len(fields) > 2 and fields[2] in ("Z", "X")


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is ``pgid``."""
    members: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = _read_stat(int(entry.name))
        if fields is None or len(fields) < 5 or _is_zombie(fields):
            continue
        if int(fields[4]) == pgid:
            members.append(int(entry.name))
    return members


def recorded_group_is_ours(pgid: int, pid: int, start_time: int | None) -> bool:
    """Is the recorded group still the one we started (and not a pid-reuse impostor)?

    While the leader lives, its start time must match. Once the leader is gone, Linux
    never hands its pid out as a new group id while members of the old group remain, so
    any member still carrying ``pgid`` belongs to our old group.
    """
    if start_time is None:
        return False
    fields = _read_stat(pid)
    if fields is not None and not _is_zombie(fields):
        return int(fields[4]) == pgid and process_start_time(pid) == start_time
    return bool(group_members(pgid))


def stop_group(
    pgid: int,
    grace: float = DEFAULT_GRACE_SECONDS,
    reap: Callable[[], object] | None = None,
) -> bool:
    """TERM the whole group, wait up to ``grace`` seconds, then KILL what is left.

    ``reap`` (e.g. ``Popen.poll``) is called while waiting so our own direct child does
    not linger as a zombie. Returns True when the group is gone.
    """
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        if reap:
            reap()
        return True
    if _wait_until_gone(pgid, grace, reap):
        return True
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    return _wait_until_gone(pgid, 5.0, reap)


def _wait_until_gone(pgid: int, seconds: float, reap: Callable[[], object] | None) -> bool:
    """Poll until no live process is left in the group (True) or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while True:
        if reap:
            reap()
        if not group_members(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def stop_recorded_group(
    pgid: int | None,
    pid: int | None,
    start_time: int | None,
    grace: float = DEFAULT_GRACE_SECONDS,
) -> bool:
    """Stop a group recorded by an earlier run if it is verifiably ours.

    Returns True when something was stopped, False when nothing of ours was alive
    (including the case of a reused pid, which is left alone).
    """
    if pgid is None or pid is None:
        return False
    if not recorded_group_is_ours(pgid, pid, start_time):
        return False
    stop_group(pgid, grace)
    return True


# --------------------------------------------------------------------------- log tailing


class LogTailer:
    """Read complete lines appended to a log file since the last call."""

    def __init__(self, path: Path, start: int | None = None) -> None:
        self.path = path
        self.offset = start if start is not None else _size(path)
        self._partial = b""

    def read_lines(self) -> list[str]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        data = self._partial + data
        *lines, self._partial = data.split(b"\n")
        return [line.decode("utf-8", "replace").rstrip("\r") for line in lines]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def tail_text(path: Path, lines: int = 15, max_bytes: int = 16384) -> str:
    """The last ``lines`` lines of a log (for error messages)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            data = fh.read()
    except FileNotFoundError:
        return ""
    text = data.decode("utf-8", "replace").splitlines()
    return "\n".join(text[-lines:])


# --------------------------------------------------------------------------- launching


@dataclass(frozen=True)
class LaunchSpec:
    """Everything a launcher needs to start one training attempt."""

    argv: Sequence[str]
    cwd: Path
    log_path: Path
    env: Mapping[str, str] = field(default_factory=dict)
    pass_fds: tuple[int, ...] = ()


class TrainingProcess(Protocol):
    """A started attempt, wherever it runs."""

    pid: int
    pgid: int
    start_time: int | None

    def poll(self) -> int | None: ...

    def stop(self, grace: float = DEFAULT_GRACE_SECONDS) -> None: ...


class Launcher(Protocol):
    """Starts training attempts; a cluster launcher can replace the local one."""

    def launch(self, spec: LaunchSpec) -> TrainingProcess: ...


class LocalProcess:
    """A trainer running on this machine as the leader of its own session."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.pgid = popen.pid  # start_new_session makes the child its group's leader
        self.start_time = process_start_time(popen.pid)

    def poll(self) -> int | None:
        code = self.popen.poll()
        if code is None:
            return None
        # The leader is gone; workers it left behind in the group must not outlive it.
        if group_members(self.pgid):
            stop_group(self.pgid, grace=2.0)
        return code

    def stop(self, grace: float = DEFAULT_GRACE_SECONDS) -> None:
        stop_group(self.pgid, grace, reap=self.popen.poll)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=1.0)


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
    """Run attempts as local subprocesses (argv list, new session, log file)."""

    def launch(self, spec: LaunchSpec) -> TrainingProcess:
        spec.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(spec.log_path, "ab") as log:
            popen = subprocess.Popen(
                list(spec.argv),
                cwd=spec.cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=trainer_environment(spec.env),
                start_new_session=True,
                pass_fds=spec.pass_fds,
                close_fds=True,
            )
        return LocalProcess(popen)


# --------------------------------------------------------------------------- watching


@dataclass
class RunOutcome:
    """How a watched attempt ended."""

    returncode: int | None
    timed_out: bool = False
    last_progress: dict[str, Any] | None = None


def watch(
    proc: TrainingProcess,
    log_path: Path,
    *,
    log_offset: int,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    timeout: float | None = None,
    grace: float = DEFAULT_GRACE_SECONDS,
    parse: Callable[[str], dict[str, Any] | None] | None = None,
) -> RunOutcome:
    """Wait for ``proc`` while forwarding progress lines; stop it after ``timeout`` seconds.

    Exceptions raised while waiting (the orchestrator's signal handler raises one) stop
    the whole group before propagating, so no trainer outlives an interrupted run.
    """
    if parse is None:
        from cosmic_curriculum.progress import parse_progress_line

        parse = parse_progress_line
    tailer = LogTailer(log_path, start=log_offset)
    outcome = RunOutcome(returncode=None)
    deadline = None if timeout is None else time.monotonic() + timeout

    def drain() -> None:
        for line in tailer.read_lines():
            record = parse(line)
            if record is not None:
                outcome.last_progress = record
                if on_progress is not None:
                    on_progress(record)

    try:
        while True:
            code = proc.poll()
            drain()
            if code is not None:
                outcome.returncode = code
                return outcome
            if deadline is not None and time.monotonic() >= deadline:
                proc.stop(grace)
                outcome.timed_out = True
                outcome.returncode = proc.poll()
                return outcome
            time.sleep(POLL_SECONDS)
    except BaseException:
        proc.stop(grace)
        raise
