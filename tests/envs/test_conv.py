"""Image policies (SB3's CnnPolicy, NatureCNN) as env bots: the numpy convolutions are
torch's, and the bot's JSON replays SB3's predict on MiniGrid's pixel observations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
sb3 = pytest.importorskip("stable_baselines3")
torch = pytest.importorskip("torch")
pytest.importorskip("minigrid")

from env_helpers import PIXELS  # noqa: E402
from image_extractors import PaddedCNN  # noqa: E402
from policy_outputs import log_softmax, torch_outputs  # noqa: E402

from cosmic_curriculum.envs.conv import conv_forward, conv_of  # noqa: E402
from cosmic_curriculum.envs.export import env_bot_from_model  # noqa: E402
from cosmic_curriculum.envs.gymnasium import make_env  # noqa: E402
from cosmic_curriculum.envs.policy import load_env_bot, parse_env_bot, save_env_bot  # noqa: E402
from cosmic_curriculum.errors import TrainerError  # noqa: E402
from cosmic_curriculum.workspace.env_config import EnvSpec  # noqa: E402

# The same view with the agent's heading: a Dict of an image key and a Discrete key
# (MultiInputPolicy gives the image a NatureCNN, one-hots the heading).
PIXELS_AND_HEADING = EnvSpec.model_validate(
    {
        **PIXELS.model_dump(),
        "wrappers": [
            {"call": "minigrid.wrappers:RGBImgPartialObsWrapper"},
            {
                "call": "gymnasium.wrappers:FilterObservation",
                "kwargs": {"filter_keys": ["image", "direction"]},
            },
        ],
    }
)


@pytest.mark.parametrize(
    ("channels", "kernel", "stride", "padding", "side"),
    [(3, 8, 4, 0, 40), (4, 3, 1, 1, 9), (2, 4, 2, 2, 11), (1, 5, 3, 0, 17)],
)
def test_a_convolution_is_torchs(
    channels: int, kernel: int, stride: int, padding: int, side: int
) -> None:
    torch.manual_seed(channels)
    conv = torch.nn.Conv2d(channels, 6, kernel, stride=stride, padding=padding).double()
    modules = [conv, torch.nn.ReLU(), torch.nn.Flatten()]
    layers, rest = conv_of(modules, "the test policy's")
    assert rest == [] and layers[0].activation == "relu"
    x = np.random.default_rng(side).normal(size=(5, channels, side, side))
    with torch.no_grad():
        expected = torch.nn.Sequential(*modules)(torch.from_numpy(x)).numpy()
    assert np.allclose(conv_forward(layers, x), expected, atol=1e-10)


@pytest.mark.parametrize(
    ("module", "what"),
    [
        (torch.nn.Conv2d(3, 4, 3, dilation=2), "Conv2d"),
        (torch.nn.Conv2d(4, 4, 3, groups=2), "Conv2d"),
        (torch.nn.MaxPool2d(2), "MaxPool2d"),
        (torch.nn.Tanh(), "Tanh"),
    ],
)
def test_what_the_bot_cannot_compute_is_refused_in_one_line(module: Any, what: str) -> None:
    with pytest.raises(TrainerError) as caught:
        conv_of([torch.nn.Conv2d(3, 4, 3), module, torch.nn.Flatten()], "the PPO policy's")
    message = str(caught.value)
    assert f"({what})" in message and "\n" not in message


def test_a_bot_of_the_wrong_image_depth_is_refused() -> None:
    model = sb3.PPO("CnnPolicy", make_env(PIXELS), device="cpu", n_steps=64, batch_size=32)
    document = env_bot_from_model(model, PIXELS).to_json()
    document["policy"]["conv"][1]["weights"] = document["policy"]["conv"][0]["weights"]
    with pytest.raises(ValueError, match=r"policy.conv\[1\].weights must be finite numbers"):
        parse_env_bot(document)


def images(n: int, seed: int) -> Any:
    # Random pixels (not MiniGrid's few colours) reach every weight of the first layer.
    return np.random.default_rng(seed).integers(0, 256, (n, 56, 56, 3), dtype=np.uint8)


def assert_replays(model: Any, tmp_path: Path, n: int = 200, spec: EnvSpec = PIXELS) -> Any:
    path = tmp_path / "bot.json"
    save_env_bot(env_bot_from_model(model, spec), path)
    bot = load_env_bot(path)
    obs = images(n, 1)
    if spec == PIXELS_AND_HEADING:
        obs = {"image": obs, "direction": np.random.default_rng(2).integers(0, 4, n)}
    ours, theirs = bot.outputs(obs), torch_outputs(model, obs)
    assert ours.shape == theirs.shape
    if bot.head == "actor":  # torch's Categorical keeps the logits normalised (log-softmax)
        ours = log_softmax(ours)
    # Logits (the head's 0.01 gain) are small: compare to their own scale.
    assert np.allclose(ours, theirs, rtol=1e-4, atol=1e-5 * np.abs(theirs).max())
    predicted, _ = model.predict(obs, deterministic=True)
    assert np.array_equal(bot.act(obs), predicted)
    return bot


CNN_CASES = {
    "PPO": (sb3.PPO, {"n_steps": 64, "batch_size": 32}, {}),
    "PPO-raw-pixels": (sb3.PPO, {"n_steps": 64, "batch_size": 32}, {"normalize_images": False}),
    "PPO-features-dim": (
        sb3.PPO,
        {"n_steps": 64, "batch_size": 32},
        {"features_extractor_kwargs": {"features_dim": 64}, "net_arch": [32]},
    ),
    "PPO-padded-extractor": (
        sb3.PPO,
        {"n_steps": 64, "batch_size": 32},
        {"features_extractor_class": PaddedCNN},
    ),
    "DQN": (sb3.DQN, {"buffer_size": 500}, {}),
    "DQN-raw-pixels": (sb3.DQN, {"buffer_size": 500}, {"normalize_images": False}),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CNN_CASES))
def test_a_fresh_cnn_policy_replays_predict(name: str, tmp_path: Path) -> None:
    cls, params, policy_kwargs = CNN_CASES[name]
    torch.manual_seed(0)
    model = cls("CnnPolicy", make_env(PIXELS), device="cpu", policy_kwargs=policy_kwargs, **params)
    bot = assert_replays(model, tmp_path)
    raw = policy_kwargs.get("normalize_images") is False
    assert bot.scale == (1.0 if raw else 1.0 / 255.0)
    assert bot.observation_space.shape == (3, 56, 56)  # channel-first, as SB3 transposed it
    cnn = model.policy.q_net if hasattr(model.policy, "q_net") else model.policy
    convs = [m for m in cnn.features_extractor.cnn if isinstance(m, torch.nn.Conv2d)]
    assert [c.weights.shape[2:] for c in bot.conv] == [m.kernel_size for m in convs]
    assert [c.stride for c in bot.conv] == [m.stride for m in convs]
    assert [c.padding for c in bot.conv] == [m.padding for m in convs]


@pytest.mark.slow
def test_a_trained_dqn_cnn_policy_replays_predict(tmp_path: Path) -> None:
    model = sb3.DQN(
        "CnnPolicy",
        make_env(PIXELS),
        device="cpu",
        buffer_size=500,
        learning_starts=40,
        train_freq=4,
        seed=0,
    )
    before = model.policy.q_net.state_dict()["features_extractor.cnn.0.weight"].clone()
    model.learn(120)
    after = model.policy.q_net.state_dict()["features_extractor.cnn.0.weight"]
    assert not torch.equal(before, after)  # it trained: the convolutions moved
    bot = assert_replays(model, tmp_path)
    env = make_env(PIXELS)
    obs, _ = env.reset(seed=3)
    for _ in range(20):  # the bot plays the env's own images, channel-last
        action = int(bot.act(obs[None])[0])
        assert action == int(model.predict(obs, deterministic=True)[0])
        obs, _, done, truncated, _ = env.step(action)
        if done or truncated:
            obs, _ = env.reset()


@pytest.mark.slow
def test_a_cnn_bot_samples_as_its_softmax(tmp_path: Path) -> None:
    torch.manual_seed(1)
    model = sb3.PPO("CnnPolicy", make_env(PIXELS), device="cpu", n_steps=64, batch_size=32)
    save_env_bot(env_bot_from_model(model, PIXELS), tmp_path / "bot.json")
    bot = load_env_bot(tmp_path / "bot.json")
    obs = np.repeat(images(1, 2), 1500, axis=0)
    drawn = bot.act(obs, deterministic=False, rng=np.random.default_rng(0))
    probs = torch.softmax(torch.from_numpy(torch_outputs(model, obs[:1])[0]), 0).numpy()
    freq = np.bincount(drawn, minlength=probs.size) / drawn.size
    assert np.abs(freq - probs).max() < 0.06  # 1500 draws: sd of each frequency < 0.013


@pytest.mark.slow
@pytest.mark.parametrize("normalize_images", [True, False])
def test_a_dict_of_an_image_and_a_discrete_key_replays_predict(
    normalize_images: bool, tmp_path: Path
) -> None:
    torch.manual_seed(0)
    model = sb3.PPO(
        "MultiInputPolicy",
        make_env(PIXELS_AND_HEADING),
        device="cpu",
        n_steps=64,
        batch_size=32,
        policy_kwargs={"normalize_images": normalize_images},
    )
    bot = assert_replays(model, tmp_path, spec=PIXELS_AND_HEADING)
    assert [b.key for b in bot.branches] == ["image"] and not bot.conv
    assert bot.scale == (1.0 / 255.0 if normalize_images else 1.0)
    env = make_env(PIXELS_AND_HEADING)
    obs, _ = env.reset(seed=4)
    for _ in range(10):  # the env's own Dict observations, one at a time
        action = int(bot.act({k: np.asarray(v)[None] for k, v in obs.items()})[0])
        assert action == int(model.predict(obs, deterministic=True)[0])
        obs, _, done, truncated, _ = env.step(action)
        if done or truncated:
            obs, _ = env.reset()
