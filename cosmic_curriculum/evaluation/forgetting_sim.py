"""Monte Carlo of the gate against forgetting (`gate simulate --against N`): how often a
candidate as strong as its reference and as every earlier bot fails, and how often one
that regressed against one earlier bot is caught (pure numpy, no I/O).

Each trial plays the previous comparison under the stage's rule and ``N`` forgetting
comparisons under :func:`forgetting.comparison_settings` (SPRT at ``beta / N``, passing
when still undecided at the cap, or the sign test at ``beta / N`` over ``episodes``),
independently, as the evaluator plays them (each comparison its own games). Whether the
gate fails does not depend on the order; the episodes it plays do: the comparisons start
only once the previous comparison passed and stop at the first clear regression.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.defaults import SIMULATE_MODEL, SIMULATE_WORSE_GAP
from cosmic_curriculum.evaluation.forgetting import (
    comparison_rule,
    comparison_settings,
    corrected_beta,
    sign_test_critical,
)
from cosmic_curriculum.evaluation.gate import SimSpec, outcome_probabilities, simulate_trials
from cosmic_curriculum.workspace.gate_settings import GateSettings

Model = Literal["trinomial", "pentanomial"]


def _seed(seed: int, *path: int) -> int:
    return int(np.random.SeedSequence([seed, *path]).generate_state(1)[0])


def comparison_fails(
    settings: GateSettings,
    m: int,
    *,
    true_gap: float,
    draw_rate: float,
    trials: int,
    seed: int,
    model: Model = SIMULATE_MODEL,
    check_every: int | None = None,
) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
    """One forgetting comparison of a family of ``m``, per trial: failed?, episodes."""
    played = comparison_settings(settings, m)
    if played.rule == "sprt":
        return simulate_trials(
            played,
            true_gap=true_gap,
            draw_rate=draw_rate,
            trials=trials,
            seed=seed,
            model=model,
            check_every=check_every,
            fail_at_cap=False,
        )
    n = played.episodes
    counts = np.random.default_rng(seed).multinomial(
        n, outcome_probabilities(true_gap, draw_rate), size=trials
    )
    wins, losses = counts[:, 2], counts[:, 0]
    critical = np.asarray(sign_test_critical(n, corrected_beta(settings, m)), dtype=np.int64)
    return wins <= critical[wins + losses], np.full(trials, n, dtype=np.int64)


def simulate_family(
    settings: GateSettings,
    m: int,
    *,
    draw_rate: float,
    trials: int,
    seed: int = 0,
    model: Model = SIMULATE_MODEL,
    check_every: int | None = None,
    worse: float = SIMULATE_WORSE_GAP,
) -> dict[str, Any]:
    """One row: with the candidate equal to its reference and to all ``m`` earlier bots,
    the false-fail rate of the previous comparison, of the forgetting family (any of the
    ``m``) and of the whole gate, and the mean episodes the ``m`` comparisons add to the
    gate; with it ``worse`` worse than the oldest earlier bot only, the rate the family
    fails it (detects the forgetting)."""
    if m < 1:
        raise ValueError(f"against must be >= 1 earlier bot, got {m}")
    previous = settings.only(comparison_rule(settings))
    prev_fails, _ = simulate_trials(
        previous,
        true_gap=0.0,
        draw_rate=draw_rate,
        trials=trials,
        seed=_seed(seed, 0),
        model=model,
        check_every=check_every,
    )
    family = np.zeros(trials, dtype=bool)
    detect = np.zeros(trials, dtype=bool)
    episodes = np.zeros(trials, dtype=np.int64)
    for k in range(m):
        fails, used = comparison_fails(
            settings,
            m,
            true_gap=0.0,
            draw_rate=draw_rate,
            trials=trials,
            seed=_seed(seed, 1, k),
            model=model,
            check_every=check_every,
        )
        # played only after the previous comparison passed and no earlier one failed
        episodes += np.where(prev_fails | family, 0, used)
        family |= fails
        if k == 0:  # the regression is against the oldest bot; the others stay equal
            fails, _ = comparison_fails(
                settings,
                m,
                true_gap=worse,
                draw_rate=draw_rate,
                trials=trials,
                seed=_seed(seed, 2, k),
                model=model,
                check_every=check_every,
            )
        detect |= fails
    return {
        "rule": previous.rule_label,
        "against": m,
        "draw_rate": draw_rate,
        "trials": trials,
        "corrected_beta": corrected_beta(settings, m),
        "previous_false_fail": float(prev_fails.mean()),
        "family_false_fail": float(family.mean()),
        "gate_false_fail": float((prev_fails | family).mean()),
        "detects_worse": float(detect.mean()),
        "worse": worse,
        "family_mean_episodes": float(episodes.mean()),
    }


def simulate_family_table(
    specs: Sequence[SimSpec],
    m: int,
    draw_rates: Sequence[float],
    trials: int,
    *,
    worse: float = SIMULATE_WORSE_GAP,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """One :func:`simulate_family` row per (spec, draw rate), each cell its own derived
    seed, ``rule`` the spec's label (as :func:`gate.simulate_table`'s rows)."""
    rows = []
    for i, spec in enumerate(specs):
        for j, draw in enumerate(draw_rates):
            row = simulate_family(
                spec.settings,
                m,
                draw_rate=draw,
                trials=trials,
                seed=_seed(seed, i, j),
                model=spec.model,
                check_every=spec.check_every,
                worse=worse,
            )
            rows.append(row | {"rule": spec.label})
    return rows
