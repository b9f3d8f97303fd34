"""Program players of env kinds: real programs speaking cosmic-bot/1 with an env's spaces
(the handshake with spaces, legal-action lists, illegal and malformed replies), and an
exec reference in the env evaluator."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cosmic_curriculum.bots import ExecSpec
from cosmic_curriculum.envs.program_player import (
    ProgramPlayer,
    legal_actions,
    observation_rows,
)
from cosmic_curriculum.envs.spaces import Space
from cosmic_curriculum.errors import BotError

REPO = Path(__file__).resolve().parents[2]
FAKE = REPO / "tests" / "fakes" / "fake_env_bot.py"
BOARD = Space("Box", shape=(2,), low=np.full(2, -1.0), high=np.full(2, 1.0))
MOVES = Space("Discrete", n=4)


def fake(mode: str) -> ExecSpec:
    return ExecSpec((sys.executable, str(FAKE), mode), 5.0)


def player(mode: str, masked: bool = True) -> ProgramPlayer:
    return ProgramPlayer(fake(mode), BOARD, MOVES, env="test-game", masked=masked)


def running(token: str) -> list[int]:
    """Live processes whose command line holds ``token`` (zombies are gone already)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            alive = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
            if alive and token in (proc / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(proc.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


MASK = np.array([[False, True, True, False], [True, False, False, True]])


def test_a_program_plays_the_legal_actions_it_is_given() -> None:
    token = uuid.uuid4().hex
    spec = ExecSpec((sys.executable, str(FAKE), "ok", token), 5.0)
    with ProgramPlayer(spec, BOARD, MOVES, env="test-game", masked=True) as bot:
        assert bot.name == "fake ok" and running(token)
        obs = np.array([[0.1234567, -1.0], [0.5, 0.25]], dtype=np.float32)
        assert bot.act(obs, mask=MASK).tolist() == [1, 0]
        assert bot.act(obs).tolist() == [0, 0]  # no mask: every action is legal
        assert bot.requests == 2 and bot.fallbacks == 0
    assert running(token) == []  # closed: its whole tree is stopped


def test_the_fallbacks_a_program_reports_are_counted() -> None:
    with player("fallback") as bot:
        for _ in range(3):
            bot.act(np.zeros((2, 2)), mask=MASK)
        assert bot.fallbacks == 3


FAULTS = {
    # mode: words the one-line error must hold (besides the bot's exec: label)
    "mismatch": (
        'handshake action_space is {"type":"Discrete","n":5,"start":0} but env '
        '\'test-game\' has {"type":"Discrete","n":4,"start":0}'
    ),
    "arena": "handshake is the arena's (action_size, decision_ticks, observation_size)",
    "illegal": (
        'answered {"actions": [0, 1]} in request 1; action 0 for game 0 is not among its '
        "legal actions [1, 2]"
    ),
    "garbage": 'answered {"moves": [1, 0]} in request 1; expected {"actions": [2 actions]}',
    "bad_fallbacks": "fallbacks must list distinct game rows 0..1",
}


@pytest.mark.parametrize("mode", FAULTS)
def test_each_fault_is_one_line_naming_the_bot_and_stops_it(mode: str) -> None:
    token = uuid.uuid4().hex  # this test's program alone, whatever else runs
    spec = ExecSpec((sys.executable, str(FAKE), mode, token), 5.0)
    with pytest.raises(BotError) as caught:
        bot = ProgramPlayer(spec, BOARD, MOVES, env="test-game", masked=True)
        bot.act(np.zeros((2, 2)), mask=MASK)
    message = str(caught.value)
    assert message.startswith(f"bot exec:{sys.executable} {FAKE} {mode} {token}: ")
    assert FAULTS[mode] in message and "\n" not in message
    assert running(token) == []


def test_observation_rows_are_the_policys_view_as_json() -> None:
    cells = Space("Box", shape=(2, 2), low=np.zeros(4), high=np.full(4, 2.0), dtype="int8")
    both = Space("Dict", parts=(("board", cells), ("turn", Space("Discrete", n=2))))
    obs = {"board": np.array([[[0, 1], [2, 0]]] * 2, dtype=np.int8), "turn": np.array([0, 1])}
    rows = observation_rows(obs, both)
    assert rows == [{"board": [[0, 1], [2, 0]], "turn": 0}, {"board": [[0, 1], [2, 0]], "turn": 1}]
    assert json.loads(json.dumps(rows)) == rows
    assert observation_rows(np.array([3, 7]), Space("Discrete", n=16)) == [3, 7]
    assert observation_rows(np.array([[1 / 3, 2.0]]), BOARD) == [[0.333333, 2.0]]


@pytest.mark.parametrize(
    ("mask", "fault"),
    [
        (np.ones((2, 3), bool), "action mask of shape (2, 3): expected (2, 4)"),
        (np.array([[True] * 4, [False] * 4]), "game row 1 has no legal action"),
    ],
)
def test_a_wrong_or_empty_mask_is_one_line(mask: Any, fault: str) -> None:
    with pytest.raises(BotError, match=fault.replace("(", r"\(").replace(")", r"\)")):
        legal_actions(mask, 2, MOVES)
    assert legal_actions(MASK, 2, Space("Discrete", n=4, start=1)) == [[2, 3], [1, 4]]


def test_an_exec_reference_plays_an_env_stage(tmp_path: Path) -> None:
    pytest.importorskip("gymnasium")
    from test_env_evaluate import LAKE, ROUTE, table_bot

    from cosmic_curriculum.envs.evaluate import evaluate_env
    from cosmic_curriculum.envs.policy import save_env_bot

    bot = tmp_path / "lake.json"
    save_env_bot(table_bot(LAKE, ROUTE), bot)
    hist = tmp_path / "eval_history.json"
    record = evaluate_env(bot, fake("fallback"), history_path=hist, episodes=4, seed=3)
    # Always action 0 (left) on the lake: it never reaches the goal; the route always does.
    assert record["wins_a"] == 4 and record["reference_returns"] == [0.0] * 4
    assert record["reference"] == f"exec:{sys.executable} {FAKE} fallback"
    assert len(record["reference_sha256"]) == 64
    assert record["reference_fallbacks"] == 100  # game 0 of each of the cap's 100 requests
    with pytest.raises(BotError, match=r"action_space is .* but env 'FrozenLake-v1' has"):
        evaluate_env(bot, fake("mismatch"), history_path=hist, episodes=2, seed=3)
    assert len(json.loads(hist.read_text())) == 1  # no record for the fault


@pytest.mark.parametrize("mode", ["ok", "mismatch"])
def test_preflight_checks_a_program_references_spaces(tmp_path: Path, mode: str) -> None:
    """What `run` does before any training: the program's handshake against the stage's
    env (the workspace's Run carries just the config and its path here)."""
    pytest.importorskip("gymnasium")
    from types import SimpleNamespace

    from cosmic_curriculum.curriculum.resume import check_exec_reference
    from cosmic_curriculum.errors import ConfigError
    from cosmic_curriculum.workspace.config_file import load_config

    path = tmp_path / "stages.toml"
    path.write_text(
        '[env]\nkind = "gymnasium"\nid = "FrozenLake-v1"\n\n[[stages]]\nname = "lake"\n'
    )
    run: Any = SimpleNamespace(config=load_config(path), config_path=path)
    if mode == "ok":
        check_exec_reference(run, fake(mode), 0)
        return
    with pytest.raises(ConfigError) as caught:
        check_exec_reference(run, fake(mode), 0)
    line = str(caught.value)
    assert "reference_bot of stage 1 failed its handshake: bot exec:" in line
    assert "handshake action_space is" in line and "but env 'FrozenLake-v1' has" in line


def test_evaluate_names_the_order_when_a_program_comes_first(tmp_path: Path) -> None:
    pytest.importorskip("gymnasium")
    from env_helpers import cli
    from test_env_evaluate import LAKE, ROUTE, table_bot

    from cosmic_curriculum.envs.policy import save_env_bot

    save_env_bot(table_bot(LAKE, ROUTE), tmp_path / "lake.json")
    program = f"exec:{sys.executable} {FAKE} ok"
    done = cli(tmp_path, "evaluate", program, "lake.json", timeout=120)
    assert done.returncode == 2 and not (tmp_path / "eval_history.json").exists()
    assert f"evaluate lake.json {program}" in done.stderr.strip().splitlines()[-1]
