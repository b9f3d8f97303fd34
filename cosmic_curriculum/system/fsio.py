"""Crash-safe file writes and strict JSON reads.

Every JSON file the project writes goes through :func:`atomic_write_json`: a temp file in
the same directory, flushed and fsynced, renamed over the target with ``os.replace`` and
the directory fsynced. A kill -9 at any instant leaves either the old or the new file,
never a torn one. Kill -9 can leave the temp file behind, so :func:`clean_stale_temps`
removes them at start.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import time
from pathlib import Path
from typing import Any

from cosmic_curriculum.errors import DamagedFileError, StateError

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


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically; on any error the old file is untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    import secrets  # here, not at the top: `status` reads through this module

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
    fsync_dir(path.parent)


def git_ignored_dir(directory: Path) -> Path:
    """``directory`` (made if missing) with a ``.gitignore`` of ``*`` in it: what a tool
    writes there for itself (a tracker's outbox, event files, a local store) never shows
    as untracked work in the user's repository, whoever made the workspace (a workspace
    not made by `init` has no .gitignore of ours)."""
    directory.mkdir(parents=True, exist_ok=True)
    ignore = directory / ".gitignore"
    if not ignore.is_file():
        with contextlib.suppress(FileExistsError):
            fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write("# written by cosmic-curriculum: nothing here belongs in git\n*\n")
    return directory


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, utf8(text))


def _shown(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def without_surrogates(text: str) -> str:
    """``text`` with each lone surrogate shown escaped, as UTF-8 can hold it: ``\\xff``
    for a byte of a non-UTF-8 file name (Python decodes those to U+DC80..U+DCFF),
    ``\\udXXX`` for any other (JSON's ``"\\ud800"`` escape). Other text is unchanged."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(_shown(ch) if "\ud800" <= ch <= "\udfff" else ch for ch in text)
    return text


def without_surrogates_in(obj: Any) -> Any:
    """A JSON value with :func:`without_surrogates` applied to every string and key."""
    if isinstance(obj, str):
        return without_surrogates(obj)
    if isinstance(obj, dict):
        return {without_surrogates_in(k): without_surrogates_in(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [without_surrogates_in(v) for v in obj]
    return obj


def utf8(text: str) -> bytes:
    """``text`` as UTF-8; a lone surrogate (a non-UTF-8 file name) is shown escaped
    rather than ending the write in a UnicodeEncodeError."""
    return without_surrogates(text).encode("utf-8")


def dumps_json(obj: Any) -> str:
    """JSON as every file of ours holds it. A lone surrogate is never written (JSON can
    escape it, but no reader can write it out as UTF-8 again): it is shown escaped."""
    text = json.dumps(obj, indent=2, sort_keys=False, allow_nan=False) + "\n"
    if "\\ud" in text:  # ensure_ascii writes every surrogate as \udXXX: look closer
        text = json.dumps(without_surrogates_in(obj), indent=2, allow_nan=False) + "\n"
    return text


def atomic_write_json(path: Path, obj: Any) -> None:
    """Serialise ``obj`` first (so a bad value never truncates the file), then write atomically."""
    atomic_write_text(path, dumps_json(obj))


# Bounds of what we parse: Python's int() refuses more than 4300 digits, and nothing we
# store needs a number anywhere near 40 digits.
MAX_NUMBER_CHARS = 40


# JSON forbids a byte order mark; Python's own error suggests a codec. Say what to do.
BOM = "\ufeff"
BOM_FAULT = "starts with a UTF-8 byte order mark (BOM); save it as UTF-8 without a BOM"


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

    if text.startswith(BOM):
        raise JSONValueError(BOM_FAULT)
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


def read_regular_bytes(path: Path) -> bytes:
    """The bytes of a regular file; anything else is an ``OSError`` naming it.

    A FIFO would block the read forever and a device (``/dev/zero``) never ends, so the
    file is opened without blocking and refused unless it is a regular file. Raises
    ``IsADirectoryError`` for a directory.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, device or socket)", str(path))
        return fh.read()


def read_text_file(path: Path) -> str:
    """The UTF-8 text of a regular file (:func:`read_regular_bytes`); raises
    ``UnicodeDecodeError`` for non-UTF-8 bytes."""
    return read_regular_bytes(path).decode("utf-8")


def read_json(path: Path, what: str) -> Any:
    """Read a JSON file, or raise :class:`StateError` naming the file, the fault and the fix.

    ``what`` is a short description used in the message, e.g. ``"curriculum state"``.
    """
    path = Path(path)
    try:
        text = read_text_file(path)
    except FileNotFoundError:
        raise StateError(f"{path}: {what} file not found") from None
    except OSError as exc:
        raise StateError(f"{path}: cannot read {what}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise StateError(f"{path}: {what} is not UTF-8 text") from None
    if not text.strip():
        raise DamagedFileError(path, f"{what} is empty")
    if text.startswith(BOM):
        raise StateError(f"{path}: {what} {BOM_FAULT}")
    try:
        return loads(text)
    except JSONValueError as exc:
        raise DamagedFileError(path, f"{what} is not valid JSON ({exc})") from None


def _proc_start(pid: int) -> float | None:
    """Wall-clock start of ``pid`` from ``/proc`` (None: unknown), or -1.0 when ``pid`` is
    no writer of ours: a kernel thread or a zombie."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
        btime = next(
            int(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
    except (OSError, StopIteration, ValueError):
        return None
    fields = raw[raw.rfind(")") + 2 :].split()  # fields 3.. (the name may hold spaces)
    if fields[0] in ("Z", "X") or int(fields[6]) & 0x00200000:  # zombie, PF_KTHREAD
        return -1.0
    return btime + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def temp_writer_alive(pid: int, written_at: float) -> bool:
    """Whether the process that wrote a temp file at ``written_at`` may still be writing.

    The pid in the name is alive and, where ``/proc`` tells, a user process that started
    before the temp was written (a pid reused later cannot be its writer).
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # alive under another user, or a pid we cannot judge: keep it
    started = _proc_start(pid)
    if started is None:
        return True
    # btime has whole seconds; 2 s of slack only ever keeps a temp, never removes one.
    return 0.0 <= started <= written_at + 2.0


def clean_stale_temps(directory: Path, names: list[str] | None = None) -> list[Path]:
    """Remove temp files left by a killed atomic write in ``directory``.

    Only files matching our own pattern ``.<name>.tmp-<pid>-<hex>`` are touched; ``names``
    limits it further to temps of those target file names. A temp whose writer still
    lives (:func:`temp_writer_alive`) is in the middle of its write and is kept. Returns
    what was removed.
    """
    removed: list[Path] = []
    directory = Path(directory)
    if not directory.is_dir():
        return removed
    for entry in directory.iterdir():
        n = entry.name
        if not (n.startswith(".") and TEMP_MARKER in n and entry.is_file()):
            continue
        target, _, tail = n[1:].partition(TEMP_MARKER)
        if names is not None and target not in names:
            continue
        pid = tail.partition("-")[0]
        with contextlib.suppress(FileNotFoundError):
            if (
                pid.isdigit()
                and int(pid) > 0
                and temp_writer_alive(int(pid), entry.stat().st_mtime)
            ):
                continue
            entry.unlink()
            removed.append(entry)
    return removed
