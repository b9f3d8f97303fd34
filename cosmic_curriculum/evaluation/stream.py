"""An evaluation command's streamed episodes (docs/ENVIRONMENTS.md): one JSON object per
line, and whether the gate has decided on them. Pure: lines in, counts and verdicts out.

A line is ``{"result": 1 | 0 | -1, "success": true | false, "return": 1.0}``: the
candidate won, drew or lost the episode against the reference, whether it succeeded,
and its return; each key is optional, but the gate's rules need theirs (margin and
sprt ``result``, threshold ``success`` or ``return``) in every line to decide early.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cosmic_curriculum.workspace.config import GateSettings


@dataclass(frozen=True)
class Streamed:
    """One streamed episode, as the gate reads it (None: the line did not say)."""

    result: int | None = None
    success: bool | None = None
    ret: float | None = None


def parse_episode(line: str) -> Streamed:
    """One line of the stream; ValueError with what is wrong and the fix."""
    try:
        data = json.loads(line)
    except ValueError:
        raise ValueError(f"not JSON: {line.strip()[:60]!r}; write one JSON object a line") from None
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    result, success, ret = data.get("result"), data.get("success"), data.get("return")
    if result is not None and (type(result) is not int or result not in (-1, 0, 1)):
        raise ValueError(f"'result' must be 1 (won), 0 (draw) or -1 (lost), got {result!r}")
    if success is not None and not isinstance(success, bool):
        raise ValueError(f"'success' must be true or false, got {success!r}")
    finite = isinstance(ret, int | float) and not isinstance(ret, bool) and math.isfinite(ret)
    if ret is not None and not finite:
        raise ValueError(f"'return' must be a finite number, got {ret!r}")
    return Streamed(result, success, None if ret is None else float(ret))


def counts(episodes: Sequence[Streamed]) -> dict[str, Any]:
    """The record-like counts of the episodes so far (a key only when every episode
    gave what it is counted from)."""
    out: dict[str, Any] = {"episodes": len(episodes)}
    if episodes and all(e.result is not None for e in episodes):
        out["wins_a"] = sum(e.result == 1 for e in episodes)
        out["wins_b"] = sum(e.result == -1 for e in episodes)
        out["draws"] = sum(e.result == 0 for e in episodes)
    if episodes and all(e.success is not None for e in episodes):
        out["successes"] = sum(bool(e.success) for e in episodes)
    if episodes and all(e.ret is not None for e in episodes):
        out["returns"] = [e.ret for e in episodes]
    return out


def decided(settings: GateSettings, episodes: Sequence[Streamed], planned: int) -> bool:
    """Whether the gate has decided on ``episodes`` of the ``planned`` (then the
    evaluator may stop); False while a rule lacks what it reads."""
    from cosmic_curriculum.evaluation.gate import decide

    seen = counts(episodes)
    threshold = "threshold" in settings.rules
    if settings.head_to_head and "wins_a" not in seen:
        return False
    if threshold and ("returns" if settings.measure == "return" else "successes") not in seen:
        return False
    n = seen["episodes"]
    wins = (seen.get("wins_a", 0), seen.get("wins_b", 0), seen.get("draws", n))
    decision = decide(
        settings,
        *wins,
        planned_episodes=planned,
        successes=seen.get("successes"),
        returns=seen.get("returns"),
    )
    return decision.verdict != "continue"
