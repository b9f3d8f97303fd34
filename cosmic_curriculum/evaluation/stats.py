"""Head-to-head statistics: pure functions of win/draw/loss counts (no I/O).

Conventions: ``wins_a`` are the candidate's wins, ``wins_b`` the reference's wins. The
candidate's *score* is ``s = (W + D/2) / N``. The *gap* is the reference's win rate minus
the candidate's, ``(wins_b - wins_a) / N`` (positive = the candidate looks worse), which is
what the reference regression rule compares with its margin; ``s = 0.5 - gap/2``.

Intervals
---------
- Gap: a normal (Wald) 95% interval from the per-game trinomial variance of
  ``X = [reference won] - [candidate won]`` (values +1, 0, -1).
- Candidate win rate: Wilson score interval (:func:`wilson_interval`).
- Elo: ``-400 log10(1/s - 1)``; the 95% interval maps ``s ± 1.96 σ/√N`` through that
  curve, with ``σ² = (W(1-s)² + D(½-s)² + L s²)/N`` the per-game score variance; the
  symmetric "± error" quoted in summaries is the delta-method half-width
  ``1.96 σ/√N · 400 / (ln 10 · s(1-s))``.

Sequential test
---------------
:func:`gsprt_llr` is the generalized SPRT log-likelihood ratio in the style of Fishtest:
for each hypothesis score ``s_k`` the multinomial maximum-likelihood distribution subject
to ``E[score] = s_k`` is ``p_k,i = p̂_i / (1 + θ_k (a_i - s_k))`` with ``θ_k`` the root of
``Σ p̂_i (a_i - s_k) / (1 + θ_k (a_i - s_k)) = 0``; ``LLR = N Σ p̂_i ln(p_1,i / p_0,i)``.
Zero counts are replaced by :data:`ZERO_COUNT` first so games without draws (the normal
case here) and one-sided runs still give finite, moving LLRs. It works on any outcome
alphabet: trinomial (L, D, W scores 0, ½, 1) per game, or pentanomial (0, ¼, ½, ¾, 1) per
seat-swapped pair. All LLR functions broadcast over leading axes (the simulator uses that).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from cosmic_curriculum import scoring

Z95 = 1.959963984540054
"""Two-sided 95% normal quantile."""

ZERO_COUNT = 1e-3
"""Stand-in for an empty outcome category in the LLR (Fishtest's regularisation)."""

TRINOMIAL_SCORES: NDArray[np.float64] = np.array([0.0, 0.5, 1.0])
"""Per-game scores of the candidate for (loss, draw, win)."""

PENTANOMIAL_SCORES: NDArray[np.float64] = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
"""Mean score of the candidate over a seat-swapped pair of games."""


def _check_counts(wins_a: int, wins_b: int, draws: int) -> int:
    for name, value in (("wins_a", wins_a), ("wins_b", wins_b), ("draws", draws)):
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    return wins_a + wins_b + draws


def score(wins_a: int, wins_b: int, draws: int) -> float:
    """The candidate's score ``(W + D/2) / N``; 0.5 when no game was played."""
    n = _check_counts(wins_a, wins_b, draws)
    # an even score is the prior of no evidence (Elo 0, on the H1 side of the gate)
    return scoring.score(wins_a, draws, n, if_none=0.5)


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``successes / n``.

    Centre ``(p̂ + z²/2n) / (1 + z²/n)``, half-width
    ``z / (1 + z²/n) · √(p̂(1 - p̂)/n + z²/4n²)``. ``n == 0`` gives ``(0, 1)``.
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def gap_interval(wins_a: int, wins_b: int, draws: int, z: float = Z95) -> tuple[float, float]:
    """Point estimate and normal-interval half-width of ``(wins_b - wins_a) / N``.

    The variance is the per-game trinomial variance of ``[B won] - [A won]``:
    ``(p_a + p_b - (p_b - p_a)²) / N``. Returns ``(gap, half_width)``; with no games
    ``(0, 1)`` (nothing is known; the gap lies in [-1, 1]).
    """
    n = _check_counts(wins_a, wins_b, draws)
    if n == 0:
        return 0.0, 1.0
    pa, pb = wins_a / n, wins_b / n
    gap = pb - pa
    var = max(0.0, pa + pb - gap * gap)
    return gap, z * math.sqrt(var / n)


def score_variance(wins_a: int, wins_b: int, draws: int) -> float:
    """Per-game variance of the candidate's score, ``(W(1-s)² + D(½-s)² + L s²)/N``."""
    n = _check_counts(wins_a, wins_b, draws)
    if n == 0:
        return 0.25
    s = score(wins_a, wins_b, draws)
    return (wins_a * (1 - s) ** 2 + draws * (0.5 - s) ** 2 + wins_b * s**2) / n


def elo_from_score(s: float) -> float:
    """Elo difference implied by a score: ``-400 log10(1/s - 1)`` (±inf at 0 and 1)."""
    if not 0.0 <= s <= 1.0:
        raise ValueError(f"score must be in [0, 1], got {s}")
    if s == 0.0:
        return -math.inf
    if s == 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / s - 1.0)


@dataclass(frozen=True)
class EloEstimate:
    """Elo difference of the candidate over the reference with its 95% uncertainty.

    ``elo`` and the bounds are ±inf when the score (or its bound) is 0 or 1; ``err95`` is
    the delta-method half-width (inf when the score is 0 or 1).
    """

    elo: float
    low: float
    high: float
    err95: float


def elo_estimate(wins_a: int, wins_b: int, draws: int, z: float = Z95) -> EloEstimate:
    """Elo difference and its 95% error from the per-game score variance (see module doc)."""
    n = _check_counts(wins_a, wins_b, draws)
    s = score(wins_a, wins_b, draws)
    if n == 0:
        return EloEstimate(0.0, -math.inf, math.inf, math.inf)
    half = z * math.sqrt(score_variance(wins_a, wins_b, draws) / n)
    low = elo_from_score(max(0.0, s - half))
    high = elo_from_score(min(1.0, s + half))
    # Delta method: dElo/ds = 400 / (ln 10 · s(1-s)); undefined at a shut-out.
    err = half * 400.0 / (math.log(10.0) * s * (1.0 - s)) if 0.0 < s < 1.0 else math.inf
    return EloEstimate(elo_from_score(s), low, high, err)


def pair_counts(pair_scores: Sequence[float] | ArrayLike) -> NDArray[np.int64]:
    """Histogram of pair scores over (0, ¼, ½, ¾, 1); raises on any other value."""
    arr = np.asarray(pair_scores, dtype=np.float64).reshape(-1)
    idx = np.rint(arr * 4.0)
    if arr.size and (np.any(np.abs(idx - arr * 4.0) > 1e-9) or idx.min() < 0 or idx.max() > 4):
        bad = arr[(np.abs(idx - arr * 4.0) > 1e-9) | (idx < 0) | (idx > 4)][0]
        raise ValueError(f"pair score {bad!r} is not one of 0, 0.25, 0.5, 0.75, 1")
    return np.bincount(idx.astype(np.int64), minlength=5)


def pair_score(outcome_1: int, outcome_2: int) -> float:
    """Mean candidate score over a pair from outcomes (+1 win, 0 draw, -1 loss)."""
    return ((outcome_1 + 1) / 2 + (outcome_2 + 1) / 2) / 2


def _solve_theta(p: NDArray[np.float64], x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Root of ``f(θ) = Σ p_i x_i / (1 + θ x_i)`` along the last axis, vectorised.

    ``x = a - s`` has both signs (``s`` strictly inside the score range) and every
    ``p_i > 0``, so ``f`` falls strictly from +inf to -inf on
    ``(-1/max x, -1/min x)``: safeguarded Newton (bisection whenever a step leaves the
    bracket) converges in a handful of iterations.
    """
    lo = np.broadcast_to(-1.0 / x.max(axis=-1), p.shape[:-1]).copy()
    hi = np.broadcast_to(-1.0 / x.min(axis=-1), p.shape[:-1]).copy()
    theta = np.zeros(p.shape[:-1])
    for _ in range(100):
        denom = 1.0 + theta[..., None] * x
        f = np.sum(p * x / denom, axis=-1)
        df = -np.sum(p * x * x / (denom * denom), axis=-1)
        # f is decreasing: f > 0 means the root lies above theta.
        lo = np.where(f > 0, theta, lo)
        hi = np.where(f < 0, theta, hi)
        newton = theta - f / df
        mid = 0.5 * (lo + hi)
        inside = (newton > lo) & (newton < hi) & np.isfinite(newton)
        new = np.where(inside, newton, mid)
        if np.all(np.abs(new - theta) <= 1e-13 * (1.0 + np.abs(theta))):
            return new
        theta = new
    return theta


def constrained_mle(
    counts: ArrayLike, values: ArrayLike, s: float, zero: float = ZERO_COUNT
) -> NDArray[np.float64]:
    """Most likely outcome distribution with mean score ``s`` given ``counts``.

    Counts are regularised (zeros replaced by ``zero``) as in :func:`gsprt_llr`.
    """
    c = np.asarray(counts, dtype=np.float64)
    a = np.asarray(values, dtype=np.float64)
    if not a.min() < s < a.max():
        raise ValueError(f"hypothesis score {s} must lie strictly inside ({a.min()}, {a.max()})")
    c = np.where(c > 0, c, zero)
    p = c / c.sum(axis=-1, keepdims=True)
    x = a - s
    theta = _solve_theta(p, x)
    out: NDArray[np.float64] = p / (1.0 + theta[..., None] * x)
    return out


def gsprt_llr(
    counts: ArrayLike, values: ArrayLike, s0: float, s1: float, zero: float = ZERO_COUNT
) -> NDArray[np.float64] | float:
    """Generalized SPRT log-likelihood ratio of H1 (score ``s1``) over H0 (score ``s0``).

    ``counts[..., i]`` counts outcomes with score ``values[i]``; leading axes broadcast.
    Returns a float for a single count vector, else an array.
    """
    c = np.asarray(counts, dtype=np.float64)
    if c.shape[-1] != len(np.asarray(values)):
        raise ValueError(f"counts have {c.shape[-1]} categories, values {len(values)}")  # type: ignore[arg-type]
    if np.any(c < 0):
        raise ValueError("counts must be >= 0")
    c = np.where(c > 0, c, zero)
    n = c.sum(axis=-1)
    p = c / n[..., None]
    p0 = constrained_mle(c, values, s0, zero)
    p1 = constrained_mle(c, values, s1, zero)
    llr = n * np.sum(p * (np.log(p1) - np.log(p0)), axis=-1)
    if llr.ndim == 0:
        return float(llr)
    return llr


def llr_trinomial(wins_a: int, wins_b: int, draws: int, s0: float, s1: float) -> float:
    """Trinomial GSPRT LLR from per-game counts (candidate's view)."""
    _check_counts(wins_a, wins_b, draws)
    return float(gsprt_llr([wins_b, draws, wins_a], TRINOMIAL_SCORES, s0, s1))


def llr_pentanomial(pair_scores: Sequence[float] | ArrayLike, s0: float, s1: float) -> float:
    """Pentanomial GSPRT LLR over seat-swapped pairs (each pair's mean candidate score)."""
    return float(gsprt_llr(pair_counts(pair_scores), PENTANOMIAL_SCORES, s0, s1))


def sprt_bounds(alpha: float, beta: float) -> tuple[float, float]:
    """Wald's bounds ``(ln(β/(1-α)), ln((1-β)/α))``: below the first accept H0 (fail)."""
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def sprt_verdict(
    llr: float, lower: float, upper: float, at_cap: bool
) -> Literal["pass", "fail", "continue"]:
    """Wald's stopping rule: pass at the upper bound, fail at the lower; at the cap (no
    more episodes) fail iff the LLR is negative; else keep playing."""
    if llr >= upper:
        return "pass"
    if llr <= lower:
        return "fail"
    if at_cap:
        return "fail" if llr < 0 else "pass"
    return "continue"


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def describe(wins_a: int, wins_b: int, draws: int) -> dict[str, object]:
    """JSON-ready summary statistics of a head-to-head result (inf becomes None)."""
    n = _check_counts(wins_a, wins_b, draws)
    gap, gap_half = gap_interval(wins_a, wins_b, draws)
    elo = elo_estimate(wins_a, wins_b, draws)
    wl, wh = wilson_interval(wins_a, n)
    return {
        "episodes": n,
        "wins_a": wins_a,
        "wins_b": wins_b,
        "draws": draws,
        "score": score(wins_a, wins_b, draws),
        "gap": gap,
        "gap_ci95": [max(-1.0, gap - gap_half), min(1.0, gap + gap_half)],
        "gap_ci_method": "normal (per-game trinomial variance)",
        "win_rate_a_ci95": [wl, wh],
        "win_rate_ci_method": "wilson",
        "elo": _finite_or_none(elo.elo),
        "elo_ci95": [_finite_or_none(elo.low), _finite_or_none(elo.high)],
        "elo_err95": _finite_or_none(elo.err95),
    }


def counts_summary(wins_a: int, wins_b: int, draws: int) -> str:
    """``candidate 41–52 reference (7 draws), gap +0.11 ± 0.19, Elo −38 ± 66``."""
    gap, half = gap_interval(wins_a, wins_b, draws)
    elo = elo_estimate(wins_a, wins_b, draws)
    err = "∞" if math.isinf(elo.err95) else f"{elo.err95:.0f}"
    plural = "draw" if draws == 1 else "draws"
    # All draws pass a "not clearly worse" rule having measured nothing (a cooperative
    # game scores both seats alike; two perfect players draw): the line says so.
    blind = (
        ", every episode a draw: these episodes cannot tell the bots apart"
        if draws and not (wins_a or wins_b)
        else ""
    )
    return (
        f"candidate {wins_a}–{wins_b} reference ({draws} {plural}), "
        f"gap {scoring.signed(gap, 2)} ± {half:.2f}, Elo {scoring.signed(elo.elo, 0)} ± {err}"
        f"{blind}"
    )
