"""Known-answer tests for the head-to-head statistics."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from cosmic_curriculum.evaluation import stats


def test_score_counts_draws_as_half() -> None:
    assert stats.score(41, 52, 7) == pytest.approx(0.445)
    assert stats.score(0, 0, 0) == 0.5
    with pytest.raises(ValueError, match="wins_b"):
        stats.score(1, -1, 0)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (0, 10, 0.0, 0.277533),  # the textbook "rule of three"-like Wilson bound
        (5, 10, 0.236593, 0.763407),
        (41, 100, 0.318673, 0.507986),  # worked by hand: centre 0.41333, half 0.09466
        (10, 10, 0.722467, 1.0),
    ],
)
def test_wilson_interval_hand_values(k: int, n: int, low: float, high: float) -> None:
    lo, hi = stats.wilson_interval(k, n)
    assert lo == pytest.approx(low, abs=1e-5)
    assert hi == pytest.approx(high, abs=1e-5)


def test_wilson_interval_formula_by_hand() -> None:
    # p = 0.3, n = 50, z = 1.96 written out term by term.
    z, n, p = 1.96, 50, 0.3
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert stats.wilson_interval(15, 50, z=1.96) == pytest.approx((centre - half, centre + half))


def test_gap_interval_matches_the_issue_example() -> None:
    gap, half = stats.gap_interval(41, 52, 7)
    assert gap == pytest.approx(0.11)
    # Var of [B won] - [A won]: 0.93 - 0.11² over 100 games.
    assert half == pytest.approx(1.959964 * math.sqrt((0.93 - 0.0121) / 100), rel=1e-6)
    assert round(half, 2) == 0.19


def test_elo_hand_values() -> None:
    assert stats.elo_from_score(0.5) == 0.0
    assert stats.elo_from_score(0.75) == pytest.approx(400 * math.log10(3))  # 190.85
    assert stats.elo_from_score(0.445) == pytest.approx(-38.37, abs=0.01)
    assert stats.elo_from_score(0.0) == -math.inf
    assert stats.elo_from_score(1.0) == math.inf


def test_elo_error_from_per_game_variance() -> None:
    est = stats.elo_estimate(41, 52, 7)
    s = 0.445
    var = (41 * (1 - s) ** 2 + 7 * (0.5 - s) ** 2 + 52 * s**2) / 100
    half = 1.959964 * math.sqrt(var / 100)
    assert est.elo == pytest.approx(-38.37, abs=0.01)
    assert est.err95 == pytest.approx(half * 400 / (math.log(10) * s * (1 - s)), rel=1e-6)
    assert round(est.err95) == 66
    assert est.low == pytest.approx(stats.elo_from_score(s - half))
    assert est.high == pytest.approx(stats.elo_from_score(s + half))


def test_elo_of_a_shutout_is_infinite_and_describe_is_json_safe() -> None:
    assert stats.elo_estimate(0, 10, 0).elo == -math.inf
    d = stats.describe(0, 10, 0)
    assert d["elo"] is None and d["elo_err95"] is None
    assert d["gap_ci95"] == [1.0, 1.0]


def test_counts_summary_matches_the_issue_example() -> None:
    assert stats.counts_summary(41, 52, 7) == (
        "candidate 41–52 reference (7 draws), gap +0.11 ± 0.19, Elo −38 ± 66"
    )


@pytest.mark.parametrize(
    ("wins_a", "wins_b", "draws", "blind"),
    [
        (0, 0, 100, True),  # a cooperative game: both seats always score alike
        (0, 0, 1, True),
        (1, 0, 99, False),
        (0, 1, 99, False),
        (3, 4, 0, False),
    ],
)
def test_counts_summary_says_when_every_game_was_a_draw(
    wins_a: int, wins_b: int, draws: int, blind: bool
) -> None:
    said = stats.counts_summary(wins_a, wins_b, draws)
    assert said.endswith("every episode a draw: these episodes cannot tell the bots apart") is blind


# --- GSPRT LLR against a brute-force constrained maximum likelihood -----------------


def _trinomial_max_loglik(counts: np.ndarray, s: float) -> float:
    """max Σ c ln p over (L, D, W) with mean score s, by grid then golden section on p_D."""
    c = np.where(counts > 0, counts, stats.ZERO_COUNT).astype(float)
    top = min(2 * s, 2 * (1 - s))

    def ll(pd: float) -> float:
        pw, pl = s - pd / 2, 1 - s - pd / 2
        return float(c[0] * np.log(pl) + c[1] * np.log(pd) + c[2] * np.log(pw))

    grid = np.linspace(1e-12, top - 1e-12, 20001)
    best = grid[int(np.argmax([ll(x) for x in grid]))]
    a, b = max(1e-15, best - top / 20000), min(top - 1e-15, best + top / 20000)
    g = (math.sqrt(5) - 1) / 2
    for _ in range(200):
        x1, x2 = b - g * (b - a), a + g * (b - a)
        if ll(x1) < ll(x2):
            a = x1
        else:
            b = x2
    return ll((a + b) / 2)


def _pentanomial_max_loglik(counts: np.ndarray, s: float) -> float:
    """max Σ c ln p over pair scores (0, ¼, ½, ¾, 1) with mean s: zooming 3-D grid search."""
    c = np.where(counts > 0, counts, stats.ZERO_COUNT).astype(float)
    centre, width = np.array([0.5, 0.5, 0.5]), 1.0
    best_ll = -np.inf
    for _ in range(40):
        axes = [np.linspace(m - width / 2, m + width / 2, 41) for m in centre]
        p1, p2, p3 = np.meshgrid(*axes, indexing="ij")
        p4 = s - 0.25 * p1 - 0.5 * p2 - 0.75 * p3
        p0 = 1 - p1 - p2 - p3 - p4
        p = np.stack([p0, p1, p2, p3, p4], axis=-1)
        ok = np.all(p > 0, axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ll = np.where(ok, np.sum(c * np.log(np.where(p > 0, p, 1.0)), axis=-1), -np.inf)
        i = np.unravel_index(int(np.argmax(ll)), ll.shape)
        best_ll = float(ll[i])
        centre = np.array([p1[i], p2[i], p3[i]])
        width *= 0.6
    return best_ll


@pytest.mark.parametrize(
    "counts",
    [[3, 2, 5], [7, 0, 3], [0, 4, 0], [12, 1, 9], [4, 4, 4], [0, 0, 6]],
)
def test_trinomial_llr_equals_constrained_mle_ratio(counts: list[int]) -> None:
    s0, s1 = 0.375, 0.5
    arr = np.array(counts)
    expected = _trinomial_max_loglik(arr, s1) - _trinomial_max_loglik(arr, s0)
    got = stats.llr_trinomial(wins_a=counts[2], wins_b=counts[0], draws=counts[1], s0=s0, s1=s1)
    assert got == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    "counts",
    [[1, 2, 3, 2, 1], [0, 3, 1, 0, 4], [2, 0, 5, 0, 1], [5, 1, 0, 1, 0]],
)
def test_pentanomial_llr_equals_constrained_mle_ratio(counts: list[int]) -> None:
    s0, s1 = 0.375, 0.5
    arr = np.array(counts)
    expected = _pentanomial_max_loglik(arr, s1) - _pentanomial_max_loglik(arr, s0)
    pair_scores = np.repeat(stats.PENTANOMIAL_SCORES, arr)
    got = stats.llr_pentanomial(pair_scores, s0, s1)
    assert got == pytest.approx(expected, abs=1e-5)


def test_constrained_mle_hits_the_constraint_and_is_unchanged_at_the_sample_mean() -> None:
    p = stats.constrained_mle([3, 2, 5], stats.TRINOMIAL_SCORES, 0.375)
    assert p.sum() == pytest.approx(1.0)
    assert float(p @ stats.TRINOMIAL_SCORES) == pytest.approx(0.375)
    # counts whose mean is already 0.5: the constrained MLE is the empirical distribution
    same = stats.constrained_mle([2, 6, 2], stats.TRINOMIAL_SCORES, 0.5)
    assert same == pytest.approx([0.2, 0.6, 0.2])


def test_llr_broadcasts_over_rows() -> None:
    rows = np.array([[3, 2, 5], [7, 0, 3], [0, 4, 0]])
    batch = stats.gsprt_llr(rows, stats.TRINOMIAL_SCORES, 0.375, 0.5)
    single = [stats.gsprt_llr(r, stats.TRINOMIAL_SCORES, 0.375, 0.5) for r in rows]
    assert np.asarray(batch) == pytest.approx(single)


def test_llr_is_finite_and_monotone_without_draws() -> None:
    # The Bayes-Elo style formulas never move with a zero count; ours must.
    wins = [stats.llr_trinomial(k, 0, 0, 0.375, 0.5) for k in range(1, 20)]
    losses = [stats.llr_trinomial(0, k, 0, 0.375, 0.5) for k in range(1, 20)]
    assert all(math.isfinite(x) for x in wins + losses)
    assert all(b > a for a, b in itertools.pairwise(wins))
    assert all(b < a for a, b in itertools.pairwise(losses))


def test_llr_no_draws_equal_results_grows_by_the_kl_divergence() -> None:
    # W = L, no draws: LLR / N -> KL(Bern(.5) || Bern(.375)) (the draw cell is ~0).
    kl = 0.5 * math.log(0.5 / 0.375) + 0.5 * math.log(0.5 / 0.625)
    assert stats.llr_trinomial(50, 50, 0, 0.375, 0.5) == pytest.approx(100 * kl, rel=1e-3)


def test_pair_counts_rejects_impossible_pair_scores() -> None:
    assert list(stats.pair_counts([0, 0.25, 0.5, 0.5, 1])) == [1, 1, 2, 0, 1]
    with pytest.raises(ValueError, match=r"0\.3"):
        stats.pair_counts([0.3])
    assert stats.pair_score(1, -1) == 0.5
    assert stats.pair_score(1, 0) == 0.75


def test_sprt_bounds() -> None:
    lo, hi = stats.sprt_bounds(0.05, 0.05)
    assert lo == pytest.approx(-math.log(19))
    assert hi == pytest.approx(math.log(19))
