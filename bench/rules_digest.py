"""Digests of what the arena's rules compute, to compare two versions of the code.

    .venv/bin/python bench/rules_digest.py                       # this checkout
    PYTHONPATH="$BEFORE" .venv/bin/python bench/rules_digest.py  # another version

Steps games through ``arena.rules.step`` in five game modes (3-D, planar, level 3-D,
planar with pitch and roll, 4 ticks a decision) and four batch sizes (1, 7, 64, 256),
1,500 ticks each, with kickoffs after every ended game. The small batches start crowded
(ships and orb close together, orbs near the end walls: collisions, bounces and goals
every few ticks) and change actions every 5 ticks, some NaN and out of range, every other
batch of them float32. Prints one SHA-256 per mode and batch size over every state field
and event after every tick, byte for byte (so even the sign of a zero counts): equal
lines mean the two versions compute the same bits. Runs in a few seconds.
"""

from __future__ import annotations

import hashlib

import numpy as np

from cosmic_curriculum.arena.rules import ACT_SIZE, ArenaState, new_state, reset_games, step
from cosmic_curriculum.arena.settings import GameSettings

MODES = {
    "3d": GameSettings(),
    "planar": GameSettings(allow_vertical=False, allow_pitch_roll=False),
    "level-3d": GameSettings(allow_pitch_roll=False),
    "flat-pitch-roll": GameSettings(allow_vertical=False),
    "3d-4-ticks": GameSettings(decision_ticks=4),
}
FIELDS = ("ship_pos", "ship_vel", "ship_fwd", "ship_up", "orb_pos", "orb_vel", "ticks")


def crowded(n: int, rng: np.random.Generator, s: GameSettings) -> ArenaState:
    """Ships and orb close together somewhere along the arena, moving fast, ships turned
    every which way (level when the settings say so)."""
    state = new_state(n, s, rng)
    centre = rng.uniform(-17.0, 17.0, size=(n, 1, 3)) * np.array([1.0, 0.4, 0.5])
    state.ship_pos[:] = np.clip(centre + rng.normal(scale=1.5, size=(n, 2, 3)), -4.5, 4.5)
    state.ship_pos[..., 0] = np.clip(centre[..., 0] + rng.normal(size=(n, 2)), -18.5, 18.5)
    state.orb_pos[:] = state.ship_pos.mean(axis=1) + rng.normal(scale=1.0, size=(n, 3))
    state.ship_vel[:] = rng.normal(scale=6.0, size=(n, 2, 3))
    state.orb_vel[:] = rng.normal(scale=8.0, size=(n, 3))
    if s.allow_pitch_roll:
        f = rng.normal(size=(n, 2, 3))
        f /= np.sqrt((f * f).sum(axis=-1, keepdims=True))
        u = rng.normal(size=(n, 2, 3))
        u -= (u * f).sum(axis=-1, keepdims=True) * f
        u /= np.sqrt((u * u).sum(axis=-1, keepdims=True))
        state.ship_fwd[:], state.ship_up[:] = f, u
    else:
        yaw = rng.uniform(-np.pi, np.pi, size=(n, 2))
        state.ship_fwd[:] = np.stack((np.cos(yaw), np.sin(yaw), np.zeros_like(yaw)), axis=-1)
    if not s.allow_vertical:
        for name in ("ship_pos", "ship_vel", "orb_pos", "orb_vel"):
            getattr(state, name)[..., 2] = 0.0
    return state


def digest(s: GameSettings, n: int, crowd: bool) -> str:
    rng = np.random.default_rng(7)
    state = crowded(n, rng, s) if crowd else new_state(n, s, rng)
    every = 5 if crowd else s.decision_ticks
    out = hashlib.sha256()
    actions: np.ndarray = np.zeros((n, 2, ACT_SIZE))
    for t in range(1500):
        if t % every == 0:
            actions = rng.uniform(-1.3, 1.3, size=(n, 2, ACT_SIZE))
            if crowd:
                actions[0, 0, 3] = np.nan
                if t % (2 * every):
                    actions = actions.astype(np.float32)
        state, ev = step(state, actions, s, rng)
        for name in FIELDS:
            out.update(getattr(state, name).tobytes())
        for mask in (ev.blue_goal, ev.orange_goal, ev.timeout, ev.done):
            out.update(mask.tobytes())
        reset_games(state, ev.done, s, rng)
    return out.hexdigest()[:16]


def main() -> None:
    for mode, settings in MODES.items():
        for n, crowd in ((1, False), (7, True), (64, True), (256, False)):
            print(
                f"{mode:16s} {n:4d} games {'crowded' if crowd else 'kickoff':8s} "
                f"{digest(settings, n, crowd)}",
                flush=True,
            )


if __name__ == "__main__":
    main()
