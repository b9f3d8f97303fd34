"""The `cosmic-curriculum` command's entry point, with a fast path for `status`.

`status` is what a user types most (often in a loop beside a multi-day run), so it must
start fast: building the whole Typer app imports Typer, Click and the trainer's option
models. A `status` command line made only of the options below is run here without them;
anything else (`--help`, a typo, a bad value) goes to the Typer app, which prints its
usual help or one-line usage error. Both paths call
:func:`cosmic_curriculum.status.show.show_status`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from cosmic_curriculum.defaults import BLAS_THREADS
from cosmic_curriculum.status.show import MAX_WATCH_INTERVAL, MIN_WATCH_INTERVAL, show_status

_VALUE_OPTIONS = ("--workspace", "--config", "--interval", "--count")
_FLAGS = {"--json": "as_json", "--watch": "watch"}


def _status_options(args: list[str]) -> dict[str, Any] | None:
    """The options of a plain `status` command line, or None to leave it to Typer."""
    options: dict[str, Any] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _FLAGS:
            options[_FLAGS[arg]] = True
            i += 1
            continue
        name, eq, value = arg.partition("=")
        if name not in _VALUE_OPTIONS:
            return None
        if not eq:
            if i + 1 >= len(args) or args[i + 1].startswith("-"):
                return None
            value = args[i + 1]
            i += 1
        i += 1
        try:
            if name == "--interval":
                options["interval"] = float(value)
                # out of range (NaN and inf too): the app says so in one line
                if not MIN_WATCH_INTERVAL <= options["interval"] <= MAX_WATCH_INTERVAL:
                    return None
            elif name == "--count":
                options["count"] = int(value)
                if options["count"] < 1:
                    return None
            else:
                options[name[2:]] = Path(value)
        except ValueError:
            return None
    return options


def single_threaded_blas() -> None:
    """numpy's BLAS to BLAS_THREADS threads, before anything imports numpy; the trainers
    and evaluators this process starts inherit it."""
    for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, str(BLAS_THREADS))


def main() -> None:
    single_threaded_blas()
    args = sys.argv[1:]
    options = _status_options(args[1:]) if args[:1] == ["status"] else None
    if options is None:
        from cosmic_curriculum.cli import app

        app()
        return
    from cosmic_curriculum.errors import CurriculumError

    try:
        code = show_status(**options)
    except CurriculumError as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(exc.exit_code)
    if code:
        sys.exit(code)
