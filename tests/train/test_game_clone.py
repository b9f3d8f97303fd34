"""`train-env --clone-teacher` on pettingzoo games: the options checked in one line, a
search's moves learned (tic-tac-toe, and a Dict-observation game without masks played
perfectly after it), a bot file taught as well, the same policy from the same seed, no
second lesson on a continuation, and a stop while cloning saves nothing."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cosmic_curriculum.envs.pettingzoo import game_info
from cosmic_curriculum.envs.policy import load_env_bot
from cosmic_curriculum.errors import ConfigError, TrainerError
from cosmic_curriculum.train.game_clone import agreement, check_size, held_out, label, target
from cosmic_curriculum.train.game_run import train_game
from cosmic_curriculum.train.league_settings import CloneSettings, LeagueOptions, clone_settings
from cosmic_curriculum.train.stopping import StopFlag
from cosmic_curriculum.workspace.env_config import EnvSpec
from tests.train.test_game_trainer import RPS, SMALL, TICTACTOE, settings

pytest.importorskip("sb3_contrib")
pytest.importorskip("pettingzoo")

DICT_GAME = EnvSpec(kind="pettingzoo", id="tests.envs.dict_game")


@pytest.mark.parametrize(
    ("options", "fault"),
    [
        ({"clone_positions": 100}, "--clone-positions 100: it sizes --clone-teacher's lesson"),
        ({"clone_epochs": 3}, "--clone-epochs 3: it sizes --clone-teacher's lesson"),
        ({"clone_teacher": "random"}, "--clone-teacher 'random': name search:N or a bot file"),
        ({"clone_teacher": "builtin:random"}, "--clone-teacher 'builtin:random': name"),
        ({"clone_teacher": " "}, "--clone-teacher ' ': name search:N or a bot file"),
        ({"clone_teacher": "exec:./bot"}, "a program plays only in evaluate"),
        ({"clone_teacher": "search:2", "clone_positions": 0}, "--clone-positions 0: must be >= 1"),
        ({"clone_teacher": "search:2", "clone_epochs": 0}, "--clone-epochs 0: must be >= 1"),
    ],
)
def test_bad_clone_options_are_one_line(options: dict[str, Any], fault: str) -> None:
    with pytest.raises(ConfigError) as caught:
        clone_settings(LeagueOptions(**options))
    assert fault in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, None),
        ({"clone_teacher": "search:2"}, CloneSettings("search:2", 40_000, 15)),
        (
            {"clone_teacher": "bots/a.json", "clone_positions": 5, "clone_epochs": 2},
            CloneSettings("bots/a.json", 5, 2),
        ),
    ],
)
def test_clone_options_and_their_defaults(
    options: dict[str, Any], expected: CloneSettings | None
) -> None:
    assert clone_settings(LeagueOptions(**options)) == expected
    if options:  # another env kind refuses them by name
        assert LeagueOptions(**options).given() == "--clone-teacher"


@pytest.mark.parametrize(
    ("moves", "size", "expected"),
    [([2], 4, [0, 0, 1, 0]), ([0, 3], 4, [0.5, 0, 0, 0.5]), ([0, 1, 2], 3, [1 / 3] * 3)],
)
def test_the_target_spreads_the_weight_over_the_teachers_moves(
    moves: list[int], size: int, expected: list[float]
) -> None:
    assert np.allclose(target(moves, size), expected)


@pytest.mark.parametrize(
    ("positions", "obs", "fits"),
    [
        (40_000, np.zeros((6, 7, 2), np.int8), True),  # connect four: 84 bytes
        (40_000, {"a": np.zeros(8, np.int8), "b": np.int64(1)}, True),
        (40_000, np.zeros((210, 160, 3), np.uint8), False),  # an Atari frame: 4 GiB
        (20_000, np.zeros((210, 160, 3), np.uint8), True),
    ],
)
def test_a_lesson_too_large_for_memory_is_one_line(positions: int, obs: Any, fits: bool) -> None:
    clone = CloneSettings("search:2", positions, 1)
    if fits:
        check_size(clone, obs, 18)
        return
    with pytest.raises(ConfigError) as caught:
        check_size(clone, obs, 18)
    message = str(caught.value)
    assert message.startswith(
        "--clone-positions 40000: 100,890 bytes a position would take 3.8 GiB"
    )
    assert message.endswith("lower it to 21,285 or fewer") and "\n" not in message


@pytest.mark.parametrize(("count", "held"), [(1, 0), (9, 0), (10, 1), (40_000, 4_000)])
def test_a_tenth_is_held_out(count: int, held: int) -> None:
    assert held_out(count) == held


def _model(ws: Path) -> Any:
    from sb3_contrib import MaskablePPO

    return MaskablePPO.load(ws / "checkpoints" / "g" / "final.zip")


@pytest.mark.slow
def test_a_search_is_learned_the_same_from_the_same_seed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clone: dict[str, Any] = {
        "clone_teacher": "search:2",
        "clone_positions": 6000,
        "clone_epochs": 20,
    }
    for name in ("plain", "a", "b"):
        assert train_game(settings(tmp_path / name, 64, **({} if name == "plain" else clone))) == 0
    out = capsys.readouterr().out
    assert "clone search:2: 6,000 positions labelled in" in out
    assert "clone search:2: epoch 20 of 20, cross-entropy" in out
    # the run's progress bar shows the lesson: timestep 0 of the total, with its activity
    assert '@progress {"timesteps":0,"total":64,"activity":"cloning search:2: epoch 20 of 20' in out
    assert "opponents self_play, fresh, cloned search:2, 64 of 64 timesteps" in out
    # the same seed, the same lesson and the same policy
    a, b = (load_env_bot(tmp_path / n / "bots" / "g.json") for n in ("a", "b"))
    for left, right in zip(a.layers, b.layers, strict=True):
        assert np.array_equal(left.weights, right.weights)
    assert a.provenance is not None and a.provenance["clone_teacher"] == "search:2"
    # positions of another seed: the cloned learner picks the search's moves far more often
    lesson = label(
        TICTACTOE, game_info(TICTACTOE), CloneSettings("search:2", 5000, 1), (tmp_path, 5, 99),
        StopFlag(), print,
    )  # fmt: skip
    assert lesson is not None
    plain, cloned = (agreement(_model(tmp_path / n), lesson) for n in ("plain", "a"))
    assert plain is not None and cloned is not None
    assert cloned[0] > 0.7 and cloned[0] > plain[0] + 0.25, (plain, cloned)


@pytest.mark.slow
def test_a_dict_game_without_masks_is_taught_perfect_play_then_passes_it_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # take one or two of seven stones, the last wins: leaving a multiple of three wins,
    # and search:7 sees every game to its end
    def teach(ws: Path, teacher: str) -> Any:
        lesson: dict[str, Any] = {
            "clone_teacher": teacher,
            "clone_positions": 1500,
            "clone_epochs": 30,
        }
        assert train_game(settings(ws, 16, "PPO", DICT_GAME, **lesson)) == 0
        return load_env_bot(ws / "bots" / "g.json")

    # the positions each seat meets (the first sees 7, 5, 4 or 2 stones, the second 5, 4
    # or 2 where the choice matters): take one from 7 or 4, two from 5 or 2
    left, seat = [7, 5, 4, 2, 5, 4, 2], [0, 0, 0, 0, 1, 1, 1]

    def greedy(bot: Any) -> list[int]:
        obs = {"stones": np.eye(8, dtype=np.int8)[left], "seat": np.array(seat)}
        return [int(m) for m in bot.act(obs, True)]

    searched = teach(tmp_path / "search", "search:7")
    assert greedy(searched) == [0, 1, 0, 1, 1, 0, 1]
    (tmp_path / "file" / "bots").mkdir(parents=True)
    (tmp_path / "file" / "bots" / "teacher.json").write_bytes(
        (tmp_path / "search" / "bots" / "g.json").read_bytes()
    )
    assert greedy(teach(tmp_path / "file", "bots/teacher.json")) == greedy(searched)
    assert "clone bots/teacher.json: done in" in capsys.readouterr().out


@pytest.mark.slow
def test_a_resume_keeps_its_checkpoints_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clone: dict[str, Any] = {"clone_teacher": "search:1", "clone_positions": 200, "clone_epochs": 1}
    assert train_game(settings(tmp_path, 64, **clone)) == 0
    capsys.readouterr()
    final = tmp_path / "checkpoints" / "g" / "final.zip"
    assert train_game(settings(tmp_path, 128, resume=final, **clone)) == 0
    out = capsys.readouterr().out
    assert "clone search:1:" not in out and "continuing, 64 of 128 timesteps" in out
    assert "note: --clone-teacher search:1: not on a continuation" in out
    # a warm start (as a curriculum's later stage) builds on its checkpoint: no lesson
    (tmp_path / "checkpoints" / "first").mkdir()
    shutil.copy(final, tmp_path / "checkpoints" / "first" / "final.zip")
    warm = tmp_path / "checkpoints" / "first" / "final.zip"
    assert train_game(settings(tmp_path, 64, resume=warm, **clone)) == 0
    out = capsys.readouterr().out
    assert "clone search:1:" not in out and "warm start, 64 of 64 timesteps" in out
    assert "note: --clone-teacher search:1: not on a warm start; the lesson is for a fresh" in out


@pytest.mark.slow
def test_a_search_that_sees_hidden_moves_teaches_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # rock-paper-scissors: the second seat's search reads the first seat's move from the
    # state; the game has no masks and a plain Box observation (PPO)
    lesson: dict[str, Any] = {"clone_teacher": "search:1", "clone_positions": 60, "clone_epochs": 1}
    assert train_game(settings(tmp_path, 16, "PPO", RPS, **lesson)) == 0
    out = capsys.readouterr().out
    assert "note: --clone-teacher search:1 sees more than a player of this game (one seat's" in out
    assert "a lesson it can learn only in part" in out and "clone search:1: done in" in out


@pytest.mark.parametrize(
    ("teacher", "fault"),
    [
        ("nope.json", "--clone-teacher 'nope.json': not random, search:N nor a bot file"),
        ("search:99", "--clone-teacher 'search:99': the depth must be 1 to 12, e.g. search:2"),
    ],
)
def test_a_teacher_that_cannot_play_is_one_line_before_training(
    tmp_path: Path, teacher: str, fault: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        train_game(settings(tmp_path, 64, clone_teacher=teacher, clone_positions=10))
    assert fault in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "bots" / "g.json").exists()
    assert not list(tmp_path.glob("checkpoints/g/*.zip"))


def test_a_teachers_illegal_move_is_one_line(tmp_path: Path) -> None:
    from cosmic_curriculum.envs.policy import save_env_bot
    from tests.envs.game_helpers import random_game_bot

    # an unmasked bot of a masked game: its greedy move is legal or not
    loose = random_game_bot(TICTACTOE)
    save_env_bot(replace(loose, action_mask=False), tmp_path / "loose.json")
    with pytest.raises(TrainerError) as caught:
        train_game(settings(tmp_path, 64, clone_teacher="loose.json", clone_positions=500))
    message = str(caught.value)
    assert message.startswith("--clone-teacher loose.json played the illegal move ")
    assert "pettingzoo.classic.tictactoe_v3 (legal: [" in message and "\n" not in message
    assert not list(tmp_path.glob("checkpoints/g/*.zip"))


@pytest.mark.slow
def test_a_stop_while_cloning_saves_nothing(tmp_path: Path) -> None:
    argv = [
        sys.executable, "-m", "cosmic_curriculum", "train-env", "g", "--timesteps", "64",
        "--env", TICTACTOE.to_argument(), "--n-envs", "2", "--hyperparams", json.dumps(SMALL),
        "--clone-teacher", "search:9", "--clone-positions", "10000000",
        "--workspace", str(tmp_path),
    ]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        lines = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the labelling's first progress line
            lines.append(proc.stdout.readline())
            if "positions labelled" in lines[-1] or not lines[-1]:
                break
        assert "of 10,000,000 positions labelled" in lines[-1], lines
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM
    assert "SIGTERM while cloning: nothing saved; a rerun clones again" in rest
    assert (
        not list(tmp_path.glob("checkpoints/g/*.zip")) and not (tmp_path / "bots/g.json").exists()
    )
