"""A real two-player PettingZoo game whose observation is a Dict with no action mask:
seven stones, each move takes one or two (taking more than are left takes the rest), who
takes the last stone wins. What a player sees: ``{"stones": one-hot of the stones left,
"seat": 0 or 1}``. Every move is legal, so it trains with PPO and SB3's
MultiInputPolicy."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from tests.envs.fake_games import start_books

STONES = 7


class DictGame(AECEnv[str, Any, int]):
    metadata: ClassVar[dict[str, Any]] = {"name": "dict_game_v0", "is_parallelizable": False}

    def __init__(self) -> None:
        super().__init__()
        self.possible_agents = ["first", "second"]
        self._obs = spaces.Dict(
            {"stones": spaces.Box(0, 1, (STONES + 1,), np.int8), "seat": spaces.Discrete(2)}
        )
        self._act = spaces.Discrete(2)
        self.left = STONES

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._obs

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self._act

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        start_books(self)
        self.left = STONES
        self.agent_selection = self.possible_agents[0]

    def observe(self, agent: str) -> dict[str, Any]:
        stones = np.zeros(STONES + 1, np.int8)
        stones[self.left] = 1
        return {"stones": stones, "seat": self.possible_agents.index(agent)}

    def step(self, action: int | None) -> None:
        me = self.agent_selection
        if self.terminations[me] or self.truncations[me]:
            self._was_dead_step(action)
            return
        other = self.possible_agents[1 - self.possible_agents.index(me)]
        self.left = max(0, self.left - (int(action) + 1))
        self._cumulative_rewards[me] = 0.0
        self.rewards = {a: 0.0 for a in self.agents}
        if self.left == 0:
            self.rewards = {me: 1.0, other: -1.0}
            self.terminations = {a: True for a in self.agents}
        self.agent_selection = other
        self._accumulate_rewards()


def env() -> DictGame:
    return DictGame()
