"""A real PettingZoo game of chance and hidden cards, for what ``search:N`` is told about
it (envs/game_probe.py): each player is dealt a card of 1 to 9 from the game's seeded
rng and sees its own card only; in turn each keeps it (move 0) or swaps it for the next
card of the deck (move 1); then the higher card wins (+1, the other -1; equal: a draw).
Two moves a game, unmasked Discrete(2) moves, a Box(0, 9, (1,)) observation.
``open=True``: each player sees both cards (own first), a Box(0, 9, (2,)): chance, but no
hidden cards or moves."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from tests.envs.fake_games import start_books


class CardGame(AECEnv[str, Any, int]):
    metadata: ClassVar[dict[str, Any]] = {"name": "card_game_v0", "is_parallelizable": False}

    def __init__(self, open: bool = False) -> None:
        super().__init__()
        self.open = open
        self.possible_agents = ["a", "b"]
        self._obs = spaces.Box(0, 9, (2 if open else 1,), np.float32)
        self._act = spaces.Discrete(2)
        self.rng = np.random.default_rng(0)

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._obs

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self._act

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        start_books(self)
        self.cards = {a: int(self.rng.integers(1, 10)) for a in self.agents}
        self.agent_selection = "a"

    def observe(self, agent: str) -> Any:
        other = "b" if agent == "a" else "a"
        seen = [self.cards[agent], self.cards[other]] if self.open else [self.cards[agent]]
        return np.array(seen, np.float32)

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent]:
            self._was_dead_step(action)  # a finished agent leaves the game
            return
        self._cumulative_rewards[agent] = 0.0
        if action == 1:
            self.cards[agent] = int(self.rng.integers(1, 10))
        if agent == "a":
            self.agent_selection = "b"
            return
        lead = float(np.sign(self.cards["a"] - self.cards["b"]))
        self.rewards = {"a": lead, "b": -lead}
        self.terminations = {a: True for a in self.agents}
        self._accumulate_rewards()


def env(open: bool = False) -> CardGame:
    return CardGame(open)
