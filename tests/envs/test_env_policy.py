"""Env bots replay SB3's deterministic action exactly, from JSON alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
sb3 = pytest.importorskip("stable_baselines3")

from cosmic_curriculum.envs.export import env_bot_from_model, space_of  # noqa: E402
from cosmic_curriculum.envs.gymnasium import make_env  # noqa: E402
from cosmic_curriculum.envs.policy import load_env_bot, save_env_bot  # noqa: E402
from cosmic_curriculum.envs.spaces import same_space  # noqa: E402
from cosmic_curriculum.errors import BotError  # noqa: E402
from cosmic_curriculum.workspace.env_config import EnvSpec  # noqa: E402


def spec(env_id: str, **kwargs: Any) -> EnvSpec:
    return EnvSpec(kind="gymnasium", id=env_id, kwargs=kwargs)


class ImageEnv(gymnasium.Env):
    """uint8 images in, three actions out: what SB3 divides by 255."""

    observation_space = gymnasium.spaces.Box(0, 255, (12, 12, 1), np.uint8)
    action_space = gymnasium.spaces.Discrete(3)

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> Any:
        return self.observation_space.sample(), 0.0, True, False, {}


def roundtrip(model: Any, s: EnvSpec, tmp_path: Path) -> Any:
    path = tmp_path / "bot.json"
    save_env_bot(env_bot_from_model(model, s, checkpoint_sha256="ab" * 32), path)
    return load_env_bot(path)


def test_frozenlake_discrete_observations_match_ppo(tmp_path: Path) -> None:
    s = spec("FrozenLake-v1", map_name="4x4", is_slippery=False)
    model = sb3.PPO("MlpPolicy", make_env(s), seed=3, device="cpu")
    bot = roundtrip(model, s, tmp_path)
    obs = np.arange(16)
    expected = model.predict(obs, deterministic=True)[0]
    assert np.array_equal(bot.act(obs), expected)
    assert bot.provenance["algo"] == "PPO" and bot.provenance["checkpoint_sha256"] == "ab" * 32
    assert bot.env == s


@pytest.mark.parametrize("algo", ["PPO", "A2C", "DQN"])
def test_cartpole_box_observations_match(algo: str, tmp_path: Path) -> None:
    s = spec("CartPole-v1")
    model = getattr(sb3, algo)("MlpPolicy", make_env(s), seed=5, device="cpu")
    bot = roundtrip(model, s, tmp_path)
    rng = np.random.default_rng(0)
    obs = rng.normal(0, 1.5, (500, 4)).astype(np.float32)
    assert np.array_equal(bot.act(obs), model.predict(obs, deterministic=True)[0])


def test_box_actions_are_the_clipped_mean_and_sampling_varies(tmp_path: Path) -> None:
    s = spec("Pendulum-v1")
    model = sb3.PPO("MlpPolicy", make_env(s), seed=1, device="cpu")
    bot = roundtrip(model, s, tmp_path)
    obs = np.random.default_rng(1).uniform(-1, 1, (300, 3)).astype(np.float32)
    expected = model.predict(obs, deterministic=True)[0]
    assert np.allclose(bot.act(obs), expected, atol=1e-5)
    sampled = bot.act(obs, deterministic=False, rng=np.random.default_rng(2))
    assert sampled.shape == expected.shape and not np.allclose(sampled, expected)
    assert np.all(np.abs(sampled) <= 2.0)


def test_uint8_images_are_divided_by_255(tmp_path: Path) -> None:
    s = spec("CartPole-v1")  # recorded only; the model is built on the image env
    model = sb3.PPO("MlpPolicy", ImageEnv(), n_steps=64, batch_size=64, seed=2, device="cpu")
    bot = roundtrip(model, s, tmp_path)
    assert bot.scale == pytest.approx(1 / 255)
    obs = np.stack([ImageEnv.observation_space.sample() for _ in range(200)])
    assert np.array_equal(bot.act(obs), model.predict(obs, deterministic=True)[0])


class ColourImageEnv(ImageEnv):
    """Channels-last colour images, which SB3 transposes for the policy."""

    observation_space = gymnasium.spaces.Box(0, 255, (8, 6, 3), np.uint8)


@pytest.mark.parametrize("normalize_images", [True, False])
def test_channels_last_images_play_as_the_env_gives_them(
    tmp_path: Path, normalize_images: bool
) -> None:
    from stable_baselines3.common.env_util import make_vec_env

    s = spec("CartPole-v1")  # recorded only
    model = sb3.PPO(
        "MlpPolicy",
        make_vec_env(ColourImageEnv, n_envs=2, seed=0),
        policy_kwargs={"normalize_images": normalize_images},
        seed=4,
        device="cpu",
    )
    assert model.policy.observation_space.shape == (3, 8, 6)  # what the policy is fed
    bot = roundtrip(model, s, tmp_path)
    # The bot keeps the policy's (C, H, W) space and plays the env's (H, W, C) images.
    env_space = space_of(ColourImageEnv.observation_space, "observation")
    assert same_space(env_space, bot.observation_space)
    obs = np.stack([ColourImageEnv.observation_space.sample() for _ in range(300)])
    assert np.array_equal(bot.act(obs), model.predict(obs, deterministic=True)[0])


def test_discrete_sampling_follows_the_logits(tmp_path: Path) -> None:
    s = spec("FrozenLake-v1", map_name="4x4", is_slippery=False)
    model = sb3.PPO("MlpPolicy", make_env(s), seed=3, device="cpu")
    bot = roundtrip(model, s, tmp_path)
    draws = bot.act(np.zeros(4000, dtype=int), deterministic=False, rng=np.random.default_rng(0))
    # A fresh policy is near uniform: every action is drawn.
    assert set(np.unique(draws)) == {0, 1, 2, 3}


def test_a_bad_file_is_one_line_naming_it(tmp_path: Path) -> None:
    s = spec("FrozenLake-v1", map_name="4x4", is_slippery=False)
    model = sb3.PPO("MlpPolicy", make_env(s), seed=3, device="cpu")
    path = tmp_path / "bot.json"
    save_env_bot(env_bot_from_model(model, s), path)
    document = json.loads(path.read_text())
    document["policy"]["layers"][0]["weights"][0].pop()
    path.write_text(json.dumps(document))
    with pytest.raises(BotError) as caught:
        load_env_bot(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message and "policy.layers[0]" in message
    path.write_text("{")
    with pytest.raises(BotError, match=r"bot\.json"):
        load_env_bot(path)
