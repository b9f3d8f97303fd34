"""The commit a decision is owed: ``.cosmic-curriculum.commit`` holds its message from
just before the state says ``committed`` until git has it (or had nothing to commit).

The phase ``committed`` is saved before the commit (the commit carries that state), so the
phase alone cannot tell whether git has the decision; this file can. `status` shows it
and the next `run` makes that commit first, with this message. Imports nothing heavy:
`status` reads it.
"""

from __future__ import annotations

import contextlib
import os
import stat

from cosmic_curriculum.workspace.layout import Layout

MAX_BYTES = 4096  # a commit subject; anything longer is not ours


def mark(layout: Layout, message: str) -> None:
    """Say (atomically) that a commit with ``message`` is owed."""
    from cosmic_curriculum.system.fsio import atomic_write_text  # not on status's path

    atomic_write_text(layout.pending_commit, message + "\n")


def pending(layout: Layout) -> str | None:
    """The owed commit's message, or None. Never follows a link, never blocks on a FIFO,
    reads at most :data:`MAX_BYTES`; a file that is not a regular one still says that a
    commit is owed (its message unknown)."""
    try:
        fd = os.open(layout.pending_commit, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError:
        return "a commit of the last decision"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "a commit of the last decision"
        text = os.read(fd, MAX_BYTES).decode("utf-8", "replace")
    finally:
        os.close(fd)
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first or "a commit of the last decision"


def clear(layout: Layout) -> None:
    """Git has the owed commit (or nothing was left to commit)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(layout.pending_commit)
