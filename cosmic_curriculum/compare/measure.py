"""Measure an arm's checkpoints on the last stage's env (Gymnasium stages): each SB3
checkpoint becomes an env bot of that env (its network as trained, whatever room it
trained in) and plays the same episode seeds as every other checkpoint and arm, with the
gate's success rule and action choice; the final bots also play the built-in random
player on the same seeds (the reference the head to head reads).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cosmic_curriculum.compare.arm_rows import Measurer
from cosmic_curriculum.compare.cache import Cache
from cosmic_curriculum.envs.evaluate import EnvRunner, RandomPlayer, episode_seeds
from cosmic_curriculum.errors import CompareError
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
    return _episodes(probe, env_bot_from_model(model, probe.spec, normalizer=norm), episodes, 1)


def play_random(probe: Probe, episodes: int, bot_checkpoint: Path) -> dict[str, Any]:
    """The built-in random reference on the same seeds (for the finals' head to head)."""
    from cosmic_curriculum.envs.algos import algo_class
    from cosmic_curriculum.envs.export import env_bot_from_model

    model = algo_class(probe.algo).load(str(bot_checkpoint), device="cpu")
    bot = env_bot_from_model(model, probe.spec)
    return _episodes(probe, bot, episodes, 2, lambda space: RandomPlayer(space, probe.seed))


def _episodes(
    probe: Probe,
    bot: Any,
    episodes: int,
    stream: int,
    player: Callable[[Any], Any] | None = None,
) -> dict[str, Any]:
    """``bot``'s env (or ``player`` of its action space) on the probe's episode seeds;
    ``stream`` seeds the sampling, one a player."""
    runner = EnvRunner(bot, min(16, episodes), probe.success_return)
    try:
        eps = runner.play(
            bot if player is None else player(runner.envs[0].action_space),
            episode_seeds(probe.seed, episodes),
            probe.deterministic,
            np.random.default_rng([probe.seed, stream]),
        )
    finally:
        runner.close()
    return _result([e.total for e in eps], [e.success for e in eps])


def gymnasium_measurer(probe: Probe, final_episodes: int, measure: str) -> Measurer:
    """Checkpoints on the last stage's env; the final bots' rows get the random player's
    returns on the same episode seeds (``reference_returns``)."""

    def extra(final: Path, cache: Cache) -> dict[str, Any]:
        key = f"random:{final_episodes}:{probe.seed}"
        ref = cache.get(key, lambda: play_random(probe, final_episodes, final))
        return {"reference_returns": ref["returns"]}

    return Measurer(
        play=lambda path, episodes: play_checkpoint(path, probe, episodes),
        tag="gymnasium",
        measure=measure,
        extra=extra,
    )
