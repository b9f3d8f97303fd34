"""The tests' one way to run git and to make a throwaway repository.

``git(repo, *args)`` runs git in ``repo`` and returns its stdout without the trailing
newline (leading spaces are kept: they mean something in ``status --porcelain``).
``init_repo(path)`` makes a repository on branch ``main`` with a local identity (CI has no
global one) and, unless ``message`` is None, an initial commit of everything in it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

IDENTITY = {"user.name": "Test User", "user.email": "test@example.invalid"}


def git(repo: Path, *args: str, timeout: float = 60.0) -> str:
    """Run ``git *args`` in ``repo``; stdout without trailing newlines (raises on failure)."""
    try:
        out = subprocess.run(
            ["git", *args], cwd=repo, check=True, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.CalledProcessError as exc:
        raise AssertionError(
            f"git {' '.join(args)} failed in {repo} (exit {exc.returncode}): {exc.stderr.strip()}"
        ) from None
    return out.stdout.rstrip("\n")


def set_identity(repo: Path) -> None:
    """A local author identity and no commit signing (e.g. in a fresh clone)."""
    for key, value in IDENTITY.items():
        git(repo, "config", key, value)
    git(repo, "config", "commit.gpgsign", "false")


def init_repo(path: Path, message: str | None = "init") -> Path:
    """A repository at ``path`` on branch ``main`` with an identity.

    With a ``message``, everything already in ``path`` is committed (a ``README.md`` is
    written first if there is nothing to commit); with ``None`` the repository stays
    without commits.
    """
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    set_identity(path)
    if message is not None:
        if not any(p.name != ".git" for p in path.iterdir()):
            (path / "README.md").write_text("workspace\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", message)
    return path
