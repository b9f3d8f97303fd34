"""Process groups and log files: the primitives of the local launcher.

Stops whole process groups with TERM, a grace period, then KILL. A recorded group is only
ever killed after its leader's start time (field 22 of ``/proc/<pid>/stat``) proves it is
still the process we started: pids are reused. Logs are files (a child writing to a pipe
dies with its parent; one writing to a file lives on): :class:`LogTailer` reads what was
appended, :func:`tail_text` quotes the end for error messages. Nothing here decides.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from cosmic_curriculum.system.terminal import printable

DEFAULT_GRACE_SECONDS = 10.0


# --------------------------------------------------------------------------- /proc helpers


def _read_stat(pid: int) -> list[str] | None:
    """Fields of ``/proc/<pid>/stat`` (1-based field n is index n - 1), or None if gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError, OSError):
        return None
    # The command name (field 2) is in parentheses and may contain spaces or ")".
    close = raw.rfind(")")
    if close < 0:
        return None
    head = raw[: raw.find("(")].strip()
    rest = raw[close + 2 :].split()
    return [head, raw[raw.find("(") + 1 : close], *rest]


def process_start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (stat field 22), None if gone."""
    fields = _read_stat(pid)
    if fields is None or len(fields) < 22:
        return None
    return int(fields[21])


def holds_file(pid: int, device: int, inode: int) -> bool:
    """Does ``pid`` (ours to look at) hold a descriptor of the file (device, inode)?"""
    try:
        fds = os.scandir(f"/proc/{pid}/fd")
    except OSError:  # gone, or not ours to look at
        return False
    with fds:
        for fd in fds:
            try:
                target = os.stat(fd.path)
            except OSError:
                continue
            if (target.st_dev, target.st_ino) == (device, inode):
                return True
    return False


def processes_with_open_file(device: int, inode: int) -> list[int]:
    """Pids of our user's processes that hold a descriptor of the file (device, inode)."""
    pids = (int(e.name) for e in os.scandir("/proc") if e.name.isdigit())
    return sorted(pid for pid in pids if holds_file(pid, device, inode))


def tagged_processes(name: str, value: str) -> list[int]:
    """Our user's live processes whose environment has ``name=value`` (none for "")."""
    if not value:
        return []
    needle = f"{name}={value}".encode()
    uid, me = os.getuid(), os.getpid()
    found: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            environ = Path(entry.path, "environ").read_bytes()
        except OSError:
            continue
        fields = _read_stat(int(entry.name))
        if fields is not None and not _is_zombie(fields) and needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def stop_processes(pids: Sequence[int], grace: float = DEFAULT_GRACE_SECONDS) -> None:
    """TERM each process, wait up to ``grace`` seconds, then KILL what is left."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in pids:
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    fields = _read_stat(pid)
    return fields is not None and not _is_zombie(fields)


def describe_process(pid: int) -> str:
    """``pid 123 (python -m cosmic_curriculum run ...)`` for messages."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return f"pid {pid}"
    command = " ".join(part.decode("utf-8", "replace") for part in raw.split(b"\0") if part)
    if len(command) > 80:
        command = command[:77] + "..."
    return f"pid {pid} ({command})" if command else f"pid {pid}"


def _is_zombie(fields: list[str]) -> bool:
    return len(fields) > 2 and fields[2] in ("Z", "X")


def gone_or_zombie(pid: int) -> bool:
    """Has ``pid`` exited (reaped or not)? A zombie runs nothing and has no cwd."""
    fields = _read_stat(pid)
    return fields is None or _is_zombie(fields)


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is ``pgid``."""
    members: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = _read_stat(int(entry.name))
        if fields is None or len(fields) < 5 or _is_zombie(fields):
            continue
        if int(fields[4]) == pgid:
            members.append(int(entry.name))
    return members


def recorded_group_is_ours(pgid: int, pid: int, start_time: int | None) -> bool:
    """Is the recorded group still the one we started (and not a pid-reuse impostor)?

    While the leader lives, its start time must match. Once the leader is gone, Linux
    never hands its pid out as a new group id while members of the old group remain, so
    any member still carrying ``pgid`` belongs to our old group.
    """
    if start_time is None:
        return False
    fields = _read_stat(pid)
    if fields is not None and not _is_zombie(fields):
        return int(fields[4]) == pgid and process_start_time(pid) == start_time
    return bool(group_members(pgid))


def stop_group(
    pgid: int,
    grace: float = DEFAULT_GRACE_SECONDS,
    reap: Callable[[], object] | None = None,
) -> bool:
    """TERM the whole group, wait up to ``grace`` seconds, then KILL what is left.

    ``reap`` (e.g. ``Popen.poll``) is called while waiting so our own direct child does
    not linger as a zombie. Returns True when the group is gone.
    """
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        if reap:
            reap()
        return True
    if _wait_until_gone(pgid, grace, reap):
        return True
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    return _wait_until_gone(pgid, 5.0, reap)


def _wait_until_gone(pgid: int, seconds: float, reap: Callable[[], object] | None) -> bool:
    """Poll until no live process is left in the group (True) or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while True:
        if reap:
            reap()
        if not group_members(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def stop_recorded_group(
    pgid: int | None,
    pid: int | None,
    start_time: int | None,
    grace: float = DEFAULT_GRACE_SECONDS,
) -> bool:
    """Stop a group recorded by an earlier run if it is verifiably ours.

    Returns True when something was stopped, False when nothing of ours was alive
    (including the case of a reused pid, which is left alone).
    """
    if pgid is None or pid is None:
        return False
    if not recorded_group_is_ours(pgid, pid, start_time):
        return False
    stop_group(pgid, grace)
    return True


# --------------------------------------------------------------------------- log tailing


class LogTailer:
    """Read complete lines appended to a log file since the last call."""

    def __init__(self, path: Path, start: int | None = None) -> None:
        self.path = path
        self.offset = start if start is not None else _size(path)
        self._partial = b""

    def read_lines(self) -> list[str]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        data = self._partial + data
        *lines, self._partial = data.split(b"\n")
        return [line.decode("utf-8", "replace").rstrip("\r") for line in lines]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def tail_text(path: Path, lines: int = 15, max_bytes: int = 16384) -> str:
    """The last ``lines`` lines of a log (for error messages)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            data = fh.read()
    except FileNotFoundError:
        return ""
    text = data.decode("utf-8", "replace").splitlines()
    # Quoted in error lines on a terminal: a program's escapes must not act there.
    return printable("\n".join(text[-lines:]))


def start_problem(program: Path) -> str | None:
    """Why the kernel would refuse to start ``program`` (a path), or None.

    execve reports a missing script interpreter as "No such file or directory" about the
    script, and a text file without ``#!`` as "Exec format error": name the real cause.
    """
    if program.is_dir():
        return "is a directory, not a program"
    if not program.is_file():
        return "does not exist"
    if not os.access(program, os.X_OK):
        return f"is not executable; run `chmod +x {program}`"
    try:
        with open(program, "rb") as fh:
            head = fh.read(256)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if head.startswith(b"\x7fELF"):
        return None
    if not head.startswith(b"#!"):
        return (
            "has no '#!' line naming its interpreter (e.g. #!/usr/bin/env bash) and is not a binary"
        )
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        return "has an empty '#!' line; name its interpreter (e.g. #!/usr/bin/env bash)"
    interpreter = Path(words[0])
    if not interpreter.is_file() or not os.access(interpreter, os.X_OK):
        return f"names an interpreter that does not exist or cannot run: '#!{' '.join(words)}'"
    command = words[1] if interpreter.name == "env" and len(words) > 1 else None
    if command and not command.startswith("-") and shutil.which(command) is None:
        return f"needs '{command}' ('#!{' '.join(words)}'), which is not on PATH"
    return None
