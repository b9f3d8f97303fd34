"""The regression gate: pure decisions from head-to-head counts (no I/O)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.defaults import SIMULATE_BETTER_GAP, SIMULATE_MODEL, SIMULATE_WORSE_GAP
from cosmic_curriculum.evaluation import stats, threshold
from cosmic_curriculum.evaluation.verdicts import GateDecision, Verdict, combine
from cosmic_curriculum.scoring import signed

# GateSettings lives with the rest of stages.toml's models (config.py stays free of numpy,
# so `status` starts fast); it is re-exported here because the gate is what it configures.
from cosmic_curriculum.workspace.config import GateSettings

__all__ = ["GateDecision", "GateSettings", "Verdict", "decide"]


def margin_fraction(margin: float) -> Fraction:
    """The margin as the exact decimal the user wrote: ``0.15`` is ``3/20``, not a binary float."""
    return Fraction(repr(float(margin)))


def margin_fails(wins_a: int, wins_b: int, episodes: int, margin: float) -> bool:
    """The reference rule, exact in integers: ``(wins_b - wins_a) / episodes >= margin``."""
    m = margin_fraction(margin)
    return (wins_b - wins_a) * m.denominator >= m.numerator * episodes


def sprt_hypotheses(settings: GateSettings) -> tuple[float, float]:
    """``(s0, s1)``: H0 "clear regression" at ``0.5 - gap/2``, H1 "no regression" at 0.5."""
    return 0.5 - settings.gap / 2.0, 0.5


def decide(
    settings: GateSettings,
    wins_a: int,
    wins_b: int,
    draws: int,
    pair_scores: Sequence[float] | None = None,
    planned_episodes: int | None = None,
    *,
    successes: int | None = None,
    returns: Sequence[float] | None = None,
) -> GateDecision:
    """Judge the candidate (``wins_a``) against the reference (``wins_b``) so far.

    ``margin``: ``"continue"`` until ``planned_episodes`` (default ``settings.episodes``)
    episodes are in, then fail iff ``(wins_b - wins_a) / N >= regression_margin`` (exact).
    ``sprt``: pass when the LLR reaches ``ln((1-β)/α)``, fail at ``ln(β/(1-α))``, else
    continue until ``planned_episodes`` (default ``settings.max_episodes``) and then fail
    iff the LLR is negative. With ``pair_scores`` (one mean candidate score per
    seat-swapped pair, covering all the episodes) the LLR uses the pentanomial model,
    otherwise the trinomial one.
    ``threshold``: on success, the SPRT of ``successes`` (default ``wins_a``: a won
    episode succeeds) over the episodes; on return, the rule on ``returns`` (one per
    episode); capped at ``planned_episodes`` (default ``settings.max_episodes``). Its
    summary and stats are the threshold rule's own (:mod:`threshold`).
    Several rules (``settings.rules``): each judges these counts with ``planned_episodes``
    (default ``settings.planned_episodes``) as its cap, and :func:`verdicts.combine`
    makes one decision of them (fail as soon as one fails, pass when all pass).
    """
    if len(settings.rules) > 1:
        cap = settings.planned_episodes if planned_episodes is None else planned_episodes
        return combine(
            [
                decide(
                    settings.only(rule),
                    wins_a,
                    wins_b,
                    draws,
                    pair_scores if rule == "sprt" else None,
                    cap,
                    successes=successes,
                    returns=returns,
                )
                for rule in settings.rules
            ]
        )
    for name, value in (("wins_a", wins_a), ("wins_b", wins_b), ("draws", draws)):
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    n = wins_a + wins_b + draws
    if settings.rule == "threshold":
        cap = settings.max_episodes if planned_episodes is None else planned_episodes
        won = wins_a if successes is None else successes
        return _decide_threshold(settings, won, n, returns, cap)
    info: dict[str, Any] = dict(stats.describe(wins_a, wins_b, draws))
    info["rule"] = settings.rule_label
    verdict: Verdict
    extra = ""
    if settings.rule == "margin":
        target = settings.episodes if planned_episodes is None else planned_episodes
        m = margin_fraction(settings.regression_margin)
        info.update(
            planned_episodes=target,
            regression_margin=settings.regression_margin,
            margin_exact=f"{m.numerator}/{m.denominator}",
        )
        if n < target or n == 0:
            verdict = "continue"
        else:
            verdict = (
                "fail" if margin_fails(wins_a, wins_b, n, settings.regression_margin) else "pass"
            )
    else:
        cap = settings.max_episodes if planned_episodes is None else planned_episodes
        s0, s1 = sprt_hypotheses(settings)
        lower, upper = stats.sprt_bounds(settings.alpha, settings.beta)
        if pair_scores is not None:
            if 2 * len(pair_scores) != n:
                raise ValueError(
                    f"pair_scores covers {2 * len(pair_scores)} episodes but the counts add "
                    f"up to {n}; pass one score per seat-swapped pair of the same games"
                )
            model = "pentanomial"
            llr = stats.llr_pentanomial(pair_scores, s0, s1) if n else 0.0
            info["pair_counts"] = [int(c) for c in stats.pair_counts(pair_scores)]
        else:
            model = "trinomial"
            llr = stats.llr_trinomial(wins_a, wins_b, draws, s0, s1) if n else 0.0
        verdict = stats.sprt_verdict(llr, lower, upper, at_cap=n >= cap)
        info.update(
            model=model,
            llr=llr,
            llr_bounds=[lower, upper],
            s0=s0,
            s1=s1,
            gap_hypothesis=settings.gap,
            alpha=settings.alpha,
            beta=settings.beta,
            max_episodes=cap,
            decided_at_cap=verdict != "continue" and lower < llr < upper,
        )
        extra = f", LLR {signed(llr, 2)} in ({signed(lower, 2)}, {signed(upper, 2)})"
    summary = f"{stats.counts_summary(wins_a, wins_b, draws)}{extra} → {verdict}"
    return GateDecision(verdict=verdict, rule=settings.rule_label, summary=summary, stats=info)


def _decide_threshold(
    settings: GateSettings,
    successes: int,
    episodes: int,
    returns: Sequence[float] | None,
    cap: int,
) -> GateDecision:
    if settings.measure == "return":
        if returns is None:
            raise ValueError('measure = "return" needs the per-episode returns')
        verdict, summary, info = threshold.decide_return(settings, returns, cap)
    else:
        verdict, summary, info = threshold.decide_success(settings, successes, episodes, cap)
    return GateDecision(verdict=verdict, rule="threshold", summary=summary, stats=info)


# --- Monte Carlo of the rules' operating characteristics (pure numpy, no I/O) -------------


@dataclass(frozen=True)
class SimResult:
    """Operating characteristics of one rule at one true strength and draw rate."""

    fail_rate: float
    mean_episodes: float
    p95_episodes: float
    trials: int

    @property
    def pass_rate(self) -> float:
        return 1.0 - self.fail_rate


def outcome_probabilities(true_gap: float, draw_rate: float) -> NDArray[np.float64]:
    """Per-game (candidate loss, draw, candidate win) probabilities.

    ``true_gap`` is the reference's win rate minus the candidate's (0.25 = "a candidate
    0.25 worse", score 0.375; -0.10 = "0.10 better").
    """
    p_win = (1.0 - draw_rate - true_gap) / 2.0
    p_loss = (1.0 - draw_rate + true_gap) / 2.0
    if min(p_win, p_loss) < -1e-12 or not 0.0 <= draw_rate <= 1.0:
        raise ValueError(
            f"true gap {true_gap} with draw rate {draw_rate} gives impossible "
            f"probabilities (win {p_win:.3f}, loss {p_loss:.3f}); need |gap| <= 1 - draw rate"
        )
    return np.clip(np.array([p_loss, draw_rate, p_win]), 0.0, 1.0)


def _pair_probabilities(game: NDArray[np.float64]) -> NDArray[np.float64]:
    """Pair-score distribution over (0, ¼, ½, ¾, 1) for two independent games."""
    return np.convolve(game, game)


def _llr_unique(
    counts: NDArray[np.int64], values: NDArray[np.float64], s0: float, s1: float
) -> NDArray[np.float64]:
    """LLR per row, solving each distinct count vector once (many trials share one)."""
    if counts.shape[0] == 0:
        return np.zeros(0)
    # each row as one integer (its counts as digits in base max + 1): sorting integers is
    # many times faster than np.unique(axis=0)'s sort of rows, the simulator's hot spot
    base = int(counts.max()) + 1
    if base ** counts.shape[1] < 2**62:
        keys = counts @ (base ** np.arange(counts.shape[1], dtype=np.int64))
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        uniq = counts[first]
    else:
        uniq, inverse = np.unique(counts, axis=0, return_inverse=True)
    llr = np.asarray(stats.gsprt_llr(uniq, values, s0, s1), dtype=np.float64).reshape(-1)
    return llr[inverse.reshape(-1)]


def simulate(
    settings: GateSettings,
    *,
    true_gap: float,
    draw_rate: float,
    trials: int,
    seed: int = 0,
    model: Literal["trinomial", "pentanomial"] = SIMULATE_MODEL,
    check_every: int | None = None,
    episodes: int | None = None,
) -> SimResult:
    """Monte Carlo of ``settings``'s rule, vectorised over ``trials``.

    ``margin`` plays ``episodes`` (default ``settings.episodes``) and applies the exact
    integer rule. ``sprt`` draws outcomes in steps and asks the LLR after each step:
    ``model="trinomial"`` steps ``check_every`` games (default ``2 * check_pairs``),
    ``model="pentanomial"`` steps ``check_every`` seat-swapped pairs (default
    ``check_pairs``, see :class:`GateSettings`); at ``max_episodes`` it fails iff
    LLR < 0, exactly like :func:`decide`. Games are independent draws from the true
    (loss, draw, win) probabilities and the two games of a pair are independent too
    (kickoff luck that cancels within a real pair only lowers the variance).
    """
    fails, used = simulate_trials(
        settings,
        true_gap=true_gap,
        draw_rate=draw_rate,
        trials=trials,
        seed=seed,
        model=model,
        check_every=check_every,
        episodes=episodes,
    )
    return SimResult(
        fail_rate=float(fails.mean()),
        mean_episodes=float(used.mean()),
        p95_episodes=float(np.percentile(used, 95)),
        trials=trials,
    )


def simulate_trials(
    settings: GateSettings,
    *,
    true_gap: float,
    draw_rate: float,
    trials: int,
    seed: int = 0,
    model: Literal["trinomial", "pentanomial"] = SIMULATE_MODEL,
    check_every: int | None = None,
    episodes: int | None = None,
    fail_at_cap: bool = True,
) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
    """:func:`simulate`'s trials one by one: whether each failed, and its episodes.
    ``fail_at_cap=False``: an SPRT still undecided at the cap passes (a forgetting
    comparison's rule, evaluation/forgetting.py)."""
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    if len(settings.rules) > 1:  # each rule's error rates are measured alone
        raise ValueError(f"simulate one rule at a time, not {settings.rule_label}")
    rng = np.random.default_rng(seed)
    game = outcome_probabilities(true_gap, draw_rate)
    if settings.rule == "margin":
        n = settings.episodes if episodes is None else episodes
        counts = rng.multinomial(n, game, size=trials)
        m = margin_fraction(settings.regression_margin)
        fails = (counts[:, 0] - counts[:, 2]) * m.denominator >= m.numerator * n
        return fails, np.full(trials, n, dtype=np.int64)

    s0, s1 = sprt_hypotheses(settings)
    lower, upper = stats.sprt_bounds(settings.alpha, settings.beta)
    cap = settings.max_episodes
    if model == "pentanomial":
        step = settings.check_pairs if check_every is None else check_every
        probs, values, per_unit = _pair_probabilities(game), stats.PENTANOMIAL_SCORES, 2
    else:
        step = 2 * settings.check_pairs if check_every is None else check_every
        probs, values, per_unit = game, stats.TRINOMIAL_SCORES, 1
    probs = probs / probs.sum()
    counts = np.zeros((trials, len(values)), dtype=np.int64)
    active = np.arange(trials)
    fails = np.zeros(trials, dtype=bool)
    used = np.zeros(trials, dtype=np.int64)
    played = 0
    while active.size:
        # Never step past the cap (the evaluator shortens its last batch the same way).
        units = min(step, (cap - played) // per_unit)
        if units <= 0:
            break
        counts[active] += rng.multinomial(units, probs, size=active.size)
        played += units * per_unit
        llr = _llr_unique(counts[active], values, s0, s1)
        at_cap = played + per_unit > cap
        done = (llr >= upper) | (llr <= lower) | at_cap
        fail_now = (llr <= lower) | (fail_at_cap & at_cap & (llr < upper) & (llr < 0))
        fails[active[done]] = fail_now[done]
        used[active[done]] = played
        active = active[~done]
    used[active] = played  # only if the cap is smaller than one step
    return fails, used


@dataclass(frozen=True)
class SimSpec:
    """One row family of the simulator's table: a rule and how the SPRT looks."""

    label: str
    settings: GateSettings
    model: Literal["trinomial", "pentanomial"] = SIMULATE_MODEL
    check_every: int | None = None


def spec_label(spec_settings: GateSettings, model: str, check_every: int | None) -> str:
    s = spec_settings
    if s.rule == "margin":
        return f"margin {s.regression_margin:g}, {s.episodes} episodes"
    if model == "trinomial":
        k = 2 * s.check_pairs if check_every is None else check_every
        unit = "episode" if k == 1 else f"{k} episodes"
    else:
        k = s.check_pairs if check_every is None else check_every
        unit = "pair" if k == 1 else f"{k} pairs"
    return f"sprt gap {s.gap:g}, {model}, every {unit}"


def simulate_table(
    specs: Sequence[SimSpec],
    draw_rates: Sequence[float],
    trials: int,
    *,
    worse: float = SIMULATE_WORSE_GAP,
    better: float = SIMULATE_BETTER_GAP,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """One row per (spec, draw rate): false-fail at equal strength, pass rate of a
    candidate ``worse`` worse (win-rate gap), fail rate of one ``better`` better, and
    episode counts (mean, 95th percentile). Each cell has its own derived seed."""
    rows: list[dict[str, Any]] = []
    cell = 0
    for spec in specs:
        for draw in draw_rates:
            results = {}
            for name, true_gap in (("equal", 0.0), ("worse", worse), ("better", -better)):
                cell_seed = int(np.random.SeedSequence([seed, cell]).generate_state(1)[0])
                cell += 1
                results[name] = simulate(
                    spec.settings,
                    true_gap=true_gap,
                    draw_rate=draw,
                    trials=trials,
                    seed=cell_seed,
                    model=spec.model,
                    check_every=spec.check_every,
                )
            rows.append(
                {
                    "rule": spec.label,
                    "draw_rate": draw,
                    "trials": trials,
                    "false_fail": results["equal"].fail_rate,
                    "passes_worse": results["worse"].pass_rate,
                    "fails_better": results["better"].fail_rate,
                    "mean_episodes_equal": results["equal"].mean_episodes,
                    "p95_episodes_equal": results["equal"].p95_episodes,
                    "mean_episodes_worse": results["worse"].mean_episodes,
                    "p95_episodes_worse": results["worse"].p95_episodes,
                    "mean_episodes_better": results["better"].mean_episodes,
                }
            )
    return rows
