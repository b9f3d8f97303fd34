"""The workspace lock, `.cosmic-curriculum.lock`: one writer per workspace."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import time
from pathlib import Path
from types import TracebackType

from cosmic_curriculum.errors import LockError
from cosmic_curriculum.system.clock import utc_now
from cosmic_curriculum.system.fsio import loads
from cosmic_curriculum.workspace.layout import LOCK_FILE
from cosmic_curriculum.workspace.live import host_name


class WorkspaceLock:
    """One run per workspace: an exclusive ``flock`` on `.cosmic-curriculum.lock`.

    ``flock`` (not ``lockf``) because a lockf lock vanishes when *any* descriptor of the
    file closes. The trainer inherits :attr:`fd` (``pass_fds``), so an orphaned trainer
    keeps the workspace locked after the orchestrator dies.
    """

    def __init__(self, workspace: Path) -> None:
        self.path = Path(workspace) / LOCK_FILE
        self.fd: int = -1

    def acquire(self, wait: float = 0.0) -> WorkspaceLock:
        """Take the lock, waiting up to ``wait`` seconds for another holder to let go."""
        fd = self._open()
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.1)
                    continue
                holder = self._describe_holder(fd)
                os.close(fd)
                waited = f" and did not let go within {wait:g}s" if wait > 0 else ""
                raise LockError(
                    f"{self.path.parent}: another cosmic-curriculum process holds this "
                    f"workspace ({holder}){waited}; wait for it, or stop it (and its "
                    "trainer) before starting again"
                ) from None
        info = {"pid": os.getpid(), "host": host_name(), "started_at": utc_now()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        self.fd = fd
        return self

    def _open(self) -> int:
        """The lock file, refused unless it is a plain file of its own: truncating a
        symlink or a hard link would overwrite whatever it points at."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            raise LockError(
                f"{self.path}: is a symbolic link; the workspace lock must be a plain file: "
                f"remove the link (`rm {self.path}`) and re-run"
            ) from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            os.close(fd)
            kind = "a hard link" if stat.S_ISREG(info.st_mode) else "not a regular file"
            raise LockError(
                f"{self.path}: is {kind}; the workspace lock must be a plain file of its "
                f"own: remove it (`rm {self.path}`) and re-run"
            )
        return fd

    def _describe_holder(self, fd: int) -> str:
        """Who holds the lock: the processes that have the file open, else what it says."""
        from cosmic_curriculum.system.processes import describe_process, processes_with_open_file

        info = os.fstat(fd)
        holders = [
            p for p in processes_with_open_file(info.st_dev, info.st_ino) if p != os.getpid()
        ]
        if holders:
            return "held by " + ", ".join(describe_process(p) for p in holders[:3])
        try:
            data = loads(os.pread(fd, 4096, 0).decode() or "{}")
            return (
                f"pid {data['pid']} on {data['host']}, started {data['started_at']}, "
                "or a trainer it started"
            )
        except (ValueError, KeyError, TypeError):
            return "holder unknown"

    def release(self) -> None:
        if self.fd >= 0:
            # Close without LOCK_UN: an explicit unlock would also release the copy a
            # still-running trainer inherited. The file stays: unlinking a flocked file
            # would let a second run lock a fresh inode.
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> WorkspaceLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
