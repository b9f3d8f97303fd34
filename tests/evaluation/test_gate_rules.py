"""Several rules per stage: how their verdicts combine, the settings that name them, and
the gate's decision on counts when a stage requires e.g. threshold and sprt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from cosmic_curriculum.evaluation import evaluate
from cosmic_curriculum.evaluation.gate import decide
from cosmic_curriculum.evaluation.verdicts import Verdict, combined_verdict
from cosmic_curriculum.workspace.config import CurriculumConfig, GateSettings

REPO = Path(__file__).resolve().parents[2]
BOTH = GateSettings(rule=["threshold", "sprt"], target=0.5, max_episodes=100)
WITH_MARGIN = GateSettings(rule=["threshold", "margin"], target=0.5, episodes=40)


@pytest.mark.parametrize(
    ("verdicts", "combined"),
    [
        (["pass"], "pass"),
        (["fail"], "fail"),
        (["pass", "pass"], "pass"),
        (["pass", "continue"], "continue"),
        (["continue", "continue"], "continue"),
        (["continue", "fail"], "fail"),  # decided: the other rule cannot undo a fail
        (["pass", "fail"], "fail"),
        (["fail", "pass", "pass"], "fail"),
    ],
)
def test_combined_verdict(verdicts: list[Verdict], combined: str) -> None:
    assert combined_verdict(verdicts) == combined


@pytest.mark.parametrize(
    ("counts", "successes", "planned", "verdict", "rule_verdicts"),
    [
        # a bot that wins everything and succeeds every time: both pass
        ((30, 0, 0), 30, 100, "pass", ["pass", "pass"]),
        # reaches the target but loses to its reference: sprt fails it
        ((2, 20, 8), 30, 100, "fail", ["pass", "fail"]),
        # beats its reference but never succeeds: threshold fails it after 16 episodes
        # (LLR 16·ln(0.45/0.55) = −3.21), while sprt is still open
        ((8, 4, 4), 0, 100, "fail", ["fail", "undecided"]),
        # wins every game, never succeeds: one rule's pass does not outvote a fail
        ((16, 0, 0), 0, 100, "fail", ["fail", "pass"]),
        # too few games to tell: both still open
        ((3, 2, 1), 4, 100, "continue", ["continue", "continue"]),
        # at the cap every rule decides (sprt on the sign of its LLR)
        ((40, 30, 30), 55, 100, "pass", ["pass", "pass"]),
    ],
)
def test_threshold_and_sprt_on_the_same_episodes(
    counts: tuple[int, int, int],
    successes: int,
    planned: int,
    verdict: str,
    rule_verdicts: list[str],
) -> None:
    decision = decide(BOTH, *counts, planned_episodes=planned, successes=successes)
    assert decision.verdict == verdict
    assert decision.rule == "threshold+sprt"
    assert [r["verdict"] for r in decision.stats["rules"]] == rule_verdicts
    assert [r["rule"] for r in decision.stats["rules"]] == ["threshold", "sprt"]
    assert decision.summary.startswith("threshold: ") and "; sprt: " in decision.summary
    assert decision.summary.endswith(f"⇒ {verdict}")


def test_margin_among_the_rules_plays_its_episodes_unless_another_fails() -> None:
    assert WITH_MARGIN.planned_episodes == 40
    assert decide(WITH_MARGIN, 20, 10, 2, successes=30).verdict == "continue"  # 32 < 40
    assert decide(WITH_MARGIN, 25, 10, 5, successes=35).verdict == "pass"
    assert decide(WITH_MARGIN, 2, 2, 0, successes=0).verdict == "continue"  # 0/4: too few
    assert decide(WITH_MARGIN, 8, 8, 0, successes=0).verdict == "fail"  # threshold: 0/16
    assert decide(WITH_MARGIN, 5, 30, 5, successes=38).verdict == "fail"  # margin


def test_pair_scores_reach_the_sprt_rule_only() -> None:
    pairs = [1.0] * 15
    one = decide(BOTH, 30, 0, 0, pairs, planned_episodes=100, successes=30)
    sprt = next(r for r in one.stats["rules"] if r["rule"] == "sprt")
    assert sprt["stats"]["model"] == "pentanomial"


def test_one_rule_is_one_rule_and_keeps_its_hash() -> None:
    one = GateSettings(rule=["sprt"])
    assert one.rule == "sprt" and one.rules == ("sprt",) and one.rule_label == "sprt"
    listed = CurriculumConfig(stages=[{"name": "a"}], gate={"rule": ["sprt"]})
    assert listed.config_hash() == "fe510023c5e89e9c"  # the plain `rule = "sprt"`'s
    gated = {"rule": ["threshold", "sprt"], "target": 0.9}
    both = CurriculumConfig(stages=[{"name": "a", "gate": gated}])
    gate = both.stage_definitions()[0]["gate"]
    assert tuple(gate["rule"]) == ("threshold", "sprt") and gate["target"] == 0.9
    assert both.stage_gate(0).head_to_head and both.stage_gate(0).planned_episodes == 400


@pytest.mark.parametrize(
    ("rule", "extra", "message"),
    [
        ([], {}, "rule = []: name at least one rule"),
        (["sprt", "sprt"], {}, "a rule is named twice"),
        (["margin", "sprt"], {}, "margin and sprt both test the candidate against its reference"),
        (["threshold", "sprt"], {}, 'rule = "threshold" needs a target'),
        (["threshold", "chess"], {"target": 0.9}, "chess"),
    ],
)
def test_bad_rule_lists_are_one_line_errors(
    rule: list[str], extra: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        GateSettings(rule=rule, **extra)  # type: ignore[arg-type]
    assert message in str(caught.value)


@pytest.mark.slow  # real arena games: about 3 s
def test_the_arena_evaluator_stops_when_the_rules_have_decided(tmp_path: Path) -> None:
    gate = GateSettings(rule=["threshold", "sprt"], target=0.9)

    def play(candidate: str, reference: str) -> dict[str, Any]:
        return evaluate.run_evaluation(
            REPO / "bots" / f"{candidate}.json",
            REPO / "bots" / f"{reference}.json",
            history_path=tmp_path / "h.json",
            gate=gate,
            seed=0,
        )

    strong = play("veteran", "inert")
    assert strong["gate"]["verdict"] == "pass" and strong["gate"]["rule"] == "threshold+sprt"
    verdicts = [r["verdict"] for r in strong["gate"]["stats"]["rules"]]
    assert verdicts == ["pass", "pass"]
    # threshold needs 27 straight wins (the 14th pair): the slower rule sets the length
    assert strong["episodes"] == 28
    inert = play("inert", "rookie")
    assert inert["gate"]["verdict"] == "fail"
    assert inert["episodes"] == 4  # threshold failed at 3 failures, in the 2nd pair
    assert inert["gate"]["stats"]["rules"][0]["verdict"] == "fail"
