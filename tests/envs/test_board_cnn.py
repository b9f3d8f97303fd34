"""BoardCNN (``features_extractor_class = "BoardCNN"``) as an env bot: its convolutions over
a channel-last board (planes moved first: ``channels_last``) or over an image SB3 made
channel-first replay SB3's logits and predict, in numpy and in the ONNX twin; a
connect-four game trained with it plays its checkpoint's moves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
sb3 = pytest.importorskip("stable_baselines3")
torch = pytest.importorskip("torch")
pytest.importorskip("minigrid")
pytest.importorskip("onnxruntime")

from env_helpers import cli  # noqa: E402
from policy_outputs import log_softmax, torch_outputs  # noqa: E402

from cosmic_curriculum.envs.algos import sb3_kwargs  # noqa: E402
from cosmic_curriculum.envs.board_cnn import BoardCNN  # noqa: E402
from cosmic_curriculum.envs.export import env_bot_from_model  # noqa: E402
from cosmic_curriculum.envs.gymnasium import make_env  # noqa: E402
from cosmic_curriculum.envs.onnx_twin import load_env_twin, write_env_twin  # noqa: E402
from cosmic_curriculum.envs.policy import load_env_bot, parse_env_bot, save_env_bot  # noqa: E402
from cosmic_curriculum.workspace.env_config import EnvSpec  # noqa: E402

# MiniGrid's 7x7 view of (object, colour, state) codes: a uint8 image SB3 transposes to
# channels first, and as float32 a board SB3 leaves as it is, planes last.
VIEW = {
    "kind": "gymnasium",
    "id": "MiniGrid-Empty-5x5-v0",
    "imports": ["minigrid"],
    "wrappers": [{"call": "minigrid.wrappers:ImgObsWrapper"}],
}
IMAGE = EnvSpec.model_validate(VIEW)
BOARD = EnvSpec.model_validate(
    {
        **VIEW,
        "wrappers": [
            *VIEW["wrappers"],
            {"call": "gymnasium.wrappers:DtypeObservation", "kwargs": {"dtype": "float32"}},
        ],
    }
)
CONNECT_FOUR = {"kind": "pettingzoo", "id": "pettingzoo.classic.connect_four_v3"}


def model_of(spec: EnvSpec, extractor: dict[str, Any]) -> Any:
    torch.manual_seed(0)
    kwargs = {"features_extractor_class": "BoardCNN", **extractor}
    params = sb3_kwargs({"policy_kwargs": kwargs}, None)
    return sb3.PPO("MlpPolicy", make_env(spec), device="cpu", n_steps=64, batch_size=32, **params)


def views(n: int, seed: int) -> Any:
    # Random codes (not MiniGrid's few) reach every weight of the first layer.
    return np.random.default_rng(seed).integers(0, 11, (n, 7, 7, 3)).astype(np.uint8)


@pytest.mark.parametrize(
    ("spec", "extractor", "planes_last", "scale"),
    [
        (BOARD, {}, True, 1.0),
        (IMAGE, {}, False, 1.0 / 255.0),
        (BOARD, {"features_extractor_kwargs": {"channels": [8, 16, 4], "kernel": 5}}, True, 1.0),
        (IMAGE, {"features_extractor_kwargs": {"kernel": 4, "features": 32}}, False, 1 / 255),
    ],
    ids=["board", "image", "board-three-5x5", "image-even-kernel"],
)
def test_a_board_cnn_policy_replays_predict_in_numpy_and_onnx(
    spec: EnvSpec, extractor: dict[str, Any], planes_last: bool, scale: float, tmp_path: Path
) -> None:
    model = model_of(spec, extractor)
    assert isinstance(model.policy.features_extractor, BoardCNN)
    path = tmp_path / "bot.json"
    save_env_bot(env_bot_from_model(model, spec), path)
    bot = load_env_bot(path)
    assert bot.channels_last is planes_last and bot.scale == pytest.approx(scale)
    assert json.loads(path.read_text())["policy"].get("channels_last", False) is planes_last
    obs = views(300, 1)
    theirs = torch_outputs(model, obs)
    ours = log_softmax(bot.outputs(obs))
    assert np.allclose(ours, theirs, rtol=1e-4, atol=1e-5 * np.abs(theirs).max())
    predicted, _ = model.predict(obs, deterministic=True)
    assert np.array_equal(bot.act(obs), predicted)
    twin = load_env_twin(write_env_twin(path))
    assert np.array_equal(twin.act(obs), predicted)


@pytest.mark.slow
def test_a_trained_board_cnn_bot_plays_its_models_moves(tmp_path: Path) -> None:
    model = model_of(BOARD, {})
    before = model.policy.features_extractor.cnn[0].weight.detach().clone()
    model.learn(128)
    assert not torch.equal(before, model.policy.features_extractor.cnn[0].weight)
    save_env_bot(env_bot_from_model(model, BOARD), tmp_path / "bot.json")
    bot = load_env_bot(tmp_path / "bot.json")
    env = make_env(BOARD)
    obs, _ = env.reset(seed=3)
    for _ in range(20):  # the bot plays the env's own boards
        action = int(bot.act(obs[None])[0])
        assert action == int(model.predict(obs, deterministic=True)[0])
        obs, _, done, truncated, _ = env.step(action)
        if done or truncated:
            obs, _ = env.reset()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"channels_last": "yes"}, "policy.channels_last must be true or false"),
        ({"channels_last": True, "conv": []}, "policy.channels_last needs conv layers"),
    ],
)
def test_a_bad_layout_field_is_named(change: dict[str, Any], message: str) -> None:
    document = env_bot_from_model(model_of(BOARD, {}), BOARD).to_json()
    document["policy"].update(change)
    with pytest.raises(ValueError, match=message):
        parse_env_bot(document)


def test_a_board_cnn_refuses_a_flat_observation_in_one_line(tmp_path: Path) -> None:
    made = cli(
        tmp_path,
        "train-env",
        "flat",
        "--timesteps",
        "64",
        "--env",
        json.dumps({"kind": "gymnasium", "id": "CartPole-v1"}),
        "--hyperparams",
        json.dumps({"n_steps": 32, "policy_kwargs": {"features_extractor_class": "BoardCNN"}}),
    )
    assert made.returncode != 0
    lines = [line for line in made.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "BoardCNN reads a 3-D Box observation" in lines[0], made.stderr
    assert "Traceback" not in made.stderr


@pytest.mark.slow
def test_connect_four_trained_with_a_board_cnn_plays_its_checkpoint(tmp_path: Path) -> None:
    pytest.importorskip("pettingzoo")
    sb3_contrib = pytest.importorskip("sb3_contrib")
    hyperparams = {"n_steps": 64, "batch_size": 128, "policy_kwargs": {"net_arch": [32]}}
    hyperparams["policy_kwargs"].update(
        features_extractor_class="BoardCNN",
        features_extractor_kwargs={"channels": [16, 16], "features": 64},
    )
    made = cli(
        tmp_path,
        "train-env",
        "c4",
        "--timesteps",
        "1024",
        "--env",
        json.dumps(CONNECT_FOUR),
        "--opponent-mode",
        "random",
        "--hyperparams",
        json.dumps(hyperparams),
        "--n-envs",
        "2",
    )
    assert made.returncode == 0, made.stdout + made.stderr
    bot = load_env_bot(tmp_path / "bots" / "c4.json")
    assert bot.channels_last and bot.action_mask and len(bot.conv) == 2
    model = sb3_contrib.MaskablePPO.load(tmp_path / "checkpoints" / "c4" / "final.zip")
    from pettingzoo.classic import connect_four_v3

    game = connect_four_v3.env()
    rng = np.random.default_rng(0)
    boards, masks = [], []
    for episode in range(6):  # real positions of random games
        game.reset(seed=episode)
        for _agent in game.agent_iter():
            observation, _, ended, cut, _ = game.last()
            if ended or cut:
                game.step(None)
                continue
            boards.append(observation["observation"])
            masks.append(observation["action_mask"].astype(bool))
            game.step(int(rng.choice(np.flatnonzero(masks[-1]))))
    obs, legal = np.array(boards), np.array(masks)
    predicted, _ = model.predict(obs, deterministic=True, action_masks=legal)
    assert np.array_equal(bot.act(obs, True, mask=legal), predicted)
