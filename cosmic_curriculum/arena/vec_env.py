"""``ArenaVecEnv``: many Cosmic Clash games as one stable-baselines3 ``VecEnv``.

Each of the ``n_games`` games has one learner (the agent being trained) against an
opponent bot; the learner plays blue in even games and orange in odd ones, and always
sees the world in its attack frame (it attacks +x either way).

- Action space: ``Box(-1, 1, (6,), float32)`` = thrust, strafe, lift, yaw, pitch, roll in
  the ship's own frame (see ``arena.rules``). Each action is held for
  ``settings.decision_ticks`` physics ticks.
- Observation space: ``Box(-1, 1, (OBS_SIZE,), float32)``, documented field by field in
  ``arena.observations``.
- Rewards: ``+/-goal_reward`` for a goal, ``-draw_penalty`` at the time limit, and the
  bounded ``attack_goal_bias`` shaping (see ``arena.duel``).
- Episode end: a goal (win or loss) or the time limit (a draw; terminal, not truncated,
  because the time left is observed). Finished games are reset automatically; their
  ``infos[i]`` holds ``episode = {"r": return, "l": length in decisions}``,
  ``outcome`` (1 win, 0 draw, -1 loss) and ``terminal_observation``. Other infos are
  empty dicts, so SB3's episode statistics work without a Monitor wrapper.

``set_opponent(bot)`` swaps the opponent (the trainer's self-play hook);
``set_settings(settings)`` changes the game (every game restarts).

This is the only arena module that imports stable-baselines3 (and thereby torch).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnv,
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

from cosmic_curriculum.arena.duel import Duel
from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.policy import Policy
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.arena.settings import GameSettings


def observation_space() -> spaces.Box:
    return spaces.Box(-1.0, 1.0, shape=(OBS_SIZE,), dtype=np.float32)


def action_space() -> spaces.Box:
    return spaces.Box(-1.0, 1.0, shape=(ACT_SIZE,), dtype=np.float32)


class ArenaVecEnv(VecEnv):
    """``n_games`` learner-vs-``opponent`` games stepped together in numpy."""

    render_mode: str | None = None  # no rendering here (replay pictures are the evaluator's)

    def __init__(
        self, n_games: int, settings: GameSettings, opponent: Policy, seed: int = 0
    ) -> None:
        super().__init__(n_games, observation_space(), action_space())
        self.duel = Duel(n_games, settings, opponent, seed)
        self._seed = seed
        self._actions: NDArray[np.float32] | None = None

    # --- accessors ----------------------------------------------------------------------
    @property
    def settings(self) -> GameSettings:
        return self.duel.settings

    @property
    def opponent(self) -> Policy:
        return self.duel.opponent

    @property
    def learner_side(self) -> NDArray[np.int64]:
        """Per game: 0 when the learner plays blue, 1 when it plays orange."""
        return self.duel.learner_side

    def set_opponent(self, bot: Policy) -> None:
        """Play against ``bot`` from the next tick on (running games continue)."""
        self.duel.set_opponent(bot)

    def set_settings(self, settings: GameSettings) -> None:
        """Switch to ``settings``; every game restarts (call ``reset()`` afterwards)."""
        self.duel.set_settings(settings)

    # --- VecEnv API ---------------------------------------------------------------------
    def reset(self) -> VecEnvObs:
        seed = self._seeds[0]
        if seed is not None:
            self._seed = seed
            self.duel.seed(seed)
        self._reset_seeds()
        self._reset_options()
        return self.duel.reset()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, dtype=np.float32)

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RuntimeError("step_wait() called without step_async()")
        result = self.duel.decide(self._actions)
        self._actions = None
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for k, i in enumerate(result.ended.tolist()):
            infos[i] = {
                "episode": {"r": float(result.returns[k]), "l": int(result.lengths[k])},
                "outcome": int(result.outcomes[k]),
                "terminal_observation": result.terminal_obs[k],
            }
        return result.obs, result.rewards, result.dones.copy(), infos

    def close(self) -> None:
        return None

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """Reseed kickoffs and the opponent's randomness now (and restart every game)."""
        if seed is None:
            seed = int(np.random.default_rng().integers(2**31))
        self._seed = seed
        self.duel.seed(seed)
        return [seed + i for i in range(self.num_envs)]

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        value = getattr(self, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        # every game shares this object's attributes
        setattr(self, attr_name, value)

    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:
        # one call serves every game (they share the batch); repeat the result per index
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type[Any], indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]
