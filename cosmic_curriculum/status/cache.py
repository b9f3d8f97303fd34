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
miss, and a failure to write it is ignored. ``COSMIC_CURRICULUM_NO_STATUS_CACHE=1``
turns it off. Imports nothing heavy: this is what keeps `status` from importing pydantic.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from cosmic_curriculum import __version__
from cosmic_curriculum.system.fsio import read_regular_bytes
from cosmic_curriculum.workspace.layout import HISTORY_FILE, STATE_FILE, Layout

FORMAT = 1  # bump when the cached facts change shape
DISABLE_ENV = "COSMIC_CURRICULUM_NO_STATUS_CACHE"
PACKAGE_DIR = Path(__file__).resolve().parent


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/cosmic-curriculum/status`` (default ``~/.cache/...``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cosmic-curriculum" / "status"


def _entry_path(workspace: Path) -> Path:
    name = hashlib.blake2b(str(workspace).encode(), digest_size=16).hexdigest()
    return cache_dir() / f"{name}.json"


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


def lookup(workspace: Path, key: str) -> dict[str, Any] | None:
    """The stored facts for ``key``, or None (a miss)."""
    try:
        entry = json.loads(_entry_path(workspace).read_bytes())
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        logs, data = entry["logs"], entry["data"]
        if _log_stats(workspace, list(logs)) != logs or not isinstance(data, dict):
            return None
        return data
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(
    workspace: Path, config_path: Path, key: str, data: dict[str, Any], logs: list[str]
) -> None:
    """Keep ``data`` under ``key``, unless the inputs changed while it was being derived
    (it could then belong to neither version of them)."""
    stats = _log_stats(workspace, logs)
    if inputs_key(workspace, config_path) != key:
        return
    path = _entry_path(workspace)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # what runs where: private
        temp.write_text(json.dumps({"key": key, "logs": stats, "data": data}))
        os.replace(temp, path)
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)
