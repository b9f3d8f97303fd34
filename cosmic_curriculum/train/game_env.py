"""A two-player PettingZoo game as the one-seat Gymnasium env the learner trains in.

The learner takes seat ``(episode + index) % 2`` (who moves first alternates across
episodes, and across the copies of a vectorised env), the opponent the league drew for
the episode moves inside ``step`` until it is the learner's turn again, and the reward is
the learner's seat's (a zero-sum game's final reward; intermediate rewards summed). A move
cap truncates a game that never ends. ``action_masks()`` is what sb3-contrib's
MaskablePPO asks for; a game without masks allows every move.

Each copy owns its AEC env; the league (``Opponents``) is shared by all copies. This
module imports gymnasium: the trainer imports it when a training starts.
"""

from __future__ import annotations

from typing import Any, Protocol

import gymnasium
import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.envs.pettingzoo import (
    GameInfo,
    bare_game,
    game_over,
    make_game,
    split_observation,
)
from cosmic_curriculum.errors import TrainerError
from cosmic_curriculum.workspace.env_config import EnvSpec


class Player(Protocol):
    def act(
        self,
        obs: Any,
        deterministic: bool = ...,
        rng: np.random.Generator | None = ...,
        mask: NDArray[Any] | None = ...,
    ) -> NDArray[Any]: ...


class Opponents(Protocol):
    def draw(self) -> tuple[str, Player]: ...

    def finished(self, name: str, reward: float) -> None: ...


def batch_of_one(obs: Any) -> Any:
    """One observation (a dict of arrays for a Dict space) as a batch of one."""
    if isinstance(obs, dict):
        return {k: np.asarray(v)[None] for k, v in obs.items()}
    return np.asarray(obs)[None]


class SeatEnv(gymnasium.Env[Any, Any]):
    """One seat of the game for the learner."""

    def __init__(
        self, spec: EnvSpec, info: GameInfo, opponents: Opponents, index: int, move_cap: int
    ) -> None:
        self.metadata = {"render_modes": []}
        self.built = make_game(spec)
        # Every move played here is legal (the learner's are masked, the opponent's checked
        # below): without wrappers of the spec's own, the seat steps the game without
        # PettingZoo's policing wrappers, as the evaluator does (about half a step's cost).
        self.game = self.built if spec.wrappers else bare_game(self.built)
        self.info = info
        self.observation_space = info.observation_space
        self.action_space = info.action_space
        self.opponents = opponents
        self.move_cap = move_cap
        self.episode = index  # parity of the first seat
        self.rng = np.random.default_rng(index)
        self.game_id = spec.id
        self._mask: NDArray[Any] = np.ones(int(info.action_space.n), dtype=bool)
        self._reset_state()

    def _reset_state(self) -> None:
        self.learner = self.info.agents[0]
        self.opponent_name = ""
        self.opponent: Player | None = None
        self.reward = 0.0
        self.moves = 0

    def action_masks(self) -> NDArray[Any]:
        return self._mask

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict[str, Any]]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self._reset_state()
        self.game.reset(seed=int(self.rng.integers(2**31)))
        self.learner = self.info.agents[self.episode % 2]
        self.episode += 1
        self.opponent_name, self.opponent = self.opponents.draw()
        done = self._opponent_moves()
        if done:  # a game the opponent ends before the learner moves: play another
            return self.reset()
        return self._learner_obs(), {}

    def _collect(self) -> None:
        self.reward += float(self.game.rewards.get(self.learner, 0.0))

    def _opponent_moves(self) -> bool:
        """The opponent's moves up to the learner's turn; whether the game ended."""
        while not game_over(self.game) and self.game.agent_selection != self.learner:
            seat = self.game.agent_selection
            obs, mask = split_observation(self.game.observe(seat), self.info)
            assert self.opponent is not None
            batch_mask = None if mask is None else np.asarray(mask, dtype=bool)[None]
            # search:N plays from the game itself (envs/game_players.py)
            extra = {"games": [self.game]} if getattr(self.opponent, "needs_games", False) else {}
            move = int(
                self.opponent.act(batch_of_one(obs), False, self.rng, batch_mask, **extra)[0]
            )
            if mask is not None and not mask[move]:
                raise TrainerError(
                    f"opponent {self.opponent_name} played the illegal move {move} in "
                    f"{self.game_id}; fix that bot or leave it out of the league"
                )
            self.game.step(move)
            self.moves += 1
            self._collect()
        return game_over(self.game)

    def _learner_obs(self) -> Any:
        obs, mask = split_observation(self.game.observe(self.learner), self.info)
        if mask is not None:
            self._mask = np.asarray(mask, dtype=bool)
            if not self._mask.any():
                raise TrainerError(
                    f"{self.game_id}: the action mask allows no move for {self.learner} "
                    "while the game goes on; fix the game"
                )
        return obs

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        before = self.reward
        self.game.step(int(action))
        self.moves += 1
        self._collect()
        done = self._opponent_moves()
        truncated = not done and self.moves >= self.move_cap
        reward = self.reward - before
        obs = self._learner_obs() if not done else self._last_obs()
        if done or truncated:
            # A capped game is a draw for the table: no one won it.
            self.opponents.finished(self.opponent_name, self.reward if done else 0.0)
        return obs, reward, done, truncated, {}

    def _last_obs(self) -> Any:
        obs, _ = split_observation(self.game.observe(self.learner), self.info)
        return obs

    def close(self) -> None:
        self.built.close()
