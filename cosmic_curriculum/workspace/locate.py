"""Which workspace a directory lies in: a command run from `logs/` or `bots/` names the
workspace around it instead of suggesting `init` in the subdirectory.

Read by `status`, so nothing heavy is imported here.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from cosmic_curriculum.workspace.layout import CONFIG_FILE, LOCK_FILE, STATE_FILE


def is_workspace(directory: Path) -> bool:
    """Does ``directory`` hold a curriculum's state, config or lock file?"""
    return any((directory / name).exists() for name in (STATE_FILE, CONFIG_FILE, LOCK_FILE))


def workspace_of(directory: Path, follow_links: bool = True) -> Path | None:
    """The workspace ``directory`` lies in (its real path): itself or the nearest parent
    that is one; None outside any workspace. ``follow_links=False`` walks up the path as
    named, so a symlinked ``logs/`` still lies in the workspace that names it."""
    start = Path(directory).resolve() if follow_links else Path(os.path.abspath(directory))
    for candidate in (start, *start.parents):
        if is_workspace(candidate):
            return candidate.resolve()
    return None


def enclosing_workspace(directory: Path) -> Path | None:
    """The nearest parent of ``directory`` (not itself) that is a workspace, or None."""
    ws = Path(directory).resolve()
    return None if ws.parent == ws else workspace_of(ws.parent)


def import_own_modules(directory: Path) -> None:
    """Let a workspace's own modules import (a game, an env or a wrapper its ``[env]``
    names): the workspace ``directory`` lies in, and each workspace around it (a compare
    arm's parent), go at the END of ``sys.path``, so that no file in a workspace replaces
    a standard or installed module."""
    ws = workspace_of(directory)
    while ws is not None:
        if str(ws) not in sys.path:
            sys.path.append(str(ws))
        ws = enclosing_workspace(ws)


def where_to_run(directory: Path, command: str) -> str:
    """The fix for a ``directory`` that is no workspace: the workspace around it, if any,
    else `init` (``command``: e.g. ``cosmic-curriculum status``)."""
    ws = Path(directory).resolve()
    around = enclosing_workspace(ws)
    if around is not None:
        return (
            f"it lies inside the workspace {around}: run `{command} --workspace "
            f"{shlex.quote(str(around))}` (or run it from there)"
        )
    return f"create one with `cosmic-curriculum init {shlex.quote(str(ws))}`"
