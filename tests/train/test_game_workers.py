"""A game's seats in worker processes (``--vec-env subproc``): the same games, rewards,
masks and league table as in-process stepping for the same moves; a bot's fault in a
worker, and a worker's death, one line; a trainer killed by -9 leaves no worker behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakes.waiting import alive, wait_until
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv
from test_game_trainer import TICTACTOE, _argv, _wait_for, settings

from cosmic_curriculum.envs.pettingzoo import game_info
from cosmic_curriculum.envs.policy import load_env_bot
from cosmic_curriculum.errors import TrainerError
from cosmic_curriculum.train import league as rules
from cosmic_curriculum.train.game_env import SeatEnv
from cosmic_curriculum.train.game_run import game_vec_kind, train_game
from cosmic_curriculum.train.game_workers import GameWorkers, worker_plans
from cosmic_curriculum.train.league_store import League

pytest.importorskip("sb3_contrib")


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A learner's snapshot file of tic-tac-toe: a 64-step self-play training's first."""
    ws = tmp_path_factory.mktemp("ws")
    assert train_game(settings(ws, 64, opponent_mode="self_play")) == 0
    return ws / "checkpoints" / "g" / "league" / "snap-0.json"


def _league(directory: Path, snapshot: Path, bots: tuple[str, ...] = ()) -> League:
    rule = rules.LeagueRule(1, "latest", bots=bots, bot_share=1.0 if bots else 0.0)
    league = League(rule, rules.new_state(0), directory, {})
    if not bots:
        league.snapshot(load_env_bot(snapshot), 0)
    return league


def _same(a: Any, b: Any) -> bool:
    return bool(np.array_equal(a, b))


def test_workers_play_the_seats_as_this_process_does(tmp_path: Path, snapshot: Path) -> None:
    info = game_info(TICTACTOE)
    here, there = _league(tmp_path / "a", snapshot), _league(tmp_path / "b", snapshot)

    def seat(i: int) -> Callable[[], Monitor]:
        return lambda: Monitor(SeatEnv(TICTACTOE, info, here, i, 100))

    dummy = DummyVecEnv([seat(i) for i in range(5)])
    workers = GameWorkers(worker_plans(TICTACTOE, 5, 2, 100, 0, tmp_path, there), info, there)
    try:
        assert [p.seats for p in workers.plans] == [(0, 1, 2), (3, 4)]
        dummy.seed(3)
        workers.seed(3)
        assert _same(dummy.reset(), workers.reset())
        rng, games = np.random.default_rng(0), 0
        for _ in range(120):
            masks = np.stack(dummy.env_method("action_masks"))
            assert (masks == np.stack(workers.env_method("action_masks"))).all()
            moves = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            obs, rewards, dones, infos = dummy.step(moves)
            w_obs, w_rewards, w_dones, w_infos = workers.step(moves)
            assert _same(obs, w_obs) and _same(rewards, w_rewards)
            assert (dones == w_dones).all()
            for a, b in zip(infos, w_infos, strict=True):
                assert ("episode" in a) == ("episode" in b)
                if "episode" in a:
                    games += 1
                    assert (a["episode"]["r"], a["episode"]["l"]) == (
                        b["episode"]["r"],
                        b["episode"]["l"],
                    )
                    assert (a["terminal_observation"] == b["terminal_observation"]).all()
                    assert a["TimeLimit.truncated"] == b["TimeLimit.truncated"]
        assert games > 20
        assert here.state.table == there.state.table  # the same games, in the same order
    finally:
        workers.close()
        dummy.close()
    assert not any(p.is_alive() for p in workers.processes)


def test_a_bots_illegal_move_in_a_worker_is_one_line(tmp_path: Path, snapshot: Path) -> None:
    # an unmasked bot of a masked game samples its moves, legal or not
    loose = json.loads(snapshot.read_text())
    loose["action_mask"] = False
    (tmp_path / "loose.json").write_text(json.dumps(loose))
    info = game_info(TICTACTOE)
    league = _league(tmp_path / "league", snapshot, bots=("loose.json",))
    workers = GameWorkers(worker_plans(TICTACTOE, 4, 2, 100, 0, tmp_path, league), info, league)
    try:
        workers.reset()
        with pytest.raises(TrainerError) as caught:
            for _ in range(200):
                masks = np.stack(workers.env_method("action_masks"))
                workers.step(np.array([np.flatnonzero(m)[0] for m in masks]))
    finally:
        workers.close()
    message = str(caught.value)
    assert "opponent loose.json played the illegal move" in message and "\n" not in message


def test_a_dead_worker_is_one_line(tmp_path: Path, snapshot: Path) -> None:
    info = game_info(TICTACTOE)
    league = _league(tmp_path / "league", snapshot)
    workers = GameWorkers(worker_plans(TICTACTOE, 4, 2, 100, 0, tmp_path, league), info, league)
    try:
        workers.reset()
        pid = workers.processes[1].pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(TrainerError) as caught:
            workers.step(np.array([np.flatnonzero(m)[0] for m in workers.masks]))
    finally:
        workers.close()
    message = str(caught.value)
    assert message.startswith("game worker 1 (seats 2-3) died (exit code -9)")
    assert "\n" not in message


@pytest.mark.parametrize(
    ("vec_env", "kind"),
    [("auto", "dummy"), ("dummy", "dummy"), ("subproc", "subproc")],
)
def test_the_vec_env_choice(vec_env: str, kind: str) -> None:
    # auto: in this process (measured: workers do not pay for the connect4 preset's league)
    assert game_vec_kind(vec_env) == kind


def _descendants(pid: int) -> set[int]:
    """The processes below ``pid`` (the forkserver and its workers)."""
    found, frontier = set(), [pid]
    while frontier:
        parent = frontier.pop()
        done = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(parent)], capture_output=True, text=True
        )
        children = {int(p) for p in done.stdout.split()}
        found |= children
        frontier += children
    return found


@pytest.mark.slow
def test_a_trainer_killed_by_9_leaves_no_worker(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {**os.environ, "COSMIC_CURRICULUM_NO_GIT": "1"}
    argv = [*_argv(ws, 100_000), "--vec-env", "subproc"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        _wait_for(ws / "checkpoints" / "g", "step_*.zip", proc)
        below = _descendants(proc.pid)
        assert len(below) >= 2  # the workers (and the forkserver)
        proc.kill()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.stdout is not None
    assert "2 seats in 2 worker processes" in proc.stdout.read().decode()
    with contextlib.suppress(AssertionError):  # the check below says which are left
        wait_until(lambda: not any(alive(p) for p in below), 30, "the workers to exit")
    left = [p for p in below if alive(p)]
    for pid in left:  # a failing test leaves nothing either
        os.kill(pid, signal.SIGKILL)
    assert not left
