"""The built-in evaluator of PettingZoo stages: seat-swapped pairs of games.

Each pair is one game seed played twice, the candidate in the first seat, then in the
second; a game is won by the higher total reward (zero-sum), equal totals and games cut at
the move cap draw. The record is the arena evaluator's shape: ``wins_a`` (candidate),
``wins_b``, ``draws``, ``episodes`` (games), ``pairs`` (the candidate's outcome first,
then second: 1, 0, -1) and the games played after a sequential gate had decided, shown
and not counted; plus the ``seeds`` of the pairs, ``deterministic``, ``max_moves`` and
``cut_games``. Seeds are fresh per evaluation (drawn from its ``seed``).

Games are BATCHED: ``GAME_EVAL_BATCH`` games step in lockstep (:mod:`.game_table`), one
batched call per player per move. ``decided(counts)`` (the caller's gate) is asked after
every pair, with the pairs' scores, so SPRT stops as soon as it can; ``gate_of(counts)``
gives the decision the record carries.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from cosmic_curriculum.defaults import GAME_EVAL_BATCH, GAME_MAX_MOVES
from cosmic_curriculum.envs.game_players import (
    builtin_name,
    check_masks,
    game_player,
    plays_game_spaces,
)
from cosmic_curriculum.envs.game_probe import search_note, search_sees
from cosmic_curriculum.envs.game_table import Game, GameTable
from cosmic_curriculum.envs.onnx_twin import load_env_player
from cosmic_curriculum.envs.pettingzoo import GameInfo, game_info
from cosmic_curriculum.errors import CurriculumError, EvaluationError
from cosmic_curriculum.system.program import Command, command_sha256
from cosmic_curriculum.workspace.history import append_record

MAX_GAME_PAIRS = 50_000  # each pair's seed and outcomes are recorded


def pair_seeds(seed: int, pairs: int) -> list[int]:
    """The evaluation's game seeds, one a pair: fresh per ``seed``, the same on a replay."""
    rng = np.random.default_rng([seed, 23])
    return [int(s) for s in rng.integers(0, 2**31 - 1, size=pairs)]


def counts_of(outcomes: list[tuple[int, int]]) -> dict[str, Any]:
    """Head-to-head counts of pairs of the candidate's outcomes, and each pair's score."""
    flat = [o for pair in outcomes for o in pair]
    wins_a, wins_b = flat.count(1), flat.count(-1)
    return {
        "wins_a": wins_a,
        "wins_b": wins_b,
        "draws": len(flat) - wins_a - wins_b,
        "episodes": len(flat),
        "pair_scores": [(a + b + 2) / 4.0 for a, b in outcomes],
    }


def play_pairs(
    table: GameTable,
    players: tuple[Any, Any],
    labels: tuple[str, str],
    seeds: list[int],
    deterministic: bool,
    rngs: tuple[Any, Any],
) -> list[tuple[Game, Game]]:
    """Each seed's pair (candidate = player 0 first, then second), as many at once as the
    table has games."""
    per_batch = max(1, len(table.games) // 2)
    played: list[tuple[Game, Game]] = []
    for start in range(0, len(seeds), per_batch):
        chunk = seeds[start : start + per_batch]
        doubled = [s for s in chunk for _ in (0, 1)]
        first = [0, 1] * len(chunk)
        games = table.play(players, labels, first, doubled, deterministic, rngs)
        played += [(games[2 * i], games[2 * i + 1]) for i in range(len(chunk))]
    return played


def check_pairs(episodes: int, option: str) -> int:
    """Pairs of an evaluation of ``episodes`` games (even, within bounds)."""
    if episodes < 2 or episodes % 2:
        raise EvaluationError(
            f"{option} {episodes}: games are played in seat-swapped pairs; give an even "
            "count of at least 2"
        )
    if episodes // 2 > MAX_GAME_PAIRS:
        raise EvaluationError(f"{option} {episodes}: at most {2 * MAX_GAME_PAIRS:,} games")
    return episodes // 2


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def evaluate_game(
    candidate: Path,
    reference: Path | str | Command,
    *,
    history_path: Path,
    episodes: int,
    seed: int,
    deterministic: bool,
    decided: Callable[[dict[str, Any]], bool] | None = None,
    gate_of: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    extra: dict[str, Any] | None = None,
    max_moves: int = GAME_MAX_MOVES,
) -> dict[str, Any]:
    """Play up to ``episodes`` games (pairs) of the candidate's game against
    ``reference`` (a bot file, ``random``, ``search:N`` or a program), append one record
    and return it as stored."""
    pairs = check_pairs(episodes, "episodes")
    bot = load_env_player(candidate)
    if bot.env.kind != "pettingzoo":
        raise EvaluationError(f"{candidate}: a bot of a {bot.env.kind!r} env, not of a game")
    info = candidate_game(bot, candidate)
    seeds = pair_seeds(seed, pairs)
    table = GameTable(bot.env, info, min(GAME_EVAL_BATCH, 2 * pairs), max_moves)
    other: Any = None
    outcomes: list[tuple[int, int]] = []
    discarded: list[list[int]] = []
    cut = 0
    rngs = (np.random.default_rng([seed, 1]), np.random.default_rng([seed, 2]))
    stopped = False
    try:
        other, label = game_player(reference, info, seed, bot, plain=not bot.env.wrappers)
        per_batch = max(1, len(table.games) // 2)
        for start in range(0, pairs, per_batch):
            chunk = seeds[start : start + per_batch]
            labels = (str(candidate), label)
            played = play_pairs(table, (bot, other), labels, chunk, deterministic, rngs)
            _check_ends(played, outcomes, bot.env.id, max_moves)
            for i, (a, b) in enumerate(played):
                outcomes.append((a.outcome, b.outcome))
                cut += a.cut + b.cut
                more = decided is not None and len(outcomes) < pairs
                if more and decided is not None and decided(counts_of(outcomes)):
                    discarded = [[x.outcome, y.outcome] for x, y in played[i + 1 :]]
                    stopped = True
                    break
            if on_progress is not None:
                on_progress(2 * len(outcomes), 2 * pairs)
            if stopped:
                break
    finally:
        table.close()
        close = getattr(other, "close", None)  # a program: its whole tree stops here
        if close is not None:
            close()
    counts = counts_of(outcomes)
    record: dict[str, Any] = {k: v for k, v in counts.items() if k != "pair_scores"}
    record |= {
        "evaluator": "game",
        "candidate": str(candidate),
        "reference": label,
        "env": bot.env.id,
        "seed": seed,
        "seeds": seeds[: len(outcomes)],
        "deterministic": deterministic,
        "pairs": [list(p) for p in outcomes],
        "pair_columns": ["candidate_first", "candidate_second"],
        "discarded_pairs": len(discarded),
        "discarded_pair_outcomes": discarded,
        "max_moves": max_moves,
        "cut_games": cut,
        "candidate_sha256": _sha256(candidate),
    }
    name = builtin_name(str(reference)) if isinstance(reference, Path | str) else None
    if name is not None and name.startswith("search:"):
        note = search_note(label, search_sees(bot.env, info))
        if note is not None:
            record["reference_note"] = note
    if not isinstance(reference, Path | str):
        record["reference_sha256"] = command_sha256(reference)
        record["reference_fallbacks"] = getattr(other, "fallbacks", 0)
    elif name is None:
        record["reference_sha256"] = _sha256(Path(reference))
    if gate_of is not None and (gate := gate_of(counts)) is not None:
        record["gate"] = gate
        if isinstance(gate.get("summary"), str):
            record["summary"] = gate["summary"]
    record.update(extra or {})
    return append_record(history_path, record)


def _check_ends(
    played: list[tuple[Game, Game]], before: list[tuple[int, int]], name: str | None, cap: int
) -> None:
    """One line when every game so far reached the move cap: a game that never ends."""
    if not before and all(a.cut and b.cut for a, b in played):
        raise EvaluationError(
            f"game {name!r}: all {2 * len(played)} games of the first batch reached the move "
            f"cap of {cap:,} moves without ending; a game must end (terminate or truncate): "
            "fix the game or its env spec"
        )


def candidate_game(bot: Any, path: Path) -> GameInfo:
    """The candidate's game as it builds now, whose spaces the candidate must play (masked
    only if the game masks); each failure one line naming ``path``."""
    try:
        info = game_info(bot.env)
    except CurriculumError as exc:
        raise EvaluationError(f"{path}: its game does not build ({exc})") from None
    check_masks(bot, info, path)
    if not plays_game_spaces(bot, info):
        raise EvaluationError(
            f"{path}: the bot's spaces are not those of its game {bot.env.id!r} as it builds "
            "now; retrain the bot or restore the game's version"
        )
    return info
