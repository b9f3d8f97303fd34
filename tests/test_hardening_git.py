"""Git faults found by the hardening review, each fixed for its class of inputs.

Hooks that never return (every git command has a timeout and its group is killed),
commits that cannot succeed (the user's index is kept, `run` exits 3), logs of any size
(a bounded tail is committed), symlinked paths (refused before training), a failed push
(git's own reason) and a workspace inside a user's repository (said once, hooks run).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest
from fakes.waiting import alive
from fakes.workspace import (
    fake_env,
    make_workspace,
    read_state,
    run_cli,
    run_in_process,
    trainer_runs,
)
from gitutil import git, init_repo

from cosmic_curriculum.curriculum.reporter import Reporter
from cosmic_curriculum.defaults import GIT_TIMEOUT_SECONDS
from cosmic_curriculum.errors import GitError, UncommittedError
from cosmic_curriculum.train.publish import publish
from cosmic_curriculum.vcs import repo as vcs
from cosmic_curriculum.vcs.gitcmd import TIMEOUT_ENV, git_timeout

EXP = "curric-s1-score"


class Recorder(Reporter):
    def __init__(self) -> None:
        self.warned: list[str] = []

    def warning(self, message: str) -> None:
        self.warned.append(message)


def hook(repo: Path, name: str, body: str) -> Path:
    path = Path(git(repo, "rev-parse", "--absolute-git-dir")) / "hooks" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_the_git_timeout_is_one_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert git_timeout() == GIT_TIMEOUT_SECONDS
    monkeypatch.setenv(TIMEOUT_ENV, "2.5")
    assert git_timeout() == 2.5
    monkeypatch.setenv(TIMEOUT_ENV, "soon")
    assert git_timeout() == GIT_TIMEOUT_SECONDS


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", ["pre-commit", "prepare-commit-msg", "commit-msg", "post-commit"])
def test_a_hook_that_never_returns_is_killed_and_the_index_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    # 4 s, not 1: on a loaded machine git itself took over a second to reach the hook,
    # so the timeout fired before the hook had written its pid (or, for post-commit,
    # before the commit existed). The hook sleeps 30 s: the bound still proves the kill.
    monkeypatch.setenv(TIMEOUT_ENV, "4")
    repo = init_repo(tmp_path / "r")
    (repo / "user.py").write_text("staged\n")
    git(repo, "add", "user.py")
    pid_file = tmp_path / "hook.pid"
    script = hook(repo, name, f"echo $$ > {pid_file}\nsleep 30\n")
    index = repo / ".git" / "index"
    index_before = index.read_bytes()
    head = git(repo, "rev-parse", "HEAD")
    (repo / "state.json").write_text("{}\n")
    t0 = time.monotonic()
    if name == "post-commit":
        # The commit exists before post-commit runs: it is reported as made.
        assert vcs.commit_paths(repo, ["state.json"], "chore: x")
        assert git(repo, "log", "-1", "--format=%s") == "chore: x"
    else:
        with pytest.raises(GitError, match=f"timed out: no answer after 4s.*{TIMEOUT_ENV}"):
            vcs.commit_paths(repo, ["state.json"], "chore: x")
        assert git(repo, "rev-parse", "HEAD") == head
        assert index.read_bytes() == index_before  # the user's index, byte for byte
    assert time.monotonic() - t0 < 20
    assert not alive(int(pid_file.read_text()))  # the hook was killed with git
    assert not (repo / ".git" / "index.lock").exists()
    assert not list((repo / ".git").glob("cosmic-curriculum-index-*"))
    # The next commit (hook fixed) goes through; the user's staged work stays staged.
    script.unlink()
    (repo / "state.json").write_text('{"a": 1}\n')
    assert vcs.commit_paths(repo, ["state.json"], "chore: y")
    assert git(repo, "show", "--name-only", "--format=", "HEAD") == "state.json"
    assert git(repo, "diff", "--cached", "--name-only") == "user.py"


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["gpg-sign-without-gpg", "pre-commit-hook-refuses"])
def test_a_commit_that_cannot_succeed_ends_run_with_exit_3_and_keeps_the_index(
    tmp_path: Path, fault: str
) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["score"])
    refusing: Path | None = None
    if fault == "gpg-sign-without-gpg":
        git(ws, "config", "commit.gpgsign", "true")
        git(ws, "config", "gpg.program", str(tmp_path / "no-gpg-here"))
    else:
        refusing = hook(ws, "pre-commit", "echo 'pre-commit: refusing every commit' >&2\nexit 1\n")
    (ws / "notes.txt").write_text("mine\n")
    git(ws, "add", "notes.txt")
    staged = git(ws, "ls-files", "-s")
    head = git(ws, "rev-parse", "HEAD")
    result = run_cli(ws)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "the commit is retried" in " ".join(result.stdout.split())  # Rich wraps lines
    last = result.stderr.strip().splitlines()
    assert len(last) == 1
    assert last[0].startswith("error: curriculum done, but the results are saved in ")
    assert "not committed to git" in last[0]
    assert ("no-gpg-here" in last[0]) if refusing is None else ("refusing" in last[0])
    assert git(ws, "rev-parse", "HEAD") == head
    assert git(ws, "ls-files", "-s") == staged  # nothing of ours left staged
    assert read_state(ws)["status"] == "done"
    # Fixed: the next run's catch-up commit takes everything and the run succeeds.
    if refusing is None:
        git(ws, "config", "commit.gpgsign", "false")
    else:
        refusing.unlink()
    again = run_cli(ws)
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads(git(ws, "show", "HEAD:curriculum_state.json"))["status"] == "done"
    assert "notes.txt" not in git(ws, "show", "--name-only", "--format=", "HEAD")
    assert "A  notes.txt" in git(ws, "status", "--porcelain").splitlines()


def test_a_failed_commit_in_process_raises_uncommitted_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["score"])
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    hook(ws, "pre-commit", "exit 1\n")
    with pytest.raises(UncommittedError) as err:
        run_in_process(ws, Recorder())
    assert err.value.exit_code == 3
    assert "not committed" in str(err.value) and "\n" not in str(err.value)


def write_log(path: Path, size: int) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f'@progress {{"timesteps": {i}}} trainer output line\n' for i in range(size // 40)]
    data = "".join(lines).encode()
    path.write_bytes(data)
    return data


def test_a_huge_log_is_committed_as_its_tail_and_kept_whole_on_disk(tmp_path: Path) -> None:
    ws = init_repo(tmp_path / "ws")
    (ws / "bots").mkdir()
    (ws / "bots" / f"{EXP}.json").write_text('{"kind": "fake"}\n')
    log = ws / "logs" / f"{EXP}.log"
    data = write_log(log, 3 << 20)
    digest = hashlib.sha256(data).hexdigest()
    assert publish(ws, EXP)[0]  # what scripts/run_training.sh calls
    size = int(git(ws, "cat-file", "-s", f"HEAD:logs/{EXP}.log"))
    assert size <= vcs.LOG_COMMIT_LIMIT + 300
    committed = git(ws, "cat-file", "-p", f"HEAD:logs/{EXP}.log").encode() + b"\n"
    header, tail = committed.split(b"\n", 1)
    assert b"bytes of this log are not committed" in header
    assert f"whole log ({len(data)} bytes) is on disk at logs/{EXP}.log".encode() in header
    assert data.endswith(tail) and tail.startswith(b"@progress")  # whole lines
    assert hashlib.sha256(log.read_bytes()).hexdigest() == digest  # untouched on disk
    assert not publish(ws, EXP)[0]  # unchanged log: no new commit
    # The user's index agrees with HEAD for the log: nothing of ours is staged.
    assert git(ws, "diff", "--cached", "--name-only") == ""
    # A growing log is committed again, still bounded.
    with log.open("ab") as f:
        f.write(b"the last line\n")
    assert publish(ws, EXP)[0]
    assert git(ws, "show", f"HEAD:logs/{EXP}.log").endswith("the last line")
    assert int(git(ws, "cat-file", "-s", f"HEAD:logs/{EXP}.log")) <= vcs.LOG_COMMIT_LIMIT + 300


def test_a_log_under_the_limit_is_committed_whole(tmp_path: Path) -> None:
    ws = init_repo(tmp_path / "ws")
    data = write_log(ws / "logs" / f"{EXP}.log", 100_000)
    assert vcs.commit_paths(ws, [f"logs/{EXP}.log"], "chore: log")
    assert git(ws, "cat-file", "-p", f"HEAD:logs/{EXP}.log").encode() + b"\n" == data


def test_a_symlinked_logs_dir_is_refused_before_training(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["score"])
    elsewhere = tmp_path / "big-disk"
    elsewhere.mkdir()
    (ws / "logs").symlink_to(elsewhere)
    head = git(ws, "rev-parse", "HEAD")
    result = run_cli(ws)
    assert result.returncode == 1, result.stdout + result.stderr
    err = result.stderr.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in result.stdout + result.stderr
    assert err[0].startswith("error: logs: a symbolic link (to ") and "re-run" in err[0]
    assert trainer_runs(ws) == []  # before any training
    assert git(ws, "rev-parse", "HEAD") == head


def test_symlinked_paths_are_one_line_git_errors_never_value_errors(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    outside = tmp_path / "outside.json"
    outside.write_text("{}\n")
    (repo / "bots").mkdir()
    (repo / "bots" / "b.json").symlink_to(outside)
    with pytest.raises(GitError, match=r"^bots/b\.json: a symbolic link"):
        vcs.commit_paths(repo, ["bots/b.json"], "x")
    with pytest.raises(GitError, match=r"^bots/b\.json: a symbolic link"):
        vcs.check_workspace(repo, [repo / "bots" / "b.json"])
    with pytest.raises(GitError, match="outside the workspace"):
        vcs.commit_paths(repo / "bots", ["../README.md"], "x")
    assert vcs.check_workspace(repo) is None


def test_a_failed_push_names_gits_own_reason(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    git(repo, "remote", "add", "origin", str(tmp_path / "gone.git"))
    ok, message = vcs.push(repo, timeout=20)
    assert not ok
    assert message.startswith("git push failed: fatal: ")
    assert "does not appear to be a git repository" in message
    # A server that refuses: its own words (`remote:`), not git's closing line.
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    hook(bare, "pre-receive", "echo 'main is protected, open a merge request' >&2\nexit 1\n")
    git(repo, "remote", "set-url", "origin", str(bare))
    ok, message = vcs.push(repo, timeout=20)
    assert not ok
    assert message == "git push failed: remote: main is protected, open a merge request"


@pytest.mark.slow
def test_a_workspace_inside_a_users_repo_is_said_once_and_its_hooks_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = init_repo(tmp_path / "project")
    ws = make_workspace(project / "ws", git_repo=False, stages=["score", "defend"])
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    ran = tmp_path / "hook-ran"
    hook(project, "pre-commit", f"echo ran >> {ran}\n")
    rec = Recorder()
    assert run_in_process(ws, rec).status == "done"
    said = [w for w in rec.warned if "inside the git repository" in w]
    assert len(said) == 1, rec.warned
    assert str(project.resolve()) in said[0] and f"`git init` in {ws.resolve()}" in said[0]
    assert len(ran.read_text().splitlines()) >= 2  # the project's hook ran on our commits
    committed = git(project, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert "ws/curriculum_state.json" in committed
    assert json.loads(git(project, "show", "HEAD:ws/curriculum_state.json"))["status"] == "done"
    # The workspace as its own repository: nothing to say.
    init_repo(ws)
    assert vcs.check_workspace(ws) is None
    assert os.path.samefile(git(ws, "rev-parse", "--show-toplevel"), ws)


def test_a_run_without_git_never_reports_an_uncommitted_result(tmp_path: Path) -> None:
    """Without a repository nothing is committed by design: no warning, no exit 3 (the
    skip override commits unconditionally)."""
    from cosmic_curriculum.curriculum.context import Run, RunOptions
    from cosmic_curriculum.curriculum.persist import commit, final_error
    from cosmic_curriculum.workspace.state_file import load_state

    ws = make_workspace(tmp_path / "ws", git_repo=False)
    rec = Recorder()
    run = Run(RunOptions(workspace=ws), rec)
    run.state = load_state(run.paths.state)
    commit(run, "curric-s1-score")
    assert rec.warned == [] and run.commit_failure is None
    assert final_error(run) is None


def test_a_lock_our_killed_run_left_goes_even_while_its_orphaned_git_runs(tmp_path: Path) -> None:
    """Killed mid-commit: its git child outlives it in the repository, which used to keep
    our own stale index.lock forever (every later commit failed)."""
    import subprocess

    from cosmic_curriculum.vcs.commit import LOCK_OWNER

    repo = init_repo(tmp_path / "r")
    lock = repo / ".git" / "index.lock"
    orphan = subprocess.Popen(["git", "hash-object", "--stdin"], cwd=repo, stdin=subprocess.PIPE)
    try:
        lock.write_text("")  # a lock some other git holds: kept while a git runs
        assert vcs.remove_stale_index_locks(repo) == []
        lock.write_text(f"{LOCK_OWNER}999999999\n")  # ours, and that pid does not exist
        assert vcs.remove_stale_index_locks(repo) == [lock]
        assert not lock.exists()
    finally:
        assert orphan.stdin is not None
        orphan.stdin.close()
        orphan.wait()
