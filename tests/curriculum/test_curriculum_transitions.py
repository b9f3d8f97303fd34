"""The pure rules: every phase × event, the decisions, the overrides, and the diagram."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes.workspace import stages_toml

from cosmic_curriculum.config import CurriculumConfig, load_config
from cosmic_curriculum.curriculum import transitions as t
from cosmic_curriculum.state import Attempt, CurriculumState

NOW = "2026-11-30T12:00:00+00:00"
PHASES = ("none", "training", "trained", "evaluated", "decided", "committed")
PASSING = {"wins_a": 60, "wins_b": 30, "draws": 10, "episodes": 100}
FAILING = {"wins_a": 10, "wins_b": 80, "draws": 10, "episodes": 100}

EVENTS: dict[str, t.Event] = {
    "BeginAttempt": t.BeginAttempt(resume_from=None, reference="bots/r.json", timesteps=9, now=NOW),
    "Resumed": t.Resumed(),
    "TrainingLaunched": t.TrainingLaunched(resume="checkpoints/x/step_5.zip", now=NOW),
    "TrainerStarted": t.TrainerStarted(pgid=41, pid=41, start_time=7),
    "Trained": t.Trained({"timesteps": 9, "total": 9}),
    "TrainingFailed": t.TrainingFailed("training command exited with status 1"),
    "EvaluationStarted": t.EvaluationStarted(history_before=3),
    "EvaluationFailed": t.EvaluationFailed("evaluation command exited with status 2"),
    "Evaluated": t.Evaluated("ev-1"),
    "Decide": t.Decide({**PASSING, "id": "ev-1"}, NOW),
    "Committed": t.Committed(),
    "Interrupted": t.Interrupted(),
    "ForceRetry": t.ForceRetry("try again", "ann"),
    "SkipStage": t.SkipStage("good enough", NOW, "ann"),
    "ConfigRecorded": t.ConfigRecorded(["h1", "h2"], "cfg", [{"name": "a"}, {"name": "b"}]),
    "PushTried": t.PushTried(ok=False),
}

# Written out by hand (not derived from t.EDGES): the phase each event leaves, per phase;
# "x" = refused. Overrides are refused here because the status is in_progress (below).
_ = "x"
TABLE: dict[str, tuple[str, ...]] = {
    #                    none        training    trained      evaluated    decided      committed
    "BeginAttempt": ("training", "training", "training", "training", "training", "training"),
    "Resumed": ("none", "training", "trained", "evaluated", "decided", "committed"),
    "TrainingLaunched": (_, "training", _, _, _, _),
    "TrainerStarted": (_, "training", _, _, _, _),
    "Trained": (_, "trained", _, _, _, _),
    "TrainingFailed": (_, "training", _, _, _, _),
    "EvaluationStarted": (_, _, "trained", _, _, _),
    "EvaluationFailed": (_, _, "trained", _, _, _),
    "Evaluated": (_, _, "evaluated", _, _, _),
    "Decide": (_, _, _, "decided", _, _),
    "Committed": (_, _, _, _, "committed", _),
    "Interrupted": ("none", "training", "trained", "evaluated", "decided", "committed"),
    "ForceRetry": (_, _, _, _, _, _),
    "SkipStage": (_, _, _, _, _, _),
    "ConfigRecorded": ("none", "training", "trained", "evaluated", "decided", "committed"),
    "PushTried": ("none", "training", "trained", "evaluated", "decided", "committed"),
}


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> CurriculumConfig:
    path = tmp_path_factory.mktemp("cfg") / "stages.toml"
    path.write_text(stages_toml(stages=["score", "defend"], max_retries=1))
    return load_config(path)


def state_in(phase: str, flight_attempt: int | None = None, **fields: Any) -> CurriculumState:
    state = CurriculumState(**fields)
    if phase != "none":
        state.in_flight = Attempt.model_validate(
            {
                "stage_index": state.stage_index,
                "attempt": state.attempt if flight_attempt is None else flight_attempt,
                "experiment": "curric-s1-score",
                "phase": phase,
                "eval_id": "ev-1",
                "pgid": 12,
                "pid": 12,
                "pid_start_time": 3,
            }
        )
    return state


def test_the_table_covers_every_event_and_phase() -> None:
    assert set(TABLE) == set(EVENTS) == {e.__name__ for e in t.EDGES}
    assert all(len(row) == len(PHASES) for row in TABLE.values())


@pytest.mark.parametrize("event", list(TABLE))
@pytest.mark.parametrize("index", range(len(PHASES)))
def test_every_phase_and_event(config: CurriculumConfig, event: str, index: int) -> None:
    state = state_in(PHASES[index])
    before = state.model_dump()
    expected = TABLE[event][index]
    if expected == "x":
        with pytest.raises(t.InvalidTransition):
            t.apply(state, config, EVENTS[event])
    else:
        assert t.phase_of(t.apply(state, config, EVENTS[event])) == expected
    assert state.model_dump() == before  # pure: the input is never changed


@pytest.mark.parametrize(
    ("status", "phase", "stage", "attempt", "step"),
    [
        ("in_progress", "none", 0, 0, "begin"),
        ("in_progress", "training", 0, 0, "train"),
        ("in_progress", "trained", 0, 0, "evaluate"),
        ("in_progress", "evaluated", 0, 0, "decide"),
        ("in_progress", "decided", 0, 1, "commit"),
        ("in_progress", "committed", 0, 1, "begin"),
        ("in_progress", "stale", 0, 1, "begin"),  # the flight is attempt 0, the state says 1
        ("blocked", "decided", 0, 2, "commit"),  # the decision is committed first
        ("blocked", "committed", 0, 2, "blocked"),
        ("done", "decided", 2, 0, "commit"),
        ("done", "committed", 2, 0, "done"),
    ],
)
def test_next_step(status: str, phase: str, stage: int, attempt: int, step: str) -> None:
    stale = phase == "stale"
    state = state_in(
        "training" if stale else phase,
        flight_attempt=0 if stale else None,
        status=status,
        stage_index=stage,
        attempt=attempt,
    )
    assert t.next_step(state) == step


def decide(config: CurriculumConfig, state: CurriculumState, counts: dict[str, int]) -> Any:
    return t.apply(state, config, t.Decide({**counts, "id": "ev-1"}, NOW))


def test_a_pass_advances_the_stage_and_the_last_pass_finishes(config: CurriculumConfig) -> None:
    state = decide(config, state_in("evaluated"), PASSING)
    assert (state.stage_index, state.attempt, state.status) == (1, 0, "in_progress")
    entry = state.log[-1]
    assert (entry.experiment, entry.decision, entry.eval_id, entry.decided_at) == (
        "curric-s1-score",
        "pass",
        "ev-1",
        NOW,
    )
    assert entry.eval == PASSING and state.in_flight.decision == "pass"
    last = state_in("evaluated", stage_index=1)
    assert decide(config, last, PASSING).status == "done"


def test_failures_retry_then_block_with_the_reason(config: CurriculumConfig) -> None:
    state = decide(config, state_in("evaluated", last_error="old"), FAILING)
    assert (state.attempt, state.status, state.last_error) == (1, "in_progress", None)
    second = state_in("evaluated", attempt=1, log=state.log)
    blocked = decide(config, second, FAILING)  # max_retries = 1: two failures block
    assert blocked.status == "blocked" and blocked.attempt == 2
    assert blocked.blocked_reason is not None
    assert blocked.blocked_reason.startswith("stage 1 score failed 2 attempts in a row")


def test_the_built_in_evaluators_own_verdict_wins(config: CurriculumConfig) -> None:
    record = {**PASSING, "gate": {"verdict": "fail", "summary": "SPRT says no"}}
    state = t.apply(state_in("evaluated"), config, t.Decide(record, NOW))
    assert state.log[-1].decision == "fail" and state.log[-1].summary == "SPRT says no"


def test_force_retry_then_its_decision_is_marked(config: CurriculumConfig) -> None:
    blocked = state_in("committed", status="blocked", attempt=2, blocked_reason="why")
    retry = t.apply(blocked, config, t.ForceRetry("one more", "ann"))
    assert (retry.status, retry.blocked_reason) == ("in_progress", None)
    assert retry.forced_retry == {"stage_index": 0, "attempt": 2, "reason": "one more"}
    unexplained = t.apply(blocked, config, t.ForceRetry(None, "ann"))
    assert unexplained.forced_retry is not None
    assert (unexplained.forced_retry["reason"], unexplained.forced_retry["by"]) == (
        t.NO_REASON,
        "ann",
    )
    assert t.next_step(retry) == "begin"
    begun = t.apply(retry, config, EVENTS["BeginAttempt"])
    assert begun.in_flight is not None and begun.in_flight.experiment == "curric-s1-score-retry2"
    begun = t.apply(begun, config, t.Trained())
    begun = t.apply(begun, config, t.Evaluated("ev-1"))
    entry = decide(config, begun, PASSING).log[-1]
    assert (entry.forced_retry, entry.reason, entry.by) == (True, "one more", None)


def test_skip_accepts_the_last_attempt(config: CurriculumConfig) -> None:
    blocked = state_in("committed", status="blocked", attempt=3)
    state = t.apply(blocked, config, t.SkipStage("good enough", NOW, "ann"))
    entry = state.log[-1]
    assert (entry.experiment, entry.override, entry.reason, entry.eval) == (
        "curric-s1-score-retry2",
        "skip_to_next_stage",
        "good enough",
        None,
    )
    assert (state.stage_index, state.attempt, state.status) == (1, 0, "in_progress")


def test_attempt_bookkeeping(config: CurriculumConfig) -> None:
    state = t.apply(state_in("training", last_error=None), config, EVENTS["TrainingLaunched"])
    flight = state.in_flight
    assert flight is not None
    assert (flight.launched, flight.last_resume, flight.started_at) == (
        True,
        "checkpoints/x/step_5.zip",
        NOW,
    )
    failed = t.apply(state, config, EVENTS["TrainingFailed"])
    assert failed.in_flight is not None and failed.in_flight.pgid is None
    assert failed.last_error == "curric-s1-score: training command exited with status 1"
    interrupted = t.apply(state, config, t.Interrupted())
    assert interrupted.in_flight is not None and interrupted.in_flight.interrupted
    assert interrupted.in_flight.pid is None
    started = t.apply(state_in("trained"), config, t.EvaluationStarted(5))
    assert started.in_flight is not None and started.in_flight.history_before == 5
    failed_eval = t.apply(started, config, EVENTS["EvaluationFailed"])
    assert failed_eval.in_flight is not None and failed_eval.in_flight.history_before is None


def test_architecture_doc_shows_the_diagram_of_the_table() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md").read_text()
    assert t.mermaid_diagram() in doc, "regenerate the diagram: transitions.mermaid_diagram()"
