"""The gate's decisions: exact margin boundaries, SPRT with and without draws."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

import pytest

from cosmic_curriculum.evaluation import stats
from cosmic_curriculum.evaluation.gate import GateSettings, decide, margin_fails, margin_fraction

MARGIN = GateSettings()
SPRT = GateSettings(rule="sprt")


def test_issue_example_summary() -> None:
    d = decide(MARGIN, 41, 52, 7)
    assert d.verdict == "pass"
    assert d.rule == "margin"
    assert d.summary == (
        "candidate 41–52 reference (7 draws), gap +0.11 ± 0.19, Elo −38 ± 66 → pass"
    )
    for key in ("wins_a", "wins_b", "draws", "score", "gap_ci95", "elo", "elo_err95"):
        assert key in d.stats
    json.dumps(d.to_dict(), allow_nan=False)  # JSON-safe as recorded


def test_margin_is_an_exact_decimal() -> None:
    assert margin_fraction(0.15) == Fraction(3, 20)
    assert margin_fraction(0.1) == Fraction(1, 10)


@pytest.mark.parametrize("wins_a", range(0, 43))
def test_margin_exactly_15_points_fails_and_14_passes(wins_a: int) -> None:
    # Every split with a 15-point gap fails, whatever float rounding 0.52-0.37 would do.
    draws = 100 - 2 * wins_a - 15
    assert decide(MARGIN, wins_a, wins_a + 15, draws).verdict == "fail"
    if draws + 1 >= 0 and wins_a + 14 >= 0:
        assert decide(MARGIN, wins_a, wins_a + 14, draws + 1).verdict == "pass"


def test_margin_just_under_the_boundary_passes() -> None:
    # 14.999 points: 14_999 more reference wins over 100_000 episodes.
    assert not margin_fails(0, 14_999, 100_000, 0.15)
    assert margin_fails(0, 15_000, 100_000, 0.15)
    s = GateSettings(episodes=100_000)
    assert decide(s, 42_000, 56_999, 1_001).verdict == "pass"
    assert decide(s, 42_000, 57_000, 1_000).verdict == "fail"
    # A gap just under 15 points on an odd count: 15/101 = 0.1485.
    assert decide(GateSettings(episodes=101), 40, 55, 6).verdict == "pass"


def test_margin_float_traps() -> None:
    # Naive floats get these wrong: 0.57 - 0.42 = 0.1499999..., 0.3 - 0.15 != 0.15.
    assert 0.57 - 0.42 < 0.15
    assert decide(MARGIN, 42, 57, 1).verdict == "fail"
    assert decide(GateSettings(regression_margin=0.3), 10, 40, 50).verdict == "fail"
    assert decide(GateSettings(regression_margin=0.3), 10, 39, 51).verdict == "pass"


def test_margin_continues_until_the_planned_episodes() -> None:
    assert decide(MARGIN, 0, 60, 0).verdict == "continue"
    assert decide(MARGIN, 0, 0, 0).verdict == "continue"
    assert decide(MARGIN, 10, 30, 0, planned_episodes=40).verdict == "fail"
    assert decide(MARGIN, 20, 20, 0, planned_episodes=40).verdict == "pass"
    assert decide(MARGIN, 20, 20, 0, planned_episodes=40).stats["planned_episodes"] == 40


def test_sprt_without_draws_passes_an_even_match_and_fails_a_shutout() -> None:
    # No draws at all: the zero draw count must not freeze the LLR.
    kl = 0.5 * math.log(0.5 / 0.375) + 0.5 * math.log(0.5 / 0.625)
    need = math.ceil(math.log(19) / kl)  # ~92 episodes of an exact 50/50 split
    assert decide(SPRT, need // 2 - 1, need // 2 - 1, 0).verdict == "continue"
    assert decide(SPRT, need // 2 + 1, need // 2 + 1, 0).verdict == "pass"
    fail = decide(SPRT, 0, 14, 0)
    assert fail.verdict == "fail"
    assert fail.stats["llr"] <= fail.stats["llr_bounds"][0]
    assert decide(SPRT, 0, 10, 0).verdict == "continue"
    assert decide(SPRT, 14, 0, 0).verdict == "pass"


def test_sprt_with_all_draws_passes_quickly() -> None:
    # All draws is score 0.5 exactly: "no regression" is the only sensible conclusion.
    results = [decide(SPRT, 0, 0, n).verdict for n in range(2, 40, 2)]
    first_pass = 2 + 2 * results.index("pass")
    assert 8 <= first_pass <= 14
    assert all(v == "continue" for v in results[: results.index("pass")])


def test_sprt_at_the_cap_fails_iff_llr_negative() -> None:
    # 20 episodes, cap 20: the LLR is between the bounds, the sign decides.
    s = GateSettings(rule="sprt", max_episodes=20)
    worse = decide(s, 8, 11, 1)
    better = decide(s, 9, 9, 2)
    assert stats.sprt_bounds(0.05, 0.05)[0] < worse.stats["llr"] < 0
    assert worse.verdict == "fail" and worse.stats["decided_at_cap"]
    assert better.stats["llr"] > 0 and better.verdict == "pass"
    assert decide(s, 9, 9, 0).verdict == "continue"
    # planned_episodes overrides the cap (e.g. `evaluate --episodes 20 --gate sprt`)
    assert decide(SPRT, 8, 11, 1, planned_episodes=20).verdict == "fail"


def test_sprt_uses_the_pentanomial_model_with_pairs() -> None:
    pairs = [0.5] * 30 + [0.75, 0.25] * 5
    d = decide(SPRT, 40, 40, 0, pair_scores=pairs)
    assert d.stats["model"] == "pentanomial"
    assert d.stats["pair_counts"] == [0, 5, 30, 5, 0]
    assert d.stats["llr"] == pytest.approx(stats.llr_pentanomial(pairs, 0.375, 0.5))
    # Pairs that cancel out carry more evidence of equality than 80 loose games.
    assert d.stats["llr"] > decide(SPRT, 40, 40, 0).stats["llr"]
    assert "LLR" in d.summary and d.summary.endswith("→ pass")
    with pytest.raises(ValueError, match="pair_scores covers 4 episodes"):
        decide(SPRT, 40, 40, 0, pair_scores=[0.5, 0.5])


def test_sprt_stats_record_bounds_and_hypotheses() -> None:
    d = decide(GateSettings(rule="sprt", gap=0.2, alpha=0.1, beta=0.02), 10, 10, 5)
    assert d.stats["s0"] == pytest.approx(0.4)
    assert d.stats["s1"] == 0.5
    lo, hi = d.stats["llr_bounds"]
    assert lo == pytest.approx(math.log(0.02 / 0.9))
    assert hi == pytest.approx(math.log(0.98 / 0.1))


def test_negative_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="draws"):
        decide(MARGIN, 1, 1, -1)


def test_check_pairs_follows_the_check_setting() -> None:
    assert GateSettings(batch_pairs=7).check_pairs == 1
    assert GateSettings(batch_pairs=7, check="batch").check_pairs == 7


@pytest.mark.parametrize(
    ("values", "high"),
    [
        (stats.TRINOMIAL_SCORES, 40),  # small counts: rows keyed as integers
        (stats.PENTANOMIAL_SCORES, 120),
        (stats.PENTANOMIAL_SCORES, 10**5),  # too large to key: np.unique over rows
    ],
    ids=["trinomial", "pentanomial", "huge-counts"],
)
def test_the_simulators_shared_llr_is_that_of_the_distinct_rows(values: Any, high: int) -> None:
    # the LLR of each distinct count vector, solved together with the others (a batched
    # solve: values are those of the distinct rows solved as one batch, whatever order)
    import numpy as np

    from cosmic_curriculum.evaluation.gate import _llr_unique

    rng = np.random.default_rng(3)
    distinct = rng.integers(0, high, size=(40, len(values)))
    counts = distinct[rng.integers(0, 40, size=500)]  # many trials share a count vector
    uniq, inverse = np.unique(counts, axis=0, return_inverse=True)
    want = np.asarray(stats.gsprt_llr(uniq, values, 0.5, 0.45))[inverse.reshape(-1)]
    assert _llr_unique(counts, values, 0.5, 0.45).tolist() == want.tolist()
