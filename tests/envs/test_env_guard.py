"""An env's faults as one line (`envs/guard.py`): the pure checks, table-driven, and the
training wrapper around a real Gymnasium env that goes wrong (tests/envs/faulty_envs.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("gymnasium")

import faulty_envs
import gymnasium

from cosmic_curriculum.defaults import ENV_MAX_EPISODE_STEPS
from cosmic_curriculum.envs.guard import (
    EnvFault,
    guarded_env,
    observation_fault,
    reward_fault,
    space_shape,
    step_cap,
)


@pytest.mark.parametrize(
    ("obs", "shape", "fault"),
    [
        (np.zeros(2, np.float32), (2,), None),
        (np.zeros((7, 7, 3), np.uint8), (7, 7, 3), None),
        (3, (), None),  # a Discrete observation
        ({"image": 1}, None, None),  # a Dict space: not checked
        (np.array([np.nan, 0.0]), (2,), "returned a non-finite observation (NaN or inf)"),
        (np.array([np.inf]), (1,), "returned a non-finite observation (NaN or inf)"),
        (np.zeros(3), (2,), "returned an observation of shape (3,), not its space's (2,)"),
        (np.zeros((2, 1)), (2,), "returned an observation of shape (2, 1), not its space's (2,)"),
        ("left", (), "returned a non-numeric observation (str)"),
        (None, (2,), "returned an observation of shape (), not its space's (2,)"),
    ],
)
def test_observation_fault(obs: Any, shape: tuple[int, ...] | None, fault: str | None) -> None:
    assert observation_fault(obs, shape) == fault


@pytest.mark.parametrize(
    ("reward", "fault"),
    [
        (1.0, None),
        (np.float32(-2), None),
        (0, None),
        (float("nan"), "returned a non-finite reward (nan)"),
        (float("-inf"), "returned a non-finite reward (-inf)"),
        ("much", "returned a non-numeric reward (str)"),
        (None, "returned a non-numeric reward (NoneType)"),
    ],
)
def test_reward_fault(reward: Any, fault: str | None) -> None:
    assert reward_fault(reward) == fault


def test_space_shapes_and_the_step_cap() -> None:
    lake = gymnasium.make("FrozenLake-v1")
    assert space_shape(lake.observation_space) == ()
    assert space_shape(gymnasium.spaces.Dict({"a": gymnasium.spaces.Discrete(2)})) is None
    assert step_cap(lake) == 100  # its own TimeLimit
    assert step_cap(faulty_envs.FaultyEnv()) == ENV_MAX_EPISODE_STEPS
    assert step_cap(faulty_envs.FaultyEnv(), default=7) == 7


def walk(env: Any, steps: int) -> None:
    env.reset(seed=0)
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(1)
        if terminated or truncated:
            env.reset()


@pytest.mark.parametrize(
    ("fault", "what"),
    [
        ("raise", "raised (RuntimeError: the simulator lost its state (core dumped))"),
        ("nan", "returned a non-finite observation (NaN or inf)"),
        ("shape", "returned an observation of shape (3,), not its space's (2,)"),
    ],
)
def test_a_fault_in_training_is_one_line_naming_env_step_and_fault(fault: str, what: str) -> None:
    env = guarded_env(gymnasium.make(faulty_envs.ID, fault=fault, after=12))
    with pytest.raises(EnvFault) as caught:
        walk(env, 20)
    # 12 good steps: two 5-step episodes, then the fault on step 3 of the third
    assert caught.value.what == what and caught.value.episode_step == 3
    message = caught.value.at(96)
    assert message == (
        f"env 'Faulty-v0' {what} at episode step 3, after 96 training timesteps; fix the "
        "env or the stage's env spec"
    )
    assert "\n" not in message


def test_a_fault_during_reset_is_named_so() -> None:
    class Broken(faulty_envs.FaultyEnv):
        def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
            raise OSError("no display")

    with pytest.raises(EnvFault) as caught:
        guarded_env(Broken()).reset(seed=0)
    assert caught.value.at(0).startswith(
        "env 'Broken' raised (OSError: no display) on reset, after 0"
    )


def test_an_episode_that_never_ends_is_truncated_at_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import cosmic_curriculum.envs.guard as guard

    class Endless(faulty_envs.FaultyEnv):
        def step(self, action: Any) -> Any:
            return self._obs(), 0.0, False, False, {}

    monkeypatch.setattr(guard, "ENV_MAX_EPISODE_STEPS", 25)
    env = guarded_env(Endless())
    env.reset(seed=0)
    ends = [env.step(0)[3] for _ in range(25)]
    assert ends == [False] * 24 + [True]
