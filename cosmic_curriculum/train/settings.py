"""What one training run needs: :class:`TrainSettings`, validated from command-line options.

Each field's default (a constant of :mod:`cosmic_curriculum.defaults`) and ``description``
are the single source of the ``train`` command's option default and help text (the CLI
builds its options from these fields).

Default hyperparameters, and why (measured on 2 CPU cores, see docs/BENCHMARKS.md):

* ``rollout_size`` 8192 steps per update split over the ``--n-parallel`` games of one
  vectorized env, ``batch_size`` 2048, ``n_epochs`` 8, ``learning_rate`` 5e-4: the
  gradient update dominates wall time, so minibatches are large (SB3's default 64 runs
  ~10x slower per step), and 32 of them per update keep learning per sample high. Against
  4096/4 epochs/3e-4 this learned the score stage about 3x faster per timestep at ~60% of
  the throughput: the better trade for a fixed wall-clock budget.
* ``init_std`` 0.5 (SB3: 1.0): with actions in [-1, 1], std 1 is mostly clipped noise and
  the ship rarely reaches the orb; 0.5 still explores and reached 90% goals against an
  inert opponent in ~1M steps instead of ~3M.
* ``attack_goal_bias`` 0.5 unless the flag is given (the game's own default is 0, goals
  only): stages without the flag (no_draws, mechanics) still get a dense signal for
  pushing the orb toward the goal. Without it the 3-D stages learned to avoid losing more
  than to score (a final bot drew 147 of 200 games against an inert opponent).
* ``orb_approach_bias`` 0.5 unless the flag is given (game default 0): a reward for
  closing in on the orb, the skill a planar bot lacks in 3-D (matching the orb's height).
  Added to the quick curriculum's two 3-D stages it raised the final bot's score against
  the rookie from 0.69 and 0.78 to 0.73 and 0.84 (seeds 0 and 1, 200 paired games each).
* ``[64, 64]`` tanh actor and critic: the observation is small and low-level; bigger nets
  cost throughput without learning faster at these budgets.
* ``gamma`` 0.99 (a ~100-decision horizon: a match is ~150 decisions at speedup 16),
  ``gae_lambda`` 0.95, ``clip_range`` 0.2: SB3's well-tested PPO defaults.
* ``torch_threads`` 1: with 2 threads one busy core elsewhere slowed PPO 3-4.5x; with one
  thread it did not notice (see NOTES in docs/BENCHMARKS.md).

The self-play defaults are explained in :mod:`cosmic_curriculum.train.callbacks`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from cosmic_curriculum.defaults import (
    ALLOW_PITCH_ROLL,
    ALLOW_VERTICAL,
    BATCH_SIZE,
    CHECKPOINT_EVERY_TIMESTEPS,
    DECISION_TICKS,
    ENT_COEF,
    GAMMA,
    INIT_STD,
    KEEP_CHECKPOINTS,
    LEARNING_RATE,
    N_EPOCHS,
    N_PARALLEL,
    ROLLOUT_SIZE,
    SELFPLAY_PLAY_LATEST,
    SELFPLAY_ROOKIE_SHARE,
    SELFPLAY_SNAPSHOT_EVERY_TIMESTEPS,
    SELFPLAY_SWAP_EVERY_TIMESTEPS,
    SELFPLAY_WINDOW,
    TORCH_THREADS,
    TRAIN_TIMESTEPS,
    TRAINER_ATTACK_GOAL_BIAS,
    TRAINER_DEVICE,
    TRAINER_OPPONENT_MODE,
    TRAINER_ORB_APPROACH_BIAS,
)
from cosmic_curriculum.errors import ConfigError, describe_validation, option_name
from cosmic_curriculum.workspace.layout import EXPERIMENT_RE, Layout, check_experiment_fits

if TYPE_CHECKING:
    from cosmic_curriculum.arena.settings import GameSettings

OpponentMode = Literal["inert", "random", "rookie", "veteran", "self_play", "bot"]
OPPONENT_MODES: tuple[str, ...] = get_args(OpponentMode)


class TrainSettings(BaseModel):
    """Everything one training run needs. Unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    experiment: str = Field(description="Experiment name (checkpoints/<name>/, bots/<name>.json).")
    workspace: Path = Field(
        Path("."), description="Workspace directory (default: the current one)."
    )
    timesteps: int = Field(
        TRAIN_TIMESTEPS,
        ge=1,
        description="Timesteps to train (a continuation trains only the rest).",
    )
    n_parallel: int = Field(
        N_PARALLEL,
        ge=1,
        le=1_000_000,
        description="Games simulated in parallel in the one vectorized env.",
    )
    speedup: int = Field(
        DECISION_TICKS, ge=1, le=600, description="Physics ticks per decision (action repeat)."
    )
    resume: Path | None = Field(
        None,
        description="Checkpoint .zip under checkpoints/. Inside checkpoints/<experiment>/ it "
        "continues the count; from another experiment it starts a new count (and applies "
        "--reset-std).",
    )
    reset_std: float | None = Field(
        None,
        gt=0.0,
        description="On resume from another experiment: action std := F (ignored on a fresh "
        "start).",
    )
    ent_coef: float = Field(ENT_COEF, ge=0.0, le=1.0, description="PPO entropy bonus coefficient.")
    opponent_mode: OpponentMode = Field(
        TRAINER_OPPONENT_MODE,
        description="Opponent: inert, random, rookie, veteran, self_play or bot (needs "
        "--opponent-bot).",
    )
    opponent_bot: Path | None = Field(
        None, description="Bot JSON to train against (--opponent-mode bot)."
    )
    attack_goal_bias: float = Field(
        TRAINER_ATTACK_GOAL_BIAS,
        ge=0.0,
        description="Shaping weight on orb progress toward the opponent goal (0 = goals only).",
    )
    orb_approach_bias: float = Field(
        TRAINER_ORB_APPROACH_BIAS,
        ge=0.0,
        description="Shaping weight on closing the distance to the orb (0 = none).",
    )
    allow_vertical: bool = Field(
        ALLOW_VERTICAL, description="Allow vertical motion (off: planar games)."
    )
    allow_pitch_roll: bool = Field(
        ALLOW_PITCH_ROLL, description="Allow pitch and roll (off: ships stay level)."
    )
    draw_penalty: float | None = Field(
        None, ge=0.0, description="Reward subtracted on a draw (timeout); default: the game's."
    )
    seed: int = Field(0, ge=0, description="Random seed (games, network init, self-play sampling).")
    device: Literal["auto", "cpu", "cuda"] = Field(
        TRAINER_DEVICE, description="auto (CUDA when available), cpu or cuda."
    )
    torch_threads: int = Field(
        TORCH_THREADS,
        ge=1,
        le=256,
        description="torch CPU threads; 1 is robust when other processes share the cores.",
    )

    # PPO
    learning_rate: float = Field(LEARNING_RATE, gt=0.0, le=1.0, description="PPO learning rate.")
    rollout_size: int = Field(
        ROLLOUT_SIZE, ge=1, description="Env steps per PPO update (over all games)."
    )
    batch_size: int = Field(
        BATCH_SIZE, ge=1, description="PPO minibatch size (large is fast on CPU)."
    )
    n_epochs: int = Field(N_EPOCHS, ge=1, le=100, description="PPO epochs per update.")
    gamma: float = Field(GAMMA, gt=0.0, le=1.0, description="Discount factor per decision.")
    gae_lambda: float = Field(0.95, ge=0.0, le=1.0, description="GAE lambda (no option).")
    clip_range: float = Field(0.2, gt=0.0, le=1.0, description="PPO clip range (no option).")
    init_std: float = Field(
        INIT_STD, gt=0.0, le=5.0, description="Action std of a fresh policy (exploration)."
    )
    net_arch: tuple[int, ...] = Field(
        (64, 64), description="Hidden layer widths of actor and critic (no option)."
    )
    activation: Literal["tanh", "relu"] = Field(
        "tanh", description="Hidden layer activation (no option)."
    )

    # checkpoints and progress
    checkpoint_every: int = Field(
        CHECKPOINT_EVERY_TIMESTEPS, ge=1, description="Timesteps between step_<n>.zip checkpoints."
    )
    keep_checkpoints: int = Field(KEEP_CHECKPOINTS, ge=1, description="Periodic checkpoints kept.")
    progress_interval: float = Field(
        2.0, gt=0.0, description="Seconds between progress lines (no option)."
    )

    # self-play (ghost trainer)
    selfplay_snapshot_every: int = Field(
        SELFPLAY_SNAPSHOT_EVERY_TIMESTEPS,
        ge=1,
        description="Self-play: timesteps between snapshots.",
    )
    selfplay_window: int = Field(
        SELFPLAY_WINDOW, ge=1, description="Self-play: snapshots kept as opponents."
    )
    selfplay_swap_every: int = Field(
        SELFPLAY_SWAP_EVERY_TIMESTEPS,
        ge=1,
        description="Self-play: timesteps between opponent swaps.",
    )
    selfplay_play_latest: float = Field(
        SELFPLAY_PLAY_LATEST,
        ge=0.0,
        le=1.0,
        description="Self-play: probability of facing the latest snapshot at a swap.",
    )
    selfplay_rookie_share: float = Field(
        SELFPLAY_ROOKIE_SHARE,
        ge=0.0,
        le=1.0,
        description="Self-play: share of swaps that play the scripted rookie instead of a "
        "snapshot.",
    )

    @field_validator("experiment")
    @classmethod
    def _experiment_name(cls, value: str) -> str:
        if not EXPERIMENT_RE.match(value):
            raise ValueError(
                f"experiment name {value!r} must be letters, digits, '_', '-' or '.' "
                "(it becomes a file name)"
            )
        return check_experiment_fits(value)

    @field_validator("net_arch")
    @classmethod
    def _net_arch(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not value or any(width < 1 for width in value):
            raise ValueError(f"net_arch {list(value)} must be one or more positive widths")
        return value

    @property
    def layout(self) -> Layout:
        """The workspace's paths (its root resolved, so relative names are stable)."""
        return Layout(self.workspace.resolve())


def settings_from_options(**options: Any) -> TrainSettings:
    """Validate CLI options into :class:`TrainSettings`; bad values raise a one-line ConfigError."""
    try:
        settings = TrainSettings(**options)
    except ValidationError as exc:
        raise ConfigError(describe_validation(exc, option_name)) from None
    if settings.opponent_mode == "bot" and settings.opponent_bot is None:
        raise ConfigError("--opponent-mode bot needs --opponent-bot PATH (a bot JSON file)")
    if settings.opponent_bot is not None and settings.opponent_mode != "bot":
        raise ConfigError(
            f"--opponent-bot is only used with --opponent-mode bot "
            f"(got --opponent-mode {settings.opponent_mode})"
        )
    return settings


def game_settings(settings: TrainSettings) -> GameSettings:
    """The arena's GameSettings for this run: flags given override the game's defaults."""
    from cosmic_curriculum.arena.settings import GameSettings

    overrides: dict[str, Any] = {
        "decision_ticks": settings.speedup,
        "allow_vertical": settings.allow_vertical,
        "allow_pitch_roll": settings.allow_pitch_roll,
        "attack_goal_bias": settings.attack_goal_bias,
        "orb_approach_bias": settings.orb_approach_bias,
    }
    if settings.draw_penalty is not None:
        overrides["draw_penalty"] = settings.draw_penalty
    try:
        return GameSettings(**overrides)
    except ValidationError as exc:
        raise ConfigError(f"game settings: {describe_validation(exc)}") from None
