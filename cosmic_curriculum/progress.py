"""Machine-readable progress lines from the trainer to the orchestrator.

A trainer prints one line per update::

    @progress {"timesteps": 123456, "total": 2000000, "fps": 21000.0, "reward": 0.31}

``timesteps`` and ``total`` are required integers; ``fps``, ``reward`` (mean episode
return of recent episodes) and ``win_rate`` (recent episodes the learner won) are optional
numbers; ``activity`` (optional text) says what a trainer does before or between its
timesteps, e.g. ``"cloning search:2: 12,000 of 40,000 positions labelled"``. Any other
line is ordinary log output. A user's own trainer only has to print
these lines (flushed) to get the orchestrator's progress bar and the learning curves.
"""

from __future__ import annotations

import json
import math
from typing import Any

from cosmic_curriculum.system.fsio import loads

PROGRESS_PREFIX = "@progress "
_OPTIONAL = ("fps", "reward", "win_rate")
ACTIVITY_MAX = 160  # characters of an activity kept (one terminal line)


def format_progress(
    *, timesteps: int, total: int, activity: str | None = None, **fields: float | None
) -> str:
    """One progress line (without newline). Non-finite or missing values are dropped."""
    payload: dict[str, Any] = {"timesteps": int(timesteps), "total": int(total)}
    for key, value in fields.items():
        if value is not None and math.isfinite(float(value)):
            payload[key] = round(float(value), 6)
    if activity:
        payload["activity"] = activity
    return PROGRESS_PREFIX + json.dumps(payload, separators=(",", ":"))


def parse_progress_line(line: str) -> dict[str, Any] | None:
    """The fields of a progress line, or None if the line is not a valid one."""
    line = line.strip()
    if not line.startswith(PROGRESS_PREFIX.strip()):
        return None
    try:
        payload = loads(line[len(PROGRESS_PREFIX.strip()) :])
    except ValueError:  # not JSON, or JSON we refuse (too deep, huge or non-finite numbers)
        return None
    try:
        return check_progress(payload)
    except ValueError:
        return None


def check_progress(payload: Any) -> dict[str, Any]:
    """The fields of a progress record; ValueError when it is not one."""
    if not isinstance(payload, dict):
        raise ValueError(f"a progress record is a JSON object, got {type(payload).__name__}")
    steps, total = payload.get("timesteps"), payload.get("total")
    if type(steps) is not int or type(total) is not int:
        raise ValueError(
            f"a progress record needs whole numbers 'timesteps' and 'total', got "
            f"{steps!r} and {total!r}"
        )
    result: dict[str, Any] = {"timesteps": steps, "total": total}
    for key in _OPTIONAL:
        value = payload.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            result[key] = float(value)
    activity = payload.get("activity")
    if isinstance(activity, str):
        # printed to the terminal: no escape sequences or line breaks from a trainer
        shown = "".join(c for c in activity if c.isprintable()).strip()[:ACTIVITY_MAX]
        if shown:
            result["activity"] = shown
    return result
