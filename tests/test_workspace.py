"""`init` from a preset (files, git, refusals, never overwriting) and the tmux session of
`run --detach` (names, literal arguments, a real tmux server where one is installed)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from gitutil import git, init_repo

from cosmic_curriculum.errors import ConfigError, LockError
from cosmic_curriculum.launchers.tmux import (
    TMUX_SOCKET_ENV,
    session_exists,
    session_name,
    start_detached,
    tmux_argv,
    tmux_literal,
)
from cosmic_curriculum.workspace.config_file import load_config, preset_path
from cosmic_curriculum.workspace.init import init_workspace, is_workspace
from cosmic_curriculum.workspace.layout import LOCK_FILE, STATE_FILE
from cosmic_curriculum.workspace.lock import WorkspaceLock
from cosmic_curriculum.workspace.state_file import load_state

FILES = [
    "stages.toml",
    "bots/rookie.json",
    "bots/veteran.json",
    "scripts/run_training.sh",
    STATE_FILE,
    "eval_history.json",
    ".gitignore",
]
INIT_MESSAGE = "chore(training): initialise cosmic-curriculum workspace"


# --------------------------------------------------------------------------- init


@pytest.mark.parametrize("preset", ["default", "quick"])
def test_init_creates_a_committed_workspace_from_the_preset(tmp_path: Path, preset: str) -> None:
    result = init_workspace(tmp_path / "ws", preset)
    ws = (tmp_path / "ws").resolve()
    assert result.workspace == ws and not result.already and result.notes == []
    assert result.created == [*FILES, ".git"]
    assert is_workspace(ws)
    for sub in ("bots", "logs", "scripts", "checkpoints"):
        assert (ws / sub).is_dir()
    assert (ws / "stages.toml").read_text() == preset_path(preset).read_text()
    load_config(ws / "stages.toml")  # a valid curriculum as it stands
    state = load_state(ws / STATE_FILE)
    assert (state.stage_index, state.attempt, state.status, state.log) == (0, 0, "in_progress", [])
    assert json.loads((ws / "eval_history.json").read_text()) == []
    assert json.loads((ws / "bots" / "rookie.json").read_text())["kind"] == "scripted"
    assert os.access(ws / "scripts" / "run_training.sh", os.X_OK)
    ignored = (ws / ".gitignore").read_text().splitlines()
    assert "checkpoints/" in ignored and LOCK_FILE in ignored
    # one commit holding exactly the created files, nothing else
    assert git(ws, "log", "--format=%s") == INIT_MESSAGE
    assert sorted(git(ws, "ls-files").splitlines()) == sorted(FILES)
    assert git(ws, "status", "--porcelain") == ""


def test_init_again_fills_in_only_what_is_missing(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws", "quick").workspace
    (ws / "stages.toml").write_text((ws / "stages.toml").read_text() + "\n# my edit\n")
    (ws / "eval_history.json").unlink()
    head = git(ws, "rev-parse", "HEAD")
    again = init_workspace(ws, "default")  # another preset: still never overwrites
    assert again.already and again.created == ["eval_history.json"]
    assert (ws / "stages.toml").read_text().endswith("# my edit\n")
    assert json.loads((ws / "eval_history.json").read_text()) == []
    assert git(ws, "rev-parse", "HEAD") == head  # the restored file equals HEAD's copy
    nothing = init_workspace(ws)
    assert nothing.already and nothing.created == []


def test_init_refuses_a_non_empty_directory_and_a_file(tmp_path: Path) -> None:
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not empty") as info:
        init_workspace(busy)
    assert info.value.exit_code == 2 and "\n" not in str(info.value)
    assert sorted(p.name for p in busy.iterdir()) == ["notes.txt"]  # nothing created
    assert (busy / "notes.txt").read_text() == "mine"
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        init_workspace(a_file)
    assert a_file.read_text() == "x"


def test_init_refuses_an_unknown_preset_before_creating_anything(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--preset 'huge' is unknown; choose one of: default"):
        init_workspace(tmp_path / "ws", "huge")
    assert not (tmp_path / "ws").exists()


def test_init_in_an_empty_clone_commits_into_it(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "clone", message=None)
    result = init_workspace(repo, "quick")
    assert ".git" not in result.created  # the existing repository is used
    assert git(repo, "rev-list", "--count", "HEAD") == "1"
    assert git(repo, "log", "--format=%an") == "Test User"  # the repo's own identity


def test_init_in_an_ignored_subdirectory_gets_its_own_repository(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".gitignore").write_text("/workspaces/\n")
    init_repo(project, message="project")
    result = init_workspace(project / "workspaces" / "w1", "quick")
    assert ".git" in result.created and (result.workspace / ".git").is_dir()
    assert git(project, "log", "--format=%s") == "project"


def test_init_where_git_init_fails_notes_it_and_commits_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").write_text("not a gitfile\n")  # counts as empty; `git init` refuses it
    result = init_workspace(ws, "quick")
    assert result.created == FILES and is_workspace(result.workspace)
    assert len(result.notes) == 1
    assert result.notes[0].startswith("initial commit skipped: git init failed: fatal:")
    assert "invalid gitfile format" in result.notes[0] and "\n" not in result.notes[0]
    assert (ws / ".git").read_text() == "not a gitfile\n"


def test_init_without_git_still_makes_a_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    result = init_workspace(tmp_path / "ws", "quick")
    assert result.created == FILES and is_workspace(result.workspace)
    assert result.notes == [
        "git is not installed: the workspace works, but progress is not committed"
    ]
    assert not (result.workspace / ".git").exists()


# --------------------------------------------------------------------------- tmux names


def test_session_names_are_tmux_safe_stable_and_unique_per_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tmp_path / "one" / "my.ws:1", tmp_path / "two" / "my.ws:1"
    name = session_name(a)
    assert name.startswith("curriculum-my_ws_1-") and len(name) == len("curriculum-my_ws_1-") + 6
    assert not set(name) & {".", ":", " "}
    assert session_name(a) == name != session_name(b)  # same folder name, other path
    (tmp_path / "one").mkdir()
    monkeypatch.chdir(tmp_path / "one")
    assert session_name(Path("my.ws:1")) == name  # relative paths resolve first
    long = session_name(tmp_path / ("x" * 100))
    assert long == f"curriculum-{'x' * 40}-{long[-6:]}"
    assert session_name(Path("/")).startswith("curriculum-root-")


def test_tmux_literal_protects_only_a_trailing_semicolon() -> None:
    assert tmux_literal("tried twice;") == "tried twice\\;"
    assert tmux_literal(";") == "\\;"
    assert tmux_literal("a;b") == "a;b" and tmux_literal("plain") == "plain"


def test_tmux_argv_uses_the_socket_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TMUX_SOCKET_ENV, raising=False)
    assert tmux_argv("ls") == ["tmux", "ls"]
    monkeypatch.setenv(TMUX_SOCKET_ENV, "sock")
    assert tmux_argv("ls") == ["tmux", "-L", "sock", "ls"]


def test_detach_without_tmux_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    with pytest.raises(ConfigError, match="--detach needs tmux") as info:
        start_detached(tmp_path, ["true"])
    assert info.value.exit_code == 2


# --------------------------------------------------------------------------- real tmux

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def socket(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A private tmux server for the test (killed afterwards with its socket file)."""
    name = f"cc-ws-{os.getpid()}-{secrets.token_hex(3)}"
    monkeypatch.setenv(TMUX_SOCKET_ENV, name)
    yield name
    subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True)
    sockets = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
    (sockets / name).unlink(missing_ok=True)


def wait_for(pred: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@needs_tmux
def test_detached_session_runs_logs_and_is_started_once(tmp_path: Path, socket: str) -> None:
    ws = init_workspace(tmp_path / "ws", "quick").workspace
    name = session_name(ws)
    first = start_detached(ws, ["sh", "-c", "echo hello from $PWD; sleep 30"])
    assert first.started and first.session == name
    assert f"tmux -L {socket} attach -t {name}" in first.message
    assert session_exists(name)
    log = ws / "logs" / "curriculum.log"
    wait_for(lambda: log.exists() and "hello from" in log.read_text())
    assert f"hello from {ws}" in log.read_text()  # started in the workspace
    second = start_detached(ws, ["sh", "-c", "echo second >> second.txt"])
    assert not second.started and "already running" in second.message
    assert f"attach with `tmux -L {socket} attach -t {name}`" in second.message
    time.sleep(0.2)
    assert not (ws / "second.txt").exists()


@needs_tmux
def test_detach_refuses_a_workspace_held_by_another_run(tmp_path: Path, socket: str) -> None:
    ws = init_workspace(tmp_path / "ws", "quick").workspace
    with WorkspaceLock(ws), pytest.raises(LockError, match="holds this workspace"):
        start_detached(ws, ["sleep", "30"])
    assert not session_exists(session_name(ws))
