"""The attempt's phases: which event may happen in which phase and what phase it leaves
(:data:`EDGES`), and what the shell does next (:func:`next_step`). The rules that move the
state live in :mod:`.transitions`."""

from __future__ import annotations

from typing import Any, Literal

from cosmic_curriculum.core.events import (
    BeginAttempt,
    CandidateChosen,
    CandidateContinued,
    CandidateEvaluated,
    CandidateFailed,
    CandidateLaunched,
    CandidateStarted,
    CandidateTrained,
    Committed,
    ConfigRecorded,
    Decide,
    Evaluated,
    EvaluationFailed,
    EvaluationStarted,
    ForceRetry,
    Interrupted,
    NotificationFailed,
    NotificationQueued,
    NotificationSent,
    PushTried,
    ReferenceChanged,
    Resumed,
    SkipStage,
    Trained,
    TrainerStarted,
    TrainingContinued,
    TrainingFailed,
    TrainingLaunched,
)
from cosmic_curriculum.workspace.state import Attempt, CurriculumState, Phase

Step = Literal["begin", "train", "evaluate", "decide", "commit", "blocked", "done"]


class InvalidTransition(Exception):
    """An event that the state's phase does not allow: a bug in the shell, not user input."""


# --------------------------------------------------------------------------- the table

NO_ATTEMPT = "none"  # no attempt in flight (a fresh curriculum)
ANY = ("none", "training", "trained", "evaluated", "decided", "committed")

# event → (phases of the attempt in flight it may happen in, the phase it leaves).
# None as the target keeps the phase. docs/ARCHITECTURE.md's diagram is checked against it.
EDGES: dict[type[Any], tuple[tuple[str, ...], Phase | None]] = {
    BeginAttempt: (ANY, "training"),
    TrainingLaunched: (("training",), "training"),
    TrainerStarted: (("training",), "training"),
    TrainingFailed: (("training",), "training"),
    TrainingContinued: (("training",), "training"),
    Trained: (("training",), "trained"),
    CandidateLaunched: (("training",), "training"),
    CandidateContinued: (("training",), "training"),
    CandidateStarted: (("training",), "training"),
    CandidateTrained: (("training",), "training"),
    CandidateFailed: (("training",), "training"),
    CandidateEvaluated: (("trained",), "trained"),
    CandidateChosen: (("trained",), "trained"),
    EvaluationStarted: (("trained",), "trained"),
    EvaluationFailed: (("trained",), "trained"),
    Evaluated: (("trained",), "evaluated"),
    Decide: (("evaluated",), "decided"),
    Committed: (("decided",), "committed"),
    Resumed: (ANY, None),
    Interrupted: (ANY, None),
    ForceRetry: (ANY, None),
    SkipStage: (ANY, None),
    ConfigRecorded: (ANY, None),
    ReferenceChanged: (("training", "trained"), None),
    PushTried: (ANY, None),
    NotificationQueued: (ANY, None),
    NotificationSent: (ANY, None),
    NotificationFailed: (ANY, None),
}


# Events that move an attempt need a curriculum in progress: a blocked one waits for a
# human (ForceRetry, SkipStage) and a done one for nothing. What may follow a decision
# (its commit, notifications, a push) and what any run does (Resumed, Interrupted,
# ConfigRecorded) happen in every status.
IN_PROGRESS_ONLY: frozenset[type[Any]] = frozenset(
    {
        BeginAttempt,
        TrainingLaunched,
        TrainerStarted,
        Trained,
        TrainingFailed,
        TrainingContinued,
        CandidateLaunched,
        CandidateContinued,
        CandidateStarted,
        CandidateTrained,
        CandidateFailed,
        CandidateEvaluated,
        CandidateChosen,
        EvaluationStarted,
        EvaluationFailed,
        Evaluated,
        Decide,
        ReferenceChanged,
    }
)


def flight_of(state: CurriculumState) -> Attempt:
    """The attempt in flight of an attempt event (EDGES let only those through)."""
    assert state.in_flight is not None
    return state.in_flight


def phase_of(state: CurriculumState) -> str:
    return state.in_flight.phase if state.in_flight is not None else NO_ATTEMPT


def next_step(state: CurriculumState) -> Step:
    """What the shell does next. A decided attempt is committed before anything else."""
    flight = state.in_flight
    if flight is not None and flight.phase == "decided":
        return "commit"
    if state.status == "done":
        return "done"
    if state.status == "blocked":
        return "blocked"
    if (
        flight is None
        or flight.phase == "committed"
        or (flight.stage_index, flight.attempt) != (state.stage_index, state.attempt)
    ):
        return "begin"
    steps: dict[Phase, Step] = {"training": "train", "trained": "evaluate", "evaluated": "decide"}
    return steps[flight.phase]


def mermaid_diagram() -> str:
    """The attempt's phases as a Mermaid state diagram (docs/ARCHITECTURE.md shows it)."""
    lines = ["stateDiagram-v2", "    [*] --> training: BeginAttempt"]
    for event, (sources, target) in EDGES.items():
        if event is BeginAttempt or target is None:
            continue
        lines += [f"    {source} --> {target}: {event.__name__}" for source in sources]
    lines.append("    committed --> training: BeginAttempt (next attempt)")
    return "\n".join(lines)
