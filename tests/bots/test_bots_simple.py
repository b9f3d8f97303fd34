"""The inert and random baselines."""

from __future__ import annotations

import numpy as np

from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.bots import InertBot, RandomBot, bot_from_document, simple_bot_document


def test_simple_bots() -> None:
    obs = np.zeros((5, OBS_SIZE), dtype=np.float32)
    assert np.all(InertBot().act(obs, np.random.default_rng()) == 0.0)
    a = RandomBot().act(obs, np.random.default_rng(0))
    b = RandomBot().act(obs, np.random.default_rng(0))
    np.testing.assert_array_equal(a, b)
    assert a.shape == (5, ACT_SIZE) and np.all(np.abs(a) <= 1.0) and a.std() > 0.3
    assert bot_from_document(simple_bot_document("random", decision_ticks=3)).decision_ticks == 3
