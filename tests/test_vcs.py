"""Git persistence: only our paths, no empty commits, push failures are warnings."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from fakes.waiting import wait_until
from gitutil import git, init_repo

from cosmic_curriculum.errors import GitError
from cosmic_curriculum.system.processes import gone_or_zombie
from cosmic_curriculum.vcs import repo as vcs


def test_commit_paths_on_repo_without_commits(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", message=None)
    (repo / "state.json").write_text("{}\n")
    assert vcs.commit_paths(repo, ["state.json"], "chore: first")
    assert git(repo, "log", "--format=%s") == "chore: first"
    assert not vcs.commit_paths(repo, ["state.json"], "chore: again")  # nothing changed


def test_user_staged_and_unstaged_work_is_untouched(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    (repo / "user.py").write_text("staged\n")
    git(repo, "add", "user.py")
    (repo / "README.md").write_text("unstaged edit\n")
    (repo / "notes.txt").write_text("untracked\n")
    before = git(repo, "status", "--porcelain")
    diff_cached = git(repo, "diff", "--cached")
    (repo / "logs").mkdir()
    (repo / "logs" / "a.log").write_text("log\n")
    (repo / "state.json").write_text('{"a": 1}\n')
    assert vcs.commit_paths(repo, ["state.json", "logs/a.log", "missing.json"], "chore: ours")
    files = git(repo, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert sorted(files) == ["logs/a.log", "state.json"]
    after = git(repo, "status", "--porcelain")
    assert after == before  # user's staged/unstaged/untracked exactly as they were
    assert git(repo, "diff", "--cached") == diff_cached
    assert (repo / "README.md").read_text() == "unstaged edit\n"


def test_no_empty_commit_and_ignored_paths_still_committed(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "a.log").write_text("x\n")
    assert vcs.commit_paths(repo, ["a.log"], "chore: log")
    head = git(repo, "rev-parse", "HEAD")
    assert not vcs.commit_paths(repo, ["a.log"], "chore: log again")
    assert git(repo, "rev-parse", "HEAD") == head


def test_commit_without_identity_uses_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no global identity
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "s.json").write_text("{}\n")
    assert vcs.commit_paths(repo, ["s.json"], "chore: x")
    assert git(repo, "log", "--format=%an") == vcs.FALLBACK_NAME


def test_preflight_not_a_repo_warns(tmp_path: Path) -> None:
    warning = vcs.preflight(tmp_path)
    assert warning is not None and "not a git repository" in warning


def test_preflight_detached_head_and_rebase(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    assert vcs.preflight(repo) is None
    git(repo, "checkout", "-q", "--detach")
    with pytest.raises(GitError, match="detached"):
        vcs.preflight(repo)
    git(repo, "checkout", "-q", "main")
    (Path(git(repo, "rev-parse", "--absolute-git-dir")) / "rebase-merge").mkdir()
    with pytest.raises(GitError, match="rebase --abort"):
        vcs.preflight(repo)


def test_preflight_git_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    warning = vcs.preflight(tmp_path)
    assert warning is not None and "not installed" in warning


def test_stale_index_lock_removed(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    lock = repo / ".git" / "index.lock"
    lock.write_text("")
    (repo / "s.json").write_text("{}\n")
    with pytest.raises(GitError, match=r"index\.lock"):
        vcs.commit_paths(repo, ["s.json"], "x")
    assert vcs.remove_stale_index_locks(repo) == [lock]
    assert vcs.commit_paths(repo, ["s.json"], "x")


def test_an_exited_git_not_yet_reaped_keeps_no_lock(tmp_path: Path) -> None:
    # A zombie git (exited, its parent not waiting yet) has no cwd to inspect: it works in
    # no repository, so a stale lock is still removed (a busy machine always has some).
    repo = init_repo(tmp_path / "r")
    lock = repo / ".git" / "index.lock"
    lock.write_text("")
    zombie = subprocess.Popen(["git", "--version"], cwd=repo, stdout=subprocess.DEVNULL)
    try:
        wait_until(lambda: gone_or_zombie(zombie.pid), timeout=10.0, what="git to exit")
        assert Path(f"/proc/{zombie.pid}").exists()  # not reaped: a zombie
        assert vcs.remove_stale_index_locks(repo) == [lock]
    finally:
        zombie.wait()


def test_push_no_remote_ok_and_to_bare(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    assert vcs.push(repo) == (True, "no remote configured; nothing to push")
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    ok, message = vcs.push(repo)
    assert ok, message
    assert git(bare, "rev-parse", "main") == git(repo, "rev-parse", "HEAD")


def test_push_unreachable_remote_is_a_warning(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    git(repo, "remote", "add", "origin", str(tmp_path / "gone.git"))
    ok, message = vcs.push(repo, timeout=10)
    assert not ok and "git push failed" in message


def test_push_timeout(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    # A remote helper that hangs: ext:: is disabled by default, so use a fake ssh.
    fake_ssh = tmp_path / "hang-ssh"
    fake_ssh.write_text("#!/bin/sh\nsleep 30\n")
    fake_ssh.chmod(0o755)
    git(repo, "remote", "add", "origin", "ssh://example.invalid/repo.git")
    git(repo, "config", "core.sshCommand", str(fake_ssh))
    ok, message = vcs.push(repo, timeout=1.0)
    assert not ok and "timed out" in message


def test_workspace_ignored_by_the_enclosing_repo_is_not_committed_into_it(tmp_path: Path) -> None:
    project = init_repo(tmp_path / "project")
    (project / ".gitignore").write_text("/workspaces/\n")
    ws = project / "workspaces" / "w1"
    ws.mkdir(parents=True)
    assert vcs.ignored_by_enclosing_repo(ws) == project.resolve()
    warning = vcs.preflight(ws)
    assert warning is not None and "ignores" in warning
    tracked = project / "sub"
    tracked.mkdir()
    assert vcs.ignored_by_enclosing_repo(tracked) is None
    assert vcs.preflight(tracked) is None
    assert vcs.ignored_by_enclosing_repo(project) is None
