"""An env bot's ONNX twin is its greedy action, for every exported family; a stale twin
is refused."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
sb3 = pytest.importorskip("stable_baselines3")
contrib = pytest.importorskip("sb3_contrib", reason="sb3-contrib (the contrib extra) is needed")
pytest.importorskip("onnxruntime")

from env_helpers import PIXELS  # noqa: E402
from image_extractors import PaddedCNN  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from cosmic_curriculum.cli import app  # noqa: E402
from cosmic_curriculum.envs.export import env_bot_from_model  # noqa: E402
from cosmic_curriculum.envs.gymnasium import make_env  # noqa: E402
from cosmic_curriculum.envs.onnx_twin import load_env_twin, write_env_twin  # noqa: E402
from cosmic_curriculum.envs.policy import load_env_bot, save_env_bot  # noqa: E402
from cosmic_curriculum.errors import BotError  # noqa: E402
from cosmic_curriculum.workspace.env_config import EnvSpec  # noqa: E402

TIME_AWARE = {"call": "gymnasium.wrappers:TimeAwareObservation", "kwargs": {"flatten": False}}
RESCALE = {
    "call": "gymnasium.wrappers:RescaleAction",
    "kwargs": {"min_action": 0.0, "max_action": 3.0},
}


def spec(env_id: str, kwargs: dict[str, Any] | None = None, *wrappers: Any) -> EnvSpec:
    raw = {"kind": "gymnasium", "id": env_id, "kwargs": kwargs or {}, "wrappers": list(wrappers)}
    return EnvSpec.model_validate(raw)


CARTPOLE = spec("CartPole-v1")
PENDULUM = spec("Pendulum-v1", None, RESCALE)
LAKE = spec("FrozenLake-v1", {"map_name": "4x4", "is_slippery": False})
LAKE_DICT = spec("FrozenLake-v1", {"map_name": "4x4", "is_slippery": False}, TIME_AWARE)
SMALL = {"net_arch": [32, 32]}


def normalized(s: EnvSpec, policy: str = "MlpPolicy") -> Any:
    venv = VecNormalize(DummyVecEnv([lambda: make_env(s)]))
    venv.seed(0)
    venv.reset()
    for _ in range(200):
        venv.step(np.array([venv.action_space.sample()]))
    return sb3.PPO(policy, venv, policy_kwargs=dict(SMALL), device="cpu"), venv


def arch(policy: str) -> dict[str, Any] | None:
    return None if policy == "LinearPolicy" else dict(SMALL)


Builder = Callable[[], tuple[Any, Any]]
CASES: dict[str, tuple[EnvSpec, Builder]] = {
    name: (s, (lambda cls=cls, s=s, p=p: (cls(p, make_env(s), policy_kwargs=arch(p)), None)))
    for name, cls, s, p in [
        ("PPO-discrete", sb3.PPO, CARTPOLE, "MlpPolicy"),
        ("PPO-box", sb3.PPO, PENDULUM, "MlpPolicy"),
        ("A2C", sb3.A2C, CARTPOLE, "MlpPolicy"),
        ("DQN", sb3.DQN, CARTPOLE, "MlpPolicy"),
        ("DQN-onehot", sb3.DQN, LAKE, "MlpPolicy"),
        ("SAC", sb3.SAC, PENDULUM, "MlpPolicy"),
        ("TD3", sb3.TD3, PENDULUM, "MlpPolicy"),
        ("DDPG", sb3.DDPG, PENDULUM, "MlpPolicy"),
        ("TQC", contrib.TQC, PENDULUM, "MlpPolicy"),
        ("QRDQN", contrib.QRDQN, CARTPOLE, "MlpPolicy"),
        ("TRPO", contrib.TRPO, PENDULUM, "MlpPolicy"),
        ("ARS", contrib.ARS, PENDULUM, "MlpPolicy"),
        ("ARS-linear", contrib.ARS, CARTPOLE, "LinearPolicy"),
        ("PPO-dict", sb3.PPO, LAKE_DICT, "MultiInputPolicy"),
    ]
}
CASES["PPO-obs-norm"] = (PENDULUM, lambda: normalized(PENDULUM))
CASES["PPO-cnn"] = (PIXELS, lambda: (sb3.PPO("CnnPolicy", make_env(PIXELS)), None))
CASES["DQN-cnn"] = (
    PIXELS,
    lambda: (sb3.DQN("CnnPolicy", make_env(PIXELS), buffer_size=500), None),
)
KEYS = ["image", "direction"]  # MiniGrid's pixels and heading, not its mission text
PIXELS_AND_HEADING = spec(
    "MiniGrid-Empty-5x5-v0",
    None,
    {"call": "minigrid.wrappers:RGBImgPartialObsWrapper"},
    {
        "call": "gymnasium.wrappers:FilterObservation",
        "kwargs": {"filter_keys": ["image", "direction"]},
    },
).model_copy(update={"imports": ["minigrid"]})
CASES["PPO-dict-image"] = (
    PIXELS_AND_HEADING,
    lambda: (sb3.PPO("MultiInputPolicy", make_env(PIXELS_AND_HEADING)), None),
)
PADDED = {"features_extractor_class": PaddedCNN}
CASES["A2C-cnn-padded"] = (
    PIXELS,
    lambda: (sb3.A2C("CnnPolicy", make_env(PIXELS), policy_kwargs=PADDED), None),
)


def observations(s: EnvSpec, n: int) -> Any:
    space = make_env(s).observation_space
    space.seed(0)
    drawn = [space.sample() for _ in range(n)]
    if isinstance(drawn[0], dict):
        return {k: np.stack([d[k] for d in drawn]) for k in drawn[0]}
    return np.clip(np.stack(drawn), -5, 5)  # CartPole's unbounded sides sample huge values


FAST = {"PPO-dict", "PPO-obs-norm", "SAC", "DQN-onehot"}  # the rest run with the slow tests


@pytest.mark.parametrize(
    "name", [n if n in FAST else pytest.param(n, marks=pytest.mark.slow) for n in CASES]
)
def test_the_twin_is_the_greedy_action(name: str, tmp_path: Path) -> None:
    s, build = CASES[name]
    model, venv = build()
    path = tmp_path / "bot.json"
    save_env_bot(env_bot_from_model(model, s, normalizer=venv), path)
    twin = load_env_twin(write_env_twin(path))
    bot = load_env_bot(path)
    obs = observations(s, 1000)
    ours, theirs = bot.act(obs), twin.act(obs)
    assert theirs.shape == ours.shape and theirs.dtype.kind == ours.dtype.kind
    if bot.action_space.kind == "Discrete":
        assert np.array_equal(theirs, ours)
    else:
        assert np.allclose(theirs, ours, atol=1e-5)
    assert twin.env == s and twin.observation_space.to_json() == bot.observation_space.to_json()


def test_a_stale_twin_is_refused_and_export_onnx_rewrites_it(tmp_path: Path) -> None:
    path = tmp_path / "bot.json"
    save_env_bot(env_bot_from_model(sb3.DQN("MlpPolicy", make_env(CARTPOLE)), CARTPOLE), path)
    result = CliRunner().invoke(app, ["export-onnx", str(path)])
    assert result.exit_code == 0 and result.output == f"wrote {tmp_path / 'bot.onnx'}\n"
    load_env_twin(tmp_path / "bot.onnx")
    document = json.loads(path.read_text())
    document["policy"]["layers"][-1]["bias"][0] += 1.0
    path.write_text(json.dumps(document))
    with pytest.raises(BotError, match=r"bot\.onnx is stale: .*bot\.json changed") as caught:
        load_env_twin(tmp_path / "bot.onnx")
    assert "\n" not in str(caught.value) and "export-onnx" in str(caught.value)
    assert CliRunner().invoke(app, ["export-onnx", str(path)]).exit_code == 0
    twin = load_env_twin(tmp_path / "bot.onnx")
    obs = observations(CARTPOLE, 200)
    assert np.array_equal(twin.act(obs), load_env_bot(path).act(obs))
    # A twin on its own (shipped to a game without its JSON) still plays.
    path.unlink()
    assert load_env_twin(tmp_path / "bot.onnx").act(obs).shape == (200,)


def test_metadata_names_the_inputs_and_spaces(tmp_path: Path) -> None:
    import onnx

    path = tmp_path / "bot.json"
    model = sb3.PPO("MultiInputPolicy", make_env(LAKE_DICT), policy_kwargs=dict(SMALL))
    save_env_bot(env_bot_from_model(model, LAKE_DICT, checkpoint_sha256="ef" * 32), path)
    proto = onnx.load(str(write_env_twin(path, tmp_path / "game.onnx")))
    meta = {p.key: p.value for p in proto.metadata_props}
    assert meta["inputs"] == "obs.obs,obs.time" == ",".join(i.name for i in proto.graph.input)
    assert json.loads(meta["provenance"])["checkpoint_sha256"] == "ef" * 32
    assert json.loads(meta["action_space"]) == {"type": "Discrete", "n": 4, "start": 0}


def test_the_evaluator_plays_a_twin_as_its_bot(tmp_path: Path) -> None:
    from cosmic_curriculum.envs.evaluate import RANDOM, evaluate_env

    path = tmp_path / "bot.json"
    save_env_bot(env_bot_from_model(sb3.DQN("MlpPolicy", make_env(CARTPOLE)), CARTPOLE), path)
    twin = write_env_twin(path)
    records = [
        evaluate_env(p, RANDOM, history_path=tmp_path / "h.json", episodes=4, seed=3)
        for p in (path, twin)
    ]
    assert records[0]["returns"] == records[1]["returns"]
    assert records[0]["wins_a"] == records[1]["wins_a"]
