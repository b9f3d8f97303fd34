"""Shared by the trainer's tests: tiny settings, a callback that watches the games.

Budgets are tiny (a few hundred env steps per update, a net of 16 units), so each training
run takes a second or two.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from stable_baselines3.common.callbacks import BaseCallback

from cosmic_curriculum import train
from cosmic_curriculum.progress import parse_progress_line

torch.set_num_threads(1)


def tiny(ws: Path, name: str = "exp", **overrides: Any) -> train.TrainSettings:
    options: dict[str, Any] = {
        "experiment": name,
        "workspace": ws,
        "timesteps": 1024,
        "n_parallel": 16,
        "speedup": 16,
        "rollout_size": 256,
        "batch_size": 128,
        "n_epochs": 1,
        "checkpoint_every": 512,
        "net_arch": (16,),
        "device": "cpu",
        "opponent_mode": "inert",
    }
    options.update(overrides)
    return train.settings_from_options(**options)


class Watch(BaseCallback):
    """Records what the games look like while the trainer trains."""

    def __init__(self, every_step: Any = None, at_start: Any = None) -> None:
        super().__init__()
        self.every_step = every_step
        self.at_start = at_start
        self.seen: list[Any] = []
        self.started: Any = None

    def _on_training_start(self) -> None:
        if self.at_start is not None:
            self.started = self.at_start(self)

    def _on_step(self) -> bool:
        if self.every_step is not None:
            self.seen.append(self.every_step(self))
        return True


def env_of(cb: BaseCallback) -> Any:
    return cb.training_env


def progress_lines(text: str) -> list[dict[str, Any]]:
    return [p for line in text.splitlines() if (p := parse_progress_line(line)) is not None]
