"""The score of a head-to-head result, ``(wins + draws / 2) / episodes``, written once.

Every layer may score results (the statistics, the curriculum's selection, `status`, the
reports), so this module sits at the bottom and imports nothing: `status` must not pay for
numpy. What zero games score differs by use (the statistics' 0.5 prior, "no score" in a
table, 0 for a selection), so each caller states it.
"""

from __future__ import annotations

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
