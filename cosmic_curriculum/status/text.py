"""`status` drawn as text: the stage table and the lines under it, without Rich.

`status` is what a user types most, often in a loop beside a run, and importing Rich to
draw one small table took longer than everything else `status` does with a warm cache
(about 60 ms against 80). So the table is laid out here: columns as wide as their widest
cell, the decision column wrapped to fit a terminal (never narrower than
``MIN_DECISION_WIDTH``), nothing wrapped when the output is not a terminal (a log or a
pipe keeps one line per row), and colours as ANSI SGR codes only when they are wanted
(:func:`wants_colour`). `status --watch` hands this text to Rich Live, which parses it.
"""

from __future__ import annotations

import os
import textwrap
import unicodedata
from collections.abc import Sequence
from typing import Any, TextIO

from cosmic_curriculum.reports.review import continued_note, pct, rule_verdicts, threshold_figures
from cosmic_curriculum.system.terminal import printable

MIN_DECISION_WIDTH = 8
HEADERS = ("stage", "experiment (attempt)", "W-L-D/N", "win % c/r", "decision")
_SGR = {
    "bold": "1",
    "dim": "2",
    "italic": "3",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "cyan": "36",
}
_STAGE_STYLES = {"passed": "green", "blocked": "bold red", "current": "yellow"}


def wants_colour(stream: TextIO) -> bool:
    """Colour on a terminal unless ``NO_COLOR`` is set or ``TERM=dumb``; ``FORCE_COLOR``
    forces it (the conventions Rich and most command-line tools follow)."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"


def terminal_width(stream: TextIO) -> int | None:
    """The terminal's width in columns (``COLUMNS`` wins), or None when ``stream`` is not a
    terminal: then nothing is wrapped."""
    isatty = getattr(stream, "isatty", None)
    if not (isatty and isatty()):
        return None
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError):
        return None


def cell_width(text: str) -> int:
    """Columns ``text`` takes on a terminal: East Asian wide and full-width characters take
    two, combining marks none."""
    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in "WF" else 1
    return width


def style(text: str, name: str, colour: bool) -> str:
    """``text`` in the style ``name`` (space-separated words of ``_SGR``) when ``colour``."""
    if not colour or not name or not text:
        return text
    codes = ";".join(_SGR[word] for word in name.split())
    return f"\x1b[{codes}m{text}\x1b[0m"


def _decision(row: dict[str, Any]) -> str:
    decision = str(row["decision"])
    if row["override"]:
        label = "skipped" if row["override"] == "skip_to_next_stage" else row["override"]
        decision += f" ({label}: {row['reason']})" if row["reason"] else f" ({label})"
    elif row.get("reason"):
        decision += f" (forced retry: {row['reason']})"
    if rule_verdicts(row):
        decision += f" ({rule_verdicts(row)})"
    if row.get("continuations"):
        decision += f" ({continued_note(row['continuations'])})"
    if row.get("interval"):
        decision += f"\n{row['interval']}"
    return decision


def _figures(row: dict[str, Any]) -> tuple[str, str]:
    """The counts and rates cells: head-to-head W-L-D/N and win rates, a threshold rule's
    successes/N and rate with its interval and target (both, one per line, when a stage
    has both kinds of rule)."""
    counts: list[str] = []
    rates: list[str] = []
    if "wins_a" in row:
        counts.append(f"{row['wins_a']}-{row['wins_b']}-{row['draws']}/{row['episodes']}")
        rates.append(f"{pct(row['candidate_win_rate'])}/{pct(row['reference_win_rate'])}")
    if row.get("threshold"):
        shown = threshold_figures(row["threshold"])
        if counts and row.get("rules") is None:  # a threshold gate alone: its own figures
            counts, rates = [], []
        counts.append(shown[0])
        rates.append(shown[1])
    return "\n".join(counts) or "–", "\n".join(rates) or "–"


def table_rows(data: dict[str, Any]) -> list[tuple[list[str], list[str]]]:
    """The stage table as rows of cells (a cell may hold several lines) and their styles."""
    rows: list[tuple[list[str], list[str]]] = []
    previous = -1
    for stage in data["stages"]:
        if stage["index"] > previous + 1:  # rows left out of a state pointing far ahead
            gap = f"stages #{previous + 2}-#{stage['index']} not shown"
            rows.append((["…", gap, "", "", ""], ["dim", "dim", "", "", ""]))
        previous = stage["index"]
        label = f"{stage['index'] + 1} {stage['name']}"
        label_style = _STAGE_STYLES.get(stage["status"], "dim")
        if not stage["attempts"]:
            rows.append(([label, "", "", "", stage["status"]], [label_style, "", "", "", "dim"]))
        for k, row in enumerate(stage["attempts"]):
            counts, rates = _figures(row)
            verdict = "green" if row["decision"] == "pass" else "red"
            cells = [label if k == 0 else "", str(row["experiment"]), counts, rates]
            rows.append(([*cells, _decision(row)], [label_style, "", "", "", verdict]))
    return [([printable(cell) for cell in cells], styles) for cells, styles in rows]


def _wrap(text: str, width: int | None) -> list[str]:
    lines = text.split("\n")
    if width is None:
        return lines
    out: list[str] = []
    for line in lines:
        # break at spaces, and inside words only when a word alone is too long
        out += textwrap.wrap(line, width, break_on_hyphens=False) or [""]
    return out


def render_table(
    title: str,
    rows: Sequence[tuple[list[str], list[str]]],
    width: int | None,
    colour: bool,
) -> list[str]:
    """The title, the header, a rule and the rows; the last column is wrapped so that a
    line fits ``width`` (None: no wrapping)."""
    natural = [
        max(
            [cell_width(h)]
            + [cell_width(line) for cells, _ in rows for line in cells[i].split("\n")]
        )
        for i, h in enumerate(HEADERS)
    ]
    widths = list(natural)
    if width is not None:
        # a space before every column and after all but the last (a line has no trailing
        # blanks); the other columns never wrap, so a terminal narrower than them still
        # breaks the line, as it would any long line
        room = width - sum(natural[:-1]) - (2 * len(HEADERS) - 1)
        widths[-1] = max(MIN_DECISION_WIDTH, min(natural[-1], room))
    last = len(HEADERS) - 1

    def line(cells: Sequence[str], styles: Sequence[str]) -> str:
        parts = []
        for i, (cell, name) in enumerate(zip(cells, styles, strict=True)):
            fill = "" if i == last else " " * (widths[i] - cell_width(cell) + 1)
            parts.append(" " + style(cell, name, colour) + fill)
        return "".join(parts).rstrip()

    out = [style(title, "italic", colour)]
    out.append(line(HEADERS, ["bold"] * len(HEADERS)))
    out.append(" " + "─" * (sum(widths) + 2 * len(HEADERS) - 2))
    for cells, styles in rows:
        wrapped = [
            _wrap(cell, widths[i]) if i == last else cell.split("\n")
            for i, cell in enumerate(cells)
        ]
        for k in range(max(len(w) for w in wrapped)):
            out.append(line([w[k] if k < len(w) else "" for w in wrapped], styles))
    return out


def live_lines(live: dict[str, Any], flight: dict[str, Any] | None) -> list[str]:
    """``running: pid 4242 since … (3h 05m)`` and, below, what the attempt is doing."""
    from cosmic_curriculum.workspace.live import progress_text, running_for

    head = f"running: pid {live['pid']}"
    if live["since"]:
        ago = running_for(live["since"])
        head += f" since {live['since']}" + (f" ({ago})" if ago else "")
    lines = [head]
    if flight:
        doing = f"  {flight['experiment']}: {flight['phase']}"
        if live["timesteps"] is not None:
            doing += f", {progress_text(live)}"
        if flight.get("continuations"):
            doing += f", {continued_note(flight['continuations'])}"
        lines.append(doing)
    return lines


def in_flight_line(flight: dict[str, Any]) -> str:
    """``in flight: s1-retry1 — phase training — 40,960/100,000 steps`` (no live run)."""
    text = f"in flight: {flight['experiment']} — phase {flight['phase']}"
    if flight["interrupted"]:
        text += " (interrupted)"
    if flight["error"]:
        text += f" — error: {flight['error']}"
    progress = flight.get("last_progress")
    if progress:
        text += f" — {progress.get('timesteps', 0):,}/{progress.get('total', 0):,} steps"
    if flight.get("continuations"):
        text += f" — {continued_note(flight['continuations'])}"
    return text


def candidate_line(candidate: dict[str, Any]) -> str:
    """``  c2 curric-s1-score-c2: evaluated, score 0.700 (chosen)`` for `status`."""
    text = f"  c{candidate['k']} {candidate['experiment']}: {candidate['phase']}"
    progress = candidate.get("last_progress")
    if candidate["phase"] == "training" and progress:
        text += f", {progress.get('timesteps', 0):,}/{progress.get('total', 0):,} steps"
    if candidate.get("score") is not None:
        text += f", score {candidate['score']:.3f}"
    if candidate.get("continuations"):
        text += f", {continued_note(candidate['continuations'])}"
    if candidate.get("chosen"):
        text += " (chosen; its fresh re-evaluation decides)"
    if candidate.get("error"):
        text += f" — error: {candidate['error']}"
    return text


def render_status(data: dict[str, Any], width: int | None = None, colour: bool = False) -> str:
    """:func:`report.status_data` as text: the stage table, what runs or is in flight, what
    blocks, and the next command; ``width``: wrap the table to it (None: never wrap)."""
    title = printable(f"curriculum: {data['status']}")
    lines = render_table(title, table_rows(data), width, colour)
    lines.append("")
    # (text, style) for every line under the table; what comes from files is made printable
    below: list[tuple[str, str]] = []
    flight = data["in_flight"]
    if data.get("live"):
        head, *rest = live_lines(data["live"], flight)
        below += [(head, "bold cyan"), *((line, "") for line in rest)]
    elif flight:
        below.append((in_flight_line(flight), ""))
    if flight and flight.get("candidates"):
        below += [(candidate_line(c), "") for c in flight["candidates"]]
    if data["blocked_reason"]:
        below.append((f"blocked: {data['blocked_reason']}", "bold red"))
    if data.get("commit_pending"):
        below.append(
            (
                f"commit pending: {data['commit_pending']} is saved on disk but not in "
                "git; the next `run` commits it first",
                "yellow",
            )
        )
    if data["push_pending"]:
        below.append(
            ("push pending: the last push failed; it is retried after the next commit", "yellow")
        )
    below.append((f"next: {data['next']}", "bold"))
    lines += [style(printable(text), name, colour) for text, name in below]
    return "\n".join(lines) + "\n"
