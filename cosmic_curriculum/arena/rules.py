"""The rules of Cosmic Clash: batched rigid-body-lite physics on numpy arrays.

Every array has a leading batch axis ``n`` (one entry per game); ships have a second axis
of size 2 (index 0 = blue, 1 = orange). One call of :func:`step` advances every game by
one physics tick; the tick itself is one compiled loop over the games
(``arena.physics``), so there is no Python loop over games anywhere.

World frame: x along the arena (blue attacks +x, orange attacks -x), y across, z up.
Ship body frame: forward ``f``, left ``l = u x f``, up ``u`` (right-handed, x-y-z).

Actions, each in [-1, 1] and in the ship's own frame (``ACT_SIZE = 6``):

====  ========  ===========================================================
idx   name      effect
====  ========  ===========================================================
0     thrust    forward acceleration ``ship_thrust`` (reverse: x ``ship_reverse_factor``)
1     strafe    acceleration toward the ship's left (``ship_strafe``)
2     lift      acceleration toward the ship's up (``ship_strafe``; 0 when planar)
3     yaw       turn rate about up, positive turns left (``yaw_rate`` rad/s)
4     pitch     turn rate about left, positive raises the nose (0 when level)
5     roll      turn rate about forward, positive raises the left wing (0 when level)
====  ========  ===========================================================

Per tick: turn (exact rotations; rounding drift is ~1e-15 a tick), accelerate, drag (exponential
decay), move; then ship-ship and ship-orb sphere collisions (impulses with
restitution, computed from the same pre-collision velocities for both ships so the rules
are exactly symmetric between sides), wall bounces with restitution, and goal detection:
the orb scores when its centre crosses an end wall's plane inside the goal mouth
(``|y| < goal_half_width`` and ``|z| < goal_half_height``); outside the mouth the end wall
bounces it back as soon as its surface touches. Ships cannot enter goal mouths. Finally
speeds are capped (``ship_max_speed``, ``orb_max_speed``).

``allow_vertical = False`` keeps every position and velocity at z = 0 (lift and any
vertical component of thrust are dropped); ``allow_pitch_roll = False`` ignores pitch and
roll so ships stay level (yaw only).

:func:`step` updates the state in place (speed matters at thousands of games) and returns
it; use :meth:`ArenaState.copy` when the previous state is needed. What it derives from the
actions alone (clipping, thrust, turn matrices) is kept while the same actions come back
(``arena.turning``): bots hold an action for a whole decision. The rest of the tick runs
in ``arena.physics``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.arena.turning import held

ACT_SIZE = 6
F64 = NDArray[np.float64]
BoolArr = NDArray[np.bool_]


@dataclass
class ArenaState:
    """All games' state; every field has the batch axis first."""

    ship_pos: F64  # (n, 2, 3)
    ship_vel: F64  # (n, 2, 3)
    ship_fwd: F64  # (n, 2, 3) unit forward vector
    ship_up: F64  # (n, 2, 3) unit up vector, orthogonal to forward
    orb_pos: F64  # (n, 3)
    orb_vel: F64  # (n, 3)
    ticks: NDArray[np.int64]  # (n,) physics ticks since kickoff

    @property
    def n(self) -> int:
        return int(self.ticks.shape[0])

    def copy(self) -> ArenaState:
        return ArenaState(**{f.name: getattr(self, f.name).copy() for f in fields(self)})

    def take(self, index: Any) -> ArenaState:
        """A new state holding only the games selected by ``index`` (mask or indices)."""
        return ArenaState(**{f.name: getattr(self, f.name)[index].copy() for f in fields(self)})

    def put(self, index: Any, other: ArenaState) -> None:
        """Overwrite the games selected by ``index`` with ``other``'s games (in order)."""
        for f in fields(self):
            getattr(self, f.name)[index] = getattr(other, f.name)

    def ship_left(self) -> F64:
        return cross(self.ship_up, self.ship_fwd)


@dataclass
class Events:
    """What happened during one tick, per game. ``blue_goal``: blue scored (the orb entered
    orange's goal at +x); ``orange_goal``: orange scored; ``timeout``: the time limit ended
    the game as a draw; ``done`` is their union."""

    blue_goal: BoolArr
    orange_goal: BoolArr
    timeout: BoolArr
    done: BoolArr


def cross(a: F64, b: F64) -> F64:
    """Cross product over the last axis (faster than np.cross for small vectors)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack((a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0), axis=-1)


def dot(a: F64, b: F64) -> F64:
    """Dot product over the last axis (size 3); fewer numpy calls than the alternatives."""
    p = a * b
    return np.asarray(p[..., 0] + p[..., 1] + p[..., 2], dtype=np.float64)


def _xy(a: F64) -> NDArray[np.complex128] | None:
    """The x, y components of ``(..., 3)`` vectors as a writable complex view ``(...)``, or
    None when the memory layout does not allow it (then the real-valued path runs)."""
    try:
        return a[..., :2].view(np.complex128)[..., 0]
    except ValueError:
        return None


def norm(a: F64) -> F64:
    return np.sqrt(dot(a, a))


# --------------------------------------------------------------------------------------
# kickoff
# --------------------------------------------------------------------------------------


def kickoff_jitter(n: int, settings: GameSettings, rng: np.random.Generator) -> F64:
    """Random kickoff offsets ``(n, 3, 3)``: rows are blue ship, orange ship, orb; columns
    x, y, z. Drawn once per game so a caller can replay the same kickoff twice (paired
    evaluation). z offsets are zero in planar play."""
    j = settings.kickoff_jitter
    out = rng.uniform(-j, j, size=(n, 3, 3))
    out[:, 2, :] *= 0.5  # the orb moves less than the ships
    if not settings.allow_vertical:
        out[:, :, 2] = 0.0
    return out


def kickoff_state(jitter: F64, settings: GameSettings) -> ArenaState:
    """The kickoff state of ``len(jitter)`` games: ships level, blue at -x facing +x,
    orange at +x facing -x, the orb near the centre, everything at rest."""
    n = jitter.shape[0]
    kick_x = settings.kickoff_distance * settings.arena_half_length
    ship_pos = np.zeros((n, 2, 3))
    ship_pos[:, 0, 0] = -kick_x
    ship_pos[:, 1, 0] = kick_x
    ship_pos += jitter[:, 0:2, :]
    ship_fwd = np.zeros((n, 2, 3))
    ship_fwd[:, 0, 0] = 1.0
    ship_fwd[:, 1, 0] = -1.0
    ship_up = np.zeros((n, 2, 3))
    ship_up[:, :, 2] = 1.0
    return ArenaState(
        ship_pos=ship_pos,
        ship_vel=np.zeros((n, 2, 3)),
        ship_fwd=ship_fwd,
        ship_up=ship_up,
        orb_pos=jitter[:, 2, :].copy(),
        orb_vel=np.zeros((n, 3)),
        ticks=np.zeros(n, dtype=np.int64),
    )


def new_state(
    n: int, settings: GameSettings, rng: np.random.Generator, jitter: F64 | None = None
) -> ArenaState:
    """``n`` games at kickoff; ``jitter`` (from :func:`kickoff_jitter`) fixes the kickoffs."""
    if jitter is None:
        jitter = kickoff_jitter(n, settings, rng)
    if jitter.shape != (n, 3, 3):
        raise ValueError(f"jitter must have shape ({n}, 3, 3), got {jitter.shape}")
    return kickoff_state(jitter, settings)


def reset_games(
    state: ArenaState, mask: BoolArr, settings: GameSettings, rng: np.random.Generator
) -> None:
    """Put the games selected by ``mask`` back to a fresh (jittered) kickoff, in place."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return
    state.put(idx, kickoff_state(kickoff_jitter(idx.size, settings, rng), settings))


# --------------------------------------------------------------------------------------
# one physics tick
# --------------------------------------------------------------------------------------


class _Consts:
    """Per-settings constants, cached so the hot path does no attribute lookups or exps."""

    def __init__(self, s: GameSettings) -> None:
        # numba takes a third of a second to import: only what steps a game pays for it
        from cosmic_curriculum.arena import physics

        self.tick = physics.tick
        dt = s.tick
        inv_s, inv_o = 1.0 / s.ship_mass, 1.0 / s.orb_mass
        self.reverse_dv = s.ship_thrust * s.ship_reverse_factor * dt
        self.kernel = physics.pack(
            dt=dt,
            ship_decay=float(np.exp(-s.ship_drag * dt)),
            orb_decay=float(np.exp(-s.orb_drag * dt)),
            ss_dist=2.0 * s.ship_radius,
            ss_factor=0.5 * (1.0 + s.ship_restitution),
            so_dist=s.ship_radius + s.orb_radius,
            # impulse magnitude per unit approach speed, and how overlap is split
            so_impulse=(1.0 + s.orb_restitution) / (inv_s + inv_o),
            inv_ship=inv_s,
            inv_orb=inv_o,
            orb_share=inv_o / (inv_s + inv_o),
            wall_restitution=s.wall_restitution,
            goal_half_width=s.goal_half_width,
            goal_half_height=s.goal_half_height,
            ship_sq_cap=_square_limit(s.ship_max_speed),
            ship_max_speed=s.ship_max_speed,
            orb_sq_cap=_square_limit(s.orb_max_speed),
            orb_max_speed=s.orb_max_speed,
            half_length=s.arena_half_length,
            max_ticks=float(s.max_ticks),
            ship_lim_x=s.arena_half_length - s.ship_radius,
            ship_lim_y=s.arena_half_width - s.ship_radius,
            # in planar play the z limits are 0 and every z stays exactly 0
            ship_lim_z=s.arena_half_height - s.ship_radius if s.allow_vertical else 0.0,
            orb_lim_x=s.arena_half_length - s.orb_radius,
            orb_lim_y=s.arena_half_width - s.orb_radius,
            orb_lim_z=s.arena_half_height - s.orb_radius if s.allow_vertical else 0.0,
        )


def _square_limit(cap: float) -> float:
    """The largest ``x`` with ``sqrt(x) <= cap``: as sqrt is correctly rounded (so
    monotonic), ``x > limit`` exactly when ``sqrt(x) > cap``, and speeds need no sqrt
    until one is over its cap."""
    x = cap * cap
    while np.sqrt(np.nextafter(x, np.inf)) <= cap:
        x = float(np.nextafter(x, np.inf))
    while np.sqrt(x) > cap:
        x = float(np.nextafter(x, -np.inf))
    return x


_CONSTS: dict[GameSettings, _Consts] = {}
_LAST: list[tuple[GameSettings, _Consts]] = []  # hashing settings costs a microsecond


def _consts(settings: GameSettings) -> _Consts:
    if _LAST and _LAST[0][0] is settings:
        return _LAST[0][1]
    c = _CONSTS.get(settings)
    if c is None:
        if len(_CONSTS) > 64:
            _CONSTS.clear()
        c = _CONSTS[settings] = _Consts(settings)
    _LAST[:] = [(settings, c)]
    return c


def step(
    state: ArenaState, actions: NDArray[Any], settings: GameSettings, rng: np.random.Generator
) -> tuple[ArenaState, Events]:
    """Advance every game by one physics tick; ``actions`` is ``(n, 2, 6)`` (blue, orange)
    in each ship's own frame, clipped to [-1, 1] (NaN counts as 0). The physics is
    deterministic; ``rng`` is accepted for future stochastic rules and left untouched.
    Updates ``state`` in place and returns it with the tick's events."""
    del rng
    s = settings
    c = _consts(s)
    h = held(actions, s, c.reverse_dv)
    vel = state.ship_vel
    zf = zv = None
    if not s.allow_pitch_roll:
        zf, zv = _xy(state.ship_fwd), _xy(vel)
    if zf is not None and zv is not None:
        # level ships (up = +z): yaw is a rotation of forward in the x-y plane, and
        # forward/left thrust is forward * (thrust + i strafe) in complex form (numpy's
        # complex product, whose fused multiply-adds the compiled loop would not repeat)
        spin, thrust_xy = h.level()
        zf *= spin
        zv += zf * thrust_xy
        if s.allow_vertical:
            vel[..., 2] += h.lift
        turned, turn, push = True, _NO_TURN, _NO_PUSH
    else:
        turned, turn, push = False, h.turn(), h.push()
    n = state.n
    blue_goal, orange_goal = np.empty(n, dtype=bool), np.empty(n, dtype=bool)
    timeout, done = np.empty(n, dtype=bool), np.empty(n, dtype=bool)
    c.tick(
        state.ship_pos,
        vel,
        state.ship_fwd,
        state.ship_up,
        state.orb_pos,
        state.orb_vel,
        state.ticks,
        turned,
        turn,
        push,
        not s.allow_vertical,
        s.allow_vertical,
        c.kernel,
        blue_goal,
        orange_goal,
        timeout,
        done,
    )
    return state, Events(blue_goal, orange_goal, timeout, done)


_NO_TURN, _NO_PUSH = np.zeros((0, 2, 3, 3)), np.zeros((0, 2, 3))  # level ships: unused


def mirror_state(state: ArenaState) -> ArenaState:
    """The state seen after rotating the world 180 degrees about z and swapping the two
    ships' colours. Stepping the mirror with swapped actions gives the mirrored result."""
    flip = np.array([-1.0, -1.0, 1.0])
    return ArenaState(
        ship_pos=(state.ship_pos * flip)[:, ::-1].copy(),
        ship_vel=(state.ship_vel * flip)[:, ::-1].copy(),
        ship_fwd=(state.ship_fwd * flip)[:, ::-1].copy(),
        ship_up=(state.ship_up * flip)[:, ::-1].copy(),
        orb_pos=state.orb_pos * flip,
        orb_vel=state.orb_vel * flip,
        ticks=state.ticks.copy(),
    )
