"""The scripted rookie: a hand-written bot that lines up behind the orb and pushes."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from cosmic_curriculum.arena.observations import ORB_POS, OWN_FWD, OWN_POS, OWN_UP, OWN_VEL
from cosmic_curriculum.arena.policy import F32, check_decision_ticks
from cosmic_curriculum.arena.rules import ACT_SIZE, cross, dot, norm
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.defaults import DECISION_TICKS


class ScriptedParams(BaseModel):
    """Knobs of the scripted bot. Distances are in arena units (a ship is 2 units wide)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reaction_delay: int = Field(1, ge=0, le=50, description="decisions of lag on the orb")
    aim_noise: float = Field(1.0, ge=0.0, le=100.0, description="std of the aim offset")
    aim_hold: int = Field(6, ge=1, le=1000, description="mean decisions between aim redraws")
    behind_distance: float = Field(3.5, ge=0.0, le=100.0, description="lines up this far back")
    push_lateral: float = Field(1.5, ge=0.0, le=100.0, description="max offset to push")
    push_through: float = Field(3.0, ge=0.0, le=100.0, description="aims this far past the orb")
    clearance: float = Field(4.0, ge=0.0, le=100.0, description="detour distance round the orb")
    wall_margin: float = Field(1.5, ge=0.0, le=100.0, description="keeps targets off walls")
    thrust_level: float = Field(0.7, ge=0.0, le=1.0, description="thrust when on course")
    approach_gain: float = Field(1.5, gt=0.0, le=100.0, description="wanted speed per unit")
    velocity_scale: float = Field(3.0, gt=0.0, le=100.0, description="speed error for full")
    yaw_gain: float = Field(2.0, ge=0.0, le=100.0)
    strafe_gain: float = Field(0.5, ge=0.0, le=100.0)
    lift_gain: float = Field(1.0, ge=0.0, le=100.0)
    level_gain: float = Field(2.0, ge=0.0, le=100.0)


ROOKIE_DECISION_TICKS = DECISION_TICKS  # the learner's default rate (the trainer's --speedup)
ROOKIE_PARAMS = ScriptedParams()


class ScriptedBot:
    """Drives to a point behind the orb on the line to the opponent's goal, then pushes.

    It works in its attack frame, in arena units (the arena size comes from ``game``, the
    settings in its bot file). Weaknesses on purpose: it sees the orb ``reaction_delay``
    decisions late and does not lead it, aims at a noisy point, never defends and never
    uses full thrust. Stateful (the delay buffer and the aim offsets): ``reset(mask)``
    forgets the masked games.
    """

    kind = "scripted"

    def __init__(
        self,
        params: ScriptedParams = ROOKIE_PARAMS,
        decision_ticks: int = ROOKIE_DECISION_TICKS,
        game: GameSettings | None = None,
    ) -> None:
        self.params = params
        self.decision_ticks = check_decision_ticks(decision_ticks)
        self.game = game
        g = game if game is not None else GameSettings()
        self._half = np.array([g.arena_half_length, g.arena_half_width, g.arena_half_height])
        self._max_speed = g.ship_max_speed
        self._target_lim = np.maximum(self._half - params.wall_margin, 0.0)
        self._buf: NDArray[np.float64] | None = None  # (delay + 1, n, 3) past orb positions
        self._head = 0
        self._fresh = np.zeros(0, dtype=bool)
        self._aim = np.zeros((0, 3))

    def reset(self, mask: NDArray[np.bool_]) -> None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape == self._fresh.shape:
            self._fresh |= mask
        else:
            self._buf = None  # batch size changed: start over on the next act

    def act(self, obs: F32, rng: np.random.Generator) -> F32:
        p = self.params
        n = obs.shape[0]
        now = np.asarray(obs, dtype=np.float64)
        orb_now = now[:, ORB_POS] * self._half
        depth = p.reaction_delay + 1
        if self._buf is None or self._buf.shape[1] != n:
            self._buf = np.empty((depth, n, 3))
            self._head = 0
            self._fresh = np.ones(n, dtype=bool)
            self._aim = np.zeros((n, 3))
        fresh = self._fresh
        if fresh.any():
            # a new game: no history yet, so the past looks like the present
            self._buf[:, fresh] = orb_now[fresh]
            self._aim[fresh] = rng.normal(0.0, p.aim_noise, size=(int(fresh.sum()), 3))
            fresh[:] = False
        redraw = np.less(rng.random(n), 1.0 / p.aim_hold)
        if redraw.any():
            self._aim[redraw] = rng.normal(0.0, p.aim_noise, size=(int(redraw.sum()), 3))
        self._buf[self._head] = orb_now
        self._head = (self._head + 1) % depth
        orb = self._buf[self._head]  # where the orb was reaction_delay decisions ago
        return self._policy(now, orb).astype(np.float32)

    def _policy(self, now: NDArray[np.float64], orb: NDArray[np.float64]) -> NDArray[np.float64]:
        """Actions from the present pose and the (late) orb, in attack-frame units."""
        p = self.params
        half = self._half
        ship = now[:, OWN_POS] * half
        to_goal = -orb
        to_goal[:, 0] += half[0]
        to_goal /= np.maximum(norm(to_goal), 1e-9)[:, None]
        rel = orb - ship
        along = dot(rel, to_goal)  # > 0: the ship is on the far side from the goal
        offset = along[:, None] * to_goal - rel  # from the orb's line toward the ship
        lateral = norm(offset)
        push = (along > 0.0) & (lateral < p.push_lateral)
        reach = np.where(push, p.push_through, -p.behind_distance)
        target = orb + to_goal * reach[:, None]
        target += self._aim  # sloppy aim when lining up and shooting
        # on the goal side of the orb: swing round it instead of knocking it backwards
        around = ~push & (along < 0.5 * p.behind_distance)
        if around.any():
            away = offset / np.maximum(lateral, 1e-6)[:, None]
            away[lateral <= 1e-6] = (0.0, 1.0, 0.0)
            detour = orb + away * p.clearance - to_goal * p.behind_distance
            target[around] = detour[around]
        # a target beyond a wall pins the ship there: keep it inside, and push straight at
        # the orb when that is as close as the ship can get
        lim = self._target_lim
        clamped = np.clip(target, -lim, lim)
        stuck = ~push & (np.abs(clamped - target).sum(axis=1) > 0.5)
        if stuck.any():
            stuck &= norm(clamped - ship) < p.wall_margin + 1.0
            clamped[stuck] = (orb + to_goal * p.push_through)[stuck]
        target = clamped
        if self.game is not None and not self.game.allow_vertical:
            target[:, 2] = 0.0
        # steer toward the target; thrust, strafe and lift chase a desired velocity that
        # slows down near the target (it brakes instead of orbiting), capped by thrust_level
        to_target = target - ship
        dist = np.maximum(norm(to_target), 1e-9)
        cruise = p.thrust_level * self._max_speed
        speed = np.where(push | stuck, cruise, np.minimum(cruise, p.approach_gain * dist))
        want = to_target * (speed / dist)[:, None]
        want -= now[:, OWN_VEL] * self._max_speed
        # rows of `axes` are the body axes in the attack frame: forward, left, up
        fwd, up = now[:, OWN_FWD], now[:, OWN_UP]
        left = cross(up, fwd)
        axes = np.stack((fwd, left, up), axis=1)
        body = np.einsum("nij,nkj->nki", axes, np.stack((want, to_target), axis=1))
        error = body[:, 0] / p.velocity_scale
        bearing = np.arctan2(body[:, 1, 1], body[:, 1, 0])
        act = np.empty((now.shape[0], ACT_SIZE))
        act[:, 0] = np.clip(error[:, 0], -1.0, p.thrust_level)
        act[:, 1] = p.strafe_gain * error[:, 1]
        act[:, 2] = p.lift_gain * error[:, 2]
        act[:, 3] = p.yaw_gain * bearing
        # stay level: pitch the nose back to the horizon, roll the wings flat
        act[:, 4] = -p.level_gain * fwd[:, 2]
        act[:, 5] = -p.level_gain * left[:, 2]
        np.clip(act[:, 1:], -1.0, 1.0, out=act[:, 1:])
        return act
