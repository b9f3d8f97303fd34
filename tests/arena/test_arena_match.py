"""Paired matches: structure, determinism, recording, and the rookie's strength."""

from __future__ import annotations

import numpy as np
import pytest
from arena_helpers import FULL, PLANAR

from cosmic_curriculum import scoring
from cosmic_curriculum.arena.match import PairResults, play_pairs
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots import InertBot, RandomBot, bot_from_spec


def score(r: PairResults) -> float:
    """A's score (a match always has games)."""
    return scoring.score(r.wins_a, r.draws, r.episodes, if_none=0.0)


class Rusher:
    """Full thrust straight ahead, every decision (counts its calls)."""

    kind = "rusher"

    def __init__(self, decision_ticks: int) -> None:
        self.decision_ticks = decision_ticks
        self.calls = 0

    def act(self, obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        self.calls += 1
        out = np.zeros((obs.shape[0], ACT_SIZE), dtype=np.float32)
        out[:, 0] = 1.0
        return out

    def reset(self, mask: np.ndarray) -> None:
        return None


def test_results_shape_and_bookkeeping() -> None:
    r = play_pairs(bot_from_spec("rookie"), RandomBot(), 12, 3, PLANAR)
    assert r.outcomes.shape == (12, 2) and r.lengths.shape == (12, 2)
    assert set(np.unique(r.outcomes)) <= {-1, 0, 1}
    assert r.wins_a + r.wins_b + r.draws == r.episodes == 24
    assert score(r) == pytest.approx((r.wins_a + 0.5 * r.draws) / 24)
    assert np.all((r.lengths >= 1) & (r.lengths <= PLANAR.max_ticks))
    assert np.all(r.lengths[r.outcomes == 0] == PLANAR.max_ticks)
    np.testing.assert_allclose(r.pair_scores, (r.outcomes + 1).sum(axis=1) / 4)


def test_same_seed_same_results_other_seed_other_results() -> None:
    a = play_pairs(bot_from_spec("rookie"), RandomBot(), 10, 7, FULL)
    b = play_pairs(bot_from_spec("rookie"), RandomBot(), 10, 7, FULL)
    c = play_pairs(bot_from_spec("rookie"), RandomBot(), 10, 8, FULL)
    np.testing.assert_array_equal(a.outcomes, b.outcomes)
    np.testing.assert_array_equal(a.lengths, b.lengths)
    assert not np.array_equal(a.lengths, c.lengths)


def test_a_bot_against_itself_mirrors_within_each_pair() -> None:
    # a deterministic bot against the same bot: the two games of a pair are mirror images,
    # so A's outcomes in the two columns are exact opposites
    r = play_pairs(Rusher(4), Rusher(4), 20, 1, FULL)
    np.testing.assert_array_equal(r.outcomes[:, 0], -r.outcomes[:, 1])
    np.testing.assert_array_equal(r.lengths[:, 0], r.lengths[:, 1])


def test_each_bot_acts_at_its_own_rate() -> None:
    settings = GameSettings(time_limit=1.0)
    fast, slow = Rusher(2), Rusher(15)
    play_pairs(fast, slow, 3, 0, settings)
    assert fast.calls == settings.max_ticks // 2
    assert slow.calls == -(-settings.max_ticks // 15)


def test_recording_follows_one_game_until_it_ends() -> None:
    r = play_pairs(bot_from_spec("rookie"), InertBot(), 4, 2, PLANAR, record=True, record_game=5)
    tr = r.trajectory
    assert tr is not None and tr.game == 5 and tr.a_side == 1
    assert tr.outcome == r.outcomes[1, 1]
    assert tr.ship_pos.shape == (r.lengths[1, 1] + 1, 2, 3)
    assert tr.orb_pos.shape == (r.lengths[1, 1] + 1, 3)
    assert np.all(tr.ship_pos[..., 2] == 0.0)
    with pytest.raises(ValueError, match="record_game"):
        play_pairs(InertBot(), InertBot(), 2, 0, PLANAR, record=True, record_game=4)


@pytest.mark.parametrize("settings", [PLANAR, FULL], ids=["planar", "3d"])
@pytest.mark.parametrize("opponent", ["inert", "random"])
def test_rookie_clearly_beats_inert_and_random(settings: GameSettings, opponent: str) -> None:
    r = play_pairs(bot_from_spec("rookie"), bot_from_spec(opponent), 100, 11, settings)
    assert score(r) >= 0.8, (r.wins_a, r.wins_b, r.draws)
    assert r.wins_b <= 10  # it hardly ever concedes to a bot that does not play


def test_rookie_is_even_with_itself() -> None:
    r = play_pairs(bot_from_spec("rookie"), bot_from_spec("rookie"), 60, 5, PLANAR)
    assert 0.35 <= score(r) <= 0.65
