"""Continuations through a real local run (the fake trainer, real processes and signals): a
trainer ended by a SIGTERM from outside is launched again from its latest step checkpoint,
its timesteps counting on; never a retry, never an attempt error, up to max_continuations."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from crash.harness import kill_everything, wait_for_orphans
from fakes.waiting import wait_until
from fakes.workspace import (
    cli_env,
    fake_env,
    make_workspace,
    read_state,
    run_argv,
    run_cli,
    run_in_process,
    trainer_runs,
)
from gitutil import git

from cosmic_curriculum.curriculum.reporter import Reporter
from cosmic_curriculum.errors import TrainerError
from cosmic_curriculum.status.facts import status_data
from cosmic_curriculum.status.text import render_status

EXP = "curric-s1-score"
STEP = f"checkpoints/{EXP}/step_200.zip"  # where pause_once waits (steps of 100 of 400)


class Recorder(Reporter):
    def __init__(self) -> None:
        self.infos: list[str] = []
        self.progress: list[int] = []

    def info(self, message: str) -> None:
        self.infos.append(message)

    def training_progress(self, attempt: Any, progress: dict[str, Any]) -> None:
        self.progress.append(progress["timesteps"])


def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str = "", **kw: Any) -> Path:
    kw.setdefault("trainer_script", {"*": {"mode": "pause_once"}})
    ws = make_workspace(tmp_path / "ws", stages=["score"], **kw)
    if extra:
        (ws / "stages.toml").write_text((ws / "stages.toml").read_text() + extra)
        git(ws, "commit", "-qam", "launcher settings")
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    return ws


def runs(ws: Path, event: str, experiment: str = EXP) -> list[dict[str, Any]]:
    return [r for r in trainer_runs(ws) if r["event"] == event and r["experiment"] == experiment]


def signal_when_paused(ws: Path, experiment: str = EXP) -> threading.Thread:
    """SIGTERM from outside (not our launcher) to the trainer once it waits for one."""

    def send() -> None:
        paused = wait_until(lambda: runs(ws, "paused", experiment), 60, "the trainer to pause")
        os.kill(paused[0]["pid"], signal.SIGTERM)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def test_sigterm_from_outside_is_continued_to_done_with_timesteps_counting_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path, monkeypatch)
    sender = signal_when_paused(ws)
    reporter = Recorder()
    state = run_in_process(ws, reporter, attempt_timeout=60)
    sender.join(5)
    assert state.status == "done" and state.last_error is None
    (entry,) = state.log
    assert (entry.experiment, entry.attempt, entry.decision) == (EXP, 0, "pass")  # no retry
    (cont,) = entry.continuations or []
    assert (cont["reason"], cont["checkpoint"]) == ("SIGTERM from outside", STEP)
    assert cont["launch_id"].startswith(f"cosmic-{EXP}-") and cont["launch_id"].endswith("-cont1")
    starts = runs(ws, "start")
    assert [s["resume"] for s in starts] == [None, STEP]
    assert not runs(ws, "overlap") and len(runs(ws, "done")) == 1
    assert reporter.progress == [100, 200, 300, 400]  # the count goes on from 200
    assert any("continuation 1 of at most 20 from " + STEP in m for m in reporter.infos)
    # status (JSON and text) and REPORT.md show it
    data = status_data(ws)
    (row,) = data["stages"][0]["attempts"]
    assert [c["reason"] for c in row["continuations"]] == ["SIGTERM from outside"]
    assert "continued 1x: SIGTERM from outside" in render_status(data)
    assert "continued 1x: SIGTERM from outside" in (ws / "REPORT.md").read_text()


def test_max_continuations_0_makes_it_an_attempt_error_naming_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path, monkeypatch, "\n[launcher]\nmax_continuations = 0\n")
    sender = signal_when_paused(ws)
    with pytest.raises(TrainerError) as err:
        run_in_process(ws, attempt_timeout=60)
    sender.join(5)
    first = str(err.value).splitlines()[0]
    assert "ended by SIGTERM from outside after 0 continuations" in first
    assert "[launcher] max_continuations = 0 allows no more; raise it" in first
    flight = read_state(ws)["in_flight"]
    assert flight["attempt"] == 0 and "max_continuations = 0" in flight["error"]
    assert "continuations" not in flight and read_state(ws)["log"] == []


@pytest.mark.slow
def test_kill_9_of_run_during_a_continuation_then_resume_never_runs_two_trainers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = {"*": {"mode": "pause_once", "steps": 8, "step_seconds": 0.2}}
    ws = workspace(tmp_path, monkeypatch, trainer_script=script)
    proc = subprocess.Popen(
        run_argv(ws), env=cli_env(ws), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        paused = wait_until(lambda: runs(ws, "paused"), 60, "the trainer to pause")
        os.kill(paused[0]["pid"], signal.SIGTERM)
        wait_until(lambda: len(runs(ws, "start")) == 2, 60, "the continuation to start")
        proc.kill()  # kill -9 of `run` alone: its continuation's trainer lives on
        proc.wait(10)
        flight = read_state(ws)["in_flight"]
        assert [c["reason"] for c in flight["continuations"]] == ["SIGTERM from outside"]
        shown = status_data(ws)
        assert [c["reason"] for c in shown["in_flight"]["continuations"]] == [
            "SIGTERM from outside"
        ]
        assert "continued 1x: SIGTERM from outside" in render_status(shown)
        # The continuation's trainer holds the workspace until it ends (a run before that
        # is refused, however fast the machine): resume once it has.
        wait_for_orphans(ws, timeout=60)
        resumed = run_cli(ws)
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_everything(ws)
    assert resumed.returncode == 0, resumed.stderr
    state = read_state(ws)
    assert state["status"] == "done" and len(state["log"]) == 1
    entry = state["log"][0]
    assert entry["attempt"] == 0 and entry["decision"] == "pass"
    # the resume after kill -9 is a plain resume, not a second continuation
    assert [c["reason"] for c in entry["continuations"]] == ["SIGTERM from outside"]
    assert not runs(ws, "overlap")  # never two trainers of the experiment at once
    assert (ws / "bots" / f"{EXP}.json").is_file()


@pytest.mark.slow
def test_a_sigterm_to_the_whole_machine_is_a_continuation_of_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path, monkeypatch)
    proc = subprocess.Popen(
        run_argv(ws), env=cli_env(ws), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        paused = wait_until(lambda: runs(ws, "paused"), 60, "the trainer to pause")
        proc.send_signal(signal.SIGTERM)  # a shutdown signals every process: run first
        os.kill(paused[0]["pid"], signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + signal.SIGTERM, err
        flight = read_state(ws)["in_flight"]
        assert (flight["interrupted"], flight["interrupted_by"]) == (True, "SIGTERM")
        resumed = run_cli(ws)
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_everything(ws)
    assert resumed.returncode == 0, resumed.stderr
    assert "ended by SIGTERM (the run was interrupted); continuation 1" in resumed.stdout
    entry = read_state(ws)["log"][0]
    assert entry["attempt"] == 0
    assert [(c["reason"], c["checkpoint"]) for c in entry["continuations"]] == [
        ("SIGTERM (the run was interrupted)", STEP)
    ]
    assert [s["resume"] for s in runs(ws, "start")] == [None, STEP]


def test_a_candidate_ended_from_outside_is_continued_and_the_others_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path, monkeypatch, trainer_script={f"{EXP}-c2": {"mode": "pause_once"}})
    (ws / "stages.toml").write_text("candidates = 2\n" + (ws / "stages.toml").read_text())
    git(ws, "commit", "-qam", "candidates = 2")
    sender = signal_when_paused(ws, f"{EXP}-c2")
    state = run_in_process(ws, attempt_timeout=60)
    sender.join(5)
    assert state.status == "done"
    (entry,) = state.log
    assert entry.attempt == 0 and entry.continuations is None
    c1, c2 = entry.candidates or []
    assert "continuations" not in c1
    assert [(c["reason"], c["checkpoint"]) for c in c2["continuations"]] == [
        ("SIGTERM from outside", f"checkpoints/{EXP}-c2/step_200.zip")
    ]
    assert len(runs(ws, "start", f"{EXP}-c1")) == 1 and len(runs(ws, "start", f"{EXP}-c2")) == 2
    assert not [r for r in trainer_runs(ws) if r["event"] == "overlap"]
    assert "continued 1x: SIGTERM from outside (c2)" in render_status(status_data(ws))
