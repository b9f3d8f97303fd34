"""Shared helpers of the bot tests: random MLP layers and documents, files."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np

from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots import mlp_bot_document

REPO = Path(__file__).resolve().parents[2]


def random_layers(rng: np.random.Generator, sizes=(OBS_SIZE, 16, 8, ACT_SIZE)):
    acts = ["tanh", "relu", "linear"]
    return [
        (rng.normal(size=(o, i)), rng.normal(size=o), acts[k])
        for k, (i, o) in enumerate(itertools.pairwise(sizes))
    ]


def mlp_doc(rng: np.random.Generator | None = None, **kw: Any) -> dict[str, Any]:
    rng = rng or np.random.default_rng(0)
    args: dict[str, Any] = {
        "layers": random_layers(rng),
        "obs_mean": rng.normal(size=OBS_SIZE),
        "obs_std": rng.uniform(0.5, 2.0, size=OBS_SIZE),
        "game": GameSettings(allow_vertical=False).model_dump(),
        "decision_ticks": 8,
        "provenance": {"experiment": "unit", "timesteps": 123, "git_commit": None},
    }
    args.update(kw)
    return mlp_bot_document(**args)


def write(tmp_path: Path, doc: Any, name: str = "bot.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


class Recording:
    """Plays like ``inner`` and keeps every observation the arena shows it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.decision_ticks = inner.decision_ticks
        self.seen: list[np.ndarray] = []

    def act(self, obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        self.seen.append(obs.copy())
        return self.inner.act(obs, rng)

    def reset(self, mask: np.ndarray) -> None:
        self.inner.reset(mask)


def arena_observations(count: int, seed: int = 0, settings: GameSettings | None = None):
    """``count`` real observations (float32 (count, OBS_SIZE)), drawn from both seats of
    rookie-vs-random matches played through ``arena.match.play_pairs``."""
    from cosmic_curriculum.arena.match import play_pairs
    from cosmic_curriculum.bots import RandomBot, bot_from_document, rookie_document

    settings = settings or GameSettings()
    rng = np.random.default_rng(seed)
    seen: list[np.ndarray] = []
    k = 0
    while sum(len(o) for o in seen) < 4 * count:
        rookie = Recording(bot_from_document(rookie_document()))
        rand = Recording(RandomBot(16))
        play_pairs(rookie, rand, 8, seed + k, settings)
        seen += rookie.seen + rand.seen
        k += 1
    pool = np.concatenate(seen).astype(np.float32)
    return pool[rng.choice(len(pool), size=count, replace=False)]
