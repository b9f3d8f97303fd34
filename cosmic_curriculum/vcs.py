"""Git persistence: commit named paths only, push with a timeout, preflight.

Three rules from experience with GitPython: ``index.add`` + ``index.commit`` commits the
whole index (sweeping in a user's staged work), so we commit with
``git commit -- <paths>``, which takes only those paths; every ``Repo`` is closed (``with
Repo(...)``) so no ``git cat-file`` processes linger; and git is imported lazily with
``GIT_PYTHON_REFRESH=quiet`` so a machine without git still runs (without persistence).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from cosmic_curriculum.errors import GitError
from cosmic_curriculum.fsio import fault_point

if TYPE_CHECKING:
    from git import Repo

# Must be set before the first `import git`: otherwise GitPython raises at import time
# when no git executable is on PATH.
os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")

FALLBACK_NAME = "cosmic-curriculum"
FALLBACK_EMAIL = "cosmic-curriculum@localhost"


def git_executable() -> str | None:
    return shutil.which("git")


@contextmanager
def open_repo(workspace: Path) -> Iterator[Repo]:
    """The repository whose work tree is ``workspace`` (closed on exit)."""
    import git

    try:
        repo = git.Repo(workspace, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise GitError(f"{workspace}: not a git repository; run `git init` there") from None
    with repo:
        yield repo


def is_repo(workspace: Path) -> bool:
    """True when git is installed and ``workspace`` lies inside a work tree."""
    if git_executable() is None:
        return False
    import git

    try:
        with git.Repo(workspace, search_parent_directories=True) as repo:
            return not repo.bare
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return False


def ignored_by_enclosing_repo(workspace: Path) -> Path | None:
    """The work tree that contains ``workspace`` but ignores it (e.g. a project's
    ``workspaces/`` directory), or None. Committing there would force ignored files into
    somebody else's history."""
    if not is_repo(workspace):
        return None
    with open_repo(workspace) as repo:
        root = Path(repo.working_tree_dir or workspace).resolve()
        ws = Path(workspace).resolve()
        if ws == root:
            return None
        status = repo.git.check_ignore(
            "-q", str(ws.relative_to(root)), with_exceptions=False, with_extended_output=True
        )[0]
    return root if status == 0 else None


def preflight(workspace: Path) -> str | None:
    """Check git is usable. Returns None when it is, or a warning when git is unavailable
    (missing executable, not a repository): the run then goes on without persistence.

    Raises :class:`GitError` for repository states we must not commit into.
    """
    if git_executable() is None:
        return "git is not installed (not on PATH); progress will not be committed"
    if not is_repo(workspace):
        return (
            f"{workspace} is not a git repository; progress will not be committed "
            "(run `git init` there to keep history)"
        )
    ignoring = ignored_by_enclosing_repo(workspace)
    if ignoring is not None:
        return (
            f"{workspace} lies in a directory the git repository {ignoring} ignores; progress "
            "will not be committed (run `git init` in the workspace to keep its history)"
        )
    with open_repo(workspace) as repo:
        git_dir = Path(repo.git_dir)
        if (git_dir / "rebase-merge").exists() or (git_dir / "rebase-apply").exists():
            raise GitError(
                f"{repo.working_tree_dir}: a rebase is in progress; finish it with "
                "`git rebase --continue` or abandon it with `git rebase --abort`, then re-run"
            )
        if (git_dir / "MERGE_HEAD").exists():
            raise GitError(
                f"{repo.working_tree_dir}: a merge is in progress; finish it with "
                "`git commit` or abandon it with `git merge --abort`, then re-run"
            )
        if (git_dir / "CHERRY_PICK_HEAD").exists():
            raise GitError(
                f"{repo.working_tree_dir}: a cherry-pick is in progress; finish or abort it "
                "(`git cherry-pick --abort`), then re-run"
            )
        if repo.head.is_detached:
            raise GitError(
                f"{repo.working_tree_dir}: HEAD is detached; check out a branch "
                "(`git switch <branch>` or `git switch -c curriculum`), then re-run"
            )
    return None


def _git_processes_running(repo_dirs: Sequence[Path]) -> bool:
    """Is a git process working in this repository running?

    Only git processes whose working directory lies in ``repo_dirs`` (the work tree or
    the git dir) count: an editor polling another repository must not keep a stale lock
    here forever (every commit would fail). A git process of ours we cannot inspect counts
    as running (conservative).
    """
    uid = os.getuid()
    roots = [str(Path(d).resolve()) for d in repo_dirs]
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            comm = Path(entry.path, "comm").read_text().strip()
            owner = entry.stat().st_uid
        except OSError:
            continue
        if owner != uid or not (comm == "git" or comm.startswith("git-")):
            continue
        try:
            cwd = os.readlink(Path(entry.path, "cwd"))
        except OSError:
            if Path(entry.path).exists():
                return True
            continue
        if any(cwd == root or cwd.startswith(root + os.sep) for root in roots):
            return True
    return False


def remove_stale_index_locks(workspace: Path) -> list[Path]:
    """Remove ``index.lock`` files left by a killed git.

    Call only while holding the workspace lock (so no other run of ours is committing);
    nothing is removed while any git process runs, since it may own the lock.
    """
    if not is_repo(workspace):
        return []
    with open_repo(workspace) as repo:
        git_dir = Path(repo.git_dir)
        work_tree = Path(repo.working_tree_dir or workspace)
    if _git_processes_running([work_tree, git_dir]):
        return []
    removed: list[Path] = []
    candidates = [git_dir / "index.lock", *git_dir.glob("next-index-*.lock")]
    for lock in candidates:
        with suppress(FileNotFoundError):
            lock.unlink()
            removed.append(lock)
    return removed


def _identity_env(repo: Repo) -> dict[str, str]:
    """Author/committer fallback when the user has configured no identity."""
    reader = repo.config_reader()
    env: dict[str, str] = {}
    try:
        reader.get_value("user", "name")
    except Exception:
        env["GIT_AUTHOR_NAME"] = env["GIT_COMMITTER_NAME"] = FALLBACK_NAME
    try:
        reader.get_value("user", "email")
    except Exception:
        env["GIT_AUTHOR_EMAIL"] = env["GIT_COMMITTER_EMAIL"] = FALLBACK_EMAIL
    return env


def _git_reason(exc: Exception) -> str:
    """The meaningful line of a failed git command's output."""
    text = str(getattr(exc, "stderr", "") or getattr(exc, "stdout", "") or exc)
    lines = [ln.strip(" '\"") for ln in text.splitlines() if ln.strip(" '\"")]
    for line in lines:
        if "index.lock" in line:
            return (
                f"{line} (another git is running, or a killed git left the lock; "
                "remove it if no git process runs)"
            )
    for line in lines:
        if line.startswith(("fatal:", "error:", "stderr: 'fatal:", "stderr: 'error:")):
            return line.removeprefix("stderr: '")
    return lines[-1] if lines else "unknown error"


def commit_paths(workspace: Path, paths: Sequence[Path | str], message: str) -> bool:
    """Commit exactly ``paths`` (those that exist) with ``message``.

    Returns False when nothing changed (no empty commits). Other staged or unstaged
    changes in the repository stay exactly as they were. Raises :class:`GitError`.
    """
    import git

    with open_repo(workspace) as repo:
        root = Path(repo.working_tree_dir or workspace).resolve()
        rel: list[str] = []
        for p in paths:
            full = (Path(workspace) / p).resolve()
            if full.exists():
                rel.append(str(full.relative_to(root)))
        if not rel:
            return False
        env = _identity_env(repo)
        try:
            # -f: these are files the orchestrator owns and names explicitly, even if a
            # user's ignore pattern (e.g. *.log) would match them.
            repo.git.add("-f", "--", *rel)
            fault_point("commit:add")
            has_head = repo.head.is_valid()
            if has_head:
                status = repo.git.diff(
                    "--cached",
                    "--quiet",
                    "HEAD",
                    "--",
                    *rel,
                    with_exceptions=False,
                    with_extended_output=True,
                )[0]
                if status == 0:
                    return False
            repo.git.commit("--no-verify", "-m", message, "--", *rel, env=env)
        except git.GitCommandError as exc:
            raise GitError(
                f"{root}: git commit of {', '.join(rel)} failed: {_git_reason(exc)}"
            ) from None
    return True


def push(workspace: Path, timeout: float = 30.0) -> tuple[bool, str]:
    """Push the current branch if a remote exists. Never raises; never blocks longer
    than ``timeout`` seconds. Returns (ok, message); no remote counts as ok."""
    try:
        with open_repo(workspace) as repo:
            if not repo.remotes:
                return True, "no remote configured; nothing to push"
            if repo.head.is_detached:
                return False, "HEAD is detached; not pushing"
            branch = repo.active_branch
            tracking = branch.tracking_branch()
            if tracking is not None:
                argv = ["git", "push", tracking.remote_name, f"HEAD:{tracking.remote_head}"]
            else:
                names = [r.name for r in repo.remotes]
                remote = "origin" if "origin" in names else names[0]
                argv = ["git", "push", remote, f"HEAD:refs/heads/{branch.name}"]
            cwd = repo.working_tree_dir
    except Exception as exc:
        return False, f"cannot prepare push: {exc}"
    env = dict(os.environ)
    env["GIT_TERMINAL_PROMPT"] = "0"  # never wait for a password
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            # A new session has no controlling terminal (ssh cannot prompt) and lets a
            # timeout kill ssh helpers too.
            start_new_session=True,
        )
    except OSError as exc:
        return False, f"cannot run git push: {exc}"
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return False, f"git push timed out after {timeout:g}s"
    text = out.decode("utf-8", "replace").strip()
    if proc.returncode != 0:
        last = text.splitlines()[-1] if text else f"exit {proc.returncode}"
        return False, f"git push failed: {last}"
    return True, "pushed"
