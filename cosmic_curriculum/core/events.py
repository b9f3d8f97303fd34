"""The events of the curriculum's rules: what the shell observed, as plain data.

Times come in as ``now`` strings: the rules never read a clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BeginAttempt:
    """Start the attempt the state points at (what the shell resolved for it)."""

    resume_from: str | None
    reference: str
    timesteps: int
    now: str


@dataclass(frozen=True)
class Resumed:
    """A run picked the state up: any recorded trainer group is gone (stopped or dead)."""


@dataclass(frozen=True)
class TrainingLaunched:
    """The trainer is about to start, resuming from ``resume``."""

    resume: str | None
    now: str


@dataclass(frozen=True)
class TrainerStarted:
    """The trainer runs as process group ``pgid`` (leader ``pid`` started at ``start_time``)."""

    pgid: int | None
    pid: int | None
    start_time: int | None


@dataclass(frozen=True)
class Trained:
    """The trainer exited 0 and left a final checkpoint and a valid bot (or an orphaned
    trainer's fresh artefacts were adopted: then ``last_progress`` is None)."""

    last_progress: dict[str, Any] | None = None


@dataclass(frozen=True)
class TrainingFailed:
    """The trainer failed, timed out or broke its contract; `run` retries the attempt."""

    problem: str
    last_progress: dict[str, Any] | None = None


@dataclass(frozen=True)
class TrainingContinued:
    """A time limit or preemption ended the training (``reason``; ``Launcher.ended_by``):
    it is launched again at ``now`` under ``launch_id`` from its step checkpoint
    ``checkpoint`` (None: none yet, the attempt's training starts over). Never a retry,
    never an attempt error, up to ``[launcher] max_continuations``."""

    reason: str
    now: str
    checkpoint: str | None
    launch_id: str


@dataclass(frozen=True)
class CandidateContinued:
    """Candidate ``k``'s training is continued (see TrainingContinued); its own count."""

    k: int
    reason: str
    now: str
    checkpoint: str | None
    launch_id: str


@dataclass(frozen=True)
class CandidateLaunched:
    """Candidate ``k``'s training is about to start (again), resuming from ``resume``."""

    k: int
    resume: str | None
    now: str


@dataclass(frozen=True)
class CandidateStarted:
    """Candidate ``k``'s training runs as process group ``pgid`` (see TrainerStarted)."""

    k: int
    pgid: int | None
    pid: int | None
    start_time: int | None


@dataclass(frozen=True)
class CandidateTrained:
    """Candidate ``k``'s training left a final checkpoint and a valid bot."""

    k: int
    last_progress: dict[str, Any] | None = None


@dataclass(frozen=True)
class CandidateFailed:
    """Candidate ``k``'s training failed; the others go on, the next `run` retrains it."""

    k: int
    problem: str
    last_progress: dict[str, Any] | None = None


@dataclass(frozen=True)
class EvaluationStarted:
    """An evaluation command is about to run; the history had ``history_before`` records.
    ``k``: it evaluates candidate ``k`` (None: the attempt's own evaluation). ``now``: the
    launch time of a remote evaluation (``evaluate_remote``), which names its job."""

    history_before: int
    k: int | None = None
    now: str | None = None


@dataclass(frozen=True)
class EvaluationFailed:
    """The evaluation command failed; whatever it appended is not adopted."""

    problem: str
    k: int | None = None


@dataclass(frozen=True)
class CandidateEvaluated:
    """Candidate ``k``'s evaluation ``record`` against the stage's reference is in the
    history (it only ranks the candidates; it never decides)."""

    k: int
    record: dict[str, Any]


@dataclass(frozen=True)
class CandidateChosen:
    """Every candidate is evaluated: the best-scoring one becomes the attempt's experiment
    (its fresh re-evaluation is what the gate judges)."""


@dataclass(frozen=True)
class Evaluated:
    """The attempt's evaluation record ``eval_id`` is in the history."""

    eval_id: str


@dataclass(frozen=True)
class Decide:
    """Judge the evaluation ``record`` with the stage's gate."""

    record: dict[str, Any]
    now: str


@dataclass(frozen=True)
class Committed:
    """Review, curves and commit of a decided attempt are done."""


@dataclass(frozen=True)
class Interrupted:
    """A signal (``signal``: its name) stopped the run; the trainer group, if any, was
    stopped. A SIGTERM (a machine's shutdown) makes the next run's relaunch a continuation."""

    signal: str | None = None


@dataclass(frozen=True)
class ForceRetry:
    """``--force-retry``: a blocked stage gets one more attempt."""

    reason: str | None
    by: str  # the user who asked


@dataclass(frozen=True)
class SkipStage:
    """``--skip-to-next-stage``: accept a blocked stage's last attempt and move on."""

    reason: str | None
    now: str
    by: str  # the user who asked


@dataclass(frozen=True)
class ConfigRecorded:
    """The config this run uses (to tell later runs what changed)."""

    stage_hashes: list[str]
    config_hash: str
    stage_definitions: list[dict[str, Any]]


@dataclass(frozen=True)
class ReferenceChanged:
    """The stage's ``reference_bot`` changed since the attempt in flight started and it
    may follow (``rules.reference_change``): its evaluation plays ``reference`` (a label),
    the attempt keeps the one it started with as ``reference_was``; ``replay``: its
    candidates' evaluations (against the old one) are played again."""

    reference: str
    replay: bool = False


@dataclass(frozen=True)
class PushTried:
    ok: bool


@dataclass(frozen=True)
class NotificationQueued:
    """A notification for ``notify_command`` (it has an ``id``); kept until it is sent."""

    notification: dict[str, Any]


@dataclass(frozen=True)
class NotificationSent:
    """The notifier took notification ``id``: it leaves the outbox."""

    id: str


@dataclass(frozen=True)
class NotificationFailed:
    """The notifier did not take notification ``id``. ``permanent``: it refused this very
    note (:func:`core.rules.notifier_outcome`), which leaves the outbox; otherwise the
    note stays with one more ``tries``, and leaves after ``NOTIFY_MAX_TRIES``."""

    id: str
    permanent: bool = False


Event = (
    BeginAttempt
    | Resumed
    | TrainingLaunched
    | TrainerStarted
    | Trained
    | TrainingFailed
    | TrainingContinued
    | CandidateContinued
    | CandidateLaunched
    | CandidateStarted
    | CandidateTrained
    | CandidateFailed
    | CandidateEvaluated
    | CandidateChosen
    | EvaluationStarted
    | EvaluationFailed
    | Evaluated
    | Decide
    | Committed
    | Interrupted
    | ForceRetry
    | SkipStage
    | ConfigRecorded
    | ReferenceChanged
    | PushTried
    | NotificationQueued
    | NotificationSent
    | NotificationFailed
)
