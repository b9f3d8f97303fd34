"""The baselines: ``inert`` (all zeros) and ``random`` (uniform actions)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.arena.policy import F32, InertPolicy, check_decision_ticks
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.defaults import DECISION_TICKS


class InertBot(InertPolicy):
    """The arena's inert policy as a bot: it also records the ``game`` of its file."""

    def __init__(
        self, decision_ticks: int = DECISION_TICKS, game: GameSettings | None = None
    ) -> None:
        super().__init__(decision_ticks)
        self.game = game


class RandomBot:
    """Uniform random actions in [-1, 1], drawn fresh every decision from ``rng``."""

    kind = "random"

    def __init__(
        self, decision_ticks: int = DECISION_TICKS, game: GameSettings | None = None
    ) -> None:
        self.decision_ticks = check_decision_ticks(decision_ticks)
        self.game = game

    def act(self, obs: F32, rng: np.random.Generator) -> F32:
        return rng.uniform(-1.0, 1.0, size=(obs.shape[0], ACT_SIZE)).astype(np.float32)

    def reset(self, mask: NDArray[np.bool_]) -> None:
        return None
