"""The one score function, ``(wins + draws / 2) / episodes``, and every caller's rule for
zero games (each states its own; a refactor must not move any of them); signed figures."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from cosmic_curriculum import scoring
from cosmic_curriculum.core.decisions import record_score
from cosmic_curriculum.evaluation import stats
from cosmic_curriculum.reports.history_table import record_row
from cosmic_curriculum.status.trends import _score as trend_score


@pytest.mark.parametrize(
    ("wins", "draws", "episodes", "if_none", "expected"),
    [
        (41, 7, 100, None, 0.445),
        (41, 7, 100, 0.5, 0.445),  # the zero-games answer changes nothing with games
        (0, 0, 10, None, 0.0),
        (10, 0, 10, 0.0, 1.0),
        (0, 10, 10, 0.0, 0.5),  # a draw counts half a win
        (1, 1, 3, None, 0.5),
        (0, 0, 0, None, None),
        (0, 0, 0, 0.0, 0.0),
        (0, 0, 0, 0.5, 0.5),
    ],
)
def test_score(
    wins: int, draws: int, episodes: int, if_none: float | None, expected: float | None
) -> None:
    got = scoring.score(wins, draws, episodes, if_none=if_none)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


def counts(wins_a: int, wins_b: int, draws: int) -> dict[str, Any]:
    return {"wins_a": wins_a, "wins_b": wins_b, "draws": draws, "episodes": wins_a + wins_b + draws}


def history_score(c: dict[str, Any]) -> float | None:
    score: float | None = record_row(c)["score"]
    return score


CALLERS: dict[str, Callable[[dict[str, Any]], float | None]] = {
    "statistics": lambda c: stats.score(c["wins_a"], c["wins_b"], c["draws"]),
    "selection": record_score,
    "status trend": trend_score,
    "history export": history_score,
}


@pytest.mark.parametrize(
    ("caller", "zero_games"),
    [
        ("statistics", 0.5),  # the prior of no evidence: Elo 0
        ("selection", 0.0),  # ranks a candidate without games last
        ("status trend", None),  # no score yet
        ("history export", None),  # an empty cell, not a made-up number
    ],
)
def test_each_caller_keeps_its_zero_games_answer(caller: str, zero_games: float | None) -> None:
    score = CALLERS[caller]
    assert score(counts(0, 0, 0)) == zero_games
    assert score(counts(41, 52, 7)) == pytest.approx(0.445)
    assert score(counts(3, 0, 1)) == pytest.approx(0.875)


@pytest.mark.parametrize(
    ("x", "digits", "text"),
    [
        (-0.114, 2, "−0.11"),  # a typographic minus
        (0.114, 2, "+0.11"),
        (-0.001, 2, "+0.00"),  # rounds to zero: no "−0.00"
        (-0.0, 2, "+0.00"),
        (-38.4, 0, "−38"),
        (-0.4, 0, "+0"),
        (0.0005, 3, "+0.001"),
        (math.inf, 0, "+∞"),
        (-math.inf, 2, "−∞"),
    ],
)
def test_signed(x: float, digits: int, text: str) -> None:
    assert scoring.signed(x, digits) == text


def test_the_score_imports_nothing() -> None:
    # the arena and `status` may use it: it must bring neither numpy nor another layer
    probe = (
        "import json, sys, cosmic_curriculum.scoring; "
        "print(json.dumps(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('cosmic_curriculum', 'numpy'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == ["cosmic_curriculum", "cosmic_curriculum.scoring"]


@pytest.mark.parametrize(
    ("x", "shown"),
    [
        (-1463.24, "-1463"),
        (500.0, "500"),
        (0.27, "0.27"),
        (-0.123456, "-0.1235"),
        (0.0, "0"),
        (12345678.9, "12345679"),
        (999.96, "1000"),
    ],
)
def test_returns_read_without_exponents(x: float, shown: str) -> None:
    assert scoring.format_return(x) == shown
