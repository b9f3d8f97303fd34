"""The pure rules: every phase × event, the decisions, the overrides, and the diagram."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes.workspace import stages_toml

from cosmic_curriculum.core import phases
from cosmic_curriculum.core import transitions as t
from cosmic_curriculum.core.rules import attempt_experiment
from cosmic_curriculum.defaults import NOTIFY_MAX_TRIES
from cosmic_curriculum.workspace.config import CurriculumConfig
from cosmic_curriculum.workspace.config_file import load_config
from cosmic_curriculum.workspace.state import Attempt, Candidate, CurriculumState

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
    "TrainingContinued": t.TrainingContinued("TIMEOUT", NOW, "checkpoints/x/step_5.zip", "id-c1"),
    "CandidateContinued": t.CandidateContinued(2, "PREEMPTED", NOW, None, "id-c2-cont1"),
    "CandidateLaunched": t.CandidateLaunched(2, resume=None, now=NOW),
    "CandidateStarted": t.CandidateStarted(2, pgid=43, pid=43, start_time=8),
    "CandidateTrained": t.CandidateTrained(2, {"timesteps": 9, "total": 9}),
    "CandidateFailed": t.CandidateFailed(2, "training command exited with status 1"),
    "CandidateEvaluated": t.CandidateEvaluated(2, {**PASSING, "id": "ev-c2"}),
    "CandidateChosen": t.CandidateChosen(),
    "EvaluationStarted": t.EvaluationStarted(history_before=3),
    "EvaluationFailed": t.EvaluationFailed("evaluation command exited with status 2"),
    "Evaluated": t.Evaluated("ev-1"),
    "Decide": t.Decide({**PASSING, "id": "ev-1"}, NOW),
    "Committed": t.Committed(),
    "Interrupted": t.Interrupted(),
    "ForceRetry": t.ForceRetry("try again", "ann"),
    "SkipStage": t.SkipStage("good enough", NOW, "ann"),
    "ConfigRecorded": t.ConfigRecorded(["h1", "h2"], "cfg", [{"name": "a"}, {"name": "b"}]),
    "ReferenceChanged": t.ReferenceChanged("exec:./fixed-bot"),
    "PushTried": t.PushTried(ok=False),
    "NotificationQueued": t.NotificationQueued({"id": "n-1", "event": "blocked"}),
    "NotificationSent": t.NotificationSent("n-1"),
    "NotificationFailed": t.NotificationFailed("n-1"),
}

# Written out by hand (not derived from phases.EDGES): the phase each event leaves, per phase;
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
    "TrainingContinued": (_, "training", _, _, _, _),
    "CandidateContinued": (_, "training", _, _, _, _),
    "CandidateLaunched": (_, "training", _, _, _, _),
    "CandidateStarted": (_, "training", _, _, _, _),
    "CandidateTrained": (_, "training", _, _, _, _),
    "CandidateFailed": (_, "training", _, _, _, _),
    "CandidateEvaluated": (_, _, "trained", _, _, _),
    "CandidateChosen": (_, _, "trained", _, _, _),
    "EvaluationStarted": (_, _, "trained", _, _, _),
    "EvaluationFailed": (_, _, "trained", _, _, _),
    "Evaluated": (_, _, "evaluated", _, _, _),
    "Decide": (_, _, _, "decided", _, _),
    "Committed": (_, _, _, _, "committed", _),
    "Interrupted": ("none", "training", "trained", "evaluated", "decided", "committed"),
    "ForceRetry": (_, _, _, _, _, _),
    "SkipStage": (_, _, _, _, _, _),
    "ConfigRecorded": ("none", "training", "trained", "evaluated", "decided", "committed"),
    "ReferenceChanged": (_, "training", "trained", _, _, _),
    "PushTried": ("none", "training", "trained", "evaluated", "decided", "committed"),
    "NotificationQueued": ("none", "training", "trained", "evaluated", "decided", "committed"),
    "NotificationSent": ("none", "training", "trained", "evaluated", "decided", "committed"),
    "NotificationFailed": ("none", "training", "trained", "evaluated", "decided", "committed"),
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


# The candidate events act on an attempt with candidates (`candidates = K > 1`): the
# phases of its candidates 1..3 that each event needs (the others run on a K = 1 attempt).
CANDIDATE_PHASES: dict[str, tuple[str, ...]] = {
    "CandidateContinued": ("trained", "training", "failed"),
    "CandidateLaunched": ("trained", "failed", "training"),
    "CandidateStarted": ("trained", "training", "training"),
    "CandidateTrained": ("trained", "training", "failed"),
    "CandidateFailed": ("trained", "training", "training"),
    "CandidateEvaluated": ("evaluated", "trained", "evaluated"),
    "CandidateChosen": ("evaluated", "evaluated", "evaluated"),
}


def with_candidates(state: CurriculumState, phases: tuple[str, ...]) -> CurriculumState:
    if state.in_flight is not None:
        state.in_flight.candidates = [
            Candidate(k=k, experiment=f"curric-s1-score-c{k}", seed=k, phase=phase, score=0.5)
            for k, phase in enumerate(phases, start=1)
        ]
    return state


def test_the_table_covers_every_event_and_phase() -> None:
    assert set(TABLE) == set(EVENTS) == {e.__name__ for e in phases.EDGES}
    assert all(len(row) == len(PHASES) for row in TABLE.values())


@pytest.mark.parametrize("event", list(TABLE))
@pytest.mark.parametrize("index", range(len(PHASES)))
def test_every_phase_and_event(config: CurriculumConfig, event: str, index: int) -> None:
    state = state_in(PHASES[index])
    if event in CANDIDATE_PHASES:
        state = with_candidates(state, CANDIDATE_PHASES[event])
    before = state.model_dump()
    expected = TABLE[event][index]
    if expected == "x":
        with pytest.raises(phases.InvalidTransition):
            t.apply(state, config, EVENTS[event])
    else:
        assert phases.phase_of(t.apply(state, config, EVENTS[event])) == expected
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
    assert phases.next_step(state) == step


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
    assert phases.next_step(retry) == "begin"
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
    # A remote evaluation's launch time names its job; a failure forgets both.
    remote = t.apply(state_in("trained"), config, t.EvaluationStarted(5, now="T1"))
    assert remote.in_flight is not None and remote.in_flight.eval_launched_at == "T1"
    assert started.in_flight.eval_launched_at is None  # a local one records none
    failed_remote = t.apply(remote, config, EVENTS["EvaluationFailed"])
    assert failed_remote.in_flight is not None
    assert failed_remote.in_flight.eval_launched_at is None


def test_the_outbox_keeps_unsent_notifications_once_each_and_empties_to_none(
    config: CurriculumConfig,
) -> None:
    state = state_in("committed")
    for key in ("a", "b", "a"):  # queuing an id again replaces it (no duplicate delivery)
        state = t.apply(state, config, t.NotificationQueued({"id": key, "n": 1}))
    assert [n["id"] for n in state.notify_outbox or []] == ["b", "a"]
    state = t.apply(state, config, t.NotificationSent("b"))
    assert state.notify_outbox == [{"id": "a", "n": 1}]
    state = t.apply(state, config, t.NotificationSent("a"))
    assert state.notify_outbox is None and "notify_outbox" not in state.to_json()
    for k in range(t.OUTBOX_LIMIT + 5):
        state = t.apply(state, config, t.NotificationQueued({"id": str(k)}))
    outbox = state.notify_outbox or []
    assert len(outbox) == t.OUTBOX_LIMIT and outbox[-1]["id"] == str(t.OUTBOX_LIMIT + 4)


@pytest.mark.parametrize(
    ("tries", "permanent", "left"),
    [
        (None, False, 1),  # first failure: kept, counted
        (NOTIFY_MAX_TRIES - 2, False, NOTIFY_MAX_TRIES - 1),
        (NOTIFY_MAX_TRIES - 1, False, None),  # the last try: dropped
        (None, True, None),  # refused for good: dropped at once
        ("x", False, 1),  # a hand-edited count starts again
        (-3, False, 1),
    ],
)
def test_a_failed_notification_stays_a_bounded_number_of_tries(
    config: CurriculumConfig, tries: Any, permanent: bool, left: int | None
) -> None:
    note: dict[str, Any] = {"id": "a"} if tries is None else {"id": "a", "tries": tries}
    state = state_in("committed", notify_outbox=[note, {"id": "b"}])
    state = t.apply(state, config, t.NotificationFailed("a", permanent=permanent))
    outbox = state.notify_outbox or []
    assert outbox[-1] == {"id": "b"}  # the notes behind it are untouched
    assert ([n.get("tries") for n in outbox if n["id"] == "a"] or [None])[0] == left


def test_architecture_doc_shows_the_diagram_of_the_table() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md").read_text()
    assert phases.mermaid_diagram() in doc, "regenerate the diagram: phases.mermaid_diagram()"


@pytest.fixture(scope="module")
def k3_config(tmp_path_factory: pytest.TempPathFactory) -> CurriculumConfig:
    path = tmp_path_factory.mktemp("cfg3") / "stages.toml"
    path.write_text("candidates = 3\n" + stages_toml(stages=["score", "defend"], max_retries=1))
    return load_config(path)


def test_k_1_begins_an_attempt_without_candidates(config: CurriculumConfig) -> None:
    state = t.apply(CurriculumState(), config, EVENTS["BeginAttempt"])
    assert state.in_flight is not None and state.in_flight.candidates is None
    assert "candidates" not in state.to_json()["in_flight"]


def test_k_candidates_train_choose_the_best_and_the_fresh_record_decides(
    k3_config: CurriculumConfig,
) -> None:
    state = t.apply(CurriculumState(), k3_config, EVENTS["BeginAttempt"])
    flight = state.in_flight
    assert flight is not None and flight.candidates is not None
    assert [(c.k, c.experiment, c.seed, c.phase) for c in flight.candidates] == [
        (k, f"curric-s1-score-c{k}", k, "training") for k in (1, 2, 3)
    ]
    for k in (1, 2, 3):
        state = t.apply(state, k3_config, t.CandidateLaunched(k, None, NOW))
        state = t.apply(state, k3_config, t.CandidateStarted(k, 40 + k, 40 + k, 1))
    state = t.apply(state, k3_config, t.CandidateTrained(1))
    with pytest.raises(phases.InvalidTransition):  # candidates 2 and 3 still train
        t.apply(state, k3_config, t.Trained())
    state = t.apply(state, k3_config, t.CandidateFailed(2, "exited with status 3"))
    state = t.apply(state, k3_config, t.CandidateTrained(3))
    failed = t.apply(state, k3_config, t.TrainingFailed("candidate 2 failed"))
    assert failed.in_flight is not None and failed.in_flight.error == "candidate 2 failed"
    assert [c.phase for c in failed.in_flight.candidates or []] == ["trained", "failed", "trained"]
    # the next run trains only candidate 2 again
    state = t.apply(failed, k3_config, t.CandidateLaunched(2, "checkpoints/x/step_5.zip", NOW))
    assert state.in_flight is not None and state.in_flight.error is None
    state = t.apply(state, k3_config, t.CandidateTrained(2))
    state = t.apply(state, k3_config, t.Trained())
    assert phases.next_step(state) == "evaluate"
    records = {1: (40, 50, 10), 2: (60, 30, 10), 3: (60, 30, 10)}  # 2 and 3 tie: 2 wins
    for k, (wa, wb, d) in records.items():
        with pytest.raises(phases.InvalidTransition):
            t.apply(state, k3_config, t.CandidateChosen())
        record = {"wins_a": wa, "wins_b": wb, "draws": d, "episodes": 100, "id": f"ev-c{k}"}
        state = t.apply(state, k3_config, t.CandidateEvaluated(k, record))
    with pytest.raises(phases.InvalidTransition):  # the fresh record needs a choice first
        t.apply(state, k3_config, t.Evaluated("ev-fresh"))
    state = t.apply(state, k3_config, t.CandidateChosen())
    assert state.in_flight is not None
    assert (state.in_flight.chosen, state.in_flight.experiment) == (2, "curric-s1-score-c2")
    state = t.apply(state, k3_config, t.Evaluated("ev-fresh"))
    decided = t.apply(state, k3_config, t.Decide({**FAILING, "id": "ev-fresh"}, NOW))
    entry = decided.log[-1]
    assert (entry.experiment, entry.decision, entry.eval_id) == (
        "curric-s1-score-c2",
        "fail",  # the fresh evaluation alone decides, whatever the selection scored
        "ev-fresh",
    )
    assert entry.candidates is not None
    assert [(c["k"], c["eval_id"], c.get("chosen")) for c in entry.candidates] == [
        (1, "ev-c1", None),
        (2, "ev-c2", True),
        (3, "ev-c3", None),
    ]
    # the retry and --skip-to-next-stage stand for the chosen candidate
    assert attempt_experiment(decided, k3_config, 0, 0) == "curric-s1-score-c2"


def test_candidate_events_need_candidates_in_the_right_phase(k3_config: CurriculumConfig) -> None:
    plain = state_in("training")
    with pytest.raises(phases.InvalidTransition):
        t.apply(plain, k3_config, t.CandidateLaunched(1, None, NOW))
    state = t.apply(CurriculumState(), k3_config, EVENTS["BeginAttempt"])
    with pytest.raises(phases.InvalidTransition):  # not launched or trained yet: no record
        t.apply(state, k3_config, t.CandidateStarted(4, 1, 1, 1))
    state = t.apply(state, k3_config, t.CandidateTrained(1))
    with pytest.raises(phases.InvalidTransition):  # trained is final: never trained twice
        t.apply(state, k3_config, t.CandidateLaunched(1, None, NOW))
    interrupted = t.apply(
        t.apply(state, k3_config, t.CandidateStarted(2, 9, 9, 9)), k3_config, t.Interrupted()
    )
    assert interrupted.in_flight is not None and interrupted.in_flight.interrupted
    assert all(c.pgid is None for c in interrupted.in_flight.candidates or [])


# The status axis, written out by hand: the status each event leaves, starting in each
# status, with the attempt in flight in the first phase the event may happen in; "x" =
# refused. A blocked curriculum waits for a human, a done one for nothing: no attempt
# moves in either; a decision's commit and news, and what any run does, happen in all.
STATUSES = ("in_progress", "blocked", "done")
STATUS_TABLE: dict[str, tuple[str, str, str]] = {
    #                     in_progress    blocked         done
    "BeginAttempt": ("in_progress", _, _),
    "Resumed": ("in_progress", "blocked", "done"),
    "TrainingLaunched": ("in_progress", _, _),
    "TrainerStarted": ("in_progress", _, _),
    "Trained": ("in_progress", _, _),
    "TrainingFailed": ("in_progress", _, _),
    "TrainingContinued": ("in_progress", _, _),
    "CandidateContinued": ("in_progress", _, _),
    "CandidateLaunched": ("in_progress", _, _),
    "CandidateStarted": ("in_progress", _, _),
    "CandidateTrained": ("in_progress", _, _),
    "CandidateFailed": ("in_progress", _, _),
    "CandidateEvaluated": ("in_progress", _, _),
    "CandidateChosen": ("in_progress", _, _),
    "EvaluationStarted": ("in_progress", _, _),
    "EvaluationFailed": ("in_progress", _, _),
    "Evaluated": ("in_progress", _, _),
    "Decide": ("in_progress", _, _),  # a pass of stage 1 of 2
    "Committed": ("in_progress", "blocked", "done"),
    "Interrupted": ("in_progress", "blocked", "done"),
    "ForceRetry": (_, "in_progress", _),
    "SkipStage": (_, "in_progress", _),
    "ConfigRecorded": ("in_progress", "blocked", "done"),
    "ReferenceChanged": ("in_progress", _, _),
    "PushTried": ("in_progress", "blocked", "done"),
    "NotificationQueued": ("in_progress", "blocked", "done"),
    "NotificationSent": ("in_progress", "blocked", "done"),
    "NotificationFailed": ("in_progress", "blocked", "done"),
}


def test_the_status_table_covers_every_event() -> None:
    assert set(STATUS_TABLE) == set(TABLE)


@pytest.mark.parametrize("event", list(STATUS_TABLE))
@pytest.mark.parametrize("index", range(len(STATUSES)))
def test_every_status_and_event(config: CurriculumConfig, event: str, index: int) -> None:
    status = STATUSES[index]
    phase = next((PHASES[i] for i, p in enumerate(TABLE[event]) if p != "x"), "committed")
    stage = {"in_progress": 0, "blocked": 0, "done": len(config.stages)}[status]
    state = state_in(phase, status=status, stage_index=min(stage, 1), attempt=2)
    state.stage_index = stage
    if event in CANDIDATE_PHASES:
        state = with_candidates(state, CANDIDATE_PHASES[event])
    before = state.model_dump()
    expected = STATUS_TABLE[event][index]
    if expected == "x":
        with pytest.raises(phases.InvalidTransition):
            t.apply(state, config, EVENTS[event])
    else:
        assert t.apply(state, config, EVENTS[event]).status == expected
    assert state.model_dump() == before
