"""Held actions: reusing what the rules derive from the same actions changes no bit; the
turn they hold is applied within rounding of the exact rotation."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from arena_helpers import FULL, PLANAR, crowded_state

from cosmic_curriculum.arena import turning
from cosmic_curriculum.arena.rules import ACT_SIZE, step
from cosmic_curriculum.arena.settings import GameSettings

FIELDS = ("ship_pos", "ship_vel", "ship_fwd", "ship_up", "orb_pos", "orb_vel")


@pytest.mark.parametrize(
    "settings",
    [FULL, PLANAR, GameSettings(allow_pitch_roll=False), GameSettings(allow_vertical=False)],
    ids=["3d", "planar", "3d-level", "flat-pitch-roll"],
)
def test_held_actions_give_the_same_bits_as_fresh_ones(settings: GameSettings) -> None:
    rng = np.random.default_rng(3)
    cached = crowded_state(64, rng, settings)
    fresh = cached.copy()
    actions = rng.uniform(-1.2, 1.2, size=(64, 2, ACT_SIZE))
    actions[0, 1, 4] = np.nan
    for t in range(120):
        if t % 16 == 0:
            actions = rng.uniform(-1.2, 1.2, size=(64, 2, ACT_SIZE))
        cached, _ = step(cached, actions, settings, rng)
        turning._HELD.clear()  # nothing held: everything derived afresh this tick
        fresh, _ = step(fresh, actions.copy(), settings, rng)
    for name in FIELDS:
        assert getattr(cached, name).tobytes() == getattr(fresh, name).tobytes(), name


def test_actions_changed_in_place_are_not_mistaken_for_held_ones() -> None:
    # callers reuse one actions array and overwrite parts of it between ticks
    rng = np.random.default_rng(4)
    a, b = crowded_state(8, rng), crowded_state(8, np.random.default_rng(4))
    shared = np.zeros((8, 2, ACT_SIZE))
    for t in range(40):
        shared[:, t % 2] = rng.uniform(-1, 1, size=(8, ACT_SIZE))
        a, _ = step(a, shared, FULL, rng)  # the previous tick's actions are still held
        turning._HELD.clear()
        b, _ = step(b, shared.copy(), FULL, rng)
    for name in FIELDS:
        assert getattr(a, name).tobytes() == getattr(b, name).tobytes(), name
    # the same bytes in another dtype or shape are other actions
    h64 = turning.held(np.zeros((4, 2, ACT_SIZE)), FULL, 0.1)
    assert turning.held(np.zeros((4, 2, ACT_SIZE), dtype=np.float32), FULL, 0.1) is not h64
    assert turning.held(np.zeros((2, 4, ACT_SIZE)), FULL, 0.1) is not h64
    assert turning.held(np.zeros((4, 2, ACT_SIZE)), FULL, 0.1) is h64


def test_the_turn_is_within_rounding_of_the_exact_rotation() -> None:
    # Each new axis component is three products and two sums, rounded five times (no fused
    # multiply-add): within the dot product's error bound (3 products: 1.5 eps of the sum
    # of their magnitudes) of the exact rotation of the same float inputs, in rationals.
    rng = np.random.default_rng(5)
    state = crowded_state(16, rng)
    for t in range(48):  # turn the ships every which way first
        if t % 16 == 0:
            actions = rng.uniform(-1.0, 1.0, size=(16, 2, ACT_SIZE))
        state, _ = step(state, actions, FULL, rng)
    f, u = state.ship_fwd.copy(), state.ship_up.copy()
    left = np.stack(
        [
            u[..., (k + 1) % 3] * f[..., (k + 2) % 3] - u[..., (k + 2) % 3] * f[..., (k + 1) % 3]
            for k in range(3)
        ],
        axis=-1,
    )
    actions = rng.uniform(-1.0, 1.0, size=(16, 2, ACT_SIZE))
    state, _ = step(state, actions, FULL, rng)
    m = turning._HELD[0].turn()  # the matrices the step just used
    eps = np.finfo(np.float64).eps
    for r, got in ((0, state.ship_fwd), (2, state.ship_up)):
        for index in np.ndindex(16, 2, 3):
            ship = index[:2]
            axes = (f[index], left[index], u[index])
            terms = [Fraction(m[(*ship, r, c)]) * Fraction(axes[c]) for c in range(3)]
            exact = sum(terms, Fraction(0))
            bound = 1.5 * eps * float(sum(abs(x) for x in terms))
            assert abs(float(Fraction(got[index]) - exact)) <= bound, (r, index)
