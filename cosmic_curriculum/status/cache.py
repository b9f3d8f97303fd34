"""A cache of what `status` derives from the validated state, config and history.

Validating stages.toml and the state with their pydantic models costs `status` about a
quarter of a second of imports and schema building on every call, though the files
change only a few times an hour while a curriculum runs. So `status` keeps its derived
facts (:func:`cosmic_curriculum.status.facts.stored_facts`) in the user's cache directory and
reuses them while nothing they came from has changed: the exact bytes of stages.toml,
the state and the history, the decided attempts' trainer logs (size and mtime), the
working directory (it shapes the commands `status` suggests) and this package's own
files. Anything else — the live run, the in-flight attempt's log — is read every time.

The cache is only ever a shortcut: a missing, unreadable, corrupt or foreign entry is a
miss, and a failure to write it is ignored. It is trusted no further than its directory:
its own two directories (``cosmic-curriculum/status``) must be real directories (no
symbolic link) owned by the user and writable by nobody else, in a base owned by the
user or root, or nothing is read or written there. Entries are opened relative to that
directory without following links, must be regular files of the user's no larger than
``MAX_ENTRY_BYTES``, and carry a MAC keyed with a secret of the user's (``key``, mode
0600, in the same directory): an entry planted by someone else is a miss, and so is one
whose status, stage or attempt is not the state file's (an entry's key is a fingerprint
of files anyone may read, so it alone proves nothing).
``COSMIC_CURRICULUM_NO_STATUS_CACHE=1`` turns it off. Imports nothing heavy: this is what
keeps `status` from importing pydantic.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import stat
from pathlib import Path
from typing import Any

from cosmic_curriculum import __version__
from cosmic_curriculum.system.fsio import read_regular_bytes
from cosmic_curriculum.workspace.layout import HISTORY_FILE, STATE_FILE, Layout

FORMAT = 1  # bump when the cached facts change shape
DISABLE_ENV = "COSMIC_CURRICULUM_NO_STATUS_CACHE"
PACKAGE_DIR = Path(__file__).resolve().parent


MAX_ENTRY_BYTES = 16 << 20  # a curriculum's facts are kilobytes: this bounds a planted file
KEY_FILE = "key"
KEY_BYTES = 32


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/cosmic-curriculum/status`` (default ``~/.cache/...``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cosmic-curriculum" / "status"


def _entry_name(workspace: Path) -> str:
    return hashlib.blake2b(str(workspace).encode(), digest_size=16).hexdigest() + ".json"


def _trusted(fd: int, owners: tuple[int, ...], private: bool = True) -> bool:
    info = os.fstat(fd)
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid in owners
        and not (private and info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))
    )


def open_cache_dir(create: bool) -> int | None:
    """A descriptor of the cache directory, opened one trusted component at a time (never
    through a symbolic link: ``O_NOFOLLOW``); None when it is missing (and not
    ``create``) or any directory on the way is not the user's alone."""
    me = os.getuid()
    path = cache_dir()
    base = path.parent.parent
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
    try:
        if create:
            base.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(os.path.realpath(base), flags)  # the base may be a link the user made
    except OSError:
        return None
    try:
        # The base may be group-writable (a umask of 002 makes ~/.cache so): whoever can
        # write it can only swap our directories for ones of their own or links, which
        # the checks below refuse.
        if not _trusted(fd, (me, 0), private=False):
            return None
        for name in (path.parent.name, path.name):
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o700, dir_fd=fd)
            child = os.open(name, flags | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = child
            if not _trusted(fd, (me,)):
                return None
        result, fd = fd, -1
        return result
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)


def _read_entry(dir_fd: int, name: str, limit: int) -> bytes | None:
    """A regular file of the user's in the cache directory, at most ``limit`` bytes; None
    for anything else (a link, a FIFO, a device, someone else's, too large)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_uid != os.getuid()
            or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            or info.st_size > limit
        ):
            return None
        data = fh.read(limit + 1)
        return data if len(data) <= limit else None


def _write_entry(dir_fd: int, name: str, data: bytes) -> None:
    """``data`` as ``name``: a new temp file (``O_EXCL | O_NOFOLLOW``: never through a
    link) renamed over it inside the directory."""
    import secrets  # only a store needs it

    temp = f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise


def _secret(dir_fd: int, create: bool) -> bytes | None:
    """The user's MAC key in the cache directory (made on the first store)."""
    key = _read_entry(dir_fd, KEY_FILE, KEY_BYTES)
    if key is not None and len(key) == KEY_BYTES:
        return key
    if not create:
        return None
    with contextlib.suppress(OSError):
        _write_entry(dir_fd, KEY_FILE, os.urandom(KEY_BYTES))
    key = _read_entry(dir_fd, KEY_FILE, KEY_BYTES)
    return key if key is not None and len(key) == KEY_BYTES else None


def _mac(secret: bytes, body: bytes) -> str:
    return hashlib.blake2b(body, key=secret, digest_size=32).hexdigest()


def _regular_bytes(path: Path) -> bytes | None:
    """A regular file's bytes; None when it is missing. Anything else (a FIFO, a
    directory, no permission) raises OSError: such a workspace is never cached."""
    try:
        return read_regular_bytes(path)
    except FileNotFoundError:
        return None


def _package_stamp(digest: Any) -> None:
    """Every file of this package by name, size and mtime: new code, new facts."""
    pending = [PACKAGE_DIR]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.name == "__pycache__":
                    continue
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                else:
                    info = entry.stat(follow_symlinks=False)
                    digest.update(f"{entry.path}:{info.st_size}:{info.st_mtime_ns}\n".encode())


def inputs_key(workspace: Path, config_path: Path) -> str | None:
    """The fingerprint of everything the stored facts come from (but the decided logs,
    which :func:`lookup` checks by their recorded stats); None when the workspace must not
    be cached: the cache is off, or the state or history is missing or not a regular file
    (status then takes the validating path, which says what is wrong)."""
    if os.environ.get(DISABLE_ENV, "") not in ("", "0"):
        return None
    digest = hashlib.blake2b(digest_size=32)
    try:
        digest.update(f"{FORMAT}\n{__version__}\n{Path.cwd().resolve()}\n".encode())
        digest.update(f"{workspace}\n{config_path.resolve()}\n".encode())
        _package_stamp(digest)
        for path in (workspace / STATE_FILE, workspace / HISTORY_FILE, config_path):
            data = _regular_bytes(path)
            if data is None and path != config_path:
                return None
            digest.update(b"-" if data is None else hashlib.blake2b(data).digest())
    except OSError:
        return None
    return digest.hexdigest()


def _log_stats(workspace: Path, experiments: list[str]) -> dict[str, list[int]]:
    stats: dict[str, list[int]] = {}
    paths = Layout(workspace)
    for name in experiments:
        try:
            info = os.stat(paths.log(name))
            stats[name] = [info.st_size, info.st_mtime_ns]
        except OSError:
            stats[name] = [-1, -1]
    return stats


def _matches_state(workspace: Path, data: dict[str, Any]) -> bool:
    """The cached headline must be the state file's own (read as plain JSON: no pydantic)."""
    try:
        state = json.loads(read_regular_bytes(workspace / STATE_FILE))
    except (OSError, ValueError):
        return False
    if not isinstance(state, dict):
        return False
    wanted = (state.get("status"), state.get("stage_index"), state.get("attempt"))
    return (data.get("status"), data.get("stage_index"), data.get("attempt")) == wanted


def lookup(workspace: Path, key: str) -> dict[str, Any] | None:
    """The stored facts for ``key``, or None (a miss)."""
    dir_fd = open_cache_dir(create=False)
    if dir_fd is None:
        return None
    try:
        secret = _secret(dir_fd, create=False)
        raw = _read_entry(dir_fd, _entry_name(workspace), MAX_ENTRY_BYTES)
        if secret is None or raw is None:
            return None
        mac, _, body = raw.partition(b"\n")
        if not hmac.compare_digest(mac.decode("ascii", "replace"), _mac(secret, body)):
            return None
        entry = json.loads(body)
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        logs, data = entry["logs"], entry["data"]
        if _log_stats(workspace, list(logs)) != logs or not isinstance(data, dict):
            return None
        return data if _matches_state(workspace, data) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    finally:
        os.close(dir_fd)


def store(
    workspace: Path, config_path: Path, key: str, data: dict[str, Any], logs: list[str]
) -> None:
    """Keep ``data`` under ``key``, unless the inputs changed while it was being derived
    (it could then belong to neither version of them)."""
    stats = _log_stats(workspace, logs)
    if inputs_key(workspace, config_path) != key:
        return
    dir_fd = open_cache_dir(create=True)  # what runs where: private
    if dir_fd is None:
        return
    try:
        secret = _secret(dir_fd, create=True)
        if secret is None:
            return
        body = json.dumps({"key": key, "logs": stats, "data": data}).encode()
        _write_entry(dir_fd, _entry_name(workspace), _mac(secret, body).encode() + b"\n" + body)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
