"""How a run tells what it does: the :class:`Reporter` events and the CLI's console view.

The curriculum never prints: it reports through a Reporter (tests record the events).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from cosmic_curriculum.launchers.tmux import PLAIN_OUTPUT_ENV
from cosmic_curriculum.scoring import signed
from cosmic_curriculum.system.terminal import printable
from cosmic_curriculum.workspace.state import Attempt, Candidate, CurriculumState, LogEntry


class Reporter:
    """Events of a run. The default implementation ignores them all."""

    def info(self, message: str) -> None: ...

    def warning(self, message: str) -> None: ...

    def attempt_started(self, attempt: Attempt, argv: list[str], log_path: Path) -> None: ...

    def training_progress(self, attempt: Attempt, progress: dict[str, Any]) -> None: ...

    def training_finished(self, attempt: Attempt) -> None: ...

    # An attempt with `candidates = K > 1` trains its candidates side by side.

    def candidate_started(
        self, attempt: Attempt, candidate: Candidate, argv: list[str], log_path: Path
    ) -> None: ...

    def candidate_progress(
        self, attempt: Attempt, candidate: Candidate, progress: dict[str, Any]
    ) -> None: ...

    def candidate_finished(self, attempt: Attempt, candidate: Candidate) -> None: ...

    def evaluation_started(self, attempt: Attempt, reference: str) -> None: ...

    def evaluation_progress(self, attempt: Attempt, progress: dict[str, Any]) -> None: ...

    def attempt_decided(self, entry: LogEntry) -> None: ...

    def finished(self, state: CurriculumState) -> None: ...


PROGRESS_LINE_SECONDS = 30.0  # plain output: at most one progress line per attempt this often
# Set for `run --detach`: the tmux pane is a terminal, but what it shows is also piped to
# logs/curriculum.log, which must read as plain lines.


class ConsoleReporter(Reporter):
    """The CLI's view of a run: a Rich progress bar per attempt and one-line summaries.

    Output that is not a terminal (a file, a pipe, the detached run's log) gets plain
    lines instead: one per event, never wrapped, and a progress line at most every
    ``progress_seconds`` (timesteps/total, rate, ETA) instead of a bar.

    Every write is guarded: after `tmux kill-session` the terminal is gone and a write
    would raise, which must not stop the curriculum from saving its state.
    """

    def __init__(
        self, console: Any = None, progress_seconds: float = PROGRESS_LINE_SECONDS
    ) -> None:
        from rich.console import Console

        self.console = console or Console(highlight=False)
        self.plain = not self.console.is_terminal or os.environ.get(PLAIN_OUTPUT_ENV) == "1"
        if self.plain:
            self.console.no_color = True
        self.progress_seconds = progress_seconds
        self._last_line = -float("inf")
        self._progress: Any = None
        self._task: Any = None
        self._candidate_tasks: dict[int, Any] = {}  # k -> its bar in self._progress
        self._candidate_lines: dict[int, float] = {}  # k -> when its last plain line went

    def _print(self, *objects: Any, **kw: Any) -> None:
        with contextlib.suppress(OSError, ValueError):
            # soft_wrap: a line longer than the console stays one line (paths stay whole).
            self.console.print(*objects, soft_wrap=self.plain, **kw)

    def _plain_progress(self, text: str, final: bool) -> None:
        now = time.monotonic()
        if final or now - self._last_line >= self.progress_seconds:
            self._last_line = now
            self._print(text, markup=False)

    def info(self, message: str) -> None:
        self._print(printable(message), markup=False)

    def warning(self, message: str) -> None:
        self._print(f"[yellow]warning:[/yellow] {_escape(message)}")

    def attempt_started(self, attempt: Any, argv: list[str], log_path: Path) -> None:
        resume = argv[argv.index("--resume") + 1] if "--resume" in argv else "fresh"
        self._print(
            f"[bold]{_escape(attempt.experiment)}[/bold]: training "
            f"(resume: {_escape(resume)}"
            f", log: {_escape(str(log_path))})"
        )
        self._stop_progress()
        self._last_line = -float("inf")
        if self.plain:
            return
        try:
            self._progress = self._new_progress()
            self._task = self._progress.add_task(
                attempt.experiment, total=attempt.timesteps or None, rate="", reward=""
            )
        except (OSError, ValueError):
            self._progress = None

    def training_progress(self, attempt: Any, progress: dict[str, Any]) -> None:
        if self.plain:
            from cosmic_curriculum.workspace.live import progress_text

            reward = progress.get("reward")
            text = f"{attempt.experiment}: {progress_text(progress)}"
            text += f", reward {signed(reward, 3)}" if reward is not None else ""
            final = progress.get("timesteps", 0) >= progress.get("total", 0) > 0
            self._plain_progress(text, final)
            return
        self._update_bar(self._task, progress)

    def _update_bar(self, task: Any, progress: dict[str, Any]) -> None:
        """Move a training's bar to its ``@progress`` record (gone for good on a dead
        terminal)."""
        if self._progress is None or task is None:
            return
        fps = progress.get("fps")
        reward = progress.get("reward")
        activity = progress.get("activity")  # a trainer's text: no Rich markup of its own
        rate = _escape(activity) if activity else f"{fps:,.0f} steps/s" if fps is not None else ""
        try:
            self._progress.update(
                task,
                completed=progress["timesteps"],
                total=progress.get("total") or None,
                rate=rate,
                reward=f"reward {signed(reward, 3)}" if reward is not None else "",
            )
        except (OSError, ValueError):
            self._progress = None

    def _new_progress(self) -> Any:
        """A started bar display: one line per training (steps, rate, ETA, reward)."""
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[reward]}"),
            console=self.console,
            transient=False,
        )
        progress.start()
        return progress

    def _stop_progress(self) -> None:
        if self._progress is not None:
            with contextlib.suppress(OSError, ValueError):
                self._progress.stop()
            self._progress = None
        self._candidate_tasks = {}

    def candidate_started(
        self, attempt: Any, candidate: Any, argv: list[str], log_path: Path
    ) -> None:
        resume = argv[argv.index("--resume") + 1] if "--resume" in argv else "fresh"
        self._print(
            f"[bold]{_escape(candidate.experiment)}[/bold]: training candidate "
            f"{candidate.k} (seed {candidate.seed}, resume: {_escape(resume)}, "
            f"log: {_escape(str(log_path))})"
        )
        self._candidate_lines[candidate.k] = -float("inf")
        if self.plain:
            return
        try:
            if not self._candidate_tasks:  # the first candidate: one bar per candidate
                self._stop_progress()
                self._progress = self._new_progress()
            if self._progress is not None and candidate.k not in self._candidate_tasks:
                self._candidate_tasks[candidate.k] = self._progress.add_task(
                    candidate.experiment, total=attempt.timesteps or None, rate="", reward=""
                )
        except (OSError, ValueError):
            self._progress = None

    def candidate_progress(self, attempt: Any, candidate: Any, progress: dict[str, Any]) -> None:
        if self.plain:
            from cosmic_curriculum.workspace.live import progress_text

            now = time.monotonic()
            final = progress.get("timesteps", 0) >= progress.get("total", 0) > 0
            last = self._candidate_lines.get(candidate.k, -float("inf"))
            if final or now - last >= self.progress_seconds:
                self._candidate_lines[candidate.k] = now
                self._print(f"{candidate.experiment}: {progress_text(progress)}", markup=False)
            return
        task = self._candidate_tasks.get(candidate.k)
        self._update_bar(task, progress)

    def candidate_finished(self, attempt: Any, candidate: Any) -> None:
        how = "trained" if candidate.phase == "trained" else f"failed: {candidate.error}"
        self._print(printable(f"{candidate.experiment}: {how}"), markup=False)

    def training_finished(self, attempt: Any) -> None:
        self._stop_progress()

    def evaluation_started(self, attempt: Any, reference: str) -> None:
        self._stop_progress()
        self._last_line = -float("inf")
        self._print(f"{_escape(attempt.experiment)}: evaluating against {_escape(reference)}")

    def evaluation_progress(self, attempt: Any, progress: dict[str, Any]) -> None:
        # Built-in evaluator: {"episodes": played, "planned": planned} after each batch.
        if self.plain:
            played, planned = progress.get("episodes", 0), progress.get("planned")
            text = f"{attempt.experiment}: evaluation {played}/{planned or '?'} episodes"
            self._plain_progress(text, planned is not None and played >= planned)
            return
        if self._progress is None:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            try:
                self._progress = Progress(
                    TextColumn(f"{attempt.experiment} episodes"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    console=self.console,
                    transient=True,
                )
                self._progress.start()
                self._task = self._progress.add_task("eval", total=progress.get("planned"))
            except (OSError, ValueError):
                self._progress = None
                return
        with contextlib.suppress(OSError, ValueError):
            self._progress.update(
                self._task, completed=progress.get("episodes", 0), total=progress.get("planned")
            )

    def attempt_decided(self, entry: LogEntry) -> None:
        self._stop_progress()
        mark = "[green]pass[/green]" if entry.decision == "pass" else "[red]fail[/red]"
        detail = entry.summary or ""
        if entry.override:
            detail = f"override {entry.override}" + (f": {entry.reason}" if entry.reason else "")
        self._print(f"{_escape(entry.experiment)}: {mark} — {_escape(detail)}")

    def finished(self, state: Any) -> None:
        self._stop_progress()
        if state.status == "done":
            self._print("[bold green]curriculum done:[/bold green] every stage passed")


def _escape(text: str) -> str:
    """``text`` printed as it is: no Rich markup, no terminal control characters."""
    from rich.markup import escape

    return escape(printable(text))


# --------------------------------------------------------------------------------------
# result tables of `evaluate`, `ladder` and `gate simulate` (Rich is imported when drawn)
