"""What a decision, an attempt and an SB3 dump yield for the trackers (pure)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from cosmic_curriculum.evaluation.gate import decide
from cosmic_curriculum.evaluation.verdicts import combine
from cosmic_curriculum.tracking import metrics as m
from cosmic_curriculum.workspace.gate_settings import GateSettings

PASS = {"stage_index": 1, "attempt": 2, "decision": "pass", "experiment": "e"}
MARGIN = decide(GateSettings(), 10, 8, 2, planned_episodes=20).to_dict()
SPRT = decide(GateSettings(rule="sprt"), 60, 20, 20).to_dict()
BOTH = combine(
    [
        decide(GateSettings(rule="sprt"), 60, 20, 20),
        decide(GateSettings(rule="threshold", target=0.5), 60, 20, 20, successes=70),
    ]
).to_dict()


@pytest.mark.parametrize(
    ("entry", "record", "status", "expected"),
    [
        # counts from the entry; the record's own figures first
        (
            {**PASS, "eval": {"wins_a": 10, "wins_b": 8, "draws": 2, "episodes": 20}},
            {"score": 0.55, "gap": -0.1, "gap_ci95": [-0.5, 0.3], "elo": 35.0},
            "in_progress",
            {
                "wins": 10,
                "losses": 8,
                "draws": 2,
                "episodes": 20,
                "score": 0.55,
                "gap": -0.1,
                "gap_ci95_low": -0.5,
                "gap_ci95_high": 0.3,
                "elo": 35.0,
                "passed": 1.0,
                "blocked": 0.0,
                "done": 0.0,
                "stage": 2.0,
                "attempt": 2.0,
            },
        ),
        # a record with only the gate's figures: they come from its statistics
        (
            {**PASS, "decision": "fail"},
            {"wins_a": 10, "wins_b": 8, "draws": 2, "episodes": 20, "gate": MARGIN},
            "blocked",
            {
                "wins": 10,
                "score": 0.55,
                "gap_ci95_low": MARGIN["stats"]["gap_ci95"][0],
                "elo_ci95_high": MARGIN["stats"]["elo_ci95"][1],
                "passed": 0.0,
                "blocked": 1.0,
                "gate/margin/regression_margin": 0.15,
            },
        ),
        # the SPRT's LLR and its bounds
        (
            PASS,
            {"wins_a": 60, "wins_b": 20, "draws": 20, "episodes": 100, "gate": SPRT},
            "done",
            {
                "gate/sprt/llr": SPRT["stats"]["llr"],
                "gate/sprt/llr_bounds_low": SPRT["stats"]["llr_bounds"][0],
                "done": 1.0,
            },
        ),
        # several rules: each under its own name (the threshold's success rate too)
        (
            PASS,
            {"gate": BOTH},
            "in_progress",
            {
                "gate/sprt/llr": BOTH["stats"]["rules"][0]["stats"]["llr"],
                "gate/threshold/success_rate": 0.7,
            },
        ),
        # an override (a skip) without an evaluation: its flags, no figures
        (
            {**PASS, "override": "skip", "reason": "by hand", "eval": None},
            None,
            "in_progress",
            {"override": 1.0, "passed": 1.0, "decision_number": 3.0},
        ),
    ],
)
def test_decision_metrics(
    entry: dict[str, Any], record: dict[str, Any] | None, status: str, expected: dict[str, float]
) -> None:
    got = m.decision_metrics(entry, record, 3, status)
    assert {k: got.get(k) for k in expected} == expected
    assert all(math.isfinite(v) for v in got.values())
    assert not any(k.endswith(("/alpha", "/beta", "/max_episodes")) for k in got)


def test_the_sprt_llr_is_a_metric_only_where_the_sprt_decides() -> None:
    margin = m.decision_metrics(PASS, {"gate": MARGIN}, 1, "in_progress")
    assert not any("llr" in k for k in margin)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, 1.0),
        (True, 1.0),
        (0.5, 0.5),
        (math.inf, None),
        (math.nan, None),
        ("1", None),
        (None, None),
    ],
)
def test_number(value: object, expected: float | None) -> None:
    assert m.number(value) == expected


@pytest.mark.parametrize(
    ("entry", "status", "expected"),
    [
        (PASS, "in_progress", {"decision": "pass", "status": "in_progress"}),
        (
            {**PASS, "override": "skip", "reason": "ok", "by": "ann", "summary": "s"},
            "done",
            {
                "decision": "pass",
                "status": "done",
                "override": "skip",
                "override_reason": "ok",
                "override_by": "ann",
                "summary": "s",
            },
        ),
    ],
)
def test_decision_tags(entry: dict[str, Any], status: str, expected: dict[str, str]) -> None:
    assert m.decision_tags(entry, status) == expected


def test_attempt_params_are_text_and_skip_what_is_unknown() -> None:
    params = m.attempt_params(
        stage_index=0,
        stage_name="score",
        attempt=1,
        experiment="x",
        flags=["--ent-coef", "0.01"],
        timesteps=None,
        settings={"seed": 3, "ref": ["a", "b"]},
    )
    assert params == {
        "stage": "1",
        "stage_name": "score",
        "attempt": "1",
        "experiment": "x",
        "flags": "--ent-coef 0.01",
        "settings/seed": "3",
        "settings/ref": "a b",
    }


@pytest.mark.parametrize(
    ("values", "excluded", "expected"),
    [
        ({"train/loss": 0.5, "time/fps": 10}, {}, {"train/loss": 0.5, "time/fps": 10.0}),
        ({"note": "text", "x": math.nan}, {}, {}),
        ({"a": 1.0, "b": 2.0}, {"a": ("tracker",), "b": ("stdout",)}, {"b": 2.0}),
    ],
)
def test_sb3_scalars(
    values: dict[str, Any], excluded: dict[str, Any], expected: dict[str, float]
) -> None:
    assert m.sb3_scalars(values, excluded) == expected


def test_run_ids_are_stable_distinct_and_valid() -> None:
    a, b = m.run_id("c1", "curric-s1-score"), m.run_id("c2", "curric-s1-score")
    assert a == m.run_id("c1", "curric-s1-score") and a != b
    assert all(ch.isalnum() or ch in "-_" for ch in m.run_id("c1", "a/b c" * 30))
    assert len(m.run_id("c1", "x" * 200)) <= 64
