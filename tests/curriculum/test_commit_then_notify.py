"""A decision reaches git before anybody is told, a commit still owed is always shown,
a second signal cuts a notifier short, and a run leaves nothing of its own uncommitted.
Real runs (the CLI in a subprocess where signals matter), real git, real notifiers."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.waiting import alive, wait_until
from fakes.workspace import (
    cli_env,
    fake_env,
    make_workspace,
    read_state,
    run_argv,
    run_cli,
    run_in_process,
    set_scripts,
    warnings_reporter,
)
from gitutil import git

from cosmic_curriculum.errors import BlockedError, UncommittedError
from cosmic_curriculum.status.facts import status_data
from cosmic_curriculum.status.text import render_status

DECISION = "chore(training): curriculum progress after curric-s1-score"


def notifier(tmp_path: Path, hang_on: str = "", exit_code: int = 0) -> str:
    """A notifier that records each note's event and its pid in notes.jsonl, sleeps when
    the event is ``hang_on``, then exits ``exit_code``; its notify_command line."""
    script = tmp_path / "notifier.py"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys, time\n"
        "note = json.loads(sys.stdin.read())\n"
        f"with open({str(tmp_path / 'notes.jsonl')!r}, 'a') as fh:\n"
        "    fh.write(json.dumps({'event': note['event'], 'pid': os.getpid()}) + '\\n')\n"
        f"if note['event'] == {hang_on!r}:\n"
        "    time.sleep(300)\n"
        f"sys.exit({exit_code})\n"
    )
    script.chmod(0o755)
    return f"notify_command = [{json.dumps(str(script))}]"


def notes(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "notes.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def workspace(tmp_path: Path, lines: str, **kw: Any) -> Path:
    ws = make_workspace(tmp_path / "ws", **kw)
    toml = ws / "stages.toml"
    toml.write_text(lines + "\n" + toml.read_text())
    git(ws, "commit", "-qam", "notify")
    return ws


def head_state(ws: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(git(ws, "show", "HEAD:curriculum_state.json"))
    return data


def subjects(ws: Path) -> list[str]:
    return git(ws, "log", "--format=%s").splitlines()


@pytest.mark.slow
def test_ctrl_c_during_the_done_notifier_leaves_the_decision_in_git(tmp_path: Path) -> None:
    ws = workspace(tmp_path, notifier(tmp_path, hang_on="done"), stages=["score"])
    proc = subprocess.Popen(
        run_argv(ws), env=cli_env(ws), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        wait_until(lambda: [n for n in notes(tmp_path) if n["event"] == "done"], 60, "done")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGINT
    committed = head_state(ws)
    assert committed["status"] == "done"  # git has the decision that was announced
    assert committed["log"][-1]["experiment"] == "curric-s1-score"
    assert subjects(ws)[0] == DECISION
    line = err.decode().strip().splitlines()[-1]
    assert "in phase 'committed'" not in line
    assert "after the decision of curric-s1-score was committed" in line
    data = status_data(ws)
    assert data["commit_pending"] is None and data["next"].startswith("nothing")


@pytest.mark.slow
def test_a_commit_git_refuses_is_pending_in_status_and_made_first_with_its_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path, notifier(tmp_path), stages=["score"])
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    hook = Path(git(ws, "rev-parse", "--absolute-git-dir")) / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho 'pre-commit: not now' >&2\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(UncommittedError):
        run_in_process(ws, warnings_reporter())
    assert [n["event"] for n in notes(tmp_path)] == ["done"]  # told after the commit try
    data = status_data(ws)
    assert data["commit_pending"] == DECISION
    assert not data["next"].startswith("nothing") and "run" in data["next"]
    assert f"commit pending: {DECISION} is saved on disk but not in git" in render_status(data)
    hook.unlink()
    run_in_process(ws)
    assert subjects(ws)[0] == DECISION  # the decision's own message, not a catch-up's
    assert head_state(ws)["status"] == "done"
    assert status_data(ws)["commit_pending"] is None
    assert git(ws, "status", "--porcelain") == ""


def test_a_second_signal_cuts_the_interrupted_notifier_short(tmp_path: Path) -> None:
    ws = workspace(
        tmp_path,
        notifier(tmp_path, hang_on="interrupted") + "\nnotify_timeout = 250",
        trainer_script={"*": {"mode": "hang"}},
    )
    proc = subprocess.Popen(
        run_argv(ws), env=cli_env(ws), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        wait_until(lambda: (ws / "fake_runs.jsonl").exists(), 60, "the trainer")
        proc.send_signal(signal.SIGINT)
        pid = wait_until(lambda: [n["pid"] for n in notes(tmp_path)], 60, "the notifier")[0]
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)  # well before notify_timeout
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGINT
    assert "stopped by a second SIGINT" in " ".join(out.decode().split())  # Rich wraps
    assert not alive(pid)
    assert [n["event"] for n in read_state(ws)["notify_outbox"]] == ["interrupted"]


@pytest.mark.slow
def test_a_run_that_only_delivers_owed_notifications_commits_the_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path, notifier(tmp_path, exit_code=1), stages=["score"])
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    run_in_process(ws, warnings_reporter())
    assert [n["event"] for n in read_state(ws)["notify_outbox"]] == ["done"]
    notifier(tmp_path)  # the same notifier, now delivering
    run_in_process(ws)
    assert [n["event"] for n in notes(tmp_path)] == ["done", "done"]
    assert "notify_outbox" not in read_state(ws)
    assert head_state(ws) == read_state(ws)
    assert git(ws, "status", "--porcelain", "--", "curriculum_state.json") == ""


@pytest.mark.slow
def test_the_catch_up_commit_after_an_interruption_names_what_it_carries(tmp_path: Path) -> None:
    ws = make_workspace(
        tmp_path / "ws",
        stages=["score", "defend"],
        trainer_script={"curric-s2-defend": {"mode": "hang"}},
    )
    proc = subprocess.Popen(run_argv(ws), env=cli_env(ws), stdout=subprocess.DEVNULL)
    try:
        wait_until(
            lambda: (
                "curric-s2-defend" in (ws / "fake_runs.jsonl").read_text()
                if (ws / "fake_runs.jsonl").exists()
                else False
            ),
            60,
            "stage 2's trainer",
        )
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 128 + signal.SIGTERM
    finally:
        proc.kill()
    set_scripts(ws, trainer_script={})
    result = run_cli(ws)
    assert result.returncode == 0, result.stdout + result.stderr
    log = subjects(ws)
    during = "curric-s2-defend (training, interrupted)"
    assert f"chore(training): curriculum progress during {during}" in log
    assert log.count(DECISION) == 1  # never the previous experiment's message again


@pytest.mark.slow
def test_the_commit_of_a_forced_retry_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = make_workspace(
        tmp_path / "ws", stages=["score"], max_retries=0, eval_script={"curric-s1-score": "fail"}
    )
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(BlockedError):
        run_in_process(ws)
    assert run_in_process(ws, force_retry=True, reason="new shaping").status == "done"
    log = subjects(ws)
    assert "chore(training): forced retry of stage 1 as curric-s1-score-retry1" in log
    assert log.count(DECISION) == 1
