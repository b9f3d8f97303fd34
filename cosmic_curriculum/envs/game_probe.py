"""What ``search:N`` sees in a game that its players do not, found by random play.

``search:N`` plays on copies of the game's whole state (envs/game_search.py). In a game
of chance those copies carry the game's random state, so the search foresees the cards
or dice to come; in a game of simultaneous moves played in turns (a parallel game through
PettingZoo's converter, or rock-paper-scissors), the second seat's search reads the first
seat's move before it is shown. There the search cheats: a hard opponent to train
against, not a yardstick of fair play. Two random-play probes find them:

- chance: the same moves from two reset seeds show the players different observations;
- hidden moves: one seat's moves never change what the other seat observes next.

Legal moves only, seeded: the same verdict on every run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cosmic_curriculum.defaults import GAME_PROBE_GAMES, GAME_PROBE_MOVES
from cosmic_curriculum.envs.pettingzoo import GameInfo, game_over, make_game, split_observation
from cosmic_curriculum.workspace.env_config import EnvSpec

CHANCE = "chance"
HIDDEN_MOVES = "hidden moves"
_MIN_MOVES = 3  # a seat's moves seen before its moves count as never shown

_WHY = {
    CHANCE: "its reset seed changes what the players see (cards, dice or a random start), "
    "and the search's copies carry the game's random state, so it foresees the draws",
    HIDDEN_MOVES: "one seat's moves are not shown to the other until both have moved, and "
    "the search reads them from the state",
}


def _seen(game: Any, agent: str, info: GameInfo) -> bytes:
    """What ``agent`` observes (its legal moves included), as bytes to compare."""
    obs, mask = split_observation(game.observe(agent), info)
    parts = [obs[k] for k in sorted(obs)] if isinstance(obs, dict) else [obs]
    if mask is not None:
        parts.append(mask)
    return b"".join(np.ascontiguousarray(p).tobytes() for p in parts)


def _views(game: Any, info: GameInfo) -> tuple[str, tuple[bytes, ...]]:
    """Who moves, and what each seat still in the game observes."""
    return game.agent_selection, tuple(
        _seen(game, a, info) for a in info.agents if a in game.agents
    )


def _probe(spec: EnvSpec, info: GameInfo, games: int, moves: int) -> set[str]:
    found: set[str] = set()
    shown = dict.fromkeys(info.agents, False)
    counted = dict.fromkeys(info.agents, 0)
    rng = np.random.default_rng(0)
    a, b = make_game(spec), make_game(spec)
    try:
        for game in range(games):
            a.reset(seed=2 * game)
            b.reset(seed=2 * game + 1)
            for _ in range(moves):
                twin = CHANCE not in found  # b follows a's moves until they differ
                if twin and game_over(a) != game_over(b):
                    found.add(CHANCE)
                if game_over(a):
                    break
                if twin and _views(a, info) != _views(b, info):
                    found.add(CHANCE)
                mover = a.agent_selection
                other = next(x for x in info.agents if x != mover)
                _, mask = split_observation(a.observe(mover), info)
                legal = (
                    np.arange(int(info.action_space.n)) if mask is None else np.flatnonzero(mask)
                )
                move = int(rng.choice(legal))
                before = _seen(a, other, info) if other in a.agents else None
                a.step(move)
                if CHANCE not in found:
                    b.step(move)
                if before is not None and not game_over(a) and a.agent_selection == other:
                    counted[mover] += 1
                    shown[mover] = shown[mover] or _seen(a, other, info) != before
    finally:
        a.close()
        b.close()
    if any(counted[s] >= _MIN_MOVES and not shown[s] for s in info.agents):
        found.add(HIDDEN_MOVES)
    return found


def search_sees(
    spec: EnvSpec, info: GameInfo, games: int = GAME_PROBE_GAMES, moves: int = GAME_PROBE_MOVES
) -> tuple[str, ...]:
    """What lets ``search:N`` see more than a player of ``spec``'s game: CHANCE and/or
    HIDDEN_MOVES (empty: a game of perfect information, as far as random play shows)."""
    try:
        found = _probe(spec, info, games, moves)
    except Exception:  # advisory only: a game that fails here fails its evaluation in one line
        return ()
    return tuple(k for k in (CHANCE, HIDDEN_MOVES) if k in found)


def search_note(label: str, seen: tuple[str, ...], teacher: bool = False) -> str | None:
    """The line that says ``label`` (a search) cheats in this game, and why; None if not.
    ``teacher``: the search teaches a lesson (``--clone-teacher``), not an opponent."""
    if not seen:
        return None
    why = "; ".join(_WHY[k] for k in seen)
    use = (
        "its moves rest on what the learner cannot see, a lesson it can learn only in part"
        if teacher
        else "a hard opponent to train against, not a yardstick of fair play; compare bots "
        "with random, a bot file or a program instead"
    )
    return f"{label} sees more than a player of this game ({why}): {use}"
