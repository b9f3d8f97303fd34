"""Shared helpers of the arena tests: settings and random crowded states."""

from __future__ import annotations

import numpy as np

from cosmic_curriculum.arena.rules import ArenaState, new_state
from cosmic_curriculum.arena.settings import GameSettings

PLANAR = GameSettings(allow_vertical=False, allow_pitch_roll=False)
FULL = GameSettings()


def random_orientations(rng: np.random.Generator, shape: tuple[int, ...]):
    f = rng.normal(size=(*shape, 3))
    f /= np.linalg.norm(f, axis=-1, keepdims=True)
    u = rng.normal(size=(*shape, 3))
    u -= (u * f).sum(-1, keepdims=True) * f
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    return f, u


def crowded_state(n: int, rng: np.random.Generator, settings: GameSettings = FULL) -> ArenaState:
    """Random states with everything close together (lots of collisions) and some orbs
    next to the end walls (goals and bounces); level and planar when ``settings`` say so."""
    state = new_state(n, settings, rng)
    centre = rng.uniform(-17.0, 17.0, size=(n, 1, 3)) * np.array([1.0, 0.4, 0.5])
    state.ship_pos[:] = centre + rng.normal(scale=1.5, size=(n, 2, 3))
    state.orb_pos[:] = centre[:, 0] + rng.normal(scale=1.5, size=(n, 3))
    np.clip(
        state.ship_pos, -np.array([19.0, 9.0, 5.0]), np.array([19.0, 9.0, 5.0]), out=state.ship_pos
    )
    np.clip(
        state.orb_pos, -np.array([18.8, 8.8, 4.8]), np.array([18.8, 8.8, 4.8]), out=state.orb_pos
    )
    state.ship_vel[:] = rng.normal(scale=6.0, size=(n, 2, 3))
    state.orb_vel[:] = rng.normal(scale=8.0, size=(n, 3))
    state.ship_fwd[:], state.ship_up[:] = random_orientations(rng, (n, 2))
    if not settings.allow_pitch_roll:
        yaw = rng.uniform(-np.pi, np.pi, size=(n, 2))
        state.ship_fwd[:] = np.stack((np.cos(yaw), np.sin(yaw), np.zeros_like(yaw)), axis=-1)
        state.ship_up[:] = (0.0, 0.0, 1.0)
    if not settings.allow_vertical:
        for arr in (state.ship_pos, state.ship_vel, state.orb_pos, state.orb_vel):
            arr[..., 2] = 0.0
    return state
