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

import io
import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.envs.pettingzoo import GameInfo, bare_game, split_observation
from cosmic_curriculum.errors import EvaluationError

DECAY = 0.99  # a terminal's score shrinks by this each ply back: sooner wins count more
_EXACT, _LOWER, _UPPER = 0, 1, 2
_TABLE_MAX = 500_000  # positions remembered, then forgotten at once (bounded memory)


def shared_parts(game: Any) -> dict[int, Any]:
    """What copies of ``game`` share with it: its spaces (and the dicts holding them), the
    constructor's arguments, the seats, and rendering resources (pygame's surfaces, fonts
    and clocks, which do not pickle): a search reads them, never changes them, and they
    cost most of a copy."""
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
            drawing = type(value).__module__.partition(".")[0] == "pygame"
            if isinstance(value, Space) or spaces or drawing:
                memo[id(value)] = value
        for key in ("_ezpickle_args", "_ezpickle_kwargs", "possible_agents"):
            if key in vars(env):  # the constructor's arguments and the seats: fixed
                memo[id(vars(env)[key])] = vars(env)[key]
        env = getattr(env, "env", None)
    return memo


class _StatePickler(pickle.Pickler):
    """Pickles a game's state: env and EzPickle objects by their attributes (their own
    pickling keeps only the constructor's arguments), each shared part of ``fixed`` as
    its attribute's name and id. Shared parts are found at the env objects alone, never
    object by object: a ``persistent_id`` hook would be a Python call for each of the
    board's cells, which cost more than the copy itself."""

    def __init__(self, out: io.BytesIO, fixed: dict[int, Any]) -> None:
        super().__init__(out, protocol=pickle.HIGHEST_PROTOCOL)
        self.fixed = fixed
        self.env_types = _env_types()
        self.nested = False  # whether an env object was pickled (then: _StateUnpickler)

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, self.env_types):
            self.nested = True
            return (
                object.__new__,
                (type(obj),),
                own_state(vars(obj), self.fixed),
                None,
                None,
                _restore,
            )
        return NotImplemented


@cache
def _env_types() -> tuple[type, ...]:
    """The classes pickled by their attributes (imported once: a search copies often)."""
    from gymnasium.utils import EzPickle
    from pettingzoo.utils.env import AECEnv, ParallelEnv

    return (AECEnv, ParallelEnv, EzPickle)


def own_state(
    attributes: dict[str, Any], fixed: dict[int, Any]
) -> tuple[tuple[tuple[str, int], ...], dict[str, Any]]:
    """(the shared attributes as (name, id) pairs, the others by value)."""
    shared = tuple((k, id(v)) for k, v in attributes.items() if id(v) in fixed)
    own = {k: v for k, v in attributes.items() if id(v) not in fixed}
    return shared, own


def _restore(obj: Any, state: Any) -> None:
    """Stands in for the state setter a pickle names: :class:`_StateUnpickler` replaces
    it with its own, which holds the shared parts."""
    raise EvaluationError("a game state is restored by search:N's own unpickler only")


class _StateUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, fixed: dict[int, Any]) -> None:
        super().__init__(io.BytesIO(data))
        self.fixed = fixed

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name == _restore.__name__:
            return self.restore
        return super().find_class(module, name)

    def restore(self, obj: Any, state: tuple[tuple[tuple[str, int], ...], dict[str, Any]]) -> None:
        shared, own = state
        _fill(obj, own, shared, self.fixed)  # not the class's __setstate__: EzPickle's builds anew


def _fill(
    obj: Any, own: dict[str, Any], shared: tuple[tuple[str, int], ...], fixed: dict[int, Any]
) -> Any:
    """``obj`` with its own attributes and its shared ones, in the original's order."""
    obj.__dict__.update(own)
    obj.__dict__.update((k, fixed[i]) for k, i in shared)
    return obj


@dataclass(frozen=True)
class Frozen:
    """A game's state as bytes, pickled once: the key of its position (equal bytes, equal
    games) and what its copies are loaded from. ``nested``: an env object sits inside (then
    :class:`_StateUnpickler` loads it)."""

    kind: type
    data: bytes
    nested: bool


def freeze(game: Any, fixed: dict[int, Any]) -> Frozen:
    """The whole state of ``game`` (every attribute, recursively; what ``fixed`` holds
    (:func:`shared_parts`) as its attribute's name and id)."""
    out = io.BytesIO()
    pickler = _StatePickler(out, fixed)
    try:
        pickler.dump(own_state(vars(game), fixed))
    except Exception as exc:  # a part of the state that does not pickle
        detail = " ".join(str(exc).split())
        raise EvaluationError(
            f"search:N cannot copy the state of the game {type(game.unwrapped).__name__!r} "
            f"({type(exc).__name__}: {detail}); play it against random or a bot"
        ) from None
    return Frozen(type(game), out.getvalue(), pickler.nested)


def thaw(frozen: Frozen, fixed: dict[int, Any]) -> Any:
    """A new game in the state ``frozen`` holds, sharing what ``fixed`` holds."""
    # A bare game's state holds no env objects: the C unpickler alone, a third the time.
    data = frozen.data
    state = _StateUnpickler(data, fixed).load() if frozen.nested else pickle.loads(data)
    shared, own = state
    return _fill(object.__new__(frozen.kind), own, shared, fixed)


def copy_game(game: Any, fixed: dict[int, Any]) -> Any:
    """A copy of ``game``'s state, its env and wrappers attribute by attribute, sharing
    what ``fixed`` holds. (A plain ``deepcopy`` of a PettingZoo env builds a fresh one:
    EzPickle pickles the constructor's arguments, not the game.)"""
    return thaw(freeze(game, fixed), fixed)


def state_key(game: Any, fixed: dict[int, Any]) -> bytes:
    """The whole state of ``game`` as bytes: equal keys, equal games."""
    return freeze(game, fixed).data


def legal_moves(game: Any, info: GameInfo) -> list[int]:
    """The moves the player to move may make (every move of an unmasked game)."""
    _, mask = split_observation(game.observe(game.agent_selection), info)
    if mask is None:
        return list(range(int(info.action_space.n)))
    return [int(m) for m in np.flatnonzero(np.asarray(mask))]


@dataclass(frozen=True)
class _Entry:
    """A searched position: its value (or a bound of it), the depth searched, the plies
    its lines took and whether they all ended in the game (then the value holds for any
    depth of at least ``reach``, however the position was reached)."""

    value: float
    bound: int
    depth: int
    reach: int
    resolved: bool

    def serves(self, depth: int) -> bool:
        return self.depth == depth or (self.resolved and depth >= self.reach)


class Search:
    """Negamax with alpha-beta pruning to ``depth`` plies, on copies of the game.

    A terminal position scores the reward lead of the player who moved into it, and each
    ply back shrinks it by ``DECAY`` (a sooner win is worth more, a loss is put off); a
    position the depth cuts scores 0. Positions already searched are looked up by their
    whole state (a transposition table, kept across moves and games).

    ``plain``: the game has no wrappers of the spec's own, so the search steps the bare
    env (``unwrapped``): PettingZoo's own wrappers only police illegal moves, which a
    search never makes, and they cost most of a step (one observation each).
    """

    def __init__(self, info: GameInfo, depth: int, plain: bool = True) -> None:
        self.info, self.depth, self.plain = info, depth, plain
        self.nodes = 0  # positions stepped into: the cost, for the benchmark
        self.table: dict[bytes, _Entry] = {}

    def _child(
        self, game: Any, frozen: Frozen, move: int, memo: dict[int, Any], in_place: bool
    ) -> tuple[Any, float, bool]:
        """(the game after ``move``, the mover's reward lead it brought, whether it ended);
        a copy loaded from ``frozen`` (``game``'s state), or ``in_place``: ``game`` itself
        (its caller is done with it)."""
        child = game if in_place else thaw(frozen, memo)
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

    def _value(
        self,
        game: Any,
        frozen: Frozen,
        move: int,
        depth: int,
        window: tuple[float, float],
        memo: Any,
        last: bool,
    ) -> tuple[float, int, bool]:
        """(value of ``move`` for the player to move, plies its lines took, resolved)."""
        alpha, beta = window
        mover = game.agent_selection
        child, lead, ended = self._child(game, frozen, move, memo, last)
        if ended:
            return lead, 1, True
        if depth <= 1:
            return 0.0, 1, False
        # The same player moving again (a game may give extra turns) keeps the sign.
        same = child.agent_selection == mover
        sign = DECAY if same else -DECAY
        low, high = (alpha, beta) if same else (-beta, -alpha)
        value, reach, resolved = self._negamax(child, depth - 1, low / DECAY, high / DECAY, memo)
        return sign * value, reach + 1, resolved

    def _negamax(
        self, game: Any, depth: int, alpha: float, beta: float, memo: Any
    ) -> tuple[float, int, bool]:
        """The value of ``game`` (a copy this search owns) for its player to move. Its
        state is pickled once: the table's key and the source of its moves' copies."""
        frozen = freeze(game, memo)
        key = frozen.data
        start = alpha
        hit = self.table.get(key)
        if hit is not None and hit.serves(depth):
            if hit.bound == _EXACT:
                return hit.value, hit.reach, hit.resolved
            if hit.bound == _LOWER:
                alpha = max(alpha, hit.value)
            else:
                beta = min(beta, hit.value)
            if alpha >= beta:
                return hit.value, hit.reach, hit.resolved
        best, reach, resolved = -np.inf, 0, True
        moves = legal_moves(game, self.info)
        for i, move in enumerate(moves):
            last = i == len(moves) - 1
            value, plies, done = self._value(game, frozen, move, depth, (alpha, beta), memo, last)
            best, reach, resolved = max(best, value), max(reach, plies), resolved and done
            alpha = max(alpha, value)
            if alpha >= beta:
                break
        best = float(best) if best > -np.inf else 0.0
        if len(self.table) >= _TABLE_MAX:
            self.table.clear()
        bound = _UPPER if best <= start else _LOWER if best >= beta else _EXACT
        self.table[key] = _Entry(best, bound, depth, reach, resolved)
        return best, reach, resolved

    def _root(self, game: Any) -> tuple[Any, dict[int, Any], Frozen, list[int]]:
        """The game a search starts from (bare when ``plain``), what its copies share, its
        frozen state and its legal moves."""
        root = bare_game(game) if self.plain else game
        memo = shared_parts(root)
        return root, memo, freeze(root, memo), legal_moves(root, self.info)

    def best_moves(self, game: Any) -> list[int]:
        """Every move of the best value for the player to move in ``game`` (left as it
        is), each searched with the full window: the moves ``choose`` picks among, as a
        teacher's labels (bench/bench_connect4_clone.py)."""
        root, memo, frozen, moves = self._root(game)
        window = (-np.inf, np.inf)
        values = [self._value(root, frozen, m, self.depth, window, memo, False)[0] for m in moves]
        top = max(values, default=0.0)
        return [m for m, v in zip(moves, values, strict=True) if v >= top]

    def choose(self, game: Any, rng: np.random.Generator) -> int:
        """A best move for the player to move in ``game`` (left as it is). The moves are
        tried in a random order and the first of the best value is kept: each of the best
        moves is equally likely."""
        root, memo, frozen, moves = self._root(game)
        order = [moves[i] for i in rng.permutation(len(moves))]
        best, chosen = -np.inf, order[0] if order else 0
        for move in order:
            value, _, _ = self._value(root, frozen, move, self.depth, (best, np.inf), memo, False)
            if value > best:
                best, chosen = value, move
        return int(chosen)


class SearchPlayer:
    """``search:N`` as a player: needs the games themselves (``games=``), one a row."""

    def __init__(self, info: GameInfo, depth: int, seed: int, plain: bool = True) -> None:
        self.search = Search(info, depth, plain)
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
        return np.array([self.search.choose(game, self.rng) for game in games], dtype=np.int64)
