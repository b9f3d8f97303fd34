"""What a comparison's numbers can show, pure: the first crossing of a target, each arm's
spread over its seeds, and the verdict between two arms.

The unit of evidence is the seed: one arm × seed is one training, and the episodes
measured on it say how good that one bot is, not how good the arm is. So the verdict
compares the seeds' values with an exact rank test (Mann-Whitney, all orderings equally
likely under "no difference"): with n and m seeds the smallest one-sided p-value is
1 / C(n+m, n), reached only when every seed of one arm beats every seed of the other.
With 2 against 2 seeds that is 1/6, so no difference can be shown at 0.05; with 3 against
3 it is 1/20 = 0.05: shown only by a complete separation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from cosmic_curriculum.defaults import COMPARE_ALPHA

ALPHA = COMPARE_ALPHA


def first_crossing(points: Sequence[tuple[int, float]], target: float) -> int | None:
    """The timesteps of the first point (in timestep order) whose value reaches ``target``."""
    for steps, value in sorted(points):
        if value >= target:
            return steps
    return None


@dataclass(frozen=True)
class Spread:
    """An arm's values over its seeds: mean, lowest and highest, and how many."""

    n: int
    mean: float
    low: float
    high: float


def spread(values: Sequence[float]) -> Spread:
    if not values:
        raise ValueError("no seeds to summarise")
    return Spread(len(values), sum(values) / len(values), min(values), max(values))


def rank_p_value(better: Sequence[float], worse: Sequence[float]) -> float:
    """One-sided exact Mann-Whitney p-value that ``better``'s values are larger: the share
    of all splits of the pooled values into groups of these sizes whose U is at least the
    observed one (ties count half, as in U)."""
    n, m = len(better), len(worse)
    if n == 0 or m == 0:
        return 1.0
    pooled = [*better, *worse]

    def u(group: Sequence[float], other: Sequence[float]) -> float:
        return sum((a > b) + 0.5 * (a == b) for a in group for b in other)

    observed = u(better, worse)
    total = hits = 0
    for chosen in combinations(range(n + m), n):
        picked = set(chosen)
        a = [pooled[i] for i in chosen]
        b = [pooled[i] for i in range(n + m) if i not in picked]
        total += 1
        hits += u(a, b) >= observed - 1e-12
    return hits / total


def smallest_p(n: int, m: int) -> float:
    """The smallest one-sided p-value ``n`` against ``m`` seeds can give at all."""
    return 1.0 / math.comb(n + m, n)


def compare_values(
    name_a: str, a: Sequence[float], name_b: str, b: Sequence[float], what: str
) -> str:
    """One sentence: whether the seeds show ``a`` and ``b`` differ in ``what``, and why."""
    floor = smallest_p(len(a), len(b))
    if floor > ALPHA:
        return (
            f"{what}: {len(a)} against {len(b)} seeds cannot show a difference (even a "
            f"complete separation has p = {floor:.3f} > {ALPHA}); run more seeds"
        )
    p_ab, p_ba = rank_p_value(a, b), rank_p_value(b, a)
    if p_ab <= ALPHA:
        return f"{what}: {name_a} is higher than {name_b} on the seeds ({_rank(p_ab)})"
    if p_ba <= ALPHA:
        return f"{what}: {name_b} is higher than {name_a} on the seeds ({_rank(p_ba)})"
    return f"{what}: not shown either way (rank test p = {min(p_ab, p_ba):.3f}; the seeds overlap)"


def _rank(p: float) -> str:
    return f"one-sided rank test p = {p:.3f}"


def reach_sentence(name: str, reached: Sequence[int | None], target: float) -> str:
    """How many of an arm's seeds reached the target, and when."""
    hit = sorted(t for t in reached if t is not None)
    if not hit:
        return f"{name} reached {target:g} on 0 of {len(reached)} seeds"
    when = ", ".join(f"{t:,}" for t in hit)
    return f"{name} reached {target:g} on {len(hit)} of {len(reached)} seeds (at {when} timesteps)"


def reach_values(reached: Sequence[int | None], budget: int) -> list[float]:
    """Timesteps to the target as values where less is better, a seed that never reached
    it ranked after every seed that did (``budget`` + 1: later than any crossing)."""
    return [-(t if t is not None else budget + 1) for t in reached]
