"""Copies of one PettingZoo game stepped in lockstep: the game evaluator's engine.

Each game has two players in its seats (``first[g]``: which of the two sits in the
game's first seat). At every step each live game either passes a finished agent's turn
(``step(None)``, as PettingZoo's loop does) or asks its player to move; the games where
the same player is to move are answered by ONE batched call of that player. A move
outside the legal set (the mask, or the action space of an unmasked game) is one line
naming the player, the move and the legal moves. A player's score is the sum of the
rewards ``last()`` reports at its turns (PettingZoo's cumulative reward); a game still
going after ``max_moves`` moves is cut, a draw.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cosmic_curriculum.envs.pettingzoo import GameInfo, bare_game, make_game, split_observation
from cosmic_curriculum.envs.spaces import batch_of
from cosmic_curriculum.errors import EvaluationError
from cosmic_curriculum.workspace.env_config import EnvSpec


@dataclass(frozen=True)
class Game:
    """One finished game: each player's total reward, moves made, cut at the cap."""

    totals: tuple[float, float]
    moves: int
    cut: bool

    @property
    def outcome(self) -> int:
        """+1 when player 0 won (the higher total), -1 when player 1 did, 0 a draw."""
        if self.cut or self.totals[0] == self.totals[1]:
            return 0
        return 1 if self.totals[0] > self.totals[1] else -1


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split()) or 'no message'}"


class GameTable:
    """``slots`` copies of ``spec``'s game."""

    def __init__(self, spec: EnvSpec, info: GameInfo, slots: int, max_moves: int) -> None:
        self.spec, self.info, self.max_moves = spec, info, max_moves
        self.name = spec.id or "?"
        self.built: list[Any] = []
        try:
            for _ in range(slots):
                self.built.append(make_game(spec))
        except BaseException:
            self.close()
            raise
        # Every move is checked here before it is played: without wrappers of the spec's
        # own, the games step without PettingZoo's policing wrappers (half the cost).
        self.games = [g if spec.wrappers else bare_game(g) for g in self.built]
        self.watch: Callable[[Any], None] | None = None  # sees each game after each move

    def close(self) -> None:
        for game in self.built:
            game.close()

    def _fail(self, what: str, seed: int, exc: BaseException | None = None) -> EvaluationError:
        cause = f" ({_one_line(exc)})" if exc else ""
        return EvaluationError(
            f"game {self.name!r} {what} on game seed {seed}{cause}; fix the game or the "
            "stage's env spec"
        )

    def play(
        self,
        players: Sequence[Any],
        labels: Sequence[str],
        first: Sequence[int],
        seeds: Sequence[int],
        deterministic: bool,
        rngs: Sequence[Any],
    ) -> list[Game]:
        """One game per seed (at most ``len(self.games)``), ``first[g]`` in seat one."""
        n = len(seeds)
        assert n <= len(self.games) and len(first) == n
        games = self.games[:n]
        seat_of: list[dict[str, int]] = []
        for g, (game, seed) in enumerate(zip(games, seeds, strict=True)):
            try:
                game.reset(seed=int(seed))
            except Exception as exc:
                raise self._fail("raised during reset", seed, exc) from None
            a, b = self.info.agents
            seat_of.append({a: first[g], b: 1 - first[g]})
            if self.watch is not None:
                self.watch(game)
        totals = np.zeros((n, 2))
        moves, cut, dead = [0] * n, [False] * n, [0] * n
        live = list(range(n))
        while live:
            asks: tuple[list[int], list[int]] = ([], [])
            for g in live:
                game = games[g]
                if not game.agents:
                    continue
                try:
                    _, reward, terminated, truncated, _ = game.last(observe=False)
                except Exception as exc:
                    raise self._fail("raised in last()", seeds[g], exc) from None
                player = seat_of[g].get(game.agent_selection)
                if player is None:
                    raise self._fail(f"named an unknown agent {game.agent_selection!r}", seeds[g])
                totals[g, player] += float(reward)
                if terminated or truncated:
                    # Each finished agent leaves at its step(None): a game that keeps them
                    # would be stepped forever.
                    dead[g] += 1
                    if dead[g] > len(self.info.agents):
                        raise self._fail(
                            f"kept its agents after it ended ({dead[g] - 1} steps with None "
                            "left them in game.agents; step(None) of a finished agent must "
                            "remove it, as PettingZoo's _was_dead_step does)",
                            seeds[g],
                        )
                    self._step(game, None, seeds[g])
                elif moves[g] >= self.max_moves:
                    cut[g] = True
                else:
                    asks[player].append(g)
            for player, waiting in enumerate(asks):
                if waiting:
                    seat = (players[player], labels[player], rngs[player])
                    self._moves(seat, games, waiting, seeds, moves, deterministic)
            live = [g for g in live if games[g].agents and not cut[g]]
        return [Game((totals[g, 0], totals[g, 1]), moves[g], cut[g]) for g in range(n)]

    def _step(self, game: Any, move: int | None, seed: int) -> None:
        try:
            game.step(move)
        except Exception as exc:
            raise self._fail("raised during step", seed, exc) from None

    def _moves(
        self,
        seat: tuple[Any, str, Any],
        games: list[Any],
        waiting: list[int],
        seeds: Sequence[int],
        moves: list[int],
        deterministic: bool,
    ) -> None:
        """One batched call of the seat's player for the games in ``waiting`` (each move
        checked, then played)."""
        player, label, rng = seat
        seen, masks = [], []
        for g in waiting:
            game = games[g]
            obs, mask = split_observation(game.observe(game.agent_selection), self.info)
            seen.append(obs)
            masks.append(mask)
        legal = None if masks[0] is None else np.stack([np.asarray(m, bool) for m in masks])
        kwargs: dict[str, Any] = {"mask": legal}
        if getattr(player, "needs_games", False):
            kwargs["games"] = [games[g] for g in waiting]
        actions = np.asarray(player.act(batch_of(seen), deterministic, rng, **kwargs))
        n_moves = int(self.info.action_space.n)
        for row, g in enumerate(waiting):
            move = actions[row]
            integer = np.issubdtype(np.asarray(move).dtype, np.integer)
            ok = integer and 0 <= int(move) < n_moves
            if not ok or (legal is not None and not legal[row, int(move)]):
                allowed = list(range(n_moves)) if legal is None else np.flatnonzero(legal[row])
                shown = int(move) if integer else move  # 3, not np.int64(3)
                raise EvaluationError(
                    f"{label} played the illegal move {shown!r} in {self.name!r} (game seed "
                    f"{seeds[g]}, move {moves[g] + 1}); the legal "
                    f"moves were {[int(m) for m in allowed]}; fix the bot"
                )
            self._step(games[g], int(move), seeds[g])
            moves[g] += 1
            if self.watch is not None:
                self.watch(games[g])
