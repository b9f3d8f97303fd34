"""`python -m cosmic_curriculum.train.publish`: commits only the experiment's bot, log and curve
in a real git repository, leaves the user's work alone, and treats a failed push as a
warning (exit 0) but a failed commit as a one-line error (exit 1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from gitutil import git, init_repo

from cosmic_curriculum.train.publish import main, publish
from cosmic_curriculum.workspace.layout import published_paths

EXP = "curric-s1-score"
OURS = [f"bots/{EXP}.json", f"logs/{EXP}.curve.png", f"logs/{EXP}.log"]


def write_results(ws: Path, exp: str = EXP, curve: bool = True) -> None:
    """What a finished training leaves behind, plus things publish must not commit."""
    (ws / "bots").mkdir(exist_ok=True)
    (ws / "logs").mkdir(exist_ok=True)
    (ws / "bots" / f"{exp}.json").write_text('{"kind": "fake"}\n')
    (ws / "logs" / f"{exp}.log").write_text("@progress {}\n")
    if curve:
        (ws / "logs" / f"{exp}.curve.png").write_bytes(b"\x89PNG fake")
    (ws / "checkpoints" / exp).mkdir(parents=True, exist_ok=True)
    (ws / "checkpoints" / exp / "final.zip").write_bytes(b"PK pickles")


def head_files(repo: Path) -> list[str]:
    return sorted(git(repo, "show", "--name-only", "--format=", "HEAD").splitlines())


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "ws")


def test_published_paths_are_the_bot_the_log_and_the_curve() -> None:
    assert published_paths("e1") == [
        Path("bots/e1.json"),
        Path("logs/e1.log"),
        Path("logs/e1.curve.png"),
    ]


def test_commits_only_the_experiment_and_leaves_the_users_work_alone(ws: Path) -> None:
    # the user's work in progress: staged, unstaged and untracked, plus another bot
    (ws / "notes.txt").write_text("mine\n")
    git(ws, "add", "notes.txt")
    (ws / "README.md").write_text("edited, not staged\n")
    (ws / "scratch.txt").write_text("untracked\n")
    write_results(ws, "other-exp")
    write_results(ws)
    cached_before = git(ws, "diff", "--cached")
    assert publish(ws, EXP) == (True, True)  # no remote: nothing to push is fine
    assert head_files(ws) == OURS
    assert git(ws, "log", "-1", "--format=%s") == f"Train {EXP}: bot, log and learning curve"
    assert git(ws, "rev-list", "--count", "HEAD") == "2"
    assert git(ws, "diff", "--cached") == cached_before  # still staged, not committed
    status = git(ws, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert "A  notes.txt" in status and " M README.md" in status
    assert "?? scratch.txt" in status and "?? bots/other-exp.json" in status
    assert not any("checkpoints" in line for line in git(ws, "ls-files").splitlines())
    assert (ws / "README.md").read_text() == "edited, not staged\n"


def test_only_existing_paths_and_no_empty_commit(ws: Path) -> None:
    write_results(ws, curve=False)
    assert publish(ws, EXP) == (True, True)
    assert head_files(ws) == [f"bots/{EXP}.json", f"logs/{EXP}.log"]
    head = git(ws, "rev-parse", "HEAD")
    assert publish(ws, EXP) == (False, True)  # nothing changed: no commit
    assert git(ws, "rev-parse", "HEAD") == head
    assert publish(ws, "never-trained") == (False, True)


def test_even_a_user_ignore_pattern_does_not_hide_the_log(ws: Path) -> None:
    (ws / ".gitignore").write_text("*.log\n*.png\n")
    write_results(ws)
    assert publish(ws, EXP)[0]
    assert head_files(ws) == OURS


def test_pushes_to_the_remote(ws: Path, tmp_path: Path) -> None:
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(ws, "remote", "add", "origin", str(bare))
    write_results(ws)
    assert publish(ws, EXP) == (True, True)
    assert git(bare, "rev-parse", "main") == git(ws, "rev-parse", "HEAD")


def test_a_failed_push_is_a_warning_and_the_commit_stays(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git(ws, "remote", "add", "origin", str(tmp_path / "gone.git"))
    write_results(ws)
    assert main([EXP, "--workspace", str(ws), "--push-timeout", "20"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == f"committed {EXP}'s bot and log"
    assert err.startswith("warning: push failed (") and err.rstrip().endswith("stays local")
    assert len(err.strip().splitlines()) == 1
    assert head_files(ws) == OURS


def test_nothing_new_is_said_and_exits_0(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nothing-here", "--workspace", str(ws)]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "nothing new to commit for nothing-here" and err == ""
    assert git(ws, "rev-list", "--count", "HEAD") == "1"


def test_a_failed_commit_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    write_results(plain)
    assert main([EXP, "--workspace", str(plain)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: ") and "not a git repository" in err
    assert len(err.strip().splitlines()) == 1


def test_module_entry_point_in_the_workspace(ws: Path) -> None:
    write_results(ws)
    result = subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum.train.publish", EXP],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"committed {EXP}'s bot and log"
    assert head_files(ws) == OURS


def test_the_curriculum_commits_the_onnx_twin_run_training_leaves_it(ws: Path) -> None:
    from cosmic_curriculum.workspace.layout import committed_paths

    assert committed_paths("e1") == [*published_paths("e1"), Path("bots/e1.onnx")]
    write_results(ws)
    (ws / "bots" / f"{EXP}.onnx").write_bytes(b"onnx bytes")
    assert publish(ws, EXP) == (True, True)
    assert head_files(ws) == OURS
    assert f"?? bots/{EXP}.onnx" in git(ws, "status", "--porcelain", "--untracked-files=all")
