"""The gate simulator reproduces independently computed operating characteristics.

Reference figures (issue 5, 40,000 trials per cell; no draws / 20% / 40% draws):
margin 100 episodes: false-fail 6.5/5.5/3.1%, passes a 0.25-worse candidate 15.2/11.2/7.7%;
SPRT gap 0.25 checked every episode: 4.6/4.7/4.8%, 4.6/4.5/4.5%, mean episodes at equal
strength 86/69/53. Tolerances: ±1 percentage point, ±5% episodes. The default suite runs
a reduced number of trials and widens the rate tolerance by three Monte Carlo standard
errors; the full check is marked slow.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cosmic_curriculum.cli import app
from cosmic_curriculum.evaluation.gate import (
    GateSettings,
    SimSpec,
    outcome_probabilities,
    simulate_table,
)

DRAWS = (0.0, 0.2, 0.4)
MARGIN_FALSE_FAIL = (0.065, 0.055, 0.031)
MARGIN_PASSES_WORSE = (0.152, 0.112, 0.077)
SPRT_FALSE_FAIL = (0.046, 0.047, 0.048)
SPRT_PASSES_WORSE = (0.046, 0.045, 0.045)
SPRT_MEAN_EPISODES = (86, 69, 53)

SPECS = [
    SimSpec("margin", GateSettings()),
    SimSpec("sprt/episode", GateSettings(rule="sprt"), model="trinomial", check_every=1),
]


def _check(trials: int, extra_sigmas: float) -> None:
    rows = simulate_table(SPECS, DRAWS, trials, seed=12345)
    margin, sprt = rows[:3], rows[3:]

    def close(got: float, want: float) -> None:
        se = math.sqrt(want * (1 - want) / trials)
        assert abs(got - want) <= 0.01 + extra_sigmas * se, (got, want)

    for i in range(3):
        close(margin[i]["false_fail"], MARGIN_FALSE_FAIL[i])
        close(margin[i]["passes_worse"], MARGIN_PASSES_WORSE[i])
        assert margin[i]["mean_episodes_equal"] == 100
        close(sprt[i]["false_fail"], SPRT_FALSE_FAIL[i])
        close(sprt[i]["passes_worse"], SPRT_PASSES_WORSE[i])
        want = SPRT_MEAN_EPISODES[i]
        assert abs(sprt[i]["mean_episodes_equal"] - want) <= 0.05 * want


@pytest.mark.slow
def test_simulator_reproduces_the_reference_table_reduced() -> None:
    _check(trials=4_000, extra_sigmas=3.0)


@pytest.mark.slow
def test_simulator_reproduces_the_reference_table_full() -> None:
    _check(trials=40_000, extra_sigmas=0.0)


@pytest.mark.slow
def test_pair_checked_pentanomial_sprt_keeps_both_error_rates() -> None:
    # The default evaluator's SPRT (every pair, pentanomial): both error rates about 5%
    # or less, and far fewer episodes than the fixed 100 once draws are common.
    rows = simulate_table([SimSpec("sprt", GateSettings(rule="sprt"))], DRAWS, 2_000, seed=7)
    for row in rows:
        se = math.sqrt(0.05 * 0.95 / 2_000)
        assert row["false_fail"] <= 0.05 + 3 * se
        assert row["passes_worse"] <= 0.05 + 3 * se
        assert row["fails_better"] <= 0.02
    assert rows[1]["mean_episodes_equal"] <= 85 and rows[2]["mean_episodes_equal"] <= 85


def test_outcome_probabilities() -> None:
    assert list(outcome_probabilities(0.25, 0.0)) == pytest.approx([0.625, 0.0, 0.375])
    assert list(outcome_probabilities(-0.1, 0.4)) == pytest.approx([0.25, 0.4, 0.35])
    with pytest.raises(ValueError, match="impossible"):
        outcome_probabilities(0.7, 0.5)


def test_cli_gate_simulate(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    result = CliRunner().invoke(
        app, ["gate", "simulate", "--trials", "300", "--draws", "0,0.2", "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "false-fail" in result.output and "margin 0.15, 100 episodes" in result.output
    rows = json.loads(out.read_text())
    assert [r["draw_rate"] for r in rows] == [0.0, 0.2, 0.0, 0.2]
    assert rows[2]["rule"] == "sprt gap 0.25, pentanomial, every pair"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--draws", "0,1.5"], "--draws"),
        (["--draws", "a,b"], "comma-separated"),
        (["--rule", "vibes"], "--rule"),
        (["--model", "quadrinomial"], "--model"),
        (["--alpha", "0.7"], "--alpha"),
        (["--worse", "0.9", "--draws", "0.4"], "--worse"),
    ],
)
def test_cli_gate_simulate_errors(args: list[str], needle: str) -> None:
    result = CliRunner().invoke(app, ["gate", "simulate", "--trials", "10", *args])
    assert result.exit_code == 2, result.output
    assert needle in result.output and result.output.strip().count("\n") == 0


def test_cli_gate_simulate_against_earlier_bots(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    result = CliRunner().invoke(
        app,
        ["gate", "simulate", "--against", "3", "--rule", "margin", "--trials", "2000",
         "--draws", "0,0.4", "--json", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "3 earlier bots" in result.output and "whole gate" in result.output
    rows = json.loads(out.read_text())
    assert [(r["rule"], r["draw_rate"], r["against"]) for r in rows] == [
        ("margin 0.15, 100 episodes", 0.0, 3),
        ("margin 0.15, 100 episodes", 0.4, 3),
    ]
    for row in rows:
        assert row["corrected_beta"] == pytest.approx(0.05 / 3)
        assert row["family_false_fail"] <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 2000)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--against", "0"], "--against 0"),
        (["--against", "101"], "--against 101"),
        (["--against", "2", "--rule", "threshold", "--target", "0.9"], "--rule threshold"),
    ],
)
def test_cli_gate_simulate_against_errors(args: list[str], needle: str) -> None:
    result = CliRunner().invoke(app, ["gate", "simulate", "--trials", "10", *args])
    assert result.exit_code == 2, result.output
    assert needle in result.output and result.output.strip().count("\n") == 0
