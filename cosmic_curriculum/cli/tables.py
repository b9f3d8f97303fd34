"""Rich tables of `evaluate`, `ladder` and `gate simulate` results (Rich imported on use)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cosmic_curriculum.scoring import signed


def fmt_interval(pair: Any, digits: int) -> str:
    """A confidence interval ``[−0.120, +0.050]``; a missing end is ``−∞`` or ``+∞``."""
    lo, hi = pair
    show = [
        ("−∞" if v is None and k == 0 else "+∞" if v is None else signed(v, digits))
        for k, v in enumerate((lo, hi))
    ]
    return f"[{show[0]}, {show[1]}]"


def shown(value: Any) -> str:
    """A user's string (a bot label, a path, a file name) as Rich prints it verbatim: its
    ``[...]`` never read as markup, its control characters shown escaped."""
    from rich.markup import escape

    from cosmic_curriculum.system.terminal import printable

    return escape(printable(str(value)))


def evaluation_table(record: dict[str, Any]) -> Any:
    """One evaluation record: both bots' wins, draws, score, gap and Elo, the gate verdict."""
    from rich.table import Table

    table = Table(show_header=False, box=None, padding=(0, 2))
    table.add_row("candidate", f"{shown(record['candidate'])} ({record['wins_a']} wins)")
    table.add_row("reference", f"{shown(record['reference'])} ({record['wins_b']} wins)")
    table.add_row("draws", str(record["draws"]))
    table.add_row("episodes", f"{record['episodes']} ({len(record['pairs'])} pairs)")
    table.add_row("score", f"{record['score']:.3f}")
    gap_ci = fmt_interval(record["gap_ci95"], 3)
    table.add_row("gap (ref − cand)", f"{signed(record['gap'], 3)} 95% {gap_ci}")
    elo = record["elo"]
    table.add_row(
        "Elo",
        ("−∞" if record["wins_a"] == 0 else "+∞")
        if elo is None
        else f"{signed(elo, 0)} 95% {fmt_interval(record['elo_ci95'], 0)}",
    )
    if "gate" in record:
        verdict = record["gate"]["verdict"]
        colour = "green" if verdict == "pass" else "red"
        table.add_row("gate", f"{record['gate']['rule']}: [bold {colour}]{verdict}[/]")
    return table


def ladder_table(doc: dict[str, Any], pairs: int) -> Any:
    """The ladder's ratings, best first."""
    from rich.table import Table

    anchor = doc["anchor"] or "the mean"
    table = Table(title=f"Ladder: Elo relative to {shown(anchor)}, {pairs} pairs per match")
    for head in ("rank", "bot", "Elo", "± 95%", "games", "score", "W", "L", "D"):
        table.add_column(head, justify="left" if head == "bot" else "right")
    for r in doc["ratings"]:
        table.add_row(
            str(r["rank"]),
            shown(r["bot"]),
            signed(r["elo"], 0),
            f"{r['err95']:.0f}",
            str(r["games"]),
            f"{r['score']:.3f}",
            str(r["wins"]),
            str(r["losses"]),
            str(r["draws"]),
        )
    return table


def gate_simulation_table(
    rows: Sequence[dict[str, Any]], trials: int, worse: float, better: float
) -> Any:
    """The gate Monte Carlo: error rates and episode counts per rule and draw rate."""
    from rich.table import Table

    table = Table(title=f"Gate Monte Carlo, {trials:,} trials per cell")
    _columns(
        table,
        (
            "rule",
            "draws",
            "false-fail (equal)",
            f"passes {worse:g} worse",
            f"fails {better:g} better",
            "episodes equal: mean / p95",
            "worse: mean / p95",
        ),
    )
    for row in rows:
        table.add_row(
            row["rule"],
            f"{row['draw_rate']:.0%}",
            f"{row['false_fail']:.1%}",
            f"{row['passes_worse']:.1%}",
            f"{row['fails_better']:.1%}",
            f"{row['mean_episodes_equal']:.0f} / {row['p95_episodes_equal']:.0f}",
            f"{row['mean_episodes_worse']:.0f} / {row['p95_episodes_worse']:.0f}",
        )
    return table


def threshold_simulation_table(rows: Sequence[dict[str, Any]], trials: int) -> Any:
    """The threshold rule's Monte Carlo: pass and fail rates, episodes per true strength."""
    from rich.table import Table

    table = Table(title=f"Threshold gate Monte Carlo, {trials:,} trials per cell")
    _columns(table, ("rule", "true strength", "passes", "fails", "episodes: mean / p95"))
    for row in rows:
        table.add_row(
            row["rule"],
            f"{row['strength']} ({row['true']:g})",
            f"{row['pass_rate']:.1%}",
            f"{row['fail_rate']:.1%}",
            f"{row['mean_episodes']:.0f} / {row['p95_episodes']:.0f}",
        )
    return table


def forgetting_simulation_table(
    rows: Sequence[dict[str, Any]], trials: int, against: int, worse: float
) -> Any:
    """The gate against forgetting's Monte Carlo: false-fail rates of an equal candidate
    (its reference's comparison, the earlier bots', the whole gate), the earlier bots'
    detection of one regression, and the episodes their comparisons add."""
    from rich.table import Table

    table = Table(
        title=f'Gate against forgetting (against = "all", {against} earlier bots) Monte Carlo, '
        f"{trials:,} trials per cell"
    )
    _columns(
        table,
        (
            "rule",
            "draws",
            "beta each",
            "false-fail: reference",
            f"{against} earlier",
            "whole gate",
            f"catches {worse:g} worse vs one",
            "episodes added",
        ),
    )
    for row in rows:
        table.add_row(
            row["rule"],
            f"{row['draw_rate']:.0%}",
            f"{row['corrected_beta']:.2%}",
            f"{row['previous_false_fail']:.1%}",
            f"{row['family_false_fail']:.1%}",
            f"{row['gate_false_fail']:.1%}",
            f"{row['detects_worse']:.1%}",
            f"{row['family_mean_episodes']:.0f}",
        )
    return table


def _columns(table: Any, heads: Sequence[str]) -> None:
    """A simulation table's columns: the rule's on the left, unwrapped; numbers right."""
    for head in heads:
        table.add_column(
            head, justify="left" if head == "rule" else "right", no_wrap=head == "rule"
        )
