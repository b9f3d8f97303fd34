"""A study's document shown: the table `compare` prints, compare/REPORT.md and the plot
(PNG, matplotlib's Agg canvas)."""

from __future__ import annotations

import io
from typing import Any

MEASURE_LABELS = {"success": "success rate", "return": "mean return", "score": "score vs reference"}


def _cells(doc: dict[str, Any], row: dict[str, Any]) -> list[tuple[str, str]]:
    """(column, text) of one row, the columns of the study's kind."""
    f = row["final"]
    first = row["first_target_at"]
    cells = [
        ("arm", row["arm"]),
        ("seed", str(row["seed"])),
        ("timesteps", f"{row['timesteps']:,}"),
    ]
    if doc["measure"] == "score":
        lo, hi = f["score_interval"]
        cells += [
            (f"score vs {doc['reference']} (95%)", f"{f['score']:.3f} [{lo:.3f}, {hi:.3f}]"),
            ("won-lost-drawn", f"{f['wins']}-{f['losses']}-{f['draws']}"),
        ]
    else:
        lo, hi = f["success_interval"]
        cells += [
            ("success (95%)", f"{f['success_rate']:.3f} [{lo:.3f}, {hi:.3f}]"),
            ("mean return", f"{f['mean_return']:.3f}"),
            ("vs random", f"{f['vs_reference']:.3f}"),
        ]
    if doc["target"] is not None:
        cells.append((f"first {doc['target']:g}", f"{first:,}" if first is not None else "-"))
    cells.append(("status", str(row.get("status"))))
    return cells


def table_lines(doc: dict[str, Any]) -> list[str]:
    """The plain-text table `compare` prints, one row per arm x seed, then the verdict."""
    rows = [_cells(doc, r) for r in doc["arms"]]
    heads = [h for h, _ in rows[0]] if rows else []
    widths = [max(len(h), *(len(r[i][1]) for r in rows)) for i, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True))]
    for r in rows:
        lines.append("  ".join(t.ljust(w) for (_, t), w in zip(r, widths, strict=True)))
    lines += [f"head to head {pair}: {s:.3f}" for pair, s in doc["head_to_head"].items()]
    lines += [f"verdict: {line}" for line in doc["verdict"]]
    return lines


def report_md(doc: dict[str, Any], plot_name: str | None) -> str:
    games = doc["measure"] == "score"
    per = "games" if games else "episodes"
    against = f" against `{doc['reference']}`" if games else ""
    lines = [
        "# Does the curriculum pay? (`cosmic-curriculum compare`)",
        "",
        f"Arms at {doc['budget']:,} timesteps each, trainer seeds "
        f"{', '.join(map(str, doc['seeds']))}, measured on the last stage `{doc['last_stage']}` "
        f"({doc['env']}){against}: {doc['episodes']['checkpoint']} {per} per checkpoint, "
        f"{doc['episodes']['final']} per final bot (seeds from {doc['eval_seed']}, the same "
        "for every arm).",
        "",
    ]
    rows = [_cells(doc, r) for r in doc["arms"]]
    if rows:
        lines += [
            "| " + " | ".join(h for h, _ in rows[0]) + " |",
            "|" + "---|" * len(rows[0]),
            *("| " + " | ".join(t for _, t in r) + " |" for r in rows),
        ]
    lines += ["", *(f"- head to head {k}: {s:.3f}" for k, s in doc["head_to_head"].items()), ""]
    lines += ["**Verdict**", "", *(f"- {line}" for line in doc["verdict"]), ""]
    if plot_name:
        lines += [f"![every arm's checkpoints by timesteps spent]({plot_name})", ""]
    return "\n".join(lines)


def plot_png(doc: dict[str, Any]) -> bytes:
    """Each arm x seed's checkpoints on the last stage against timesteps spent."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    arms = list(dict.fromkeys(r["arm"] for r in doc["arms"]))
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]
    labelled: set[str] = set()
    for r in doc["arms"]:
        pts = sorted(r["points"])
        ax.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            marker=".",
            color=colours[arms.index(r["arm"]) % len(colours)],
            alpha=0.8,
            label=None if r["arm"] in labelled else r["arm"],
        )
        labelled.add(r["arm"])
    if doc["target"] is not None:
        ax.axhline(doc["target"], color="grey", linestyle="--", linewidth=1, label="target")
    ax.set_xlabel("timesteps spent")
    ax.set_ylabel(f"{MEASURE_LABELS[doc['measure']]} on {doc['last_stage']}")
    ax.set_title(
        f"{doc['env']}: every arm's checkpoints ({len(doc['seeds'])} seeds each)", fontsize=10
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    return buffer.getvalue()
