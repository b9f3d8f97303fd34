"""Where a training runs: the launcher seam, and the watch loop every launcher shares.

A launcher starts an argv (never a shell string) in the workspace and hands back a
handle; the curriculum records the handle's :class:`TrainerRecord` in the state so that a
run started after a crash can find the work again (:meth:`Launcher.attach`). ``local``
(:mod:`cosmic_curriculum.launchers.local`) runs the trainer as a process group on this
machine; a cluster launcher implements the same methods.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from cosmic_curriculum.errors import CurriculumError
from cosmic_curriculum.system.processes import DEFAULT_GRACE_SECONDS

POLL_SECONDS = 0.2


@dataclass(frozen=True)
class LaunchSpec:
    """One training (or evaluation command) to start: argv, workspace, log file."""

    argv: Sequence[str]
    cwd: Path
    log_path: Path  # the launcher appends the work's stdout and stderr here
    env: Mapping[str, str] = field(default_factory=dict)
    pass_fds: tuple[int, ...] = ()
    # Names the work and everything it starts (Layout.attempt_tag), so it can be found
    # again even when no handle was recorded or a descendant left its process group.
    tag: str = ""
    # Known before the work starts and saved with the attempt (Layout.launch_id): a
    # cluster launcher submits under it, so a resumed run finds the same work.
    launch_id: str = ""


@dataclass(frozen=True)
class TrainerRecord:
    """What the state keeps of a started training to find it again after a crash."""

    pgid: int | None
    pid: int | None
    start_time: int | None  # the leader's start, to tell it from a reused pid
    tag: str = ""  # LaunchSpec.tag of the work
    launch_id: str = ""  # LaunchSpec.launch_id of the work
    log_path: str = ""  # where its output goes


class Handle(Protocol):
    """A started training, wherever it runs."""

    def record(self) -> TrainerRecord: ...


class LaunchError(CurriculumError):
    """The launcher cannot reach where the work runs (its message says what to fix)."""


class Launcher(Protocol):
    def check(self, workspace: Path) -> None:
        """Before any training: prove work started here can use ``workspace``."""
        ...

    def start(self, spec: LaunchSpec) -> Handle:
        """Start the work; its output goes to ``spec.log_path``."""
        ...

    def stream(self, handle: Handle) -> list[str]:
        """Complete lines of output since the last call."""
        ...

    def result(self, handle: Handle) -> int | None:
        """The exit status once the work has finished, else None."""
        ...

    def stop(self, handle: Handle, grace: float = DEFAULT_GRACE_SECONDS) -> None:
        """Stop the work and everything it started (TERM, ``grace`` seconds, KILL)."""
        ...

    def attach(
        self, record: TrainerRecord, grace: float = DEFAULT_GRACE_SECONDS
    ) -> Handle | Literal["stopped", "gone"]:
        """The work an earlier run recorded: a handle to follow it, or what became of it."""
        ...

    def ended_by(self, handle: Handle) -> str | None:
        """Once ``result(handle)`` is not None: a short reason when a time limit or a
        preemption ended the work (``TIMEOUT``, ``PREEMPTED``, ``NODE_FAIL``, ``SIGTERM``
        from outside, ...), which the curriculum continues; None otherwise."""
        ...


@dataclass
class RunOutcome:
    """How a watched training ended."""

    returncode: int | None
    timed_out: bool = False
    last_progress: dict[str, Any] | None = None
    # Launcher.ended_by: a time limit or preemption ended it (then it is continued).
    ended_by: str | None = None


def watch(
    launcher: Launcher,
    handle: Handle,
    *,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    on_poll: Callable[[], None] | None = None,
    timeout: float | None = None,
    grace: float = DEFAULT_GRACE_SECONDS,
) -> RunOutcome:
    """Wait for one piece of work: :func:`watch_many` with it alone, already running.

    Its ``@progress`` lines go to ``on_progress``; ``on_poll()`` is called at every look
    while it runs (an evaluation's streamed episodes are read there); it is stopped after
    ``timeout``, and by any exception raised while waiting (the curriculum's signal
    handler raises one) before that propagates, so no trainer outlives an interrupted run.
    """
    outcomes: list[RunOutcome] = []

    def forward(_key: None, record: dict[str, Any]) -> None:
        if on_progress is not None:
            on_progress(record)

    watch_many(
        launcher,
        [],
        lambda _key: None,  # nothing queued: never called
        lambda _key, outcome: outcomes.append(outcome),  # None: nothing continued here
        running={None: handle},
        on_progress=forward,
        on_poll=on_poll,
        timeout=timeout,
        grace=grace,
    )
    (outcome,) = outcomes  # the loop returns only once the work has ended
    return outcome


Key = TypeVar("Key")


@dataclass
class _Watched:
    handle: Handle
    outcome: RunOutcome
    deadline: float | None


def watch_many(
    launcher: Launcher,
    queue: Sequence[Key],
    start: Callable[[Key], Handle | None],
    on_done: Callable[[Key, RunOutcome], Handle | None],
    *,
    running: Mapping[Key, Handle] | None = None,
    cap: int = 1,
    on_progress: Callable[[Key, dict[str, Any]], None] | None = None,
    on_poll: Callable[[], None] | None = None,
    timeout: float | None = None,
    grace: float = DEFAULT_GRACE_SECONDS,
) -> None:
    """Wait for pieces of work side by side (an attempt's candidates; :func:`watch` is one)
    while forwarding their ``@progress`` lines to ``on_progress(key, record)``.

    ``running`` is work already under way (found again after a crash); ``queue`` is work to
    start, in order, with ``start(key)`` (None: it did not start, and said so itself)
    whenever fewer than ``cap`` run. ``on_done(key, outcome)`` is told as each ends (a
    handle it returns is that key's work continued, watched in its place), and
    ``timeout`` applies to each from when it is watched: it is then stopped. Any exception
    while waiting stops every piece still running before it propagates.
    """
    from cosmic_curriculum.progress import parse_progress_line

    pending = list(queue)
    live: dict[Key, _Watched] = {}

    def deadline() -> float | None:
        return None if timeout is None else time.monotonic() + timeout

    def drain(key: Key, watched: _Watched) -> None:
        for line in launcher.stream(watched.handle):
            record = parse_progress_line(line)
            if record is not None:
                watched.outcome.last_progress = record
                if on_progress is not None:
                    on_progress(key, record)

    try:
        for key, handle in (running or {}).items():
            live[key] = _Watched(handle, RunOutcome(returncode=None), deadline())
        while pending or live:
            while pending and len(live) < max(1, cap):
                key = pending.pop(0)
                started = start(key)
                if started is not None:
                    live[key] = _Watched(started, RunOutcome(returncode=None), deadline())
            for key, watched in list(live.items()):
                code = launcher.result(watched.handle)
                drain(key, watched)
                late = watched.deadline is not None and time.monotonic() >= watched.deadline
                if code is None and late:
                    launcher.stop(watched.handle, grace)
                    watched.outcome.timed_out = True
                    code = launcher.result(watched.handle)
                if code is not None or watched.outcome.timed_out:
                    watched.outcome.returncode = code
                    if code is not None and not watched.outcome.timed_out:
                        watched.outcome.ended_by = launcher.ended_by(watched.handle)
                    del live[key]
                    again = on_done(key, watched.outcome)
                    if again is not None:
                        live[key] = _Watched(again, RunOutcome(returncode=None), deadline())
            if live:
                if on_poll is not None:
                    on_poll()
                time.sleep(POLL_SECONDS)
    except BaseException:
        for watched in live.values():
            launcher.stop(watched.handle, grace)
        raise
