"""core.decisions.judge: the gate's verdict on a finished record, with the figures a log
entry keeps, for records with and without head-to-head counts."""

from __future__ import annotations

from typing import Any

import pytest

from cosmic_curriculum.core.decisions import judge, judge_gate, record_score
from cosmic_curriculum.errors import StateError
from cosmic_curriculum.workspace.config import GateSettings
from cosmic_curriculum.workspace.history import validate_record

THRESHOLD = GateSettings(rule="threshold", target=0.9)
RETURN = GateSettings(rule="threshold", measure="return", target=0.5)
BOTH = GateSettings(rule=["threshold", "sprt"], target=0.9)


@pytest.mark.parametrize(
    ("settings", "record", "verdict", "said"),
    [
        # no opponent: successes and episodes are all the threshold rule reads
        (THRESHOLD, {"episodes": 30, "successes": 30}, "pass", "30/30 successes"),
        (THRESHOLD, {"episodes": 30, "successes": 3}, "fail", "3/30 successes"),
        (RETURN, {"episodes": 20, "returns": [1.0] * 20}, "pass", "mean return 1 over 20"),
        # several rules, all on the same episodes
        (
            BOTH,
            {"wins_a": 30, "wins_b": 0, "draws": 0, "episodes": 30, "successes": 30},
            "pass",
            "threshold: 30/30 successes",
        ),
        (
            BOTH,
            {"wins_a": 2, "wins_b": 20, "draws": 8, "episodes": 30, "successes": 30},
            "fail",
            "sprt: candidate 2–20 reference",
        ),
        # sprt needs head-to-head counts: a record without them fails, saying why
        (BOTH, {"episodes": 30, "successes": 30}, "fail", "no head-to-head counts"),
        (THRESHOLD, {"episodes": 30, "returns": [1.0] * 30}, "fail", "no 'successes'"),
    ],
)
def test_judge(settings: GateSettings, record: dict[str, Any], verdict: str, said: str) -> None:
    validate_record(record, "record")
    judged = judge(settings, record)
    assert judged.verdict == verdict
    assert said in judged.summary


def test_the_figures_a_log_entry_keeps() -> None:
    alone = judge(THRESHOLD, {"episodes": 30, "successes": 30}).figures
    assert alone["threshold"]["successes"] == 30 and alone["threshold"]["episodes"] == 30
    assert alone["threshold"]["target"] == 0.9 and alone["threshold"]["verdict"] == "pass"
    low, high = alone["threshold"]["success_rate_ci95"]
    assert 0.8 < low < 0.9 < high == pytest.approx(1.0)
    assert "rules" not in alone
    both = judge(
        BOTH, {"wins_a": 2, "wins_b": 20, "draws": 8, "episodes": 30, "successes": 30}
    ).figures
    assert both["rules"] == [
        {"rule": "threshold", "verdict": "pass"},
        {"rule": "sprt", "verdict": "fail"},
    ]
    assert both["threshold"]["successes"] == 30
    ret = judge(RETURN, {"episodes": 20, "returns": [0.0, 1.0] * 10}).figures["threshold"]
    assert ret["measure"] == "return" and ret["mean_return"] == 0.5
    assert len(ret["mean_return_ci95"]) == 2


def test_a_record_stopped_when_one_rule_failed_shows_the_other_undecided() -> None:
    # what the env evaluator writes when the threshold rule failed after 16 episodes
    record = {"wins_a": 8, "wins_b": 4, "draws": 4, "episodes": 16, "successes": 0}
    judged = judge(GateSettings(rule=["threshold", "sprt"], target=0.5), record)
    assert judged.verdict == "fail"
    assert [r["verdict"] for r in judged.figures["rules"]] == ["fail", "undecided"]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"successes": 3}, "'episodes' must be a non-negative integer, got None"),
        ({"episodes": 10}, "'wins_a' is missing; write wins_a, wins_b and draws"),
        (
            {"episodes": 10, "wins_a": 5, "successes": 3},
            "'wins_b' must be a non-negative integer, got None; a head-to-head record has all",
        ),
        ({"episodes": 10, "successes": 11}, "'successes' must be a whole number in [0, "),
    ],
)
def test_records_without_what_a_gate_reads_are_one_line_errors(
    record: dict[str, Any], message: str
) -> None:
    with pytest.raises(StateError) as caught:
        validate_record(record, "eval_history.json: record 0")
    text = str(caught.value)
    assert message in text and "\n" not in text


def test_a_record_without_wins_ranks_by_its_success_rate_or_mean_return() -> None:
    assert record_score({"episodes": 20, "successes": 15}) == 0.75
    assert record_score({"episodes": 2, "returns": [1.0, 3.0]}) == 2.0
    assert record_score({"wins_a": 3, "wins_b": 1, "draws": 0, "episodes": 4}) == 0.75


def _h2h(wa: int, wb: int, d: int, **tags: Any) -> dict[str, Any]:
    return {"wins_a": wa, "wins_b": wb, "draws": d, "episodes": wa + wb + d} | tags


EARLIER = {"against_stage": 0, "against_bot": "bots/s1.json", "comparisons_planned": 2}


@pytest.mark.parametrize(
    ("comparisons", "verdict", "listed", "said"),
    [
        (None, "pass", None, "→ pass"),  # against = "previous": the reference alone
        ([], "pass", None, "→ pass"),
        ([_h2h(5, 5, 0, **EARLIER)], "pass", ["pass"], "⇒ pass"),
        # 0-7 is p 2^-7 <= 0.05/2: a clear regression against stage 1 fails the gate
        ([_h2h(0, 7, 3, **EARLIER)], "fail", ["fail"], "a clear regression against stage 1"),
    ],
)
def test_the_whole_gate_joins_the_reference_and_the_earlier_bots(
    comparisons: list[dict[str, Any]] | None,
    verdict: str,
    listed: list[str] | None,
    said: str,
) -> None:
    margin = GateSettings(against="all")
    record = _h2h(50, 45, 5)  # passes its reference under the margin rule
    judged, figures = judge_gate(margin, record, comparisons)
    assert judged.verdict == verdict and said in judged.summary
    assert judged.summary.startswith(judge(margin, record).summary)
    assert judged.figures == judge(margin, record).figures  # the reference's own
    assert (None if figures is None else [f["verdict"] for f in figures]) == listed
