"""A decided attempt as a row of plain data (status, JSON, reviews), and the review file
`logs/review-<stage>.md` of a blocked stage. Part of `status`: stdlib only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cosmic_curriculum.scoring import signed

if TYPE_CHECKING:  # pydantic: a cached `status` never imports it
    from cosmic_curriculum.workspace.gate_settings import GateSettings
    from cosmic_curriculum.workspace.state import LogEntry


def _rate(count: int, episodes: int) -> float | None:
    return count / episodes if episodes else None


def pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def attempt_row(entry: LogEntry, margin: float | None) -> dict[str, Any]:
    """One decided attempt as plain data (for tables, JSON and reviews)."""
    counts = entry.eval or {}
    episodes = int(counts.get("episodes", 0) or 0)
    wa, wb = int(counts.get("wins_a", 0) or 0), int(counts.get("wins_b", 0) or 0)
    row: dict[str, Any] = {
        "stage_index": entry.stage_index,
        "experiment": entry.experiment,
        "attempt": entry.attempt,
        "decision": entry.decision,
        "override": entry.override,
        "reason": entry.reason,
        "eval_id": entry.eval_id,
        "summary": entry.summary,
    }
    if counts:
        row.update(
            wins_a=wa,
            wins_b=wb,
            draws=int(counts.get("draws", 0) or 0),
            episodes=episodes,
            candidate_win_rate=_rate(wa, episodes),
            reference_win_rate=_rate(wb, episodes),
            gap=_rate(wb - wa, episodes),
            margin=margin,
        )
    return row


def review_markdown(
    *,
    stage_number: int,
    stage_name: str,
    entries: Sequence[LogEntry],
    records: dict[str, dict[str, Any]],
    margin: float,
    force_command: str,
    skip_command: str,
    reason: str,
    gate: GateSettings | None = None,
) -> str:
    """`logs/review-<stage>.md`: what each attempt of a blocked stage did, and what next.

    ``gate`` (default: the margin rule at ``margin``) is the rule that decided: each row
    says its verdict in that rule's terms, never a margin the rule did not apply."""
    rule = "margin" if gate is None else gate.rule
    out = [
        f"# Review: stage {stage_number} `{stage_name}` is blocked",
        "",
        reason,
        "",
        _rule_line(gate, margin),
        "",
        "| attempt | experiment | W-L-D / N | candidate | reference | gap | "
        + ("vs margin" if rule == "margin" else f"{rule} gate")
        + " | log | bot |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for entry in entries:
        row = attempt_row(entry, margin)
        exp = entry.experiment
        if "episodes" in row:
            counts = f"{row['wins_a']}-{row['wins_b']}-{row['draws']} / {row['episodes']}"
            gap = signed(row["gap"] or 0.0, 2)
            verdict = "fails" if entry.decision == "fail" else "passes"
            if rule == "margin":
                said = f"{verdict} ({gap} {'≥' if entry.decision == 'fail' else '<'} {margin:g})"
            else:  # the figures are the rule's own, in the summary below
                said = f"{verdict} ({rule}: see its summary)"
            cells = [
                counts,
                pct(row["candidate_win_rate"]),
                pct(row["reference_win_rate"]),
                gap,
                said,
            ]
        else:
            cells = ["–", "–", "–", "–", entry.override or entry.decision]
        out.append(
            f"| {entry.attempt} | {exp} | "
            + " | ".join(cells)
            + f" | [{exp}.log]({exp}.log) | [{exp}.json](../bots/{exp}.json) |"
        )
    summaries = [
        f"- {e.experiment}: {e.summary}" for e in entries if e.summary and e.decision == "fail"
    ]
    if summaries:
        what = {
            "margin": "counts, gap ± 95% interval, Elo ± 95%",
            "sprt": "counts, gap ± 95% interval, Elo ± 95%, LLR and its bounds",
            "threshold": "the measure with its 95% interval, the target, the test's figures",
        }[rule]
        out += ["", f"Gate summaries ({what}):", "", *summaries]
    out += [
        "",
        "## Continue",
        "",
        "Retry the stage once more (as the next attempt):",
        "",
        f"    {force_command}",
        "",
        "Or accept the last attempt as the stage's result and move on:",
        "",
        f"    {skip_command}",
        "",
    ]
    return "\n".join(out)


def _rule_line(gate: GateSettings | None, margin: float) -> str:
    """What the stage's gate asks, in one sentence."""
    if gate is None or gate.rule == "margin":
        return f"Gate: fail iff reference win rate − candidate win rate ≥ {margin:g}."
    if gate.rule == "sprt":
        return (
            f"Gate: SPRT of no regression against a win-rate gap of {gate.gap:g} "
            f"(α {gate.alpha:g}, β {gate.beta:g}, at most {gate.max_episodes} episodes)."
        )
    if gate.measure == "return":
        return (
            f"Gate: threshold, pass only when the mean return reaches {gate.target:g} "
            f"(its 95% interval above it; at most {gate.max_episodes} episodes)."
        )
    low, high = (gate.target or 0.0) - gate.delta, (gate.target or 0.0) + gate.delta
    return (
        f"Gate: threshold, pass only when the success rate reaches {gate.target:g} "
        f"(SPRT of {low:g} against {high:g}, α {gate.alpha:g}, β {gate.beta:g}, at most "
        f"{gate.max_episodes} episodes)."
    )
