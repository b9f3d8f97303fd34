"""A learner against an opponent bot in a batch of games: the engine behind the SB3
``ArenaVecEnv`` and the single-game gymnasium ``ArenaEnv`` (same rules, same rewards).

One call of :meth:`Duel.decide` applies the learner's actions for ``decision_ticks``
physics ticks; the opponent acts at its own rate (every ``opponent.decision_ticks``
ticks) and holds its action in between. Games that end during a decision stop counting
at the tick they end (their terminal observation is taken then) and are reset at the
end of the decision, so every episode starts from a clean kickoff.

Rewards (learner's view, summed over the decision's ticks):

- ``+goal_reward`` when the learner scores, ``-goal_reward`` when it concedes;
- ``-draw_penalty`` when the time limit ends the game;
- shaping ``attack_goal_bias * dx / arena_length`` where ``dx`` is the orb's displacement
  toward the opponent's goal during the decision. It telescopes: its total over an
  episode is ``attack_goal_bias`` times the orb's net progress, at most about 1, so it can
  never outweigh a goal;
- shaping ``orb_approach_bias * dd / arena_diagonal`` where ``dd`` is how much the
  learner's distance to the orb shrank during the decision (a potential difference: its
  episode total is bounded by ``orb_approach_bias``). It rewards getting to the orb, the
  first thing a 3-D player must learn (height included), long before goals come.

The time limit is part of the game (the observation shows the time left), so a timeout is
a real terminal state, not a truncation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.arena.observations import OBS_SIZE, observe
from cosmic_curriculum.arena.policy import Policy
from cosmic_curriculum.arena.rules import ACT_SIZE, ArenaState, new_state, reset_games, step
from cosmic_curriculum.arena.settings import GameSettings


@dataclass
class DecisionResult:
    """What one decision produced: next observations (reset games show their new
    kickoff), rewards, which games ended, and for ended games their outcome (+1 learner
    won, -1 lost, 0 draw), terminal observation, episode return and length."""

    obs: NDArray[np.float32]
    rewards: NDArray[np.float32]
    dones: NDArray[np.bool_]
    ended: NDArray[np.int64]  # indices of games that ended
    outcomes: NDArray[np.int64]  # per ended game
    terminal_obs: NDArray[np.float32]  # per ended game
    returns: NDArray[np.float64]  # per ended game
    lengths: NDArray[np.int64]  # per ended game, in decisions


class Duel:
    """``n_games`` games of a learner vs ``opponent``; ``learner_sides`` (0 blue, 1
    orange) defaults to blue in even games and orange in odd ones."""

    def __init__(
        self,
        n_games: int,
        settings: GameSettings,
        opponent: Policy,
        seed: int = 0,
        learner_sides: NDArray[np.int64] | None = None,
    ) -> None:
        if n_games < 1:
            raise ValueError(f"n_games must be >= 1, got {n_games}")
        self.n = n_games
        self.settings = settings
        self.opponent = opponent
        self.learner_side = (
            np.arange(n_games, dtype=np.int64) % 2
            if learner_sides is None
            else np.asarray(learner_sides, dtype=np.int64).copy()
        )
        if self.learner_side.shape != (n_games,) or not np.isin(self.learner_side, (0, 1)).all():
            raise ValueError("learner_sides must hold one 0 (blue) or 1 (orange) per game")
        self._games = np.arange(n_games)
        self.seed(seed)

    # --- setup --------------------------------------------------------------------------
    def seed(self, seed: int) -> None:
        """Restart the random streams (kickoffs and the opponent's choices)."""
        self._rng, self._opp_rng = np.random.default_rng(seed).spawn(2)
        self.reset()

    def reset(self) -> NDArray[np.float32]:
        """Fresh kickoffs in every game; returns the learner's observations."""
        self.state = new_state(self.n, self.settings, self._rng)
        self._snapshot = self.state.copy()  # states of games at the tick they ended
        self.ep_return = np.zeros(self.n)
        self.ep_len = np.zeros(self.n, dtype=np.int64)
        self.opponent.reset(np.ones(self.n, dtype=bool))
        self._opp_action: NDArray[np.floating] = np.zeros((self.n, ACT_SIZE))
        self._tick = 0  # opponent decision clock
        self._last_obs: NDArray[np.float32] | None = observe(self.state, self.settings)
        return self._learner_obs(self._last_obs)

    def set_opponent(self, opponent: Policy) -> None:
        """Swap the opponent; it acts at the next tick (running games continue)."""
        self.opponent = opponent
        opponent.reset(np.ones(self.n, dtype=bool))
        self._tick = 0

    def set_settings(self, settings: GameSettings) -> NDArray[np.float32]:
        """Play under new settings from now on; every game restarts from a kickoff."""
        self.settings = settings
        return self.reset()

    def _orb_distance(self, state: ArenaState) -> NDArray[np.float64]:
        """Distance from each learner's ship to its game's orb."""
        gap = state.ship_pos[self._games, self.learner_side] - state.orb_pos
        return np.asarray(np.sqrt((gap * gap).sum(axis=1)), dtype=np.float64)

    def _learner_obs(self, obs: NDArray[np.float32]) -> NDArray[np.float32]:
        return np.ascontiguousarray(obs[self._games, self.learner_side])

    # --- one decision -------------------------------------------------------------------
    def decide(self, actions: NDArray[np.floating]) -> DecisionResult:
        s = self.settings
        n, games = self.n, self._games
        me, them = self.learner_side, 1 - self.learner_side
        act = np.asarray(actions, dtype=np.float64).reshape(n, ACT_SIZE)
        full = np.zeros((n, 2, ACT_SIZE))
        full[games, me] = act
        toward = np.where(me == 0, 1.0, -1.0)  # learner's attack direction in world x
        orb_x0 = self.state.orb_pos[:, 0].copy()
        orb_x_end = np.empty(n)
        gap0 = self._orb_distance(self.state) if s.orb_approach_bias else None
        gap_end = np.empty(n)
        finished = np.zeros(n, dtype=bool)
        outcome = np.zeros(n, dtype=np.int64)
        opp = self.opponent
        needs_obs = opp.kind != "inert"  # an inert opponent ignores what it sees

        for k in range(s.decision_ticks):
            if self._tick % opp.decision_ticks == 0:
                if not needs_obs:
                    opp_obs = np.zeros((n, OBS_SIZE), dtype=np.float32)
                elif k == 0 and self._last_obs is not None:
                    # nothing moved since the learner's observation: reuse it
                    opp_obs = self._last_obs[games, them]
                else:
                    opp_obs = observe(self.state, s)[games, them]
                self._opp_action = opp.act(opp_obs, self._opp_rng)
            full[games, them] = self._opp_action
            self._tick += 1
            _, ev = step(self.state, full, s, self._rng)
            if ev.done.any():
                new = ev.done & ~finished
                if new.any():
                    idx = np.flatnonzero(new)
                    won = np.where(me == 0, ev.blue_goal, ev.orange_goal)[idx]
                    lost = np.where(me == 0, ev.orange_goal, ev.blue_goal)[idx]
                    outcome[idx] = won.astype(np.int64) - lost.astype(np.int64)
                    orb_x_end[idx] = self.state.orb_pos[idx, 0]
                    if gap0 is not None:
                        gap_end[idx] = self._orb_distance(self.state)[idx]
                    # keep the ending tick's state; observe all of them once at the end
                    self._snapshot.put(idx, self.state.take(idx))
                    finished |= new
                    # a finished game is stepped on until the decision ends, but nothing
                    # it does counts any more; it is reset afterwards

        orb_x_end = np.where(finished, orb_x_end, self.state.orb_pos[:, 0])
        rewards = s.attack_goal_bias * (orb_x_end - orb_x0) * toward / s.arena_length
        if gap0 is not None:
            gap_end = np.where(finished, gap_end, self._orb_distance(self.state))
            rewards += s.orb_approach_bias * (gap0 - gap_end) / s.arena_diagonal
        rewards += s.goal_reward * outcome
        draws = finished & (outcome == 0)
        if s.draw_penalty:
            rewards -= s.draw_penalty * draws
        self.ep_return += rewards
        self.ep_len += 1

        ended = np.flatnonzero(finished)
        terminal = np.zeros((ended.size, OBS_SIZE), dtype=np.float32)
        if ended.size:
            terminal = observe(self._snapshot.take(ended), s)[np.arange(ended.size), me[ended]]
        returns = self.ep_return[ended].copy()
        lengths = self.ep_len[ended].copy()
        if ended.size:
            reset_games(self.state, finished, s, self._rng)
            self.opponent.reset(finished)
            self.ep_return[ended] = 0.0
            self.ep_len[ended] = 0
        self._last_obs = observe(self.state, s)
        obs = self._learner_obs(self._last_obs)
        return DecisionResult(
            obs=obs,
            rewards=rewards.astype(np.float32),
            dones=finished,
            ended=ended,
            outcomes=outcome[ended],
            terminal_obs=terminal,
            returns=returns,
            lengths=lengths,
        )
