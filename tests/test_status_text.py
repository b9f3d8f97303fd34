"""status_text: the `status` table laid out without Rich — widths, wrapping, colours."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cosmic_curriculum.status import text as status_text
from cosmic_curriculum.status.text import cell_width, render_status, render_table, wants_colour

SGR = re.compile(r"\x1b\[[0-9;]*m")


def attempt(experiment: str, decision: str, **extra: Any) -> dict[str, Any]:
    row = {"experiment": experiment, "decision": decision, "override": None, "reason": None}
    return row | extra


def data(*stages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    base = {
        "status": "in_progress",
        "stages": list(stages),
        "in_flight": None,
        "live": None,
        "blocked_reason": None,
        "push_pending": False,
        "next": "`cosmic-curriculum run` to resume",
    }
    return base | extra


def stage(index: int, name: str, status: str, *attempts: dict[str, Any]) -> dict[str, Any]:
    return {"index": index, "name": name, "status": status, "attempts": list(attempts)}


COUNTS = {"wins_a": 10, "wins_b": 6, "draws": 4, "episodes": 20}
RATES = {"candidate_win_rate": 0.5, "reference_win_rate": 0.3}
LONG = "close enough, the reviewer wrote a long reason that needs more than one line"
TWO_STAGES = data(
    stage(0, "score", "passed", attempt("s1", "pass", **COUNTS, **RATES)),
    stage(
        1,
        "defend",
        "current",
        attempt("s2", "fail", **COUNTS, **RATES, interval="gap +0.10 [−0.05, +0.25]"),
        attempt("s2-retry1", "pass", override="skip_to_next_stage", reason=LONG),
    ),
)


@pytest.mark.parametrize(
    ("text", "width"),
    [("abc", 3), ("", 0), ("–…−", 3), ("日本", 4), ("e\u0301", 1), ("ｆｕｌｌ", 8)],
    ids=["ascii", "empty", "dashes", "wide", "combining", "fullwidth"],
)
def test_cell_width_counts_terminal_columns(text: str, width: int) -> None:
    assert cell_width(text) == width


def test_unwrapped_rows_are_one_line_each_and_columns_line_up() -> None:
    lines = render_status(TWO_STAGES).splitlines()
    assert lines[0] == "curriculum: in_progress"
    header = lines[1]
    columns = [header.index(h) for h in status_text.HEADERS]
    assert columns == sorted(columns)
    rows = [line for line in lines if "s2-retry1" in line]
    assert len(rows) == 1 and rows[0].endswith(LONG + ")")  # not wrapped: a log keeps it
    first = next(line for line in lines if line.startswith(" 1 score"))
    cells = ["1 score", "s1", "10-6-4/20", "50%/30%"]
    for head, cell in zip(status_text.HEADERS[:4], cells, strict=True):
        assert first.index(cell) == header.index(head), head
    # the interval goes on its own line under its decision, in the decision column
    below = lines[lines.index(next(line for line in lines if " fail" in line)) + 1]
    assert below.index("gap +0.10") == header.index("decision")
    assert lines[-1] == "next: `cosmic-curriculum run` to resume"


@pytest.mark.parametrize("width", [40, 60, 72, 100, 200])
def test_a_terminal_width_wraps_the_decision_column_only(width: int) -> None:
    lines = render_status(TWO_STAGES, width=width).splitlines()
    table = lines[: lines.index("")]
    decision_at = table[1].index("decision")
    fits = decision_at + status_text.MIN_DECISION_WIDTH + 1
    assert all(cell_width(line) <= max(width, fits) for line in table)
    words = " ".join(line[decision_at:].strip() for line in table[2:] if len(line) > decision_at)
    assert "close enough, the reviewer" in words.replace("  ", " ") or width < 60
    # every word of the long reason survives wrapping, in order
    assert re.sub(r"\s+", "", words).find(re.sub(r"\s+", "", LONG)) >= 0


def test_colours_are_sgr_codes_and_stripping_them_gives_the_plain_text() -> None:
    blocked = TWO_STAGES | {"status": "blocked", "blocked_reason": "2 failed attempts"}
    plain = render_status(blocked, width=100)
    coloured = render_status(blocked, width=100, colour=True)
    assert SGR.sub("", coloured) == plain
    assert "\x1b[1;31mblocked: 2 failed attempts\x1b[0m" in coloured
    assert "\x1b[32m1 score\x1b[0m" in coloured and "\x1b[31mfail\x1b[0m" in coloured
    assert "\x1b[" not in plain


def test_rows_left_out_and_stages_without_attempts_are_shown() -> None:
    far = data(stage(0, "a", "passed", attempt("a1", "pass")), stage(5, "f", "current"))
    text = render_status(far)
    assert "stages #2-#5 not shown" in text
    row = next(line for line in text.splitlines() if line.startswith(" 6 f"))
    assert row.split() == ["6", "f", "current"]
    assert "–" in next(line for line in text.splitlines() if " a1 " in line)  # no counts


def test_live_flight_candidates_and_push_lines() -> None:
    flight = {
        "experiment": "s2-retry1",
        "phase": "training",
        "interrupted": True,
        "error": "trainer exited 1",
        "last_progress": {"timesteps": 40960, "total": 100000},
        "candidates": [
            {"k": 1, "experiment": "s2-c1", "phase": "evaluated", "score": 0.7, "chosen": True}
        ],
    }
    text = render_status(TWO_STAGES | {"in_flight": flight, "push_pending": True})
    assert "in flight: s2-retry1 — phase training (interrupted) — error: trainer exited 1" in text
    assert "40,960/100,000 steps" in text
    assert "  c1 s2-c1: evaluated, score 0.700 (chosen; its fresh re-evaluation decides)" in text
    assert "push pending:" in text
    live = {"pid": 4242, "since": None, "timesteps": None}
    running = render_status(TWO_STAGES | {"in_flight": flight, "live": live})
    assert "running: pid 4242\n  s2-retry1: training\n" in running
    assert "in flight:" not in running


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "env", "expected"),
    [
        (Tty(), {}, True),
        (io.StringIO(), {}, False),
        (Tty(), {"NO_COLOR": "1"}, False),
        (Tty(), {"TERM": "dumb"}, False),
        (io.StringIO(), {"FORCE_COLOR": "1"}, True),
        (Tty(), {"NO_COLOR": "1", "FORCE_COLOR": "1"}, False),
    ],
    ids=["tty", "pipe", "no-color", "dumb", "forced", "no-color-wins"],
)
def test_colour_follows_the_terminal_and_the_usual_variables(
    stream: io.StringIO, env: dict[str, str], expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert wants_colour(stream) is expected


def test_terminal_width_is_none_for_a_pipe_and_columns_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "57")
    assert status_text.terminal_width(io.StringIO()) is None
    assert status_text.terminal_width(Tty()) == 57


def test_a_header_wider_than_every_cell_sets_the_width() -> None:
    lines = render_table("t", [(["1 a", "x", "", "", "pass"], [""] * 5)], None, False)
    assert lines[1].split("  ")[0].strip() == "stage"
    assert lines[3].index("x") == lines[1].index("experiment (attempt)")


def test_status_on_a_real_terminal_wraps_and_colours(tmp_path: Path) -> None:
    """The command in a pseudo-terminal of 72 columns: the table is wrapped to fit and
    coloured; piped, the same command writes plain, unwrapped lines."""
    import pty

    from fakes.workspace import make_workspace

    from cosmic_curriculum.workspace.layout import STATE_FILE
    from cosmic_curriculum.workspace.state import CurriculumState, LogEntry
    from cosmic_curriculum.workspace.state_file import save_state

    ws = make_workspace(tmp_path / "ws", git_repo=False)
    skipped = LogEntry(
        stage_index=0,
        experiment="curric-s1-score",
        attempt=0,
        decision="pass",
        override="skip_to_next_stage",
        reason=LONG,
    )
    save_state(ws / STATE_FILE, CurriculumState(stage_index=1, log=[skipped]))
    cmd = [sys.executable, "-m", "cosmic_curriculum", "status", "--workspace", str(ws)]
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env |= {"COLUMNS": "72", "TERM": "xterm"}
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=secondary, stderr=secondary, env=env)
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the child closed its side
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(primary)
    assert proc.wait(timeout=60) == 0
    shown = b"".join(chunks).decode().replace("\r\n", "\n")
    assert "\x1b[" in shown
    lines = SGR.sub("", shown).splitlines()
    table = lines[: lines.index("")]
    assert len(table) > 6 and all(cell_width(line) <= 72 for line in table)  # wrapped
    piped = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    assert "\x1b[" not in piped.stdout and "next:" in piped.stdout
    assert any(line.endswith(LONG + ")") for line in piped.stdout.splitlines())


def test_control_characters_from_files_are_shown_escaped_never_sent() -> None:
    # a workspace pulled from someone else: its reason, error and blocked reason must not
    # clear the screen, ring the bell or retitle the terminal of whoever runs status
    hostile = "\x1b[2J\x1b]0;owned\x07"
    flight = {"experiment": "s2", "phase": "training", "interrupted": False, "error": hostile}
    tampered = data(
        stage(0, "score", "passed", attempt("s1", "pass", override="force_retry", reason=hostile)),
        in_flight=flight,
        blocked_reason=hostile,
        next=f"run {hostile}",
    )
    for colour in (False, True):
        text = SGR.sub("", render_status(tampered, width=80, colour=colour))
        assert not any(ch in text for ch in "\x1b\x07")
        assert text.count("\\x1b[2J\\x1b]0;owned\\x07") >= 3  # table, error, blocked, next
    assert status_text.printable("日本 é\nok") == "日本 é\nok"


def test_a_slurm_job_and_its_state_are_shown_for_the_flight_and_each_candidate() -> None:
    flight = {
        "experiment": "s2",
        "phase": "training",
        "interrupted": False,
        "error": None,
        "job": "job 42: PENDING (Resources)",
        "candidates": [
            {"k": 1, "experiment": "s2-c1", "phase": "training", "job": "job 43: RUNNING on n3"}
        ],
    }
    text = render_status(TWO_STAGES | {"in_flight": flight})
    assert "in flight: s2 — phase training — Slurm job 42: PENDING (Resources)" in text
    assert "  c1 s2-c1: training, Slurm job 43: RUNNING on n3" in text
    live = {"pid": 4242, "since": None, "timesteps": None}
    running = render_status(TWO_STAGES | {"in_flight": flight, "live": live})
    assert "  s2: training, Slurm job 42: PENDING (Resources)\n" in running
