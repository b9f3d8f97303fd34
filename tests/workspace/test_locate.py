"""A command that needs a workspace, run from a directory inside one (`logs/`, `bots/`,
deeper), names the enclosing workspace instead of suggesting `init` there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fakes.workspace import cli_env, make_workspace

from cosmic_curriculum.system.python import python_argv
from cosmic_curriculum.workspace.locate import (
    enclosing_workspace,
    import_own_modules,
    where_to_run,
)

COMMANDS = ["run", "status", "attach", "report"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    (ws / "logs" / "report").mkdir(parents=True)
    return ws


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("inside", ["logs", "bots", "logs/report"])
def test_a_command_in_a_subdirectory_names_the_enclosing_workspace(
    ws: Path, command: str, inside: str
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum", command],
        cwd=ws / inside,
        env=cli_env(ws),
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert f"--workspace {ws.resolve()}`" in lines[0] and "init" not in lines[0], lines[0]
    assert f"cosmic-curriculum {command} --workspace" in lines[0]
    assert not (ws / inside / "curriculum_state.json").exists()  # nothing started there


def test_outside_any_workspace_init_is_suggested(tmp_path: Path) -> None:
    lone = tmp_path / "lone" / "deeper"
    lone.mkdir(parents=True)
    assert enclosing_workspace(lone) is None
    assert where_to_run(lone, "cosmic-curriculum status").startswith(
        "create one with `cosmic-curriculum init "
    )


@pytest.mark.parametrize(
    "marker", ["curriculum_state.json", "stages.toml", ".cosmic-curriculum.lock"]
)
def test_any_workspace_file_marks_the_enclosing_workspace(tmp_path: Path, marker: str) -> None:
    (tmp_path / "ws" / "a" / "b").mkdir(parents=True)
    (tmp_path / "ws" / marker).write_text("")
    assert enclosing_workspace(tmp_path / "ws" / "a" / "b") == (tmp_path / "ws").resolve()


def test_own_modules_import_from_the_workspace_and_its_parents_after_installed_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parent = make_workspace(tmp_path / "parent", git_repo=False)
    arm = make_workspace(parent / "compare" / "arm", git_repo=False)
    (arm / "bots").mkdir(exist_ok=True)
    monkeypatch.setattr(sys, "path", ["/installed"])
    import_own_modules(arm / "bots")
    import_own_modules(arm)  # twice: no duplicate
    assert sys.path == ["/installed", str(arm.resolve()), str(parent.resolve())]
    monkeypatch.setattr(sys, "path", ["/installed"])
    import_own_modules(tmp_path)  # in no workspace: nothing added
    assert sys.path == ["/installed"]


def test_a_child_python_does_not_import_the_workspace_before_the_standard_library(
    tmp_path: Path,
) -> None:
    (tmp_path / "json.py").write_text("raise SystemExit('the workspace json.py was imported')\n")
    code = "import json; print(json.__file__)"
    done = subprocess.run(
        python_argv("-c", code), cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert str(tmp_path) not in done.stdout


def test_a_command_from_a_deleted_directory_still_runs(tmp_path: Path) -> None:
    inner = tmp_path / "gone"
    script = f'mkdir {inner} && cd {inner} && rmdir {inner} && exec "$@"'
    command = python_argv("-m", "cosmic_curriculum", "report", "--workspace", str(tmp_path))
    done = subprocess.run(
        ["bash", "-c", script, "bash", *command], capture_output=True, text=True, check=False
    )
    assert "Traceback" not in done.stderr, done.stderr
