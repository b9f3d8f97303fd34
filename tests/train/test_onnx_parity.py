"""A trained policy, its JSON bot and the ONNX twin the trainer writes act alike: the
ONNX action equals the numpy bot's and SB3's deterministic action to 1e-5, on random
observations and on observations of real matches."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from stable_baselines3 import PPO
from train_helpers import tiny

from cosmic_curriculum import bots, train
from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.workspace.layout import Layout

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bots"))  # bot_helpers

TOLERANCE = 1e-5


def max_diffs(model: PPO, json_path: Path, onnx_path: Path, obs: np.ndarray) -> dict[str, float]:
    rng = np.random.default_rng(0)
    torch_action, _ = model.predict(obs, deterministic=True)
    numpy_action = bots.load_bot(json_path).act(obs, rng)
    onnx_action = bots.load_bot(onnx_path).act(obs, rng)
    return {
        "onnx-numpy": float(np.abs(onnx_action - numpy_action).max()),
        "onnx-torch": float(np.abs(onnx_action - torch_action).max()),
    }


@pytest.mark.slow
def test_trained_bot_onnx_twin_matches_numpy_and_torch(tmp_path: Path) -> None:
    from bot_helpers import arena_observations

    result = train.train(tiny(tmp_path, net_arch=(32, 32)))
    layout = Layout(tmp_path)
    json_path, onnx_path = layout.bot("exp"), layout.onnx("exp")
    assert result.bot == json_path and onnx_path.is_file()
    onnx.checker.check_model(onnx.load(str(onnx_path)), full_check=True)
    model = PPO.load(result.checkpoint, device="cpu")
    rng = np.random.default_rng(1)
    random_obs = rng.uniform(-1.0, 1.0, size=(10_000, OBS_SIZE)).astype(np.float32)
    real_obs = arena_observations(1000, seed=5)
    for obs in (random_obs, real_obs):
        diffs = max_diffs(model, json_path, onnx_path, obs)
        print(f"max abs diff over {len(obs)} observations: {diffs}")
        assert max(diffs.values()) <= TOLERANCE, diffs
