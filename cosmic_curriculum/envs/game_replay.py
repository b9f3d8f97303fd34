"""`replay` of a game's bot: one game against a reference, drawn from the game's
``rgb_array`` frames.

The bot (its JSON or ONNX twin) takes the first seat and plays its most likely legal move;
the reference (``random``, ``search:N``, a bot file of the game or a program) the second.
The game is stepped by the evaluator's table (every move checked, the move cap), built
with ``render_mode="rgb_array"``, and drawn after every move as a GIF or a PNG strip
(envs/replay.py's pictures), titled with the outcome. A game without an ``rgb_array``
render is one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from cosmic_curriculum.defaults import GAME_MAX_MOVES, REPLAY_GIF_FRAMES
from cosmic_curriculum.envs.game_evaluate import candidate_game
from cosmic_curriculum.envs.game_players import game_player
from cosmic_curriculum.envs.game_table import GameTable
from cosmic_curriculum.envs.replay import RENDER_MODE, Frames, draw_frames, frame_of
from cosmic_curriculum.errors import CurriculumError, EvaluationError
from cosmic_curriculum.system.fsio import without_surrogates
from cosmic_curriculum.system.program import Command


def render_game_replay(
    bot: Any, path: Path, reference: str | Command, out: Path, *, seed: int = 0
) -> dict[str, Any]:
    """Play and draw one game of ``bot`` (loaded from ``path``) in the first seat against
    ``reference``; returns ``out``, ``outcome`` (1 the bot won, -1 lost, 0 a draw),
    ``moves`` and ``title``."""
    suffix = Path(out).suffix.lower()
    if suffix not in (".gif", ".png"):
        raise EvaluationError(f"--out {out}: name the picture .gif or .png")
    what = f"game {bot.env.id!r}"
    if bot.env.kwargs.get("render_mode") not in (None, RENDER_MODE):
        raise EvaluationError(f"{path}: its game sets render_mode; replay needs {RENDER_MODE!r}")
    info = candidate_game(bot, path)
    drawn = bot.env.model_copy(update={"kwargs": {**bot.env.kwargs, "render_mode": RENDER_MODE}})
    try:
        table = GameTable(drawn, info, 1, GAME_MAX_MOVES)
    except CurriculumError:  # it built without render_mode (candidate_game): that is why
        raise EvaluationError(
            f"{what} has no rgb_array render (its factory refuses "
            f"render_mode={RENDER_MODE!r}); replay draws games that render frames"
        ) from None
    frames = Frames(REPLAY_GIF_FRAMES)
    other: Any = None
    try:
        modes = table.built[0].metadata.get("render_modes", [])
        if RENDER_MODE not in modes:
            raise EvaluationError(
                f"{what} has no rgb_array render (its render_modes are {modes}); replay "
                "draws games that render frames"
            )
        other, label = game_player(reference, info, seed, bot, plain=not bot.env.wrappers)
        latest: list[Any] = []

        def watch(played: Any) -> None:
            latest[:] = [frame_of(played, what)]
            frames.add(latest[0])

        table.watch = watch
        rngs = (np.random.default_rng([seed, 1]), np.random.default_rng([seed, 2]))
        game = table.play((bot, other), (str(path), label), [0], [seed], True, rngs)[0]
        if latest and frames.kept[-1] is not latest[0]:  # the final position, always shown
            frames.add(latest[0], last=True)
    finally:
        table.close()
        close = getattr(other, "close", None)  # a program: its whole tree stops here
        if close is not None:
            close()
    outcome = game.outcome
    said = "a draw" if outcome == 0 else ("the bot won" if outcome > 0 else f"{label} won")
    if game.cut:
        said = f"cut at the move cap of {GAME_MAX_MOVES:,} moves"
    name = without_surrogates(path.name)  # a file name need not be UTF-8
    title = f"{bot.env.id}: {name} (first) vs {label}, seed {seed}: {said} in {game.moves} moves"
    draw_frames(frames, Path(out), title, suffix)
    return {"out": str(out), "outcome": outcome, "moves": game.moves, "title": title}
