"""Game settings of the Cosmic Clash arena (geometry, physics, rewards).

Units are arena units (a ship is about 2 units across) and seconds. The arena is the box
``|x| <= arena_half_length``, ``|y| <= arena_half_width``, ``|z| <= arena_half_height``;
blue's goal mouth is in the wall at ``x = -arena_half_length`` and orange's at
``x = +arena_half_length`` (blue attacks +x). A goal mouth is the rectangle
``|y| < goal_half_width``, ``|z| < goal_half_height`` of its end wall.

``GameSettings().model_dump()`` is what a bot file records under ``game``.
"""

from __future__ import annotations

import math
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from cosmic_curriculum.defaults import (
    ALLOW_PITCH_ROLL,
    ALLOW_VERTICAL,
    DECISION_TICKS,
    DRAW_PENALTY,
    GAME_ATTACK_GOAL_BIAS,
    GAME_ORB_APPROACH_BIAS,
)
from cosmic_curriculum.errors import describe_validation


class GameSettings(BaseModel):
    """Every knob of one Cosmic Clash match. Frozen; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # --- geometry -------------------------------------------------------------------
    arena_half_length: float = Field(20.0, gt=0.0, le=1000.0, description="half extent in x")
    arena_half_width: float = Field(10.0, gt=0.0, le=1000.0, description="half extent in y")
    arena_half_height: float = Field(6.0, gt=0.0, le=1000.0, description="half extent in z")
    goal_half_width: float = Field(5.0, gt=0.0, description="goal mouth half extent in y")
    goal_half_height: float = Field(4.0, gt=0.0, description="goal mouth half extent in z")

    # --- time -----------------------------------------------------------------------
    tick: float = Field(1.0 / 60.0, gt=0.0, le=0.1, description="physics step in seconds")
    decision_ticks: int = Field(
        DECISION_TICKS, ge=1, le=600, description="physics ticks per agent decision (the --speedup)"
    )
    # 40 s, not 25: at 25 s the 3-D match was a draw in 48% of rookie-vs-rookie games and
    # in 35% of the rookie's games against an inert opponent, so few games were decided
    # and the learner's signal was mostly draws (29% and 20% at 40 s; docs/BENCHMARKS.md).
    time_limit: float = Field(40.0, gt=0.0, le=3600.0, description="seconds until a draw")

    # --- modes ----------------------------------------------------------------------
    allow_vertical: bool = Field(ALLOW_VERTICAL, description="false: everything stays at z = 0")
    allow_pitch_roll: bool = Field(
        ALLOW_PITCH_ROLL, description="false: ships stay level (yaw only)"
    )

    # --- rewards (learner's view) ---------------------------------------------------
    goal_reward: float = Field(1.0, gt=0.0, le=1000.0, description="+ for scoring, - conceding")
    draw_penalty: float = Field(
        DRAW_PENALTY, ge=0.0, le=1000.0, description="subtracted on a timeout"
    )
    attack_goal_bias: float = Field(
        GAME_ATTACK_GOAL_BIAS,
        ge=0.0,
        le=1000.0,
        description="shaping weight on orb displacement toward the opponent goal",
    )
    orb_approach_bias: float = Field(
        GAME_ORB_APPROACH_BIAS,
        ge=0.0,
        le=1000.0,
        description="shaping weight on the learner closing its distance to the orb",
    )

    # --- ships ----------------------------------------------------------------------
    ship_radius: float = Field(1.0, gt=0.0)
    ship_mass: float = Field(1.0, gt=0.0)
    ship_thrust: float = Field(24.0, gt=0.0, description="forward acceleration at thrust 1")
    ship_reverse_factor: float = Field(0.5, ge=0.0, le=1.0, description="reverse thrust share")
    ship_strafe: float = Field(12.0, ge=0.0, description="strafe/lift acceleration at 1")
    ship_max_speed: float = Field(14.0, gt=0.0)
    ship_drag: float = Field(0.6, ge=0.0, description="velocity decay rate per second")
    yaw_rate: float = Field(3.5, gt=0.0, description="rad/s at yaw 1")
    pitch_rate: float = Field(3.0, gt=0.0, description="rad/s at pitch 1")
    roll_rate: float = Field(4.0, gt=0.0, description="rad/s at roll 1")

    # --- orb ------------------------------------------------------------------------
    orb_radius: float = Field(1.2, gt=0.0)
    orb_mass: float = Field(0.5, gt=0.0)
    orb_drag: float = Field(0.25, ge=0.0, description="velocity decay rate per second")
    orb_max_speed: float = Field(30.0, gt=0.0)

    # --- collisions -----------------------------------------------------------------
    wall_restitution: float = Field(0.8, ge=0.0, le=1.0)
    orb_restitution: float = Field(0.9, ge=0.0, le=1.0, description="ship-orb bounce")
    ship_restitution: float = Field(0.5, ge=0.0, le=1.0, description="ship-ship bounce")

    # --- kickoff --------------------------------------------------------------------
    kickoff_distance: float = Field(
        0.6, gt=0.0, lt=1.0, description="ships start at this share of the half length"
    )
    kickoff_jitter: float = Field(1.0, ge=0.0, description="uniform jitter of starts (units)")

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        def bad(what: str, fix: str) -> ValueError:
            return ValueError(f"{what}; {fix}")

        smallest = min(self.arena_half_length, self.arena_half_width)
        if self.allow_vertical:
            smallest = min(smallest, self.arena_half_height)
        if max(self.ship_radius, self.orb_radius) * 2.0 >= smallest:
            raise bad(
                f"ship_radius={self.ship_radius} / orb_radius={self.orb_radius} do not fit "
                f"in the arena (smallest half extent {smallest})",
                "make the arena larger or the bodies smaller",
            )
        if self.goal_half_width > self.arena_half_width:
            raise bad(
                f"goal_half_width={self.goal_half_width} exceeds arena_half_width="
                f"{self.arena_half_width}",
                "narrow the goal or widen the arena",
            )
        if self.goal_half_height > self.arena_half_height:
            raise bad(
                f"goal_half_height={self.goal_half_height} exceeds arena_half_height="
                f"{self.arena_half_height}",
                "lower the goal or raise the arena",
            )
        if self.goal_half_width <= self.orb_radius:
            raise bad(
                f"goal_half_width={self.goal_half_width} must exceed orb_radius="
                f"{self.orb_radius} or the orb can never score",
                "widen the goal",
            )
        if self.allow_vertical and self.goal_half_height <= self.orb_radius:
            raise bad(
                f"goal_half_height={self.goal_half_height} must exceed orb_radius="
                f"{self.orb_radius} in 3-D play or the orb can never score",
                "raise the goal",
            )
        if self.time_limit < self.tick * self.decision_ticks:
            raise bad(
                f"time_limit={self.time_limit} is shorter than one decision "
                f"(tick {self.tick} x decision_ticks {self.decision_ticks})",
                "raise time_limit or lower decision_ticks",
            )
        kick_x = self.kickoff_distance * self.arena_half_length
        if kick_x + self.ship_radius >= self.arena_half_length:
            raise bad(
                f"kickoff_distance={self.kickoff_distance} puts ships inside the end walls",
                "lower kickoff_distance",
            )
        if self.kickoff_jitter + self.ship_radius >= self.arena_half_width:
            raise bad(
                f"kickoff_jitter={self.kickoff_jitter} can put ships inside the side walls",
                "lower kickoff_jitter",
            )
        if kick_x - self.kickoff_jitter < self.ship_radius + self.orb_radius + self.kickoff_jitter:
            raise bad(
                f"kickoff_distance={self.kickoff_distance} with kickoff_jitter="
                f"{self.kickoff_jitter} can start ships touching the orb",
                "raise kickoff_distance or lower kickoff_jitter",
            )
        return self

    # --- derived quantities (not fields) --------------------------------------------
    @property
    def max_ticks(self) -> int:
        """Physics ticks in a full match (the time limit, rounded to whole ticks)."""
        return max(1, round(self.time_limit / self.tick))

    @property
    def arena_length(self) -> float:
        """Distance between the two goal lines (used to scale the shaping reward)."""
        return 2.0 * self.arena_half_length

    @property
    def arena_diagonal(self) -> float:
        """Longest distance inside the arena (scales relative positions in observations)."""
        return 2.0 * math.sqrt(
            self.arena_half_length**2 + self.arena_half_width**2 + self.arena_half_height**2
        )


def settings_from_dict(data: Any) -> GameSettings:
    """Validate ``data`` as :class:`GameSettings`; raises ``ValueError`` with one line."""
    if not isinstance(data, dict):
        raise ValueError(f"game settings must be a JSON object, got {type(data).__name__}")
    try:
        return GameSettings.model_validate(data)
    except ValidationError as exc:
        raise ValueError(describe_validation(exc)) from None
