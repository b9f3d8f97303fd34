"""`status` printed once, as JSON, or redrawn in place (`--watch`): what both the fast
path of :mod:`cosmic_curriculum.entry` and the Typer command call."""

from __future__ import annotations

import sys
from pathlib import Path

from cosmic_curriculum.defaults import TIMEOUT_RANGES, WATCH_INTERVAL_SECONDS

MIN_WATCH_INTERVAL, MAX_WATCH_INTERVAL, _ = TIMEOUT_RANGES["interval"]


def show_status(
    workspace: Path = Path("."),
    config: Path | None = None,
    as_json: bool = False,
    watch: bool = False,
    interval: float = WATCH_INTERVAL_SECONDS,
    count: int | None = None,
) -> int:
    """Print `status` once, or (``watch``) redraw it in place until Ctrl-C / ``count``
    frames; the exit code: 0, or 2 when stages.toml is missing or invalid (after showing
    what the state says). Raises CurriculumError (the CLI turns it into one line and an
    exit code)."""
    from cosmic_curriculum.status.facts import status_data

    data = status_data(workspace, config)
    code = 0 if data["config_loaded"] else 2
    if as_json:
        import json

        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return code
    if not watch:
        # drawn without Rich, whose import alone would cost more than the rest of status
        from cosmic_curriculum.status.text import render_status, terminal_width, wants_colour

        out = sys.stdout
        out.write(render_status(data, terminal_width(out), wants_colour(out)))
        return code
    from rich.console import Console

    from cosmic_curriculum.status.watch import watch_status

    watch_status(Console(highlight=False), lambda: status_data(workspace, config), interval, count)
    return 0
