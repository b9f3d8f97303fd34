"""A game's seats stepped in worker processes: an SB3 ``VecEnv`` for ``train-env
--vec-env subproc`` on a pettingzoo game (``auto`` takes it with two or more usable cores).

In-process stepping (``DummyVecEnv`` of ``game_env.SeatEnv``) plays every seat's game and
its opponent's moves, the searches included, on the trainer's one core. Here ``W``
workers (``game_seats.work``) each step a contiguous slice of the seats while the league
stays in the trainer: after each step the trainer records the games the workers finished
(in seat order, as in-process stepping does) and, before the next, names the next
opponent of each seat whose game ended (``League.draw_name``), sending a snapshot's player
with the first name that needs it; the worker plays it after the game under way. The
workers' answers follow DummyVecEnv's contract (a finished game's last observation in its
info, SB3's Monitor's episode sums), and the action masks come back with every step for
MaskablePPO. A worker's fault, or its death, is one line. This module imports SB3: the
game trainer imports it when a training starts.
"""

from __future__ import annotations

import contextlib
import multiprocessing
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices

from cosmic_curriculum.envs.pettingzoo import GameInfo
from cosmic_curriculum.envs.spaces import batch_of
from cosmic_curriculum.errors import TrainerError
from cosmic_curriculum.train.game_env import Player
from cosmic_curriculum.train.game_seats import Finished, WorkerPlan, work
from cosmic_curriculum.train.league_store import League
from cosmic_curriculum.workspace.env_config import EnvSpec

# A worker's orders: {seat: next opponent}, {snapshot: its player}, [snapshots to drop]
Order = tuple[dict[int, str], dict[str, Player], list[str]]
_CLOSE_SECONDS = 10.0  # a worker that has not exited by then is terminated


def worker_plans(
    spec: EnvSpec, n_envs: int, workers: int, move_cap: int, seed: int, root: Path, league: League
) -> list[WorkerPlan]:
    """The seats split into ``workers`` contiguous slices (sizes differing by one at most);
    each worker's fixed bots seeded apart (``seed + w``: two searches do not break their
    ties alike)."""
    sizes = [n_envs // workers + (w < n_envs % workers) for w in range(workers)]
    plans, start = [], 0
    for w, size in enumerate(sizes):
        seats = tuple(range(start, start + size))
        start += size
        plans.append(WorkerPlan(spec, seats, move_cap, seed + w, root, league.rule.bots))
    return plans


def _column(answers: list[Any], k: int) -> list[Any]:
    """Item ``k`` of each worker's answer, the workers' seats one after another."""
    return [row for answer in answers for row in answer[k]]


class GameWorkers(VecEnv):
    """The seats of ``plans`` in one worker process each; the league in this process."""

    def __init__(self, plans: Sequence[WorkerPlan], info: GameInfo, league: League) -> None:
        self.league = league
        self.seats = [index for plan in plans for index in plan.seats]
        self.owner = {index: w for w, plan in enumerate(plans) for index in plan.seats}
        self.plans = list(plans)
        # forkserver: a worker starts from a fresh interpreter, not a fork of a trainer
        # holding torch's threads; spawn where there is no forkserver.
        methods = multiprocessing.get_all_start_methods()
        context = (
            multiprocessing.get_context("forkserver")
            if "forkserver" in methods
            else multiprocessing.get_context("spawn")
        )
        self.pipes, self.processes = [], []
        self.closed = False
        try:
            for w, plan in enumerate(self.plans):
                ours, theirs = context.Pipe()
                self.pipes.append(ours)
                process = context.Process(
                    target=work, args=(theirs, plan), daemon=True, name=f"game-worker-{w}"
                )
                process.start()
                theirs.close()
                self.processes.append(process)
            for w in range(len(self.plans)):
                self._answer(w)  # built: its game, its seats and its fixed bots
        except BaseException:
            self.close()
            raise
        self.masks = np.ones((len(self.seats), int(info.action_space.n)), dtype=bool)
        # The snapshots' players each worker holds, least recently drawn first: the pool
        # and one more (a name drawn is in the pool, so a worker seldom needs one again).
        self.held: list[OrderedDict[str, None]] = [OrderedDict() for _ in self.plans]
        self.keep = max(2, league.rule.pool_size + 1)
        self.next_of: dict[int, str] = {}
        self.redraw: set[int] = set()  # seats whose next opponent is to be named
        super().__init__(len(self.seats), info.observation_space, info.action_space)

    def _died(self, w: int) -> TrainerError:
        process = self.processes[w]
        process.join(timeout=1.0)
        seats = self.plans[w].seats
        return TrainerError(
            f"game worker {w} (seats {seats[0]}-{seats[-1]}) died (exit code "
            f"{process.exitcode}); the step checkpoint before it is kept: --resume it, "
            "or train with --vec-env dummy to see the fault in this process"
        )

    def _tell(self, w: int, message: tuple[Any, ...]) -> None:
        try:
            self.pipes[w].send(message)
        except OSError:
            raise self._died(w) from None

    def _answer(self, w: int) -> Any:
        try:
            status, payload = self.pipes[w].recv()
        except (EOFError, OSError):
            raise self._died(w) from None
        if status == "error":
            raise TrainerError(str(payload))
        return payload

    def _orders(self, seats: set[int]) -> list[Order]:
        """Each worker's orders: the next opponent of each of ``seats`` (drawn in seat
        order), the snapshots' players it lacks for them, and the ones it is to drop."""
        orders: list[Order] = [({}, {}, []) for _ in self.plans]
        for index in sorted(seats):
            w = self.owner[index]
            names, sent, _ = orders[w]
            name = self.league.draw_name()
            names[index] = self.next_of[index] = name
            if name in self.league.rule.bots:  # built by the worker itself
                continue
            if name not in self.held[w]:
                sent[name] = self.league.player(name)
            self.held[w][name] = None
            self.held[w].move_to_end(name)
        for w, plan in enumerate(self.plans):
            orders[w][2].extend(self._evicted(w, plan))
        return orders

    def _evicted(self, w: int, plan: WorkerPlan) -> list[str]:
        """The snapshots worker ``w`` drops, least recently drawn first, down to
        ``self.keep`` (a name one of its seats plays next stays)."""
        held, dropped = self.held[w], []
        wanted = {self.next_of.get(i) for i in plan.seats}
        for name in list(held):
            if len(held) <= self.keep:
                break
            if name not in wanted:
                del held[name]
                dropped.append(name)
        return dropped

    def reset(self) -> Any:
        seeds = dict(zip(self.seats, self._seeds, strict=True))
        orders = self._orders(set(self.seats))  # each seat's first opponent
        for w, plan in enumerate(self.plans):
            self._tell(w, ("reset", [seeds[i] for i in plan.seats], orders[w]))
        answers = self._answers()
        obs, self.masks = _column(answers, 0), np.array(_column(answers, 1))
        self.redraw = set(self.seats)  # and the one after it
        self._reset_seeds()
        self._reset_options()
        return batch_of(obs)

    def _answers(self) -> list[Any]:
        return [self._answer(w) for w in range(len(self.plans))]

    def step_async(self, actions: np.ndarray) -> None:
        moves = np.asarray(actions).tolist()
        orders = self._orders(self.redraw)
        self.redraw = set()
        start = 0
        for w, plan in enumerate(self.plans):
            end = start + len(plan.seats)
            self._tell(w, ("step", moves[start:end], orders[w]))
            start = end

    def step_wait(self) -> Any:
        answers = self._answers()  # each: obs, rewards, dones, infos, masks, finished games
        self.masks = np.array(_column(answers, 4))
        self._record(_column(answers, 5))
        return (
            batch_of(_column(answers, 0)),
            np.asarray(_column(answers, 1), dtype=np.float32),
            np.asarray(_column(answers, 2), dtype=bool),
            _column(answers, 3),
        )

    def _record(self, finished: list[Finished]) -> None:
        for index, name, reward in sorted(finished, key=lambda f: f[0]):
            self.league.finished(name, reward)
            self.redraw.add(index)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for pipe in self.pipes:
            with contextlib.suppress(OSError):  # a worker already gone
                pipe.send(("close",))
        for process in self.processes:
            process.join(timeout=_CLOSE_SECONDS)
            if process.is_alive():
                process.terminate()
                process.join(timeout=_CLOSE_SECONDS)
        for pipe in self.pipes:
            pipe.close()

    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:
        if method_name != "action_masks":
            raise NotImplementedError(f"game workers answer action_masks only, not {method_name}")
        return [self.masks[i] for i in self._get_indices(indices)]

    def has_attr(self, attr_name: str) -> bool:
        return attr_name in ("action_masks", "render_mode")  # what SB3 and MaskablePPO ask

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        if attr_name == "render_mode":
            return [None for _ in self._get_indices(indices)]
        raise AttributeError(f"game workers do not share the seats' attribute {attr_name}")

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise AttributeError(f"game workers do not share the seats' attribute {attr_name}")

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        # The workers' seats report SB3's Monitor's episode sums (game_seats._Seat).
        return [wrapper_class is Monitor for _ in self._get_indices(indices)]
