"""Batched head-to-head matches between two bots, in seat-swapped pairs.

``play_pairs(bot_a, bot_b, n_pairs, seed, settings)`` plays ``2 * n_pairs`` games in one
batch: pair ``k`` is one kickoff (drawn from ``seed``) played twice, once with A as blue
(column 0) and once with A as orange (column 1), so the luck of the kickoff cancels out.
Each bot acts every ``bot.decision_ticks`` physics ticks and holds its action in between.
The result depends only on the bots, ``n_pairs``, ``seed`` and ``settings``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.arena.observations import observe
from cosmic_curriculum.arena.policy import Policy
from cosmic_curriculum.arena.rules import ACT_SIZE, kickoff_jitter, new_state, step
from cosmic_curriculum.arena.settings import GameSettings


@dataclass
class Trajectory:
    """Per-tick positions of one game (for pictures): ``ship_pos (T, 2, 3)`` (blue,
    orange), ``ship_fwd (T, 2, 3)``, ``orb_pos (T, 3)``; row 0 is the kickoff."""

    ship_pos: NDArray[np.float64]
    ship_fwd: NDArray[np.float64]
    orb_pos: NDArray[np.float64]
    game: int
    a_side: int  # 0: A played blue in the recorded game, 1: orange
    outcome: int  # A's view: +1 won, -1 lost, 0 draw
    tick: float  # seconds per row


@dataclass
class PairResults:
    """Outcomes in A's view, ``(n_pairs, 2)``: column 0 = A played blue, column 1 = A
    played orange (same kickoff); +1 A won, -1 B won, 0 draw. ``lengths`` are the games'
    lengths in physics ticks (same shape)."""

    outcomes: NDArray[np.int64]
    lengths: NDArray[np.int64]
    seed: int
    tick: float
    trajectory: Trajectory | None = None

    @property
    def n_pairs(self) -> int:
        return int(self.outcomes.shape[0])

    @property
    def episodes(self) -> int:
        return int(self.outcomes.size)

    @property
    def wins_a(self) -> int:
        return int((self.outcomes == 1).sum())

    @property
    def wins_b(self) -> int:
        return int((self.outcomes == -1).sum())

    @property
    def draws(self) -> int:
        return int((self.outcomes == 0).sum())

    @property
    def pair_scores(self) -> NDArray[np.float64]:
        """A's score in each pair: 0, 0.25, 0.5, 0.75 or 1."""
        return np.asarray((self.outcomes + 1).sum(axis=1) / 4.0, dtype=np.float64)

    @property
    def seconds(self) -> NDArray[np.float64]:
        return np.asarray(self.lengths * self.tick, dtype=np.float64)


def play_pairs(
    bot_a: Policy,
    bot_b: Policy,
    n_pairs: int,
    seed: int,
    settings: GameSettings,
    record: bool = False,
    record_game: int = 0,
) -> PairResults:
    """Play ``n_pairs`` seat-swapped pairs of A vs B in one batch (see the module doc).

    With ``record=True`` the per-tick positions of game ``record_game`` are returned in
    ``trajectory`` (games ``0..n_pairs-1`` have A as blue, ``n_pairs..`` A as orange).
    """
    if n_pairs < 1:
        raise ValueError(f"n_pairs must be >= 1, got {n_pairs}")
    n = 2 * n_pairs
    if record and not 0 <= record_game < n:
        raise ValueError(f"record_game must be in [0, {n}), got {record_game}")
    master = np.random.default_rng(seed)
    jitter = kickoff_jitter(n_pairs, settings, master)
    physics_rng, rng_a, rng_b = master.spawn(3)
    state = new_state(n, settings, physics_rng, jitter=np.concatenate([jitter, jitter]))

    games = np.arange(n)
    a_side = (games >= n_pairs).astype(np.int64)  # 0: A is blue
    b_side = 1 - a_side
    everyone = np.ones(n, dtype=bool)
    bot_a.reset(everyone)
    bot_b.reset(everyone)

    actions = np.zeros((n, 2, ACT_SIZE))
    done = np.zeros(n, dtype=bool)
    outcome = np.zeros(n, dtype=np.int64)
    length = np.full(n, settings.max_ticks, dtype=np.int64)
    a_blue = a_side == 0
    frames: list[tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]] = []

    def snapshot() -> None:
        g = record_game
        frames.append((state.ship_pos[g].copy(), state.ship_fwd[g].copy(), state.orb_pos[g].copy()))

    if record:
        snapshot()
    for t in range(settings.max_ticks):
        need_a = t % bot_a.decision_ticks == 0
        need_b = t % bot_b.decision_ticks == 0
        if need_a or need_b:
            obs = observe(state, settings)
            if need_a:
                actions[games, a_side] = bot_a.act(obs[games, a_side], rng_a)
            if need_b:
                actions[games, b_side] = bot_b.act(obs[games, b_side], rng_b)
        state, ev = step(state, actions, settings, physics_rng)
        if record and not done[record_game]:
            snapshot()
        if ev.done.any():
            new = ev.done & ~done
            if new.any():
                a_scored = np.where(a_blue, ev.blue_goal, ev.orange_goal)
                b_scored = np.where(a_blue, ev.orange_goal, ev.blue_goal)
                outcome[new] = (a_scored.astype(np.int64) - b_scored.astype(np.int64))[new]
                length[new] = state.ticks[new]
                done |= new
                if done.all():
                    break

    trajectory = None
    if record:
        ship_pos, ship_fwd, orb_pos = (np.stack(parts) for parts in zip(*frames, strict=True))
        trajectory = Trajectory(
            ship_pos=ship_pos,
            ship_fwd=ship_fwd,
            orb_pos=orb_pos,
            game=record_game,
            a_side=int(a_side[record_game]),
            outcome=int(outcome[record_game]),
            tick=settings.tick,
        )
    return PairResults(
        outcomes=outcome.reshape(2, n_pairs).T.copy(),
        lengths=length.reshape(2, n_pairs).T.copy(),
        seed=seed,
        tick=settings.tick,
        trajectory=trajectory,
    )
