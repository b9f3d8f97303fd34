"""Real PettingZoo games that go wrong in ways a stage must refuse (a stage names this
module as its env.id, ``kwargs = {fault = ...}``): ``"endless"`` never ends (each player
picks 0 or 1 forever), ``"stuck"`` masks every move away on the first player's second
turn while the game goes on. Both are two-player AEC games with Discrete(2) moves; a move
of 1 in ``"endless"`` is rewarded nothing, so only the move cap stops it. The endless game
also goes wrong as a game of one's own might: ``"reset_fails"`` and ``"step_fails"`` (on
the third move) raise, ``"wide"`` observes two numbers where it declares one,
``"short_mask"`` masks one move of its two, and ``"undying"`` ends after two moves but
keeps its agents at every step(None) after."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv


def start_books(game: AECEnv[str, Any, int]) -> None:
    """A new game's PettingZoo books: every seat in, nothing rewarded, nothing ended."""
    game.agents = list(game.possible_agents)
    game.rewards = {a: 0.0 for a in game.agents}
    game._cumulative_rewards = {a: 0.0 for a in game.agents}
    game.terminations = {a: False for a in game.agents}
    game.truncations = {a: False for a in game.agents}
    game.infos = {a: {} for a in game.agents}


FAULTS = ("endless", "stuck", "reset_fails", "step_fails", "wide", "short_mask", "undying")


class FaultyGame(AECEnv[str, Any, int]):
    metadata: ClassVar[dict[str, Any]] = {"name": "faulty_game_v0", "is_parallelizable": False}

    def __init__(self, fault: str = "endless") -> None:
        super().__init__()
        if fault not in FAULTS:
            raise ValueError(f"fault must be one of {FAULTS}, got {fault!r}")
        self.fault = fault
        self.possible_agents = ["a", "b"]
        board = spaces.Box(0, 10_000, (1,), np.float32)
        if fault in ("stuck", "short_mask"):
            self._obs: spaces.Space[Any] = spaces.Dict(
                {"observation": board, "action_mask": spaces.MultiBinary(2)}
            )
        else:
            self._obs = board
        self._act = spaces.Discrete(2)

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._obs

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self._act

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        start_books(self)
        self.agent_selection = "a"
        self.played = 0
        if self.fault == "reset_fails":
            raise KeyError("board")

    def observe(self, agent: str) -> Any:
        board = np.array([min(self.played, 10_000)], np.float32)
        if self.fault == "wide":
            return np.append(board, 0.0)
        if self.fault == "short_mask":
            return {"observation": board, "action_mask": np.ones(1, np.int8)}
        if self.fault != "stuck":
            return board
        legal = 0 if self.played >= 2 else 1
        return {"observation": board, "action_mask": np.full(2, legal, np.int8)}

    def step(self, action: int | None) -> None:
        if self.fault == "step_fails" and self.played == 2:
            raise IndexError("list index out of range")
        self.played += 1
        if self.fault == "undying" and self.played >= 2:
            self.terminations = {a: True for a in self.agents}
        self.agent_selection = "b" if self.agent_selection == "a" else "a"


def env(fault: str = "endless") -> FaultyGame:
    return FaultyGame(fault)
