"""``ArenaEnv``: one Cosmic Clash game as a ``gymnasium.Env`` (same rules as the batch).

For benchmarks (SB3's usual ``make_vec_env`` baseline) and API checks; training uses the
batched :class:`~cosmic_curriculum.arena.vec_env.ArenaVecEnv`.

- Action space: ``Box(-1, 1, (6,), float32)``: thrust, strafe, lift, yaw, pitch, roll in
  the ship's own frame, held for ``settings.decision_ticks`` physics ticks.
- Observation space: ``Box(-1, 1, (OBS_SIZE,), float32)``, ego-centric and mirrored (see
  ``arena.observations``).
- Rewards: ``+/-goal_reward`` for a goal, ``-draw_penalty`` at the time limit, the bounded
  ``attack_goal_bias`` shaping (see ``arena.duel``).
- Episode end: ``terminated`` on a goal or at the time limit (the time left is observed,
  so the limit is part of the game); ``truncated`` is always False. ``info`` at the end
  holds ``outcome`` (1 win, 0 draw, -1 loss).
- ``side``: 0 plays blue, 1 orange, ``"alternate"`` switches at every reset; a seeded
  reset plays side ``seed % 2`` so that the same seed replays the same episode.
"""

from __future__ import annotations

from typing import Any, Literal

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.arena.duel import Duel
from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.policy import InertPolicy, Policy
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.arena.settings import GameSettings


class ArenaEnv(gym.Env[NDArray[np.float32], NDArray[np.float32]]):
    """A single learner-vs-``opponent`` game."""

    def __init__(
        self,
        settings: GameSettings | None = None,
        opponent: Policy | None = None,
        side: int | Literal["alternate"] = "alternate",
        seed: int = 0,
    ) -> None:
        super().__init__()
        if side not in (0, 1, "alternate"):
            raise ValueError(f"side must be 0 (blue), 1 (orange) or 'alternate', got {side!r}")
        self.settings = settings if settings is not None else GameSettings()
        self.side = side
        self.observation_space = gym.spaces.Box(-1.0, 1.0, shape=(OBS_SIZE,), dtype=np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(ACT_SIZE,), dtype=np.float32)
        start = 1 if side == "alternate" else int(side)  # alternate: first reset gives 0
        self.duel = Duel(
            1,
            self.settings,
            opponent if opponent is not None else InertPolicy(self.settings.decision_ticks),
            seed,
            learner_sides=np.array([start]),
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[NDArray[np.float32], dict[str, Any]]:
        super().reset(seed=seed)
        if self.side == "alternate":
            if seed is not None:
                # A seeded reset must replay the same episode (gymnasium's contract), so
                # the seed picks the side; unseeded resets switch sides.
                self.duel.learner_side[0] = seed % 2
            else:
                self.duel.learner_side[0] ^= 1
        if seed is not None:
            self.duel.seed(seed)
        obs = self.duel.reset()
        return obs[0], {}

    def step(
        self, action: NDArray[np.float32]
    ) -> tuple[NDArray[np.float32], float, bool, bool, dict[str, Any]]:
        result = self.duel.decide(np.asarray(action, dtype=np.float64).reshape(1, ACT_SIZE))
        if result.ended.size:
            # the duel already reset the game; gymnasium wants the terminal observation
            info = {"outcome": int(result.outcomes[0])}
            return result.terminal_obs[0], float(result.rewards[0]), True, False, info
        return result.obs[0], float(result.rewards[0]), False, False, {}
