"""A head-to-head result's numbers as every layer computes and shows them, written once:
its score ``(wins + draws / 2) / episodes`` and signed figures (gap, Elo, LLR).

Every layer may score results (the statistics, the curriculum's selection, `status`, the
reports), so this module sits at the bottom and imports nothing of the package: `status`
must not pay for numpy. What zero games score differs by use (the statistics' 0.5 prior,
"no score" in a table, 0 for a selection), so each caller states it. The gate's summary
and `status`'s decision interval must write the same figures the same way, hence one
:func:`signed`.
"""

from __future__ import annotations

import math
from typing import overload


@overload
def score(wins: int, draws: int, episodes: int, *, if_none: float) -> float: ...


@overload
def score(wins: int, draws: int, episodes: int, *, if_none: None) -> float | None: ...


def score(wins: int, draws: int, episodes: int, *, if_none: float | None) -> float | None:
    """``(wins + draws / 2) / episodes``; ``if_none`` when no game was played.

    Pure arithmetic: checking the counts (non-negative, adding up) is the caller's.
    """
    if episodes == 0:
        return if_none
    return (wins + 0.5 * draws) / episodes


def signed(x: float, digits: int) -> str:
    """``+0.11`` / ``−0.11`` with a typographic minus; ``±∞`` for infinities.

    A value that rounds to zero is ``+0.00``, never ``−0.00``.
    """
    if math.isinf(x):
        return "+∞" if x > 0 else "−∞"
    text = f"{x:+.{digits}f}"
    if float(text) == 0.0:
        text = f"{0.0:+.{digits}f}"
    return text.replace("-", "−")


def format_return(x: float) -> str:
    """An episode return for people: whole numbers from 1,000 up (a Pendulum's -1463, not
    -1.46e+03), else four significant digits."""
    return f"{x:.0f}" if abs(x) >= 1000 else f"{x:.4g}"
