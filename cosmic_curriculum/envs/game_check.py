"""A stage's game played for a few random moves before any training.

A game of the user's own that raises in ``reset``, ``observe`` or ``step``, gives an
observation of another shape than it declares, or a mask that allows no move while the
game goes on, is one line here (the call, the error, the file and line it came from)
instead of a trainer's traceback after the run has started. Legal moves only (from the
mask), seeded: the same moves on every check.
"""

from __future__ import annotations

import contextlib
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from cosmic_curriculum.defaults import GAME_CHECK_MOVES
from cosmic_curriculum.envs.gymnasium import EnvSpecError, _one_line
from cosmic_curriculum.envs.pettingzoo import GameInfo, game_over, make_game, split_observation
from cosmic_curriculum.workspace.env_config import EnvSpec


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f" at {Path(last.filename).name}:{last.lineno}"


def check_first_moves(spec: EnvSpec, info: GameInfo, moves: int = GAME_CHECK_MOVES) -> None:
    """Reset ``spec``'s game (seed 0) and play up to ``moves`` random legal moves, or to
    its end; an EnvSpecError naming what failed."""
    name, n = spec.id, int(info.action_space.n)
    shape = getattr(info.observation_space, "shape", None)
    rng = np.random.default_rng(0)
    game = make_game(spec)
    call = "reset()"
    try:
        game.reset(seed=0)
        for _ in range(moves):
            if game_over(game):
                break
            seat = game.agent_selection
            call = f"observe({seat!r})"
            obs, mask = split_observation(game.observe(seat), info)
            if shape is not None and np.shape(obs) != shape:
                raise EnvSpecError(
                    f"env.id {name!r}: {seat}'s observation has shape {np.shape(obs)}, but "
                    f"the game declares {info.observation_space}; fix the game's "
                    "observation_space or observe()"
                )
            if mask is not None and np.shape(mask) != (n,):
                raise EnvSpecError(
                    f"env.id {name!r}: {seat}'s action mask has shape {np.shape(mask)}, not "
                    f"({n},) for its {n} moves; fix the game's action_mask"
                )
            legal = np.arange(n) if mask is None else np.flatnonzero(np.asarray(mask))
            if not len(legal):
                raise EnvSpecError(
                    f"env.id {name!r}: the action mask allows no move for {seat} while the "
                    "game goes on; end the game there, or allow a move"
                )
            move = int(rng.choice(legal))
            call = f"step({move}) by {seat}"
            game.step(move)
        call = "close()"
        game.close()
    except EnvSpecError:
        _close(game)
        raise
    except Exception as exc:  # the game's own code failed: say where
        _close(game)
        raise EnvSpecError(
            f"env.id {name!r}: the game's {call} failed in a random game's first moves "
            f"({_one_line(exc)}{_where(exc)}); fix the game"
        ) from None


def _close(game: Any) -> None:
    with contextlib.suppress(Exception):  # the failure already reported is the one to fix
        game.close()
