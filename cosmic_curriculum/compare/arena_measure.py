"""Measure an arena arm's checkpoints on the last stage: each SB3 checkpoint becomes an MLP
bot of the last stage's game and plays seat-swapped pairs against one fixed reference bot
(the same bot, seeds and game for every arm), and the final bots play each other.

The last stage's game is the one its trainer recorded in its checkpoints (zip member
``cosmic_game.json``), so it is exactly what the curriculum's gate plays. A checkpoint of
a stage whose game ignored some actions (planar: lift; level: pitch and roll) enters the
last stage with those outputs at zero, as the curriculum carries it into the next stage
(``train.checkpoints.reset_unused_actions``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cosmic_curriculum.errors import CompareError
from cosmic_curriculum.evaluation import stats
from cosmic_curriculum.evaluation.evaluate import MAX_BATCH_PAIRS, batch_seed


@dataclass(frozen=True)
class ArenaProbe:
    """How every arena checkpoint is measured: the last stage's game, the reference, seeds."""

    game: dict[str, Any]
    reference: Path
    seed: int

    def tag(self) -> str:
        """What a cached result depends on besides the checkpoint: game and reference."""
        from cosmic_curriculum.bots import bot_sha256

        game = hashlib.sha256(json.dumps(self.game, sort_keys=True).encode()).hexdigest()[:12]
        return f"arena:{game}:{bot_sha256(self.reference)[:12]}"


def last_stage_game(checkpoints: Iterable[Path]) -> dict[str, Any] | None:
    """The game recorded in the first of ``checkpoints`` (final ones of the last stage)
    that has one."""
    from cosmic_curriculum.train.checkpoints import checkpoint_game

    for path in checkpoints:
        if path.is_file() and (game := checkpoint_game(path)) is not None:
            return game
    return None


def checkpoint_bot(checkpoint: Path, game: dict[str, Any]) -> Any:
    """``checkpoint``'s policy as a bot of ``game``."""
    from stable_baselines3 import PPO

    from cosmic_curriculum.arena.settings import GameSettings
    from cosmic_curriculum.bots import bot_from_document, mlp_bot_document
    from cosmic_curriculum.train import policy_to_bot as export
    from cosmic_curriculum.train.checkpoints import checkpoint_game, reset_unused_actions

    try:
        model = PPO.load(str(checkpoint), device="cpu")
    except Exception as exc:  # a torn or foreign zip: one line naming it
        raise CompareError(f"{checkpoint}: cannot load the checkpoint ({exc})") from None
    settings = GameSettings(**game)
    reset_unused_actions(model.policy, checkpoint_game(checkpoint), settings)
    mean, std = export.observation_normalisation(model.policy)
    document = mlp_bot_document(
        export.policy_layers(model.policy),
        mean,
        std,
        game,
        settings.decision_ticks,
        {"checkpoint": checkpoint.name},
    )
    return bot_from_document(document, str(checkpoint))


def play(bot_a: Any, bot_b: Any, episodes: int, seed: int, game: dict[str, Any]) -> dict[str, Any]:
    """``bot_a`` against ``bot_b``: ``episodes`` games (rounded up to whole seat-swapped
    pairs), A's wins, losses and draws, its score and the score's 95% interval."""
    from cosmic_curriculum.arena.match import play_pairs
    from cosmic_curriculum.arena.settings import GameSettings

    settings = GameSettings(**game)
    pairs, batch = max(1, (episodes + 1) // 2), 0
    wins = losses = draws = 0
    while pairs > 0:
        n = min(pairs, MAX_BATCH_PAIRS)
        outcomes = np.asarray(
            play_pairs(bot_a, bot_b, n, batch_seed(seed, batch), settings).outcomes
        )
        wins += int((outcomes == 1).sum())
        losses += int((outcomes == -1).sum())
        draws += int((outcomes == 0).sum())
        pairs -= n
        batch += 1
    return result(wins, losses, draws)


def result(wins: int, losses: int, draws: int) -> dict[str, Any]:
    """A head-to-head's counts as compare records them (pure)."""
    n = wins + losses + draws
    s = stats.score(wins, losses, draws)
    half = stats.Z95 * (stats.score_variance(wins, losses, draws) / n) ** 0.5
    return {
        "episodes": n,
        "wins": wins,
        "losses": losses,
        "draws": draws,
        "score": s,
        "score_interval": [max(0.0, s - half), min(1.0, s + half)],
    }


def play_checkpoint(checkpoint: Path, probe: ArenaProbe, episodes: int) -> dict[str, Any]:
    """``checkpoint`` against the reference on ``episodes`` games of the last stage."""
    from cosmic_curriculum.bots import load_bot

    bot = checkpoint_bot(checkpoint, probe.game)
    return play(bot, load_bot(probe.reference), episodes, probe.seed, probe.game)


def play_finals(a: Path, b: Path, probe: ArenaProbe, episodes: int) -> dict[str, Any]:
    """Two arms' final checkpoints against each other (``a``'s counts)."""
    return play(
        checkpoint_bot(a, probe.game),
        checkpoint_bot(b, probe.game),
        episodes,
        probe.seed,
        probe.game,
    )
