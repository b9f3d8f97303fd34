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
from typing import Any, Literal

from cosmic_curriculum.core.events import (
    BeginAttempt,
    CandidateChosen,
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
    NotificationQueued,
    NotificationSent,
    PushTried,
    Resumed,
    SkipStage,
    Trained,
    TrainerStarted,
    TrainingFailed,
    TrainingLaunched,
)
from cosmic_curriculum.evaluation.gate import GateSettings, decide
from cosmic_curriculum.workspace.config import CurriculumConfig
from cosmic_curriculum.workspace.layout import candidate_name, experiment_name
from cosmic_curriculum.workspace.state import (
    COUNT_KEYS,
    Attempt,
    Candidate,
    CandidatePhase,
    CurriculumState,
    LogEntry,
    Phase,
)

Step = Literal["begin", "train", "evaluate", "decide", "commit", "blocked", "done"]


# An override without --reason is still recorded: as this reason, with who asked.
NO_REASON = "no reason given"


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
    Trained: (("training",), "trained"),
    CandidateLaunched: (("training",), "training"),
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
    PushTried: (ANY, None),
    NotificationQueued: (ANY, None),
    NotificationSent: (ANY, None),
}


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


def apply(state: CurriculumState, config: CurriculumConfig, event: Event) -> CurriculumState:
    """The state after ``event``; ``state`` itself is left untouched."""
    allowed, target = EDGES[type(event)]
    if phase_of(state) not in allowed:
        raise InvalidTransition(f"{type(event).__name__} in phase {phase_of(state)!r}")
    new = state.model_copy(deep=True)
    _RULES[type(event)](new, config, event)
    if target is not None and new.in_flight is not None:
        new.in_flight.phase = target
    return new


# --------------------------------------------------------------------------- the rules
# Each rule edits ``state`` (a private copy) in place; `apply` sets the target phase.


def _flight(state: CurriculumState) -> Attempt:
    assert state.in_flight is not None  # EDGES let only attempt events through
    return state.in_flight


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


def _launched(state: CurriculumState, config: CurriculumConfig, e: TrainingLaunched) -> None:
    flight = _flight(state)
    flight.error = None
    flight.interrupted = False
    flight.started_at = e.now
    flight.launched = True
    flight.last_resume = e.resume


def _started(state: CurriculumState, config: CurriculumConfig, e: TrainerStarted) -> None:
    flight = _flight(state)
    flight.pgid, flight.pid, flight.pid_start_time = e.pgid, e.pid, e.start_time


def _trained(state: CurriculumState, config: CurriculumConfig, e: Trained) -> None:
    _require_candidates_in(state, ("trained",), "Trained")
    _clear_group(state, config, e)
    if e.last_progress is not None:
        _flight(state).last_progress = e.last_progress


def _training_failed(state: CurriculumState, config: CurriculumConfig, e: TrainingFailed) -> None:
    # With candidates: once none trains any more, and some failed (their errors say why).
    _require_candidates_in(state, ("trained", "failed"), "TrainingFailed")
    _clear_group(state, config, e)
    if e.last_progress is not None:
        _flight(state).last_progress = e.last_progress
    _attempt_error(state, e.problem)


# --------------------------------------------------------------------------- candidates


def _require_candidates_in(state: CurriculumState, phases: tuple[str, ...], what: str) -> None:
    """An attempt with candidates moves on only once every candidate is in ``phases``."""
    waiting = [c.k for c in _flight(state).candidates or [] if c.phase not in phases]
    if waiting:
        raise InvalidTransition(f"{what} while candidates {waiting} are not {'/'.join(phases)}")


def _candidate(state: CurriculumState, k: int, phases: tuple[CandidatePhase, ...]) -> Candidate:
    for c in _flight(state).candidates or []:
        if c.k == k:
            if c.phase not in phases:
                raise InvalidTransition(f"candidate {k} in phase {c.phase!r}, not {phases}")
            return c
    raise InvalidTransition(f"the attempt in flight has no candidate {k}")


def _candidate_launched(
    state: CurriculumState, config: CurriculumConfig, e: CandidateLaunched
) -> None:
    c = _candidate(state, e.k, ("training", "failed"))
    c.phase = "training"
    c.error = None
    c.started_at = e.now
    c.launched = True
    c.last_resume = e.resume
    flight = _flight(state)
    flight.error = None
    flight.interrupted = False


def _candidate_started(
    state: CurriculumState, config: CurriculumConfig, e: CandidateStarted
) -> None:
    c = _candidate(state, e.k, ("training",))
    c.pgid, c.pid, c.pid_start_time = e.pgid, e.pid, e.start_time


def _candidate_trained(
    state: CurriculumState, config: CurriculumConfig, e: CandidateTrained
) -> None:
    c = _candidate(state, e.k, ("training",))
    c.phase = "trained"
    c.pgid = c.pid = c.pid_start_time = None
    if e.last_progress is not None:
        c.last_progress = e.last_progress


def _candidate_failed(state: CurriculumState, config: CurriculumConfig, e: CandidateFailed) -> None:
    c = _candidate(state, e.k, ("training",))
    c.phase = "failed"
    c.error = e.problem
    c.pgid = c.pid = c.pid_start_time = None
    if e.last_progress is not None:
        c.last_progress = e.last_progress


def record_score(record: dict[str, Any]) -> float:
    """An evaluation's score: (candidate wins + draws / 2) / episodes (stats.score)."""
    wins, draws, episodes = (int(record[k]) for k in ("wins_a", "draws", "episodes"))
    return (wins + 0.5 * draws) / episodes if episodes else 0.0


def _candidate_evaluated(
    state: CurriculumState, config: CurriculumConfig, e: CandidateEvaluated
) -> None:
    c = _candidate(state, e.k, ("trained",))
    c.phase = "evaluated"
    c.eval_id = str(e.record["id"])
    c.score = record_score(e.record)
    c.history_before = c.eval_launched_at = None
    _flight(state).error = None


def _candidate_chosen(state: CurriculumState, config: CurriculumConfig, e: CandidateChosen) -> None:
    flight = _flight(state)
    if not flight.candidates or flight.chosen is not None:
        raise InvalidTransition("CandidateChosen needs candidates not yet chosen among")
    _require_candidates_in(state, ("evaluated",), "CandidateChosen")
    best = max(flight.candidates, key=lambda c: (c.score or 0.0, -c.k))  # ties: lowest k
    flight.chosen = best.k
    flight.experiment = best.experiment


def _attempt_error(state: CurriculumState, problem: str) -> None:
    flight = _flight(state)
    flight.error = problem
    state.last_error = f"{flight.experiment}: {problem}"


def _evaluation_started(
    state: CurriculumState, config: CurriculumConfig, e: EvaluationStarted
) -> None:
    holder = _flight(state) if e.k is None else _candidate(state, e.k, ("trained",))
    holder.history_before = e.history_before
    holder.eval_launched_at = e.now


def _evaluation_failed(
    state: CurriculumState, config: CurriculumConfig, e: EvaluationFailed
) -> None:
    holder = _flight(state) if e.k is None else _candidate(state, e.k, ("trained",))
    holder.history_before = holder.eval_launched_at = None
    _attempt_error(state, e.problem)


def _evaluated(state: CurriculumState, config: CurriculumConfig, e: Evaluated) -> None:
    flight = _flight(state)
    if flight.candidates and flight.chosen is None:
        raise InvalidTransition("Evaluated before a candidate was chosen")
    flight.eval_id = e.eval_id
    flight.error = None


def gate_verdict(settings: GateSettings, record: dict[str, Any]) -> tuple[str, str]:
    """(verdict, summary) of a finished evaluation record.

    The built-in evaluator's record carries its own verdict (it may have stopped early
    under SPRT); an evaluation command's record is judged here on its counts, with its
    episodes as all there will be (the margin rule decides, the SPRT treats them as its cap).
    """
    own = record.get("gate")
    if isinstance(own, dict) and own.get("verdict") in ("pass", "fail"):
        return str(own["verdict"]), str(own.get("summary") or counts_summary(record))
    wa, wb, d, n = (int(record[k]) for k in COUNT_KEYS)
    decision = decide(settings, wa, wb, d, planned_episodes=n)
    return str(decision.verdict), str(decision.summary)


def counts_summary(record: dict[str, Any]) -> str:
    n = max(1, int(record["episodes"]))
    return (
        f"candidate {record['wins_a']}/{record['episodes']} ({record['wins_a'] / n:.0%}) vs "
        f"reference {record['wins_b']}/{record['episodes']} ({record['wins_b'] / n:.0%}), "
        f"{record['draws']} draws"
    )


def _decide(state: CurriculumState, config: CurriculumConfig, e: Decide) -> None:
    flight = _flight(state)
    i = flight.stage_index
    verdict, summary = gate_verdict(config.stage_gate(i), e.record)
    entry = LogEntry(
        stage_index=i,
        experiment=flight.experiment,
        attempt=flight.attempt,
        eval={k: e.record[k] for k in COUNT_KEYS},
        decision="pass" if verdict == "pass" else "fail",
        eval_id=flight.eval_id,
        summary=summary,
        decided_at=e.now,
    )
    if flight.candidates:
        entry.candidates = [
            {"k": c.k, "experiment": c.experiment, "eval_id": c.eval_id, "score": c.score}
            | ({"chosen": True} if c.k == flight.chosen else {})
            for c in flight.candidates
        ]
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
    flight.summary = summary
    if entry.decision == "pass":
        _advance_stage(state, config)
        return
    state.attempt = flight.attempt + 1
    failures = sum(1 for x in state.stage_log(i) if x.decision == "fail")
    if failures >= config.max_retries + 1:
        state.status = "blocked"
        state.blocked_reason = (
            f"stage {i + 1} {config.stages[i].name} failed {failures} attempts in "
            f"a row (last: {flight.experiment}: {summary})"
        )


def _advance_stage(state: CurriculumState, config: CurriculumConfig) -> None:
    state.stage_index += 1
    state.attempt = 0
    state.status = "done" if state.stage_index >= len(config.stages) else "in_progress"


def _committed(state: CurriculumState, config: CurriculumConfig, e: Committed) -> None:
    pass  # only the phase changes


def _require_blocked(state: CurriculumState, flag: str) -> None:
    if state.status != "blocked":
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


def skipped_experiment(state: CurriculumState, config: CurriculumConfig) -> str:
    """The attempt `--skip-to-next-stage` accepts: the blocked stage's last one (with
    candidates, the one that attempt chose)."""
    i = state.stage_index
    return attempt_experiment(state, config, i, max(0, state.attempt - 1))


def attempt_experiment(
    state: CurriculumState, config: CurriculumConfig, stage_index: int, attempt: int
) -> str:
    """The experiment a decided attempt stands for: the candidate it chose when it had
    candidates (its log entry says which), else its name by the naming scheme."""
    for entry in reversed(state.stage_log(stage_index)):
        if entry.attempt == attempt and entry.override is None and entry.candidates:
            return entry.experiment
    return experiment_name(stage_index, config.stages[stage_index].name, attempt)


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


_RULES: dict[type[Any], Callable[[CurriculumState, CurriculumConfig, Any], None]] = {
    BeginAttempt: _begin,
    Resumed: _clear_group,
    TrainingLaunched: _launched,
    TrainerStarted: _started,
    Trained: _trained,
    TrainingFailed: _training_failed,
    CandidateLaunched: _candidate_launched,
    CandidateStarted: _candidate_started,
    CandidateTrained: _candidate_trained,
    CandidateFailed: _candidate_failed,
    CandidateEvaluated: _candidate_evaluated,
    CandidateChosen: _candidate_chosen,
    EvaluationStarted: _evaluation_started,
    EvaluationFailed: _evaluation_failed,
    Evaluated: _evaluated,
    Decide: _decide,
    Committed: _committed,
    Interrupted: _interrupted,
    ForceRetry: _force_retry,
    SkipStage: _skip_stage,
    ConfigRecorded: _config_recorded,
    PushTried: _push_tried,
    NotificationQueued: _notification_queued,
    NotificationSent: _notification_sent,
}


def mermaid_diagram() -> str:
    """The attempt's phases as a Mermaid state diagram (docs/ARCHITECTURE.md shows it)."""
    lines = ["stateDiagram-v2", "    [*] --> training: BeginAttempt"]
    for event, (sources, target) in EDGES.items():
        if event is BeginAttempt or target is None:
            continue
        lines += [f"    {source} --> {target}: {event.__name__}" for source in sources]
    lines.append("    committed --> training: BeginAttempt (next attempt)")
    return "\n".join(lines)
