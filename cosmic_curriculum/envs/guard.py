"""An environment's faults as one line: what the trainer and the evaluator both check.

An env that raises during ``reset``/``step``, returns a non-finite, non-numeric or
wrongly shaped observation, or a non-finite reward is a fault named in one line (never a
traceback); an env that never ends an episode is cut at the step cap (its own TimeLimit,
else ``ENV_MAX_EPISODE_STEPS``). :func:`observation_fault` and :func:`reward_fault` are
pure; :func:`guarded_env` wraps an env for training (gymnasium is imported there only).
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any

import numpy as np

from cosmic_curriculum.defaults import ENV_MAX_EPISODE_STEPS


class EnvFault(Exception):
    """A fault of the env during training; the trainer adds the timestep and says it once."""

    def __init__(self, env_id: str, what: str, episode_step: int) -> None:
        super().__init__(f"env {env_id!r} {what}")
        self.env_id = env_id
        self.what = what
        self.episode_step = episode_step

    def _where(self) -> str:
        return "on reset" if self.episode_step == 0 else f"at episode step {self.episode_step}"

    def in_worker(self) -> str:
        """The one-line message from a subprocess worker (which knows no timestep count)."""
        return (
            f"env {self.env_id!r} {self.what} {self._where()}, in an env worker process; "
            "fix the env or the stage's env spec"
        )

    def at(self, timesteps: int) -> str:
        """The one-line message, at the training's ``timesteps``."""
        return (
            f"env {self.env_id!r} {self.what} {self._where()}, after {timesteps} training "
            "timesteps; fix the env or the stage's env spec"
        )


def one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split()) or 'no message'}"


def observation_fault(obs: Any, shape: tuple[int, ...] | None) -> str | None:
    """Why ``obs`` is not an observation of a space of ``shape`` (None: any shape, e.g. a
    Dict space, which is not checked), or None when it is one."""
    if shape is None:
        return None
    try:
        values = np.asarray(obs, dtype=np.float64)
    except (TypeError, ValueError):
        return f"returned a non-numeric observation ({type(obs).__name__})"
    if values.shape != tuple(shape):
        return f"returned an observation of shape {values.shape}, not its space's {tuple(shape)}"
    if not bool(np.all(np.isfinite(values))):
        return "returned a non-finite observation (NaN or inf)"
    return None


def reward_fault(reward: Any) -> str | None:
    """Why ``reward`` is not a finite number, or None."""
    try:
        value = float(reward)
    except (TypeError, ValueError):
        return f"returned a non-numeric reward ({type(reward).__name__})"
    return None if math.isfinite(value) else f"returned a non-finite reward ({value})"


def space_shape(space: Any) -> tuple[int, ...] | None:
    """The shape an observation of ``space`` has (Discrete: ``()``), None for composite
    spaces (Dict, Tuple), whose parts are not checked."""
    shape = getattr(space, "shape", None)
    return None if shape is None else tuple(int(d) for d in shape)


def step_cap(env: Any, default: int | None = None) -> int:
    """The env's own TimeLimit, else ``default`` (unset: ``ENV_MAX_EPISODE_STEPS``)."""
    limit = getattr(getattr(env, "spec", None), "max_episode_steps", None)
    if isinstance(limit, int) and limit > 0:
        return limit
    return ENV_MAX_EPISODE_STEPS if default is None else default


def guarded_env(env: Any, *, in_worker: bool = False) -> Any:
    """``env`` whose faults raise :class:`EnvFault` and whose episodes end at the step cap
    (a truncation), as training sees it. ``in_worker``: in a subprocess worker, whose
    exception would end as a traceback, a fault is one ``error:`` line and exit 1."""
    import gymnasium

    env_id = getattr(getattr(env, "spec", None), "id", None) or type(env.unwrapped).__name__
    shape = space_shape(env.observation_space)
    cap = step_cap(env)

    class Guarded(gymnasium.Wrapper[Any, Any, Any, Any]):
        def __init__(self) -> None:
            super().__init__(env)
            self.episode_step = 0

        def _fault(self, what: str) -> EnvFault:
            fault = EnvFault(env_id, what, self.episode_step)
            if in_worker:
                print(f"error: {fault.in_worker()}", file=sys.stderr, flush=True)
                os._exit(1)
            return fault

        def _check(self, obs: Any) -> Any:
            fault = observation_fault(obs, shape)
            if fault is not None:
                raise self._fault(fault)
            return obs

        def reset(self, **kwargs: Any) -> Any:
            self.episode_step = 0
            try:
                obs, info = self.env.reset(**kwargs)
            except Exception as exc:
                raise self._fault(f"raised ({one_line(exc)})") from None
            return self._check(obs), info

        def step(self, action: Any) -> Any:
            self.episode_step += 1
            try:
                obs, reward, terminated, truncated, info = self.env.step(action)
            except Exception as exc:
                raise self._fault(f"raised ({one_line(exc)})") from None
            fault = reward_fault(reward)
            if fault is not None:
                raise self._fault(fault)
            if self.episode_step >= cap and not (terminated or truncated):
                truncated = True  # an env that never ends is cut, as the evaluator cuts it
            return self._check(obs), reward, terminated, truncated, info

    return Guarded()
