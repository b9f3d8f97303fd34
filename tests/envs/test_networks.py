"""Every exported family replays SB3's predict from the env bot's JSON alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
sb3 = pytest.importorskip("stable_baselines3")
contrib = pytest.importorskip("sb3_contrib", reason="sb3-contrib (the contrib extra) is needed")

from cosmic_curriculum.envs.export import env_bot_from_model  # noqa: E402
from cosmic_curriculum.envs.gymnasium import make_env  # noqa: E402
from cosmic_curriculum.envs.policy import load_env_bot, save_env_bot  # noqa: E402
from cosmic_curriculum.errors import TrainerError  # noqa: E402
from cosmic_curriculum.workspace.env_config import EnvSpec  # noqa: E402

# Bounds 0..3, not symmetric: a wrong rescale after the tanh shows.
PENDULUM = EnvSpec.model_validate(
    {
        "kind": "gymnasium",
        "id": "Pendulum-v1",
        "wrappers": [
            {
                "call": "gymnasium.wrappers:RescaleAction",
                "kwargs": {"min_action": 0.0, "max_action": 3.0},
            }
        ],
    }
)
CARTPOLE = EnvSpec(kind="gymnasium", id="CartPole-v1")
SMALL = {"net_arch": [32, 32]}
CONTINUOUS = {
    "SAC": (sb3.SAC, "MlpPolicy", SMALL),
    "TD3": (sb3.TD3, "MlpPolicy", SMALL),
    "DDPG": (sb3.DDPG, "MlpPolicy", SMALL),
    "TQC": (contrib.TQC, "MlpPolicy", SMALL),
    "TRPO": (contrib.TRPO, "MlpPolicy", SMALL),
    "ARS": (contrib.ARS, "MlpPolicy", SMALL),
    "ARS-linear": (contrib.ARS, "LinearPolicy", {}),
    "PPO": (sb3.PPO, "MlpPolicy", SMALL),
}
DISCRETE = {
    "QRDQN": (contrib.QRDQN, "MlpPolicy", SMALL),
    "TRPO": (contrib.TRPO, "MlpPolicy", SMALL),
    "ARS": (contrib.ARS, "MlpPolicy", SMALL),
    "ARS-linear": (contrib.ARS, "LinearPolicy", {}),
}


def roundtrip(model: Any, s: EnvSpec, tmp_path: Path) -> Any:
    path = tmp_path / "bot.json"
    save_env_bot(env_bot_from_model(model, s, checkpoint_sha256="cd" * 32), path)
    return load_env_bot(path)


def observations(n: int, seed: int, width: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.5, 1.5, (n, width)).astype(np.float32)


def built(family: tuple[Any, str, dict[str, Any]], s: EnvSpec, seed: int) -> Any:
    cls, policy, kwargs = family
    return cls(policy, make_env(s), policy_kwargs=dict(kwargs) or None, seed=seed, device="cpu")


@pytest.mark.parametrize("name", list(CONTINUOUS))
def test_box_actions_match_predict(name: str, tmp_path: Path) -> None:
    model = built(CONTINUOUS[name], PENDULUM, 7)
    bot = roundtrip(model, PENDULUM, tmp_path)
    obs = observations(300, 1, 3)
    expected = model.predict(obs, deterministic=True)[0]
    assert expected.min() >= 0.0 and expected.max() <= 3.0
    assert np.allclose(bot.act(obs), expected, atol=1e-5)
    assert bot.provenance["algo"] == type(model).__name__


@pytest.mark.parametrize("name", list(DISCRETE))
def test_discrete_actions_match_predict(name: str, tmp_path: Path) -> None:
    model = built(DISCRETE[name], CARTPOLE, 3)
    bot = roundtrip(model, CARTPOLE, tmp_path)
    obs = observations(500, 2, 4)
    assert np.array_equal(bot.act(obs), model.predict(obs, deterministic=True)[0])


@pytest.mark.slow
def test_trained_sac_and_qrdqn_still_match(tmp_path: Path) -> None:
    import torch

    torch.set_num_threads(1)  # tiny nets: more threads only contend on shared cores
    cls, policy, kwargs = CONTINUOUS["SAC"]
    sac = cls(policy, make_env(PENDULUM), policy_kwargs=dict(kwargs), learning_starts=100, seed=1)
    sac.learn(160)
    obs = observations(300, 3, 3)
    bot = roundtrip(sac, PENDULUM, tmp_path)
    assert np.allclose(bot.act(obs), sac.predict(obs, deterministic=True)[0], atol=1e-5)
    qrdqn = contrib.QRDQN("MlpPolicy", make_env(CARTPOLE), learning_starts=100, seed=1)
    qrdqn.learn(400)
    obs = observations(500, 4, 4)
    bot = roundtrip(qrdqn, CARTPOLE, tmp_path)
    assert np.array_equal(bot.act(obs), qrdqn.predict(obs, deterministic=True)[0])


@pytest.mark.parametrize("name", ["SAC", "TQC"])
def test_sampling_follows_the_state_dependent_std(name: str, tmp_path: Path) -> None:
    model = built(CONTINUOUS[name], PENDULUM, 5)
    bot = roundtrip(model, PENDULUM, tmp_path)
    assert bot.log_std_layer is not None and bot.squash
    one = np.repeat(observations(1, 6, 3), 4000, axis=0)
    ours = bot.act(one, deterministic=False, rng=np.random.default_rng(0)).reshape(-1)
    theirs = model.predict(one, deterministic=False)[0].reshape(-1)
    assert ours.min() >= 0.0 and ours.max() <= 3.0
    assert abs(ours.mean() - theirs.mean()) < 0.05 and abs(ours.std() - theirs.std()) < 0.05


def test_td3_has_no_distribution_and_stays_greedy(tmp_path: Path) -> None:
    model = built(CONTINUOUS["TD3"], PENDULUM, 2)
    bot = roundtrip(model, PENDULUM, tmp_path)
    obs = observations(50, 8, 3)
    assert np.array_equal(bot.act(obs, deterministic=False), bot.act(obs))


def test_state_dependent_exploration_is_refused_in_one_line() -> None:
    model = sb3.SAC("MlpPolicy", make_env(PENDULUM), use_sde=True, policy_kwargs=dict(SMALL))
    with pytest.raises(TrainerError, match="use_sde") as caught:
        env_bot_from_model(model, PENDULUM)
    assert "\n" not in str(caught.value)
