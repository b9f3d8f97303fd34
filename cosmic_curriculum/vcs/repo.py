"""Git persistence: commit named paths only, push with a timeout, preflight.

Every git command runs as a subprocess with a timeout in its own session
(:mod:`cosmic_curriculum.vcs.gitcmd`), so a hook, gpg or ssh that never returns is killed with
its whole group. Commits take only the paths they are given and never change the user's
index when they fail (:mod:`cosmic_curriculum.vcs.commit`). No git library: the git
executable is all it needs, and a machine without one can still import it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from cosmic_curriculum.defaults import PUSH_TIMEOUT_SECONDS
from cosmic_curriculum.errors import GitError
from cosmic_curriculum.vcs.commit import (
    FALLBACK_EMAIL,
    FALLBACK_NAME,
    LOCK_OWNER,
    LOG_COMMIT_LIMIT,
    TEMP_INDEX_PREFIX,
    commit_paths,
    symlink_error,
    symlink_in,
)
from cosmic_curriculum.vcs.gitcmd import (
    GitRunError,
    RepoDirs,
    git_executable,
    git_processes_running,
    git_timeout,
    locate,
    run_git,
)

__all__ = [
    "FALLBACK_EMAIL",
    "FALLBACK_NAME",
    "LOG_COMMIT_LIMIT",
    "check_workspace",
    "commit_paths",
    "enclosing_repo",
    "git_executable",
    "git_timeout",
    "ignored_by_enclosing_repo",
    "is_repo",
    "preflight",
    "push",
    "remove_stale_index_locks",
]


def is_repo(workspace: Path) -> bool:
    """True when git is installed and ``workspace`` lies inside a work tree."""
    return locate(workspace) is not None


def _ignores(dirs: RepoDirs, workspace: Path) -> bool:
    ws = Path(workspace).resolve()
    if ws == dirs.root:
        return False
    found = run_git(["check-ignore", "-q", str(ws.relative_to(dirs.root))], dirs.root, check=False)
    return found.returncode == 0


def ignored_by_enclosing_repo(workspace: Path) -> Path | None:
    """The work tree that contains ``workspace`` but ignores it (e.g. a project's
    ``workspaces/`` directory), or None. Committing there would force ignored files into
    somebody else's history."""
    dirs = locate(workspace)
    return dirs.root if dirs is not None and _ignores(dirs, workspace) else None


def enclosing_repo(workspace: Path) -> Path | None:
    """The work tree that contains ``workspace`` (not as its root) and does not ignore
    it: our commits land in that repository."""
    dirs = locate(workspace)
    if dirs is None or Path(workspace).resolve() == dirs.root or _ignores(dirs, workspace):
        return None
    return dirs.root


def preflight(workspace: Path) -> str | None:
    """Check git is usable. Returns None when it is, or a warning when git is unavailable
    (missing executable, not a repository): the run then goes on without persistence.

    Raises :class:`GitError` for repository states we must not commit into.
    """
    if git_executable() is None:
        return "git is not installed (not on PATH); progress will not be committed"
    dirs = locate(workspace)
    if dirs is None:
        return (
            f"{workspace} is not a git repository; progress will not be committed "
            "(run `git init` there to keep history)"
        )
    if _ignores(dirs, workspace):
        return (
            f"{workspace} lies in a directory the git repository {dirs.root} ignores; progress "
            "will not be committed (run `git init` in the workspace to keep its history)"
        )
    git_dir = dirs.git_dir
    if (git_dir / "rebase-merge").exists() or (git_dir / "rebase-apply").exists():
        raise GitError(
            f"{dirs.root}: a rebase is in progress; finish it with "
            "`git rebase --continue` or abandon it with `git rebase --abort`, then re-run"
        )
    if (git_dir / "MERGE_HEAD").exists():
        raise GitError(
            f"{dirs.root}: a merge is in progress; finish it with "
            "`git commit` or abandon it with `git merge --abort`, then re-run"
        )
    if (git_dir / "CHERRY_PICK_HEAD").exists():
        raise GitError(
            f"{dirs.root}: a cherry-pick is in progress; finish or abort it "
            "(`git cherry-pick --abort`), then re-run"
        )
    if not run_git(["symbolic-ref", "-q", "HEAD"], dirs.root, check=False).ok:
        raise GitError(
            f"{dirs.root}: HEAD is detached; check out a branch "
            "(`git switch <branch>` or `git switch -c curriculum`), then re-run"
        )
    return None


def check_workspace(workspace: Path, paths: Iterable[Path] = ()) -> str | None:
    """What must hold before training when progress is committed; call after
    :func:`preflight` said git is usable.

    Raises :class:`GitError` (one line) when one of ``paths`` (what is about to be
    committed: the caller names the workspace's files and directories) is, or lies behind,
    a symbolic link: git would commit the link, never the file, and every commit would fail. Returns
    a warning when the workspace lies inside a larger repository that does not ignore it
    (our commits land there and its hooks run), else None.
    """
    ws = Path(workspace).resolve()
    dirs = locate(ws)
    if dirs is None or _ignores(dirs, ws):
        return None
    for path in paths:
        try:
            link = symlink_in(ws, Path(os.path.normpath(ws / path)))
        except ValueError:  # outside the workspace: commit_paths refuses it by name
            continue
        if link is not None:
            raise symlink_error(link, ws)
    if ws == dirs.root:
        return None
    return (
        f"{ws} lies inside the git repository {dirs.root}, which does not ignore it: "
        f"progress is committed on that repository's current branch and its commit hooks "
        f"run; to keep the curriculum's history apart, run `git init` in {ws} (or ignore "
        f"the workspace there)"
    )


def remove_stale_index_locks(workspace: Path) -> list[Path]:
    """Remove ``index.lock`` files left by a killed git (and private indexes a killed
    run of ours left; those are not reported).

    Call only while holding the workspace lock (so no other run of ours is committing);
    nothing is removed while any git process runs, since it may own the lock.
    """
    dirs = locate(workspace)
    if dirs is None:
        return []
    if git_processes_running([dirs.root, dirs.git_dir]):
        # A git may own the lock; not one that a dead run of ours wrote (its orphaned git
        # children use a private index, never this lock).
        return [] if not _our_dead_lock(dirs.git_dir / "index.lock") else _unlink(dirs)
    git_dir = dirs.git_dir
    for leftover in git_dir.glob(f"{TEMP_INDEX_PREFIX}*"):
        leftover.unlink(missing_ok=True)
    removed: list[Path] = []
    candidates = [git_dir / "index.lock", *git_dir.glob("next-index-*.lock")]
    for lock in candidates:
        with suppress(FileNotFoundError):
            lock.unlink()
            removed.append(lock)
    return removed


def _our_dead_lock(lock: Path) -> bool:
    """Is ``lock`` one a run of ours wrote (`gitcommit.LOCK_OWNER`) that has died?"""
    try:
        text = lock.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if not text.startswith(LOCK_OWNER):
        return False
    pid = text[len(LOCK_OWNER) :].strip()
    return not (pid.isdigit() and Path(f"/proc/{pid}").exists())


def _unlink(dirs: RepoDirs) -> list[Path]:
    lock = dirs.git_dir / "index.lock"
    lock.unlink(missing_ok=True)
    return [lock]


def _config(root: Path, key: str) -> str | None:
    found = run_git(["config", "--get", key], root, check=False)
    return found.stdout.strip() if found.ok else None


def _push_argv(root: Path) -> list[str] | str:
    """``push`` arguments for the current branch, or why there is nothing to push."""
    remotes = run_git(["remote"], root).stdout.split()
    if not remotes:
        return "no remote configured; nothing to push"
    branch = run_git(["symbolic-ref", "-q", "--short", "HEAD"], root, check=False)
    if not branch.ok:
        return "HEAD is detached; not pushing"
    name = branch.stdout.strip()
    remote = _config(root, f"branch.{name}.remote")
    merge = _config(root, f"branch.{name}.merge")
    if remote and merge:
        return ["push", remote, f"HEAD:{merge}"]
    remote = "origin" if "origin" in remotes else remotes[0]
    return ["push", remote, f"HEAD:refs/heads/{name}"]


def push(workspace: Path, timeout: float = PUSH_TIMEOUT_SECONDS) -> tuple[bool, str]:
    """Push the current branch if a remote exists. Never raises; never blocks longer
    than ``timeout`` seconds (ssh and credential helpers are killed with git). Returns
    (ok, message); no remote counts as ok. A failure names git's own reason."""
    try:
        dirs = locate(workspace)
        if dirs is None:
            return False, f"cannot prepare push: {workspace} is not a git repository"
        argv = _push_argv(dirs.root)
    except GitError as exc:
        return False, f"cannot prepare push: {exc}"
    if isinstance(argv, str):
        return argv.startswith("no remote"), argv
    try:
        run_git(argv, dirs.root, timeout=timeout)
    except GitRunError as exc:
        if exc.timed_out:
            return False, f"git push timed out after {timeout:g}s"
        return False, f"git push failed: {exc.reason}"
    return True, "pushed"
