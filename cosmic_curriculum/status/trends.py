"""Per-stage trends for `status --json`: is each retry of a stage doing better?

For every attempt that trained (overrides add no training), one row with its score (from
the state's counts, else its history record), its training progress (the last
``@progress`` line of ``logs/<exp>.log``: timesteps, fps, reward, win rate) and its wall
time (from the log's first launch header ``# <utc time> <command>`` to the decision).
Only what is cheap to read: the state, the history already loaded, a log's first and
last few KB. Imported by `status`, so no numpy, torch or GitPython.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cosmic_curriculum import scoring
from cosmic_curriculum.workspace.trainer_log import latest_progress, launched_at

if TYPE_CHECKING:  # pydantic models: a cached `status` never imports them
    from cosmic_curriculum.workspace.state import LogEntry

PROGRESS_FIELDS = ("timesteps", "total", "fps", "reward", "win_rate")


def _seconds_between(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    try:
        return round((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds())
    except (TypeError, ValueError):  # a hand-edited stamp, or naive against aware
        return None


def _score(counts: dict[str, Any] | None) -> float | None:
    counts = counts or {}
    episodes = counts.get("episodes")
    if not isinstance(episodes, int) or episodes <= 0:
        return None
    wins, draws = (int(counts.get(k, 0) or 0) for k in ("wins_a", "draws"))
    return scoring.score(wins, draws, episodes, if_none=None)


def _progress(log: Path) -> dict[str, Any]:
    try:
        progress = latest_progress(log) or {}
    except OSError:
        progress = {}
    return {key: progress.get(key) for key in PROGRESS_FIELDS}


def attempt_trend(
    experiment: str,
    attempt: int,
    logs: Path,
    counts: dict[str, Any] | None,
    record: dict[str, Any] | None,
    decision: str | None,
    decided_at: str | None,
) -> dict[str, Any]:
    log = logs / f"{experiment}.log"
    started = launched_at(log)
    score = _score(counts) if counts else _score(record)
    return {
        "attempt": attempt,
        "experiment": experiment,
        "decision": decision,
        "score": score,
        "episodes": (counts or record or {}).get("episodes"),
        **_progress(log),
        "started_at": started,
        "decided_at": decided_at,
        "wall_seconds": _seconds_between(started, decided_at),
        "eval_seconds": (record or {}).get("seconds"),
    }


def flight_trend(experiment: str, attempt: int, phase: str, logs: Path) -> dict[str, Any]:
    """The row of the attempt in flight, from its log alone: undecided, so no score and
    no score change."""
    row = attempt_trend(experiment, attempt, logs, None, None, None, None)
    return {**row, "phase": phase, "score_change": None}


def stage_trend(
    entries: list[LogEntry], records: dict[str, dict[str, Any]], logs: Path
) -> list[dict[str, Any]]:
    """The decided attempts of one stage in order, each with ``score_change``: its score
    minus the previous scored attempt's (`status` adds the one in flight after them)."""
    rows = [
        attempt_trend(
            e.experiment,
            e.attempt,
            logs,
            e.eval,
            records.get(e.eval_id or ""),
            e.decision,
            e.decided_at,
        )
        for e in entries
        if e.override is None
    ]
    previous: float | None = None
    for row in rows:
        score = row["score"]
        change = None if score is None or previous is None else score - previous
        row["score_change"] = change
        previous = score if score is not None else previous
    return rows
