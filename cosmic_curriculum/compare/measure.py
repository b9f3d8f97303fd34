"""Measure an arm's checkpoints on the last stage's env (Gymnasium stages): each SB3
checkpoint becomes an env bot of that env (its network as trained, whatever room it
trained in) and plays the same episode seeds as every other checkpoint and arm, with the
gate's success rule and action choice. Results are cached per arm (atomic writes), so a
resumed compare measures nothing twice.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cosmic_curriculum.envs.evaluate import EnvRunner, RandomPlayer, episode_seeds
from cosmic_curriculum.errors import CompareError
from cosmic_curriculum.system import fsio
from cosmic_curriculum.workspace.env_config import EnvSpec


@dataclass(frozen=True)
class Probe:
    """How every checkpoint is measured: the last stage's env and the gate's rules."""

    spec: EnvSpec
    algo: str
    seed: int
    success_return: float | None
    deterministic: bool


def _result(totals: list[float], successes: list[bool]) -> dict[str, Any]:
    n = len(totals)
    return {
        "episodes": n,
        "successes": sum(successes),
        "success_rate": sum(successes) / n,
        "mean_return": sum(totals) / n,
        "returns": totals,
    }


def play_checkpoint(checkpoint: Path, probe: Probe, episodes: int) -> dict[str, Any]:
    """``checkpoint`` on ``episodes`` seeds of the last stage's env."""
    from cosmic_curriculum.envs.algos import algo_class
    from cosmic_curriculum.envs.export import env_bot_from_model

    stats = checkpoint.with_name(f"{checkpoint.stem}.vecnormalize.pkl")
    try:
        model = algo_class(probe.algo).load(str(checkpoint), device="cpu")
        norm = pickle.loads(stats.read_bytes()) if stats.is_file() else None
    except Exception as exc:  # a torn or foreign zip: one line naming it
        raise CompareError(f"{checkpoint}: cannot load the checkpoint ({exc})") from None
    bot = env_bot_from_model(model, probe.spec, normalizer=norm)
    runner = EnvRunner(bot, min(16, episodes), probe.success_return)
    try:
        eps = runner.play(
            bot,
            episode_seeds(probe.seed, episodes),
            probe.deterministic,
            np.random.default_rng([probe.seed, 1]),
        )
    finally:
        runner.close()
    return _result([e.total for e in eps], [e.success for e in eps])


def play_random(probe: Probe, episodes: int, bot_checkpoint: Path) -> dict[str, Any]:
    """The built-in random reference on the same seeds (for the finals' head to head)."""
    from cosmic_curriculum.envs.algos import algo_class
    from cosmic_curriculum.envs.export import env_bot_from_model

    model = algo_class(probe.algo).load(str(bot_checkpoint), device="cpu")
    bot = env_bot_from_model(model, probe.spec)
    runner = EnvRunner(bot, min(16, episodes), probe.success_return)
    try:
        player = RandomPlayer(runner.envs[0].action_space, probe.seed)
        eps = runner.play(
            player,
            episode_seeds(probe.seed, episodes),
            probe.deterministic,
            np.random.default_rng([probe.seed, 2]),
        )
    finally:
        runner.close()
    return _result([e.total for e in eps], [e.success for e in eps])


class Cache:
    """``compare/measures/<run>.json``: every measured checkpoint by its path and sha256."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = {}
        if path.is_file():
            loaded = fsio.read_json(path, "compare measures")
            self.data = loaded if isinstance(loaded, dict) else {}

    def get(self, key: str, make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        if key not in self.data:
            self.data[key] = make()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fsio.atomic_write_json(self.path, self.data)
        result: dict[str, Any] = self.data[key]
        return result


def checkpoint_key(checkpoint: Path, episodes: int, seed: int) -> str:
    digest = hashlib.sha256(checkpoint.read_bytes()).hexdigest()[:16]
    return f"{checkpoint.parent.name}/{checkpoint.name}:{digest}:{episodes}:{seed}"
