"""A trainer's log, `logs/<experiment>.log`: the launch header the curriculum writes before
each launch (``# <utc time> <command>``) and the trainer's ``@progress`` lines.

Read by `status`, the trends and REPORT.md, so nothing heavy is imported here.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from cosmic_curriculum.progress import parse_progress_line
from cosmic_curriculum.system.processes import tail_text

HEADER_BYTES = 4096  # a launch header is one line of the command: this covers any sane one
# How cosmic-curriculum's commands (and any trainer that follows them) say their last word.
ERROR_PREFIX = "error: "
# The Slurm launcher's line for each state change of a job ("# slurm job 42: RUNNING on n3").
SLURM_LINE = "# slurm job "
_HEADER_RE = re.compile(r"# \d{4}-\d\d-\d\dT")  # launch_header's start


def launch_header(now: str, argv: Sequence[str]) -> str:
    """The line written into the log before a launch (``now``: an ISO-8601 UTC time)."""
    return f"# {now} {shlex.join(argv)}\n"


def launched_at(log: Path) -> str | None:
    """The time of the first launch header in the log, or None (no log, not a header)."""
    try:
        with open(log, "rb") as fh:
            first = fh.read(HEADER_BYTES).decode("utf-8", "replace").split("\n", 1)[0]
    except OSError:
        return None
    parts = first.split(" ", 2)
    if len(parts) < 2 or parts[0] != "#":
        return None
    try:
        datetime.fromisoformat(parts[1])
    except ValueError:
        return None
    return parts[1]


def latest_progress(log: Path) -> dict[str, Any] | None:
    """The last progress line in the tail of a trainer's log (what it is doing now)."""
    for line in reversed(tail_text(log, lines=200, max_bytes=65536).splitlines()):
        progress = parse_progress_line(line)
        if progress is not None:
            return progress
    return None


def trainer_error(tail: str) -> str | None:
    """The trainer's own one-line error: the last non-empty line of its log's ``tail``
    when that is ``error: <text>`` (``train-env`` ends so on a fault), else None."""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    if lines and lines[-1].startswith(ERROR_PREFIX):
        return lines[-1][len(ERROR_PREFIX) :].strip() or None
    return None


def slurm_job_line(log: Path) -> str | None:
    """The last Slurm job state line of the log's latest launch ("job 42: RUNNING on n3"),
    else None (an earlier launch's job is not this one's)."""
    for line in reversed(tail_text(log, lines=200, max_bytes=65536).splitlines()):
        if line.startswith(SLURM_LINE):
            return "job " + line[len(SLURM_LINE) :].strip()
        if _HEADER_RE.match(line):
            return None
    return None
