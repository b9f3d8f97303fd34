"""Held actions: what the rules (``arena.rules``) derive from one actions array.

A bot holds its action for a whole decision (``decision_ticks`` physics ticks), so the
same actions come back tick after tick. Clipping, thrust, cos/sin and the per-ship turn
matrices depend on nothing else, and recomputing them every tick was most of the 3-D
rules' time: :func:`held` keeps them while the actions' bytes stay the same. A held value
is computed by the same operations as a fresh one, so holding changes no bit.

The compiled tick (``arena.physics``) applies the held turn matrices and thrust; cos/sin
stay numpy's here, once a decision, so the compiled loop needs no math library of its own.
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
    recomputed every tick."""

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
        self._push: F64 | None = None

    def level(self) -> tuple[NDArray[np.complex128], NDArray[np.complex128]]:
        """Yaw as a unit complex factor, and forward/left thrust as ``thrust + i strafe``."""
        if self._level is None:
            self._level = (np.exp(1j * self.yaw), self.thrust + 1j * self.strafe)
        return self._level

    def turn(self) -> F64:
        """Per ship, yaw then pitch then roll about its own axes as one 3x3 matrix that
        maps the rows (forward, left, up) to the new ones."""
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
            self._turn = m
        return self._turn

    def push(self) -> F64:
        """Per ship, the thrust, strafe and lift velocity changes ``(n, 2, 3)`` along the
        turned axes (lift 0 unless vertical moves are allowed)."""
        if self._push is None:
            lift = self.lift if self.s.allow_vertical else np.zeros_like(self.yaw)
            self._push = np.stack((self.thrust, self.strafe, lift), axis=-1)
        return self._push


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
