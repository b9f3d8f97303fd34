"""arena.gym_env: one game as a gymnasium.Env (API check, spaces, rewards and terminal
steps, sides, reproducible seeds)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from arena_helpers import PLANAR
from gymnasium.utils.env_checker import check_env

from cosmic_curriculum.arena.gym_env import ArenaEnv
from cosmic_curriculum.arena.observations import OBS_SIZE, TIME_LEFT
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots import RandomBot

# 2-second games of 8-tick decisions: a timeout after exactly 15 steps.
SHORT = PLANAR.model_copy(update={"time_limit": 2.0, "decision_ticks": 8})
STEPS = 15


def rollout(env: ArenaEnv, seed: int, steps: int = 40) -> list[tuple]:
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(0)
    out: list[tuple] = [(obs.copy(),)]
    for _ in range(steps):
        action = rng.uniform(-1, 1, ACT_SIZE).astype(np.float32)
        obs, reward, terminated, truncated, info = env.step(action)
        out.append((obs.copy(), reward, terminated, truncated, info))
        if terminated:
            obs, _ = env.reset()
            out.append((obs.copy(),))
    return out


@pytest.mark.parametrize("side", [0, 1, "alternate"])
def test_passes_the_gymnasium_env_checker(side: int | str) -> None:
    # the checker resets twice with one seed and expects the same episode: with the
    # default side="alternate" it used to get the other side the second time
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = ArenaEnv(SHORT, side=side, seed=0)  # type: ignore[arg-type]
        check_env(env, skip_render_check=True)


def test_spaces_and_defaults() -> None:
    env = ArenaEnv()
    assert env.observation_space.shape == (OBS_SIZE,) and env.action_space.shape == (ACT_SIZE,)
    for space in (env.observation_space, env.action_space):
        assert space.dtype == np.float32
        assert np.all(space.low == -1.0) and np.all(space.high == 1.0)
    assert env.settings == GameSettings()
    assert env.duel.opponent.kind == "inert"
    obs, info = env.reset(seed=0)
    assert info == {} and env.observation_space.contains(obs)


def test_a_timeout_terminates_as_a_draw_with_the_penalty() -> None:
    env = ArenaEnv(SHORT.model_copy(update={"draw_penalty": 0.5}), side=0, seed=0)
    env.reset(seed=1)
    still = np.zeros(ACT_SIZE, dtype=np.float32)
    for _ in range(STEPS - 1):
        obs, reward, terminated, truncated, info = env.step(still)
        assert (reward, terminated, truncated, info) == (0.0, False, False, {})
    obs, reward, terminated, truncated, info = env.step(still)
    assert terminated and not truncated  # the time limit is part of the game
    assert reward == pytest.approx(-0.5) and info == {"outcome": 0}
    assert obs[TIME_LEFT] == pytest.approx(-1.0)  # the terminal observation, not a kickoff


@pytest.mark.parametrize(("side", "sign"), [(0, 1), (1, -1)])
def test_a_goal_terminates_with_the_goal_reward_from_the_learners_side(
    side: int, sign: int
) -> None:
    settings = SHORT.model_copy(update={"goal_reward": 3.0})
    env = ArenaEnv(settings, side=side, seed=0)
    env.reset(seed=0)
    # the orb on orange's goal line moving in: blue scores
    env.duel.state.orb_pos[0] = (settings.arena_half_length - 1.0, 0.0, 0.0)
    env.duel.state.orb_vel[0] = (20.0, 0.0, 0.0)
    _, reward, terminated, truncated, info = env.step(np.zeros(ACT_SIZE, dtype=np.float32))
    assert terminated and not truncated
    assert reward == pytest.approx(3.0 * sign) and info == {"outcome": sign}


def side_after_reset(env: ArenaEnv, seed: int | None = None) -> int:
    env.reset(seed=seed)
    return int(env.duel.learner_side[0])


def test_a_fixed_side_stays_and_alternate_switches_at_every_reset() -> None:
    for side in (0, 1):
        env = ArenaEnv(SHORT, side=side)
        assert [side_after_reset(env, seed) for seed in (0, 1, None)] == [side] * 3
    env = ArenaEnv(SHORT, side="alternate")
    assert [side_after_reset(env) for _ in range(3)] == [0, 1, 0]
    assert [side_after_reset(env, seed) for seed in (0, 1, 2)] == [0, 1, 0]
    # unseeded resets keep switching; a seeded one replays its episode on its side
    first, _ = env.reset(seed=4)
    assert [side_after_reset(env) for _ in range(2)] == [1, 0]
    again, _ = env.reset(seed=4)
    assert int(env.duel.learner_side[0]) == 0
    np.testing.assert_array_equal(first, again)
    with pytest.raises(ValueError, match="side must be 0"):
        ArenaEnv(SHORT, side="blue")  # type: ignore[arg-type]


def test_reset_seeds_make_episodes_reproducible() -> None:
    def run(seed: int) -> list[tuple]:
        return rollout(ArenaEnv(SHORT, RandomBot(8), side=0, seed=123), seed)

    first, again, other = run(5), run(5), run(6)
    assert any(len(step) == 5 and step[2] for step in first)  # an episode ended and restarted
    assert len(first) == len(again)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:] == b[1:]
    assert not np.array_equal(first[0][0], other[0][0])  # another kickoff
