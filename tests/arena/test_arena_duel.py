"""arena.duel: a learner against an opponent bot in a batch of games (sides, seeds,
games ending inside a decision, opponent and settings swaps)."""

from __future__ import annotations

import numpy as np
import pytest
from arena_helpers import PLANAR

from cosmic_curriculum.arena.duel import DecisionResult, Duel
from cosmic_curriculum.arena.observations import OBS_SIZE, TIME_LEFT
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots import InertBot, RandomBot

# 100 physics ticks a game, 16 per decision: a timeout falls inside the 7th decision.
SHORT = PLANAR.model_copy(update={"time_limit": 100 / 60, "decision_ticks": 16})


class Spy:
    """An opponent that holds still and records what the duel asks of it."""

    kind = "spy"
    decision_ticks = 4

    def __init__(self) -> None:
        self.acts = 0
        self.resets: list[list[bool]] = []

    def act(self, obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        self.acts += 1
        return np.zeros((obs.shape[0], 6), dtype=np.float32)

    def reset(self, mask: np.ndarray) -> None:
        self.resets.append([bool(x) for x in mask])


def play(duel: Duel, decisions: int, seed: int = 0) -> list[DecisionResult]:
    rng = np.random.default_rng(seed)
    return [duel.decide(rng.uniform(-1, 1, (duel.n, 6))) for _ in range(decisions)]


def same(a: list[DecisionResult], b: list[DecisionResult]) -> bool:
    fields = ("obs", "rewards", "dones", "ended", "outcomes", "terminal_obs", "returns")
    pairs = list(zip(a, b, strict=True))
    return all(np.array_equal(getattr(x, f), getattr(y, f)) for x, y in pairs for f in fields)


def test_bad_game_counts_and_sides_are_refused() -> None:
    with pytest.raises(ValueError, match="n_games"):
        Duel(0, SHORT, InertBot())
    with pytest.raises(ValueError, match="learner_sides"):
        Duel(2, SHORT, InertBot(), learner_sides=np.array([0, 2]))
    with pytest.raises(ValueError, match="learner_sides"):
        Duel(2, SHORT, InertBot(), learner_sides=np.array([0]))


def test_sides_default_to_alternating_and_every_learner_starts_at_home() -> None:
    duel = Duel(5, SHORT, InertBot())
    np.testing.assert_array_equal(duel.learner_side, [0, 1, 0, 1, 0])
    orange = Duel(3, SHORT, InertBot(), learner_sides=np.array([1, 1, 1]))
    obs = orange.reset()
    assert obs.shape == (3, OBS_SIZE) and obs.dtype == np.float32
    # mirrored observations: each learner sees itself on its own half, facing its target
    assert np.all(obs[:, 0] < 0.0) and np.all(obs[:, TIME_LEFT] == 1.0)


def test_the_same_seed_replays_the_same_games_and_seed_restarts_them() -> None:
    first = play(Duel(4, SHORT, RandomBot(8), seed=11), 15)
    again = play(Duel(4, SHORT, RandomBot(8), seed=11), 15)
    assert same(first, again)
    assert any(r.ended.size for r in first)  # episodes ended and were reset in between
    other = play(Duel(4, SHORT, RandomBot(8), seed=12), 15)
    assert not same(first, other)
    reused = Duel(4, SHORT, RandomBot(8), seed=99)
    play(reused, 5)
    reused.seed(11)  # kickoffs and the opponent's choices start over
    assert same(play(reused, 15), first)


def test_a_timeout_inside_a_decision_ends_the_game_there_as_a_draw() -> None:
    settings = SHORT.model_copy(update={"draw_penalty": 0.25})
    duel = Duel(2, settings, InertBot(), seed=0)
    results = [duel.decide(np.zeros((2, 6))) for _ in range(7)]
    assert all(r.ended.size == 0 for r in results[:6])
    assert all(np.all(r.rewards == 0.0) for r in results[:6])  # no shaping configured
    end = results[6]
    np.testing.assert_array_equal(end.ended, [0, 1])
    np.testing.assert_array_equal(end.outcomes, [0, 0])
    np.testing.assert_array_equal(end.dones, [True, True])
    np.testing.assert_allclose(end.rewards, [-0.25, -0.25])
    np.testing.assert_allclose(end.returns, [-0.25, -0.25])
    np.testing.assert_array_equal(end.lengths, [7, 7])
    # the terminal observation is the ending tick (no time left, not the 112th tick's)
    np.testing.assert_allclose(end.terminal_obs[:, TIME_LEFT], [-1.0, -1.0])
    # and the next observation is a fresh kickoff
    assert np.all(duel.state.ticks == 0) and np.all(end.obs[:, TIME_LEFT] == 1.0)


def test_only_the_games_that_ended_are_reset() -> None:
    settings = PLANAR.model_copy(update={"decision_ticks": 4})
    spy = Spy()
    duel = Duel(2, settings, spy, seed=0)
    spy.resets.clear()
    # game 0's orb sits on orange's goal line moving in: a goal in the first tick
    duel.state.orb_pos[0] = (settings.arena_half_length - 1.0, 0.0, 0.0)
    duel.state.orb_vel[0] = (20.0, 0.0, 0.0)
    ticks_before = duel.state.ticks.copy()
    result = duel.decide(np.zeros((2, 6)))
    np.testing.assert_array_equal(result.ended, [0])
    np.testing.assert_array_equal(result.outcomes, [1])  # blue learner scored
    assert result.rewards[0] == pytest.approx(settings.goal_reward) and result.rewards[1] == 0.0
    assert spy.resets == [[True, False]]
    assert duel.state.ticks[0] == 0 and duel.state.ticks[1] == ticks_before[1] + 4
    assert spy.acts == 1  # one opponent decision (every 4 ticks) for both games


def test_set_opponent_swaps_who_acts_from_the_next_tick() -> None:
    first, second = Spy(), Spy()
    duel = Duel(3, SHORT, first, seed=0)
    duel.decide(np.zeros((3, 6)))
    acted = first.acts
    assert acted == SHORT.decision_ticks // Spy.decision_ticks
    duel.set_opponent(second)
    assert second.resets == [[True, True, True]]
    duel.decide(np.zeros((3, 6)))
    assert first.acts == acted and second.acts == SHORT.decision_ticks // Spy.decision_ticks


def test_set_settings_restarts_every_game_under_the_new_rules() -> None:
    duel = Duel(2, SHORT, InertBot(), seed=0)
    play(duel, 3)
    full = GameSettings()
    obs = duel.set_settings(full)
    assert duel.settings is full and obs.shape == (2, OBS_SIZE)
    assert np.all(duel.state.ticks == 0) and np.all(duel.ep_len == 0)
    assert np.all(obs[:, TIME_LEFT] == 1.0)
