"""External program bots: real subprocesses speaking (or failing to speak) cosmic-bot/1."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cosmic_curriculum.bots import ExecSpec, ExternalBot, as_source, bot_from_spec
from cosmic_curriculum.errors import BotError
from cosmic_curriculum.evaluation.evaluate import run_evaluation
from cosmic_curriculum.system import processes as runner

REPO = Path(__file__).resolve().parents[2]
FAKE_BOT = REPO / "tests" / "fakes" / "fake_bot.py"
EXAMPLES = REPO / "examples" / "bots"
ROOKIE = REPO / "bots" / "rookie.json"
INERT = REPO / "bots" / "inert.json"


def fake(mode: str, pidfile: Path | None = None, timeout: float = 5.0) -> ExecSpec:
    argv = [sys.executable, str(FAKE_BOT), mode, *([str(pidfile)] if pidfile else [])]
    return ExecSpec(tuple(argv), timeout)


def gone(pids: list[int]) -> bool:
    """Every pid is gone or a zombie (a grandchild waits for init to reap it)."""
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        alive = [p for p in pids if runner.process_start_time(p) is not None]
        if not any(runner.group_members(p) or _running(p) for p in alive):
            return True
        time.sleep(0.05)
    return False


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def pids_of(pidfile: Path) -> list[int]:
    return [int(p) for p in pidfile.read_text().split()]


def evaluate(candidate: ExecSpec, history: Path, episodes: int = 4) -> dict[str, Any]:
    return run_evaluation(candidate, INERT, history_path=history, episodes=episodes)


@pytest.fixture
def history(tmp_path: Path) -> Path:
    path = tmp_path / "eval_history.json"
    path.write_text("[]\n")
    return path


FAULTS = {
    # mode: (timeout, words the one-line error must contain)
    "silent": (1.0, "did not answer within 1 s before its handshake"),
    "hang": (1.0, "did not answer within 1 s in request 1"),
    "garbage": (5.0, "answered with invalid JSON in request 1"),
    "shape": (5.0, "answered actions of shape [4, 5] in request 1, expected [4, 6]"),
    "nan": (5.0, "NaN, which is not a finite number"),
    "range": (5.0, "answered action 1.5 outside [-1, 1]"),
    "strings": (5.0, "not all numbers"),
    "exit": (5.0, "exited with status 3 in request 2 (stderr: fake bot: something broke)"),
    "huge": (5.0, "wrote a line longer than"),
    "protocol": (5.0, "handshake protocol 'cosmic-bot/9', expected 'cosmic-bot/1'"),
    "obs_size": (5.0, "handshake observation_size is 42, this arena needs 43"),
}


@pytest.mark.slow
@pytest.mark.parametrize("mode", sorted(FAULTS))
def test_each_fault_is_one_line_no_record_and_no_process(
    mode: str, tmp_path: Path, history: Path
) -> None:
    timeout, needle = FAULTS[mode]
    pidfile = tmp_path / "pids"
    spec = fake(mode, pidfile, timeout)
    before = history.read_bytes()
    started = time.monotonic()
    with pytest.raises(BotError) as info:
        evaluate(spec, history)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"bot {spec}: ") and needle in message, message
    assert time.monotonic() - started < timeout + 10
    assert history.read_bytes() == before  # no partial record
    assert gone(pids_of(pidfile))


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["./no-such-bot"], "program './no-such-bot' does not exist"),
        (["no-such-bot-on-path"], "is not on PATH"),
        (["./not_executable"], "is not executable"),
        (["./bad_interpreter"], "names an interpreter that does not exist"),
    ],
)
def test_a_program_that_never_starts(
    argv: list[str], needle: str, tmp_path: Path, history: Path
) -> None:
    (tmp_path / "not_executable").write_text("#!/bin/sh\n")
    bad = tmp_path / "bad_interpreter"
    bad.write_text("#!/no/such/interpreter\n")
    bad.chmod(0o755)
    spec = ExecSpec(tuple(argv), 5.0, cwd=tmp_path)
    with pytest.raises(BotError, match=f"^bot exec:{argv[0]}: .*{needle}"):
        evaluate(spec, history)
    assert history.read_text() == "[]\n"


def test_stderr_flood_never_blocks_and_is_bounded(history: Path) -> None:
    record = evaluate(fake("flood"), history, episodes=2)
    assert record["episodes"] == 2 and str(record["candidate"]).startswith("exec:")


@pytest.mark.slow
def test_a_stubborn_program_and_its_children_are_stopped(tmp_path: Path, history: Path) -> None:
    """It ignores EOF and SIGTERM and has a child: the whole group still goes (KILL)."""
    pidfile = tmp_path / "pids"
    record = evaluate(fake("stubborn", pidfile), history, episodes=2)
    assert record["episodes"] == 2
    pids = pids_of(pidfile)
    assert len(pids) == 2 and gone(pids)


def test_resets_and_batches_reach_the_program(tmp_path: Path) -> None:
    echo = tmp_path / "echo_bot.py"
    echo.write_text(
        "import json, sys\n"
        'print(json.dumps({"protocol": "cosmic-bot/1", "observation_size": 43, '
        '"action_size": 6, "decision_ticks": 4, "name": "echo"}), flush=True)\n'
        "for line in sys.stdin:\n"
        "    req = json.loads(line)\n"
        "    rows = [[o[0], len(req['reset']) / 10, 0, 0, 0, 0] for o in req['obs']]\n"
        "    print(json.dumps({'actions': rows}), flush=True)\n"
    )
    with ExternalBot(ExecSpec((sys.executable, str(echo)), 5.0)) as bot:
        assert (bot.decision_ticks, bot.name, bot.kind) == (4, "echo", "external")
        obs = np.full((3, 43), 0.25, dtype=np.float32)
        first = bot.act(obs, np.random.default_rng(0))  # a new batch: every game is new
        assert first.dtype == np.float32 and first.shape == (3, 6)
        assert first[0, 0] == np.float32(0.25) and first[0, 1] == np.float32(0.3)
        bot.reset(np.array([False, True, False]))
        assert bot.act(obs, np.random.default_rng(0))[0, 1] == np.float32(0.1)
        assert bot.act(obs, np.random.default_rng(0))[0, 1] == 0.0
        pid = bot._proc.pid
    assert gone([pid])


def test_specs_parse_like_a_shell_but_never_run_one() -> None:
    spec = as_source("exec:./my bot --name 'a b' $HOME")
    assert isinstance(spec, ExecSpec)
    assert spec.argv == ("./my", "bot", "--name", "a b", "$HOME")
    assert str(as_source("exec:./mybot --level 3")) == "exec:./mybot --level 3"
    assert as_source("bots/x.json") == Path("bots/x.json")
    for bad in ("exec:", "exec:   ", "exec:'unclosed"):
        with pytest.raises(BotError):
            as_source(bad)
    with pytest.raises(BotError, match="exec:<command>"):
        bot_from_spec("nonsense")


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        [sys.executable, str(EXAMPLES / "orb_chaser.py")],
        ["perl", str(EXAMPLES / "orb_chaser.pl")],
    ],
    ids=["python", "perl"],
)
def test_the_examples_play_through_evaluate(argv: list[str], history: Path) -> None:
    if argv[0] == "perl" and (
        shutil.which("perl") is None
        or subprocess.run(["perl", "-MJSON::PP", "-e", "1"], capture_output=True).returncode
    ):
        pytest.skip("perl with JSON::PP is not installed")
    spec = ExecSpec(tuple(argv), 30.0)
    for reference in (INERT, ROOKIE):
        record = run_evaluation(spec, reference, history_path=history, episodes=4)
        assert record["episodes"] == 4 and record["candidate"] == str(spec)
        assert record["candidate_decision_ticks"] == 8
        assert len(str(record["candidate_sha256"])) == 64
    vs_inert = json.loads(history.read_text())[0]
    assert vs_inert["reference"] == str(INERT)
    assert vs_inert["wins_a"] > vs_inert["wins_b"]  # a real bot: it beats a ship that never moves


@pytest.mark.slow
def test_cli_evaluate_replay_and_ladder_take_exec_bots(tmp_path: Path, history: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    chaser = f"exec:{sys.executable} {EXAMPLES / 'orb_chaser.py'}"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "cosmic_curriculum", *args]
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)

    done = cli("evaluate", chaser, str(INERT), "-n", "2", "--history", str(history))
    assert done.returncode == 0, done.stderr
    assert "exec:" in history.read_text()
    before = history.read_bytes()
    hang = f"exec:{sys.executable} {FAKE_BOT} hang"
    failed = cli(
        "evaluate", hang, str(INERT), "-n", "2", "--history", str(history), "--bot-timeout", "0.5"
    )
    assert failed.returncode == 1
    assert failed.stderr.startswith(f"error: bot {hang}: did not answer within 0.5 s")
    assert len(failed.stderr.strip().splitlines()) == 1
    assert history.read_bytes() == before
    bots_dir = tmp_path / "bots"
    bots_dir.mkdir()
    shutil.copy(ROOKIE, bots_dir / "rookie.json")
    ladder = cli(
        "ladder",
        "--bots-dir",
        str(bots_dir),
        "--pairs",
        "1",
        "--out-dir",
        str(tmp_path),
        "--bot",
        chaser,
    )
    assert ladder.returncode == 0, ladder.stderr
    assert '"path": "exec:' in (tmp_path / "ladder.json").read_text()
    picture = tmp_path / "replay.png"
    replay = cli("replay", chaser, str(ROOKIE), "--out", str(picture))
    assert replay.returncode == 0, replay.stderr
    assert picture.stat().st_size > 0
