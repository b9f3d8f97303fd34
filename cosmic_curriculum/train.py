"""The PPO trainer behind ``cosmic-curriculum train`` (stable-baselines3 on the arena VecEnv).

One training run = one experiment: ``checkpoints/<exp>/step_<n>.zip`` every
``checkpoint_every`` timesteps (the last ``keep_checkpoints`` kept), ``final.zip`` at the
end, ``bots/<exp>.json`` exported from it, ``@progress`` lines on stdout and a learning
curve ``logs/<exp>.curve.png``. The trainer knows nothing about stages or the gate: every
stage difference arrives as a flag.

Resume semantics (the training-command contract):

* ``--resume`` pointing into ``checkpoints/<exp>/`` (this experiment's own periodic
  checkpoint, e.g. after a crash) is a *continuation*: the timestep count is kept, only the
  remaining timesteps are trained and ``--reset-std`` is not applied.
* Without ``--resume``, leftover ``step_*.zip`` of this experiment (and no ``final.zip``)
  are continued from the latest one; an existing ``final.zip`` means the run is complete
  and the bot is only re-exported.
* ``--resume`` from another experiment (previous stage or attempt) starts a new count and
  applies ``--reset-std``. Game settings may differ: only observation and action sizes must
  match, and they never depend on the settings. Every checkpoint records its game
  settings; actions that game ignored (lift when planar, pitch and roll when level) and
  this one uses restart at output 0 (:func:`reset_unused_actions`).

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

Self-play (Unity ML-Agents' ghost trainer): every ``selfplay_snapshot_every`` (50k)
timesteps the learner is frozen into a window of the last ``selfplay_window`` (10)
snapshots; every ``selfplay_swap_every`` (10k) timesteps the opponent is replaced by the
latest snapshot with probability ``selfplay_play_latest`` (0.5) and by a uniformly chosen
older one otherwise. One addition: at a swap, with probability ``selfplay_rookie_share``
(0.5) the opponent is the scripted rookie instead, a fixed member of the pool. Pure
self-play from a planar scorer learned 3-D play slowly and drifted into strategies that
only beat its own snapshots (0.31 then 0.52 against the rookie after the 3-D stages); with
the rookie in the pool the same budget reached 0.50 then 0.61. Snapshots are numpy bots
(exported weights), so the opponent costs little.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import re
import signal
import subprocess
import sys
import time
import zipfile
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from cosmic_curriculum.errors import (
    BotError,
    ConfigError,
    TrainerError,
    describe_validation,
    option_name,
)

OpponentMode = Literal["inert", "random", "rookie", "self_play", "bot"]
OPPONENT_MODES: tuple[str, ...] = ("inert", "random", "rookie", "self_play", "bot")
_EXPERIMENT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_STEP_RE = re.compile(r"^step_(\d+)\.zip$")


class TrainSettings(BaseModel):
    """Everything one training run needs. Unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    experiment: str
    workspace: Path = Path(".")
    timesteps: int = Field(1_000_000, ge=1, description="timesteps to train (this run)")
    n_parallel: int = Field(256, ge=1, le=1_000_000, description="games in the one VecEnv")
    speedup: int = Field(16, ge=1, le=600, description="physics ticks per decision")
    resume: Path | None = None
    reset_std: float | None = Field(None, gt=0.0, description="on resume: log-std := log(F)")
    ent_coef: float = Field(0.0, ge=0.0, le=1.0)
    opponent_mode: OpponentMode = "self_play"
    opponent_bot: Path | None = None
    attack_goal_bias: float = Field(0.5, ge=0.0, description="shaping (game default: 0)")
    orb_approach_bias: float = Field(0.5, ge=0.0, description="shaping (game default: 0)")
    allow_vertical: bool = True
    allow_pitch_roll: bool = True
    draw_penalty: float | None = Field(None, ge=0.0)
    seed: int = Field(0, ge=0)
    device: Literal["auto", "cpu", "cuda"] = "auto"
    torch_threads: int = Field(1, ge=1, le=256)

    # PPO
    learning_rate: float = Field(5e-4, gt=0.0, le=1.0)
    rollout_size: int = Field(8192, ge=1, description="env steps per PPO update (all games)")
    batch_size: int = Field(2048, ge=1)
    n_epochs: int = Field(8, ge=1, le=100)
    gamma: float = Field(0.99, gt=0.0, le=1.0)
    gae_lambda: float = Field(0.95, ge=0.0, le=1.0)
    clip_range: float = Field(0.2, gt=0.0, le=1.0)
    init_std: float = Field(0.5, gt=0.0, le=5.0, description="action std of a fresh policy")
    net_arch: tuple[int, ...] = (64, 64)
    activation: Literal["tanh", "relu"] = "tanh"

    # checkpoints and progress
    checkpoint_every: int = Field(250_000, ge=1, description="timesteps between checkpoints")
    keep_checkpoints: int = Field(3, ge=1)
    progress_interval: float = Field(2.0, gt=0.0, description="seconds between progress lines")

    # self-play (ghost trainer)
    selfplay_snapshot_every: int = Field(50_000, ge=1)
    selfplay_window: int = Field(10, ge=1)
    selfplay_swap_every: int = Field(10_000, ge=1)
    selfplay_play_latest: float = Field(0.5, ge=0.0, le=1.0)
    selfplay_rookie_share: float = Field(0.5, ge=0.0, le=1.0)

    @field_validator("experiment")
    @classmethod
    def _experiment_name(cls, value: str) -> str:
        if not _EXPERIMENT_RE.match(value) or value in (".", ".."):
            raise ValueError(
                f"experiment name {value!r} must be letters, digits, '_', '-' or '.' "
                "(it becomes a file name)"
            )
        return value

    @field_validator("net_arch")
    @classmethod
    def _net_arch(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not value or any(width < 1 for width in value):
            raise ValueError(f"net_arch {list(value)} must be one or more positive widths")
        return value


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


# --------------------------------------------------------------------------------------
# paths, checkpoints, provenance


@dataclass(frozen=True)
class Paths:
    workspace: Path
    checkpoints: Path
    experiment_dir: Path
    final: Path
    bot: Path
    logs: Path
    log: Path
    curve: Path

    @classmethod
    def of(cls, settings: TrainSettings) -> Paths:
        ws = settings.workspace.resolve()
        exp = settings.experiment
        return cls(
            workspace=ws,
            checkpoints=ws / "checkpoints",
            experiment_dir=ws / "checkpoints" / exp,
            final=ws / "checkpoints" / exp / "final.zip",
            bot=ws / "bots" / f"{exp}.json",
            logs=ws / "logs",
            log=ws / "logs" / f"{exp}.log",
            curve=ws / "logs" / f"{exp}.curve.png",
        )


def step_checkpoints(directory: Path) -> list[tuple[int, Path]]:
    """This experiment's periodic checkpoints, oldest first."""
    if not directory.is_dir():
        return []
    found = []
    for entry in directory.iterdir():
        match = _STEP_RE.match(entry.name)
        if match and entry.is_file():
            found.append((int(match.group(1)), entry))
    return sorted(found)


def checked_checkpoint(path: Path, paths: Paths) -> Path:
    """The resolved checkpoint, refused unless it is a .zip inside ``checkpoints/``.

    SB3 checkpoints contain pickled Python objects; loading one executes code, so we only
    load files this workspace's trainer wrote.
    """
    candidate = path if path.is_absolute() else paths.workspace / path
    resolved = candidate.resolve()
    if resolved.suffix != ".zip":
        raise ConfigError(f"--resume {path}: not a .zip checkpoint; pass checkpoints/<exp>/*.zip")
    if not resolved.is_relative_to(paths.checkpoints.resolve()):
        raise ConfigError(
            f"--resume {path}: refusing to load a checkpoint outside "
            f"{paths.checkpoints} (checkpoints contain pickled code); copy it into "
            "checkpoints/<experiment>/ if you trust it"
        )
    if not resolved.is_file():
        raise ConfigError(f"--resume {path}: checkpoint file not found")
    return resolved


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def git_commit(workspace: Path) -> str | None:
    """HEAD of the workspace's git repository, or None (not a repo, no commits, no git)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(workspace), "rev-parse", "--verify", "-q", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and commit else None


GAME_MEMBER = "cosmic_game.json"


def save_model_atomic(model: Any, path: Path, game: Any) -> str:
    """Save an SB3 model with an atomic replace; returns the file's sha256.

    The game settings it was trained under ride along as the zip member ``GAME_MEMBER``
    (SB3's loader ignores members it does not know), so a later stage can tell which
    action dimensions this policy ever used (see :func:`reset_unused_actions`).
    """
    from cosmic_curriculum.fsio import atomic_write_bytes

    buffer = io.BytesIO()
    model.save(buffer)
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.writestr(GAME_MEMBER, json.dumps(game.model_dump(), sort_keys=True))
    data = buffer.getvalue()
    atomic_write_bytes(path, data)
    return hashlib.sha256(data).hexdigest()


def checkpoint_game(path: Path) -> dict[str, Any] | None:
    """The game settings recorded in a checkpoint, or None (older or foreign files)."""
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(archive.read(GAME_MEMBER))
    except (KeyError, OSError, ValueError, zipfile.BadZipFile):
        return None
    return data if isinstance(data, dict) else None


ACTION_NAMES = ("thrust", "strafe", "lift", "yaw", "pitch", "roll")  # arena.rules order
# Action indices some games ignore: lift without vertical play, pitch and roll while ships
# stay level.
_LIFT, _PITCH, _ROLL = 2, 4, 5


def unused_actions(game: dict[str, Any]) -> set[int]:
    """Action indices that had no effect in a game with these settings."""
    unused: set[int] = set()
    if not game.get("allow_vertical", True):
        unused.add(_LIFT)
    if not game.get("allow_pitch_roll", True):
        unused |= {_PITCH, _ROLL}
    return unused


def reset_unused_actions(policy: Any, previous: dict[str, Any] | None, game: Any) -> list[int]:
    """Zero the action head's rows for actions the previous game ignored but this one uses.

    A planar stage never rewards or punishes lift, pitch or roll, so the head's outputs
    for them drift to arbitrary values: the planar bot entering 3-D pitched its nose at
    half rate from the kickoff, tumbled, and won 1 of 200 games against an inert opponent
    (49 with those outputs at zero). Zero rows give a mean of 0 (hold attitude, no
    lift), where a fresh policy starts; the rows keep learning from there.
    """
    import torch

    if previous is None:
        return []
    dims = sorted(unused_actions(previous) - unused_actions(game.model_dump()))
    if dims:
        with torch.no_grad():
            policy.action_net.weight[dims] = 0.0
            policy.action_net.bias[dims] = 0.0
    return dims


# --------------------------------------------------------------------------------------
# game settings and opponents


def game_settings(settings: TrainSettings) -> Any:
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


def scripted_opponent(mode: str, opponent_bot: Path | None, workspace: Path, speedup: int) -> Any:
    """The fixed opponent of a non-self-play run."""
    from cosmic_curriculum import bots

    if mode == "bot":
        assert opponent_bot is not None
        path = opponent_bot if opponent_bot.is_absolute() else workspace / opponent_bot
        try:
            return bots.load_bot(path)
        except BotError as exc:
            raise ConfigError(f"--opponent-bot {opponent_bot}: {exc}") from None
    return bots.bot_from_spec(mode, decision_ticks=speedup)


# --------------------------------------------------------------------------------------
# the SB3 parts (imported lazily: torch is slow to import)


def ppo_layout(settings: TrainSettings) -> tuple[int, int]:
    """(n_steps per game, batch_size) for a rollout of about ``rollout_size`` steps.

    The minibatch must divide the rollout (n_steps x n_games), or SB3 trains on a ragged
    last minibatch; we take the largest divisor not above ``batch_size``.
    """
    n_steps = max(8, math.ceil(settings.rollout_size / settings.n_parallel))
    buffer = n_steps * settings.n_parallel
    batch = min(settings.batch_size, buffer)
    while buffer % batch:
        batch -= 1
    return n_steps, batch


def resolve_device(requested: str) -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda: CUDA is not available here; use --device cpu or auto")
    return requested


def ppo_kwargs(settings: TrainSettings) -> dict[str, Any]:
    """Hyperparameters that may change between runs (also applied when resuming)."""
    n_steps, batch = ppo_layout(settings)
    return {
        "learning_rate": settings.learning_rate,
        "n_steps": n_steps,
        "batch_size": batch,
        "n_epochs": settings.n_epochs,
        "gamma": settings.gamma,
        "gae_lambda": settings.gae_lambda,
        "clip_range": settings.clip_range,
        "ent_coef": settings.ent_coef,
    }


def policy_kwargs(settings: TrainSettings) -> dict[str, Any]:
    from torch import nn

    width = list(settings.net_arch)
    activation = nn.Tanh if settings.activation == "tanh" else nn.ReLU
    return {
        "net_arch": {"pi": width, "vf": list(width)},
        "activation_fn": activation,
        "log_std_init": math.log(settings.init_std),
    }


def set_log_std(policy: Any, std: float) -> None:
    """Reopen exploration: every action dimension's std becomes ``std``."""
    import torch

    with torch.no_grad():
        policy.log_std.fill_(math.log(std))


def snapshot_bot(model: Any, settings: TrainSettings, game: Any, timesteps: int) -> Any:
    """A frozen numpy copy of the learner (for self-play); no file is written."""
    from cosmic_curriculum import bots, export

    mean, std = export.observation_normalisation(model.policy)
    return bots.MlpBot(export.policy_layers(model.policy), mean, std, settings.speedup, game)


class _StopFlag:
    """Set by SIGINT/SIGTERM: training stops at the next env step, saves and exports."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.at = 0.0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:
            # A terminal's Ctrl-C reaches both the wrapper (which forwards it) and us: a
            # repeat within a second is the same request. A later one means "abort now".
            if time.monotonic() - self.at > 1.0:
                raise KeyboardInterrupt
            return
        self.signum = signum
        self.at = time.monotonic()
        sys.stderr.write(
            f"{signal.Signals(signum).name}: stopping after this step, saving a checkpoint "
            "and a partial bot (send again to abort)\n"
        )
        sys.stderr.flush()


@contextlib.contextmanager
def _signals_handled(flag: _StopFlag) -> Iterator[None]:
    previous = {sig: signal.signal(sig, flag) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@dataclass
class SwapEvent:
    """One self-play opponent swap: when, and which snapshot (-1: the scripted rookie)."""

    timesteps: int
    snapshot_timesteps: int
    latest: bool


@dataclass
class RunStats:
    """What the callbacks observed (returned to callers and tests)."""

    progress: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[Path] = field(default_factory=list)
    swaps: list[SwapEvent] = field(default_factory=list)
    snapshots: list[int] = field(default_factory=list)
    episodes: int = 0


def make_callbacks(
    settings: TrainSettings,
    paths: Paths,
    game: Any,
    total: int,
    stats: RunStats,
    stop: _StopFlag,
) -> list[Any]:
    """Progress, checkpoint, stop-on-signal and (for self-play) ghost-opponent callbacks."""
    from stable_baselines3.common.callbacks import BaseCallback

    from cosmic_curriculum.progress import format_progress

    class Progress(BaseCallback):
        """Episode stats from infos; a flushed ``@progress`` line every few seconds."""

        def __init__(self) -> None:
            super().__init__()
            self.returns: deque[float] = deque(maxlen=400)
            self.outcomes: deque[int] = deque(maxlen=400)
            self.t0 = time.monotonic()
            self.start_steps = 0
            self.last_print = 0.0

        def _on_training_start(self) -> None:
            self.t0 = time.monotonic()
            self.start_steps = self.num_timesteps
            self.last_print = self.t0

        def _on_step(self) -> bool:
            dones = self.locals["dones"]
            if dones.any():
                infos = self.locals["infos"]
                for idx in np.flatnonzero(dones):
                    info = infos[idx]
                    episode = info.get("episode")
                    if episode is not None:
                        self.returns.append(float(episode["r"]))
                    if "outcome" in info:
                        self.outcomes.append(int(info["outcome"]))
                    stats.episodes += 1
            now = time.monotonic()
            if now - self.last_print >= settings.progress_interval:
                self.emit(now)
            return stop.signum is None

        def emit(self, now: float | None = None) -> None:
            now = time.monotonic() if now is None else now
            self.last_print = now
            elapsed = max(now - self.t0, 1e-9)
            fields: dict[str, Any] = {
                "timesteps": self.num_timesteps,
                "total": total,
                "fps": (self.num_timesteps - self.start_steps) / elapsed,
                "reward": float(np.mean(self.returns)) if self.returns else None,
                "win_rate": (
                    float(np.mean(np.asarray(self.outcomes) == 1)) if self.outcomes else None
                ),
            }
            stats.progress.append(fields)
            print(format_progress(**fields), flush=True)

        def _on_training_end(self) -> None:
            self.emit()

    class Checkpoints(BaseCallback):
        """``step_<n>.zip`` every ``checkpoint_every`` timesteps, at an update boundary.

        Saved when a rollout starts, i.e. right after an update, so the count in the file
        is exactly the experience the weights were trained on.
        """

        def __init__(self) -> None:
            super().__init__()
            self.last = 0

        def _on_training_start(self) -> None:
            self.last = self.num_timesteps

        def _on_rollout_start(self) -> None:
            if self.num_timesteps - self.last >= settings.checkpoint_every:
                self.last = self.num_timesteps
                path = paths.experiment_dir / f"step_{self.num_timesteps}.zip"
                save_model_atomic(self.model, path, game)
                stats.checkpoints.append(path)
                for _, old in step_checkpoints(paths.experiment_dir)[: -settings.keep_checkpoints]:
                    with contextlib.suppress(FileNotFoundError):
                        old.unlink()

        def _on_step(self) -> bool:
            return True

    class GhostOpponent(BaseCallback):
        """Self-play against a window of frozen snapshots of the learner."""

        def __init__(self) -> None:
            super().__init__()
            self.window: deque[tuple[int, Any]] = deque(maxlen=settings.selfplay_window)
            self.rng = np.random.default_rng(settings.seed + 7919)
            self.next_snapshot = 0
            self.next_swap = 0
            self.rookie = scripted_opponent("rookie", None, paths.workspace, settings.speedup)

        def snapshot(self) -> None:
            bot = snapshot_bot(self.model, settings, game, self.num_timesteps)
            self.window.append((self.num_timesteps, bot))
            stats.snapshots.append(self.num_timesteps)
            self.next_snapshot = self.num_timesteps + settings.selfplay_snapshot_every

        def swap(self) -> None:
            latest = False
            if self.rng.random() < settings.selfplay_rookie_share:
                steps, bot = -1, self.rookie
            elif len(self.window) == 1 or self.rng.random() < settings.selfplay_play_latest:
                latest = True
                steps, bot = self.window[-1]
            else:
                steps, bot = self.window[int(self.rng.integers(0, len(self.window) - 1))]
            env: Any = self.training_env  # our ArenaVecEnv (SB3 does not wrap a VecEnv)
            env.set_opponent(bot)
            stats.swaps.append(SwapEvent(self.num_timesteps, steps, latest))
            self.next_swap = self.num_timesteps + settings.selfplay_swap_every

        def _on_training_start(self) -> None:
            # The learner as it starts (a fresh net, or the previous stage's policy) is
            # the first opponent.
            self.snapshot()
            self.swap()

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next_snapshot:
                self.snapshot()
            if self.num_timesteps >= self.next_swap:
                self.swap()
            return True

    callbacks: list[Any] = [Progress(), Checkpoints()]
    if settings.opponent_mode == "self_play":
        callbacks.append(GhostOpponent())
    return callbacks


# --------------------------------------------------------------------------------------
# the run


@dataclass
class TrainResult:
    experiment: str
    timesteps: int
    bot: Path
    checkpoint: Path
    partial: bool
    exit_code: int
    stats: RunStats
    continued_from: Path | None = None
    resumed_from: Path | None = None


def export_bot(
    model: Any,
    settings: TrainSettings,
    paths: Paths,
    game: Any,
    checkpoint: Path,
    checkpoint_sha256: str,
    partial: bool,
    resumed_from: Path | None,
) -> Path:
    """Write ``bots/<exp>.json`` (numpy layers, normalisation, game, provenance)."""
    from cosmic_curriculum import bots, export

    mean, std = export.observation_normalisation(model.policy)
    provenance = {
        "experiment": settings.experiment,
        "timesteps": int(model.num_timesteps),
        "settings": settings.model_dump(mode="json", exclude={"workspace"}),
        "git_commit": git_commit(paths.workspace),
        "checkpoint": str(checkpoint.relative_to(paths.workspace)),
        "checkpoint_sha256": checkpoint_sha256,
        "resumed_from": (
            str(resumed_from.relative_to(paths.workspace)) if resumed_from is not None else None
        ),
        "action_log_std": export.log_std(model.policy),
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    document = bots.mlp_bot_document(
        export.policy_layers(model.policy),
        mean,
        std,
        game.model_dump(),
        settings.speedup,
        provenance,
        partial=partial,
    )
    bots.save_bot(paths.bot, document)
    return paths.bot


def plot_curve(paths: Paths, stats: RunStats) -> None:
    """``logs/<exp>.curve.png`` from the log's progress lines (or this run's, if no log)."""
    from cosmic_curriculum import curves

    try:
        series = curves.read_progress(paths.log) if paths.log.is_file() else []
        if len(series) < len(stats.progress):
            series = list(stats.progress)
        curves.plot_experiment(series, paths.curve, title=paths.log.stem)
    except Exception as exc:  # a plot must never fail a finished training run
        sys.stderr.write(f"warning: could not plot the learning curve: {exc}\n")


def train(settings: TrainSettings, extra_callbacks: Sequence[Any] = ()) -> TrainResult:
    """Train (or continue) one experiment; always leaves a checkpoint and a bot behind.

    ``extra_callbacks`` (SB3 callbacks) run after ours; tests use them to watch the games.
    """
    import torch

    torch.set_num_threads(settings.torch_threads)
    device = resolve_device(settings.device)
    paths = Paths.of(settings)
    game = game_settings(settings)

    continued_from: Path | None = None
    resumed_from: Path | None = None
    if settings.resume is not None:
        ckpt = checked_checkpoint(settings.resume, paths)
        if ckpt.parent == paths.experiment_dir.resolve():
            continued_from = ckpt
        else:
            resumed_from = ckpt
    elif paths.final.is_file():
        return _reexport(settings, paths, game, device)
    else:
        leftovers = step_checkpoints(paths.experiment_dir)
        if leftovers:
            continued_from = leftovers[-1][1]

    from stable_baselines3 import PPO

    from cosmic_curriculum.arena.vec_env import ArenaVecEnv

    if settings.opponent_mode == "self_play":
        # The real opponent is set by the ghost callback before the first step.
        opponent = scripted_opponent("inert", None, paths.workspace, settings.speedup)
    else:
        opponent = scripted_opponent(
            settings.opponent_mode, settings.opponent_bot, paths.workspace, settings.speedup
        )
    env = ArenaVecEnv(settings.n_parallel, game, opponent, settings.seed)

    tensorboard_log = None
    with contextlib.suppress(ImportError):
        import tensorboard  # noqa: F401

        tensorboard_log = str(paths.logs / "tensorboard")

    start = continued_from or resumed_from
    if start is None:
        model = PPO(
            "MlpPolicy",
            env,
            policy_kwargs=policy_kwargs(settings),
            seed=settings.seed,
            device=device,
            verbose=0,
            tensorboard_log=tensorboard_log,
            **ppo_kwargs(settings),
        )
    else:
        try:
            model = PPO.load(
                start,
                env=env,
                device=device,
                tensorboard_log=tensorboard_log,
                **ppo_kwargs(settings),
            )
        except (ValueError, KeyError, OSError, RuntimeError) as exc:
            raise TrainerError(f"--resume {start}: cannot load checkpoint: {exc}") from None
        model.set_random_seed(settings.seed)
        if resumed_from is not None:
            if settings.reset_std is not None:
                set_log_std(model.policy, settings.reset_std)
            freed = reset_unused_actions(model.policy, checkpoint_game(resumed_from), game)
            if freed:
                names = "/".join(ACTION_NAMES[i] for i in freed)
                print(
                    f"{names} had no effect in the game of {resumed_from.parent.name}/"
                    f"{resumed_from.name}: their outputs restart at 0",
                    flush=True,
                )
    if tensorboard_log is None:
        # SB3's own logger without outputs still creates an empty SB3-<date> folder in the
        # system temp dir on every run; a logger with no outputs and no folder does not.
        from stable_baselines3.common.logger import Logger

        model.set_logger(Logger(folder=None, output_formats=[]))

    if continued_from is not None:
        total = settings.timesteps
        remaining = max(0, total - int(model.num_timesteps))
        print(
            f"continuing {settings.experiment} from {continued_from.name} at "
            f"{model.num_timesteps} of {total} timesteps",
            flush=True,
        )
    else:
        total = remaining = settings.timesteps

    stats = RunStats()
    stop = _StopFlag()
    paths.experiment_dir.mkdir(parents=True, exist_ok=True)
    with _signals_handled(stop):
        try:
            if remaining > 0:
                model.learn(
                    total_timesteps=remaining,
                    callback=[
                        *make_callbacks(settings, paths, game, total, stats, stop),
                        *extra_callbacks,
                    ],
                    reset_num_timesteps=continued_from is None,
                    tb_log_name=settings.experiment,
                    progress_bar=False,
                )
        finally:
            env.close()
        partial = stop.signum is not None
        if partial:
            checkpoint = paths.experiment_dir / f"step_{model.num_timesteps}.zip"
        else:
            checkpoint = paths.final
        sha = save_model_atomic(model, checkpoint, game)
        export_bot(model, settings, paths, game, checkpoint, sha, partial, resumed_from)
    plot_curve(paths, stats)
    exit_code = 128 + stop.signum if stop.signum is not None else 0
    print(
        f"{'stopped' if partial else 'trained'} {settings.experiment}: "
        f"{model.num_timesteps} timesteps, checkpoint {checkpoint.relative_to(paths.workspace)}, "
        f"bot {paths.bot.relative_to(paths.workspace)}{' (partial)' if partial else ''}",
        flush=True,
    )
    return TrainResult(
        experiment=settings.experiment,
        timesteps=int(model.num_timesteps),
        bot=paths.bot,
        checkpoint=checkpoint,
        partial=partial,
        exit_code=exit_code,
        stats=stats,
        continued_from=continued_from,
        resumed_from=resumed_from,
    )


def _reexport(settings: TrainSettings, paths: Paths, game: Any, device: str) -> TrainResult:
    """A complete run (final.zip exists) is not retrained: its bot is exported again."""
    from stable_baselines3 import PPO

    try:
        model = PPO.load(paths.final, device=device)
    except (ValueError, KeyError, OSError, RuntimeError) as exc:
        raise TrainerError(
            f"{paths.final}: cannot load the finished checkpoint ({exc}); delete "
            f"{paths.experiment_dir} to retrain"
        ) from None
    sha = sha256_file(paths.final)
    export_bot(model, settings, paths, game, paths.final, sha, False, None)
    print(
        f"{settings.experiment} is already trained ({model.num_timesteps} timesteps in "
        f"{paths.final.relative_to(paths.workspace)}); re-exported "
        f"{paths.bot.relative_to(paths.workspace)}. Delete {paths.experiment_dir.name}/ "
        "under checkpoints/ to train it again.",
        flush=True,
    )
    return TrainResult(
        experiment=settings.experiment,
        timesteps=int(model.num_timesteps),
        bot=paths.bot,
        checkpoint=paths.final,
        partial=False,
        exit_code=0,
        stats=RunStats(),
    )
