"""Measure a game arm's checkpoints on the last stage (PettingZoo stages): each MaskablePPO
or PPO checkpoint becomes an env bot of the last stage's game by train-env's own export
(``train.game_run.game_bot``), written to ``compare/measures/bots/``, and plays
seat-swapped pairs against one fixed reference through the built-in game evaluator
(``envs.game_evaluate.evaluate_game``, its records in ``compare/measures/games.json``):
the same pair seeds for every checkpoint and arm, moves sampled unless the last stage's
gate says ``deterministic = true`` (the curriculum's own choice). The final bots play
each other the same way.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cosmic_curriculum.compare.arena_measure import result
from cosmic_curriculum.errors import CompareError
from cosmic_curriculum.workspace.config import CurriculumConfig
from cosmic_curriculum.workspace.env_config import EnvSpec

BOTS_DIR = "bots"
GAMES_FILE = "games.json"  # the evaluator's records, a history file's format


@dataclass(frozen=True)
class GameProbe:
    """How every game checkpoint is measured: the last stage's game, the algorithm its
    checkpoints load with, the reference, the pair seeds and the action choice."""

    spec: EnvSpec
    algo: str
    reference: str | Path  # "random", "search:N" or a bot file
    seed: int
    deterministic: bool
    measures: Path  # compare/measures: the bots and the evaluator's records

    def tag(self) -> str:
        """What a cached result depends on besides the checkpoint: the game, the
        reference (a file by its content) and the action choice."""
        game = json.dumps(self.spec.model_dump(), sort_keys=True).encode()
        ref = self.reference
        who = hashlib.sha256(ref.read_bytes()).hexdigest() if isinstance(ref, Path) else ref
        play = "greedy" if self.deterministic else "sampled"
        return f"game:{hashlib.sha256(game).hexdigest()[:12]}:{who[:24]}:{play}"


def game_probe(
    config: CurriculumConfig, reference: str | Path, seed: int, measures: Path
) -> GameProbe:
    """The last stage's probe: its game, its trainer's algorithm (train-env's default when
    unset: MaskablePPO on a masked game, else PPO) and its gate's action choice."""
    from cosmic_curriculum.envs.pettingzoo import default_algo, game_info

    last = len(config.stages) - 1
    spec = config.stage_env(last)
    algo = config.stage_trainer(last).algo or default_algo(game_info(spec))
    deterministic = config.stage_gate(last).game_deterministic()
    return GameProbe(spec, algo, reference, seed, deterministic, measures)


def games_of(episodes: int) -> int:
    """Games in whole seat-swapped pairs: ``episodes`` rounded up to an even count (pure)."""
    return 2 * max(1, (episodes + 1) // 2)


def checkpoint_bot(checkpoint: Path, probe: GameProbe) -> Path:
    """``checkpoint``'s policy as a bot file of the last stage's game (named by the
    checkpoint's content, so every arm's checkpoints have their own)."""
    from cosmic_curriculum.envs.algos import algo_class
    from cosmic_curriculum.envs.pettingzoo import game_info
    from cosmic_curriculum.envs.policy import save_env_bot
    from cosmic_curriculum.train.game_run import game_bot

    sha = hashlib.sha256(checkpoint.read_bytes()).hexdigest()
    try:
        model = algo_class(probe.algo).load(str(checkpoint), device="cpu")
    except Exception as exc:  # a torn or foreign zip: one line naming it
        raise CompareError(f"{checkpoint}: cannot load the checkpoint ({exc})") from None
    bot = game_bot(model, probe.spec, game_info(probe.spec), sha)
    path = probe.measures / BOTS_DIR / f"{checkpoint.parent.name}-{checkpoint.stem}-{sha[:12]}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    save_env_bot(bot, path)
    return path


def _play(bot: Path, other: str | Path, probe: GameProbe, episodes: int) -> dict[str, Any]:
    from cosmic_curriculum.envs.game_evaluate import evaluate_game

    record = evaluate_game(
        bot,
        other,
        history_path=probe.measures / GAMES_FILE,
        episodes=games_of(episodes),
        seed=probe.seed,
        deterministic=probe.deterministic,
        extra={"evaluated_by": "compare"},
    )
    return result(int(record["wins_a"]), int(record["wins_b"]), int(record["draws"]))


def play_checkpoint(checkpoint: Path, probe: GameProbe, episodes: int) -> dict[str, Any]:
    """``checkpoint`` against the reference: its wins, losses, draws and score."""
    return _play(checkpoint_bot(checkpoint, probe), probe.reference, probe, episodes)


def play_finals(a: Path, b: Path, probe: GameProbe, episodes: int) -> dict[str, Any]:
    """Two arms' final checkpoints against each other (``a``'s counts)."""
    return _play(checkpoint_bot(a, probe), checkpoint_bot(b, probe), probe, episodes)
