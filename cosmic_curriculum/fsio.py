"""Crash-safe file writes and strict JSON reads.

Every JSON file the project writes goes through :func:`atomic_write_json`: a temp file in
the same directory, flushed and fsynced, renamed over the target with ``os.replace`` and
the directory fsynced. A kill -9 at any instant leaves either the old or the new file,
never a torn one. Kill -9 can leave the temp file behind, so :func:`clean_stale_temps`
removes them at start.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

from cosmic_curriculum.errors import StateError

TEMP_MARKER = ".tmp-"
# Test-only fault injection (crash tests): "point:seconds,..." sleeps at that named point,
# so a test can SIGKILL the process there. Points: the orchestrator's phases and `launch`,
# `launched` (trainer started, its group not yet recorded), `write:<file name>` (temp
# written, not yet renamed), `commit:add` (paths staged, not yet committed). When
# FAULT_LOG_ENV names a file, each point reached while pausing is appended to it first.
PAUSE_ENV = "COSMIC_CURRICULUM_FAULT_PAUSE"
FAULT_LOG_ENV = "COSMIC_CURRICULUM_FAULT_LOG"


def fault_point(name: str) -> None:
    """Sleep here if the test-only ``COSMIC_CURRICULUM_FAULT_PAUSE`` names this point."""
    spec = os.environ.get(PAUSE_ENV)
    if not spec:
        return
    for item in spec.split(","):
        point, _, seconds = item.partition(":")
        # "write:curriculum_state.json:2" → point "write:curriculum_state.json"
        if ":" in seconds:
            extra, _, seconds = seconds.rpartition(":")
            point = f"{point}:{extra}"
        if point.strip() != name:
            continue
        log = os.environ.get(FAULT_LOG_ENV)
        if log:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{name} {os.getpid()}\n")
        time.sleep(float(seconds or 0))


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically; on any error the old file is untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}{TEMP_MARKER}{os.getpid()}-{secrets.token_hex(4)}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        fault_point(f"write:{path.name}")
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        # Name the file the caller wrote, not our temp file.
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def dumps_json(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=False, allow_nan=False) + "\n"


def atomic_write_json(path: Path, obj: Any) -> None:
    """Serialise ``obj`` first (so a bad value never truncates the file), then write atomically."""
    atomic_write_text(path, dumps_json(obj))


# Bounds of what we parse: Python's int() refuses more than 4300 digits, and nothing we
# store needs a number anywhere near 40 digits.
MAX_NUMBER_CHARS = 40


class JSONValueError(ValueError):
    """JSON we refuse: too deep, a number too long or not finite, or a syntax error."""


def loads(text: str, keep_overflow: bool = False) -> Any:
    """``json.loads`` that refuses what would crash or poison a caller later.

    Numbers must be finite (no NaN, Infinity, or 1e400 overflowing to inf) and at most
    :data:`MAX_NUMBER_CHARS` characters; nesting deeper than the interpreter's recursion
    limit is refused instead of raising RecursionError. Raises :class:`JSONValueError`
    with one line that says where. ``keep_overflow`` lets a float that overflows through
    as infinity, for a caller whose own validation names the field (bot files).
    """

    def number(token: str, convert: Any) -> Any:
        shown = token if len(token) <= 12 else token[:12] + "..."
        if len(token) > MAX_NUMBER_CHARS:
            raise JSONValueError(f"number {shown} has {len(token)} characters", token)
        value = convert(token)
        if value in (float("inf"), float("-inf")) and not keep_overflow:
            raise JSONValueError(f"number {shown} is too large (not finite)", token)
        return value

    def constant(token: str) -> Any:
        raise JSONValueError(f"{token}, which is not a finite number", token)

    try:
        return json.loads(
            text,
            parse_int=lambda t: number(t, int),
            parse_float=lambda t: number(t, float),
            parse_constant=constant,
        )
    except JSONValueError as exc:
        message, token = exc.args
        line = text.count("\n", 0, max(0, text.find(token))) + 1
        raise JSONValueError(f"{message} at line {line}") from None
    except json.JSONDecodeError as exc:
        raise JSONValueError(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise JSONValueError("nested too deeply") from None


def read_json(path: Path, what: str) -> Any:
    """Read a JSON file, or raise :class:`StateError` naming the file, the fault and the fix.

    ``what`` is a short description used in the message, e.g. ``"curriculum state"``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StateError(f"{path}: {what} file not found") from None
    except OSError as exc:
        raise StateError(f"{path}: cannot read {what}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise StateError(f"{path}: {what} is not UTF-8 text") from None
    if not text.strip():
        raise StateError(
            f"{path}: {what} is empty; restore the last good copy with "
            f"`git show HEAD:{path.name} > {path.name}`"
        )
    try:
        return loads(text)
    except JSONValueError as exc:
        raise StateError(
            f"{path}: {what} is not valid JSON ({exc}); restore the last good copy with "
            f"`git show HEAD:{path.name} > {path.name}`"
        ) from None


def clean_stale_temps(directory: Path, names: list[str] | None = None) -> list[Path]:
    """Remove temp files left by a killed atomic write in ``directory``.

    Only files matching our own pattern ``.<name>.tmp-*`` are touched; ``names`` limits
    it further to temps of those target file names. Returns what was removed.
    """
    removed: list[Path] = []
    directory = Path(directory)
    if not directory.is_dir():
        return removed
    for entry in directory.iterdir():
        n = entry.name
        if not (n.startswith(".") and TEMP_MARKER in n and entry.is_file()):
            continue
        target = n[1 : n.index(TEMP_MARKER)]
        if names is not None and target not in names:
            continue
        with contextlib.suppress(FileNotFoundError):
            entry.unlink()
            removed.append(entry)
    return removed
