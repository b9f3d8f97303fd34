"""Actions a bot we did not compute answered (a program's, an ONNX model's): the one check
both pass before a game uses them, so the two kinds are refused alike."""

from __future__ import annotations

from typing import Any

import numpy as np

from cosmic_curriculum.arena.rules import ACT_SIZE


def action_fault(actions: Any, n: int) -> str | None:
    """Why ``actions`` cannot be ``n`` games' actions (``"answered ..."``), or None: the
    shape must be ``[n, ACT_SIZE]``, every value a finite number in [-1, 1]."""
    arr = np.asarray(actions)
    if arr.shape != (n, ACT_SIZE):
        return f"answered actions of shape {list(arr.shape)}, expected [{n}, {ACT_SIZE}]"
    if arr.dtype.kind not in "fiu":
        return f"answered actions of type {arr.dtype}, expected numbers"
    values = arr.astype(np.float64)
    finite = np.isfinite(values)
    if not finite.all():
        worst = float(values[~finite].flat[0])
        return f"answered action {worst!r}, which is not a finite number"
    if n and np.abs(values).max() > 1.0:
        worst = float(values.flat[int(np.abs(values).argmax())])
        return f"answered action {worst!r} outside [-1, 1]"
    return None
