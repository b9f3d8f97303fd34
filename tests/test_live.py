"""Living with a multi-day run: live status, `status --watch`, `attach`, plain log output."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.waiting import wait_until
from fakes.workspace import cli_env, make_workspace, run_argv, set_scripts
from rich.console import Console
from typer.testing import CliRunner

from cosmic_curriculum.cli import app
from cosmic_curriculum.curriculum.reporter import ConsoleReporter
from cosmic_curriculum.launchers.tmux import TMUX_SOCKET_ENV
from cosmic_curriculum.status.facts import decision_interval
from cosmic_curriculum.workspace.layout import LOCK_FILE
from cosmic_curriculum.workspace.live import (
    eta_seconds,
    format_duration,
    live_run,
    lock_holder,
    progress_text,
)
from cosmic_curriculum.workspace.lock import WorkspaceLock
from cosmic_curriculum.workspace.state import Attempt


def cli(
    ws: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "cosmic_curriculum", *args]
    return subprocess.run(argv, env=env or cli_env(ws), capture_output=True, text=True, timeout=60)


# ----------------------------------------------------------------------------- live facts


def test_a_lock_file_proves_a_live_run_only_while_its_pid_holds_it(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    assert lock_holder(ws) is None  # no lock file
    with WorkspaceLock(ws):
        holder = lock_holder(ws)
        assert holder is not None and holder["pid"] == os.getpid() and holder["since"]
    # Released: the JSON still names this (live) process, which no longer has it open.
    assert json.loads((ws / LOCK_FILE).read_text())["pid"] == os.getpid()
    assert lock_holder(ws) is None
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    record = {"pid": int(dead), "host": os.uname().nodename, "started_at": "x"}
    (ws / LOCK_FILE).write_text(json.dumps(record))
    assert lock_holder(ws) is None
    (ws / LOCK_FILE).write_text("{not json")
    assert lock_holder(ws) is None


@pytest.mark.parametrize(
    ("phase", "progress", "expected"),
    [
        ("training", {"timesteps": 0, "total": 9, "activity": "cloning search:2: epoch 1"},
         "cloning search:2: epoch 1"),
        ("training", {"timesteps": 5, "total": 9}, None),
        ("evaluating", {"timesteps": 0, "total": 9, "activity": "cloning"}, None),
    ],
)  # fmt: skip
def test_a_live_training_says_what_its_trainer_does_before_its_timesteps(
    tmp_path: Path, phase: str, progress: dict[str, Any], expected: str | None
) -> None:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    with WorkspaceLock(ws):
        live = live_run(ws, {"phase": phase, "last_progress": progress})
    assert live is not None and live["activity"] == expected
    if expected is not None:
        assert progress_text(live) == f"0/9 steps (0%), {expected}"


def test_eta_and_durations() -> None:
    assert eta_seconds({"timesteps": 1000, "total": 21000, "fps": 100.0}) == 200.0
    assert eta_seconds({"timesteps": 1000, "total": 21000}) is None
    assert eta_seconds(None) is None
    assert [format_duration(s) for s in (12, 250, 11100, 183600)] == [
        "12s",
        "4m 10s",
        "3h 05m",
        "2d 03h",
    ]


def test_decision_interval_from_the_record_else_from_the_gate_summary() -> None:
    record = {"gap": 0.3, "gap_ci95": [0.13, 0.47], "elo": -106.2, "elo_err95": 63.4}
    assert decision_interval(record, None) == "gap +0.30 ± 0.17, Elo −106 ± 63"
    summary = "candidate 20–50 reference (30 draws), gap +0.30 ± 0.17, Elo −106 ± 63 → fail"
    assert decision_interval({"wins_a": 20}, summary) == "gap +0.30 ± 0.17, Elo −106 ± 63"
    assert decision_interval(None, "override") is None


@pytest.mark.slow
def test_status_says_running_with_eta_while_a_run_is_live(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    set_scripts(ws, trainer_script={"curric-s1-score": {"steps": 400, "step_seconds": 0.1}})
    before = json.loads(cli(ws, "status", "--workspace", str(ws), "--json").stdout)
    assert before["live"] is None
    with open(tmp_path / "run.out", "w") as out:
        run = subprocess.Popen(run_argv(ws), env=cli_env(ws), stdout=out, stderr=out)
    try:

        def live() -> dict[str, Any] | None:
            data = json.loads(cli(ws, "status", "--workspace", str(ws), "--json").stdout)
            found: dict[str, Any] | None = data["live"]
            return data if found and found["eta_seconds"] is not None else None

        data = wait_until(live, timeout=60.0, what="a live status", every=0.2)
        assert data["live"]["pid"] == run.pid and data["live"]["phase"] == "training"
        assert data["live"]["total"] == 400 and 0 < data["live"]["timesteps"] < 400
        assert data["live"]["fps"] == 1000.0 and data["live"]["since"]
        assert "status --watch" in data["next"] and "to resume" not in data["next"]
        text = cli(ws, "status", "--workspace", str(ws))
        assert text.returncode == 0, text.stderr
        lines = text.stdout.splitlines()
        at = next(i for i, ln in enumerate(lines) if ln.startswith(f"running: pid {run.pid} "))
        doing = lines[at + 1]
        assert doing.startswith("  curric-s1-score: training, ") and "/400 steps" in doing
        assert "ETA" in doing
    finally:
        run.send_signal(signal.SIGINT)
        run.wait(timeout=60)
    after = json.loads(cli(ws, "status", "--workspace", str(ws), "--json").stdout)
    assert after["live"] is None and "to resume" in after["next"]


@pytest.mark.slow
def test_status_shows_each_decision_with_its_interval(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["score"])
    done = subprocess.run(
        run_argv(ws), env=cli_env(ws), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(cli(ws, "status", "--workspace", str(ws), "--json").stdout)
    row = data["stages"][0]["attempts"][0]
    assert re.fullmatch(r"gap \S+ ± \S+, Elo \S+ ± \S+", row["interval"]), row
    wide = {**cli_env(ws), "COLUMNS": "160"}  # in 80 columns the cell wraps the interval
    assert row["interval"] in cli(ws, "status", "--workspace", str(ws), env=wide).stdout


# ----------------------------------------------------------------------------- the fast path


def test_status_fast_path_prints_what_the_typer_command_prints(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    code = (
        "import sys\n"
        f"sys.argv = ['cosmic-curriculum', 'status', '--workspace={ws}'] + sys.argv[1:]\n"
        "from cosmic_curriculum.entry import main\n"
        "main()\n"
        "print(sorted({'typer', 'click'} & {m.split('.')[0] for m in sys.modules}))\n"
    )
    for extra in ([], ["--json"]):
        fast = subprocess.run(
            [sys.executable, "-c", code, *extra], env=cli_env(ws), capture_output=True, text=True
        )
        assert fast.returncode == 0, fast.stderr
        shown, imported = fast.stdout.rsplit("\n", 2)[0] + "\n", fast.stdout.splitlines()[-1]
        assert imported == "[]"
        typer_path = CliRunner().invoke(app, ["status", "--workspace", str(ws), *extra])
        assert typer_path.exit_code == 0 and typer_path.output == shown
    # What the fast path does not know goes to Typer (its usage error, exit 2).
    odd = cli(ws, "status", "--workspace", str(ws), "--intervall", "3")
    assert odd.returncode == 2 and "No such option: --intervall" in odd.stderr


def test_status_watch_redraws_count_frames_and_exits_0(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    result = cli(
        ws, "status", "--workspace", str(ws), "--watch", "--interval", "0.1", "--count", "3"
    )
    assert result.returncode == 0, result.stderr
    assert "Ctrl-C to stop" in result.stdout and "1 score" in result.stdout


def test_every_option_of_every_command_shows_a_human_metavar() -> None:
    from typer.main import get_command

    def commands(group: Any, path: list[str]) -> list[list[str]]:
        found = []
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                found += commands(command, [*path, name])
            else:
                found.append([*path, name])
        return found

    every = commands(get_command(app), [])
    assert ["attach"] in every and ["gate", "simulate"] in every
    for argv in every:
        result = CliRunner().invoke(app, [*argv, "--help"])
        assert result.exit_code == 0, result.output
        typed = re.findall(r"^\s+(?:-\w, )?(--[\w-]+) (<[^>]*>)", result.output, re.M)
        assert not typed, (argv, typed)
        # What follows an option is its metavar ("/" separates a --flag / --no-flag pair).
        options = re.findall(r"^\s+(?:-\w, )?--[\w-]+ ([^\s\[/]+)", result.output, re.M)
        assert all(re.fullmatch(r"[A-Z][A-Z0-9_]*", m) for m in options), (argv, options)


# ----------------------------------------------------------------------------- attach


def test_attach_without_a_session_says_how_to_start_one(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    env = {**cli_env(ws), TMUX_SOCKET_ENV: f"cc-none-{os.getpid()}"}
    result = cli(ws, "attach", "--workspace", str(ws), env=env)
    assert result.returncode == 1
    assert result.stderr.startswith("error: no curriculum is running in tmux for")
    assert "cosmic-curriculum run --detach" in result.stderr


# ----------------------------------------------------------------------------- plain output


def test_plain_reporter_writes_unwrapped_rate_limited_lines() -> None:
    buffer = io.StringIO()
    reporter = ConsoleReporter(Console(file=buffer, width=40), progress_seconds=3600)
    attempt = Attempt(stage_index=0, attempt=0, experiment="curric-s1-score", timesteps=100)
    log = Path("/a/very/long/path/that/is/longer/than/forty/columns/logs/curric-s1-score.log")
    reporter.attempt_started(attempt, ["x"], log)
    for steps in range(10, 101, 10):
        reporter.training_progress(attempt, {"timesteps": steps, "total": 100, "fps": 50.0})
    lines = buffer.getvalue().splitlines()
    assert reporter.plain and "\x1b" not in buffer.getvalue()
    assert any(str(log) in line for line in lines)
    progress = [line for line in lines if "steps/s" in line]
    assert progress == [
        "curric-s1-score: 10/100 steps (10%), 50 steps/s, ETA 2s",
        "curric-s1-score: 100/100 steps (100%), 50 steps/s, ETA 0s",
    ]


@pytest.mark.slow
def test_run_to_a_file_writes_whole_lines_and_few_progress_lines(tmp_path: Path) -> None:
    deep = tmp_path / ("a-long-directory-name-for-the-log-test-" * 3) / "my-workspace"
    ws = make_workspace(deep, stages=["score"])
    set_scripts(ws, trainer_script={"*": {"steps": 40, "step_seconds": 0.01}})
    with open(tmp_path / "out.txt", "w") as out:
        done = subprocess.run(run_argv(ws), env=cli_env(ws), stdout=out, stderr=out, timeout=120)
    text = (tmp_path / "out.txt").read_text()
    assert done.returncode == 0, text
    assert "\x1b" not in text and "\r" not in text and "━" not in text
    lines = text.splitlines()
    assert any(f"{ws}/logs/curric-s1-score.log" in line for line in lines), text
    progress = [line for line in lines if "steps/s" in line]
    assert 1 <= len(progress) <= 2, text  # 40 progress records, at most one line per 30 s + last
    assert progress[-1].startswith("curric-s1-score: 400/400 steps (100%)")
