"""The gate's threshold rule: did the bot reach a target? Pure decisions and their Monte
Carlo (no I/O).

``measure = "success"``: Wald's SPRT on Bernoulli successes, H0 ``p = target - delta``
(fail) against H1 ``p = target + delta`` (pass), with the bounds of
:func:`stats.sprt_bounds`; at the cap it fails iff the LLR is negative, as the ``sprt``
rule does. ``measure = "return"``: a sequential normal 95% interval of the mean return
(z = 1.96 with the sample standard deviation), asked from ``min_episodes`` on; it
decides once the interval excludes the target, and at the cap passes iff the mean
reaches it. Repeated looks make its error rates larger than an interval's nominal 5%:
docs/GATES.md lists them as measured.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.defaults import SIMULATE_RETURN_SD, SIMULATE_WEAK_SUCCESS
from cosmic_curriculum.evaluation import stats
from cosmic_curriculum.evaluation.verdicts import Verdict
from cosmic_curriculum.scoring import format_return, signed
from cosmic_curriculum.workspace.config import GateSettings


def hypotheses(settings: GateSettings) -> tuple[float, float]:
    """``(p0, p1)``: the success rates the SPRT tells apart (H0 fails, H1 passes)."""
    target = _target(settings)
    return target - settings.delta, target + settings.delta


def _target(settings: GateSettings) -> float:
    if settings.target is None:  # GateSettings refuses this; keep readers honest
        raise ValueError('rule = "threshold" needs a target: set target in [gate]')
    return settings.target


def bernoulli_llr(successes: int, episodes: int, p0: float, p1: float) -> float:
    """Wald's LLR of H1 (``p1``) over H0 (``p0``) after ``successes`` in ``episodes``."""
    failures = episodes - successes
    return successes * math.log(p1 / p0) + failures * math.log((1.0 - p1) / (1.0 - p0))


def _rate_text(successes: int, episodes: int) -> tuple[str, list[float]]:
    low, high = stats.wilson_interval(successes, episodes)
    rate = successes / episodes if episodes else 0.0
    text = f"{successes}/{episodes} successes ({rate:.0%}, 95% {low:.0%}–{high:.0%})"
    return text, [low, high]


def decide_success(
    settings: GateSettings, successes: int, episodes: int, cap: int
) -> tuple[Verdict, str, dict[str, Any]]:
    """The SPRT's verdict after ``successes`` of ``episodes`` (``cap``: all there will be)."""
    if not 0 <= successes <= episodes:
        raise ValueError(f"need 0 <= successes <= episodes, got {successes} of {episodes}")
    p0, p1 = hypotheses(settings)
    lower, upper = stats.sprt_bounds(settings.alpha, settings.beta)
    llr = bernoulli_llr(successes, episodes, p0, p1)
    verdict: Verdict = stats.sprt_verdict(llr, lower, upper, at_cap=episodes >= cap)
    counts, wilson = _rate_text(successes, episodes)
    info: dict[str, Any] = {
        "rule": "threshold",
        "measure": "success",
        "successes": successes,
        "episodes": episodes,
        "success_rate": successes / episodes if episodes else None,
        "success_rate_ci95": wilson,
        "success_rate_ci_method": "wilson",
        "target": settings.target,
        "delta": settings.delta,
        "p0": p0,
        "p1": p1,
        "llr": llr,
        "llr_bounds": [lower, upper],
        "alpha": settings.alpha,
        "beta": settings.beta,
        "max_episodes": cap,
        "decided_at_cap": verdict != "continue" and lower < llr < upper,
        "verdict": verdict,
    }
    summary = (
        f"{counts} vs target {settings.target:g} (SPRT {p0:g} vs {p1:g}), "
        f"LLR {signed(llr, 2)} in ({signed(lower, 2)}, {signed(upper, 2)}) → {verdict}"
    )
    return verdict, summary, info


def mean_interval(returns: Sequence[float]) -> tuple[float, float, float]:
    """``(mean, low, high)``: the normal 95% interval of the mean (sample SD, n - 1)."""
    n = len(returns)
    if n == 0:
        return 0.0, -math.inf, math.inf
    mean = math.fsum(returns) / n
    if n == 1:
        return mean, -math.inf, math.inf
    sd = math.sqrt(math.fsum((r - mean) ** 2 for r in returns) / (n - 1))
    half = stats.Z95 * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def decide_return(
    settings: GateSettings, returns: Sequence[float], cap: int
) -> tuple[Verdict, str, dict[str, Any]]:
    """The return rule's verdict on the per-episode ``returns`` so far."""
    target = _target(settings)
    n = len(returns)
    mean, low, high = mean_interval(returns)
    verdict: Verdict = "continue"
    if n >= settings.min_episodes and low > target:
        verdict = "pass"
    elif n >= settings.min_episodes and high < target:
        verdict = "fail"
    elif n >= cap:
        verdict = "pass" if mean >= target else "fail"
    info: dict[str, Any] = {
        "rule": "threshold",
        "measure": "return",
        "episodes": n,
        "mean_return": mean,
        "mean_return_ci95": [_finite(low), _finite(high)],
        "mean_return_ci_method": "normal (z = 1.96, sample SD), sequential",
        "target": target,
        "min_episodes": settings.min_episodes,
        "max_episodes": cap,
        "decided_at_cap": verdict != "continue" and low <= target <= high,
        "verdict": verdict,
    }
    shown = (
        f"95% {format_return(low)}–{format_return(high)}"
        if math.isfinite(high)
        else "no interval yet"
    )
    summary = (
        f"mean return {format_return(mean)} over {n} episodes ({shown}) "
        f"vs target {target:g} → {verdict}"
    )
    return verdict, summary, info


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


# --- Monte Carlo (vectorised over trials) ---------------------------------------------


@dataclass(frozen=True)
class ThresholdSim:
    """Operating characteristics of the threshold rule at one true success probability."""

    true_p: float
    pass_rate: float
    mean_episodes: float
    p95_episodes: float
    trials: int


# One look of a simulated sequential test: given the trials still running and the
# episodes each has played, which stop now and which of those pass.
Trials = NDArray[np.int64]
Mask = NDArray[np.bool_]
Look = Callable[[Trials, int], tuple[Mask, Mask]]


def _simulate(
    trials: int, cap: int, step: int, play: Callable[[Trials, int], None], look: Look
) -> tuple[float, float, float]:
    """Run ``trials`` sequential tests together: each round ``play(active, units)`` adds
    ``units`` episodes to the running trials, then ``look`` decides; a trial stops when
    decided or at ``cap``. (pass rate, mean episodes, 95th percentile of episodes)."""
    active = np.arange(trials)
    passes = np.zeros(trials, dtype=bool)
    used = np.full(trials, cap, dtype=np.int64)
    played = 0
    while active.size and played < cap:
        units = min(step, cap - played)
        play(active, units)
        played += units
        done, pass_now = look(active, played)
        passes[active[done]] = pass_now[done]
        used[active[done]] = played
        active = active[~done]
    return float(passes.mean()), float(used.mean()), float(np.percentile(used, 95))


def _check_trials(trials: int) -> None:
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")


def simulate_success(
    settings: GateSettings,
    *,
    true_p: float,
    trials: int,
    seed: int = 0,
    check_every: int | None = None,
) -> ThresholdSim:
    """The success SPRT on independent Bernoulli(``true_p``) episodes, looking every
    ``check_every`` episodes (default: as the evaluator does, ``2 * check_pairs``) and
    never past ``max_episodes``, deciding exactly as :func:`decide_success`."""
    _check_trials(trials)
    if not 0.0 <= true_p <= 1.0:
        raise ValueError(f"true success probability must be in [0, 1], got {true_p}")
    rng = np.random.default_rng(seed)
    p0, p1 = hypotheses(settings)
    lower, upper = stats.sprt_bounds(settings.alpha, settings.beta)
    win, loss = math.log(p1 / p0), math.log((1.0 - p1) / (1.0 - p0))
    step = 2 * settings.check_pairs if check_every is None else check_every
    cap = settings.max_episodes
    successes = np.zeros(trials, dtype=np.int64)

    def play(active: Trials, units: int) -> None:
        successes[active] += rng.binomial(units, true_p, size=active.size)

    def look(active: Trials, played: int) -> tuple[Mask, Mask]:
        s = successes[active]
        llr = s * win + (played - s) * loss
        at_cap = played >= cap
        done = (llr >= upper) | (llr <= lower) | at_cap
        return done, (llr >= upper) | (at_cap & (llr > lower) & (llr >= 0))

    pass_rate, mean, p95 = _simulate(trials, cap, step, play, look)
    return ThresholdSim(true_p, pass_rate, mean, p95, trials)


def simulate_return(
    settings: GateSettings,
    *,
    true_mean: float,
    sd: float,
    trials: int,
    seed: int = 0,
    check_every: int | None = None,
) -> ThresholdSim:
    """The return rule on independent normal returns (``true_mean``, ``sd``), looking
    every ``check_every`` episodes (default ``2 * check_pairs``) from ``min_episodes``
    on, deciding exactly as :func:`decide_return`."""
    _check_trials(trials)
    rng = np.random.default_rng(seed)
    target = _target(settings)
    step = 2 * settings.check_pairs if check_every is None else check_every
    cap = settings.max_episodes
    total = np.zeros(trials)
    total_sq = np.zeros(trials)

    def play(active: Trials, units: int) -> None:
        draws = rng.normal(true_mean, sd, size=(active.size, units))
        total[active] += draws.sum(axis=1)
        total_sq[active] += (draws * draws).sum(axis=1)

    def look(active: Trials, played: int) -> tuple[Mask, Mask]:
        mean = total[active] / played
        var = np.maximum(0.0, (total_sq[active] - played * mean * mean) / max(1, played - 1))
        half = stats.Z95 * np.sqrt(var / played)
        looks = played >= settings.min_episodes
        up, down = looks & (mean - half > target), looks & (mean + half < target)
        at_cap = played >= cap
        return up | down | at_cap, up | (at_cap & ~down & (mean >= target))

    pass_rate, mean, p95 = _simulate(trials, cap, step, play, look)
    return ThresholdSim(true_mean, pass_rate, mean, p95, trials)


def simulate_table(
    settings: GateSettings,
    trials: int,
    *,
    weak: float = SIMULATE_WEAK_SUCCESS,
    sd: float = SIMULATE_RETURN_SD,
    seed: int = 0,
    check_every: int | None = None,
) -> list[dict[str, Any]]:
    """One row per true strength: at ``target - delta`` a pass is a false pass (the rate
    ``alpha`` bounds), at ``target + delta`` a fail is a false fail (``beta``); at the
    target itself and, on success, at ``weak`` (the issue's 5%-success bot) the pass rate
    is shown as measured. On return, strengths are true mean returns (``sd`` apart)."""
    target = _target(settings)
    cells: list[tuple[str, float]] = [
        ("target - delta", target - settings.delta),
        ("target", target),
        ("target + delta", target + settings.delta),
    ]
    if settings.measure == "success":
        cells.append(("weak", weak))
    rows: list[dict[str, Any]] = []
    for i, (name, true) in enumerate(cells):
        cell_seed = int(np.random.SeedSequence([seed, i]).generate_state(1)[0])
        if settings.measure == "success":
            sim = simulate_success(
                settings, true_p=true, trials=trials, seed=cell_seed, check_every=check_every
            )
        else:
            sim = simulate_return(
                settings,
                true_mean=true,
                sd=sd,
                trials=trials,
                seed=cell_seed,
                check_every=check_every,
            )
        error = {"target - delta": sim.pass_rate, "target + delta": 1.0 - sim.pass_rate}
        rows.append(
            {
                "rule": f"threshold {settings.measure}, target {target:g} ± {settings.delta:g}",
                "strength": name,
                "true": true,
                "trials": trials,
                "pass_rate": sim.pass_rate,
                "fail_rate": 1.0 - sim.pass_rate,
                "error_rate": error.get(name),
                "mean_episodes": sim.mean_episodes,
                "p95_episodes": sim.p95_episodes,
            }
        )
    return rows
