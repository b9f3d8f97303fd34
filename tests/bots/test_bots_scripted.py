"""The scripted rookie."""

from __future__ import annotations

import numpy as np

from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.bots import ScriptedBot, bot_from_spec


def test_scripted_bot_reset_forgets_only_masked_games() -> None:
    bot = bot_from_spec("rookie")
    assert isinstance(bot, ScriptedBot)
    rng = np.random.default_rng(0)
    obs = np.zeros((4, OBS_SIZE), dtype=np.float32)
    obs[:, 6] = 1.0  # facing +x
    obs[:, 9 + 2] = 1.0  # level
    bot.act(obs, rng)
    bot.reset(np.array([True, False, False, False]))
    assert bot._fresh.tolist() == [True, False, False, False]
    out = bot.act(obs, rng)
    assert out.shape == (4, ACT_SIZE) and np.all(np.abs(out) <= 1.0)
    bot.reset(np.ones(7, dtype=bool))  # another batch size: start over
    assert bot.act(np.tile(obs[:1], (7, 1)), rng).shape == (7, ACT_SIZE)
