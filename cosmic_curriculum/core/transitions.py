"""The curriculum's rules as pure functions: state + config + event → next state.

Read this file to learn the state machine. Nothing here does I/O, reads a clock or starts a
process: the shell (the other modules of this package) observes the world, turns what it
saw into an *event*, asks :func:`apply` for the next state and saves it. :func:`next_step`
tells the shell what to do next. Every assignment of ``phase``, ``status``, ``attempt``
and ``stage_index`` lives here.

An attempt moves through ``training → trained → evaluated → decided → committed``
(:data:`EDGES`); the shell saves the state after every event, so a kill at any instant
resumes at the last saved phase.

With ``candidates = K > 1`` an attempt in ``training`` trains K candidates (each with its
own phase ``training → trained | failed``), in ``trained`` evaluates each against the
stage's reference, chooses the best score (ties: the lowest k) and re-evaluates it with a
fresh seed; only that fresh evaluation is judged (choosing the best of K would otherwise
inflate the chance of passing a regression: the winner's curse).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cosmic_curriculum.core.candidate_rules import (
    candidate_chosen,
    candidate_evaluated,
    candidate_failed,
    candidate_in,
    candidate_launched,
    candidate_started,
    candidate_trained,
    require_candidates_in,
)
from cosmic_curriculum.core.continuation_rules import (
    candidate_continued,
    continuations_json,
    training_continued,
)
from cosmic_curriculum.core.decisions import judge
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
    Event,
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
from cosmic_curriculum.core.phases import (
    EDGES,
    IN_PROGRESS_ONLY,
    InvalidTransition,
    flight_of,
    phase_of,
)
from cosmic_curriculum.core.rules import may_override, skipped_experiment
from cosmic_curriculum.defaults import NOTIFY_MAX_TRIES
from cosmic_curriculum.workspace.config import CurriculumConfig
from cosmic_curriculum.workspace.layout import candidate_name, experiment_name
from cosmic_curriculum.workspace.state import (
    COUNT_KEYS,
    Attempt,
    Candidate,
    CurriculumState,
    LogEntry,
)

# An override without --reason is still recorded: as this reason, with who asked.
NO_REASON = "no reason given"


def apply(state: CurriculumState, config: CurriculumConfig, event: Event) -> CurriculumState:
    """The state after ``event``; ``state`` itself is left untouched."""
    allowed, target = EDGES[type(event)]
    if phase_of(state) not in allowed:
        raise InvalidTransition(f"{type(event).__name__} in phase {phase_of(state)!r}")
    if type(event) in IN_PROGRESS_ONLY and state.status != "in_progress":
        raise InvalidTransition(f"{type(event).__name__} on status {state.status!r}")
    new = state.model_copy(deep=True)
    _RULES[type(event)](new, config, event)
    if target is not None and new.in_flight is not None:
        new.in_flight.phase = target
    return new


# --------------------------------------------------------------------------- the rules
# Each rule edits ``state`` (a private copy) in place; `apply` sets the target phase.


def _begin(state: CurriculumState, config: CurriculumConfig, e: BeginAttempt) -> None:
    i, n = state.stage_index, state.attempt
    experiment = experiment_name(i, config.stages[i].name, n)
    k_max = config.stage_candidates(i)
    state.in_flight = Attempt(
        stage_index=i,
        attempt=n,
        experiment=experiment,
        resume_from=e.resume_from,
        reference=e.reference,
        timesteps=e.timesteps,
        started_at=e.now,
        # K = 1 records no candidates: its state keeps the first release's shape.
        candidates=None
        if k_max == 1
        else [
            Candidate(k=k, experiment=candidate_name(experiment, k), seed=k)
            for k in range(1, k_max + 1)
        ],
    )


def _clear_group(state: CurriculumState, config: CurriculumConfig, e: Event) -> None:
    if state.in_flight is not None:
        state.in_flight.pgid = state.in_flight.pid = state.in_flight.pid_start_time = None
        for c in state.in_flight.candidates or []:
            c.pgid = c.pid = c.pid_start_time = None


def _interrupted(state: CurriculumState, config: CurriculumConfig, e: Interrupted) -> None:
    _clear_group(state, config, e)
    if state.in_flight is not None:
        state.in_flight.interrupted = True
        state.in_flight.interrupted_by = e.signal


def _launched(state: CurriculumState, config: CurriculumConfig, e: TrainingLaunched) -> None:
    flight = flight_of(state)
    flight.error = None
    flight.interrupted = False
    flight.interrupted_by = None
    flight.started_at = e.now
    flight.launched = True
    flight.last_resume = e.resume


def _started(state: CurriculumState, config: CurriculumConfig, e: TrainerStarted) -> None:
    flight = flight_of(state)
    flight.pgid, flight.pid, flight.pid_start_time = e.pgid, e.pid, e.start_time


def _trained(state: CurriculumState, config: CurriculumConfig, e: Trained) -> None:
    require_candidates_in(state, ("trained",), "Trained")
    _clear_group(state, config, e)
    if e.last_progress is not None:
        flight_of(state).last_progress = e.last_progress


def _training_failed(state: CurriculumState, config: CurriculumConfig, e: TrainingFailed) -> None:
    # With candidates: once none trains any more, and some failed (their errors say why).
    require_candidates_in(state, ("trained", "failed"), "TrainingFailed")
    _clear_group(state, config, e)
    if e.last_progress is not None:
        flight_of(state).last_progress = e.last_progress
    _attempt_error(state, e.problem)


def _attempt_error(state: CurriculumState, problem: str) -> None:
    flight = flight_of(state)
    flight.error = problem
    state.last_error = f"{flight.experiment}: {problem}"


def _evaluation_started(
    state: CurriculumState, config: CurriculumConfig, e: EvaluationStarted
) -> None:
    holder = flight_of(state) if e.k is None else candidate_in(state, e.k, ("trained",))
    holder.history_before = e.history_before
    holder.eval_launched_at = e.now


def _evaluation_failed(
    state: CurriculumState, config: CurriculumConfig, e: EvaluationFailed
) -> None:
    holder = flight_of(state) if e.k is None else candidate_in(state, e.k, ("trained",))
    holder.history_before = holder.eval_launched_at = None
    _attempt_error(state, e.problem)


def _evaluated(state: CurriculumState, config: CurriculumConfig, e: Evaluated) -> None:
    flight = flight_of(state)
    if flight.candidates and flight.chosen is None:
        raise InvalidTransition("Evaluated before a candidate was chosen")
    flight.eval_id = e.eval_id
    flight.error = None


def _decide(state: CurriculumState, config: CurriculumConfig, e: Decide) -> None:
    flight = flight_of(state)
    i = flight.stage_index
    judged = judge(config.stage_gate(i), e.record)
    entry = LogEntry(
        stage_index=i,
        experiment=flight.experiment,
        attempt=flight.attempt,
        # the counts the record has (a threshold record may lack the head-to-head ones)
        # and the threshold rule's figures, for status, REPORT.md and the history
        eval={k: e.record[k] for k in COUNT_KEYS if k in e.record} | judged.figures,
        decision="pass" if judged.verdict == "pass" else "fail",
        eval_id=flight.eval_id,
        summary=judged.summary,
        decided_at=e.now,
    )
    if flight.candidates:
        entry.candidates = [
            {"k": c.k, "experiment": c.experiment, "eval_id": c.eval_id, "score": c.score}
            | ({"chosen": True} if c.k == flight.chosen else {})
            | ({"continuations": continuations_json(c.continuations)} if c.continuations else {})
            for c in flight.candidates
        ]
    if flight.continuations:
        entry.continuations = continuations_json(flight.continuations)
    forced = state.forced_retry
    if forced is not None and forced.get("attempt") == flight.attempt:
        entry.forced_retry = True
        if forced.get("reason"):
            entry.reason = str(forced["reason"])
        if forced.get("by"):
            entry.by = str(forced["by"])
    state.log.append(entry)
    state.last_error = None
    flight.decision = entry.decision
    flight.summary = judged.summary
    if entry.decision == "pass":
        _advance_stage(state, config)
        return
    state.attempt = flight.attempt + 1
    failures = sum(1 for x in state.stage_log(i) if x.decision == "fail")
    if failures >= config.max_retries + 1:
        state.status = "blocked"
        state.blocked_reason = (
            f"stage {i + 1} {config.stages[i].name} failed {failures} attempts in "
            f"a row (last: {flight.experiment}: {judged.summary})"
        )


def _advance_stage(state: CurriculumState, config: CurriculumConfig) -> None:
    state.stage_index += 1
    state.attempt = 0
    state.status = "done" if state.stage_index >= len(config.stages) else "in_progress"


def _committed(state: CurriculumState, config: CurriculumConfig, e: Committed) -> None:
    pass  # only the phase changes


def _require_blocked(state: CurriculumState, flag: str) -> None:
    if not may_override(state.status):
        raise InvalidTransition(f"{flag} on status {state.status!r}")


def _force_retry(state: CurriculumState, config: CurriculumConfig, e: ForceRetry) -> None:
    _require_blocked(state, "--force-retry")
    state.status = "in_progress"
    state.blocked_reason = None
    state.forced_retry = {
        "stage_index": state.stage_index,
        "attempt": state.attempt,
        "reason": e.reason,
    }
    if not e.reason:
        state.forced_retry.update(reason=NO_REASON, by=e.by)


def _skip_stage(state: CurriculumState, config: CurriculumConfig, e: SkipStage) -> None:
    _require_blocked(state, "--skip-to-next-stage")
    state.log.append(
        LogEntry(
            stage_index=state.stage_index,
            experiment=skipped_experiment(state, config),
            attempt=max(0, state.attempt - 1),
            eval=None,
            decision="pass",
            override="skip_to_next_stage",
            reason=e.reason or NO_REASON,
            decided_at=e.now,
            by=None if e.reason else e.by,
        )
    )
    state.blocked_reason = None
    _advance_stage(state, config)


def _config_recorded(state: CurriculumState, config: CurriculumConfig, e: ConfigRecorded) -> None:
    state.stage_hashes = e.stage_hashes
    state.config_hash = e.config_hash
    state.stage_definitions = e.stage_definitions


def _reference_changed(
    state: CurriculumState, config: CurriculumConfig, e: ReferenceChanged
) -> None:
    flight = flight_of(state)
    if flight.reference_was is None:
        flight.reference_was = flight.reference  # the one it started with, on record
    flight.reference = e.reference
    if e.replay:
        if flight.eval_id is not None:
            raise InvalidTransition("ReferenceChanged cannot replay a judged evaluation")
        if flight.chosen is not None:  # chosen on scores against the old reference
            flight.chosen = None
            flight.experiment = experiment_name(
                flight.stage_index, config.stages[flight.stage_index].name, flight.attempt
            )
        for c in flight.candidates or []:
            if c.phase == "evaluated":
                c.phase, c.eval_id, c.score = "trained", None, None


def _push_tried(state: CurriculumState, config: CurriculumConfig, e: PushTried) -> None:
    state.push_pending = not e.ok


OUTBOX_LIMIT = 20  # a notifier broken for weeks must not grow the state without end


def _notification_queued(
    state: CurriculumState, config: CurriculumConfig, e: NotificationQueued
) -> None:
    key = e.notification["id"]
    kept = [n for n in state.notify_outbox or [] if n.get("id") != key]
    state.notify_outbox = [*kept, dict(e.notification)][-OUTBOX_LIMIT:]


def _notification_sent(
    state: CurriculumState, config: CurriculumConfig, e: NotificationSent
) -> None:
    kept = [n for n in state.notify_outbox or [] if n.get("id") != e.id]
    state.notify_outbox = kept or None  # an empty outbox is not written


def _notification_failed(
    state: CurriculumState, config: CurriculumConfig, e: NotificationFailed
) -> None:
    # Bounded: a note refused for good, or failing NOTIFY_MAX_TRIES times, leaves the
    # outbox, so it can never hold back the notes behind it.
    kept = []
    for note in state.notify_outbox or []:
        if note.get("id") == e.id:
            tries = note.get("tries")
            tries = (tries if isinstance(tries, int) and tries >= 0 else 0) + 1
            if e.permanent or tries >= NOTIFY_MAX_TRIES:
                continue
            note = {**note, "tries": tries}
        kept.append(note)
    state.notify_outbox = kept or None


_RULES: dict[type[Any], Callable[[CurriculumState, CurriculumConfig, Any], None]] = {
    BeginAttempt: _begin,
    Resumed: _clear_group,
    TrainingLaunched: _launched,
    TrainerStarted: _started,
    Trained: _trained,
    TrainingFailed: _training_failed,
    TrainingContinued: training_continued,
    CandidateContinued: candidate_continued,
    CandidateLaunched: candidate_launched,
    CandidateStarted: candidate_started,
    CandidateTrained: candidate_trained,
    CandidateFailed: candidate_failed,
    CandidateEvaluated: candidate_evaluated,
    CandidateChosen: candidate_chosen,
    EvaluationStarted: _evaluation_started,
    EvaluationFailed: _evaluation_failed,
    Evaluated: _evaluated,
    Decide: _decide,
    Committed: _committed,
    Interrupted: _interrupted,
    ForceRetry: _force_retry,
    SkipStage: _skip_stage,
    ConfigRecorded: _config_recorded,
    ReferenceChanged: _reference_changed,
    PushTried: _push_tried,
    NotificationQueued: _notification_queued,
    NotificationSent: _notification_sent,
    NotificationFailed: _notification_failed,
}
