"""One physics tick of every game as one compiled loop (numba): the hot path of
``arena.rules.step``, which documents the rules and prepares the held actions.

Why compiled: a tick of 256 games is a few thousand floating-point operations, and as
numpy array operations it took about 40 calls of a few microseconds of overhead each, the
largest part of the rules' cost in training. Here each game is finished in registers, one
game after the other.

The loop does, per game, exactly the operations the array formulation did (the same
products and sums in the same order; no fused multiply-add, no reassociation: numba's
default, non-fast math), so results are the same bits, with one exception: a game that
does not collide in a tick where another game of the batch did is no longer added a
zero impulse, which could turn a -0.0 into +0.0. Nothing in the rules or observations
tells the two zeros apart.

The kernel is compiled on first use and cached next to this file (or in the user's
cache when that is read-only), so only the first process after an install compiles.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray

_OPTIONS: dict[str, Any] = {"nogil": True, "error_model": "numpy"}  # numpy's x/0, not Python's


def _compiled(fn: Callable[..., Any]) -> Any:
    """``fn`` compiled, its machine code cached on disk for the next process; compiled in
    every process instead when no cache directory is writable (numba would refuse)."""
    try:
        return njit(cache=True, **_OPTIONS)(fn)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return njit(**_OPTIONS)(fn)


# the constants tick() reads from its ``k`` array, in this order (built by pack)
CONSTANTS = (
    "dt",
    "ship_decay",
    "orb_decay",
    "ss_dist",
    "ss_factor",
    "so_dist",
    "so_impulse",
    "inv_ship",
    "inv_orb",
    "orb_share",
    "wall_restitution",
    "goal_half_width",
    "goal_half_height",
    "ship_sq_cap",
    "ship_max_speed",
    "orb_sq_cap",
    "orb_max_speed",
    "half_length",
    "max_ticks",
    "ship_lim_x",
    "ship_lim_y",
    "ship_lim_z",
    "orb_lim_x",
    "orb_lim_y",
    "orb_lim_z",
)


def pack(**values: float) -> NDArray[np.float64]:
    """The constants array of :func:`tick`: every name of ``CONSTANTS``, in its order."""
    if sorted(values) != sorted(CONSTANTS):
        missing, extra = set(CONSTANTS) - set(values), set(values) - set(CONSTANTS)
        raise ValueError(f"tick constants: missing {sorted(missing)}, unknown {sorted(extra)}")
    return np.array([values[name] for name in CONSTANTS], dtype=np.float64)


@njit(inline="always")  # inlined into tick's code: never compiled or cached on its own
def _comb(a: float, b: float, c: float, x: float, y: float, z: float) -> float:
    """``a x + b y + c z``, rounded after each product and each sum, left to right."""
    return a * x + b * y + c * z


def _tick(
    ship_pos: np.ndarray,
    ship_vel: np.ndarray,
    ship_fwd: np.ndarray,
    ship_up: np.ndarray,
    orb_pos: np.ndarray,
    orb_vel: np.ndarray,
    ticks: np.ndarray,
    turned: bool,
    turn: np.ndarray,
    push: np.ndarray,
    flat: bool,
    vertical: bool,
    k: np.ndarray,
    blue_goal: np.ndarray,
    orange_goal: np.ndarray,
    timeout: np.ndarray,
    done: np.ndarray,
) -> None:
    """Advance every game one tick in place and fill the event arrays.

    ``turned``: the caller has already turned the ships and added their thrust (level
    ships, in complex form). Otherwise ``turn`` ``(n, 2, 3, 3)`` holds per ship the matrix
    mapping the rows (forward, left, up) to the new ones, and ``push`` ``(n, 2, 3)`` the
    thrust, strafe and lift velocity changes along the new axes. ``flat``: drop the
    vertical part of the push. ``vertical``: the goal mouth has a height. ``k``: the
    constants, in the order of ``CONSTANTS`` (see :func:`pack`).
    """
    dt, ship_decay, orb_decay = k[0], k[1], k[2]
    ss_dist, ss_factor, so_dist, so_impulse = k[3], k[4], k[5], k[6]
    inv_ship, inv_orb, orb_share = k[7], k[8], k[9]
    wall_restitution, goal_half_width, goal_half_height = k[10], k[11], k[12]
    ship_sq_cap, ship_max_speed, orb_sq_cap, orb_max_speed = k[13], k[14], k[15], k[16]
    half_length, max_ticks = k[17], k[18]
    ship_lim = (k[19], k[20], k[21])
    orb_lim = (k[22], k[23], k[24])
    n = ship_pos.shape[0]
    nrm = np.empty((2, 3))
    dist = np.empty(2)
    jn = np.empty(2)
    over = np.empty(2)
    for g in range(n):
        pos, vel, op, ov = ship_pos[g], ship_vel[g], orb_pos[g], orb_vel[g]

        # --- turning and thrust -----------------------------------------------------------
        if not turned:
            for s in range(2):
                f0, f1, f2 = ship_fwd[g, s, 0], ship_fwd[g, s, 1], ship_fwd[g, s, 2]
                u0, u1, u2 = ship_up[g, s, 0], ship_up[g, s, 1], ship_up[g, s, 2]
                # left = up x forward
                l0, l1, l2 = u1 * f2 - u2 * f1, u2 * f0 - u0 * f2, u0 * f1 - u1 * f0
                m = turn[g, s]
                a0, a1, a2 = m[0, 0], m[0, 1], m[0, 2]
                b0, b1, b2 = m[1, 0], m[1, 1], m[1, 2]
                c0, c1, c2 = m[2, 0], m[2, 1], m[2, 2]
                nf0, nf1, nf2 = (
                    _comb(a0, a1, a2, f0, l0, u0),
                    _comb(a0, a1, a2, f1, l1, u1),
                    _comb(a0, a1, a2, f2, l2, u2),
                )
                nl0, nl1, nl2 = (
                    _comb(b0, b1, b2, f0, l0, u0),
                    _comb(b0, b1, b2, f1, l1, u1),
                    _comb(b0, b1, b2, f2, l2, u2),
                )
                nu0, nu1, nu2 = (
                    _comb(c0, c1, c2, f0, l0, u0),
                    _comb(c0, c1, c2, f1, l1, u1),
                    _comb(c0, c1, c2, f2, l2, u2),
                )
                ship_fwd[g, s, 0], ship_fwd[g, s, 1], ship_fwd[g, s, 2] = nf0, nf1, nf2
                ship_up[g, s, 0], ship_up[g, s, 1], ship_up[g, s, 2] = nu0, nu1, nu2
                t, st, li = push[g, s, 0], push[g, s, 1], push[g, s, 2]
                vel[s, 0] += _comb(t, st, li, nf0, nl0, nu0)
                vel[s, 1] += _comb(t, st, li, nf1, nl1, nu1)
                if not flat:
                    vel[s, 2] += _comb(t, st, li, nf2, nl2, nu2)
                else:  # the array formulation added a zeroed push: -0.0 becomes +0.0
                    vel[s, 2] += 0.0
        for s in range(2):
            for c in range(3):
                vel[s, c] *= ship_decay
                pos[s, c] += vel[s, c] * dt
        for c in range(3):
            ov[c] *= orb_decay
            op[c] += ov[c] * dt

        # --- ship-ship --------------------------------------------------------------------
        d0, d1, d2 = pos[1, 0] - pos[0, 0], pos[1, 1] - pos[0, 1], pos[1, 2] - pos[0, 2]
        dd = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        if dd < ss_dist:
            if dd < 1e-9:
                n0, n1, n2 = 1.0, 0.0, 0.0
            else:
                n0, n1, n2 = d0 / dd, d1 / dd, d2 / dd
            vn = (
                (vel[1, 0] - vel[0, 0]) * n0
                + (vel[1, 1] - vel[0, 1]) * n1
                + (vel[1, 2] - vel[0, 2]) * n2
            )
            a = -ss_factor * vn if vn < 0.0 else 0.0
            b = 0.5 * (ss_dist - dd)
            for c, nc in ((0, n0), (1, n1), (2, n2)):
                dv = a * nc
                sh = b * nc
                vel[0, c] -= dv
                vel[1, c] += dv
                pos[0, c] -= sh
                pos[1, c] += sh

        # --- ship-orb (both ships from the same pre-collision velocities) -----------------
        hits = 0
        for s in range(2):
            ds = math.sqrt(
                (op[0] - pos[s, 0]) * (op[0] - pos[s, 0])
                + (op[1] - pos[s, 1]) * (op[1] - pos[s, 1])
                + (op[2] - pos[s, 2]) * (op[2] - pos[s, 2])
            )
            dist[s] = ds
            if ds < so_dist:
                hits += 1
        if hits:
            for s in range(2):
                ds = dist[s]
                if ds < 1e-9:
                    nrm[s, 0], nrm[s, 1], nrm[s, 2] = 1.0, 0.0, 0.0
                else:
                    for c in range(3):
                        nrm[s, c] = (op[c] - pos[s, c]) / ds
            for s in range(2):
                vn = (
                    (ov[0] - vel[s, 0]) * nrm[s, 0]
                    + (ov[1] - vel[s, 1]) * nrm[s, 1]
                    + (ov[2] - vel[s, 2]) * nrm[s, 2]
                )
                hit = dist[s] < so_dist
                jn[s] = -so_impulse * vn if hit and vn < 0.0 else 0.0
                over[s] = so_dist - dist[s] if hit else 0.0
            for c in range(3):
                j0, j1 = jn[0] * nrm[0, c], jn[1] * nrm[1, c]
                o0, o1 = over[0] * nrm[0, c], over[1] * nrm[1, c]
                ov[c] += j0 * inv_orb + j1 * inv_orb
                vel[0, c] -= j0 * inv_ship
                vel[1, c] -= j1 * inv_ship
                op[c] += o0 * orb_share + o1 * orb_share
                pos[0, c] -= o0 * (1.0 - orb_share)
                pos[1, c] -= o1 * (1.0 - orb_share)

        # --- walls ------------------------------------------------------------------------
        for s in range(2):
            for c in range(3):
                lim = ship_lim[c]
                x = pos[s, c]
                if abs(x) > lim:
                    bounce = x * vel[s, c] > 0.0
                    pos[s, c] = lim if x > 0.0 else -lim
                    if bounce:
                        vel[s, c] *= -wall_restitution
        ax, ay, az = abs(op[0]), abs(op[1]), abs(op[2])
        in_mouth = False
        if ax > orb_lim[0]:
            in_mouth = ay < goal_half_width and (not vertical or az < goal_half_height)
        for c, ac in ((0, ax), (1, ay), (2, az)):
            lim = orb_lim[c]
            if ac > lim and not (c == 0 and in_mouth):
                x = op[c]
                bounce = x * ov[c] > 0.0
                op[c] = lim if x > 0.0 else -lim
                if bounce:
                    ov[c] *= -wall_restitution

        # speed caps last, so that collision impulses cannot exceed them either
        for s in range(2):
            sq = vel[s, 0] * vel[s, 0] + vel[s, 1] * vel[s, 1] + vel[s, 2] * vel[s, 2]
            if sq > ship_sq_cap:
                speed = math.sqrt(sq)
                if speed > ship_max_speed:
                    scale = ship_max_speed / max(speed, 1e-12)
                    for c in range(3):
                        vel[s, c] *= scale
        sq = ov[0] * ov[0] + ov[1] * ov[1] + ov[2] * ov[2]
        if sq > orb_sq_cap:
            speed = math.sqrt(sq)
            if speed > orb_max_speed:
                scale = orb_max_speed / max(speed, 1e-12)
                for c in range(3):
                    ov[c] *= scale

        # --- goals and time ---------------------------------------------------------------
        ticks[g] += 1
        blue = in_mouth and op[0] > half_length
        orange = in_mouth and op[0] < -half_length
        blue_goal[g], orange_goal[g] = blue, orange
        timeout[g] = ticks[g] >= max_ticks and not (blue or orange)
        done[g] = blue or orange or timeout[g]


def _checked(kernel: Any) -> Any:
    """``kernel``, loaded (or compiled) now for the arrays the rules pass. A damaged cache
    file (a disk error, a copy cut short) is not a reason to stop a curriculum: the kernel
    is compiled afresh and the cache rewritten, with a warning."""
    n = 0
    args = (
        *(np.zeros((n, 2, 3)) for _ in range(4)),
        np.zeros((n, 3)),
        np.zeros((n, 3)),
        np.zeros(n, dtype=np.int64),
        False,
        np.zeros((n, 2, 3, 3)),
        np.zeros((n, 2, 3)),
        False,
        True,
        np.zeros(len(CONSTANTS)),
        *(np.zeros(n, dtype=bool) for _ in range(4)),
    )
    try:
        kernel(*args)
        return kernel
    except Exception as exc:  # any failure to load from the cache
        damage = exc
    try:  # forget the damaged entries: compiled afresh, and cached again
        kernel._cache.flush()
        kernel(*args)
        how = "rebuilt its cache"
    except Exception:  # the cache cannot be repaired: do without it
        kernel = njit(**_OPTIONS)(kernel.py_func)
        kernel(*args)
        how = "compiled it without the cache (delete the package's __pycache__ to rebuild it)"
    warnings.warn(
        f"the compiled arena physics could not be loaded from numba's cache ({damage!r}); {how}",
        RuntimeWarning,
        stacklevel=2,
    )
    return kernel


tick = _checked(_compiled(_tick))
