"""The trackers' outbox in the workspace, ``logs/tracking/`` (never committed):

- ``events.jsonl``: the curriculum's events (an attempt's run opened, a decision), each
  with an id, appended and fsynced before any delivery (a kill -9 loses none);
- ``scalars/<experiment>.jsonl``: what a trainer's SB3 logger dumped, one line a dump;
- ``<tracker>.json``: per tracker, how many lines of each file it has delivered and the
  ids of its runs (a resumed run continues them); written only by that tracker's delivery;
- ``curriculum_id``: this workspace's random id, so two workspaces' runs never collide.

A line is complete only with its newline: a torn last line (a kill mid-write) is not
read, and the next append starts on a fresh line.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from cosmic_curriculum.system import fsio

EVENTS = "events.jsonl"
SCALARS = "scalars"


def directory(logs: Path) -> Path:
    return logs / "tracking"


def events_file(logs: Path) -> Path:
    return directory(logs) / EVENTS


def scalars_file(logs: Path, experiment: str) -> Path:
    return directory(logs) / SCALARS / f"{experiment}.jsonl"


def progress_file(logs: Path, tracker: str) -> Path:
    return directory(logs) / f"{tracker}.json"


def curriculum_id(logs: Path) -> str:
    """This workspace's id (made once)."""
    path = directory(logs) / "curriculum_id"
    if path.is_file():
        text = path.read_text(encoding="utf-8").strip()
        if text:
            return text
    path.parent.mkdir(parents=True, exist_ok=True)
    made = secrets.token_hex(6)
    fsio.atomic_write_text(path, made + "\n")
    return made


def read_lines(path: Path, start: int = 0) -> list[dict[str, Any]]:
    """The complete lines of ``path`` from line ``start`` on, parsed (a line that is not
    a JSON object counts as a line but yields nothing)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    lines = data.split(b"\n")[:-1]  # the part after the last newline is not complete
    out: list[dict[str, Any]] = []
    for raw in lines[start:]:
        try:
            item = json.loads(raw)
        except ValueError:
            item = None
        out.append(item if isinstance(item, dict) else {})
    return out


def count_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def append(path: Path, items: list[dict[str, Any]], sync: bool = True) -> None:
    """Append ``items`` as JSON lines in one write (fsynced unless ``sync`` is False)."""
    if not items:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = b"".join(json.dumps(i, sort_keys=True).encode() + b"\n" for i in items)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as fh:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    blob = b"\n" + blob  # after a torn line
        os.write(fd, blob)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def load_progress(logs: Path, tracker: str) -> dict[str, Any]:
    path = progress_file(logs, tracker)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    data.setdefault("offsets", {})
    data.setdefault("runs", {})
    return data


def save_progress(logs: Path, tracker: str, progress: dict[str, Any]) -> None:
    fsio.atomic_write_json(progress_file(logs, tracker), progress)
