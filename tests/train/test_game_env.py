"""The learner's seat of a game (``train/game_env.py``): without wrappers of the spec's own
it steps the bare game, under PettingZoo's policing wrappers otherwise, and both play the
same games for the same moves and seeds."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cosmic_curriculum.envs.pettingzoo import game_info
from cosmic_curriculum.train.game_env import Player, SeatEnv
from cosmic_curriculum.workspace.env_config import EnvSpec

pytest.importorskip("pettingzoo")

CONNECT_FOUR = EnvSpec(kind="pettingzoo", id="pettingzoo.classic.connect_four_v3")
# A wrapper of the spec's own (PettingZoo's order check: it changes no move).
POLICED = EnvSpec(
    kind="pettingzoo",
    id="pettingzoo.classic.connect_four_v3",
    wrappers=["pettingzoo.utils.wrappers:OrderEnforcingWrapper"],
)


class _FirstLegal:
    """An opponent that plays its lowest legal move."""

    def act(self, obs: Any, deterministic: bool = True, rng: Any = None, mask: Any = None) -> Any:
        return np.array([int(np.flatnonzero(mask[0])[0])])


class _Table:
    def __init__(self) -> None:
        self.results: list[tuple[str, float]] = []

    def draw(self) -> tuple[str, Player]:
        return "first", _FirstLegal()

    def finished(self, name: str, reward: float) -> None:
        self.results.append((name, reward))


def _play(spec: EnvSpec, games: int) -> tuple[list[Any], _Table, SeatEnv]:
    table = _Table()
    seat = SeatEnv(spec, game_info(CONNECT_FOUR), table, 0, 100)
    rng, seen = np.random.default_rng(5), []
    obs, _ = seat.reset(seed=3)
    for _ in range(games):
        done = False
        while not done:
            move = int(rng.choice(np.flatnonzero(seat.action_masks())))
            obs, reward, done, _, _ = seat.step(move)
            seen.append((obs.tobytes(), reward, done, seat.action_masks().tobytes()))
        obs, _ = seat.reset()
    return seen, table, seat


def test_a_seat_steps_the_bare_game_unless_the_spec_wraps_it() -> None:
    bare_run, bare_table, bare = _play(CONNECT_FOUR, 12)
    wrapped_run, wrapped_table, wrapped = _play(POLICED, 12)
    try:
        assert bare.game is bare.built.unwrapped and bare.game is not bare.built
        assert wrapped.game is wrapped.built
        assert bare_run == wrapped_run  # the same positions, rewards and masks
        assert bare_table.results == wrapped_table.results
        assert {r for _, r in bare_table.results} == {-1.0, 1.0}  # both seats won games
    finally:
        bare.close()
        wrapped.close()
