"""REPORT.md at the workspace root (committed after every decision) and `report`'s HTML.

Both are rendered from one list of blocks built from :func:`summary.summarise`, so the
page a browser shows is the file a git host shows. REPORT.md is plain GitHub-flavoured
Markdown whose pictures are PNGs committed in ``logs/report/`` and linked relatively (it
renders on any git host); the HTML inlines them as data URIs (one self-contained file).
The pictures are overwritten in place. A picture that cannot be drawn is a warning:
plotting never costs a run.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cosmic_curriculum.defaults import COMPARE_DIR
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.reports import md_text
from cosmic_curriculum.reports.summary import (
    FORGETTING_COLUMNS,
    Rung,
    Summary,
    elo_text,
    summarise,
)
from cosmic_curriculum.scoring import signed
from cosmic_curriculum.system import fsio
from cosmic_curriculum.workspace import history
from cosmic_curriculum.workspace.config import CurriculumConfig
from cosmic_curriculum.workspace.config_file import load_config
from cosmic_curriculum.workspace.layout import Layout
from cosmic_curriculum.workspace.locate import is_workspace, where_to_run
from cosmic_curriculum.workspace.lost_files import check_config_not_lost
from cosmic_curriculum.workspace.state import CurriculumState
from cosmic_curriculum.workspace.state_file import load_state

if TYPE_CHECKING:
    from cosmic_curriculum.curriculum.context import Run

COLUMNS = (
    "stage",
    "experiment",
    "attempt",
    "W-L-D / N",
    "score",
    "gap ± 95%",
    "Elo ± 95%",
    "decision",
    "override / reason",
    "wall time",
    "timesteps",
)
THRESHOLD_COLUMN = "threshold (95%) vs target"
FORGETTING_LEGEND = (
    'against = "all": each candidate that passed its reference also played every earlier '
    "stage's passing bot, oldest first, and failed on a clear regression against any "
    "(the gate's β shared by the comparisons; it stops at the first regression). W-L-D: "
    "candidate wins, earlier bot wins, draws."
)
PICTURES = {"curves.png": "learning curves", "ladder.png": "Elo ladder"}


@dataclass
class Block:
    kind: str  # "h1" | "h2" | "p" | "code" | "table" | "img"
    text: str = ""
    rows: list[list[str]] | None = None
    path: str = ""  # an image, relative to the workspace root


def blocks(layout: Layout, data: Summary) -> list[Block]:
    out = [Block("h1", f"Curriculum report: {data.status.replace('_', ' ')}")]
    out += [Block("h2", "Now"), Block("p", data.now)]
    out += [Block("code", command) for command in data.commands]
    # The threshold column only when a stage has that rule: arena reports stay as they were.
    threshold = any(r.threshold for r in data.rows)
    # What comes from files (names, reasons, labels) goes in through md_text: inert text.
    rows = [
        [
            md_text.text(r.stage),
            md_text.code(r.experiment) if r.experiment else "",
            str(r.attempt) if r.experiment else "",
            *([md_text.text(r.threshold or "–") if r.experiment else ""] if threshold else []),
            r.counts if r.experiment else "",
            r.score if r.experiment else "",
            r.gap if r.experiment else "",
            r.elo if r.experiment else "",
            md_text.text(r.decision),
            md_text.text(r.note),
            r.wall if r.experiment else "",
            r.timesteps if r.experiment else "",
        ]
        for r in data.rows
    ]
    head = list(COLUMNS)
    if threshold:
        head.insert(3, THRESHOLD_COLUMN)
    out += [Block("h2", "Stages"), Block("table", rows=[head, *rows])]
    legend = (
        "W-L-D: candidate wins, reference wins, draws. gap: reference − candidate win "
        "rate (the gate fails a large positive gap). Elo: candidate over its reference."
    )
    if threshold:
        legend += (
            " threshold: the candidate's successes (or mean return) over the episodes "
            "played, its 95% interval and the target; a stage gated by the threshold rule "
            "alone shows no head-to-head figures."
        )
    out.append(Block("p", legend))
    if data.forgetting:  # against = "all"
        out += [Block("h2", "Against earlier stages")]
        out.append(Block("table", rows=[list(FORGETTING_COLUMNS), *data.forgetting]))
        out.append(Block("p", FORGETTING_LEGEND))
    if data.study:  # `cosmic-curriculum compare` has written its study
        out += [Block("h2", "Does the curriculum pay? (`compare`)")]
        where = f"The study: {md_text.code(COMPARE_DIR + '/REPORT.md')}. Its verdict:"
        out.append(Block("p", " ".join([where, *(md_text.text(v) for v in data.study)])))
    ladder_rows = [
        [md_text.code(r.bot), md_text.text(r.stage), _ladder_elo(r), _err(r)] for r in data.ladder
    ]
    out += [Block("h2", "Elo ladder of the passing bots")]
    out.append(Block("table", rows=[["bot", "stage", "Elo", "± 95%"], *ladder_rows]))
    note = "Chained from the evaluation records; stage 1's reference is 0."
    if any(r.elo is None and (r.low is None) != (r.high is None) for r in data.ladder):
        note += (
            " ≥ / ≤: a shut-out has no finite Elo, only a 95% bound (from its score's "
            "Wilson interval), which the bots above it keep."
        )
    out.append(Block("p", note))
    for name, alt in PICTURES.items():
        out.append(Block("img", alt, path=layout.rel(layout.report_dir / name)))
    return out


def _ladder_elo(rung: Rung) -> str:
    return (
        signed(rung.elo, 0) if rung.elo is not None else elo_text(None, None, rung.low, rung.high)
    )


def _err(rung: Rung) -> str:
    if rung.err is not None:
        return f"{rung.err:.0f}"
    # a bound alone (a shut-out on the way) is one-sided; nothing known is "–", not "∞"
    return "one-sided" if (rung.low is None) != (rung.high is None) else "–"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(items: list[Block], has_picture: Callable[[str], bool]) -> str:
    lines: list[str] = []
    for b in items:
        if b.kind == "h1":
            lines += [f"# {b.text}", ""]
        elif b.kind == "h2":
            lines += [f"## {b.text}", ""]
        elif b.kind == "p":
            lines += [b.text, ""]
        elif b.kind == "code":
            lines += [f"    {b.text}", ""]
        elif b.kind == "table" and b.rows:
            head, *body = b.rows
            lines.append("| " + " | ".join(head) + " |")
            lines.append("|" + "---|" * len(head))
            lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in body]
            lines.append("")
        elif b.kind == "img" and has_picture(b.path):
            lines += [f"![{b.text}]({b.path})", ""]
    return "\n".join(lines)


# A backslash escape or an entity (md_text's), a code span, bold, a link: the little
# Markdown our text uses, in the order a reader meets it.
_INLINE = re.compile(
    r"\\[!-/:-@\[-`{-~]|&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]{2,8});"
    r"|`([^`]+)`|\*\*(.+?)\*\*|\[((?:\\.|[^\]\\])+)\]\(([^()\s]+)\)"
)


def _inline(text: str) -> str:
    """The little Markdown our text uses (code, bold, links) as HTML; escaped text is
    shown as it reads, and a link is made only to an http(s) or relative target."""
    out, last = [], 0
    for m in _INLINE.finditer(text):
        out.append(html.escape(text[last : m.start()]))
        code, bold, label, href = m.groups()
        if code is not None:
            out.append(f"<code>{html.escape(code)}</code>")
        elif bold is not None:
            out.append(f"<strong>{_inline(bold)}</strong>")
        elif label is not None and md_text.safe_href(href):
            out.append(f'<a href="{html.escape(href)}">{_inline(label)}</a>')
        elif label is not None:  # not a target a report links to: shown as text
            out.append(html.escape(f"{md_text.unescape(label)} ({href})"))
        else:
            out.append(html.escape(md_text.unescape(m[0])))
        last = m.end()
    out.append(html.escape(text[last:]))
    return "".join(out)


STYLE = (
    "body{font-family:sans-serif;max-width:72em;margin:1em auto;padding:0 1em}"
    "table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #ccc;"
    "padding:2px 6px;text-align:left}pre{background:#f4f4f4;padding:6px}img{max-width:100%}"
)


def page(items: list[Block], picture: Callable[[str], bytes | None]) -> str:
    """One self-contained HTML page: pictures inlined as base64 data URIs."""
    title = items[0].text if items else "Curriculum report"
    parts = [
        "<!DOCTYPE html>",
        f'<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>',
        f"<style>{STYLE}</style></head><body>",
    ]
    for b in items:
        if b.kind in ("h1", "h2"):
            parts.append(f"<{b.kind}>{_inline(b.text)}</{b.kind}>")
        elif b.kind == "p":
            parts.append(f"<p>{_inline(b.text)}</p>")
        elif b.kind == "code":
            parts.append(f"<pre><code>{html.escape(b.text)}</code></pre>")
        elif b.kind == "table" and b.rows:
            head, *body = b.rows
            parts.append("<table><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr>")
            for row in body:
                parts.append("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>")
            parts.append("</table>")
        elif b.kind == "img" and (png := picture(b.path)) is not None:
            data = base64.b64encode(png).decode()
            alt = html.escape(b.text)
            parts.append(f'<p><img alt="{alt}" src="data:image/png;base64,{data}"></p>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def pictures(layout: Layout, state: CurriculumState, data: Summary) -> dict[str, bytes | None]:
    """The report's PNGs by workspace-relative path (None: nothing to draw)."""
    from cosmic_curriculum.reports.plots import ladder_png, timeline_png

    experiments = list(data.experiments)
    flight = state.in_flight
    if flight is not None and flight.experiment not in {e for e, _ in experiments}:
        experiments.append((flight.experiment, ""))
    return {
        layout.rel(layout.report_dir / "curves.png"): timeline_png(layout, experiments),
        layout.rel(layout.report_dir / "ladder.png"): ladder_png(data.ladder),
    }


def write_report(
    layout: Layout,
    state: CurriculumState,
    config: CurriculumConfig,
    warn: Callable[[str], Any] = lambda message: None,
) -> Path:
    """Write REPORT.md and its pictures. Drawing that fails is a warning (the pictures
    already there stay); a picture with nothing to draw is removed, never left stale."""
    data = summarise(layout, state, config, history.load(layout.history))
    items = blocks(layout, data)
    try:
        for rel, png in pictures(layout, state, data).items():
            path = layout.root / rel
            if png is None:
                path.unlink(missing_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                fsio.atomic_write_bytes(path, png)
    except Exception as exc:  # plotting must never cost a run
        warn(f"could not draw the report's pictures: {exc}")
    fsio.atomic_write_text(
        layout.report, markdown(items, lambda rel: (layout.root / rel).is_file())
    )
    return layout.report


def refresh(run: Run) -> None:
    """REPORT.md for the run's current state; a failure is a warning (the run goes on)."""
    try:
        write_report(run.paths, run.state, run.config, run.reporter.warning)
    except Exception as exc:
        run.reporter.warning(f"could not write {run.rel(run.paths.report)}: {exc}")


def html_report(workspace: Path, config_path: Path | None = None) -> str:
    """`cosmic-curriculum report`: the same report as one HTML page, drawn afresh."""
    layout = Layout(Path(workspace).resolve())
    if config_path is None and not is_workspace(layout.root):
        raise ConfigError(
            f"--workspace {layout.root}: not a cosmic-curriculum workspace; "
            f"{where_to_run(layout.root, 'cosmic-curriculum report')}"
        )
    check_config_not_lost(layout.root, Path(config_path) if config_path else layout.config)
    config = load_config(Path(config_path) if config_path else layout.config)
    state = load_state(layout.state)
    data = summarise(layout, state, config, history.load(layout.history))
    drawn = pictures(layout, state, data)
    return page(blocks(layout, data), lambda rel: drawn.get(rel))
