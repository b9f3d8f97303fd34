"""`status --watch`: the status redrawn in place (Rich Live), for a tmux pane beside a run."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from cosmic_curriculum.errors import CurriculumError


def watch_status(
    console: Any,
    facts: Callable[[], dict[str, Any]],
    interval: float,
    count: int | None = None,
) -> None:
    """Redraw ``render_status(facts())`` every ``interval`` seconds until Ctrl-C (or after
    ``count`` frames). A read that fails mid-run (a file being replaced by hand) is shown
    in the frame and retried: a watcher must outlive a glitch of what it watches."""
    from rich.console import Group
    from rich.live import Live
    from rich.text import Text

    from cosmic_curriculum.status.text import printable, render_status

    def frame() -> Any:
        stamp = datetime.now().strftime("%H:%M:%S")
        header = Text(f"{stamp} · every {interval:g}s · Ctrl-C to stop", style="dim")
        try:
            # the plain status drawn at the console's width, its colours parsed back by Rich
            width = console.width if console.is_terminal else None
            text = render_status(facts(), width, colour=True)
            return Group(header, Text.from_ansi(text.rstrip("\n")))
        except CurriculumError as exc:
            return Group(header, Text(printable(f"error: {exc}"), style="bold red"))

    frames = 1
    try:
        with Live(frame(), console=console, auto_refresh=False, transient=False) as live:
            while count is None or frames < count:
                time.sleep(interval)
                live.update(frame(), refresh=True)
                frames += 1
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a watch ends: not an error
