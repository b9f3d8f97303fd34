"""A decided attempt as a row of plain data (status, JSON, reviews), and the review file
`logs/review-<stage>.md` of a blocked stage. Part of `status`: stdlib only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cosmic_curriculum.scoring import format_return, signed

if TYPE_CHECKING:  # pydantic: a cached `status` never imports it
    from cosmic_curriculum.workspace.gate_settings import GateSettings
    from cosmic_curriculum.workspace.state import LogEntry


def _rate(count: int, episodes: int) -> float | None:
    return count / episodes if episodes else None


def pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def _bound(value: Any, shown: Any) -> str:
    return "?" if not isinstance(value, int | float) else shown(float(value))


def _pair(value: Any) -> tuple[Any, Any]:
    return (value[0], value[1]) if isinstance(value, list) and len(value) == 2 else (None, None)


def threshold_figures(fig: dict[str, Any]) -> tuple[str, str]:
    """The threshold rule's figures as two short cells: ``("18/20 successes", "90% (95%
    68%–99%) vs target 0.9")``, or for return ``("20 episodes", "mean return 0.5 (95%
    0.27–0.73) vs target 0.5")``."""
    target = _bound(fig.get("target"), lambda x: f"{x:g}")
    n = fig.get("episodes", "?")
    if fig.get("measure") == "return":
        low, high = _pair(fig.get("mean_return_ci95"))
        mean = _bound(fig.get("mean_return"), format_return)
        ci = f"{_bound(low, format_return)}–{_bound(high, format_return)}"
        return f"{n} episodes", f"mean return {mean} (95% {ci}) vs target {target}"
    low, high = _pair(fig.get("success_rate_ci95"))
    ci = f"{_bound(low, lambda x: f'{x:.0%}')}–{_bound(high, lambda x: f'{x:.0%}')}"
    rate = _bound(fig.get("success_rate"), lambda x: f"{x:.0%}")
    return f"{fig.get('successes', '?')}/{n} successes", f"{rate} (95% {ci}) vs target {target}"


def rule_verdicts(row: dict[str, Any]) -> str:
    """``"threshold: fail, sprt: undecided"``: each of several rules' verdict ("" for one)."""
    return ", ".join(f"{r.get('rule')}: {r.get('verdict')}" for r in row.get("rules") or [])


def entry_continuations(entry: LogEntry) -> list[dict[str, Any]]:
    """The continuations of a decided attempt: its own, then each candidate's with its
    ``candidate`` k ({reason, at, checkpoint, launch_id} each)."""
    found = [dict(c) for c in entry.continuations or []]
    for c in entry.candidates or []:
        found += [{**x, "candidate": c.get("k")} for x in c.get("continuations") or []]
    return found


def continued_note(continuations: Sequence[dict[str, Any]]) -> str:
    """``continued 2x: TIMEOUT, PREEMPTED`` (a candidate's reason names it: ``(c2)``)."""
    reasons = [
        str(c.get("reason")) + (f" (c{c['candidate']})" if c.get("candidate") else "")
        for c in continuations
    ]
    return f"continued {len(reasons)}x: {', '.join(reasons)}"


def attempt_row(entry: LogEntry, margin: float | None) -> dict[str, Any]:
    """One decided attempt as plain data (for tables, JSON and reviews): the head-to-head
    counts when the record had them, the threshold rule's figures (``threshold``) and,
    with several rules, each one's verdict (``rules``)."""
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
    if continuations := entry_continuations(entry):
        row["continuations"] = continuations
    if isinstance(counts.get("threshold"), dict):
        row["threshold"] = dict(counts["threshold"])
    if isinstance(counts.get("rules"), list):
        row["rules"] = [dict(r) for r in counts["rules"] if isinstance(r, dict)]
    if "wins_a" in counts:
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
    rules = ("margin",) if gate is None else gate.rules
    rule = "+".join(rules)
    threshold = "threshold" in rules
    head_to_head = any(r in ("margin", "sprt") for r in rules)
    columns = ["attempt", "experiment"]
    if threshold:
        columns += ["successes" if gate is None or gate.measure == "success" else "episodes"]
        columns += ["success rate" if gate is None or gate.measure == "success" else "mean return"]
    if head_to_head:
        columns += ["W-L-D / N", "candidate", "reference", "gap"]
    columns += ["vs margin" if rule == "margin" else f"{rule} gate", "log", "bot"]
    out = [
        f"# Review: stage {stage_number} `{stage_name}` is blocked",
        "",
        reason,
        "",
        *_rule_lines(gate, margin),
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for entry in entries:
        row = attempt_row(entry, margin)
        exp = entry.experiment
        verdict = "fails" if entry.decision == "fail" else "passes"
        cells: list[str] = []
        if threshold:
            fig = row.get("threshold")
            cells += list(threshold_figures(fig)) if fig else ["–", "–"]
        if head_to_head and "wins_a" in row:
            gap = signed(row["gap"] or 0.0, 2)
            cells += [
                f"{row['wins_a']}-{row['wins_b']}-{row['draws']} / {row['episodes']}",
                pct(row["candidate_win_rate"]),
                pct(row["reference_win_rate"]),
                gap,
            ]
        elif head_to_head:
            cells += ["–", "–", "–", "–"]
        if entry.override:
            said = entry.override
        elif rule == "margin" and "wins_a" in row:
            gap = signed(row["gap"] or 0.0, 2)
            said = f"{verdict} ({gap} {'≥' if entry.decision == 'fail' else '<'} {margin:g})"
        elif rule_verdicts(row):
            said = f"{verdict} ({rule_verdicts(row)})"
        elif "episodes" in row or "threshold" in row:  # the figures are in the summary below
            said = f"{verdict} ({rule}: see its summary)"
        else:
            said = entry.decision
        out.append(
            f"| {entry.attempt} | {exp} | "
            + " | ".join([*cells, said])
            + f" | [{exp}.log]({exp}.log) | [{exp}.json](../bots/{exp}.json) |"
        )
    summaries = [
        f"- {e.experiment}: {e.summary}" for e in entries if e.summary and e.decision == "fail"
    ]
    if summaries:
        what = "; ".join(
            {
                "margin": "counts, gap ± 95% interval, Elo ± 95%",
                "sprt": "counts, gap ± 95% interval, Elo ± 95%, LLR and its bounds",
                "threshold": "the measure with its 95% interval, the target, the test's figures",
            }[r]
            for r in rules
        )
        if len(rules) > 1:
            what = f"each rule's {what}, and → the verdict of all"
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


def _rule_lines(gate: GateSettings | None, margin: float) -> list[str]:
    """What the stage's gate asks: one sentence, or one per rule when it has several."""
    if gate is None or len(gate.rules) == 1:
        return [_rule_line(gate, margin)]
    lines = [f"Gate: every one of {len(gate.rules)} rules must pass, on the same episodes:", ""]
    return lines + [
        "- " + _rule_line(gate.only(r), margin).removeprefix("Gate: ") for r in gate.rules
    ]


def _rule_line(gate: GateSettings | None, margin: float) -> str:
    """What a single rule asks, in one sentence."""
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
