"""The tmux launcher (`run --detach`, scripts/curriculum.sh) with a real tmux server."""

from __future__ import annotations

import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.workspace import cli_env, make_workspace, read_state, set_scripts

from cosmic_curriculum.launchers.tmux import TMUX_SOCKET_ENV, session_name
from cosmic_curriculum.system import processes as runner

REPO = Path(__file__).resolve().parent.parent
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


@pytest.fixture
def socket() -> Iterator[str]:
    name = f"cc-test-{os.getpid()}-{secrets.token_hex(3)}"
    yield name
    subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True)
    # A server that exits leaves its socket file behind.
    sockets = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
    (sockets / name).unlink(missing_ok=True)


def env_for(ws: Path, socket: str) -> dict[str, str]:
    env = cli_env(ws)
    env[TMUX_SOCKET_ENV] = socket
    return env


def has_session(socket: str, name: str) -> bool:
    probe = ["tmux", "-L", socket, "has-session", "-t", f"={name}"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def wait_for(pred: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


def detach(ws: Path, socket: str, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "cosmic_curriculum", "run", "--detach", "--no-push"]
    return subprocess.run(
        [*argv, "--workspace", str(ws), *extra],
        env=env_for(ws, socket),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_detach_runs_in_tmux_logs_and_refuses_a_second_start(tmp_path: Path, socket: str) -> None:
    ws = make_workspace(tmp_path / "my.ws")
    set_scripts(ws, trainer_script={"curric-s1-score": {"steps": 10, "step_seconds": 0.2}})
    name = session_name(ws)
    assert "." not in name and ":" not in name
    first = detach(ws, socket)
    assert first.returncode == 0, first.stderr
    assert name in first.stdout and f"tmux -L {socket} attach -t {name}" in first.stdout
    assert has_session(socket, name)
    second = detach(ws, socket)
    assert second.returncode == 0 and "already running" in second.stdout
    wait_for(lambda: not has_session(socket, name), timeout=60)  # the run ends on its own
    assert read_state(ws)["status"] == "done"
    log = (ws / "logs" / "curriculum.log").read_text()
    assert "curric-s3-no_draws" in log and "curriculum done" in log
    assert "\x1b" not in log and "\r" not in log  # plain text, as README says


def test_kill_session_stops_the_trainer_and_resume_continues(tmp_path: Path, socket: str) -> None:
    ws = make_workspace(tmp_path / "ws")
    set_scripts(ws, trainer_script={"curric-s1-score": {"steps": 100, "step_seconds": 0.2}})
    name = session_name(ws)
    script = subprocess.run(
        [str(REPO / "scripts" / "curriculum.sh"), "--workspace", str(ws), "--no-push"],
        env=env_for(ws, socket),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert script.returncode == 0, script.stderr
    assert "started the curriculum" in script.stdout
    wait_for(lambda: (ws / "checkpoints" / "curric-s1-score" / "step_8.zip").exists())
    pgid = read_state(ws)["in_flight"]["pgid"]
    subprocess.run(["tmux", "-L", socket, "kill-session", "-t", f"={name}"], check=True)
    wait_for(lambda: not runner.group_members(pgid), timeout=10)
    wait_for(lambda: read_state(ws)["in_flight"].get("interrupted") is True, timeout=10)
    set_scripts(ws, trainer_script={})
    resumed = subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum", "run", "--workspace", str(ws), "--no-push"],
        env=env_for(ws, socket),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert read_state(ws)["status"] == "done"


def test_detach_refuses_while_another_run_holds_the_workspace(tmp_path: Path, socket: str) -> None:
    from cosmic_curriculum.workspace.lock import WorkspaceLock

    ws = make_workspace(tmp_path / "ws")
    with WorkspaceLock(ws):
        result = detach(ws, socket)
    assert result.returncode == 1 and "holds this workspace" in result.stderr
    assert not has_session(socket, session_name(ws))


def pane_text(socket: str, target: str) -> str:
    capture = ["tmux", "-L", socket, "capture-pane", "-p", "-t", target]
    return subprocess.run(capture, capture_output=True, text=True).stdout


def test_status_watch_redraws_in_a_pane_and_ctrl_c_exits_0(tmp_path: Path, socket: str) -> None:
    ws = make_workspace(tmp_path / "ws")
    env = env_for(ws, socket)
    cmd = (
        f"{shlex.quote(sys.executable)} -m cosmic_curriculum status --watch --interval 0.3 "
        f"--workspace {shlex.quote(str(ws))}; echo EXIT=$?; sleep 60"
    )
    start = ["tmux", "-L", socket, "new-session", "-d", "-s", "watch", "-x", "120", "-y", "40"]
    subprocess.run([*start, "-e", f"PYTHONPATH={env['PYTHONPATH']}", cmd], check=True, env=env)
    wait_for(lambda: "1 score" in pane_text(socket, "=watch:"))
    first = pane_text(socket, "=watch:")
    stamp = re.search(r"\d\d:\d\d:\d\d", first)
    assert stamp is not None
    # Redrawn in place: a later frame replaces the first (one header on screen).
    wait_for(lambda: stamp[0] not in pane_text(socket, "=watch:"), timeout=10)
    assert pane_text(socket, "=watch:").count("Ctrl-C to stop") == 1
    subprocess.run(["tmux", "-L", socket, "send-keys", "-t", "=watch:", "C-c"], check=True)
    wait_for(lambda: "EXIT=" in pane_text(socket, "=watch:"), timeout=10)
    assert "EXIT=0" in pane_text(socket, "=watch:")


def test_attach_attaches_a_client_to_the_runs_session(tmp_path: Path, socket: str) -> None:
    ws = make_workspace(tmp_path / "ws")
    name = session_name(ws)
    subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-s", name, "sleep 120"], check=True)
    # A terminal to attach from: a pane of a second tmux server, which sets $TMUX there.
    outer = f"{socket}-outer"
    env = env_for(ws, socket)
    cmd = (
        f"{shlex.quote(sys.executable)} -m cosmic_curriculum attach "
        f"--workspace {shlex.quote(str(ws))}"
    )
    try:
        subprocess.run(
            [
                "tmux",
                "-L",
                outer,
                "new-session",
                "-d",
                "-s",
                "term",
                "-x",
                "100",
                "-y",
                "30",
                "-e",
                f"PYTHONPATH={env['PYTHONPATH']}",
                "-e",
                f"{TMUX_SOCKET_ENV}={socket}",
                cmd,
            ],
            check=True,
            env=env,
        )
        clients = ["tmux", "-L", socket, "list-clients", "-t", f"={name}"]
        wait_for(lambda: subprocess.run(clients, capture_output=True, text=True).stdout.strip())
    finally:
        subprocess.run(["tmux", "-L", outer, "kill-server"], capture_output=True)
