"""Output files the user names on the command line (`--out`, `--json`, a ladder's files):
their checks before any work, and their writes.

Such a path may be a regular file, a missing one, a device, a FIFO or a symlink. A regular
file (or a new one) is replaced atomically, keeping its mode; anything else is written
directly: renaming a temp file over `/dev/null` would turn the device into a plain file. A
symlink is followed, as the shell's `>` does, unless ``fence`` says the link and its target
lie in different places (`workspace.outputs` passes the workspace they lie in: no write
through a link out of, or into, a workspace). No directory is ever created: a missing one
is most likely a typo.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

from cosmic_curriculum.errors import ConfigError, CurriculumError
from cosmic_curriculum.system.fsio import TEMP_MARKER, fsync_dir

# Whatever a caller's fence returns for a path: equal for paths of the same place.
Fence = Callable[[Path], object]


def _kind(mode: int) -> str:
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "FIFO" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode) else "file"


NOT_PROC, OTHER_PROC = -2, -1  # what _through_proc says besides a descriptor of ours


def _through_proc(path: Path) -> int:
    """Whether ``path`` reaches its file through ``/proc`` (``/dev/stdout``, ``/dev/fd/N``):
    such links name an open descriptor, written in place, never resolved to a path. One
    of this process's own descriptors is returned as its number (written as it is open:
    a `>>` stdout keeps appending); else :data:`OTHER_PROC`, or :data:`NOT_PROC`."""
    current = Path(os.path.abspath(path))
    own = (f"/proc/{os.getpid()}/fd", f"/proc/{os.getpid()}/task/{threading.get_native_id()}/fd")
    for _ in range(40):  # the kernel's own bound on symlink hops
        parent = os.path.realpath(current.parent)
        if parent in own and current.name.isdigit():
            return int(current.name)
        if parent == "/proc" or parent.startswith("/proc/"):
            return OTHER_PROC
        if not current.is_symlink():
            return NOT_PROC
        current = Path(parent) / os.readlink(current)
    return NOT_PROC


def _fenced(path: Path, option: str, fence: Fence | None) -> None:
    """Refuse ``path`` when a symlink on its way (the file's or a directory's) leads to
    another place than the one it is named in."""
    if fence is None or _through_proc(path) != NOT_PROC:
        return
    named = Path(os.path.abspath(path))
    target = Path(os.path.realpath(path))
    if target != named and fence(named.parent) != fence(target.parent):
        raise ConfigError(
            f"{option} {path}: leads through a symbolic link to {target}, across a "
            "workspace's border; name a path in the same workspace (or outside any)"
        )


def check_output_file(path: Path, option: str, fence: Fence | None = None) -> Path:
    """``path`` if it can be written (:func:`write_output`); else :class:`ConfigError`
    (exit 2), one line naming ``option``, the path, what is wrong and the fix. Checked
    before any work, so a typo never costs a long evaluation or ends in a traceback after
    it."""
    path = Path(path)
    try:
        info: os.stat_result | None = os.stat(path)  # through symlinks: what is written
    except FileNotFoundError:
        info = None
    except NotADirectoryError:
        raise ConfigError(
            f"{option} {path}: a parent is not a directory; choose another path"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{option} {path}: {exc.strerror}; choose another path") from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise ConfigError(f"{option} {path}: is a directory; name a file inside it instead")
    if info is not None and stat.S_ISSOCK(info.st_mode):
        raise ConfigError(f"{option} {path}: is a socket, not a file; choose another path")
    _fenced(path, option, fence)
    if info is not None and not stat.S_ISREG(info.st_mode):  # a device or FIFO: in place
        if not os.access(path, os.W_OK):
            raise ConfigError(f"{option} {path}: not writable; choose a path you can write to")
        return path
    real = Path(os.path.realpath(path)) if path.is_symlink() else path
    parent = real.parent
    if not parent.exists():
        raise ConfigError(
            f"{option} {path}: directory {parent} does not exist; create it or choose another"
        )
    if not parent.is_dir():
        raise ConfigError(f"{option} {path}: {parent} is not a directory; choose another path")
    if not os.access(parent, os.W_OK | os.X_OK) or (
        info is not None and not os.access(real, os.W_OK)
    ):
        raise ConfigError(f"{option} {path}: not writable; choose a path you can write to")
    return path


def _write_in_place(path: Path, data: bytes) -> None:
    """Write ``data`` to a device, FIFO or descriptor link as the shell's ``>`` would.
    A FIFO without a reader is an error (ENXIO), not a wait forever."""
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_TRUNC | os.O_CLOEXEC)
    try:
        os.set_blocking(fd, True)  # a reader that is slow is waited for
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_output(path: Path, data: bytes, option: str, fence: Fence | None = None) -> None:
    """Write ``data`` to an output the user named (the module says how). A target
    that cannot take it is a :class:`ConfigError` (:func:`check_output_file`); a write
    that fails (a full disk, ``/dev/full``, a FIFO whose reader left) a
    :class:`CurriculumError` naming ``option``, the path and the cause."""
    path = Path(path)
    check_output_file(path, option, fence)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    try:
        proc = _through_proc(path) if info is not None else NOT_PROC
        if proc >= 0:
            _write_all(proc, data)  # our own descriptor: where and how it is open
            return
        if info is not None and (proc == OTHER_PROC or not stat.S_ISREG(info.st_mode)):
            _write_in_place(path, data)
            return
        real = Path(os.path.realpath(path)) if path.is_symlink() else path
        _atomic_replace(real, data, None if info is None else stat.S_IMODE(info.st_mode))
    except OSError as exc:
        nobody = exc.errno == errno.ENXIO
        cause = "a FIFO that nobody reads" if nobody else exc.strerror or str(exc)
        raise CurriculumError(
            f"{option} {path}: could not write it ({cause}); nothing was written there"
            if info is None or stat.S_ISREG(info.st_mode)
            else f"{option} {path}: could not write to this {_kind(info.st_mode)} ({cause})"
        ) from None


def _atomic_replace(path: Path, data: bytes, mode: int | None) -> None:
    """:func:`atomic_write_bytes` for a user's file: the parent must exist (never
    created), the temp is created exclusively (never through a planted link) and takes
    the replaced file's mode (a private file stays private)."""
    import secrets

    tmp = path.with_name(f".{path.name}{TEMP_MARKER}{os.getpid()}-{secrets.token_hex(4)}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o666 if mode is None else mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)


def check_output_dir(path: Path, option: str) -> Path:
    """``path`` if it is (or can be created as) a writable directory; else a one-line
    :class:`ConfigError` naming ``option``. A missing directory is fine if its parent
    exists (it is created on write); a missing parent is most likely a typo."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{option} {path}: is a file, not a directory; choose a directory")
    if path.is_dir():
        if not os.access(path, os.W_OK | os.X_OK):
            raise ConfigError(f"{option} {path}: not writable; choose a directory you can write to")
        return path
    check_output_file(path, option)  # its parent must exist and take a new entry
    return path
