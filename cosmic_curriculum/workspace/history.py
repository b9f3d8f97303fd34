"""`eval_history.json`: every evaluation ever run, as a JSON list of records.

The seed format is a plain list of objects with at least ``wins_a`` (candidate),
``wins_b`` (reference), ``draws`` and ``episodes`` (a threshold gate's record may have
``successes`` or ``returns`` instead of the three head-to-head counts); records we
write add an ``id`` and ``created_at`` (and much more, see docs/ARCHITECTURE.md).
Unknown keys are kept as they are. Every write is atomic, so a crash leaves the old or
the new list, never a torn one.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cosmic_curriculum.errors import DamagedFileError, EvaluationError, StateError
from cosmic_curriculum.system.clock import utc_now
from cosmic_curriculum.system.fsio import atomic_write_json, read_json, without_surrogates_in

_HEAD_TO_HEAD = ("wins_a", "wins_b", "draws")


def new_record_id() -> str:
    """Sortable by time, unique without coordination."""
    import secrets  # here, not at the top: `status` reads through this module

    return f"ev-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"


def _count(record: dict[str, Any], key: str, where: str, fix: str = "") -> None:
    value = record.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise StateError(f"{where}: '{key}' must be a non-negative integer, got {value!r}{fix}")


def validate_record(record: Any, where: str) -> None:
    """Raise if ``record`` lacks the keys a gate reads or has impossible counts.

    Every record has ``episodes``; a head-to-head record ``wins_a``, ``wins_b`` and
    ``draws`` adding up to it; a record of a task without an opponent (a threshold
    gate's) may have ``successes`` or ``returns`` instead of those three."""
    if not isinstance(record, dict):
        raise StateError(f"{where}: expected an object, got {type(record).__name__}")
    present = [k for k in _HEAD_TO_HEAD if k in record]
    for key in _HEAD_TO_HEAD if present else ():
        missing = (
            ""
            if key in record
            else (
                "; a head-to-head record has all of wins_a, wins_b and draws (a threshold "
                "gate's may have none, with successes or returns)"
            )
        )
        _count(record, key, where, missing)
    _count(record, "episodes", where)
    if not present and not ("successes" in record or "returns" in record):
        raise StateError(
            f"{where}: 'wins_a' is missing; write wins_a, wins_b and draws (head-to-head), "
            "or successes or returns for a threshold gate (docs/ENVIRONMENTS.md)"
        )
    if present and record["wins_a"] + record["wins_b"] + record["draws"] != record["episodes"]:
        raise StateError(
            f"{where}: wins_a + wins_b + draws = "
            f"{record['wins_a'] + record['wins_b'] + record['draws']} but episodes = "
            f"{record['episodes']}"
        )
    _validate_threshold_keys(record, where)


def _validate_threshold_keys(record: dict[str, Any], where: str) -> None:
    """The threshold gate's inputs, when a record carries them (docs/GATES.md)."""
    episodes = record["episodes"]
    if "successes" in record:
        value = record["successes"]
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= episodes:
            raise StateError(
                f"{where}: 'successes' must be a whole number in [0, episodes = {episodes}], "
                f"got {value!r}"
            )
    if "returns" in record:
        value = record["returns"]
        if not isinstance(value, list) or len(value) != episodes:
            got = f"{len(value)} values" if isinstance(value, list) else repr(value)
            raise StateError(
                f"{where}: 'returns' must be a list of one return per episode "
                f"({episodes}), got {got}"
            )
        for r in value:
            if not isinstance(r, int | float) or isinstance(r, bool) or not math.isfinite(r):
                raise StateError(f"{where}: 'returns' must hold finite numbers, got {r!r}")


def load(path: Path) -> list[dict[str, Any]]:
    """All records; a missing file is an empty history, a corrupt one is an error."""
    path = Path(path)
    if not path.exists():
        return []
    data = read_json(path, "evaluation history")
    if not isinstance(data, list):
        raise DamagedFileError(
            path, f"evaluation history must be a JSON list of records, got {type(data).__name__}"
        )
    for i, record in enumerate(data):
        validate_record(record, f"{path}: record {i}")
    return data


def append_record(path: Path, record: dict[str, Any]) -> dict[str, Any]:
    """Append ``record`` (after giving it an id and timestamp) and return the stored copy."""
    validate_record(record, "new evaluation record")
    records = load(path)
    # A non-UTF-8 file name is stored as text UTF-8 can hold (``\xff`` shown escaped):
    # a lone surrogate would break every reader that writes the record out again.
    stored: dict[str, Any] = without_surrogates_in(dict(record))
    stored.setdefault("id", new_record_id())
    stored.setdefault("created_at", utc_now())
    records.append(stored)
    atomic_write_json(Path(path), records)
    return stored


def find(path: Path, record_id: str) -> dict[str, Any] | None:
    for record in load(path):
        if record.get("id") == record_id:
            return record
    return None


def adopt_new_records(path: Path, before: int) -> dict[str, Any]:
    """The one record an external evaluation command appended after ``before`` records.

    It gains an ``id`` (and ``created_at``) if it has none, so the state can point at it.
    """
    records = load(path)
    added = len(records) - before
    if added != 1:
        raise EvaluationError(
            f"{path}: the evaluation command must append exactly one record, it appended "
            f"{added}; check evaluation_command in stages.toml"
        )
    record = records[-1]
    if "id" not in record or "created_at" not in record:
        record.setdefault("id", new_record_id())
        record.setdefault("created_at", utc_now())
        atomic_write_json(Path(path), records)
    return record
