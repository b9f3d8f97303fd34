"""The report's pictures as small PNGs: the learning curves of the whole curriculum on one
timeline with every decision marked, and the Elo ladder of the passing bots.

Each function returns PNG bytes (None when there is nothing to draw); the caller decides
where they go (committed next to REPORT.md, or inlined in `report`'s HTML). Sizes and dpi
keep a picture well under 200 kB. matplotlib's object API on the Agg canvas: no display.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from cosmic_curriculum.reports.curves import read_progress
from cosmic_curriculum.reports.summary import Rung
from cosmic_curriculum.workspace.layout import Layout

DPI = 80
COLOURS = {"pass": "tab:green", "fail": "tab:red", "skipped": "tab:orange"}


def _png(fig: Any) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def timeline_png(layout: Layout, experiments: Sequence[tuple[str, str]]) -> bytes | None:
    """Reward and win rate of ``experiments`` (name, decision) in curriculum order, each
    drawn from where the previous ended; a line in the decision's colour ends each one
    (grey while undecided)."""
    runs = [(n, d, rows) for n, d in experiments if (rows := _progress(layout, n))]
    if not runs:
        return None
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 4.5))
    fig.subplots_adjust(left=0.08, right=0.98, top=0.92, bottom=0.11, hspace=0.08)
    ax_reward, ax_win = fig.subplots(2, 1, sharex=True)
    ax_reward.set_ylabel("mean reward")
    ax_win.set_ylabel("win rate")
    ax_win.set_ylim(-0.02, 1.02)
    ax_win.set_xlabel("timesteps (whole curriculum)")
    offset = 0
    for name, decision, rows in runs:
        for ax, key in ((ax_reward, "reward"), (ax_win, "win_rate")):
            kept = [r for r in rows if r.get(key) is not None]
            ax.plot([offset + int(r["timesteps"]) for r in kept], [float(r[key]) for r in kept])
        offset += max(int(r["timesteps"]) for r in rows)
        colour = COLOURS.get(decision, "grey")
        for ax in (ax_reward, ax_win):
            ax.axvline(offset, color=colour, linewidth=1.2, alpha=0.8)
        ax_reward.annotate(
            f"{name.removeprefix('curric-')} {decision or 'running'}",
            (offset, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(-3, -3),
            textcoords="offset points",
            rotation=90,
            fontsize=6,
            ha="right",
            va="top",
            color=colour,
        )
    for ax in (ax_reward, ax_win):
        ax.grid(True, alpha=0.3)
    fig.suptitle("learning curves; lines mark decisions (green pass, red fail, orange skip)")
    return _png(fig)


def _progress(layout: Layout, experiment: str) -> list[dict[str, Any]]:
    log = layout.log(experiment)
    return read_progress(log) if log.is_file() else []


def ladder_png(ladder: Sequence[Rung]) -> bytes | None:
    """Elo (± 95% error) of each passing bot, chained from stage 1's reference at 0."""
    known = [r for r in ladder if r.elo is not None]
    if len(known) < 2:
        return None
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 0.9 + 0.3 * len(known)))
    fig.subplots_adjust(left=0.22, right=0.97, top=0.95, bottom=0.6 / (0.9 + 0.3 * len(known)))
    ax = fig.subplots()
    ys = list(range(len(known)))
    elos = [float(r.elo or 0.0) for r in known]
    errs = [r.err if r.err is not None else 0.0 for r in known]
    ax.errorbar(elos, ys, xerr=errs, fmt="o", color="tab:blue", capsize=3)
    ax.set_yticks(ys, [r.bot.removeprefix("curric-") for r in known], fontsize=7)
    ax.invert_yaxis()
    ax.axvline(0.0, color="grey", linewidth=0.8, alpha=0.5)
    ax.set_xlabel("Elo vs stage 1's reference (chained, ± 95%)")
    ax.grid(True, axis="x", alpha=0.3)
    return _png(fig)
