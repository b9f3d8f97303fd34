"""The SB3 callbacks of a training run: progress lines, periodic checkpoints, self-play.

This module imports stable-baselines3 (and so torch) at import time; the trainer imports
it only once it is about to train.

Self-play (Unity ML-Agents' ghost trainer, :class:`GhostOpponent`): every
``selfplay_snapshot_every`` (50k) timesteps the learner is frozen into a window of the last
``selfplay_window`` (10) snapshots; every ``selfplay_swap_every`` (10k) timesteps the
opponent is replaced by the latest snapshot with probability ``selfplay_play_latest``
(0.5) and by a uniformly chosen older one otherwise. One addition: at a swap, with
probability ``selfplay_rookie_share`` (0.5) the opponent is the scripted rookie instead, a
fixed member of the pool. Pure self-play from a planar scorer learned 3-D play slowly and
drifted into strategies that only beat its own snapshots (0.31 then 0.52 against the
rookie after the 3-D stages); with the rookie in the pool the same budget reached 0.50
then 0.61. Snapshots are numpy bots (exported weights), so the opponent costs little.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from cosmic_curriculum.progress import format_progress
from cosmic_curriculum.train.checkpoints import save_model_atomic
from cosmic_curriculum.workspace.layout import step_checkpoint_name, step_checkpoints

if TYPE_CHECKING:
    from cosmic_curriculum.arena.settings import GameSettings
    from cosmic_curriculum.bots import Bot
    from cosmic_curriculum.train.settings import TrainSettings


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


class Progress(BaseCallback):
    """Episode stats from infos; a flushed ``@progress`` line every ``interval`` seconds.

    Returning False from a step ends training, which is how a stop request takes effect.
    """

    def __init__(
        self, total: int, interval: float, stats: RunStats, stop_requested: Callable[[], bool]
    ) -> None:
        super().__init__()
        self.total = total
        self.interval = interval
        self.stats = stats
        self.stop_requested = stop_requested
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
                self.stats.episodes += 1
        now = time.monotonic()
        if now - self.last_print >= self.interval:
            self.emit(now)
        return not self.stop_requested()

    def emit(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self.last_print = now
        elapsed = max(now - self.t0, 1e-9)
        fields: dict[str, Any] = {
            "timesteps": self.num_timesteps,
            "total": self.total,
            "fps": (self.num_timesteps - self.start_steps) / elapsed,
            "reward": float(np.mean(self.returns)) if self.returns else None,
            "win_rate": float(np.mean(np.asarray(self.outcomes) == 1)) if self.outcomes else None,
        }
        self.stats.progress.append(fields)
        print(format_progress(**fields), flush=True)

    def _on_training_end(self) -> None:
        self.emit()


class Checkpoints(BaseCallback):
    """``step_<n>.zip`` every ``every`` timesteps at an update boundary; the last ``keep`` stay.

    Saved when a rollout starts, i.e. right after an update, so the count in the file
    is exactly the experience the weights were trained on.
    """

    def __init__(
        self, directory: Path, every: int, keep: int, game: GameSettings, stats: RunStats
    ) -> None:
        super().__init__()
        self.directory = directory
        self.every = every
        self.keep = keep
        self.game = game
        self.stats = stats
        self.last = 0

    def _on_training_start(self) -> None:
        self.last = self.num_timesteps

    def _on_rollout_start(self) -> None:
        if self.num_timesteps - self.last >= self.every:
            self.last = self.num_timesteps
            path = self.directory / step_checkpoint_name(self.num_timesteps)
            save_model_atomic(self.model, path, self.game)
            self.stats.checkpoints.append(path)
            for _, old in step_checkpoints(self.directory)[: -self.keep]:
                with contextlib.suppress(FileNotFoundError):
                    old.unlink()

    def _on_step(self) -> bool:
        return True


def snapshot_bot(model: Any, decision_ticks: int, game: GameSettings) -> Bot:
    """A frozen numpy copy of the learner (for self-play); no file is written."""
    from cosmic_curriculum import bots
    from cosmic_curriculum.train import policy_to_bot as export

    mean, std = export.observation_normalisation(model.policy)
    return bots.MlpBot(export.policy_layers(model.policy), mean, std, decision_ticks, game)


class GhostOpponent(BaseCallback):
    """Self-play against a window of frozen snapshots of the learner (and the rookie)."""

    def __init__(
        self, settings: TrainSettings, game: GameSettings, rookie: Bot, stats: RunStats
    ) -> None:
        super().__init__()
        self.settings = settings
        self.game = game
        self.rookie = rookie
        self.stats = stats
        self.window: deque[tuple[int, Bot]] = deque(maxlen=settings.selfplay_window)
        self.rng = np.random.default_rng(settings.seed + 7919)
        self.next_snapshot = 0
        self.next_swap = 0

    def snapshot(self) -> None:
        bot = snapshot_bot(self.model, self.settings.speedup, self.game)
        self.window.append((self.num_timesteps, bot))
        self.stats.snapshots.append(self.num_timesteps)
        self.next_snapshot = self.num_timesteps + self.settings.selfplay_snapshot_every

    def swap(self) -> None:
        latest = False
        if self.rng.random() < self.settings.selfplay_rookie_share:
            steps, bot = -1, self.rookie
        elif len(self.window) == 1 or self.rng.random() < self.settings.selfplay_play_latest:
            latest = True
            steps, bot = self.window[-1]
        else:
            steps, bot = self.window[int(self.rng.integers(0, len(self.window) - 1))]
        env: Any = self.training_env  # our ArenaVecEnv (SB3 does not wrap a VecEnv)
        env.set_opponent(bot)
        self.stats.swaps.append(SwapEvent(self.num_timesteps, steps, latest))
        self.next_swap = self.num_timesteps + self.settings.selfplay_swap_every

    def _on_training_start(self) -> None:
        # The learner as it starts (a fresh net, or the previous stage's policy) is the
        # first opponent.
        self.snapshot()
        self.swap()

    def _on_step(self) -> bool:
        if self.num_timesteps >= self.next_snapshot:
            self.snapshot()
        if self.num_timesteps >= self.next_swap:
            self.swap()
        return True
