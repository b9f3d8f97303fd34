"""Env bots apply VecNormalize's frozen statistics before the policy, as SB3 trained it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
sb3 = pytest.importorskip("stable_baselines3")

from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize  # noqa: E402

from cosmic_curriculum.envs.export import env_bot_from_model  # noqa: E402
from cosmic_curriculum.envs.gymnasium import make_env  # noqa: E402
from cosmic_curriculum.envs.obs_norm import parse_obs_norm  # noqa: E402
from cosmic_curriculum.envs.policy import load_env_bot, save_env_bot  # noqa: E402
from cosmic_curriculum.errors import BotError  # noqa: E402
from cosmic_curriculum.workspace.env_config import EnvSpec  # noqa: E402


def stepped(spec: EnvSpec, steps: int, **kwargs: Any) -> VecNormalize:
    """A VecNormalize whose statistics moved away from (0, 1) over ``steps`` random steps."""
    venv = VecNormalize(DummyVecEnv([lambda: make_env(spec)]), **kwargs)
    venv.seed(0)
    venv.action_space.seed(0)
    venv.reset()
    for _ in range(steps):
        venv.step(np.array([venv.action_space.sample()]))
    return venv


def roundtrip(model: Any, s: EnvSpec, venv: VecNormalize, tmp_path: Path) -> Any:
    path = tmp_path / "bot.json"
    save_env_bot(env_bot_from_model(model, s, checkpoint_sha256=None, normalizer=venv), path)
    return load_env_bot(path)


def raw_observations(venv: VecNormalize, n: int) -> np.ndarray:
    # Observations the env really gives, plus some beyond the clip to exercise it.
    venv.training = False
    out = [venv.get_original_obs()[0]]
    for _ in range(n - 1):
        venv.step(np.array([venv.action_space.sample()]))
        out.append(venv.get_original_obs()[0])
    return np.asarray(out, dtype=np.float32)


def test_pendulum_normalized_actions_match_predict(tmp_path: Path) -> None:
    s = EnvSpec(kind="gymnasium", id="Pendulum-v1")
    venv = stepped(s, 300, clip_obs=3.0)
    assert np.abs(venv.obs_rms.mean).max() > 0.05 and np.abs(venv.obs_rms.var - 1).max() > 0.05
    model = sb3.PPO("MlpPolicy", venv, seed=1, device="cpu")
    bot = roundtrip(model, s, venv, tmp_path)
    assert bot.obs_norm is not None and bot.obs_norm.clip_obs == 3.0
    obs = raw_observations(venv, 200)
    expected = model.predict(venv.normalize_obs(obs), deterministic=True)[0]
    assert np.allclose(bot.act(obs), expected, atol=1e-5)
    # The statistics matter: the raw observations give other actions.
    assert not np.allclose(model.predict(obs, deterministic=True)[0], expected, atol=1e-3)


@pytest.mark.parametrize("algo", ["PPO", "DQN"])
def test_cartpole_normalized_actions_match_predict(algo: str, tmp_path: Path) -> None:
    s = EnvSpec(kind="gymnasium", id="CartPole-v1")
    venv = stepped(s, 400)
    model = getattr(sb3, algo)("MlpPolicy", venv, seed=4, device="cpu")
    bot = roundtrip(model, s, venv, tmp_path)
    rng = np.random.default_rng(0)
    spread = 2 * np.sqrt(venv.obs_rms.var)
    obs = rng.normal(venv.obs_rms.mean, spread, (500, 4)).astype(np.float32)
    expected = model.predict(venv.normalize_obs(obs), deterministic=True)[0]
    assert np.array_equal(bot.act(obs), expected)


def test_the_field_is_written_as_documented_and_checked(tmp_path: Path) -> None:
    s = EnvSpec(kind="gymnasium", id="CartPole-v1")
    venv = stepped(s, 50, epsilon=1e-6)
    path = tmp_path / "bot.json"
    bot = env_bot_from_model(sb3.PPO("MlpPolicy", venv, device="cpu"), s, normalizer=venv)
    save_env_bot(bot, path)
    document = json.loads(path.read_text())
    norm = document["obs_norm"]
    assert set(norm) == {"clip_obs", "epsilon", "mean", "var"}
    assert norm["epsilon"] == 1e-6 and norm["clip_obs"] == 10.0
    assert np.allclose(norm["mean"], venv.obs_rms.mean)
    assert np.allclose(norm["var"], venv.obs_rms.var)
    norm["var"] = norm["var"][:3]
    path.write_text(json.dumps(document))
    with pytest.raises(BotError, match=r"obs_norm\.var must list 4") as caught:
        load_env_bot(path)
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)
    # Without the field (or null) a bot reads as before.
    del document["obs_norm"]
    path.write_text(json.dumps(document))
    assert load_env_bot(path).obs_norm is None


def test_a_normalizer_that_skips_observations_adds_nothing() -> None:
    s = EnvSpec(kind="gymnasium", id="CartPole-v1")
    venv = VecNormalize(DummyVecEnv([lambda: make_env(s)]), norm_obs=False)
    bot = env_bot_from_model(sb3.PPO("MlpPolicy", venv, device="cpu"), s, normalizer=venv)
    assert bot.obs_norm is None and bot.to_json()["obs_norm"] is None


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ([], "obs_norm must be an object"),
        ({"clip_obs": 0, "epsilon": 1e-8, "mean": [0], "var": [1]}, "clip_obs"),
        ({"clip_obs": 5, "epsilon": 1e-8, "mean": [0], "var": [-1]}, "var must not"),
        ({"clip_obs": 5, "epsilon": 1e-8, "mean": [None], "var": [1]}, "mean must list"),
    ],
)
def test_bad_box_fields_name_themselves(value: Any, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_obs_norm(value, {None: 1})


def test_dict_statistics_normalize_their_keys_only() -> None:
    value = {"clip_obs": 1.0, "epsilon": 1e-8, "keys": {"a": {"mean": [1, 2], "var": [4, 1]}}}
    norm = parse_obs_norm(value, {"a": 2, "b": 1})
    assert norm is not None
    out = norm.apply({"a": np.array([[3.0, 2.5]]), "b": np.array([[7.0]])})
    assert np.allclose(out["a"], [[1.0, 0.5]], atol=1e-6) and out["b"].tolist() == [[7.0]]
    with pytest.raises(ValueError, match="keys are a, b"):
        parse_obs_norm({**value, "keys": {"c": {"mean": [0], "var": [1]}}}, {"a": 2, "b": 1})
