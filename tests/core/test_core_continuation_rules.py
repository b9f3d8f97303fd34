"""Continuations of a training a time limit or preemption ended: the rule (continue, or the
attempt's error naming the setting) as a table, and what the transitions record."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.workspace import stages_toml

from cosmic_curriculum.core import transitions as t
from cosmic_curriculum.core.phases import InvalidTransition
from cosmic_curriculum.core.rules import continuation_problem
from cosmic_curriculum.workspace.config import CurriculumConfig
from cosmic_curriculum.workspace.config_file import load_config
from cosmic_curriculum.workspace.state import CurriculumState

T0, T1, T2 = (f"2026-12-01T1{h}:00:00+00:00" for h in (0, 1, 2))
PASSING = {"wins_a": 60, "wins_b": 30, "draws": 10, "episodes": 100, "id": "ev-1"}


@pytest.mark.parametrize(
    ("done", "limit", "continues"),
    [(0, 20, True), (19, 20, True), (20, 20, False), (0, 1, True), (1, 1, False), (0, 0, False)],
)
def test_continue_within_max_continuations_else_an_error_naming_it(
    done: int, limit: int, continues: bool
) -> None:
    problem = continuation_problem(done, limit, "TIMEOUT")
    if continues:
        assert problem is None
    else:
        assert problem is not None
        assert f"[launcher] max_continuations = {limit}" in problem
        assert "TIMEOUT" in problem and f"after {done} continuation" in problem
        assert "raise it in stages.toml" in problem  # the fix


def config_with(tmp_path: Path, max_continuations: int, candidates: int = 1) -> CurriculumConfig:
    path = tmp_path / "stages.toml"
    toml = stages_toml(stages=["score"])
    path.write_text(
        f"candidates = {candidates}\n{toml}\n[launcher]\nmax_continuations = {max_continuations}\n"
    )
    return load_config(path)


def launched(config: CurriculumConfig) -> CurriculumState:
    state = t.apply(CurriculumState(), config, t.BeginAttempt(None, "bots/r.json", 9, T0))
    state = t.apply(state, config, t.TrainingLaunched(None, T0))
    return t.apply(state, config, t.TrainerStarted(7, 7, 70))


def test_a_continuation_is_a_new_launch_of_the_same_attempt(tmp_path: Path) -> None:
    config = config_with(tmp_path, 2)
    state = launched(config)
    step = "checkpoints/curric-s1-score/step_200.zip"
    state = t.apply(state, config, t.TrainingContinued("TIMEOUT", T1, step, "id-1"))
    flight = state.in_flight
    assert flight is not None
    assert (flight.attempt, state.attempt, flight.phase, flight.error) == (0, 0, "training", None)
    assert (flight.started_at, flight.last_resume, flight.pgid) == (T1, step, None)
    # none saved yet: the attempt's own start again (its resume_from), still a continuation
    state = t.apply(state, config, t.TrainingContinued("PREEMPTED", T2, None, "id-2"))
    assert state.in_flight is not None and state.in_flight.last_resume is None
    done = state.in_flight.continuations or []
    assert [(c.reason, c.at, c.checkpoint, c.launch_id) for c in done] == [
        ("TIMEOUT", T1, step, "id-1"),
        ("PREEMPTED", T2, None, "id-2"),
    ]
    with pytest.raises(InvalidTransition):  # the shell must have made it the attempt's error
        t.apply(state, config, t.TrainingContinued("TIMEOUT", T2, None, "id-3"))
    state = t.apply(state, config, t.Trained())
    state = t.apply(state, config, t.Evaluated("ev-1"))
    state = t.apply(state, config, t.Decide(PASSING, T2))
    (entry,) = state.log
    assert entry.attempt == 0 and entry.decision == "pass"
    assert entry.continuations == [
        {"reason": "TIMEOUT", "at": T1, "checkpoint": step, "launch_id": "id-1"},
        {"reason": "PREEMPTED", "at": T2, "launch_id": "id-2"},
    ]


def test_an_interrupted_run_records_its_signal_until_the_next_launch(tmp_path: Path) -> None:
    config = config_with(tmp_path, 2)
    state = t.apply(launched(config), config, t.Interrupted(signal="SIGTERM"))
    assert state.in_flight is not None
    assert (state.in_flight.interrupted, state.in_flight.interrupted_by) == (True, "SIGTERM")
    for event in (t.TrainingLaunched(None, T1), t.TrainingContinued("SIGTERM", T1, None, "i")):
        after = t.apply(state, config, event).in_flight
        assert after is not None and (after.interrupted, after.interrupted_by) == (False, None)


def test_each_candidate_counts_its_own_and_the_entry_keeps_them(tmp_path: Path) -> None:
    config = config_with(tmp_path, 1, candidates=2)
    state = t.apply(CurriculumState(), config, t.BeginAttempt("prev.zip", "bots/r.json", 9, T0))
    for k in (1, 2):
        state = t.apply(state, config, t.CandidateLaunched(k, None, T0))
    state = t.apply(state, config, t.CandidateContinued(2, "NODE_FAIL", T1, None, "c2-1"))
    with pytest.raises(InvalidTransition):
        t.apply(state, config, t.CandidateContinued(2, "TIMEOUT", T2, None, "c2-2"))
    state = t.apply(state, config, t.CandidateContinued(1, "TIMEOUT", T2, "s.zip", "c1-1"))
    with pytest.raises(InvalidTransition):  # a K > 1 attempt continues its candidates
        t.apply(state, config, t.TrainingContinued("TIMEOUT", T2, None, "x"))
    assert state.in_flight is not None
    c1, c2 = state.in_flight.candidates or []
    assert (c1.last_resume, c2.last_resume, c2.started_at) == ("s.zip", "prev.zip", T1)
    for k in (1, 2):
        state = t.apply(state, config, t.CandidateTrained(k))
    state = t.apply(state, config, t.Trained())
    for k in (1, 2):
        state = t.apply(state, config, t.CandidateEvaluated(k, {**PASSING, "id": f"ev-c{k}"}))
    state = t.apply(state, config, t.CandidateChosen())
    state = t.apply(state, config, t.Evaluated("ev-1"))
    state = t.apply(state, config, t.Decide(PASSING, T2))
    (entry,) = state.log
    assert entry.continuations is None
    assert [c.get("continuations") for c in entry.candidates or []] == [
        [{"reason": "TIMEOUT", "at": T2, "checkpoint": "s.zip", "launch_id": "c1-1"}],
        [{"reason": "NODE_FAIL", "at": T1, "launch_id": "c2-1"}],
    ]
