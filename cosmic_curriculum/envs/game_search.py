"""``search:N``: a depth-N alpha-beta (negamax) search over copies of a PettingZoo game.

The yardstick of a trained game bot: it knows nothing of the game but its rules, as the
env plays them. Each move it tries is played on a deep copy of the game (the spaces, which
never change, are shared by the copies: they are most of a game's copying time); only
terminal positions score, by the reward difference the game gave the player to move
(a position the depth cuts scores 0), scaled by the depth left so that a sooner win is
preferred and a loss put off. Ties among the best moves at the root are broken at random
with a seeded rng: two searches of one depth do not replay one game. A full-depth search of
a small game is perfect play (tic-tac-toe: ``search:9`` never loses).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.envs.pettingzoo import GameInfo, split_observation

_EPS = 1e-9


def shared_parts(game: Any) -> dict[int, Any]:
    """A ``deepcopy`` memo that shares ``game``'s spaces (and the dicts holding them) with
    its copies: a search reads them, never changes them, and they cost most of a copy."""
    from gymnasium.spaces import Space

    memo: dict[int, Any] = {}
    env: Any = game
    while env is not None:
        for value in vars(env).values():
            spaces = (
                isinstance(value, dict)
                and value
                and all(isinstance(v, Space) for v in value.values())
            )
            if isinstance(value, Space) or spaces:
                memo[id(value)] = value
        env = getattr(env, "env", None)
    return memo


def copy_game(game: Any, memo: dict[int, Any]) -> Any:
    """A copy of ``game``'s state: its env and wrappers attribute by attribute. (A plain
    ``deepcopy`` of a PettingZoo env builds a fresh one: EzPickle pickles the
    constructor's arguments, not the game.)"""
    from gymnasium.utils import EzPickle
    from pettingzoo.utils.env import AECEnv, ParallelEnv

    memo = dict(memo)

    def clone(obj: Any) -> Any:
        if id(obj) in memo:
            return memo[id(obj)]
        if not isinstance(obj, AECEnv | ParallelEnv | EzPickle):
            return copy.deepcopy(obj, memo)
        new = object.__new__(type(obj))
        memo[id(obj)] = new
        new.__dict__.update({key: clone(value) for key, value in vars(obj).items()})
        return new

    return clone(game)


def legal_moves(game: Any, info: GameInfo) -> list[int]:
    """The moves the player to move may make (every move of an unmasked game)."""
    _, mask = split_observation(game.observe(game.agent_selection), info)
    if mask is None:
        return list(range(int(info.action_space.n)))
    return [int(m) for m in np.flatnonzero(np.asarray(mask))]


class Search:
    """Negamax with alpha-beta pruning to ``depth`` plies, on copies of the game."""

    def __init__(self, info: GameInfo, depth: int) -> None:
        self.info, self.depth = info, depth
        self.nodes = 0  # positions stepped into: the cost, for the benchmark

    def _child(self, game: Any, move: int, memo: dict[int, Any]) -> tuple[Any, float, bool]:
        """(the game after ``move``, the mover's reward lead it brought, whether it ended)."""
        child = copy_game(game, memo)
        mover = child.agent_selection
        child.step(move)
        self.nodes += 1
        lead = sum(
            (r if a == mover else -r) for a, r in child.rewards.items() if a in self.info.agents
        )
        ended = not child.agents or any(
            child.terminations.get(a, False) or child.truncations.get(a, False)
            for a in self.info.agents
        )
        return child, float(lead), ended

    def _negamax(
        self, game: Any, depth: int, alpha: float, beta: float, memo: dict[int, Any]
    ) -> float:
        """The value of ``game`` for its player to move, within (alpha, beta)."""
        best = -np.inf
        for move in legal_moves(game, self.info):
            child, lead, ended = self._child(game, move, memo)
            if ended:
                value = lead * (1 + depth)
            elif depth <= 1:
                value = 0.0
            else:
                value = self._value_after(child, game, depth, alpha, beta, memo)
            best = max(best, value)
            alpha = max(alpha, value)
            if alpha >= beta:
                break
        return float(best) if best > -np.inf else 0.0

    def _value_after(
        self, child: Any, game: Any, depth: int, alpha: float, beta: float, memo: dict[int, Any]
    ) -> float:
        # The same player moving again (a game may give extra turns) keeps the sign.
        if child.agent_selection == game.agent_selection:
            return self._negamax(child, depth - 1, alpha, beta, memo)
        return -self._negamax(child, depth - 1, -beta, -alpha, memo)

    def best_moves(self, game: Any) -> list[int]:
        """Every move of the best value for the player to move in ``game``."""
        memo = shared_parts(game)
        moves = legal_moves(game, self.info)
        best, ties = -np.inf, []
        for move in moves:
            child, lead, ended = self._child(game, move, memo)
            if ended:
                value = lead * (1 + self.depth)
            elif self.depth <= 1:
                value = 0.0
            else:  # a window just under the best: a tie comes back exact, a worse move low
                value = self._value_after(child, game, self.depth, best - _EPS, np.inf, memo)
            if value > best + _EPS:
                best, ties = value, [move]
            elif value > best - _EPS:
                ties.append(move)
        return ties


class SearchPlayer:
    """``search:N`` as a player: needs the games themselves (``games=``), one a row."""

    def __init__(self, info: GameInfo, depth: int, seed: int) -> None:
        self.search = Search(info, depth)
        self.rng = np.random.default_rng([seed, depth])
        self.label = f"search:{depth}"
        self.needs_games = True

    def act(
        self,
        obs: Any,
        deterministic: bool = True,
        rng: Any = None,
        mask: NDArray[Any] | None = None,
        games: Sequence[Any] | None = None,
    ) -> NDArray[Any]:
        """The move of each game in ``games`` (row order); ties at random from the seed."""
        if games is None:
            raise ValueError("search:N plays from the game itself: pass games=")
        moves = [self.search.best_moves(game) for game in games]
        return np.array([int(self.rng.choice(m)) if m else 0 for m in moves], dtype=np.int64)
