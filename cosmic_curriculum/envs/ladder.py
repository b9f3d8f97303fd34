"""The env bots' round robin: every bot of one env plays the same episode seeds.

Each player (an env bot JSON, its ONNX twin, or ``random``) plays the ladder's episode
seeds once, greedily, with the env evaluator's runner (``envs/evaluate.py``); a match
pairs two players' episodes seed by seed and the higher return wins the pair, equal
returns draw, as in an evaluation. All players must play one env spec: another is refused
in one line. The Elo fit and the files are the arena ladder's (``evaluation/ladder.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.defaults import ENV_EVAL_BATCH
from cosmic_curriculum.envs.evaluate import (
    RANDOM,
    EnvRunner,
    Episode,
    Player,
    RandomPlayer,
    check_env_episodes,
    episode_seeds,
    pair_counts,
)
from cosmic_curriculum.envs.onnx_twin import load_env_player
from cosmic_curriculum.envs.policy import is_env_bot_file
from cosmic_curriculum.errors import BotError, CurriculumError, EvaluationError


@dataclass
class RoundRobin:
    names: list[str]
    paths: list[str]
    games: NDArray[np.float64]
    points: NDArray[np.float64]
    wins: NDArray[np.int64]
    env: dict[str, Any]
    mean_returns: dict[str, float] = field(default_factory=dict)
    skipped: list[tuple[Path, str]] = field(default_factory=list)


def has_env_bots(bots_dir: Path) -> bool:
    """Whether ``bots_dir`` holds an env bot (then its ladder is the env ladder)."""
    return Path(bots_dir).is_dir() and any(map(is_env_bot_file, Path(bots_dir).glob("*.json")))


def _is_random(name: str) -> bool:
    return name in (RANDOM, f"builtin:{RANDOM}")


def _discover(bots_dir: Path) -> tuple[list[Path], list[tuple[Path, str]]]:
    good: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for path in sorted(Path(bots_dir).iterdir()):
        if path.suffix == ".onnx" and path.with_suffix(".json").is_file():
            continue  # the twin of a bot that plays: the same bot
        if path.suffix not in (".json", ".onnx"):
            continue
        if path.suffix == ".json" and not is_env_bot_file(path):
            skipped.append((path, f"{path}: not an env bot (an arena bot plays `ladder` alone)"))
            continue
        good.append(path)
    return good, skipped


def env_round_robin(
    bots_dir: Path, *, pairs: int, seed: int, players: Sequence[str] = ()
) -> RoundRobin:
    """Play every env bot in ``bots_dir`` plus ``players`` (paths or ``random``) on
    ``pairs`` shared episode seeds and tally each match."""
    if pairs < 1:
        raise EvaluationError(f"--pairs {pairs}: need at least 1 episode seed per match")
    check_env_episodes(pairs, "--pairs")
    found, skipped = _discover(bots_dir)
    sources: list[str] = [str(p) for p in found] + list(players)
    loaded: list[tuple[str, str, Any]] = []  # name, path, player (None: random)
    for source in sources:
        if _is_random(source):
            loaded.append((RANDOM, RANDOM, None))
            continue
        try:
            loaded.append((Path(source).stem, source, load_env_player(Path(source))))
        except BotError as exc:
            if source in players:
                raise
            skipped.append((Path(source), str(exc)))
    bots = [(n, p, b) for n, p, b in loaded if b is not None]
    if not bots:
        raise EvaluationError(f"--bots-dir {bots_dir}: no loadable env bot to rank")
    if len(loaded) < 2:
        raise EvaluationError(
            f"--bots-dir {bots_dir}: a ladder needs at least 2 players, found {len(loaded)} "
            "(add `--bot random`)"
        )
    _, first_path, first = bots[0]
    for _, path, bot in bots[1:]:
        if bot.env != first.env:
            raise EvaluationError(
                f"{path} plays env {_describe(bot.env)} but {first_path} plays "
                f"{_describe(first.env)}; a ladder ranks bots of one env spec (move one out "
                "of --bots-dir)"
            )
    names = [n for n, _, _ in loaded]
    if len(set(names)) < len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise EvaluationError(f"two ladder players are named {twice[0]!r}; rename one of them")
    seeds = episode_seeds(seed, pairs)
    try:
        runner = EnvRunner(first, min(len(seeds), ENV_EVAL_BATCH), None)
    except CurriculumError as exc:
        raise EvaluationError(f"{first_path}: its env does not build ({exc})") from None
    try:
        played = [_episodes(runner, b, seeds, seed) for _, _, b in loaded]
    finally:
        runner.close()
    k = len(loaded)
    games, points = np.zeros((k, k)), np.zeros((k, k))
    wins = np.zeros((k, k), dtype=np.int64)
    for i in range(k):
        for j in range(i + 1, k):
            c = pair_counts(played[i], played[j])
            games[i, j] = games[j, i] = c["episodes"]
            points[i, j] = c["wins_a"] + c["draws"] / 2
            points[j, i] = c["wins_b"] + c["draws"] / 2
            wins[i, j], wins[j, i] = c["wins_a"], c["wins_b"]
    means = {n: float(np.mean([e.total for e in p])) for n, p in zip(names, played, strict=True)}
    env = first.env.model_dump(mode="json")
    paths = [p for _, p, _ in loaded]
    return RoundRobin(names, paths, games, points, wins, env, means, skipped)


def _describe(spec: Any) -> str:
    extras = [f"kwargs {spec.kwargs}" if spec.kwargs else "", f"{len(spec.wrappers)} wrappers"]
    return f"{spec.id!r} ({', '.join(e for e in extras if e)})"


def _episodes(runner: EnvRunner, bot: Any, seeds: list[int], seed: int) -> list[Episode]:
    player: Player = bot if bot is not None else RandomPlayer(runner.envs[0].action_space, seed)
    return runner.play(player, seeds, True, np.random.default_rng(seed))
