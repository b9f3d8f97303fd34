"""Waiting on other processes in tests: poll a condition, tell a live process from a zombie."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def wait_until(
    pred: Callable[[], Any], timeout: float = 30.0, what: str = "", every: float = 0.05
) -> Any:
    """``pred()``'s first truthy value, polled every ``every`` seconds up to ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what or 'the condition'}")


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper that is not us counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
