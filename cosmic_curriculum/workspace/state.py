"""`curriculum_state.json`: the resumable state of a curriculum, and the workspace lock.

The original script's file (the *seed format*, schema version 1) has four keys::

    {"stage_index": 0, "attempt": 0, "status": "in_progress", "log": []}

``attempt`` is the attempt number the current stage runs next (0 is the first, n runs
``-retry{n}``); ``log`` holds one entry per decided attempt. Version 2 adds the attempt in
flight and its phase, config hashes, timestamps and flags; it is a superset, so a seed
file loads unchanged and writing it back keeps every seed key (and any key we do not know).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from cosmic_curriculum.errors import LockError, StateError
from cosmic_curriculum.system.fsio import atomic_write_json, loads, read_json
from cosmic_curriculum.workspace.layout import LOCK_FILE, Layout, check_experiment
from cosmic_curriculum.workspace.live import host_name

SCHEMA_VERSION = 2
COUNT_KEYS = ("wins_a", "wins_b", "draws", "episodes")

Phase = Literal["training", "trained", "evaluated", "decided", "committed"]
PHASES: tuple[Phase, ...] = ("training", "trained", "evaluated", "decided", "committed")
Status = Literal["in_progress", "blocked", "done"]
# A candidate of an attempt with `candidates = K > 1`: training → trained → evaluated, or
# failed (its training broke; the next `run` trains it again).
CandidatePhase = Literal["training", "trained", "evaluated", "failed"]
Decision = Literal["pass", "fail"]


# Experiment names become file names (bots/<exp>.json, logs/<exp>.log, checkpoints/<exp>/):
# a hand-edited or corrupted state must not point them outside the workspace.
_safe_experiment = check_experiment


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Candidate(BaseModel):
    """One of the K trainings of an attempt with ``candidates = K > 1`` (experiment
    ``<attempt's experiment>-c{k}``, trained with ``--seed k``), recorded like an attempt's
    own training so that a kill at any instant resumes each candidate exactly."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    k: int = Field(ge=1)
    experiment: str
    seed: int = Field(ge=0)
    phase: CandidatePhase = "training"
    launched: bool | None = None  # its training was started at least once
    started_at: str | None = None  # the time of its last launch (its launch id)
    last_resume: str | None = None
    pgid: int | None = None
    pid: int | None = None
    pid_start_time: int | None = None
    last_progress: dict[str, Any] | None = None
    error: str | None = None  # why its last training failed
    history_before: int | None = None  # history length before its evaluation command ran
    eval_launched_at: str | None = None  # evaluate_remote: its evaluation job's launch time
    eval_id: str | None = None  # its evaluation against the stage's reference
    score: float | None = None  # that evaluation's score (wins + draws / 2) / episodes

    _experiment = field_validator("experiment")(_safe_experiment)

    @field_validator("last_progress")
    @classmethod
    def _a_progress_record(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        from cosmic_curriculum.progress import check_progress

        return None if value is None else check_progress(value)


class Attempt(BaseModel):
    """The attempt in flight, recorded before and after every step so resume is exact."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    stage_index: int = Field(ge=0)
    attempt: int = Field(ge=0)
    experiment: str
    phase: Phase = "training"
    resume_from: str | None = None
    reference: str | None = None
    timesteps: int | None = None
    started_at: str = Field(default_factory=utc_now)
    pgid: int | None = None
    pid: int | None = None
    pid_start_time: int | None = None  # clock ticks since boot, /proc/<pid>/stat field 22
    eval_id: str | None = None
    decision: Decision | None = None
    summary: str | None = None
    error: str | None = None
    interrupted: bool = False
    # Written only once set (None is never saved), in the order the first release added
    # them, so its files round-trip byte for byte.
    launched: bool | None = None  # the trainer was started at least once
    last_resume: str | None = None  # the --resume of the last launch
    last_progress: dict[str, Any] | None = None  # the trainer's last @progress record
    history_before: int | None = None  # history length before an evaluation command ran
    eval_launched_at: str | None = None  # evaluate_remote: its evaluation job's launch time
    # `candidates = K > 1` only (a K = 1 attempt writes none of these): the K trainings,
    # and the k of the best-scoring one once all are evaluated. `experiment` then becomes
    # that candidate's, and `eval_id` its fresh re-evaluation, which alone is judged.
    candidates: list[Candidate] | None = None
    chosen: int | None = None

    _experiment = field_validator("experiment")(_safe_experiment)

    @field_validator("last_progress")
    @classmethod
    def _a_progress_record(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        from cosmic_curriculum.progress import check_progress

        return None if value is None else check_progress(value)


class LogEntry(BaseModel):
    """One decided attempt. Seed keys first; unknown keys are kept as they are."""

    model_config = ConfigDict(extra="allow")

    stage_index: int = Field(ge=0)
    experiment: str
    attempt: int = Field(ge=0)
    eval: dict[str, Any] | None = None
    decision: Decision
    override: str | None = None
    reason: str | None = None
    eval_id: str | None = None
    summary: str | None = None
    decided_at: str | None = None
    forced_retry: bool | None = None  # decided by an attempt that --force-retry asked for
    by: str | None = None  # the user who asked for the override
    # `candidates = K > 1`: each candidate's {k, experiment, eval_id, score}; the chosen
    # one (this entry's experiment) has "chosen": true. Its `eval_id` is the evaluation
    # that picked it; the entry's own `eval_id` is the fresh one that decided.
    candidates: list[dict[str, Any]] | None = None

    _experiment = field_validator("experiment")(_safe_experiment)

    @field_validator("eval")
    @classmethod
    def _counts_are_counts(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        # `status` computes rates from these: the same check for `run` and `status`.
        for key in COUNT_KEYS:
            count = (value or {}).get(key)
            if key in (value or {}) and (type(count) is not int or count < 0):
                raise ValueError(f"{key} must be a whole number >= 0, got {count!r}")
        return value


class CurriculumState(BaseModel):
    """The whole of `curriculum_state.json`."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    stage_index: int = Field(0, ge=0)
    attempt: int = Field(0, ge=0)
    status: Status = "in_progress"
    log: list[LogEntry] = Field(default_factory=list)
    schema_version: int = SCHEMA_VERSION
    in_flight: Attempt | None = None
    config_hash: str | None = None
    stage_hashes: list[str] | None = None
    push_pending: bool = False
    blocked_reason: str | None = None
    last_error: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    # The stages as they ran (name, flags, ...), to say what changed in stages.toml.
    stage_definitions: list[dict[str, Any]] | None = None
    # {"stage_index", "attempt", "reason"} of the last --force-retry.
    forced_retry: dict[str, Any] | None = None
    # Notifications not yet taken by `notify_command` (retried by the next run); None when
    # empty, so a state that never notified keeps its shape.
    notify_outbox: list[dict[str, Any]] | None = None

    def stage_log(self, stage_index: int) -> list[LogEntry]:
        return [e for e in self.log if e.stage_index == stage_index]

    def passing_entry(self, stage_index: int) -> LogEntry | None:
        """The entry that passed ``stage_index`` (the last one, if several did)."""
        passes = [e for e in self.stage_log(stage_index) if e.decision == "pass"]
        return passes[-1] if passes else None

    def to_json(self) -> dict[str, Any]:
        data = _dump(self)
        data["log"] = [_dump(e) for e in self.log]
        if self.in_flight is not None:
            data["in_flight"] = _dump(self.in_flight)
            if self.in_flight.candidates is not None:
                data["in_flight"]["candidates"] = [_dump(c) for c in self.in_flight.candidates]
        return data


def _dump(model: BaseModel) -> dict[str, Any]:
    """Our fields without the unset ones (None is never written: a seed file keeps its
    shape), then every key we do not know exactly as it was read, null included."""
    extra = model.model_extra or {}
    data = model.model_dump(mode="json", exclude_none=True, exclude=set(extra))
    data.update(extra)
    return data


def _restore_hint(path: Path) -> str:
    return f"restore the last good copy with `git show HEAD:{path.name} > {path.name}`"


def load_state(path: Path) -> CurriculumState:
    """Load the state; a missing file is a fresh curriculum, anything bad is refused.

    A refused file is never overwritten: the error names it, says what is wrong and how
    to get the last committed copy back.
    """
    path = Path(path)
    if not path.exists():
        return CurriculumState(created_at=utc_now())
    data = read_json(path, "curriculum state")
    if not isinstance(data, dict):
        raise StateError(
            f"{path}: curriculum state must be a JSON object, got {type(data).__name__}; "
            + _restore_hint(path)
        )
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or version < 1:
        raise StateError(f"{path}: schema_version {version!r} is invalid; " + _restore_hint(path))
    if version > SCHEMA_VERSION:
        raise StateError(
            f"{path}: schema_version {version} was written by a newer cosmic-curriculum "
            f"(this one reads up to {SCHEMA_VERSION}); upgrade with `pip install -U "
            "cosmic-curriculum`"
        )
    try:
        state = CurriculumState(**data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise StateError(f"{path}: {key}: {err['msg']}; " + _restore_hint(path)) from None
    state.schema_version = SCHEMA_VERSION
    return state


def save_state(path: Path, state: CurriculumState) -> None:
    """Write the state atomically (the old file survives any crash or full disk)."""
    state.updated_at = utc_now()
    if state.created_at is None:
        state.created_at = state.updated_at
    atomic_write_json(Path(path), state.to_json())


def check_stage_range(state: CurriculumState, n_stages: int, path: Path) -> None:
    """A state pointing past the configured stages means the config lost stages."""
    limit = n_stages if state.status == "done" else n_stages - 1
    if state.stage_index > limit:
        raise StateError(
            f"{path}: stage_index {state.stage_index} is out of range for the {n_stages} "
            "stage(s) in the config; restore the stages you removed from stages.toml or "
            "point --config at the curriculum this state belongs to"
        )


class WorkspaceLock:
    """One run per workspace: an exclusive ``flock`` on `.cosmic-curriculum.lock`.

    ``flock`` (not ``lockf``) because a lockf lock vanishes when *any* descriptor of the
    file closes. The trainer inherits :attr:`fd` (``pass_fds``), so an orphaned trainer
    keeps the workspace locked after the orchestrator dies.
    """

    def __init__(self, workspace: Path) -> None:
        self.path = Path(workspace) / LOCK_FILE
        self.fd: int = -1

    def acquire(self, wait: float = 0.0) -> WorkspaceLock:
        """Take the lock, waiting up to ``wait`` seconds for another holder to let go."""
        fd = self._open()
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.1)
                    continue
                holder = self._describe_holder(fd)
                os.close(fd)
                waited = f" and did not let go within {wait:g}s" if wait > 0 else ""
                raise LockError(
                    f"{self.path.parent}: another cosmic-curriculum process holds this "
                    f"workspace ({holder}){waited}; wait for it, or stop it (and its "
                    "trainer) before starting again"
                ) from None
        info = {"pid": os.getpid(), "host": host_name(), "started_at": utc_now()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        self.fd = fd
        return self

    def _open(self) -> int:
        """The lock file, refused unless it is a plain file of its own: truncating a
        symlink or a hard link would overwrite whatever it points at."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            raise LockError(
                f"{self.path}: is a symbolic link; the workspace lock must be a plain file: "
                f"remove the link (`rm {self.path}`) and re-run"
            ) from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            os.close(fd)
            kind = "a hard link" if stat.S_ISREG(info.st_mode) else "not a regular file"
            raise LockError(
                f"{self.path}: is {kind}; the workspace lock must be a plain file of its "
                f"own: remove it (`rm {self.path}`) and re-run"
            )
        return fd

    def _describe_holder(self, fd: int) -> str:
        """Who holds the lock: the processes that have the file open, else what it says."""
        from cosmic_curriculum.system.processes import describe_process, processes_with_open_file

        info = os.fstat(fd)
        holders = [
            p for p in processes_with_open_file(info.st_dev, info.st_ino) if p != os.getpid()
        ]
        if holders:
            return "held by " + ", ".join(describe_process(p) for p in holders[:3])
        try:
            data = loads(os.pread(fd, 4096, 0).decode() or "{}")
            return (
                f"pid {data['pid']} on {data['host']}, started {data['started_at']}, "
                "or a trainer it started"
            )
        except (ValueError, KeyError, TypeError):
            return "holder unknown"

    def release(self) -> None:
        if self.fd >= 0:
            # Close without LOCK_UN: an explicit unlock would also release the copy a
            # still-running trainer inherited. The file stays: unlinking a flocked file
            # would let a second run lock a fresh inode.
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> WorkspaceLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def check_nothing_lost(workspace: Path) -> None:
    """Refuse a workspace whose state or history file is gone while its progress is not.

    A missing state would be a fresh start (retraining everything, overwriting bots) and a
    missing history would lose records on the next append: both only when nothing shows
    earlier progress (the other file, trainer logs, trained bots, git HEAD).
    """
    paths = Layout(Path(workspace))
    for lost, other in ((paths.state, paths.history), (paths.history, paths.state)):
        if lost.exists() or lost.is_symlink():
            continue
        evidence = _progress_evidence(paths, other, lost.name)
        if evidence:
            raise StateError(
                f"{lost}: missing, but this workspace has progress ({evidence}); restore it "
                f"with `git -C {paths.root} checkout HEAD -- {lost.name}` (or from a "
                "backup) instead of starting over"
            )


def _progress_evidence(paths: Layout, other: Path, lost_name: str) -> str:
    if other.is_file():
        try:
            data = read_json(other, other.name)
        except StateError:
            data = None
        if data and (
            (isinstance(data, list) and len(data) > 0)
            or (isinstance(data, dict) and (data.get("log") or data.get("stage_index")))
        ):
            return f"{other.name} has entries"
    logs = sorted(paths.logs.glob("curric-*.log")) if paths.logs.is_dir() else []
    if logs:
        return f"{paths.rel(logs[0])} exists"
    bots = sorted(paths.bots.glob("curric-*.json")) if paths.bots.is_dir() else []
    if bots:
        return f"{paths.rel(bots[0])} exists"
    if _committed_in_head(paths.root, lost_name):
        return f"git HEAD has {lost_name}"
    return ""


def _committed_in_head(root: Path, name: str) -> bool:
    """Does git HEAD hold ``name`` in this directory? (plain git: `status` stays light)."""
    try:
        result = subprocess.run(
            ["git", "cat-file", "-e", f"HEAD:./{name}"],
            cwd=root,
            capture_output=True,
            timeout=10,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0
