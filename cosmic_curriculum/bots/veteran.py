"""The scripted veteran: a hand-written bot that reads the orb's flight instead of chasing it.

Where the rookie steers at where the orb was, the veteran predicts where the orb will be
(its drag and the wall bounces) and lines up behind the first predicted point it can reach
in time; when the orb's predicted path runs into its own goal and the ship is upfield, it
races to a point between the orb and that goal, passing the orb on its own side; in 3-D it
matches the orb's height with lift, and pitch and roll hold the nose at ``max_climb`` at
most and the wings level. It uses full thrust, decides no more often than the learner
(at the trainer's default --speedup) and draws no random numbers: the same game gives the same play.

Tuned against the rookie and the seed-0 quick curriculum's stage-3 and stage-4 bots
(docs/BENCHMARKS.md): flying level and the small ``clearance`` measured strongest there.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from cosmic_curriculum.arena.observations import (
    ORB_POS,
    ORB_VEL,
    OWN_FWD,
    OWN_POS,
    OWN_UP,
    OWN_VEL,
)
from cosmic_curriculum.arena.policy import F32, check_decision_ticks
from cosmic_curriculum.arena.rules import ACT_SIZE, cross, dot, norm
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.defaults import DECISION_TICKS

F64 = NDArray[np.float64]


class VeteranParams(BaseModel):
    """Knobs of the veteran. Distances in arena units, times in seconds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # the key that tells a veteran's params from the rookie's in a bot file
    strategy: Literal["veteran"] = Field(description="which scripted bot: the veteran")
    lead_horizon: float = Field(3.0, ge=0.0, le=10.0, description="predicts the orb this far")
    lead_steps: int = Field(30, ge=1, le=200, description="predicted points in the horizon")
    plan_speed: float = Field(9.0, gt=0.0, le=100.0, description="assumed speed to a point")
    plan_delay: float = Field(0.1, ge=0.0, le=10.0, description="assumed time to turn and go")
    behind_distance: float = Field(2.0, ge=0.0, le=100.0, description="lines up this far back")
    push_lateral: float = Field(1.5, ge=0.0, le=100.0, description="max offset to push")
    push_through: float = Field(4.0, ge=0.0, le=100.0, description="aims this far past the orb")
    clearance: float = Field(0.5, ge=0.0, le=100.0, description="detour distance round the orb")
    wall_margin: float = Field(1.5, ge=0.0, le=100.0, description="keeps targets off walls")
    aim_inset: float = Field(2.0, ge=0.0, le=100.0, description="aims this far inside the posts")
    defend_speed: float = Field(2.0, ge=0.0, le=100.0, description="orb speed homeward to defend")
    guard_distance: float = Field(3.0, ge=0.0, le=100.0, description="guards this far goal-side")
    thrust_level: float = Field(1.0, ge=0.0, le=1.0, description="thrust when on course")
    approach_gain: float = Field(2.0, gt=0.0, le=100.0, description="wanted speed per unit")
    velocity_scale: float = Field(2.0, gt=0.0, le=100.0, description="speed error for full")
    yaw_gain: float = Field(2.0, ge=0.0, le=100.0)
    pitch_gain: float = Field(2.0, ge=0.0, le=100.0)
    max_climb: float = Field(0.0, ge=0.0, le=1.5, description="steepest nose angle, rad")
    strafe_gain: float = Field(0.5, ge=0.0, le=100.0)
    lift_gain: float = Field(1.0, ge=0.0, le=100.0)
    level_gain: float = Field(2.0, ge=0.0, le=100.0)


# The learner's default rate (the trainer's --speedup); deciding more often would be a
# reflex no trained bot has.
VETERAN_DECISION_TICKS = DECISION_TICKS
VETERAN_PARAMS = VeteranParams(strategy="veteran")


def fold(x: F64, lim: F64) -> F64:
    """Positions of a body that bounces off the walls ``|x| <= lim`` (per axis), from its
    unbounded path: the path reflected back into the box (bounces lose no speed here)."""
    span = 2.0 * lim
    safe = np.where(span > 0.0, span, 1.0)
    y = np.mod(x + lim, 2.0 * safe)
    y = np.where(y > safe, 2.0 * safe - y, y) - lim
    return np.where(span > 0.0, y, 0.0)


class VeteranBot:
    """Intercepts the orb where it will be, defends its goal, flies in 3-D (module doc).

    Stateless: everything it needs is in the observation, so ``reset`` has nothing to
    forget and the bot never draws from ``rng``.
    """

    kind = "scripted"

    def __init__(
        self,
        params: VeteranParams = VETERAN_PARAMS,
        decision_ticks: int = VETERAN_DECISION_TICKS,
        game: GameSettings | None = None,
    ) -> None:
        self.params = params
        self.decision_ticks = check_decision_ticks(decision_ticks)
        self.game = game
        g = game if game is not None else GameSettings()
        self._g = g
        self._half = np.array([g.arena_half_length, g.arena_half_width, g.arena_half_height])
        self._orb_lim = np.maximum(self._half - g.orb_radius, 0.0)
        if not g.allow_vertical:
            self._orb_lim[2] = 0.0
        self._target_lim = np.maximum(self._half - params.wall_margin, 0.0)
        self._aim_lim = np.maximum(
            np.array([g.goal_half_width, g.goal_half_height]) - params.aim_inset, 0.0
        )
        steps = np.arange(params.lead_steps + 1) / params.lead_steps
        self._times = params.lead_horizon * steps  # (k,) prediction times, 0 first
        drag = g.orb_drag
        decay = np.exp(-drag * self._times)
        self._travel = self._times if drag == 0.0 else (1.0 - decay) / drag

    def reset(self, mask: NDArray[np.bool_]) -> None:
        return None

    def act(self, obs: F32, rng: np.random.Generator) -> F32:
        now = np.asarray(obs, dtype=np.float64)
        target, push, defend = self.plan(now)
        return self._steer(now, target, push & ~defend).astype(np.float32)

    def _predict(self, orb: F64, orb_vel: F64) -> F64:
        """The orb's positions at the prediction times, ``(n, k, 3)``."""
        path = orb[:, None, :] + orb_vel[:, None, :] * self._travel[None, :, None]
        return fold(path, self._orb_lim)

    def _aim_dir(self, orb: F64) -> F64:
        """Unit vectors from the orb to the nearest aiming point in the opponent's goal."""
        aim = np.empty_like(orb)
        aim[..., 0] = self._half[0]
        aim[..., 1] = np.clip(orb[..., 1], -self._aim_lim[0], self._aim_lim[0])
        aim[..., 2] = np.clip(orb[..., 2], -self._aim_lim[1], self._aim_lim[1])
        d = aim - orb
        return d / np.maximum(norm(d), 1e-9)[..., None]

    def plan(self, now: F64) -> tuple[F64, NDArray[np.bool_], NDArray[np.bool_]]:
        """Where each ship flies (attack frame, arena units), whether it is pushing the
        orb, and whether it is defending, from observations ``(n, OBS_SIZE)``."""
        p = self.params
        g = self._g
        half = self._half
        n = now.shape[0]
        rows = np.arange(n)
        ship = now[:, OWN_POS] * half
        orb = now[:, ORB_POS] * half
        orb_vel = now[:, ORB_VEL] * g.orb_max_speed

        # interception: the first predicted orb whose approach point the ship can reach
        # in time (the last one when none is)
        future = self._predict(orb, orb_vel)  # (n, k, 3)
        to_goal = self._aim_dir(future)
        approach = future - to_goal * p.behind_distance
        need = norm(approach - ship[:, None, :]) / p.plan_speed + p.plan_delay
        reachable = need <= self._times[None, :]
        k = np.where(reachable.any(axis=1), reachable.argmax(axis=1), len(self._times) - 1)
        ball = future[rows, k]
        to_goal = to_goal[rows, k]

        # the rookie's line-up-and-push, on the predicted orb
        rel = ball - ship
        along = dot(rel, to_goal)  # > 0: the ship is on the far side from the goal
        offset = along[:, None] * to_goal - rel
        lateral = norm(offset)
        push = (along > 0.0) & (lateral < p.push_lateral)
        reach = np.where(push, p.push_through, -p.behind_distance)
        target = ball + to_goal * reach[:, None]
        around = ~push & (along < 0.5 * p.behind_distance)
        away = offset / np.maximum(lateral, 1e-6)[:, None]
        away[lateral <= 1e-6] = (0.0, 1.0, 0.0)
        if around.any():
            detour = ball + away * p.clearance - to_goal * p.behind_distance
            target[around] = detour[around]

        # defence: the orb flies at its own goal (its predicted path reaches the end wall
        # inside the mouth) and the ship is upfield of it: race it to a point between it
        # and the goal, passing it on the ship's own side (never through it, which would
        # knock it in)
        homeward = orb_vel[:, 0] < -p.defend_speed
        mouth = (np.abs(future[..., 1]) < g.goal_half_width) & (
            np.abs(future[..., 2]) < g.goal_half_height
        )
        at_wall = future[..., 0] <= -self._orb_lim[0] + 0.5  # fold never passes the limit
        on_target = (mouth & at_wall).any(axis=1)
        defend = homeward & on_target & (ship[:, 0] > orb[:, 0])
        if defend.any():
            home = np.zeros_like(future)
            home[..., 0] = -half[0]
            to_home = home - future
            to_home /= np.maximum(norm(to_home), 1e-9)[..., None]
            side = ship - orb
            side[:, 0] = 0.0
            side_len = norm(side)
            side /= np.maximum(side_len, 1e-6)[:, None]
            side[side_len <= 1e-6] = (0.0, 1.0, 0.0)
            guard = future + to_home * p.guard_distance + side[:, None, :] * p.clearance
            need = norm(guard - ship[:, None, :]) / p.plan_speed + p.plan_delay
            reachable = need <= self._times[None, :]
            k = np.where(reachable.any(axis=1), reachable.argmax(axis=1), len(self._times) - 1)
            target[defend] = guard[rows, k][defend]

        lim = self._target_lim
        target = np.clip(target, -lim, lim)
        if not g.allow_vertical:
            target[:, 2] = 0.0
        return target, push, defend

    def _steer(self, now: F64, target: F64, full: NDArray[np.bool_]) -> F64:
        """Actions that fly to ``target``: yaw turns the nose toward it, pitch holds the
        nose at the target's elevation clipped to ``max_climb`` (0: level), roll keeps the
        wings level; thrust, strafe and lift chase a velocity that slows down near the
        target (no orbiting), at full speed when pushing."""
        p = self.params
        g = self._g
        ship = now[:, OWN_POS] * self._half
        vel = now[:, OWN_VEL] * g.ship_max_speed
        to_target = target - ship
        dist = np.maximum(norm(to_target), 1e-9)
        cruise = p.thrust_level * g.ship_max_speed
        speed = np.where(full, cruise, np.minimum(cruise, p.approach_gain * dist))
        want = to_target * (speed / dist)[:, None] - vel
        fwd, up = now[:, OWN_FWD], now[:, OWN_UP]
        left = cross(up, fwd)
        axes = np.stack((fwd, left, up), axis=1)  # rows: body axes in the attack frame
        body = np.einsum("nij,nkj->nki", axes, np.stack((want, to_target), axis=1))
        error = body[:, 0] / p.velocity_scale
        aim = body[:, 1]
        act = np.empty((now.shape[0], ACT_SIZE))
        act[:, 0] = np.clip(error[:, 0], -1.0, p.thrust_level)
        act[:, 1] = p.strafe_gain * error[:, 1]
        act[:, 2] = p.lift_gain * error[:, 2]
        act[:, 3] = p.yaw_gain * np.arctan2(aim[:, 1], aim[:, 0])
        if g.allow_pitch_roll:
            climb = np.arctan2(to_target[:, 2], np.hypot(to_target[:, 0], to_target[:, 1]))
            climb = np.clip(climb, -p.max_climb, p.max_climb)
            act[:, 4] = p.pitch_gain * (climb - np.arcsin(np.clip(fwd[:, 2], -1.0, 1.0)))
        else:
            act[:, 4] = 0.0
        act[:, 5] = -p.level_gain * left[:, 2]
        np.clip(act[:, 1:], -1.0, 1.0, out=act[:, 1:])
        return act
