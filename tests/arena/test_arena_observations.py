"""Observations: shape, range, the mirroring between sides, and a few fields by meaning."""

from __future__ import annotations

import numpy as np
from arena_helpers import FULL, crowded_state

from cosmic_curriculum.arena.observations import (
    FIELDS,
    GOAL_REL,
    HOME_REL,
    OBS_SIZE,
    ORB_POS,
    ORB_REL,
    OWN_FWD,
    OWN_POS,
    TIME_LEFT,
    observe,
)
from cosmic_curriculum.arena.rules import mirror_state, new_state, step
from cosmic_curriculum.arena.settings import GameSettings


def test_fields_cover_the_vector_exactly_once() -> None:
    covered = np.zeros(OBS_SIZE, dtype=int)
    for part in FIELDS.values():
        covered[part] += 1
    assert np.all(covered == 1)


def test_shape_dtype_and_range() -> None:
    state = crowded_state(300, np.random.default_rng(1))
    obs = observe(state, FULL)
    assert obs.shape == (300, 2, OBS_SIZE) and obs.dtype == np.float32
    assert np.all(np.abs(obs) <= 1.0)


def test_each_side_sees_itself_attacking_plus_x() -> None:
    state = new_state(8, FULL, np.random.default_rng(0))
    obs = observe(state, FULL)
    # at kickoff both ships face the goal they attack, from the same distance
    np.testing.assert_allclose(obs[:, :, OWN_FWD], np.tile([1.0, 0.0, 0.0], (8, 2, 1)))
    assert np.all(obs[:, :, OWN_POS][..., 0] < -0.4)
    assert np.all(obs[:, :, GOAL_REL][..., 0] > 0.3)  # the goal to attack is straight ahead
    assert np.all(obs[:, :, HOME_REL][..., 0] < 0.0)  # home is behind
    assert np.all(obs[:, :, TIME_LEFT] == 1.0)


def test_blue_in_a_state_sees_what_orange_sees_in_the_mirrored_state() -> None:
    state = crowded_state(200, np.random.default_rng(2))
    state.ticks[:] = np.random.default_rng(3).integers(0, FULL.max_ticks, size=200)
    obs = observe(state, FULL)
    mirrored = observe(mirror_state(state), FULL)
    np.testing.assert_allclose(obs[:, 0], mirrored[:, 1], atol=1e-6)
    np.testing.assert_allclose(obs[:, 1], mirrored[:, 0], atol=1e-6)


def test_body_frame_bearing_of_the_orb() -> None:
    s = GameSettings(allow_vertical=False, allow_pitch_roll=False)
    state = new_state(1, s, np.random.default_rng(0), jitter=np.zeros((1, 3, 3)))
    state.ship_pos[0, 0] = (0.0, -5.0, 0.0)
    state.ship_fwd[0, 0] = (0.0, 1.0, 0.0)  # blue faces +y; the orb at the origin is ahead
    state.ship_pos[0, 1] = (10.0, -5.0, 0.0)
    obs = observe(state, s)
    rel = obs[0, 0, ORB_REL]
    assert rel[0] > 0.0 and abs(rel[1]) < 1e-6
    np.testing.assert_allclose(rel[0], 5.0 / s.arena_diagonal, rtol=1e-6)
    # orange sees the orb at the mirrored place in its attack frame
    np.testing.assert_allclose(obs[0, 1, ORB_POS], -obs[0, 0, ORB_POS] * [1, 1, -1], atol=1e-7)


def test_time_left_counts_down() -> None:
    s = GameSettings(time_limit=2.0)
    rng = np.random.default_rng(0)
    state = new_state(2, s, rng)
    for _ in range(s.max_ticks // 2):
        state, _ = step(state, np.zeros((2, 2, 6)), s, rng)
    np.testing.assert_allclose(observe(state, s)[:, :, TIME_LEFT], 0.0, atol=1e-6)
