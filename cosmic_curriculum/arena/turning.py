"""Held actions: what the rules (``arena.rules``) derive from one actions array, and the
free rotation of 3-D ships.

A bot holds its action for a whole decision (``decision_ticks`` physics ticks), so the
same actions come back tick after tick. Clipping, thrust, cos/sin and the per-ship turn
matrices depend on nothing else, and recomputing them every tick was most of the 3-D
rules' time: :func:`held` keeps them while the actions' bytes stay the same. A held value
is computed by the same operations as a fresh one, so holding changes no bit.

The turn itself is elementwise (:func:`turn_and_thrust`), not a batched matmul: numpy's
matmul loops over the ships' 3x3 matrices one by one and took a third of the 3-D rules.
Its results differ from the matmul's in the last bit now and then (BLAS fuses multiply and
add); both are within an ulp of the exact rotation, which the tests check against exact
rational arithmetic.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.arena.settings import GameSettings

F64 = NDArray[np.float64]


class Held:
    """What the rules derive from one ``actions`` array, kept while the same actions come
    back: a bot holds its action for a whole decision (``decision_ticks`` ticks), and
    clipping, thrust, cos/sin and the turn matrices were most of the 3-D rules' time when
    recomputed every tick. Also holds the turning path's scratch buffers."""

    def __init__(
        self, raw: bytes, dtype: np.dtype[Any], act: F64, s: GameSettings, reverse_dv: float
    ) -> None:
        self.raw, self.dtype = raw, dtype  # equal bytes and dtype give equal derived values
        dt = s.tick
        thrust = act[..., 0]
        self.thrust = thrust * np.where(thrust > 0.0, s.ship_thrust * dt, reverse_dv)
        self.strafe = act[..., 1] * (s.ship_strafe * dt)
        self.lift = act[..., 2] * (s.ship_strafe * dt)
        self.yaw = act[..., 3] * (s.yaw_rate * dt)
        self.act = act
        self.s = s
        self._level: tuple[NDArray[np.complex128], NDArray[np.complex128]] | None = None
        self._turn: F64 | None = None

    def level(self) -> tuple[NDArray[np.complex128], NDArray[np.complex128]]:
        """Yaw as a unit complex factor, and forward/left thrust as ``thrust + i strafe``."""
        if self._level is None:
            self._level = (np.exp(1j * self.yaw), self.thrust + 1j * self.strafe)
        return self._level

    def turn(self) -> F64:
        """Per ship, yaw then pitch then roll about its own axes as one 3x3 matrix that
        maps the rows (forward, left, up) to the new ones; plus scratch buffers."""
        if self._turn is None:
            s, act, yaw = self.s, self.act, self.yaw
            dt = s.tick
            if s.allow_pitch_roll:
                pitch = act[..., 4] * (s.pitch_rate * dt)
                roll = act[..., 5] * (s.roll_rate * dt)
            else:  # level ships whose arrays cannot take the complex fast path
                pitch = roll = np.zeros_like(yaw)
            cy, sy = np.cos(yaw), np.sin(yaw)
            cp, sp = np.cos(pitch), np.sin(pitch)
            cr, sr = np.cos(roll), np.sin(roll)
            spcy, spsy = sp * cy, sp * sy
            m = np.empty((*yaw.shape, 3, 3))
            m[..., 0, 0], m[..., 0, 1], m[..., 0, 2] = cp * cy, cp * sy, sp
            m[..., 1, 0] = -cr * sy - sr * spcy
            m[..., 1, 1] = cr * cy - sr * spsy
            m[..., 1, 2] = sr * cp
            m[..., 2, 0] = sr * sy - cr * spcy
            m[..., 2, 1] = -sr * cy - cr * spsy
            m[..., 2, 2] = cr * cp
            lift = self.lift if s.allow_vertical else np.zeros_like(yaw)
            # thrust, strafe and lift, each repeated over x y z: contiguous operands make
            # whole-array loops (an (n, 2, 3) view with a stride runs 2n loops of 3)
            shape = (*yaw.shape, 3)
            self.push = [
                np.repeat(p[..., None], 3, axis=-1) for p in (self.thrust, self.strafe, lift)
            ]
            # axes before and after the turn, stored axis-major: (3, n, 2, 3) with rows
            # forward, left, up, so each axis is one contiguous array
            self.axes = np.empty((3, *shape))
            self.turned = np.empty((3, *shape))
            self.scratch = (np.empty(shape), np.empty(shape))
            # each entry of the turn repeated over x y z, contiguous like the axes: the
            # turn is then 15 whole-array ufunc loops instead of a batched matmul, which
            # loops over the ships' 3x3 matrices one by one (a third of the 3-D rules)
            self.entries = [
                [np.repeat(m[..., r, c, None], 3, axis=-1) for c in range(3)] for r in range(3)
            ]
            self._turn = m
        return self._turn


_HELD: list[Held] = []  # most recent first; a few, for callers that alternate batches


def held(actions: NDArray[Any], s: GameSettings, reverse_dv: float) -> Held:
    """The :class:`Held` of ``actions`` under ``s``: cached when the same bytes return."""
    a = np.ascontiguousarray(actions)
    raw = a.tobytes()
    for i, h in enumerate(_HELD):
        if h.s is s and h.raw == raw and h.act.shape == a.shape and h.dtype == a.dtype:
            if i:
                _HELD.insert(0, _HELD.pop(i))
            return h
    # NaN actions count as 0 so one bad policy output cannot poison a game's state
    act = np.clip(np.nan_to_num(np.asarray(a, dtype=np.float64)), -1.0, 1.0)
    h = Held(raw, a.dtype, act, s, reverse_dv)
    _HELD.insert(0, h)
    del _HELD[4:]
    return h


_NEXT, _AFTER = np.array([1, 2, 0]), np.array([2, 0, 1])  # components k + 1, k + 2 (mod 3)


def turn_and_thrust(f: F64, u: F64, vel: F64, h: Held) -> None:
    """Free rotation of the ships' forward ``f`` and up ``u`` (in place): the held turn
    matrix applied to each ship's axes; then the thrust, strafe and lift velocity changes
    along the new axes, added to ``vel``."""
    h.turn()
    axes, turned, (tmp, dv) = h.axes, h.turned, h.scratch
    axes[0] = f
    axes[2] = u
    # left = up x forward: component k = u[k+1] f[k+2] - u[k+2] f[k+1]
    np.multiply(u[..., _NEXT], f[..., _AFTER], out=axes[1])
    np.multiply(u[..., _AFTER], f[..., _NEXT], out=tmp)
    np.subtract(axes[1], tmp, out=axes[1])
    # new row r = m[r, 0] forward + m[r, 1] left + m[r, 2] up, each product rounded and
    # summed left to right (within an ulp of the exact rotation, tested)
    for r, (m0, m1, m2) in enumerate(h.entries):
        row = turned[r]
        np.multiply(m0, axes[0], out=row)
        np.multiply(m1, axes[1], out=tmp)
        np.add(row, tmp, out=row)
        np.multiply(m2, axes[2], out=tmp)
        np.add(row, tmp, out=row)
    # the rows stay orthonormal to rounding (~1e-15 a tick); kickoffs start them afresh
    f[...] = turned[0]
    u[...] = turned[2]
    # thrust, strafe, lift along the new axes, summed in the order the vector-matrix
    # product (push @ axes) this replaces summed them
    thrust, strafe, lift = h.push
    np.multiply(thrust, turned[0], out=dv)
    np.multiply(strafe, turned[1], out=tmp)
    np.add(dv, tmp, out=dv)
    np.multiply(lift, turned[2], out=tmp)
    np.add(dv, tmp, out=dv)
    if not h.s.allow_vertical:
        dv[..., 2] = 0.0
    np.add(vel, dv, out=vel)
