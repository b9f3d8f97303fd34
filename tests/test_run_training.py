"""scripts/run_training.sh: trains, commits only its own paths in a git workspace, passes
exit codes through, and does no git work when the orchestrator says so."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.budgets import tiny_training_flags
from gitutil import git, init_repo, set_identity

from cosmic_curriculum.workspace.layout import step_checkpoints

REPO = Path(__file__).resolve().parents[1]
WRAPPER = REPO / "scripts" / "run_training.sh"
TINY = tiny_training_flags(256)


def run_wrapper(ws: Path, *args: str, no_git: bool = False) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["COSMIC_CURRICULUM_PYTHON"] = sys.executable
    env.pop("COSMIC_CURRICULUM_NO_GIT", None)
    if no_git:
        env["COSMIC_CURRICULUM_NO_GIT"] = "1"
    return subprocess.run(
        [str(WRAPPER), *args], cwd=ws, env=env, capture_output=True, text=True, timeout=300
    )


def test_wrapper_is_a_relative_symlink_to_the_packaged_script() -> None:
    assert WRAPPER.is_symlink()
    assert os.readlink(WRAPPER) == "../cosmic_curriculum/data/run_training.sh"
    assert os.access(WRAPPER.resolve(), os.X_OK)


@pytest.mark.slow
def test_trains_and_commits_only_its_paths(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    init_repo(ws)
    # the user's own work in progress: staged and unstaged changes must stay as they were
    (ws / "notes.txt").write_text("mine\n")
    git(ws, "add", "notes.txt")
    (ws / "README.md").write_text("edited, not staged\n")

    proc = run_wrapper(ws, "exp1", *TINY)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert (ws / "checkpoints" / "exp1" / "final.zip").is_file()
    committed = git(ws, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(committed) == ["bots/exp1.json", "logs/exp1.curve.png", "logs/exp1.log"]
    assert git(ws, "rev-list", "--count", "HEAD").strip() == "2"
    status = git(ws, "status", "--porcelain")
    assert "A  notes.txt" in status and " M README.md" in status
    assert "checkpoints" not in git(ws, "ls-files")
    log = (ws / "logs" / "exp1.log").read_text()
    assert "@progress " in log and "trained exp1" in log


@pytest.mark.slow
def test_no_git_mode_trains_without_touching_git(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    init_repo(ws)
    for name in ("random", "json"):  # a user's scripts, named like standard modules
        (ws / f"{name}.py").write_text(f"raise SystemExit('the workspace {name}.py ran')\n")
    proc = run_wrapper(ws, "exp2", *TINY, no_git=True)
    assert proc.returncode == 0, proc.stderr
    assert (ws / "bots" / "exp2.json").is_file()
    assert "@progress " in proc.stdout
    assert git(ws, "rev-list", "--count", "HEAD").strip() == "1"
    assert not (ws / "logs" / "exp2.log").exists()  # the orchestrator keeps the log


def test_bad_flags_pass_exit_code_2_through_and_commit_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    init_repo(ws)
    proc = run_wrapper(ws, "exp3", "--timesteps", "many")
    assert proc.returncode == 2
    assert "--timesteps" in proc.stdout + proc.stderr
    assert git(ws, "rev-list", "--count", "HEAD").strip() == "1"
    bad_name = run_wrapper(ws, "bad name!")
    assert bad_name.returncode == 2 and len(bad_name.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_works_outside_a_git_repository(tmp_path: Path) -> None:
    proc = run_wrapper(tmp_path, "exp4", *TINY)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "bots" / "exp4.json").is_file()
    assert (tmp_path / "logs" / "exp4.log").is_file()


@pytest.mark.slow
def test_pulls_before_and_pushes_after_training(tmp_path: Path) -> None:
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    seed = tmp_path / "seed"
    init_repo(seed)
    git(seed, "remote", "add", "origin", str(origin))
    git(seed, "push", "-q", "-u", "origin", "main")
    ws = tmp_path / "ws"
    git(tmp_path, "clone", "-q", str(origin), str(ws))
    set_identity(ws)
    # a teammate pushes while we are away: the wrapper fast-forwards before training
    (seed / "stages.toml").write_text("# new curriculum\n")
    git(seed, "add", "stages.toml")
    git(seed, "commit", "-q", "-m", "teammate")
    git(seed, "push", "-q", "origin", "main")

    proc = run_wrapper(ws, "exp5", *TINY)
    assert proc.returncode == 0, proc.stderr
    assert (ws / "stages.toml").is_file()
    assert git(origin, "log", "-1", "--format=%s", "main").strip().startswith("Train exp5")
    pushed = git(origin, "show", "--name-only", "--format=", "main").split()
    assert "bots/exp5.json" in pushed


@pytest.mark.slow
def test_a_failing_push_is_only_a_warning(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    init_repo(ws)
    git(ws, "remote", "add", "origin", str(tmp_path / "missing.git"))
    proc = run_wrapper(ws, "exp6", *TINY)
    assert proc.returncode == 0, proc.stderr
    assert "warning: push failed" in proc.stderr
    assert "bots/exp6.json" in git(ws, "show", "--name-only", "--format=", "HEAD")


@pytest.mark.slow
def test_sigusr1_reaches_the_trainer_which_saves_a_step_checkpoint_to_continue(
    tmp_path: Path,
) -> None:
    # A batch scheduler's warning before the time limit goes to the wrapper (the job's
    # shell): the trainer must get it, save its step checkpoint and exit 128 + SIGUSR1.
    ws = tmp_path / "ws"
    init_repo(ws)
    env = {**os.environ, "COSMIC_CURRICULUM_PYTHON": sys.executable}
    env.pop("COSMIC_CURRICULUM_NO_GIT", None)  # the path where the wrapper is the parent
    proc = subprocess.Popen(
        [str(WRAPPER), "usr", *tiny_training_flags(100_000_000)],
        cwd=ws,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    try:
        for line in proc.stdout:  # wait until it is really training
            if line.startswith("@progress "):
                break
        proc.send_signal(signal.SIGUSR1)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGUSR1, out
    assert "SIGUSR1: stopping after this step" in out
    steps = step_checkpoints(ws / "checkpoints" / "usr")
    assert steps, out
    assert git(ws, "rev-list", "--count", "HEAD").strip() == "1"  # nothing published
    # (its --resume then continues the count: tests/train/test_checkpoints.py)
