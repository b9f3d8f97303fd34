"""`curriculum_state.json`: the resumable state of a curriculum, as models (reading and
writing the file: :mod:`.state_file`; the lock: :mod:`.lock`).

The original script's file (the *seed format*, schema version 1) has four keys::

    {"stage_index": 0, "attempt": 0, "status": "in_progress", "log": []}

``attempt`` is the attempt number the current stage runs next (0 is the first, n runs
``-retry{n}``); ``log`` holds one entry per decided attempt. Version 2 adds the attempt in
flight and its phase, config hashes, timestamps and flags; it is a superset, so a seed
file loads unchanged and writing it back keeps every seed key (and any key we do not know).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cosmic_curriculum.system.clock import utc_now
from cosmic_curriculum.workspace.layout import check_experiment

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


class Continuation(BaseModel):
    """One new launch of a training that a time limit or preemption ended: why, when
    (its launch time, which names it: ``Layout.launch_id``), from which step checkpoint
    (None: none was saved yet, so the attempt's training started over)."""

    model_config = ConfigDict(extra="allow")

    reason: str
    at: str
    checkpoint: str | None = None
    launch_id: str = ""


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
    continuations: list[Continuation] | None = None  # see Attempt.continuations

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
    # The reference the attempt started with, once stages.toml changed it before the
    # attempt played it (`reference` is then what its evaluation plays).
    reference_was: str | None = None
    # Each relaunch of its training after a time limit or preemption ended it (never a
    # retry: `attempt` stays), bounded by [launcher] max_continuations; the log entry
    # keeps them. `interrupted_by`: the signal that stopped the last run in flight.
    continuations: list[Continuation] | None = None
    interrupted_by: str | None = None

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
    # The attempt's continuations ({reason, at, checkpoint, launch_id} each); a
    # candidate's are in its own dict of `candidates`.
    continuations: list[dict[str, Any]] | None = None

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
