"""Exported numpy bots act exactly like the torch policy's deterministic actions."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO
from torch import nn

from cosmic_curriculum import bots
from cosmic_curriculum.arena import OBS_SIZE, GameSettings
from cosmic_curriculum.arena.vec_env import ArenaVecEnv
from cosmic_curriculum.errors import TrainerError
from cosmic_curriculum.train import policy_to_bot as export

torch.set_num_threads(1)
sys.path.insert(0, str(Path(__file__).resolve().parent / "bots"))  # bot_helpers


def make_model(activation: type[nn.Module], arch: list[int]) -> PPO:
    env = ArenaVecEnv(4, GameSettings(), bots.InertBot(), seed=0)
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=8,
        batch_size=32,
        policy_kwargs={"net_arch": {"pi": arch, "vf": [8]}, "activation_fn": activation},
        device="cpu",
        seed=1,
    )
    # Fresh SB3 heads are initialised tiny (gain 0.01): randomise every weight so the test
    # exercises all layers, biases and the clipping of large means.
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for param in model.policy.parameters():
            param.copy_(torch.randn(param.shape, generator=gen) * 0.8)
    return model


def bot_of(model: PPO) -> Any:
    mean, std = export.observation_normalisation(model.policy)
    doc = bots.mlp_bot_document(
        export.policy_layers(model.policy), mean, std, GameSettings(), 8, {"experiment": "t"}
    )
    return bots.bot_from_document(doc)


@pytest.mark.parametrize(
    ("activation", "arch"), [(nn.Tanh, [64, 64]), (nn.ReLU, [32, 16, 8]), (nn.Tanh, [])]
)
def test_exported_bot_matches_torch_deterministic_actions(
    activation: type[nn.Module], arch: list[int]
) -> None:
    model = make_model(activation, arch)
    bot = bot_of(model)
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1.0, 1.0, size=(512, OBS_SIZE)).astype(np.float32)
    torch_actions, _ = model.predict(obs, deterministic=True)
    numpy_actions = bot.act(obs, rng)
    assert numpy_actions.shape == torch_actions.shape == (512, 6)
    np.testing.assert_allclose(numpy_actions, torch_actions, atol=1e-5, rtol=0)
    # the clip to [-1, 1] is exercised: some actions saturate, others do not
    assert np.any(np.abs(torch_actions) == 1.0) and np.any(np.abs(torch_actions) < 0.99)


def test_layers_are_the_policy_weights() -> None:
    model = make_model(nn.Tanh, [16])
    layers = export.policy_layers(model.policy)
    assert [act for _, _, act in layers] == ["tanh", "linear"]
    np.testing.assert_array_equal(
        layers[0][0], model.policy.mlp_extractor.policy_net[0].weight.detach().numpy()
    )
    assert layers[1][0].shape == (6, 16)
    assert export.observation_normalisation(model.policy) == (None, None)
    assert export.log_std(model.policy) == pytest.approx(
        model.policy.log_std.detach().numpy().tolist()
    )


def test_unsupported_activation_is_refused() -> None:
    model = make_model(nn.ELU, [8])
    with pytest.raises(TrainerError, match="ELU"):
        export.policy_layers(model.policy)


def test_non_finite_weights_are_refused() -> None:
    model = make_model(nn.Tanh, [8])
    with torch.no_grad():
        model.policy.action_net.bias[0] = float("nan")
    with pytest.raises(TrainerError, match="non-finite"):
        export.policy_layers(model.policy)


def test_onnx_twin_matches_torch_deterministic_actions(tmp_path: Path) -> None:
    # SB3's default tanh net with weights scrambled to saturate some actions. (Scrambled
    # relu nets reach pre-activations so large that float32 summation order alone, numpy's
    # against torch's, differs by more than 1e-5 over 10,000 observations.)
    from bot_helpers import arena_observations

    from cosmic_curriculum.bots.onnx_model import write_onnx

    model = make_model(nn.Tanh, [64, 64])
    mean, std = export.observation_normalisation(model.policy)
    doc = bots.mlp_bot_document(
        export.policy_layers(model.policy), mean, std, GameSettings(), 8, {"experiment": "t"}
    )
    json_path = tmp_path / "t.json"
    bots.save_bot(json_path, doc)
    onnx_bot = bots.load_bot(write_onnx(json_path))
    rng = np.random.default_rng(0)
    random_obs = rng.uniform(-1.0, 1.0, size=(10_000, OBS_SIZE)).astype(np.float32)
    for obs in (random_obs, arena_observations(1000, seed=2)):
        torch_actions, _ = model.predict(obs, deterministic=True)
        onnx_actions = onnx_bot.act(obs, rng)
        np.testing.assert_allclose(onnx_actions, torch_actions, atol=1e-5, rtol=0)
        assert np.any(np.abs(torch_actions) == 1.0) and np.any(np.abs(torch_actions) < 0.99)
