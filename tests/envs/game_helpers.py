"""What the game tests share: PettingZoo specs and masked env bots of random weights."""

from __future__ import annotations

import numpy as np

from cosmic_curriculum.envs.export import space_of
from cosmic_curriculum.envs.layers import Layer
from cosmic_curriculum.envs.pettingzoo import game_info
from cosmic_curriculum.envs.policy import EnvBot
from cosmic_curriculum.workspace.env_config import EnvSpec

TICTACTOE = EnvSpec(kind="pettingzoo", id="pettingzoo.classic.tictactoe_v3")
CONNECT_FOUR = EnvSpec(kind="pettingzoo", id="pettingzoo.classic.connect_four_v3")
RPS = EnvSpec(kind="pettingzoo", id="pettingzoo.classic.rps_v2")


def random_game_bot(spec: EnvSpec, seed: int = 0, hidden: int = 32) -> EnvBot:
    """A masked (when the game masks) env bot of ``spec``'s game with random weights."""
    info = game_info(spec)
    obs = space_of(info.observation_space, "observation")
    action = space_of(info.action_space, "action")
    rng = np.random.default_rng(seed)
    layers = (
        Layer(rng.normal(0, 0.5, (hidden, obs.size)), rng.normal(0, 0.1, hidden), "tanh"),
        Layer(rng.normal(0, 0.5, (action.n, hidden)), np.zeros(action.n), "linear"),
    )
    return EnvBot(spec, obs, action, layers, action_mask=info.masked)
