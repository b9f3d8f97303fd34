"""Bots we did not write (issue 27): programs that leave processes behind, exit while a
child holds their stdout, answer ahead, close stdin or print terminal escapes; ONNX models
that load but cannot play (a fixed batch, a huge allocation) or answer NaN and 1e30.
Real subprocess bots, real onnxruntime; each test failed before its fix."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from cosmic_curriculum import bots
from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots import ExecSpec, save_bot, simple_bot_document
from cosmic_curriculum.bots.actions import action_fault
from cosmic_curriculum.curriculum.reporter import ConsoleReporter
from cosmic_curriculum.errors import BotError
from cosmic_curriculum.evaluation.evaluate import run_evaluation
from cosmic_curriculum.system import processes

REPO = Path(__file__).resolve().parents[2]
TINY = GameSettings(tick=0.1, decision_ticks=1, time_limit=0.5)  # five ticks a game
IMPORTS = "import json, os, subprocess, sys, time\n"
HELLO = (
    "def send(obj):\n"
    "    sys.stdout.write(json.dumps(obj) + '\\n')\n"
    "    sys.stdout.flush()\n"
    "send({'protocol': 'cosmic-bot/1', 'observation_size': 43, 'action_size': 6,"
    " 'decision_ticks': 1})\n"
)
ANSWER = "    send({'actions': [[0.0] * 6 for _ in json.loads(line)['obs']]})\n"
SLEEPER = "[sys.executable, '-c', 'import time; time.sleep(300)']"


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "cosmic_curriculum", *args]
    wide = env() | {"COLUMNS": "1000"}  # Rich's tables unwrapped: labels read whole
    return subprocess.run(argv, env=wide, capture_output=True, text=True, timeout=120)


def program(tmp_path: Path, body: str, before: str = "") -> Path:
    """A bot script: ``before``, the handshake, then ``body``."""
    path = tmp_path / "bot.py"
    path.write_text(IMPORTS + before + HELLO + body)
    return path


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.fixture
def leftovers() -> Iterator[list[int]]:
    """Pids a test expects gone; whatever is left is killed (the test then fails)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if running(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def inert(tmp_path: Path) -> Path:
    path = tmp_path / "inert.json"
    save_bot(path, simple_bot_document("inert", decision_ticks=1, game=TINY))
    return path


def play(spec: ExecSpec, reference: Path, history: Path) -> dict[str, Any]:
    return run_evaluation(spec, reference, history_path=history, episodes=2, game=TINY)


# --- external programs ------------------------------------------------------------------


def test_a_setsid_child_of_a_bot_is_stopped_with_it(
    tmp_path: Path, inert: Path, leftovers: list[int]
) -> None:
    """It left the bot's process group, so stopping the group missed it: it lived on
    after every evaluate (and one per preflight and evaluation of `run`)."""
    pidfile = tmp_path / "child.pid"
    bot = program(
        tmp_path,
        f"child = subprocess.Popen({SLEEPER}, start_new_session=True,"
        " stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
        "for line in sys.stdin:\n" + ANSWER,
    )
    record = play(ExecSpec((sys.executable, str(bot)), 10.0), inert, tmp_path / "h.json")
    assert record["episodes"] == 2
    leftovers.append(int(pidfile.read_text()))
    assert not running(leftovers[0])


def test_a_bot_that_exits_is_reported_as_exited_while_a_child_holds_its_stdout(
    tmp_path: Path, inert: Path, leftovers: list[int]
) -> None:
    """Its setsid child kept stdout open, so no end of file came: the bot's exit 5 was
    reported as "did not answer within 30 s" after waiting the whole timeout."""
    pidfile = tmp_path / "child.pid"
    bot = program(
        tmp_path,
        f"child = subprocess.Popen({SLEEPER}, start_new_session=True)\n"
        f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
        "sys.stdin.readline()\n"
        "sys.exit(5)\n",
    )
    spec = ExecSpec((sys.executable, str(bot)), 30.0)
    with pytest.raises(BotError) as info:
        play(spec, inert, tmp_path / "h.json")
    leftovers.append(int(pidfile.read_text()))
    assert str(info.value) == f"bot {spec}: exited with status 5 in request 1"
    assert not running(leftovers[0])


def test_a_bot_that_answers_ahead_is_refused(tmp_path: Path, inert: Path) -> None:
    """Two lines per request: every later answer was an earlier request's, silently."""
    bot = program(
        tmp_path,
        "for line in sys.stdin:\n"
        "    n = len(json.loads(line)['obs'])\n"
        "    reply = json.dumps({'actions': [[0.0] * 6] * n}) + '\\n'\n"
        "    sys.stdout.write(reply + reply)\n"
        "    sys.stdout.flush()\n",
    )
    history = tmp_path / "h.json"
    with pytest.raises(BotError, match=r"before request 2 \(.*it answers ahead\)"):
        play(ExecSpec((sys.executable, str(bot)), 10.0), inert, history)
    assert not history.exists()


@pytest.mark.slow  # about 3 s: the program outlives its closed stdin until it is stopped
def test_a_bot_that_closes_stdin_is_said_to_close_stdin(tmp_path: Path, inert: Path) -> None:
    bot = program(tmp_path, "time.sleep(300)\n", before="os.close(0)\n")
    spec = ExecSpec((sys.executable, str(bot)), 10.0)
    with pytest.raises(BotError) as info:
        play(spec, inert, tmp_path / "h.json")
    assert str(info.value) == f"bot {spec}: closed its stdin in request 1"


ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[31mboom\r\x9b"


def test_terminal_escapes_of_a_bot_never_reach_the_terminal(tmp_path: Path, inert: Path) -> None:
    """A bot's last words are quoted in evaluate's error line: its ESC sequences cleared
    the screen and retitled the window."""
    bot = program(
        tmp_path,
        "sys.stdin.readline()\n"
        f"sys.stderr.write({ESCAPES!r} + '\\n')\n"
        "sys.stderr.flush()\n"
        "sys.exit(3)\n",
    )
    history = tmp_path / "h.json"
    done = cli("evaluate", f"exec:{sys.executable} {bot}", str(inert), "-n", "2",
               "--history", str(history))  # fmt: skip
    assert done.returncode == 1
    line = done.stderr
    assert line.startswith("error: bot exec:") and line.count("\n") == 1, line
    assert "exited with status 3" in line and "boom" in line
    assert not any(ch in line for ch in "\x1b\x07\r\x9b"), repr(line)
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in line


def test_quoted_logs_and_run_warnings_show_escapes_escaped(tmp_path: Path) -> None:
    """A trainer's, an evaluator's or a notifier's output reaches `run`'s error lines
    (log tails) and warnings."""
    log = tmp_path / "trainer.log"
    log.write_text(f"step 1\nerror: {ESCAPES}\n")
    tail = processes.tail_text(log)
    assert tail.splitlines()[0] == "step 1" and "\x1b" not in tail and "\\x1b[2J" in tail
    out = io.StringIO()
    from rich.console import Console

    reporter = ConsoleReporter(Console(file=out, width=200))
    reporter.warning(f"notify_command ./n exited with status 1: {ESCAPES} [/]")
    reporter.info(f"said {ESCAPES}")
    printed = out.getvalue()
    assert not any(ch in printed for ch in "\x1b\x07\r\x9b"), repr(printed)
    assert "\\x1b[2J" in printed and "[/]" in printed


@pytest.mark.slow  # about 6 s: evaluate and ladder through the CLI
def test_rich_markup_in_a_bot_label_is_printed_as_it_is(tmp_path: Path, inert: Path) -> None:
    """`exec:... [/]` crashed evaluate after its record was written (a rerun wrote a
    second one); `rookie[copy].json` showed as `rookie` in the ladder."""
    bot = program(tmp_path, "for line in sys.stdin:\n" + ANSWER)
    history = tmp_path / "h.json"
    label = f"exec:{sys.executable} {bot} [/] [bold]x"
    done = cli("evaluate", label, str(inert), "-n", "2", "--history", str(history))
    assert done.returncode == 0, done.stderr
    assert "'[/]' '[bold]x' (" in done.stdout and "Traceback" not in done.stderr
    assert len(json.loads(history.read_text())) == 1
    bots_dir = tmp_path / "bots"
    bots_dir.mkdir()
    for name in ("inert.json", "rookie[copy].json"):
        save_bot(bots_dir / name, simple_bot_document("inert", decision_ticks=1, game=TINY))
    ladder = cli("ladder", "--bots-dir", str(bots_dir), "--pairs", "1", "--out-dir",
                 str(tmp_path), "--game-from", str(inert))  # fmt: skip
    assert ladder.returncode == 0, ladder.stderr
    assert "rookie[copy]" in ladder.stdout


def test_one_action_check_for_every_bot_we_did_not_compute() -> None:
    ok = np.zeros((2, ACT_SIZE))
    table = [
        (ok, None),
        (np.zeros((2, 5)), "answered actions of shape [2, 5], expected [2, 6]"),
        (np.full((2, ACT_SIZE), np.nan), "answered action nan, which is not a finite number"),
        (np.full((2, ACT_SIZE), -np.inf), "answered action -inf, which is not a finite number"),
        (np.full((2, ACT_SIZE), 1e30), "answered action 1e+30 outside [-1, 1]"),
        (np.array([["a"] * ACT_SIZE] * 2), "answered actions of type <U1, expected numbers"),
    ]
    for actions, fault in table:
        assert action_fault(actions, 2) == fault


# --- ONNX models --------------------------------------------------------------------------


def onnx_bot(
    path: Path,
    nodes: list[Any],
    consts: dict[str, Any],
    in_batch: int | str = "batch",
    output: str = "action",
) -> Path:
    """A model from ``nodes`` over ``obs`` (and ``consts``) to ``output``, with the
    metadata a bot needs; built with onnx.helper, played by onnxruntime."""
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()]
    graph = helper.make_graph(
        nodes,
        "bot",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, [in_batch, OBS_SIZE])],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, [in_batch, ACT_SIZE])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    game = json.dumps(GameSettings().model_dump())
    helper.set_model_props(model, {"decision_ticks": "8", "game": game})
    onnx.save(model, str(path))
    return path


SIX = {
    "starts": np.array([0], np.int64),
    "ends": np.array([ACT_SIZE], np.int64),
    "axes": np.array([1], np.int64),
}
FIRST_SIX = helper.make_node("Slice", ["obs", "starts", "ends", "axes"], ["six"])


def scaled(path: Path, add: float, in_batch: int | str = "batch") -> Path:
    """action = obs[:, :6] * 0 + ``add``."""
    nodes = [
        FIRST_SIX,
        helper.make_node("Mul", ["six", "zero"], ["nil"]),
        helper.make_node("Add", ["nil", "add"], ["action"]),
    ]
    consts = SIX | {"zero": np.float32(0.0), "add": np.float32(add)}
    return onnx_bot(path, nodes, consts, in_batch)


def fixed_inside(path: Path) -> Path:
    """Declares any batch, but reshapes to one row inside (a batch of 1 in the graph)."""
    nodes = [
        helper.make_node("Reshape", ["obs", "one_row"], ["row"]),
        helper.make_node("Slice", ["row", "starts", "ends", "axes"], ["six"]),
        helper.make_node("Mul", ["six", "zero"], ["action"]),
    ]
    consts = SIX | {"one_row": np.array([1, OBS_SIZE], np.int64), "zero": np.float32(0.0)}
    return onnx_bot(path, nodes, consts)


def huge_constant(path: Path) -> Path:
    """A ConstantOfShape of 10^13 floats (40 TB) summed into the action."""
    nodes = [
        helper.make_node(
            "ConstantOfShape",
            ["shape"],
            ["big"],
            value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0]),
        ),
        helper.make_node("ReduceSum", ["big"], ["total"], keepdims=1),
        FIRST_SIX,
        helper.make_node("Mul", ["six", "total"], ["action"]),
    ]
    return onnx_bot(path, nodes, SIX | {"shape": np.array([10**13], np.int64)})


def nan_far_from_kickoff(path: Path) -> Path:
    """0 · sqrt(obs + 5): 0 at every kickoff, NaN for observations below -5."""
    nodes = [
        FIRST_SIX,
        helper.make_node("Add", ["six", "five"], ["shifted"]),
        helper.make_node("Sqrt", ["shifted"], ["root"]),
        helper.make_node("Mul", ["root", "zero"], ["action"]),
    ]
    return onnx_bot(path, nodes, SIX | {"five": np.float32(5.0), "zero": np.float32(0.0)})


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda p: scaled(p, 0.0, in_batch=1), "input 'obs' has a fixed batch of 1"),
        (fixed_inside, "the model cannot play a batch of 4 games within 2 GiB"),
        (huge_constant, "Failed to allocate memory"),
        (lambda p: scaled(p, float("nan")), "answered action nan, which is not a finite number"),
        (lambda p: scaled(p, 1e30), "answered action 1.0000000150474662e+30 outside [-1, 1]"),
    ],
    ids=["fixed-batch", "fixed-inside", "huge-constant", "nan", "1e30"],
)
def test_an_onnx_bot_that_cannot_play_is_refused_when_loaded(
    make: Any, needle: str, tmp_path: Path, inert: Path
) -> None:
    """Each loaded, then failed in its first match with a 58-line traceback (or, for NaN
    and 1e30, was scored as an inert bot and a record written); as a reference_bot it
    passed `run`'s preflight and crashed at every evaluation."""
    path = make(tmp_path / "bad.onnx")
    with pytest.raises(BotError) as info:
        bots.load_bot(path)
    message = str(info.value)
    assert "\n" not in message and needle in message and str(path) in message, message
    history = tmp_path / "h.json"
    done = cli("evaluate", str(path), str(inert), "-n", "2", "--history", str(history))
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: ") and needle in done.stderr
    assert not history.exists()


def test_an_onnx_bot_failing_mid_match_is_one_line_and_no_record(tmp_path: Path) -> None:
    path = nan_far_from_kickoff(tmp_path / "odd.onnx")
    bot = bots.load_bot(path)  # plays every kickoff
    rng = np.random.default_rng(0)
    assert not bot.act(np.zeros((3, OBS_SIZE), np.float32), rng).any()
    with pytest.raises(BotError) as info:
        bot.act(np.full((3, OBS_SIZE), -10.0, np.float32), rng)
    assert str(info.value) == (
        f"bot {path}: answered action nan, which is not a finite number in decision 2 "
        "(a batch of 3 games)"
    )
    with pytest.raises(BotError, match=r"the model failed in decision 3 .*INVALID_ARGUMENT"):
        bot.act(np.zeros((3, OBS_SIZE - 1), np.float32), rng)


def test_run_refuses_an_onnx_reference_that_cannot_play_before_training(tmp_path: Path) -> None:
    from fakes.workspace import make_workspace, trainer_runs
    from gitutil import git

    ws = make_workspace(tmp_path / "ws", stages=["score"], external_eval=False)
    fixed_inside(ws / "bots" / "ref.onnx")
    toml = (ws / "stages.toml").read_text()
    (ws / "stages.toml").write_text(toml.replace("bots/rookie.json", "bots/ref.onnx"))
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "an ONNX reference")
    head = git(ws, "rev-parse", "HEAD")
    from fakes.workspace import cli_env

    done = subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum", "run", "--workspace", str(ws), "--no-push"],
        env=cli_env(ws),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ws,
    )
    assert done.returncode != 0 and done.stderr.count("\n") == 1, done.stderr
    assert "bots/ref.onnx" in done.stderr and "cannot play a batch of 4 games" in done.stderr
    assert trainer_runs(ws) == [] and git(ws, "rev-parse", "HEAD") == head


def test_the_probe_is_bounded_in_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A graph that never returns cannot hold the command: the child is stopped."""
    from cosmic_curriculum.bots import onnx_model

    monkeypatch.setattr(onnx_model, "PROBE_SECONDS", 0.0001)
    path = scaled(tmp_path / "ok.onnx", 0.0)
    with pytest.raises(BotError, match=r"did not play a batch of 4 games within 0.0001 s"):
        bots.load_bot(path)


def test_the_article_fits_the_kind(inert: Path) -> None:
    """ "a inert bot has no network to convert"."""
    from cosmic_curriculum.bots.onnx_model import write_onnx

    with pytest.raises(BotError, match=r"inert.json: an inert bot has no network to convert"):
        write_onnx(inert)
