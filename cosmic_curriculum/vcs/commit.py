"""Commit named paths, and only them, without ever changing the user's index on failure.

The commit is built in a private index (``GIT_INDEX_FILE`` in the git directory): HEAD's
tree plus our paths. ``git commit`` runs on it (the repository's hooks run, as with any
commit there; every git command has a timeout, see :mod:`gitcmd`). Only after the commit
exists is the user's index brought up to date for our paths (as ``git commit -- paths``
would); on any failure the private index is thrown away and the user's index was never
touched. Logs (``*.log``) larger than :data:`LOG_COMMIT_LIMIT` are committed as their
tail, the whole file stays on disk untouched.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from cosmic_curriculum.errors import GitError
from cosmic_curriculum.system.fsio import fault_point
from cosmic_curriculum.vcs.gitcmd import GitRunError, RepoDirs, locate, run_git

FALLBACK_NAME = "cosmic-curriculum"
FALLBACK_EMAIL = "cosmic-curriculum@localhost"
LOG_COMMIT_LIMIT = 1 << 20  # bytes of a log that go into git
TEMP_INDEX_PREFIX = "cosmic-curriculum-index-"


def symlink_in(workspace: Path, path: Path) -> Path | None:
    """The first symbolic link on the way from ``workspace`` to ``path`` (inclusive)."""
    here = workspace
    for part in path.relative_to(workspace).parts:
        here = here / part
        if here.is_symlink():
            return here
    return None


def symlink_error(link: Path, workspace: Path) -> GitError:
    return GitError(
        f"{link.relative_to(workspace)}: a symbolic link (to {os.readlink(link)}); git would "
        "commit the link, not the files behind it, which may lie outside the workspace; "
        "replace it with the real directory or file (move its contents into the "
        "workspace), then re-run"
    )


def _entries(workspace: Path, root: Path, paths: Sequence[Path | str]) -> list[tuple[str, Path]]:
    """(path relative to the work tree, path on disk) of each existing path; refuses
    paths outside the workspace and paths behind a symbolic link (one-line GitError)."""
    ws = Path(os.path.abspath(workspace))
    try:
        ws_in_repo = ws.resolve().relative_to(root)
    except ValueError:
        raise GitError(f"{ws}: not inside the work tree {root}") from None
    out: list[tuple[str, Path]] = []
    for p in paths:
        full = Path(os.path.normpath(ws / p))
        try:
            inside = full.relative_to(ws)
        except ValueError:
            raise GitError(f"{p}: outside the workspace {ws}; not committed") from None
        link = symlink_in(ws, full)
        if link is not None:
            raise symlink_error(link, ws)
        if full.is_file():
            out.append(((ws_in_repo / inside).as_posix(), full))
    return out


def log_tail(path: Path, shown_as: str, limit: int = LOG_COMMIT_LIMIT) -> bytes | None:
    """What git gets of a log longer than ``limit``: a first line saying what was cut,
    then its last whole lines (at most ``limit`` bytes). None when it fits."""
    with path.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size <= limit:
            return None
        f.seek(size - limit)
        data = f.read(limit)
    newline = data.find(b"\n")
    if 0 <= newline < len(data) - 1:
        data = data[newline + 1 :]  # start at a line boundary
    cut = size - len(data)
    header = (
        f"[cosmic-curriculum: the first {cut} bytes of this log are not committed "
        f"(git keeps its last {len(data)}); the whole log ({size} bytes) is on disk at "
        f"{shown_as}]\n"
    )
    return header.encode() + data


def _bounded(rel: str, full: Path) -> bytes | None:
    return log_tail(full, rel) if rel.endswith(".log") else None


def _identity_env(root: Path) -> dict[str, str]:
    """Author/committer fallback when the user has configured no identity."""
    env: dict[str, str] = {}
    if not run_git(["config", "user.name"], root, check=False).ok:
        env["GIT_AUTHOR_NAME"] = env["GIT_COMMITTER_NAME"] = FALLBACK_NAME
    if not run_git(["config", "user.email"], root, check=False).ok:
        env["GIT_AUTHOR_EMAIL"] = env["GIT_COMMITTER_EMAIL"] = FALLBACK_EMAIL
    return env


def _rev(root: Path, rev: str) -> str | None:
    found = run_git(["rev-parse", "-q", "--verify", rev], root, check=False)
    return found.stdout.strip() if found.ok else None


def commit_paths(workspace: Path, paths: Sequence[Path | str], message: str) -> bool:
    """Commit exactly ``paths`` (the existing files among them) with ``message``.

    Returns False when nothing changed (no empty commits). Other staged or unstaged
    changes in the repository stay exactly as they were, also when the commit fails.
    Raises :class:`GitError` (one line) on every failure.
    """
    dirs = locate(workspace)
    if dirs is None:
        raise GitError(f"{workspace}: not a git repository; run `git init` there")
    entries = _entries(Path(workspace), dirs.root, paths)
    if not entries:
        return False
    with _index_locked(dirs):
        tree = _commit(dirs, entries, message)
        if tree is None:
            return False
        _sync_user_index(dirs, [rel for rel, _ in entries])
    return True


LOCK_OWNER = "cosmic-curriculum pid "  # what our own index.lock says, for the cleanup


def _create_lock(lock: Path) -> None:
    """Create ``lock`` saying who we are: a run killed while it holds it leaves a lock
    that `remove_stale_index_locks` knows is ours, even while a git child it started
    outlives it."""
    fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    try:
        os.write(fd, f"{LOCK_OWNER}{os.getpid()}\n".encode())
    finally:
        os.close(fd)


@contextmanager
def _index_locked(dirs: RepoDirs) -> Iterator[None]:
    """Hold the user's ``index.lock`` (git's own protocol) while we commit, so no other
    git changes the index or HEAD meanwhile; a SIGKILL leaves a stale lock that
    ``remove_stale_index_locks`` clears at the next start."""
    lock = dirs.git_dir / "index.lock"
    try:
        _create_lock(lock)
    except FileExistsError:
        raise GitError(
            f"{dirs.root}: {lock} exists (another git is running, or a killed git left "
            "the lock; remove it if no git process runs)"
        ) from None
    except OSError as exc:
        raise GitError(
            f"{dirs.root}: cannot lock the index {lock} ({exc.strerror or exc}); the "
            "repository must be writable"
        ) from None
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


def _commit(dirs: RepoDirs, entries: list[tuple[str, Path]], message: str) -> str | None:
    """Commit HEAD + ``entries`` from a private index; the new tree, or None when
    nothing changed."""
    head = _rev(dirs.root, "HEAD")
    index = _private_index(dirs, "commit")
    env = {"GIT_INDEX_FILE": str(index), **_identity_env(dirs.root)}
    tree: str | None = None
    try:
        if head is not None:
            run_git(["read-tree", head], dirs.root, env=env)
        tails = {rel: _bounded(rel, full) for rel, full in entries}
        whole = [rel for rel, tail in tails.items() if tail is None]
        if whole:
            # -f: files we own and name explicitly, even if a user's ignore pattern
            # (e.g. *.log) matches them.
            run_git(["add", "-f", "--", *whole], dirs.root, env=env)
        for rel, tail in tails.items():
            if tail is not None:
                # --path: the same attributes and filters (eol, LFS) as `git add`.
                blob = run_git(
                    ["hash-object", "-w", f"--path={rel}", "--stdin"], dirs.root, stdin=tail
                )
                info = f"100644,{blob.stdout.strip()},{rel}"
                run_git(["update-index", "--add", "--cacheinfo", info], dirs.root, env=env)
        fault_point("commit:add")
        tree = run_git(["write-tree"], dirs.root, env=env).stdout.strip()
        if head is not None and tree == _rev(dirs.root, f"{head}^{{tree}}"):
            return None
        run_git(["commit", "-q", "-m", message], dirs.root, env=env)
    except GitRunError as exc:
        # A post-commit hook that failed or hung does not undo the commit.
        if tree is None or not _committed(dirs, head, tree):
            raise GitError(f"{dirs.root}: {exc}") from None
    finally:
        _discard(index)
    return tree


def _private_index(dirs: RepoDirs, purpose: str) -> Path:
    return dirs.git_dir / f"{TEMP_INDEX_PREFIX}{os.getpid()}-{purpose}"


def _discard(index: Path) -> None:
    for leftover in (index, index.with_name(index.name + ".lock")):
        leftover.unlink(missing_ok=True)


def _committed(dirs: RepoDirs, old_head: str | None, tree: str) -> bool:
    try:
        new_head = _rev(dirs.root, "HEAD")
        return new_head != old_head and _rev(dirs.root, "HEAD^{tree}") == tree
    except GitError:
        return False


def _sync_user_index(dirs: RepoDirs, rels: list[str]) -> None:
    """Make the user's index agree with the new commit for our paths only (what
    ``git commit -- paths`` does): updated in a copy, then renamed over it. Best effort:
    the commit exists; on failure the user's index stays as it was."""
    user = dirs.git_dir / "index"
    copy = _private_index(dirs, "user")
    try:
        if user.exists():
            shutil.copyfile(user, copy)
        env = {"GIT_INDEX_FILE": str(copy)}
        if run_git(["reset", "-q", "HEAD", "--", *rels], dirs.root, env=env, check=False).ok:
            os.replace(copy, user)
    except (GitError, OSError):
        pass
    finally:
        _discard(copy)
