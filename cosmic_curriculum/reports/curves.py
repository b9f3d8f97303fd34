"""Learning curves (mean episode reward and win rate vs timesteps) from ``@progress`` lines.

The trainer prints progress lines; the orchestrator (or ``run_training.sh``) appends them to
``logs/<exp>.log``. :func:`plot_experiment` draws one experiment (``logs/<exp>.curve.png``
at the end of each training) and :func:`plot_curriculum` all experiments of a logs
directory in one figure, in curriculum order (by the ``-s<stage>-`` part of the name, then
by modification time).

Uses matplotlib's object API with the Agg canvas: no pyplot global state, no display.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cosmic_curriculum.progress import parse_progress_line
from cosmic_curriculum.system.fsio import atomic_write_bytes
from cosmic_curriculum.workspace.layout import STAGE_NUMBER_RE


def read_progress(log: Path) -> list[dict[str, Any]]:
    """Every valid progress line of a log file, in order (unreadable bytes are skipped)."""
    rows: list[dict[str, Any]] = []
    with open(log, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            # Lines may carry a prefix added by a log writer (e.g. a timestamp).
            at = line.find("@progress")
            if at < 0:
                continue
            parsed = parse_progress_line(line[at:])
            if parsed is not None:
                rows.append(parsed)
    return rows


def _series(rows: Sequence[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    kept = [r for r in rows if r.get(key) is not None]
    xs = [int(r["timesteps"]) for r in kept]
    ys = [float(r[key]) for r in kept]
    return xs, ys


def _save(fig: Any, out_png: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    atomic_write_bytes(out_png, buffer.getvalue())
    return out_png


def _figure() -> tuple[Any, Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 6.5), layout="constrained")
    ax_reward, ax_win = fig.subplots(2, 1, sharex=True)
    ax_reward.set_ylabel("mean episode reward")
    ax_win.set_ylabel("win rate")
    ax_win.set_ylim(-0.02, 1.02)
    ax_win.set_xlabel("timesteps")
    for ax in (ax_reward, ax_win):
        ax.grid(True, alpha=0.3)
    return fig, ax_reward, ax_win


def plot_experiment(rows: Sequence[dict[str, Any]], out_png: Path, title: str = "") -> Path:
    """One experiment's reward and win-rate curves as a PNG (written atomically)."""
    fig, ax_reward, ax_win = _figure()
    ax_reward.plot(*_series(rows, "reward"), color="tab:blue")
    ax_win.plot(*_series(rows, "win_rate"), color="tab:orange")
    if title:
        fig.suptitle(title)
    return _save(fig, Path(out_png))


def _stage_key(log: Path) -> tuple[int, float, str]:
    match = STAGE_NUMBER_RE.search(log.stem + "-")
    stage = int(match.group(1)) if match else 1_000_000
    return stage, log.stat().st_mtime, log.name


def plot_curriculum(logs_dir: Path, out_png: Path) -> Path | None:
    """All experiments' curves in one figure, one after another on a shared x axis.

    Each experiment is drawn from where the previous one ended (cumulative timesteps), so
    the figure reads as the curriculum's whole training history. Returns None (and writes
    nothing) when no log holds progress lines.
    """
    logs = sorted((p for p in Path(logs_dir).glob("*.log") if p.is_file()), key=_stage_key)
    runs = [(log.stem, rows) for log in logs if (rows := read_progress(log))]
    if not runs:
        return None
    fig, ax_reward, ax_win = _figure()
    offset = 0
    for name, rows in runs:
        for ax, key in ((ax_reward, "reward"), (ax_win, "win_rate")):
            xs, ys = _series(rows, key)
            ax.plot([offset + x for x in xs], ys, label=name)
        ax_reward.axvline(offset, color="grey", alpha=0.3, linewidth=0.8)
        ax_win.axvline(offset, color="grey", alpha=0.3, linewidth=0.8)
        offset += max(int(r["timesteps"]) for r in rows)
    ax_win.set_xlabel("timesteps (cumulative over experiments)")
    ax_reward.legend(fontsize="small", loc="best")
    fig.suptitle("curriculum learning curves")
    return _save(fig, Path(out_png))
