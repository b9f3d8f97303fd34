"""The reporters: the base one ignores events, the console one says each in a line."""

from __future__ import annotations

import io
import sys
import threading
from pathlib import Path

import pytest
from rich.console import Console
from test_report import FAILED, PASSED, S1, S2

from cosmic_curriculum.curriculum.reporter import ConsoleReporter, Reporter
from cosmic_curriculum.workspace.state import Attempt, CurriculumState


def test_the_base_reporter_ignores_every_event() -> None:
    reporter = Reporter()
    flight = Attempt(stage_index=0, attempt=0, experiment=S1)
    assert reporter.info("x") is None and reporter.warning("x") is None
    reporter.attempt_started(flight, [S1], Path("log"))
    reporter.training_progress(flight, {"timesteps": 1, "total": 2})
    reporter.training_finished(flight)
    reporter.evaluation_started(flight, "bots/rookie.json")
    reporter.evaluation_progress(flight, {"episodes": 2, "planned": 4})
    reporter.attempt_decided(PASSED)
    reporter.finished(CurriculumState())


def run_all_events(reporter: ConsoleReporter) -> None:
    flight = Attempt(stage_index=0, attempt=0, experiment=S1, timesteps=400)
    reporter.info("plain [bold]not markup[/bold]")
    reporter.warning("disk [red]almost[/red] full")
    reporter.attempt_started(flight, [S1, "--resume", "checkpoints/x.zip"], Path("logs/a.log"))
    reporter.training_progress(flight, {"timesteps": 200, "total": 400, "fps": 1000.0})
    reporter.training_finished(flight)
    reporter.evaluation_started(flight, "bots/rookie.json")
    reporter.evaluation_progress(flight, {"episodes": 2, "planned": 4})
    reporter.attempt_decided(FAILED)
    reporter.attempt_decided(
        PASSED.model_copy(update={"override": "skip_to_next_stage", "reason": "ok"})
    )
    reporter.finished(CurriculumState(status="done"))


def test_the_console_reporter_says_what_happens_in_one_line_each() -> None:
    out = io.StringIO()
    run_all_events(ConsoleReporter(Console(file=out, width=200, color_system=None)))
    text = out.getvalue()
    assert "plain [bold]not markup[/bold]" in text  # info is printed literally
    assert "warning: disk [red]almost[/red] full" in text
    assert f"{S1}: training (resume: checkpoints/x.zip, log: logs/a.log)" in text
    assert f"{S1}: evaluating against bots/rookie.json" in text
    assert f"{S2}: fail — 2-12-6 / 20, gap +0.50" in text
    assert f"{S1}: pass — override skip_to_next_stage: ok" in text
    assert "curriculum done: every stage passed" in text


class CountedStream(io.StringIO):
    """A stream that counts the writes offered to it (closed, each one raises)."""

    def __init__(self) -> None:
        super().__init__()
        self.tried = 0

    def write(self, text: str) -> int:
        self.tried += 1
        return super().write(text)


def test_the_console_reporter_survives_a_closed_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    live = CountedStream()
    run_all_events(ConsoleReporter(Console(file=live, width=80, color_system=None)))
    out = CountedStream()
    reporter = ConsoleReporter(Console(file=out, width=80, color_system=None))
    assert reporter.plain  # not a terminal: plain lines, no bar
    threads, streams = set(threading.enumerate()), (sys.stdout, sys.stderr)
    out.close()  # like the pane of a killed tmux session: every write raises
    run_all_events(reporter)  # every event returns: the run goes on to save its state
    # Each write an open stream gets was tried and dropped, never sent elsewhere.
    assert live.tried > 0 and out.tried == live.tried
    assert (sys.stdout, sys.stderr) == streams and capsys.readouterr() == ("", "")
    assert set(threading.enumerate()) <= threads


@pytest.mark.parametrize("terminal", [True, False])
def test_a_trainers_activity_is_shown_as_text_not_markup(terminal: bool) -> None:
    """The bar (a terminal) and the plain line both show it literally."""
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None, force_terminal=terminal)
    reporter = ConsoleReporter(console)
    assert reporter.plain is not terminal
    flight = Attempt(stage_index=0, attempt=0, experiment=S1, timesteps=400)
    reporter.attempt_started(flight, [S1], Path("logs/a.log"))
    activity = "cloning [/bold] search:2 [red]: 1,000 of 40,000 positions labelled"
    reporter.training_progress(flight, {"timesteps": 0, "total": 400, "activity": activity})
    reporter.training_finished(flight)
    assert activity in out.getvalue()
