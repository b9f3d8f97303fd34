"""`compare`'s bad input, through the real command line: each one line naming the setting,
its value and the fix, exit 2 (exit 1 for a workspace another process holds), before any
arm is made or trained."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cosmic_curriculum.workspace.lock import WorkspaceLock

STAGES = """\
reference_bot = {builtin = "random"}

[env]
kind = "gymnasium"
id = "FrozenLake-v1"
kwargs = {map_name = "4x4", is_slippery = false}

[[stages]]
name = "one"
timesteps = 128

[[stages]]
name = "two"
timesteps = 128
"""


def _compare(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum", "compare", *args],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "stages.toml").write_text(STAGES)
    return ws


@pytest.mark.parametrize(
    ("config", "args", "says"),
    [
        (
            STAGES.replace('name = "two"\ntimesteps = 128\n', 'name = "two"\n'),
            (),
            "stage 'two' has no timesteps of its own",
        ),
        (STAGES, ("--arms", "curriculum,fixed"), "unknown arm 'fixed'; the arms are curriculum"),
        (STAGES, ("--arms", "stage:three"), "'stage:three' names no stage of stages.toml"),
        (STAGES, ("--arms", "curriculum,curriculum"), "'curriculum' is named twice"),
        (STAGES, ("--seeds", "x"), "--seeds x: seeds are whole numbers"),
        (STAGES, ("--seeds", "0", "x"), "unexpected argument 'x' (--seeds takes whole numbers"),
        (STAGES, ("--seeds", "1", "1"), "--seeds: 1 is given twice"),
        (STAGES, ("--target", "1.5"), "--target 1.5: the success on the last stage lies in 0..1"),
        (STAGES, ("--target", "nan"), "--target nan: give a finite number"),
        (
            STAGES + 'flags = ["--league-bot", "bots/curric-s1-one.json"]\n',
            (),
            "stage 'two' has --league-bot bots/curric-s1-one.json, a bot that arm last-stage",
        ),
    ],
)
def test_bad_input_is_one_line_before_any_arm(
    ws: Path, config: str, args: tuple[str, ...], says: str
) -> None:
    (ws / "stages.toml").write_text(config)
    got = _compare(ws, *args)
    assert got.returncode == 2, got.stdout + got.stderr
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], got.stderr
    assert "Traceback" not in got.stderr and not (ws / "compare").exists()


def test_a_workspace_another_process_holds_is_one_line(ws: Path) -> None:
    # A run (or a killed compare's arm, which inherits the lock) holds the workspace.
    lock = WorkspaceLock(ws).acquire()
    try:
        got = _compare(ws)
    finally:
        lock.release()
    assert got.returncode == 1, got.stdout + got.stderr
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1 and "another cosmic-curriculum process holds" in lines[0]
    assert "compare trains its arms while it holds the workspace" in lines[0]
    assert not (ws / "compare").exists()
