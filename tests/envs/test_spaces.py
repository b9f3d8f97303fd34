"""Dict observations (SB3's MultiInputPolicy) replay exactly from an env bot's JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
sb3 = pytest.importorskip("stable_baselines3")
torch = pytest.importorskip("torch")

from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize  # noqa: E402

from cosmic_curriculum.envs.evaluate import RANDOM, evaluate_env  # noqa: E402
from cosmic_curriculum.envs.export import env_bot_from_model  # noqa: E402
from cosmic_curriculum.envs.gymnasium import make_env  # noqa: E402
from cosmic_curriculum.envs.policy import load_env_bot, parse_env_bot, save_env_bot  # noqa: E402
from cosmic_curriculum.envs.spaces import parse_space  # noqa: E402
from cosmic_curriculum.errors import TrainerError  # noqa: E402
from cosmic_curriculum.workspace.env_config import EnvSpec  # noqa: E402

TIME_AWARE = {"call": "gymnasium.wrappers:TimeAwareObservation", "kwargs": {"flatten": False}}
CARTPOLE = EnvSpec.model_validate(
    {"kind": "gymnasium", "id": "CartPole-v1", "wrappers": [TIME_AWARE]}
)
LAKE = EnvSpec.model_validate(
    {
        "kind": "gymnasium",
        "id": "FrozenLake-v1",
        "kwargs": {"map_name": "4x4", "is_slippery": False},
        "wrappers": [TIME_AWARE],
    }
)


def roundtrip(model: Any, s: EnvSpec, tmp_path: Path, normalizer: Any = None) -> Any:
    path = tmp_path / "bot.json"
    save_env_bot(env_bot_from_model(model, s, normalizer=normalizer), path)
    return load_env_bot(path)


def samples(space: Any, n: int, seed: int) -> dict[str, np.ndarray]:
    space.seed(seed)
    drawn = [space.sample() for _ in range(n)]
    return {k: np.stack([np.asarray(d[k]) for d in drawn]) for k in space.spaces}


@pytest.mark.parametrize(
    "algo", ["PPO", *(pytest.param(a, marks=pytest.mark.slow) for a in ("A2C", "DQN"))]
)
def test_box_keys_match_predict(algo: str, tmp_path: Path) -> None:
    env = make_env(CARTPOLE)
    model = getattr(sb3, algo)("MultiInputPolicy", env, seed=2, device="cpu")
    bot = roundtrip(model, CARTPOLE, tmp_path)
    assert [k for k, _ in bot.observation_space.parts] == ["obs", "time"]
    obs = samples(env.observation_space, 400, 0)
    obs["obs"] = np.clip(obs["obs"], -3, 3)  # the unbounded sides sample huge values
    assert np.array_equal(bot.act(obs), model.predict(obs, deterministic=True)[0])


def test_a_discrete_key_is_one_hot(tmp_path: Path) -> None:
    env = make_env(LAKE)
    assert type(env.observation_space["obs"]).__name__ == "Discrete"
    model = sb3.PPO("MultiInputPolicy", env, n_steps=64, batch_size=64, seed=1, device="cpu")
    bot = roundtrip(model, LAKE, tmp_path)
    obs = samples(env.observation_space, 300, 1)
    assert np.array_equal(bot.act(obs), model.predict(obs, deterministic=True)[0])


def test_normalized_keys_match_predict(tmp_path: Path) -> None:
    venv = VecNormalize(DummyVecEnv([lambda: make_env(CARTPOLE)]), norm_obs_keys=["obs"])
    venv.seed(0)
    venv.reset()
    for _ in range(300):
        venv.step(np.array([venv.action_space.sample()]))
    model = sb3.PPO("MultiInputPolicy", venv, seed=3, device="cpu")
    bot = roundtrip(model, CARTPOLE, tmp_path, venv)
    assert bot.obs_norm is not None and set(bot.obs_norm.keys or {}) == {"obs"}
    obs = samples(make_env(CARTPOLE).observation_space, 300, 2)
    obs["obs"] = np.clip(obs["obs"], -3, 3)
    expected = model.predict(venv.normalize_obs(obs), deterministic=True)[0]
    assert np.array_equal(bot.act(obs), expected)


def test_the_evaluator_plays_a_dict_bot(tmp_path: Path) -> None:
    model = sb3.PPO("MultiInputPolicy", make_env(CARTPOLE), seed=0, device="cpu")
    path = tmp_path / "bot.json"
    save_env_bot(env_bot_from_model(model, CARTPOLE), path)
    record = evaluate_env(path, RANDOM, history_path=tmp_path / "h.jsonl", episodes=4, seed=1)
    assert record["episodes"] == 4 and all(r >= 1 for r in record["returns"])


class ImageKeyEnv(gymnasium.Env):
    """A Dict with an image key: SB3 gives it a NatureCNN."""

    observation_space = gymnasium.spaces.Dict(
        {
            "image": gymnasium.spaces.Box(0, 255, (36, 36, 1), np.uint8),
            "x": gymnasium.spaces.Box(-1, 1, (2,)),
        }
    )
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> Any:
        return self.observation_space.sample(), 0.0, True, False, {}


def test_an_image_key_beside_a_box_key_replays_predict() -> None:
    # The image key goes through its own NatureCNN (a branch), divided by 255; "x" is
    # flattened and not divided; the concatenation follows the extractor's key order.
    model = sb3.PPO("MultiInputPolicy", ImageKeyEnv(), n_steps=8, batch_size=8, device="cpu")
    bot = parse_env_bot(env_bot_from_model(model, CARTPOLE).to_json())
    assert [b.key for b in bot.branches] == ["image"] and bot.scale == 1.0 / 255.0
    space = ImageKeyEnv.observation_space
    space.seed(0)
    drawn = [space.sample() for _ in range(64)]
    obs = {k: np.stack([d[k] for d in drawn]) for k in drawn[0]}
    assert np.array_equal(bot.act(obs), model.predict(obs, deterministic=True)[0])


def test_a_key_through_another_extractor_is_refused_in_one_line() -> None:
    model = sb3.PPO("MultiInputPolicy", ImageKeyEnv(), n_steps=8, batch_size=8, device="cpu")
    model.policy.features_extractor.extractors["x"] = torch.nn.Identity()
    with pytest.raises(TrainerError, match="'x' goes through Identity") as caught:
        env_bot_from_model(model, CARTPOLE)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ({"type": "Dict", "spaces": []}, "spaces must be a non-empty list"),
        ({"type": "Dict", "spaces": [{"type": "Discrete", "n": 2}]}, r"spaces\[0\]\.key"),
        (
            {"type": "Dict", "spaces": [{"key": "a", "type": "Dict", "spaces": []}]},
            r"spaces\[0\]\.type is 'Dict'",
        ),
    ],
)
def test_bad_dict_spaces_name_the_field(value: Any, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_space(value, "observation_space", allow_dict=True)


def test_a_dict_space_is_written_in_extractor_order(tmp_path: Path) -> None:
    model = sb3.DQN("MultiInputPolicy", make_env(LAKE), device="cpu")
    path = tmp_path / "bot.json"
    save_env_bot(env_bot_from_model(model, LAKE), path)
    written = json.loads(path.read_text())["observation_space"]
    assert written["type"] == "Dict"
    assert [(p["key"], p["type"]) for p in written["spaces"]] == [
        ("obs", "Discrete"),
        ("time", "Box"),
    ]


class RgbEnv(gymnasium.Env):
    """Channel-last RGB images: SB3 transposes them to channel-first for the policy."""

    observation_space = gymnasium.spaces.Box(0, 255, (10, 8, 3), np.uint8)
    action_space = gymnasium.spaces.Discrete(3)

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> Any:
        return self.observation_space.sample(), float(action), True, False, {}


def test_channel_last_images_are_transposed_as_predict_does(tmp_path: Path) -> None:
    from cosmic_curriculum.envs.onnx_twin import load_env_twin, write_env_twin

    if "RgbEnv-v0" not in gymnasium.envs.registration.registry:
        gymnasium.register(id="RgbEnv-v0", entry_point=RgbEnv)
    s = EnvSpec(kind="gymnasium", id="RgbEnv-v0")
    model = sb3.PPO("MlpPolicy", make_env(s), n_steps=32, batch_size=32, seed=0, device="cpu")
    assert model.policy.observation_space.shape == (3, 10, 8)
    path = tmp_path / "bot.json"
    save_env_bot(env_bot_from_model(model, s), path)
    bot = load_env_bot(path)
    obs = np.stack([RgbEnv.observation_space.sample() for _ in range(300)])
    expected = model.predict(obs, deterministic=True)[0]
    assert np.array_equal(bot.act(obs), expected)
    assert np.array_equal(load_env_twin(write_env_twin(path)).act(obs), expected)
    # The env's channel-last space is the one the bot plays.
    record = evaluate_env(path, RANDOM, history_path=tmp_path / "h.jsonl", episodes=3, seed=0)
    assert record["episodes"] == 3
