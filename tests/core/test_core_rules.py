"""The core's rules besides the transitions, each a table: override legality, where a new
attempt resumes from, which record an evaluation adopts, the evaluation seeds, what an
evaluation record means, and what comes next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes.workspace import stages_toml

from cosmic_curriculum.core.decisions import gate_verdict, record_score
from cosmic_curriculum.core.next_action import describe, next_action
from cosmic_curriculum.core.rules import (
    adopts_appended_record,
    decision_news,
    evaluation_seed,
    forgetting_opponents,
    fresh_seed,
    notifier_outcome,
    override_ruling,
    own_record,
    reference_change,
    resume_choice,
)
from cosmic_curriculum.defaults import NOTIFY_REFUSED_EXIT
from cosmic_curriculum.workspace.config import CurriculumConfig, GateSettings
from cosmic_curriculum.workspace.config_file import load_config
from cosmic_curriculum.workspace.state import Attempt, Candidate, CurriculumState, LogEntry

T0 = "2026-11-30T12:00:00+00:00"
BEFORE = "2026-11-30T11:00:00+00:00"
AFTER = "2026-11-30T13:00:00+00:00"


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> CurriculumConfig:
    path = tmp_path_factory.mktemp("cfg") / "stages.toml"
    path.write_text(stages_toml(stages=["score", "defend", "attack"], max_retries=1))
    return load_config(path)


# --------------------------------------------------------------------------- overrides


@pytest.mark.parametrize(
    ("status", "force", "skip", "reason", "ruling", "flag"),
    [
        ("in_progress", False, False, False, "none", None),
        ("done", False, False, False, "none", None),
        ("blocked", False, False, False, "blocked", None),
        ("blocked", True, False, True, "apply", "--force-retry"),
        ("blocked", False, True, False, "apply", "--skip-to-next-stage"),
        ("in_progress", True, False, False, "not_blocked", "--force-retry"),
        ("done", False, True, True, "not_blocked", "--skip-to-next-stage"),
        ("blocked", True, True, True, "both", None),
        ("in_progress", True, True, False, "both", None),
        ("blocked", False, False, True, "reason_alone", None),
        ("in_progress", False, False, True, "reason_alone", None),
    ],
)
def test_override_ruling(
    status: str, force: bool, skip: bool, reason: bool, ruling: str, flag: str | None
) -> None:
    assert override_ruling(status, force, skip, reason) == (ruling, flag)


# --------------------------------------------------------------------------- resume


def passed(stage: int, experiment: str) -> LogEntry:
    return LogEntry(stage_index=stage, experiment=experiment, attempt=0, decision="pass")


def failed(stage: int, experiment: str, attempt: int, **extra: Any) -> LogEntry:
    return LogEntry(
        stage_index=stage, experiment=experiment, attempt=attempt, decision="fail", **extra
    )


S1, S2 = "curric-s1-score", "curric-s2-defend"
LOG = [passed(0, S1), failed(1, S2, 0)]
C3 = "curric-s2-defend-c3"
CHOSEN = [passed(0, S1), failed(1, C3, 0, candidates=[{"k": 3}])]


@pytest.mark.parametrize(
    ("stage", "attempt", "log", "finals", "seed", "expected"),
    [
        (0, 0, [], set(), False, ("scratch", None)),
        (0, 0, [], set(), True, ("seed", None)),
        (0, 1, [failed(0, S1, 0)], {S1}, True, ("previous_attempt", S1)),
        (0, 1, [failed(0, S1, 0)], set(), True, ("scratch", None)),  # seed: first only
        (1, 0, LOG[:1], {S1}, False, ("previous_pass", S1)),
        (1, 0, LOG[:1], set(), False, ("scratch", None)),
        (1, 1, LOG, {S1, S2}, False, ("previous_attempt", S2)),
        (1, 1, LOG, {S1}, False, ("previous_pass", S1)),  # the retry's parent is gone
        (
            1,
            1,
            CHOSEN,
            {S1, "curric-s2-defend-c3"},
            False,
            ("previous_attempt", CHOSEN[1].experiment),
        ),
        (1, 0, [], {S1}, False, ("previous_pass", None)),  # the log lost the pass
    ],
)
def test_resume_choice(
    config: CurriculumConfig,
    stage: int,
    attempt: int,
    log: list[LogEntry],
    finals: set[str],
    seed: bool,
    expected: tuple[str, str | None],
) -> None:
    state = CurriculumState(stage_index=stage, attempt=attempt, log=log)
    got = resume_choice(
        state, config, stage, attempt, has_final=lambda e: e in finals, seed_given=seed
    )
    assert got == expected


# --------------------------------------------------------------------------- records


def record(experiment: str, created: str, **tags: Any) -> dict[str, Any]:
    return {"id": f"ev-{experiment}-{created[11:13]}", "curriculum_experiment": experiment,
            "created_at": created, **tags}  # fmt: skip


OLD, NEW = record(S1, BEFORE), record(S1, AFTER)
PICK = record(S1, AFTER, selection="candidate", candidate_k=1)
FRESH = record(S1, AFTER, selection="fresh", candidate_k=1)


@pytest.mark.parametrize(
    ("records", "selection", "expected"),
    [
        ([], None, None),
        ([OLD], None, None),  # before this training started: a curriculum started over
        ([OLD, NEW], None, NEW),
        ([NEW, record(S2, AFTER)], None, NEW),
        ([{k: v for k, v in NEW.items() if k != "id"}], None, None),  # no id: not ours
        ([NEW, PICK], "candidate", PICK),
        ([PICK], None, None),  # a selection record never stands for the attempt's own
        ([PICK, FRESH], "fresh", FRESH),
        # a record with a malformed time counts as written after: adopted, never evaluated twice
        ([record(S1, "garbage")], None, record(S1, "garbage")),
    ],
)
def test_own_record(
    records: list[dict[str, Any]], selection: str | None, expected: dict[str, Any] | None
) -> None:
    assert own_record(records, S1, T0, selection) == expected


VS_1 = record(S1, AFTER, against_stage=0)
VS_2 = record(S1, AFTER, against_stage=1)
FRESH_VS_1 = record(S1, AFTER, selection="fresh", candidate_k=1, against_stage=0)


@pytest.mark.parametrize(
    ("records", "selection", "against", "expected"),
    [
        ([NEW, VS_1], None, None, NEW),  # a forgetting comparison never stands for it
        ([NEW, VS_1], None, 0, VS_1),
        ([NEW, VS_1], None, 1, None),  # not played yet: play it
        ([VS_1, VS_2], None, 1, VS_2),
        ([FRESH, FRESH_VS_1], "fresh", 0, FRESH_VS_1),
        ([FRESH_VS_1], None, 0, None),
        ([record(S1, BEFORE, against_stage=0)], None, 0, None),  # a curriculum started over
    ],
)
def test_own_record_of_a_forgetting_comparison(
    records: list[dict[str, Any]],
    selection: str | None,
    against: int | None,
    expected: dict[str, Any] | None,
) -> None:
    assert own_record(records, S1, T0, selection, against) == expected


def _log(*entries: LogEntry) -> CurriculumState:
    return CurriculumState(log=list(entries))


SKIPPED = LogEntry(stage_index=1, experiment="b", attempt=2, decision="pass", override="skip")


@pytest.mark.parametrize(
    ("state", "stage", "reference", "expected"),
    [
        (_log(), 0, "bots/rookie.json", []),
        (_log(passed(0, "a")), 1, "bots/a.json", []),  # stage 1's bot is the reference
        (_log(passed(0, "a")), 1, "bots/rookie.json", [(0, "a")]),  # a configured one
        (_log(passed(0, "a"), passed(1, "b")), 2, "bots/b.json", [(0, "a")]),
        (_log(passed(0, "a"), passed(1, "b")), 2, "bots/x.json", [(0, "a"), (1, "b")]),
        # a retried stage: its passing attempt, not the failed one
        (
            _log(passed(0, "a"), failed(1, "b", 0), passed(1, "b-r1")),
            2,
            "bots/r.json",
            [(0, "a"), (1, "b-r1")],
        ),
        # a stage passed by --skip-to-next-stage: the bot the curriculum went on with
        (_log(passed(0, "a"), SKIPPED), 2, "bots/r.json", [(0, "a"), (1, "b")]),
    ],
)
def test_forgetting_opponents(
    state: CurriculumState, stage: int, reference: str, expected: list[tuple[int, str]]
) -> None:
    assert forgetting_opponents(state, stage, reference, lambda e: f"bots/{e}.json") == expected


@pytest.mark.parametrize(
    ("command", "before", "n", "adopts"),
    [(True, 3, 4, True), (True, 3, 3, False), (True, None, 4, False), (False, 3, 4, False)],
)
def test_adopts_appended_record(command: bool, before: int | None, n: int, adopts: bool) -> None:
    assert adopts_appended_record(command, before, n) is adopts


def test_evaluation_seeds_come_from_names_and_the_fresh_one_is_unused() -> None:
    assert evaluation_seed(S1) == evaluation_seed(S1) != evaluation_seed(S2)
    assert 0 <= evaluation_seed(S1) < 2**32
    flight = Attempt(
        stage_index=0,
        attempt=0,
        experiment=S1,
        candidates=[
            Candidate(k=k, experiment=f"{S1}-c{k}", seed=k, phase="trained") for k in (1, 2, 3)
        ],
    )
    used = {evaluation_seed(c.experiment) for c in flight.candidates or []}
    assert fresh_seed(flight) not in used and fresh_seed(flight) == fresh_seed(flight)


# --------------------------------------------------------------------------- records' meaning


COUNTS = {"wins_a": 30, "wins_b": 60, "draws": 10, "episodes": 100}


@pytest.mark.parametrize(
    ("rec", "verdict"),
    [
        ({**COUNTS, "gate": {"verdict": "pass", "summary": "own words"}}, ("pass", "own words")),
        ({**COUNTS, "gate": {"verdict": "continue"}}, "fail"),  # not a verdict: the counts
        (COUNTS, "fail"),  # gap 0.30 >= 0.15
        ({**COUNTS, "wins_a": 55, "wins_b": 45}, "pass"),
    ],
)
def test_gate_verdict(rec: dict[str, Any], verdict: Any) -> None:
    got = gate_verdict(GateSettings(), rec)
    assert got == verdict if isinstance(verdict, tuple) else got[0] == verdict


@pytest.mark.parametrize(
    ("counts", "score"),
    [
        (COUNTS, 0.35),
        ({"wins_a": 0, "draws": 0, "episodes": 0}, 0.0),
        ({"wins_a": 2, "draws": 2, "episodes": 4}, 0.75),
    ],
)
def test_record_score(counts: dict[str, int], score: float) -> None:
    assert record_score(counts) == pytest.approx(score)


@pytest.mark.parametrize(
    ("status", "decision", "news"),
    [
        ("in_progress", "pass", "passed"),
        ("in_progress", "fail", "failed"),
        ("blocked", "fail", "blocked"),
        ("done", "pass", "done"),
    ],
)
def test_decision_news(status: str, decision: str, news: str) -> None:
    entry = LogEntry(stage_index=0, experiment=S1, attempt=0, decision=decision)
    assert decision_news(CurriculumState(status=status, log=[entry])) == news


# --------------------------------------------------------------------------- what next


def flight(phase: str, error: str | None = None, decision: str | None = None) -> Attempt:
    return Attempt(
        stage_index=1, attempt=1, experiment="curric-s2-defend-retry1", phase=phase,
        error=error, decision=decision,
    )  # fmt: skip


NAMES = ["score", "defend", "attack"]
R1 = "curric-s2-defend-retry1"


@pytest.mark.parametrize(
    ("status", "in_flight", "config_error", "in_commit", "kind", "text"),
    [
        ("in_progress", None, None, False, "start", f"`run` to start {R1}"),
        ("in_progress", flight("training"), None, False, "resume", f"`run` to resume {R1}"),
        ("in_progress", flight("committed"), None, False, "start", f"`run` to start {R1}"),
        ("in_progress", flight("trained", error="boom"), None, False, "fix_error",
         "fix the cause of the error of curric-s2-defend-retry1 (boom; see "
         "logs/curric-s2-defend-retry1.log), then `run` retries it"),
        ("in_progress", flight("decided", decision="fail"), None, False, "finish",
         "`run` to finish curric-s2-defend-retry1: its decision (fail) is saved but its "
         "review, curves and commit are pending"),
        ("in_progress", flight("decided", decision="fail"), None, True, "start", None),
        ("blocked", flight("decided"), None, True, "review",
         'review logs/review-defend.md, then `run --force-retry --reason "..."` or '
         '`run --skip-to-next-stage --reason "..."`'),
        ("blocked", flight("committed"), None, False, "review", None),
        ("done", flight("committed"), None, False, "done", "nothing: every stage passed"),
        ("done", flight("decided"), None, False, "finish", None),
        ("blocked", flight("committed"), "bad", False, "fix_config", "fix the config: bad"),
    ],
)  # fmt: skip
def test_next_action(
    status: str,
    in_flight: Attempt | None,
    config_error: str | None,
    in_commit: bool,
    kind: str,
    text: str | None,
) -> None:
    state = CurriculumState(stage_index=1, attempt=1, status=status, in_flight=in_flight)
    action = next_action(state, NAMES, config_error, in_commit=in_commit)
    assert action.kind == kind
    if text is not None:
        assert describe(action, lambda *flags: " ".join(["run", *flags])) == text


def test_next_action_past_the_configured_stages_names_no_experiment() -> None:
    state = CurriculumState(stage_index=5, attempt=0)
    assert describe(next_action(state, NAMES), lambda *f: "run") == "`run` to start ?"


def test_paths_in_texts_are_the_workspaces(tmp_path: Path) -> None:
    # the rules say workspace-relative paths; the shell spells the command
    state = CurriculumState(stage_index=0, attempt=2, status="blocked")
    text = describe(next_action(state, NAMES), lambda *f: f"cc {' '.join(f)} --workspace W")
    assert text.startswith("review logs/review-score.md, then `cc --force-retry")


def _flight(phase_: str, eval_id: str | None = None, **candidate: Any) -> Attempt:
    """An attempt in ``phase_``; ``candidate``: the fields of its candidate 1 (``c_``
    prefixed: ``c_eval_id``), with a candidate 2 still to evaluate; none when empty."""
    candidate = {k.removeprefix("c_"): v for k, v in candidate.items()}
    cands = None
    if candidate:
        cands = [
            Candidate(k=1, experiment="curric-s1-a-c1", seed=1, **candidate),
            Candidate(k=2, experiment="curric-s1-a-c2", seed=2, phase="trained"),
        ]
    return Attempt(
        stage_index=0, attempt=0, experiment="curric-s1-a", phase=phase_, eval_id=eval_id,
        candidates=cands,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("flight", "accepted", "change"),
    [
        (_flight("training"), False, "apply"),
        (_flight("trained"), False, "apply"),  # trained, its evaluation failed or not run
        (_flight("trained"), True, "apply"),
        (_flight("evaluated", "ev-1"), True, "keep"),  # its record decides
        (_flight("decided", "ev-1"), True, "keep"),
        (_flight("committed", "ev-1"), True, "keep"),
        (_flight("trained").model_copy(update={"history_before": 3}), True, "keep"),
        (_flight("trained").model_copy(update={"eval_launched_at": T0}), True, "keep"),
        (_flight("trained", phase="trained"), False, "apply"),  # no candidate evaluated
        (_flight("trained", phase="evaluated", c_eval_id="ev-c1", score=0.5), False, "keep"),
        (_flight("trained", phase="evaluated", c_eval_id="ev-c1", score=0.5), True, "replay"),
        (_flight("trained", phase="trained", history_before=2), True, "keep"),  # under way
    ],
)
def test_reference_change(flight: Attempt, accepted: bool, change: str) -> None:
    assert reference_change(flight, accepted) == change


def test_a_replayed_reference_change_evaluates_the_candidates_again(
    config: CurriculumConfig,
) -> None:
    from cosmic_curriculum.core import transitions as t

    state = CurriculumState()
    flight = _flight("trained", phase="evaluated", c_eval_id="ev-c1", score=0.5)
    state.in_flight = flight.model_copy(update={"reference": "exec:./old"})
    after = t.apply(state, config, t.ReferenceChanged("exec:./new", replay=True))
    assert after.in_flight is not None
    assert (after.in_flight.reference, after.in_flight.reference_was) == (
        "exec:./new",
        "exec:./old",
    )
    c1 = (after.in_flight.candidates or [])[0]
    assert (c1.phase, c1.eval_id, c1.score) == ("trained", None, None)


@pytest.mark.parametrize(
    ("code", "outcome"),
    [
        (0, "sent"),
        (NOTIFY_REFUSED_EXIT, "refused"),
        (1, "failed"),
        (75, "failed"),
        (-9, "failed"),
        (None, "failed"),
    ],
)
def test_notifier_outcome(code: int | None, outcome: str) -> None:
    assert notifier_outcome(code) == outcome
