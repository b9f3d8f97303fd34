"""Real Gymnasium envs that go wrong after a while, registered on import (a stage names
this module in `[env] imports`): ``Faulty-v0`` with ``fault`` = ``"raise"`` (step raises),
``"nan"`` (a NaN observation) or ``"shape"`` (an observation of the wrong shape), each
after ``after`` steps of the env copy; before that it is a walk of 5 steps an episode,
rewarded when it ends right of where it started."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

ID = "Faulty-v0"


class FaultyEnv(gymnasium.Env[Any, Any]):
    observation_space = gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, fault: str = "raise", after: int = 100) -> None:
        self.fault = fault
        self.after = after
        self.steps = 0  # over the env's life, across episodes
        self.position = 0
        self.episode_step = 0

    def _obs(self) -> Any:
        return np.array([self.position / 10.0, 0.0], np.float32)

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        super().reset(seed=seed)
        self.position = self.episode_step = 0
        return self._obs(), {}

    def step(self, action: Any) -> Any:
        self.steps += 1
        if self.steps > self.after:
            if self.fault == "raise":
                raise RuntimeError("the simulator lost its state\n(core dumped)")
            if self.fault == "nan":
                return np.array([np.nan, 0.0], np.float32), 0.0, False, False, {}
            if self.fault == "shape":
                return np.zeros(3, np.float32), 0.0, False, False, {}
        self.position += 1 if int(action) == 1 else -1
        self.episode_step += 1
        done = self.episode_step == 5
        return self._obs(), float(done and self.position > 0), done, False, {}


if ID not in gymnasium.registry:
    gymnasium.register(id=ID, entry_point=FaultyEnv)
