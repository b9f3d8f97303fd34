"""A game worker's side of ``train-env --vec-env subproc`` on a pettingzoo game.

A worker process owns a contiguous slice of the training's seats (``game_env.SeatEnv``,
built with their global index: the same seat parity and rngs as in-process stepping) and
the players of the opponents it was told to play. The trainer keeps the league: it names
each seat's next opponent (one game ahead: a seat is reset the moment its game ends), and
the worker returns each finished game as (seat, opponent, reward) for the league's table.
The trainer sends a snapshot's player with the first name that needs it (a pickled numpy
bot: no JSON read in the worker) and tells the worker which to drop.

The worker leaves the stop signals to the trainer (which saves, then closes it), exits
when its pipe closes (a trainer killed by -9 leaves no worker behind) and sends a fault
back as one line. This module imports no SB3 and no torch: a worker needs the game, numpy
and the bots' numpy players only.
"""

from __future__ import annotations

import contextlib
import signal
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from cosmic_curriculum.envs.pettingzoo import game_info
from cosmic_curriculum.errors import CurriculumError, TrainerError
from cosmic_curriculum.train.game_env import Player, SeatEnv
from cosmic_curriculum.train.league_store import bot_player
from cosmic_curriculum.train.stopping import STOP_SIGNALS
from cosmic_curriculum.workspace.env_config import EnvSpec

Finished = tuple[int, str, float]  # (global seat index, opponent, the learner's reward)


@dataclass(frozen=True)
class WorkerPlan:
    """What one worker builds: its seats and how to find their opponents' players."""

    spec: EnvSpec
    seats: tuple[int, ...]  # global indices
    move_cap: int
    seed: int  # the fixed bots' (a search's tie-breaks, random's moves)
    root: Path  # the workspace (fixed bot files are relative to it)
    fixed: tuple[str, ...]  # the rule's fixed bots, as named


class _Players:
    """The worker's players by name: the fixed bots built once, the snapshots the trainer
    sent (it decides which a worker keeps: ``GameWorkers``)."""

    def __init__(self, plan: WorkerPlan, info: Any) -> None:
        wrapped = bool(plan.spec.wrappers)
        self.fixed = {
            name: bot_player(name, info, plan.seed, plan.root, "--league-bot", wrapped)
            for name in plan.fixed
        }
        self.snapshots: dict[str, Player] = {}

    def get(self, name: str) -> Player:
        player = self.fixed.get(name)
        if player is None:
            player = self.snapshots.get(name)
        if player is None:
            raise TrainerError(f"game worker: no player {name!r} was sent to it")
        return player

    def update(self, sent: dict[str, Player], dropped: list[str]) -> None:
        for name in dropped:
            self.snapshots.pop(name, None)
        self.snapshots.update(sent)


class _SeatOpponents:
    """One seat's ``game_env.Opponents``: the opponent the trainer named for its next
    game; finished games go to the worker's list."""

    def __init__(self, seat: int, players: _Players, results: list[Finished]) -> None:
        self.seat, self.players, self.results = seat, players, results
        self.next = ""
        self.current = ""

    def assign(self, name: str) -> None:
        self.players.get(name)  # a name it has no player for fails here, not mid-game
        self.next = name

    def draw(self) -> tuple[str, Player]:
        self.current = self.next
        return self.current, self.players.get(self.current)

    def finished(self, name: str, reward: float) -> None:
        self.results.append((self.seat, name, reward))


class _Seat:
    """A seat and its episode's sums: SB3's Monitor's ``info["episode"]`` (reward, length,
    seconds since the seat was built), which the trainer's progress lines read; SB3's own
    Monitor would bring torch into the worker."""

    def __init__(self, env: SeatEnv, opponents: _SeatOpponents) -> None:
        self.env, self.opponents = env, opponents
        self.reward, self.length = 0.0, 0
        self.started = time.monotonic()

    def reset(self, seed: int | None) -> Any:
        self.reward, self.length = 0.0, 0
        obs, _ = self.env.reset(seed=seed)
        return obs

    def step(self, action: int) -> tuple[Any, float, bool, dict[str, Any]]:
        """SB3's DummyVecEnv's contract: a finished game's last observation in the info
        (and whether the move cap cut it), the next game's first as the observation."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.reward += reward
        self.length += 1
        done = terminated or truncated
        if done:
            info["episode"] = {
                "r": round(self.reward, 6),
                "l": self.length,
                "t": round(time.monotonic() - self.started, 6),
            }
            info["terminal_observation"] = obs
            info["TimeLimit.truncated"] = truncated and not terminated
            obs = self.reset(None)
        return obs, float(reward), done, info


def work(conn: Connection, plan: WorkerPlan) -> None:
    """A worker's loop: ``("reset", seeds, orders)``, ``("step", actions, orders)``,
    ``("close",)``; each answered ``("ok", ...)`` or, once, ``("error", line)``. Orders:
    ({seat: its next opponent's name}, {name: snapshot player sent}, [names dropped])."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    seats: list[_Seat] = []
    try:
        info = game_info(plan.spec)
        results: list[Finished] = []
        players = _Players(plan, info)
        for index in plan.seats:
            opponents = _SeatOpponents(index, players, results)
            env = SeatEnv(plan.spec, info, opponents, index, plan.move_cap)
            seats.append(_Seat(env, opponents))
        conn.send(("ok", None))
        while True:
            try:
                command = conn.recv()
            except (EOFError, OSError):  # the trainer is gone
                return
            if command[0] == "close":
                return
            conn.send(("ok", _run(command, seats, players, results)))
    except CurriculumError as exc:
        _send(conn, str(exc))
    except Exception as exc:  # the game's or a bot's own fault: one line to the trainer
        detail = " ".join(str(exc).split())
        _send(conn, f"{plan.spec.id}: {type(exc).__name__}: {detail}")
    finally:
        for seat in seats:
            seat.env.close()


def _run(
    command: tuple[Any, ...], seats: list[_Seat], players: _Players, results: list[Finished]
) -> Any:
    kind, values, (names, sent, dropped) = command
    players.update(sent, dropped)
    first = seats[0].opponents.seat  # a worker's seats are consecutive
    for index, name in names.items():
        seats[index - first].opponents.assign(name)
    if kind == "reset":
        obs = [seat.reset(seed) for seat, seed in zip(seats, values, strict=True)]
        out: Any = (obs, _masks(seats))
    else:
        del results[:]
        steps = [seat.step(int(a)) for seat, a in zip(seats, values, strict=True)]
        obs, rewards, dones, infos = (list(column) for column in zip(*steps, strict=True))
        out = (obs, rewards, dones, infos, _masks(seats), list(results))
    return out


def _masks(seats: list[_Seat]) -> Any:
    return np.stack([seat.env.action_masks() for seat in seats])


def _send(conn: Connection, line: str) -> None:
    with contextlib.suppress(OSError):  # the trainer is gone: nobody to tell
        conn.send(("error", line))
