"""`cosmic-curriculum run/status/init` as real processes: SIGKILL at each phase, signals,
the lock with an orphaned trainer, status without torch, init."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakes.waiting import wait_until
from fakes.workspace import (
    cli_env,
    completed_trainings,
    make_workspace,
    read_state,
    run_argv,
    set_scripts,
    trainer_runs,
)
from gitutil import git, init_repo

from cosmic_curriculum.system import processes as runner
from cosmic_curriculum.system.fsio import PAUSE_ENV

EXPS = ["curric-s1-score", "curric-s2-defend", "curric-s3-no_draws"]
_STARTED: list[tuple[subprocess.Popen[bytes], Path]] = []


@pytest.fixture(autouse=True)
def _no_leftover_processes() -> Any:
    """Whatever a test does (or fails to do), no run or trainer outlives it."""
    yield
    while _STARTED:
        proc, ws = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for run in trainer_runs(ws):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if runner.process_start_time(run["pid"]) is not None:
                    os.killpg(run["pid"], signal.SIGKILL)


def start(
    ws: Path, *args: str, pause: str | None = None, log: str = "run.out"
) -> subprocess.Popen[bytes]:
    env = cli_env(ws)
    if pause:
        env[PAUSE_ENV] = pause
    out = open(ws.parent / log, "ab")  # noqa: SIM115 - the child keeps its own copy
    proc = subprocess.Popen(
        run_argv(ws, *args),
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    _STARTED.append((proc, ws))
    return proc


def cli(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum", *args],
        env=cli_env(ws),
        capture_output=True,
        text=True,
        timeout=120,
    )


def phase_is(ws: Path, exp: str, phase: str) -> Callable[[], bool]:
    def check() -> bool:
        try:
            flight = read_state(ws).get("in_flight") or {}
        except (json.JSONDecodeError, FileNotFoundError):
            return False
        return bool(flight.get("experiment") == exp and flight.get("phase") == phase)

    return check


def finish(ws: Path) -> str:
    result = cli(ws, "run", "--workspace", str(ws), "--no-push")
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def assert_clean_end(ws: Path) -> None:
    data = read_state(ws)
    assert data["status"] == "done"
    assert [e["experiment"] for e in data["log"]] == EXPS
    assert completed_trainings(ws) == EXPS  # each attempt trained to completion once
    evals = (ws / "fake_evals.jsonl").read_text().splitlines()
    assert len(evals) == len(EXPS)  # and evaluated once
    history = json.loads((ws / "eval_history.json").read_text())
    assert [r["id"] for r in history] == [e["eval_id"] for e in data["log"]]
    assert json.loads(git(ws, "show", "HEAD:curriculum_state.json"))["status"] == "done"
    assert not list(ws.glob(".*.tmp-*"))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws")


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["trained", "evaluated", "decided", "committed"])
def test_sigkill_at_each_phase_resumes_exactly(ws: Path, phase: str) -> None:
    proc = start(ws, pause=f"{phase}:60")
    wait_until(phase_is(ws, EXPS[0], phase), what=phase)
    proc.kill()
    proc.wait()
    finish(ws)
    assert_clean_end(ws)


@pytest.mark.slow
def test_sigkill_of_run_and_trainer_during_training_resumes_from_checkpoint(ws: Path) -> None:
    set_scripts(ws, trainer_script={"curric-s2-defend": {"steps": 8, "step_seconds": 0.25}})
    proc = start(ws)
    wait_until(lambda: (ws / "checkpoints" / EXPS[1] / "step_150.zip").exists(), what="ckpt")
    pgid = read_state(ws)["in_flight"]["pgid"]
    proc.kill()
    os.killpg(pgid, signal.SIGKILL)  # the machine lost everything at once
    proc.wait()
    wait_until(lambda: not runner.group_members(pgid), what="trainer gone")
    finish(ws)
    assert_clean_end(ws)
    starts = [r for r in trainer_runs(ws) if r["event"] == "start" and r["experiment"] == EXPS[1]]
    assert len(starts) == 2
    resumed = starts[1]["argv"]
    assert resumed[-2] == "--resume" and resumed[-1].startswith(f"checkpoints/{EXPS[1]}/step_")


@pytest.mark.slow
def test_orphaned_trainer_keeps_the_lock_and_its_result_is_used(ws: Path) -> None:
    # The orphan finishes only when the test says so: still training whatever the load.
    release = ws.parent / "release-orphan"
    trainer = {"steps": 6, "step_seconds": 0.3, "hold_until": str(release)}
    set_scripts(ws, trainer_script={"curric-s2-defend": trainer})
    proc = start(ws)
    wait_until(phase_is(ws, EXPS[1], "training"), what="training")
    wait_until(lambda: read_state(ws)["in_flight"].get("pgid"), what="pgid")
    proc.kill()  # the orchestrator dies; its trainer lives on
    proc.wait()
    second = cli(ws, "run", "--workspace", str(ws), "--no-push")
    assert second.returncode == 1
    assert "curric-s2-defend" in second.stderr and "outlived its run" in second.stderr
    assert "kill -TERM -" in second.stderr
    assert len(second.stderr.strip().splitlines()) == 1
    status = json.loads(cli(ws, "status", "--workspace", str(ws), "--json").stdout)
    assert status["in_flight"]["experiment"] == EXPS[1]
    assert status["in_flight"]["phase"] == "training"
    assert status["in_flight"]["last_progress"]["total"] == 400  # read live from its log
    release.touch()
    wait_until(lambda: EXPS[1] in completed_trainings(ws), timeout=30, what="orphan done")
    time.sleep(0.3)  # let it exit and drop the inherited lock
    finish(ws)
    assert_clean_end(ws)  # the orphan's training was used, not repeated


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signals_stop_the_trainer_group_save_and_resume(ws: Path, sig: signal.Signals) -> None:
    set_scripts(ws, trainer_script={"curric-s1-score": {"steps": 50, "step_seconds": 0.2}})
    proc = start(ws)
    wait_until(lambda: (ws / "checkpoints" / EXPS[0] / "step_8.zip").exists(), what="ckpt")
    pgid = read_state(ws)["in_flight"]["pgid"]
    t0 = time.monotonic()
    proc.send_signal(sig)
    assert proc.wait(timeout=15) == 128 + sig
    assert time.monotonic() - t0 < 10
    assert runner.group_members(pgid) == []  # no orphaned trainer
    flight = read_state(ws)["in_flight"]
    assert flight["interrupted"] is True and "pgid" not in flight
    assert "interrupted by " + sig.name in (ws.parent / "run.out").read_text()
    set_scripts(ws, trainer_script={})
    out = finish(ws)
    assert "resuming curric-s1-score at phase 'training' (it was interrupted)" in out
    assert_clean_end(ws)


@pytest.mark.slow
def test_status_json_and_table(ws: Path) -> None:
    set_scripts(ws, eval_script={"*": "fail"})
    assert cli(ws, "run", "--workspace", str(ws), "--no-push").returncode == 1
    result = cli(ws, "status", "--workspace", str(ws), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["status"] == "blocked" and data["blocked_reason"]
    assert [s["status"] for s in data["stages"]] == ["blocked", "pending", "pending"]
    assert len(data["stages"][0]["attempts"]) == 3
    assert "--force-retry" in data["next"] and "--skip-to-next-stage" in data["next"]
    table = cli(ws, "status", "--workspace", str(ws))
    assert table.returncode == 0
    assert "curric-s1-score-retry2" in table.stdout and "blocked" in table.stdout


def test_status_does_not_import_torch_sb3_git_or_numpy(ws: Path) -> None:
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from cosmic_curriculum.cli import app\n"
        f"r = CliRunner().invoke(app, ['status', '--workspace', {str(ws)!r}])\n"
        "assert r.exit_code == 0, r.output\n"
        "heavy = {'torch', 'stable_baselines3', 'git', 'numpy', 'matplotlib'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=cli_env(ws), capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_cli_errors_are_one_line(ws: Path) -> None:
    result = cli(ws, "run", "--workspace", str(ws), "--no-push", "--force-retry")
    assert result.returncode == 2
    assert result.stderr.startswith("error: --force-retry applies only to a blocked curriculum")
    assert len(result.stderr.strip().splitlines()) == 1
    result = cli(ws, "status", "--workspace", str(ws.parent / "nowhere"))
    assert result.returncode == 2 and "not a cosmic-curriculum workspace" in result.stderr
    (ws / "curriculum_state.json").write_text('{"stage_index": ')
    result = cli(ws, "status", "--workspace", str(ws))
    # run from elsewhere (pytest's directory): the advice runs git in the workspace
    advice = f"git -C {ws} show HEAD:curriculum_state.json > {ws / 'curriculum_state.json'}"
    assert result.returncode == 1 and advice in result.stderr


def test_init_creates_a_workspace_that_runs(tmp_path: Path) -> None:
    target = tmp_path / "new-ws"
    result = cli(tmp_path, "init", str(target), "--preset", "quick")
    assert result.returncode == 0, result.stderr
    for name in ("stages.toml", "curriculum_state.json", "eval_history.json", ".gitignore"):
        assert (target / name).is_file(), name
    assert json.loads((target / "eval_history.json").read_text()) == []
    from cosmic_curriculum.workspace.config_file import preset_path

    assert (target / "stages.toml").read_text() == preset_path("quick").read_text()
    assert "checkpoints/" in (target / ".gitignore").read_text()
    trainer = target / "scripts" / "run_training.sh"
    if trainer.exists():
        assert os.access(trainer, os.X_OK)
    assert "initialise" in git(target, "log", "--format=%s")
    status = cli(tmp_path, "status", "--workspace", str(target), "--json")
    assert json.loads(status.stdout)["next"].startswith("`cosmic-curriculum run")
    again = cli(tmp_path, "init", str(target))
    assert again.returncode == 0 and "updated workspace" in again.stdout
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    refused = cli(tmp_path, "init", str(busy))
    assert refused.returncode == 2 and "not empty" in refused.stderr
    assert (busy / "notes.txt").read_text() == "mine"
    empty_repo = init_repo(tmp_path / "empty-repo", message=None)
    assert cli(tmp_path, "init", str(empty_repo)).returncode == 0
    assert "initialise" in git(empty_repo, "log", "--format=%s")


@pytest.mark.slow
def test_real_trainer_and_built_in_evaluator_end_to_end(tmp_path: Path) -> None:
    """`init` + `run` with the project's own training script and evaluator (tiny budget)."""
    target = tmp_path / "real"
    assert cli(tmp_path, "init", str(target), "--preset", "quick").returncode == 0
    if not (target / "scripts" / "run_training.sh").exists():
        pytest.skip("the training script is not part of this checkout")
    (target / "stages.toml").write_text(
        "max_retries = 0\n"
        "eval_episodes = 20\n"
        'training_command = ["scripts/run_training.sh"]\n'
        '[[stages]]\nname = "score"\nflags = ["--opponent-mode", "inert"]\n'
    )
    env = cli_env(target)
    env["COSMIC_CURRICULUM_PYTHON"] = sys.executable
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "cosmic_curriculum",
            "run",
            "--workspace",
            str(target),
            "--no-push",
            "--timesteps",
            "2048",
            "--n-parallel",
            "16",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    data = read_state(target)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    assert data["status"] == ("done" if result.returncode == 0 else "blocked")
    entry = data["log"][0]
    assert entry["experiment"] == "curric-s1-score" and entry["eval"]["episodes"] == 20
    record = json.loads((target / "eval_history.json").read_text())[0]
    assert record["id"] == entry["eval_id"] and record["gate"]["verdict"] == entry["decision"]
    assert (target / "checkpoints" / "curric-s1-score" / "final.zip").is_file()
    tracked = git(target, "ls-files").splitlines()
    assert "bots/curric-s1-score.json" in tracked and "logs/curric-s1-score.log" in tracked
    assert "bots/curric-s1-score.onnx" in tracked  # the trainer's ONNX twin is committed


def test_init_inside_a_project_that_ignores_it_gets_its_own_repository(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".gitignore").write_text("/workspaces/\n")
    init_repo(project, message="project")
    target = project / "workspaces" / "quick"
    assert cli(tmp_path, "init", str(target), "--preset", "quick").returncode == 0
    assert (target / ".git").is_dir()
    assert git(project, "log", "--format=%s") == "project"  # nothing landed in the project
    assert "initialise" in git(target, "log", "--format=%s")


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    for argv in (["run", "--timesteps", "0"], ["status", "--bogus"], ["init"]):
        result = cli(tmp_path, *argv)
        assert result.returncode == 2, argv
        assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1
