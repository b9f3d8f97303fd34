"""Numpy MLP inference."""

from __future__ import annotations

import numpy as np
from bot_helpers import random_layers

from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.bots import Bot, MlpBot


def test_mlp_inference_matches_a_hand_computation() -> None:
    rng = np.random.default_rng(1)
    layers = random_layers(rng)
    mean, std = rng.normal(size=OBS_SIZE), rng.uniform(0.5, 2.0, size=OBS_SIZE)
    bot = MlpBot(layers, mean, std, decision_ticks=4)
    obs = rng.normal(size=(50, OBS_SIZE)).astype(np.float32) * 30.0
    x = np.clip((obs - mean) / std, -10.0, 10.0)
    x = np.tanh(x @ layers[0][0].T + layers[0][1])
    x = np.maximum(x @ layers[1][0].T + layers[1][1], 0.0)
    x = np.clip(x @ layers[2][0].T + layers[2][1], -1.0, 1.0)
    out = bot.act(obs, np.random.default_rng())
    assert out.shape == (50, ACT_SIZE) and out.dtype == np.float32
    np.testing.assert_allclose(out, x, rtol=1e-4, atol=1e-5)
    assert isinstance(bot, Bot)


def test_mlp_without_normalisation_uses_raw_observations() -> None:
    rng = np.random.default_rng(2)
    layers = random_layers(rng, sizes=(OBS_SIZE, ACT_SIZE))
    layers[0] = (layers[0][0], layers[0][1], "linear")
    obs = rng.normal(size=(3, OBS_SIZE)).astype(np.float32)
    out = MlpBot(layers).act(obs, rng)
    np.testing.assert_allclose(out, np.clip(obs @ layers[0][0].T + layers[0][1], -1, 1), atol=1e-5)
