"""Ego-centric, mirrored observations of Cosmic Clash.

``observe(state, settings)`` returns ``float32 (n, 2, OBS_SIZE)``: index 0 of axis 1 is
blue's view, index 1 orange's. Each side sees the world in its *attack frame*: identity
for blue, a 180-degree rotation about the vertical axis for orange (``x -> -x``,
``y -> -y``, ``z -> z``; a proper rotation, so handedness is kept and actions, which are
in the ship's own frame, need no mirroring). In its attack frame every bot attacks +x, so
one bot can play either colour. Every value is scaled into [-1, 1] and clipped there.

Fields (named slices below; "body" = the observer's own frame: forward, left, up):

=========  =======  ==================================================================
slice      indices  meaning (scale)
=========  =======  ==================================================================
OWN_POS    0-2      own position, attack frame (/ arena half extents per axis)
OWN_VEL    3-5      own velocity, attack frame (/ ship_max_speed)
OWN_FWD    6-8      own forward unit vector, attack frame
OWN_UP     9-11     own up unit vector, attack frame
ORB_POS    12-14    orb position, attack frame (/ half extents)
ORB_VEL    15-17    orb velocity, attack frame (/ orb_max_speed)
OPP_POS    18-20    opponent position, attack frame (/ half extents)
OPP_VEL    21-23    opponent velocity, attack frame (/ ship_max_speed)
OPP_FWD    24-26    opponent forward unit vector, attack frame
ORB_REL    27-29    orb minus own position, body frame (/ arena diagonal)
ORB_REL_V  30-32    orb minus own velocity, body frame (/ (orb + ship max speed))
OPP_REL    33-35    opponent minus own position, body frame (/ arena diagonal)
GOAL_REL   36-38    centre of the goal to attack minus own position, body (/ diagonal)
HOME_REL   39-41    centre of the goal to defend minus own position, body (/ diagonal)
TIME_LEFT  42       share of the time limit left, mapped to [-1, 1] (1 at kickoff)
=========  =======  ==================================================================

Body-frame fields are invariant under the mirroring (world and ship rotate together);
they make steering easy to learn (``atan2(ORB_REL[1], ORB_REL[0])`` is the bearing of the
orb, positive to the left).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.arena.rules import ACT_SIZE, ArenaState, cross
from cosmic_curriculum.arena.settings import GameSettings

OWN_POS = slice(0, 3)
OWN_VEL = slice(3, 6)
OWN_FWD = slice(6, 9)
OWN_UP = slice(9, 12)
ORB_POS = slice(12, 15)
ORB_VEL = slice(15, 18)
OPP_POS = slice(18, 21)
OPP_VEL = slice(21, 24)
OPP_FWD = slice(24, 27)
ORB_REL = slice(27, 30)
ORB_REL_V = slice(30, 33)
OPP_REL = slice(33, 36)
GOAL_REL = slice(36, 39)
HOME_REL = slice(39, 42)
TIME_LEFT = 42
OBS_SIZE = 43

FIELDS: dict[str, slice | int] = {
    "own_pos": OWN_POS,
    "own_vel": OWN_VEL,
    "own_fwd": OWN_FWD,
    "own_up": OWN_UP,
    "orb_pos": ORB_POS,
    "orb_vel": ORB_VEL,
    "opp_pos": OPP_POS,
    "opp_vel": OPP_VEL,
    "opp_fwd": OPP_FWD,
    "orb_rel": ORB_REL,
    "orb_rel_v": ORB_REL_V,
    "opp_rel": OPP_REL,
    "goal_rel": GOAL_REL,
    "home_rel": HOME_REL,
    "time_left": TIME_LEFT,
}

__all__ = ["ACT_SIZE", "FIELDS", "OBS_SIZE", "observe"]

# attack-frame rotation per side: identity for blue, 180 degrees about z for orange
_FLIP = np.array([[1.0, 1.0, 1.0], [-1.0, -1.0, 1.0]])


def _scales(settings: GameSettings) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-side multipliers of the attack-frame block (indices 0-26) and of the body-frame
    block (27-41), cached per settings."""
    cached = _SCALE_CACHE.get(settings)
    if cached is not None:
        return cached
    s = settings
    half = np.array([s.arena_half_length, s.arena_half_width, s.arena_half_height])
    per_vec = [
        1.0 / half,  # own pos
        np.full(3, 1.0 / s.ship_max_speed),  # own vel
        np.ones(3),  # own fwd
        np.ones(3),  # own up
        1.0 / half,  # orb pos
        np.full(3, 1.0 / s.orb_max_speed),  # orb vel
        1.0 / half,  # opp pos
        np.full(3, 1.0 / s.ship_max_speed),  # opp vel
        np.ones(3),  # opp fwd
    ]
    attack = np.stack([np.concatenate([v * _FLIP[side] for v in per_vec]) for side in (0, 1)])
    diag = s.arena_diagonal
    rel_speed = s.orb_max_speed + s.ship_max_speed
    body = np.array([1.0 / diag, 1.0 / rel_speed, 1.0 / diag, 1.0 / diag, 1.0 / diag])
    if len(_SCALE_CACHE) > 64:
        _SCALE_CACHE.clear()
    _SCALE_CACHE[settings] = (attack, body)
    return attack, body


_SCALE_CACHE: dict[GameSettings, tuple[NDArray[np.float64], NDArray[np.float64]]] = {}


def observe(state: ArenaState, settings: GameSettings) -> NDArray[np.float32]:
    """Both sides' observations, ``float32 (n, 2, OBS_SIZE)`` (see the module docstring)."""
    s = settings
    n = state.n
    attack_scale, body_scale = _scales(s)
    out = np.empty((n, 2, OBS_SIZE), dtype=np.float64)

    pos, vel = state.ship_pos, state.ship_vel
    f, u = state.ship_fwd, state.ship_up
    orb_p = np.broadcast_to(state.orb_pos[:, None, :], (n, 2, 3))
    orb_v = np.broadcast_to(state.orb_vel[:, None, :], (n, 2, 3))
    opp_pos = pos[:, ::-1]

    # attack frame: nine 3-vectors per side, one concatenate and one multiply
    np.concatenate(
        (pos, vel, f, u, orb_p, orb_v, opp_pos, vel[:, ::-1], f[:, ::-1]), axis=2, out=out[..., :27]
    )
    out[..., :27] *= attack_scale

    # body frame: five world vectors per side, rotated by one batched matmul
    goal = np.zeros((2, 3))
    goal[0, 0], goal[1, 0] = s.arena_half_length, -s.arena_half_length
    world = np.stack(
        (orb_p - pos, orb_v - vel, opp_pos - pos, goal - pos, goal[::-1] - pos), axis=2
    )
    axes = np.stack((f, cross(u, f), u), axis=3)  # columns: forward, left, up
    body = np.matmul(world, axes)  # (n, 2, 5, 3)
    body *= body_scale[:, None]
    out[..., 27:42] = body.reshape(n, 2, 15)

    left_share = 1.0 - state.ticks / s.max_ticks
    out[..., TIME_LEFT] = (2.0 * left_share - 1.0)[:, None]
    np.clip(out, -1.0, 1.0, out=out)
    return out.astype(np.float32)
