"""What the seeds can show: first crossings, exact rank tests, the verdict's sentences."""

from __future__ import annotations

import pytest

from cosmic_curriculum.compare.verdict import (
    compare_values,
    first_crossing,
    rank_p_value,
    reach_sentence,
    reach_values,
    smallest_p,
    spread,
)


@pytest.mark.parametrize(
    ("points", "target", "at"),
    [
        ([(10, 0.1), (20, 0.95), (30, 0.5)], 0.9, 20),
        ([(30, 0.95), (10, 0.1), (20, 0.9)], 0.9, 20),  # in timestep order; >= counts
        ([(10, 0.1), (20, 0.2)], 0.9, None),
        ([], 0.9, None),
    ],
)
def test_first_crossing(points: list[tuple[int, float]], target: float, at: int | None) -> None:
    assert first_crossing(points, target) == at


@pytest.mark.parametrize(
    ("n", "m", "p"), [(2, 2, 1 / 6), (3, 3, 1 / 20), (3, 2, 1 / 10), (5, 5, 1 / 252)]
)
def test_the_smallest_p_value_seeds_can_give(n: int, m: int, p: float) -> None:
    assert smallest_p(n, m) == pytest.approx(p)


@pytest.mark.parametrize(
    ("better", "worse", "p"),
    [
        ([0.9, 0.95, 1.0], [0.1, 0.2, 0.3], 1 / 20),  # complete separation
        ([0.1, 0.2, 0.3], [0.9, 0.95, 1.0], 1.0),
        ([0.9, 0.2, 1.0], [0.1, 0.95, 0.3], 0.35),  # U = 6 of 9: 7 of the 20 splits
        ([0.5, 0.5], [0.5, 0.5], 1.0),  # all tied
    ],
)
def test_rank_p_value(better: list[float], worse: list[float], p: float) -> None:
    assert rank_p_value(better, worse) == pytest.approx(p)


@pytest.mark.parametrize(
    ("a", "b", "says"),
    [
        ([1.0, 1.0], [0.0, 0.0], "2 against 2 seeds cannot show a difference"),
        ([0.9, 0.95, 1.0], [0.1, 0.2, 0.3], "cur is higher than base"),
        ([0.1, 0.2, 0.3], [0.9, 0.95, 1.0], "base is higher than cur"),
        ([0.9, 0.2, 1.0], [0.1, 0.95, 0.3], "not shown either way"),
    ],
)
def test_the_verdict_says_what_the_seeds_can_show(
    a: list[float], b: list[float], says: str
) -> None:
    assert says in compare_values("cur", a, "base", b, "success")


def test_reaching_the_target() -> None:
    assert reach_sentence("cur", [300, None, 100], 0.9) == (
        "cur reached 0.9 on 2 of 3 seeds (at 100, 300 timesteps)"
    )
    assert reach_sentence("base", [None, None], 0.9) == "base reached 0.9 on 0 of 2 seeds"
    # Fewer timesteps is better; a seed that never reached it comes after every one that did.
    assert reach_values([300, None, 100], 1000) == [-300, -1001, -100]
    assert spread([0.2, 0.4, 0.9]).mean == pytest.approx(0.5)
