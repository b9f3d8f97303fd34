"""Is a run live in this workspace, and how far along is it? (read-only, for `status`)

A run holds `.cosmic-curriculum.lock` (an ``flock``) and writes ``{pid, host,
started_at}`` into it. The file outlives the run, so its JSON alone proves nothing: the
run is live only if that pid is alive on this host and still has the lock file open
(pids are reused). Nothing here takes the lock: a probe that took it, even briefly, could
make a run that starts at that instant fail.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cosmic_curriculum.workspace.layout import LOCK_FILE


def host_name() -> str:
    """This machine's name as the lock records it (what socket.gethostname returns, without
    importing socket: `status` reads the lock on every call)."""
    return os.uname().nodename


def lock_holder(workspace: Path) -> dict[str, Any] | None:
    """``{pid, since}`` of the live run holding the workspace, or None when there is none."""
    path = Path(workspace) / LOCK_FILE
    try:
        info = os.stat(path, follow_symlinks=False)
        with open(path, "rb") as fh:
            raw = fh.read(4096)
    except OSError:
        return None
    try:
        record = json.loads(raw.decode("utf-8", errors="replace") or "null")
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    pid, host = record.get("pid"), record.get("host")
    if type(pid) is not int or pid <= 0 or host != host_name():
        return None
    from cosmic_curriculum.system.processes import holds_file

    if not holds_file(pid, info.st_dev, info.st_ino):
        return None
    since = record.get("started_at")
    return {"pid": pid, "since": since if isinstance(since, str) else None}


PROC_LOCKS = Path("/proc/locks")
PROC_LOCKS_BYTES = 1 << 20  # one line per lock on the machine: a bound, not a limit


def lock_is_held(workspace: Path) -> bool | None:
    """Does any process hold the workspace's ``flock`` (from ``/proc/locks``, which lists
    it by device and inode, without taking it)? None when that cannot be told."""
    try:
        info = os.stat(Path(workspace) / LOCK_FILE, follow_symlinks=False)
    except OSError:
        return False
    where = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        with open(PROC_LOCKS, "rb") as fh:
            text = fh.read(PROC_LOCKS_BYTES).decode("ascii", "replace")
    except OSError:
        return None
    lines = (line.split() for line in text.splitlines())
    return any("FLOCK" in fields and where in fields for fields in lines)


def orphan(workspace: Path, in_flight: dict[str, Any] | None) -> dict[str, Any] | None:
    """``{what, experiment, pgid}`` of what holds the workspace after its run died: a
    recorded trainer group still ours (``what = "trainer"``), the evaluation command of
    an attempt at ``trained`` or another process (``"evaluation"``, ``"process"``, with
    ``pids``); None when nothing does (call it only when no live run holds the lock)."""
    from cosmic_curriculum.system.processes import (
        processes_with_open_file,
        recorded_group_is_ours,
    )

    held = lock_is_held(workspace)
    if held is False:
        return None
    for trainer in (in_flight or {}).get("trainers") or []:
        if recorded_group_is_ours(trainer["pgid"], trainer["pid"], trainer["start"]):
            return {"what": "trainer", "experiment": trainer["experiment"], "pgid": trainer["pgid"]}
    if held is None:
        return None
    if in_flight is not None and in_flight.get("phase") == "trained":
        return {"what": "evaluation", "experiment": in_flight["experiment"], "pgid": None}
    try:
        info = os.stat(Path(workspace) / LOCK_FILE, follow_symlinks=False)
    except OSError:
        return None
    pids = [p for p in processes_with_open_file(info.st_dev, info.st_ino) if p != os.getpid()]
    return {"what": "process", "experiment": None, "pgid": None, "pids": pids}


def eta_seconds(progress: dict[str, Any] | None) -> float | None:
    """Seconds left at the last reported rate (None without a rate)."""
    if not progress:
        return None
    fps = progress.get("fps") or 0.0
    left = max(0, int(progress.get("total", 0)) - int(progress.get("timesteps", 0)))
    return round(left / fps, 1) if fps > 0 else None


def live_run(workspace: Path, in_flight: dict[str, Any] | None) -> dict[str, Any] | None:
    """What `status` says about a live run: {pid, since, phase, timesteps, total, fps,
    eta_seconds, activity} (from the training's last progress line; None when absent)."""
    holder = lock_holder(workspace)
    if holder is None:
        return None
    progress = (in_flight or {}).get("last_progress") if in_flight else None
    training = in_flight is not None and in_flight.get("phase") == "training"
    progress = progress if training else None
    return {
        **holder,
        "phase": in_flight.get("phase") if in_flight else None,
        "timesteps": progress.get("timesteps") if progress else None,
        "total": progress.get("total") if progress else None,
        "fps": progress.get("fps") if progress else None,
        "eta_seconds": eta_seconds(progress),
        "activity": progress.get("activity") if progress else None,
    }


def format_duration(seconds: float) -> str:
    """``2d 03h``, ``3h 05m``, ``4m 10s``, ``12s``: what a multi-day run needs."""
    s = round(seconds)
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {s:02d}s" if minutes else f"{s}s"


def running_for(since: str | None, now: datetime | None = None) -> str | None:
    """How long ago ``since`` (ISO 8601) was, or None when it does not parse."""
    try:
        start = datetime.fromisoformat(since or "")
    except ValueError:
        return None
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    return format_duration(max(0.0, ((now or datetime.now(UTC)) - start).total_seconds()))


def progress_text(progress: dict[str, Any]) -> str:
    """``1,007,616/20,000,000 steps (5%), 21,000 steps/s, ETA 15m 04s`` (one line)."""
    done, total = int(progress.get("timesteps") or 0), int(progress.get("total") or 0)
    text = f"{done:,}/{total:,} steps"
    if total > 0:
        text += f" ({done / total:.0%})"
    if progress.get("activity"):
        text += f", {progress['activity']}"
    if progress.get("fps"):
        text += f", {progress['fps']:,.0f} steps/s"
    eta = progress.get("eta_seconds", eta_seconds(progress))
    if eta is not None:
        text += f", ETA {format_duration(eta)}"
    return text
