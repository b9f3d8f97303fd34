"""A real kill -9 of a real `run` during the first training of a workspace without
`eval_history.json` (the seed's layout): `status` works during the training, and the next
`run` resumes instead of asking for a file that never existed."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.waiting import wait_until
from fakes.workspace import cli_env, make_workspace, read_state, run_argv, set_scripts
from gitutil import git, init_repo

from cosmic_curriculum.system import processes as runner

EXP = "curric-s1-score"


def seed_layout(path: Path, history: bool = False) -> Path:
    """A workspace whose history was never written nor committed (as the seed ships), or
    (``history``) one with an empty history."""
    ws = make_workspace(path, stages=["score"], git_repo=False)
    if not history:
        (ws / "eval_history.json").unlink()
    init_repo(ws, message="seed layout")
    set_scripts(ws, trainer_script={EXP: {"steps": 40, "step_seconds": 0.1}})
    return ws


def status_json(ws: Path) -> dict[str, object]:
    argv = [sys.executable, "-m", "cosmic_curriculum", "status", "--json", "--workspace", str(ws)]
    result = subprocess.run(argv, env=cli_env(ws), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    data: dict[str, object] = json.loads(result.stdout)
    return data


def trainer_group(ws: Path) -> int | None:
    with contextlib.suppress(json.JSONDecodeError, FileNotFoundError):
        flight = read_state(ws).get("in_flight") or {}
        log = ws / "logs" / f"{EXP}.log"
        if flight.get("pgid") and log.is_file() and "@progress" in log.read_text():
            return int(flight["pgid"])
    return None


@pytest.fixture
def started(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[Path, subprocess.Popen[bytes], int]]:
    ws = seed_layout(tmp_path / "ws", history=getattr(request, "param", False))
    with open(tmp_path / "run.out", "ab") as out:
        proc = subprocess.Popen(
            run_argv(ws),
            env=cli_env(ws),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    pgid = wait_until(lambda: trainer_group(ws), what="the first training")
    try:
        yield ws, proc, pgid
    finally:
        for group in (proc.pid, pgid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        proc.wait()


@pytest.mark.slow
def test_kill_during_the_first_training_resumes(
    started: tuple[Path, subprocess.Popen[bytes], int],
) -> None:
    ws, proc, pgid = started
    assert not (ws / "eval_history.json").exists()
    during = status_json(ws)  # the live run, not a refusal
    assert during["live"] is not None
    flight = during["in_flight"]
    assert isinstance(flight, dict) and flight["phase"] == "training"
    proc.kill()  # kill -9, and its trainer with it: a power cut
    os.killpg(pgid, signal.SIGKILL)
    proc.wait()
    wait_until(lambda: not runner.group_members(pgid), what="the trainer gone")
    after = status_json(ws)
    assert after["live"] is None and "cosmic-curriculum run" in str(after["next"])
    set_scripts(ws, trainer_script={})
    result = subprocess.run(
        run_argv(ws), env=cli_env(ws), capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"resuming {EXP} at phase 'training'" in result.stdout
    assert read_state(ws)["status"] == "done"
    assert json.loads(git(ws, "show", "HEAD:eval_history.json"))  # written, and committed


@pytest.mark.slow
@pytest.mark.parametrize("started", [False, True], indirect=True, ids=["seed", "history"])
def test_status_names_an_orphaned_trainer_that_holds_the_workspace(
    started: tuple[Path, subprocess.Popen[bytes], int],
) -> None:
    ws, proc, pgid = started
    proc.kill()  # only the run: its trainer lives on, holding the inherited lock
    proc.wait()
    data = status_json(ws)
    assert data["live"] is None
    shown = str(data["next"])
    assert "cosmic-curriculum run" not in shown, shown
    assert EXP in shown and f"kill -TERM -{pgid}" in shown
    assert data["orphan"] == {"experiment": EXP, "pgid": pgid, "what": "trainer"}
    text = subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum", "status", "--workspace", str(ws)],
        env=cli_env(ws),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert text.returncode == 0 and f"kill -TERM -{pgid}" in text.stdout, text.stderr
