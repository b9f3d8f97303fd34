"""The gate against forgetting's Monte Carlo (`gate simulate --against N`): the family of
comparisons holds the configured beta at fixed seeds, within Monte Carlo error; the
rates and episodes obey the bounds their definitions imply."""

from __future__ import annotations

import math

import pytest

from cosmic_curriculum.evaluation.forgetting import (
    comparison_settings,
    sign_test_critical,
    sign_test_p,
)
from cosmic_curriculum.evaluation.forgetting_sim import (
    comparison_fails,
    simulate_family,
    simulate_family_table,
)
from cosmic_curriculum.evaluation.gate import SimSpec, simulate_trials
from cosmic_curriculum.workspace.config import GateSettings

MARGIN = GateSettings()
SPRT = GateSettings(rule="sprt")


def _mc_error(rate: float, trials: int) -> float:
    """Three standard errors of a Monte Carlo rate near ``rate``."""
    return 3 * math.sqrt(rate * (1 - rate) / trials)


@pytest.mark.parametrize(
    ("settings", "m", "draw_rate", "trials"),
    [
        (MARGIN, 1, 0.0, 20_000),
        (MARGIN, 3, 0.2, 20_000),
        (MARGIN, 8, 0.4, 20_000),
        (GateSettings(episodes=40, beta=0.1), 4, 0.0, 20_000),
        (SPRT, 1, 0.4, 2_000),
        (SPRT, 3, 0.2, 2_000),
        (GateSettings(rule="sprt", beta=0.1, max_episodes=200), 2, 0.0, 2_000),
    ],
)
def test_an_equal_candidate_fails_the_family_at_most_beta(
    settings: GateSettings, m: int, draw_rate: float, trials: int
) -> None:
    row = simulate_family(settings, m, draw_rate=draw_rate, trials=trials, seed=2026)
    assert row["corrected_beta"] == pytest.approx(settings.beta / m)
    assert row["family_false_fail"] <= settings.beta + _mc_error(settings.beta, trials)
    # the whole gate fails when either part does: between the larger and the sum
    prev, family, gate = (row[k] for k in ("previous_false_fail", "family_false_fail",
                                           "gate_false_fail"))  # fmt: skip
    assert max(prev, family) <= gate <= prev + family
    assert row["against"] == m and row["trials"] == trials


def test_a_regression_against_one_earlier_bot_is_caught() -> None:
    # margin: the sign test at beta/3 over 100 episodes sees a 0.25 gap most of the time,
    # and a larger gap more often; no gap is caught no more often than a false fail
    caught = {
        worse: simulate_family(MARGIN, 3, draw_rate=0.2, trials=8_000, seed=3, worse=worse)
        for worse in (0.0, 0.25, 0.4)
    }
    assert caught[0.0]["detects_worse"] <= 0.05 + _mc_error(0.05, 8_000)
    assert 0.5 < caught[0.25]["detects_worse"] < caught[0.4]["detects_worse"]
    # sprt: the comparison at beta/m passes a regression of gap at about alpha
    row = simulate_family(SPRT, 2, draw_rate=0.4, trials=2_000, seed=3)
    assert row["detects_worse"] >= 1 - SPRT.alpha - _mc_error(SPRT.alpha, 2_000)


def test_the_comparisons_add_episodes_only_when_they_are_played() -> None:
    row = simulate_family(MARGIN, 3, draw_rate=0.2, trials=4_000, seed=5)
    # each of 3 comparisons plays 100 episodes, unless the gate failed before it
    assert (1 - row["gate_false_fail"]) * 300 <= row["family_mean_episodes"] < 300
    sprt = simulate_family(SPRT, 1, draw_rate=0.4, trials=2_000, seed=5)
    assert 30 < sprt["family_mean_episodes"] < SPRT.max_episodes


def test_an_sprt_comparison_undecided_at_the_cap_passes_in_the_simulation_too() -> None:
    # a cap of 20 episodes: a candidate 0.25 worse rarely reaches the lower bound, and
    # most of it ends undecided, which fails the stage's own SPRT but not a comparison
    tight = GateSettings(rule="sprt", max_episodes=20)
    played = comparison_settings(tight, 2)
    own, _ = simulate_trials(played, true_gap=0.25, draw_rate=0.0, trials=4_000, seed=9)
    fails, used = comparison_fails(tight, 2, true_gap=0.25, draw_rate=0.0, trials=4_000, seed=9)
    assert fails.mean() < 0.3 < own.mean() and int(used.max()) == 20
    assert fails.sum() <= own.sum() and not (fails & ~own).any()  # the same games


def test_the_simulation_is_reproducible_and_its_table_labels_each_row() -> None:
    specs = [SimSpec("m", MARGIN), SimSpec("s", GateSettings(rule="sprt", max_episodes=40))]
    rows = simulate_family_table(specs, 2, [0.0, 0.4], 500, seed=1)
    assert [(r["rule"], r["draw_rate"]) for r in rows] == [
        ("m", 0.0), ("m", 0.4), ("s", 0.0), ("s", 0.4),
    ]  # fmt: skip
    assert rows == simulate_family_table(specs, 2, [0.0, 0.4], 500, seed=1)
    assert rows != simulate_family_table(specs, 2, [0.0, 0.4], 500, seed=2)


@pytest.mark.parametrize(
    ("settings", "m", "wanted"),
    [
        (MARGIN, 0, "against must be >= 1"),
        (GateSettings(rule="threshold", target=0.9), 2, "no head-to-head rule"),
    ],
)
def test_impossible_families_are_refused(settings: GateSettings, m: int, wanted: str) -> None:
    with pytest.raises(ValueError, match=wanted):
        simulate_family(settings, m, draw_rate=0.0, trials=10)


def test_the_critical_values_match_the_sign_test_for_many_games() -> None:
    level = 0.05 / 3
    table = sign_test_critical(150, level)
    for n in range(0, 151, 7):
        brute = max((w for w in range(n + 1) if sign_test_p(w, n - w) <= level), default=-1)
        assert table[n] == brute, n
