"""What the arena needs from a player: the ``Policy`` protocol, and an inert default.

The game plays anything with this shape; bot files, inference and the scripted rookie live
in ``cosmic_curriculum.bots``, which builds on the arena (never the reverse).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.defaults import DECISION_TICKS

F32 = NDArray[np.float32]


@runtime_checkable
class Policy(Protocol):
    """A batched player: ``act`` maps observations ``float32 (n, OBS_SIZE)`` (see
    ``arena.observations``) to actions ``float32 (n, ACT_SIZE)`` in [-1, 1], once every
    ``decision_ticks`` physics ticks. ``reset(mask)`` makes stateful policies forget the
    masked games. ``kind`` names the policy; the arena skips observing for ``"inert"``."""

    kind: str
    decision_ticks: int

    def act(self, obs: F32, rng: np.random.Generator) -> F32: ...

    def reset(self, mask: NDArray[np.bool_]) -> None: ...


def check_decision_ticks(value: int) -> int:
    """``value`` if it is a valid ``decision_ticks`` (an integer >= 1), else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"decision_ticks must be an integer >= 1, got {value!r}")
    return value


class InertPolicy:
    """Does nothing: every action is zero (the ship drifts only when pushed)."""

    kind = "inert"

    def __init__(self, decision_ticks: int = DECISION_TICKS) -> None:
        self.decision_ticks = check_decision_ticks(decision_ticks)

    def act(self, obs: F32, rng: np.random.Generator) -> F32:
        return np.zeros((obs.shape[0], ACT_SIZE), dtype=np.float32)

    def reset(self, mask: NDArray[np.bool_]) -> None:
        return None
