"""The algorithms train-env trains with, on real SB3/sb3-contrib classes and real spaces:
the action-space table, the policy rule, preflight's checks, hyperparams as SB3 objects."""

from __future__ import annotations

import sys
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from cosmic_curriculum.envs.algos import (
    NATURE_CNN_MIN_SIDE,
    PREFLIGHT_KEYS,
    TRAIN_ENV_KEYS,
    algo_class,
    big_image,
    build_model,
    check_spaces,
    check_trainer,
    choose_policy,
    reason,
    sb3_kwargs,
)
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.workspace.stage_trainer import StageTrainer
from cosmic_curriculum.workspace.trainer_config import ALGORITHMS

pytest.importorskip("sb3_contrib")

BOX = spaces.Box(-1.0, 1.0, (3,), np.float32)
DISCRETE = spaces.Discrete(4)


def image(shape: tuple[int, ...]) -> spaces.Box:
    return spaces.Box(0, 255, shape, np.uint8)


def trainer(algo: str = "PPO", **kw: Any) -> StageTrainer:
    base: dict[str, Any] = dict(
        policy=None, hyperparams={}, normalize=None, n_envs=1, vec_env="auto", configured=True
    )
    return StageTrainer(algo=algo, **{**base, **kw})


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_the_action_table_is_what_each_class_accepts(name: str) -> None:
    from stable_baselines3.common.env_util import make_vec_env

    cls = algo_class(name)
    assert "MlpPolicy" in cls.policy_aliases
    for env_id, kind in (("CartPole-v1", "Discrete"), ("Pendulum-v1", "Box")):
        venv = make_vec_env(env_id, n_envs=1)
        try:
            cls("MlpPolicy", venv, _init_setup_model=False)
            accepted = True
        except AssertionError:
            accepted = False
        finally:
            venv.close()
        assert accepted == (kind in ALGORITHMS[name].actions), (name, kind)


@pytest.mark.parametrize(
    ("algo", "space", "policy"),
    [
        ("PPO", BOX, "MlpPolicy"),
        ("PPO", spaces.Dict({"a": BOX, "b": DISCRETE}), "MultiInputPolicy"),
        ("PPO", image((64, 64, 3)), "CnnPolicy"),
        ("PPO", image((3, 64, 64)), "CnnPolicy"),
        ("PPO", image((NATURE_CNN_MIN_SIDE, NATURE_CNN_MIN_SIDE, 1)), "CnnPolicy"),
        ("PPO", image((NATURE_CNN_MIN_SIDE - 1, 64, 3)), "MlpPolicy"),
        ("PPO", image((7, 7, 3)), "MlpPolicy"),  # MiniGrid's partial view: too small
        ("DQN", image((84, 84, 4)), "CnnPolicy"),
        ("PPO", spaces.Box(0.0, 1.0, (64, 64, 3), np.float32), "MlpPolicy"),  # not uint8
        ("ARS", image((64, 64, 3)), "MlpPolicy"),
    ],
)
def test_the_policy_is_chosen_from_the_observation_space(
    algo: str, space: Any, policy: str
) -> None:
    assert choose_policy(algo, space, None) == policy


def test_the_network_the_rule_picks_builds_at_the_smallest_side() -> None:
    from stable_baselines3.common.torch_layers import NatureCNN

    side = NATURE_CNN_MIN_SIDE  # NatureCNN reads channels first (SB3 transposes images)
    NatureCNN(image((3, side, side)))
    with pytest.raises(RuntimeError):  # one pixel less and SB3's network cannot be built
        NatureCNN(image((3, side - 1, side - 1)))
    assert big_image(image((side, side, 3))) and not big_image(image((side - 1, side, 3)))


def test_a_policy_the_algorithm_lacks_is_refused() -> None:
    with pytest.raises(ConfigError, match="policy 'LinearPolicy': PPO has MlpPolicy"):
        choose_policy("PPO", BOX, "LinearPolicy")
    with pytest.raises(ConfigError, match="ARS has no MultiInputPolicy"):
        choose_policy("ARS", spaces.Dict({"a": BOX}), None)


@pytest.mark.parametrize(
    ("kw", "spaces_", "needle"),
    [
        ({"algo": "DQN"}, (BOX, BOX), "trainer.algo DQN acts in Discrete action spaces"),
        ({"algo": "SAC"}, (BOX, DISCRETE), "choose one of PPO, A2C, DQN, TRPO, ARS, QRDQN"),
        ({"policy": "LinearPolicy"}, (BOX, DISCRETE), "trainer.policy 'LinearPolicy': PPO has"),
        ({"hyperparams": {"n_stepz": 8}}, (BOX, DISCRETE), "trainer.hyperparams.n_stepz: not an"),
        (
            {"hyperparams": {"noise_type": "normal", "noise_std": 0.1}},
            (BOX, DISCRETE),
            "trainer.hyperparams.noise_type: not an argument of PPO",
        ),
        ({"normalize": {"norm_obz": True}}, (BOX, DISCRETE), "trainer.normalize.norm_obz"),
        ({"normalize": {"venv": None}}, (BOX, DISCRETE), "trainer.normalize.venv"),
    ],
)
def test_preflight_refuses_what_the_algorithm_cannot_take(
    kw: dict[str, Any], spaces_: tuple[Any, Any], needle: str
) -> None:
    with pytest.raises(ConfigError) as info:
        check_trainer(trainer(**kw), *spaces_)
    assert needle in str(info.value) and "\n" not in str(info.value), info.value


def test_what_the_algorithm_takes_passes() -> None:
    tuned = trainer(
        "TD3",
        hyperparams={"learning_rate": "lin_1e-3", "noise_type": "normal", "noise_std": 0.1},
        normalize={"norm_obs": True, "clip_obs": 5.0},
    )
    assert check_trainer(tuned, BOX, BOX) == "MlpPolicy"
    assert check_trainer(trainer("QRDQN"), image((84, 84, 1)), DISCRETE) == "CnnPolicy"


def test_an_algorithm_of_sb3_contrib_without_it_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sb3_contrib", None)  # as if it were not installed
    with pytest.raises(ConfigError) as info:
        algo_class("TQC")
    assert str(info.value) == "algo TQC needs sb3-contrib: pip install 'cosmic-curriculum[contrib]'"
    assert algo_class("SAC").__name__ == "SAC"


def test_hyperparams_become_sb3_objects() -> None:
    from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise
    from torch import nn

    out = sb3_kwargs(
        {
            "learning_rate": "lin_0.001",
            "clip_range": 0.2,
            "policy_kwargs": {"activation_fn": "nn.ReLU", "net_arch": {"pi": [64], "vf": [64]}},
            "noise_type": "normal",
            "noise_std": 0.5,
            "gamma": 0.9,
        },
        BOX,
    )
    schedule = out["learning_rate"]
    assert [schedule(p) for p in (1.0, 0.5, 0.0)] == pytest.approx([0.001, 0.0005, 0.0])
    assert out["clip_range"] == 0.2 and out["gamma"] == 0.9
    assert out["policy_kwargs"] == {"activation_fn": nn.ReLU, "net_arch": {"pi": [64], "vf": [64]}}
    noise = out["action_noise"]
    assert isinstance(noise, NormalActionNoise) and noise().shape == (3,)
    assert "noise_type" not in out and "noise_std" not in out
    ou = sb3_kwargs({"noise_type": "ornstein-uhlenbeck", "noise_std": [0.1, 0.2, 0.3]}, BOX)
    assert isinstance(ou["action_noise"], OrnsteinUhlenbeckActionNoise)
    assert gym.spaces.Box  # gymnasium is the one SB3 uses


IMAGE = spaces.Box(0, 255, (7, 7, 3), np.uint8)
KEEP = '{call = "gymnasium.wrappers:FilterObservation", kwargs = {filter_keys = '


@pytest.mark.parametrize(
    ("observation", "action", "needle"),
    [
        (  # MiniGrid's own observations: a Text mission beside the image
            spaces.Dict({"image": IMAGE, "direction": spaces.Discrete(4), "m": spaces.Text(9)}),
            spaces.Discrete(3),
            "env: the observation space's part 'm' is Text; env bots hold Discrete or Box parts",
        ),
        (
            spaces.Dict({"image": IMAGE, "direction": spaces.Discrete(4), "m": spaces.Text(9)}),
            spaces.Discrete(3),
            # the keys kept, in the order gymnasium's Dict sorts them
            f'env bots hold Discrete or Box parts: drop it with {KEEP}["direction", "image"]}}}}',
        ),
        (
            spaces.Dict({"m": spaces.Text(9)}),
            spaces.Discrete(3),
            "encode it as a Box with an observation wrapper in [env] wrappers",
        ),
        (
            spaces.MultiDiscrete([3, 4]),
            spaces.Discrete(3),
            "space is MultiDiscrete([3 4]); env bots hold Discrete or Box spaces (or a Dict of "
            "them): wrap the env with gymnasium.wrappers:FlattenObservation",
        ),
        (
            spaces.Sequence(spaces.Discrete(2)),
            spaces.Discrete(3),
            "wrap the env with an observation wrapper that encodes it as a Box",
        ),
        (
            spaces.Box(0, 1, (4,)),
            spaces.MultiDiscrete([2, 2]),
            "env: the action space is MultiDiscrete([2 2]); env bots hold Discrete or Box "
            "spaces: wrap the env with an action wrapper that takes a Discrete or Box action",
        ),
        (
            spaces.Box(0, 1, (4,)),
            spaces.Discrete(3, start=1),
            "the action space is Discrete with start 1; SB3 policies need start 0",
        ),
        (
            spaces.Box(0, 1, (4,)),
            spaces.Box(-np.inf, np.inf, (2,)),
            "env: the action space Box(-inf, inf, (2,), float32) has unbounded sides, and "
            "SB3's algorithms need finite bounds",
        ),
        (  # NatureCNN, which MultiInputPolicy runs on image parts, needs 36 pixels a side
            spaces.Dict({"image": IMAGE, "direction": spaces.Discrete(4)}),
            spaces.Discrete(3),
            "env: the observation part 'image' is a 7x7x3 image; MultiInputPolicy reads image "
            "parts with SB3's NatureCNN, which needs 36x36 pixels or more",
        ),
    ],
)
def test_spaces_an_env_bot_cannot_hold_name_the_wrapper_that_fixes_them(
    observation: Any, action: Any, needle: str
) -> None:
    with pytest.raises(ConfigError) as info:
        check_spaces(observation, action)
    assert needle in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "observation",
    [
        spaces.Dict({"image": spaces.Box(0, 255, (36, 40, 3), np.uint8), "d": spaces.Discrete(4)}),
        spaces.Dict({"grid": spaces.Box(0, 10, (7, 7, 3), np.float32), "d": spaces.Discrete(4)}),
        IMAGE,
        spaces.Discrete(16),
    ],
)
def test_spaces_an_env_bot_holds_pass(observation: Any) -> None:
    check_spaces(observation, spaces.Discrete(3))


@pytest.mark.parametrize(
    ("exc", "line"),
    [
        (
            AssertionError(("NatureCNN must be used with a Box ", "space, not Discrete(16)")),
            "NatureCNN must be used with a Box space, not Discrete(16)",
        ),
        (ValueError("two\n  lines"), "two lines"),
        (RuntimeError(3, "x"), "(3, 'x')"),
        (AssertionError(), ""),
    ],
)
def test_an_sb3_error_is_one_line_of_its_own_words(exc: BaseException, line: str) -> None:
    assert reason(exc) == line


class _Still(gym.Env[Any, Any]):
    """An env of the given observation space that ends at once (only its spaces matter)."""

    action_space = spaces.Discrete(3)

    def __init__(self, observation_space: Any) -> None:
        self.observation_space = observation_space

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> Any:
        return self.observation_space.sample(), 0.0, True, False, {}


SMALL_IMAGE_DICT = spaces.Dict({"image": IMAGE, "d": spaces.Discrete(4)})


@pytest.mark.parametrize(
    ("keys", "observation", "policy", "hyperparams", "needle"),
    [
        (
            TRAIN_ENV_KEYS,
            spaces.Discrete(16),
            "MlpPolicy",
            {"batch_size": 1},
            '--hyperparams {"batch_size": 1} are refused by PPO with MlpPolicy (`batch_size` '
            "must be greater than 1",
        ),
        (
            TRAIN_ENV_KEYS,
            spaces.Discrete(16),
            "CnnPolicy",
            {},
            "--algo: PPO CnnPolicy refuses the env (NatureCNN must be used with a "
            "gym.spaces.Box observation space, not Discrete(16)); change --algo or --policy, "
            "or the env's wrappers",
        ),
        (  # torch's own error, from NatureCNN's 8x8 kernels on a 7x7 image
            PREFLIGHT_KEYS,
            SMALL_IMAGE_DICT,
            "MultiInputPolicy",
            {},
            "trainer.policy: PPO MultiInputPolicy cannot be built on the env's observations (",
        ),
    ],
)
def test_what_the_constructor_refuses_names_the_settings_at_fault(
    keys: Any, observation: Any, policy: str, hyperparams: dict[str, Any], needle: str
) -> None:
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([lambda: _Still(observation)])
    params = {**sb3_kwargs(hyperparams, venv.action_space), "device": "cpu"}
    with pytest.raises(ConfigError) as info:
        build_model("PPO", policy, venv, params, keys, hyperparams)
    assert needle in str(info.value) and "\n" not in str(info.value)
