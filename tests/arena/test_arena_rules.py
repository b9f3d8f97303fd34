"""Physics invariants, goal detection at the mouth edges, mirroring symmetry, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from arena_helpers import FULL, PLANAR, crowded_state

from cosmic_curriculum.arena.rules import (
    ACT_SIZE,
    ArenaState,
    _square_limit,
    kickoff_jitter,
    mirror_state,
    new_state,
    reset_games,
    step,
)
from cosmic_curriculum.arena.settings import GameSettings


def run_random(settings: GameSettings, n: int, ticks: int, seed: int = 0):
    """Play random actions (held for a few ticks) and yield the state after each tick."""
    rng = np.random.default_rng(seed)
    state = new_state(n, settings, rng)
    actions = rng.uniform(-1, 1, size=(n, 2, ACT_SIZE))
    for t in range(ticks):
        if t % 6 == 0:
            actions = rng.uniform(-1, 1, size=(n, 2, ACT_SIZE))
            # mostly full thrust so ships hit walls, each other and the orb hard
            actions[..., 0] = np.where(rng.random((n, 2)) < 0.7, 1.0, actions[..., 0])
        state, events = step(state, actions, settings, rng)
        yield state, events
        if events.done.any():
            reset_games(state, events.done, settings, rng)


@pytest.mark.parametrize("settings", [FULL, PLANAR, GameSettings(allow_pitch_roll=False)])
def test_bodies_stay_inside_and_speeds_are_bounded(settings: GameSettings) -> None:
    s = settings
    ship_lim = (
        np.array([s.arena_half_length, s.arena_half_width, s.arena_half_height]) - s.ship_radius
    )
    orb_lim = (
        np.array([s.arena_half_length, s.arena_half_width, s.arena_half_height]) - s.orb_radius
    )
    goals = 0
    for state, events in run_random(s, 128, 1500):
        assert np.all(np.abs(state.ship_pos) <= ship_lim + 1e-9)
        # the orb may poke into a goal mouth by at most one tick of travel (then it scores)
        assert np.all(np.abs(state.orb_pos[:, 1:]) <= orb_lim[1:] + 1e-9)
        assert np.all(np.abs(state.orb_pos[:, 0]) <= s.arena_half_length + s.orb_max_speed * s.tick)
        assert np.all(np.linalg.norm(state.ship_vel, axis=-1) <= s.ship_max_speed + 1e-9)
        assert np.all(np.linalg.norm(state.orb_vel, axis=-1) <= s.orb_max_speed + 1e-9)
        f, u = state.ship_fwd, state.ship_up
        assert np.allclose(np.linalg.norm(f, axis=-1), 1.0, atol=1e-9)
        assert np.allclose(np.linalg.norm(u, axis=-1), 1.0, atol=1e-9)
        assert np.allclose((f * u).sum(-1), 0.0, atol=1e-9)
        outside = np.abs(state.orb_pos[:, 0]) > orb_lim[0] + 1e-9
        # beyond the end-wall bounce line only inside the goal mouth
        assert np.all(np.abs(state.orb_pos[outside, 1]) < s.goal_half_width)
        goals += int((events.blue_goal | events.orange_goal).sum())
    assert goals > 0  # random full-thrust play does score now and then


def test_planar_mode_keeps_everything_at_z0() -> None:
    for state, _ in run_random(PLANAR, 64, 800, seed=1):
        assert np.all(state.ship_pos[..., 2] == 0.0)
        assert np.all(state.ship_vel[..., 2] == 0.0)
        assert np.all(state.orb_pos[:, 2] == 0.0)
        assert np.all(state.orb_vel[:, 2] == 0.0)


def test_level_mode_keeps_ships_level() -> None:
    settings = GameSettings(allow_pitch_roll=False)
    for state, _ in run_random(settings, 64, 800, seed=2):
        assert np.all(state.ship_fwd[..., 2] == 0.0)
        assert np.all(state.ship_up == np.array([0.0, 0.0, 1.0]))


def test_pitch_and_roll_turn_ships_when_allowed() -> None:
    rng = np.random.default_rng(0)
    state = new_state(1, FULL, rng)
    actions = np.zeros((1, 2, ACT_SIZE))
    actions[0, 0, 4] = 1.0  # blue pitches its nose up
    actions[0, 1, 5] = 1.0  # orange rolls
    for _ in range(10):
        state, _ = step(state, actions, FULL, rng)
    assert state.ship_fwd[0, 0, 2] > 0.3
    assert abs(state.ship_up[0, 1, 2]) < 0.95
    level = new_state(1, GameSettings(allow_pitch_roll=False), rng)
    for _ in range(10):
        level, _ = step(level, actions, GameSettings(allow_pitch_roll=False), rng)
    assert level.ship_fwd[0, 0, 2] == 0.0


def lone_orb(settings: GameSettings, y: float, z: float = 0.0, vx: float = 10.0) -> ArenaState:
    """One game: the orb near orange's end wall (+x) heading for it; ships far away."""
    state = new_state(1, settings, np.random.default_rng(0), jitter=np.zeros((1, 3, 3)))
    state.ship_pos[0, 0] = (-10.0, -6.0, 0.0)
    state.ship_pos[0, 1] = (-10.0, 6.0, 0.0)
    state.orb_pos[0] = (settings.arena_half_length - settings.orb_radius - 0.05, y, z)
    state.orb_vel[0] = (vx, 0.0, 0.0)
    return state


def roll(state: ArenaState, settings: GameSettings, ticks: int = 30):
    rng = np.random.default_rng(0)
    actions = np.zeros((state.n, 2, ACT_SIZE))
    for _ in range(ticks):
        state, events = step(state, actions, settings, rng)
        if events.done.any():
            return state, events
    return state, events


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_orb_just_inside_the_mouth_scores(sign: float) -> None:
    s = FULL
    _, events = roll(lone_orb(s, sign * (s.goal_half_width - 1e-3)), s)
    assert events.blue_goal[0] and not events.orange_goal[0] and events.done[0]


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_orb_just_outside_the_mouth_bounces(sign: float) -> None:
    s = FULL
    state, events = roll(lone_orb(s, sign * (s.goal_half_width + 1e-3)), s)
    assert not events.done.any()
    assert state.orb_vel[0, 0] < 0.0  # it came back off the end wall
    assert state.orb_pos[0, 0] <= s.arena_half_length - s.orb_radius + 1e-9


def test_goal_mouth_height_matters_in_3d_only() -> None:
    s = FULL
    _, events = roll(lone_orb(s, 0.0, z=s.goal_half_height - 1e-3), s)
    assert events.blue_goal[0]
    state, events = roll(lone_orb(s, 0.0, z=s.goal_half_height + 1e-3), s)
    assert not events.done.any() and state.orb_vel[0, 0] < 0.0


def test_orange_scores_at_blue_end() -> None:
    s = FULL
    state = lone_orb(s, 0.0)
    state.orb_pos[0, 0] *= -1.0
    state.orb_vel[0, 0] *= -1.0
    _, events = roll(state, s)
    assert events.orange_goal[0] and not events.blue_goal[0]


def test_time_limit_ends_in_a_draw() -> None:
    s = GameSettings(time_limit=1.0)
    rng = np.random.default_rng(0)
    state = new_state(4, s, rng)
    actions = np.zeros((4, 2, ACT_SIZE))
    for t in range(s.max_ticks):
        state, events = step(state, actions, s, rng)
        assert events.timeout.all() == (t == s.max_ticks - 1)
    assert events.done.all() and not events.blue_goal.any() and not events.orange_goal.any()


def test_ship_pushes_the_orb_and_ships_bounce_off_each_other() -> None:
    s = PLANAR
    rng = np.random.default_rng(0)
    state = new_state(1, s, rng, jitter=np.zeros((1, 3, 3)))
    state.ship_pos[0, 0] = (-3.0, 0.0, 0.0)
    state.ship_vel[0, 0] = (10.0, 0.0, 0.0)
    state, _ = roll(state, s, ticks=30)
    assert state.orb_vel[0, 0] > 5.0  # the orb got kicked toward +x
    state = new_state(1, s, rng, jitter=np.zeros((1, 3, 3)))
    state.orb_pos[0] = (0.0, 8.0, 0.0)
    state.ship_pos[0] = ((-1.5, 0.0, 0.0), (1.5, 0.0, 0.0))
    state.ship_vel[0] = ((5.0, 0.0, 0.0), (-5.0, 0.0, 0.0))
    state, _ = roll(state, s, ticks=20)
    assert state.ship_vel[0, 0, 0] < 0.0 < state.ship_vel[0, 1, 0]
    assert np.linalg.norm(state.ship_pos[0, 1] - state.ship_pos[0, 0]) >= 2 * s.ship_radius - 1e-9


@pytest.mark.parametrize(
    "settings",
    [FULL, PLANAR, GameSettings(allow_pitch_roll=False)],
    ids=["3d", "planar", "3d-level"],
)
def test_mirrored_state_with_swapped_sides_gives_the_mirrored_outcome(
    settings: GameSettings,
) -> None:
    rng = np.random.default_rng(5)
    n = 400
    state = crowded_state(n, rng, settings)
    mirrored = mirror_state(state)
    hits = 0
    goals = 0
    for _ in range(40):
        actions = rng.uniform(-1, 1, size=(n, 2, ACT_SIZE))
        before = state.copy()
        state, ev = step(state, actions, settings, rng)
        mirrored, mev = step(mirrored, actions[:, ::-1], settings, rng)
        expect = mirror_state(state)
        for name in ("ship_pos", "ship_vel", "ship_fwd", "ship_up", "orb_pos", "orb_vel"):
            np.testing.assert_allclose(getattr(mirrored, name), getattr(expect, name), atol=1e-9)
        np.testing.assert_array_equal(ev.blue_goal, mev.orange_goal)
        np.testing.assert_array_equal(ev.orange_goal, mev.blue_goal)
        hits += int((np.linalg.norm(state.orb_vel - before.orb_vel, axis=1) > 1.0).sum())
        goals += int(ev.done.sum())
    assert hits > 50  # collisions really happened, so the symmetry of impulses was tested
    assert goals > 0


def test_steps_are_deterministic_and_the_rng_is_untouched() -> None:
    def trace(seed: int) -> np.ndarray:
        return np.stack([s.orb_pos.copy() for s, _ in run_random(FULL, 32, 300, seed=seed)])

    np.testing.assert_array_equal(trace(3), trace(3))
    assert not np.array_equal(trace(3), trace(4))


def test_kickoffs_are_seeded_with_small_jitter_and_mirror_images() -> None:
    s = FULL
    a = new_state(50, s, np.random.default_rng(9))
    b = new_state(50, s, np.random.default_rng(9))
    np.testing.assert_array_equal(a.ship_pos, b.ship_pos)
    kick = s.kickoff_distance * s.arena_half_length
    assert np.all(np.abs(a.ship_pos[:, 0, 0] + kick) <= s.kickoff_jitter)
    assert np.all(np.abs(a.ship_pos[:, 1, 0] - kick) <= s.kickoff_jitter)
    assert np.all(np.abs(a.orb_pos) <= s.kickoff_jitter)
    assert np.all(a.ship_fwd[:, 0] == (1.0, 0.0, 0.0))
    assert np.all(a.ship_fwd[:, 1] == (-1.0, 0.0, 0.0))
    assert np.all(kickoff_jitter(20, PLANAR, np.random.default_rng(0))[..., 2] == 0.0)


def test_reset_games_touches_only_the_masked_games() -> None:
    rng = np.random.default_rng(0)
    state = crowded_state(6, rng)
    before = state.copy()
    mask = np.array([True, False, False, True, False, False])
    reset_games(state, mask, FULL, rng)
    np.testing.assert_array_equal(state.orb_pos[~mask], before.orb_pos[~mask])
    assert np.all(state.ticks[mask] == 0)
    assert np.all(np.abs(state.orb_pos[mask]) <= FULL.kickoff_jitter)
    with pytest.raises(ValueError, match="jitter must have shape"):
        new_state(3, FULL, rng, jitter=np.zeros((2, 3, 3)))


def test_free_rotation_keeps_the_axes_orthonormal_for_long() -> None:
    # no re-orthonormalisation happens per tick: rounding drift (~2e-15 a tick) must stay
    # negligible over many more ticks than a match lasts
    settings = GameSettings(time_limit=3600.0)
    rng = np.random.default_rng(0)
    state = new_state(4, settings, rng)
    for t in range(6000):
        if t % 50 == 0:
            actions = rng.uniform(-1, 1, size=(4, 2, ACT_SIZE))
            actions[..., :3] = 0.0  # spin in place
        state, _ = step(state, actions, settings, rng)
    f, u = state.ship_fwd, state.ship_up
    np.testing.assert_allclose(np.linalg.norm(f, axis=-1), 1.0, atol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(u, axis=-1), 1.0, atol=1e-10)
    np.testing.assert_allclose((f * u).sum(-1), 0.0, atol=1e-10)


def test_nan_and_out_of_range_actions_are_tamed() -> None:
    rng = np.random.default_rng(0)
    a, b = new_state(2, FULL, rng), new_state(2, FULL, np.random.default_rng(0))
    wild = np.full((2, 2, ACT_SIZE), np.nan)
    wild[1] = 50.0
    tame = np.zeros((2, 2, ACT_SIZE))
    tame[1] = 1.0
    for _ in range(30):
        a, _ = step(a, wild, FULL, rng)
        b, _ = step(b, tame, FULL, rng)
    assert np.all(np.isfinite(a.ship_pos))
    np.testing.assert_array_equal(a.ship_pos, b.ship_pos)


@pytest.mark.parametrize("cap", [14.0, 30.0, 0.1, 3.0, 1e3, 7.3, float(np.pi)])
def test_speed_caps_compare_squares_exactly_as_speeds(cap: float) -> None:
    # the rules test speed**2 against this limit to skip the sqrt: it must be the exact
    # boundary of sqrt(x) > cap
    limit = _square_limit(cap)
    assert np.sqrt(limit) <= cap < np.sqrt(np.nextafter(limit, np.inf))
    near = limit + np.arange(-50, 51) * np.spacing(limit)
    np.testing.assert_array_equal(near > limit, np.sqrt(near) > cap)
